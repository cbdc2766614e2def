// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target for the flow decoder over a fixed program image.
 *
 * The image is the ELF named by NTRACE_FUZZ_ELF (run-fuzz.sh passes a
 * test program, so seed traces of that program reach deep into the
 * decoder). Input: byte 0 selects the stream and decoder configuration,
 * the rest is trace bytes, fed in chunks whose sizes come from byte 1,
 * whose top bit says whether the image is all the code there is.
 * The decoder must not crash, hang or leak, and its events must be
 * consistent: instruction runs inside the image, counts that add up,
 * and the same, event for event, without the run cache (decoded whole),
 * and, source by source, when decoded by source (cfg.by_source).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct nt_image *img;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("NTRACE_FUZZ_ELF");
	const char *err = NULL;

	(void)argc;
	(void)argv;
	img = nt_image_new();
	if (!img || !path || nt_image_add_elf(img, path, 0, &err)) {
		fprintf(stderr, "fuzz_decode: set NTRACE_FUZZ_ELF to a RISC-V "
			"ELF (%s)\n", err ? err : "unset");
		exit(1);
	}
	return 0;
}

struct check {
	uint64_t insns;
	uint64_t hash;		/* of every event, in order */
	uint64_t *src_hash;	/* of each source's events, or NULL */
};

#define MAX_SRC (1u << NT_MAX_SRC_BITS)

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

static uint64_t event_hash(uint64_t h, const struct nt_event *ev)
{
	h = mix(h, ev->kind | (uint64_t)ev->itype << 8 |
		   (uint64_t)ev->btype << 16 | (uint64_t)ev->sync << 24 |
		   (uint64_t)ev->priv << 32 | (uint64_t)ev->evcode << 40 |
		   (uint64_t)ev->flags << 48);
	h = mix(h, ev->src);
	h = mix(h, ev->from);
	h = mix(h, ev->last);
	h = mix(h, ev->to);
	h = mix(h, ev->ninsn);
	h = mix(h, ev->context);
	h = mix(h, ev->time);
	h = mix(h, ev->offset);
	h = mix(h, (uintptr_t)ev->error);
	return mix(h, (uintptr_t)ev->code);
}

static void hash_event(void *ctx, const struct nt_event *ev)
{
	struct check *c = ctx;

	c->hash = event_hash(c->hash, ev);
}

static void hash_src_event(void *ctx, const struct nt_event *ev)
{
	struct check *c = ctx;

	c->src_hash[ev->src] = event_hash(c->src_hash[ev->src], ev);
	if (ev->kind == NT_EV_INSNS)
		c->insns += ev->ninsn;
}

/* Feed data to d in chunks, each a copy: ASan sees a read past one. */
static void feed_chunks(struct nt_decoder *d, const uint8_t *data,
			size_t size, size_t chunk)
{
	size_t pos = 0;

	while (pos < size) {
		size_t n = size - pos < chunk ? size - pos : chunk;
		uint8_t *copy = malloc(n);

		memcpy(copy, data + pos, n);
		nt_decoder_feed(d, copy, n);
		free(copy);
		pos += n;
	}
	nt_decoder_finish(d);
}

/* Decode data with cfg, chunk bytes a feed: the instructions it counts. */
static uint64_t decode(const struct nt_decoder_cfg *cfg, nt_event_fn fn,
		       void *ctx, const uint8_t *data, size_t size,
		       size_t chunk)
{
	const char *err = NULL;
	struct nt_decoder *d = nt_decoder_new(cfg, fn, ctx, &err);
	uint64_t insns;

	if (!d)
		abort();
	nt_decoder_add_image(d, img, true, 0);
	feed_chunks(d, data, size, chunk);
	insns = nt_decoder_stats(d)->insns;
	nt_decoder_free(d);
	return insns;
}

static void on_event(void *ctx, const struct nt_event *ev)
{
	struct check *c = ctx;
	size_t avail;

	c->hash = event_hash(c->hash, ev);
	if (c->src_hash)
		c->src_hash[ev->src] = event_hash(c->src_hash[ev->src], ev);
	if (ev->kind != NT_EV_INSNS)
		return;
	/* every instruction of the run lies in the image it came from */
	if (!ev->ninsn || !ev->code ||
	    nt_image_lookup(img, ev->from, &avail) != ev->code ||
	    ev->last < ev->from || ev->last - ev->from >= avail) {
		fprintf(stderr, "fuzz_decode: bad INSNS event\n");
		abort();
	}
	c->insns += ev->ninsn;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t order_hash[MAX_SRC], by_src_hash[MAX_SRC];
	struct nt_decoder_cfg cfg;
	struct check c = { 0 };
	size_t chunk;

	if (size < 2)
		return 0;
	nt_decoder_cfg_default(&cfg);
	cfg.stream.src_bits = (uint8_t)((data[0] & 3) * 4);
	cfg.stream.timestamps = data[0] & 4;
	cfg.stream.extend_addr_msb = data[0] & 8;
	cfg.all_jumps = data[0] & 16;
	cfg.mode = (data[0] & 32) ? NT_MODE_HTM : 0;
	cfg.ir_depth = (data[0] & 64) ? 2 : 64;
	cfg.stream.quirks = (data[0] & 128) ? NT_QUIRK_SIFIVE : 0;
	/* keep replays short so a slow input is a bug, not a big count */
	cfg.max_repeat = 1u << 20;
	cfg.max_icnt = 1u << 16;
	chunk = 1 + data[1] % 64;
	cfg.images_complete = data[1] & 128;

	if (cfg.stream.src_bits) {
		memset(order_hash, 0, sizeof(order_hash));
		c.src_hash = order_hash;
	}
	if (decode(&cfg, on_event, &c, data + 2, size - 2, chunk) != c.insns)
		abort();

	/* by source: each source's events as in stream order */
	if (cfg.stream.src_bits) {
		struct check b = { .src_hash = by_src_hash };

		memset(by_src_hash, 0, sizeof(by_src_hash));
		cfg.by_source = true;
		if (decode(&cfg, hash_src_event, &b, data + 2, size - 2,
			   1 + chunk * 37 % 4096) != b.insns ||
		    b.insns != c.insns ||
		    memcmp(order_hash, by_src_hash, sizeof(order_hash))) {
			fprintf(stderr, "fuzz_decode: decoded by source, the "
				"events differ\n");
			abort();
		}
		cfg.by_source = false;
	}

	/* the general path alone: the run cache must change nothing */
	{
		struct check g = { 0 };

		/* decoded whole */
		cfg.run_cache = false;
		decode(&cfg, hash_event, &g, data + 2, size - 2, size - 2);
		if (g.hash != c.hash) {
			fprintf(stderr, "fuzz_decode: the run cache changed the "
				"events\n");
			abort();
		}
	}
	return 0;
}
