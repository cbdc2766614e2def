/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside libntrace only (not installed): reading the byte stream a
 * 64-bit word at a time, for the reader (codec.c) and for the flow
 * decoder's run cache (decoder.c), which takes messages it has decoded
 * before straight from the bytes, without a struct nt_msg, and moves
 * the reader past them.
 */
#ifndef NTRACE_READER_H
#define NTRACE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "ntrace.h"

/* v in every byte of a word */
#define BYTES_EACH(v)	(0x0101010101010101ull * (v))

/* The eight bytes at p as a word, the first in its low byte. */
static inline uint64_t load_bytes(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

/* Bit 0 of each byte of w set where that byte ends a message (MSEO=11). */
static inline uint64_t msg_ends(uint64_t w)
{
	return w & (w >> 1) & BYTES_EACH(1);
}

/*
 * The mask of the bytes of w up to and with the first that ends a
 * message, ends = msg_ends(w) != 0: all eight when that is the last
 * (0 - 1).
 */
static inline uint64_t msg_mask_to_end(uint64_t ends)
{
	return ((ends & -ends) << 8) - 1;
}

/* Bit i set where byte i of w ends a message. */
static inline uint64_t msg_end_bits(uint64_t w)
{
	/* bit 0 of byte i to bit 56 + i, then down */
	return (msg_ends(w) * 0x0102040810204080ull) >> 56;
}

/* Bit i set where byte p[i] of the nwords * 8 (up to 64) at p ends one. */
static inline uint64_t msg_end_bits_words(const uint8_t *p,
					  unsigned int nwords)
{
	uint64_t ends = 0;
	unsigned int i;

	for (i = 0; i < nwords; i++)
		ends |= msg_end_bits(load_bytes(p + 8 * i)) << (8 * i);
	return ends;
}

#ifdef __SSE2__
/* Bit i set where byte p[i] of the 16 at p ends a message. */
static inline uint64_t msg_end_bits16(const uint8_t *p)
{
	__m128i v = _mm_loadu_si128((const __m128i *)p);
	/*
	 * Bit 1 of each byte ANDed with its bit 0 (shifted up from the
	 * same byte), moved to bit 7 for movemask. What the 16-bit shifts
	 * bring over from the byte below lands in bits no one reads.
	 */
	__m128i both = _mm_and_si128(v, _mm_slli_epi16(v, 1));

	return (uint16_t)_mm_movemask_epi8(_mm_slli_epi16(both, 6));
}
#endif

/* Bit i set where byte p[i] of the 64 at p ends a message. */
static inline uint64_t msg_end_bits64(const uint8_t *p)
{
#ifdef __SSE2__
	/* written out: GCC -O2 keeps a four-step loop as a loop */
	return msg_end_bits16(p) | msg_end_bits16(p + 16) << 16 |
	       msg_end_bits16(p + 32) << 32 | msg_end_bits16(p + 48) << 48;
#else
	return msg_end_bits_words(p, 8);
#endif
}

/*
 * The number of trailing zero bits of v != 0, as a 64-bit value: on
 * x86-64 __builtin_ctzll()'s int costs a sign extension and a
 * register clear in the loops that walk message ends. (Before BMI1,
 * TZCNT runs as BSF, which gives the same for v != 0.)
 */
static inline uint64_t ctz64(uint64_t v)
{
#if defined(__x86_64__) && defined(__GNUC__)
	uint64_t n;

	__asm__("tzcnt %1, %0" : "=r"(n) : "rm"(v) : "cc");
	return n;
#else
	return (uint64_t)__builtin_ctzll(v);
#endif
}

/*
 * The length of the message that starts w when it ends within it (its
 * first MSEO=11), 0 when it does not.
 */
static inline uint32_t msg_end_len(uint64_t w)
{
	uint64_t ends = msg_ends(w);

	return ends ? (uint32_t)__builtin_ctzll(ends) / 8 + 1 : 0;
}

/*
 * The SRC field of the message that starts w. It comes right after
 * TCODE, and fields fill the six MDO bits of each byte from bit 2 up
 * (N-Trace "Unified N-Trace Message Structure", "Order of bits and
 * bytes"): bits 2-7 of the second byte, then of the third. Two bytes
 * hold NT_MAX_SRC_BITS.
 */
static inline unsigned int msg_src(uint64_t w, unsigned int src_bits)
{
	uint64_t mdo = (w >> 10 & 0x3f) | (w >> 18 & 0x3f) << 6;

	return (unsigned int)mdo & ((1u << src_bits) - 1);
}
_Static_assert(NT_MAX_SRC_BITS <= 12, "msg_src() reads two bytes of SRC");

/*
 * Where msg_src() finds a SRC of src_bits in w: two messages are of
 * the same source if their words agree under this mask.
 */
static inline uint64_t msg_src_wmask(unsigned int src_bits)
{
	uint64_t m = (1ull << src_bits) - 1;

	return (m & 0x3f) << 10 | (m >> 6) << 18;
}

/*
 * The bytes from the reader's position when the next one starts a
 * message with nothing pending (no partial message, error or
 * resynchronisation), with how many there are and the stream offset of
 * the first; NULL otherwise.
 */
const uint8_t *nt_reader_peek(const struct nt_reader *r, size_t *avail,
			      uint64_t *offset);
/*
 * Where the reader keeps the address history of source src (the base of
 * its next U-ADDR), for as long as the reader lives.
 */
uint64_t *nt_reader_addr_of(struct nt_reader *r, unsigned int src);
/*
 * Where the reader keeps the time of source src (the last TSTAMP's sum,
 * to which the next relative TSTAMP adds), for as long as the reader
 * lives.
 */
uint64_t *nt_reader_time_of(struct nt_reader *r, unsigned int src);
/*
 * Past n bytes of whole messages from nt_reader_peek(), once the caller
 * has set the address history and the time of each source those
 * messages changed: no other reader state depends on them. Not for
 * SiFive's TSTAMP (NT_QUIRK_SIFIVE), whose time is no sum.
 */
void nt_reader_take(struct nt_reader *r, size_t n);

/* The longest message the memo keeps: see nt_reader_split(). */
#define NT_MEMO_MAX_BYTES	16

/* Where nt_reader_split() puts the messages of one source. */
struct nt_split_dst {
	uint8_t *buf;
	/* by a message's first byte in buf: its stream offset less origin */
	uint32_t *map;
	/* the next message goes at len, while len < lim */
	size_t len, lim;
};

/*
 * The messages from the reader's position that its memo knows, each
 * put where its source's dst says: NT_MEMO_MAX_BYTES bytes from its
 * first copied to buf + len (what follows it is overwritten by the
 * next), its stream offset less origin to map[len], and len moved on by
 * its size. It stops before a message whose source has no dst or no
 * room, that the memo does not know, or that begins fewer than
 * NT_MEMO_MAX_BYTES bytes before the end of the bytes fed; the caller
 * reads that one with nt_reader_next(). The messages split leave the
 * address history and time as they were: only for a reader that
 * decodes no address. (nonnull: the compiler then drops memo_run_of()'s
 * path for records from it.)
 */
void nt_reader_split(struct nt_reader *r, struct nt_split_dst *const *dst,
		     uint64_t origin)
	__attribute__((nonnull));

#endif
