// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * N-Trace flow decoder (N-Trace 1.0 chapter 11): messages + program images
 * -> the exact sequence of executed instructions and transfers.
 *
 * Between messages the decoder walks the code: HIST bits decide the
 * conditional branches (first bit after the stop bit first, 1 = taken),
 * I-CNT says how many half-words retired, direct jumps are followed,
 * returns and sequential jumps are inferred where the message does not
 * end, and the message's address says where uninferable transfers and
 * traps went.
 *
 * Code is classified once: a block is a run of instructions that cannot
 * change the flow plus the one that can, cached by start address, so a hot
 * loop costs a hash probe per block. Every walk is bounded by the I-CNT
 * it was given, or, while HIST bits of a ResourceFull are consumed before
 * the I-CNT is known, by the distance from one branch to the next.
 * Anything that does not fit the code becomes a GAP event with the byte
 * offset of the message, and decoding resumes at the next sync.
 *
 * Where real encoders depart from the ratified specification in ways
 * that leave no doubt what they meant, the decoder follows them and
 * counts each kind of departure (enum nt_deviation) in its statistics.
 */
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"
#include "reader.h"

#define UNBOUNDED		UINT64_MAX
/*
 * Half-words a HIST walk may go without reaching a branch: twice what
 * an I-CNT counter of NT_MAX_ICNT_BITS holds. A path without branches
 * that goes on longer never reaches one: it is a loop of jumps.
 */
#define WALK_SLACK		(1ull << 23)
#define MAX_BLOCK_INSNS		256
#define MAX_CACHED_BLOCKS	(1u << 20)
#define MAX_IMAGES		16
#define MAX_SRC			(1u << NT_MAX_SRC_BITS)
/* the run cache: see "run cache" below */
#define RUN_SLOTS_LOG2		15
/* a pair's ResourceFull walks up to 32 conditional branches, and calls */
#define RUN_MAX_EVENTS		128
/*
 * A round of repeated HIST bits that replay_hist() hands over again
 * rather than walk: at most this many events (more: each is walked)
 */
#define REPLAY_MAX_EVENTS	256
/* ... and of at most this many repetitions */
#define REPLAY_MAX_ROUND	16
#define RUN_MAX_VALUES		16
#define RUN_ARENA_MIN		(1u << 18)
#define RUN_ARENA_MAX		(1u << 24)
#define RUN_EPOCHS		8

/*
 * Where a block went last, by outcome (0: fell through or not taken,
 * 1: taken): the next block without a hash probe, if the walk goes there
 * again under the same image search order (gen).
 */
struct link {
	uint64_t pc;
	uint32_t blk;		/* index into blocks */
	uint32_t gen;		/* src_dec.order_gen it was made under; 0 = none */
};

struct block {
	uint64_t start, term_pc;
	const uint8_t *code;
	uint32_t plain_n, plain_half;
	uint32_t need;		/* half-words of the whole block */
	struct link link[2];
	struct nt_insn term;
	bool term_ok;		/* false: no decodable instruction at term_pc */
	bool term_outside;	/* ... because the image ended there */
	bool pre_const;		/* lui/auipc right before the terminator */
	uint8_t const_rd;
	uint64_t const_val;
};

struct slot {
	uint64_t pc;
	uint32_t img;		/* image index + 1; 0 = empty */
	uint32_t blk;
};

struct img_ref {
	const struct nt_image *img;
	bool any;
	uint64_t ctx;
};

struct last_branch {
	uint8_t tcode, btype;
	uint64_t icnt, hist, target;
};

struct src_dec {
	bool synced;
	uint64_t pc;
	uint8_t priv;
	uint64_t ctx;
	uint8_t order[MAX_IMAGES];	/* images to search, in order */
	uint8_t norder;
	uint32_t order_gen;	/* changes with order: see struct link */
	uint64_t pend_icnt;	/* ResourceFull RCODE 0 since the last message */
	uint64_t walked;	/* half-words walked for HIST before I-CNT */
	/*
	 * The return stack: a ring of ring_mask + 1 (a power of two,
	 * more than ir_depth) entries, count (at most ir_depth) of them
	 * live below top. A push onto ir_depth entries leaves the oldest
	 * behind, uncounted.
	 */
	uint64_t *stack;
	unsigned int top, count;
	bool last_valid;
	struct last_branch last;
	uint8_t trap_btypes;	/* TRAPS_*: how this source reports traps */
	bool own_known;		/* an Ownership message gave priv */
	bool priv_may_change;	/* the last message: a trap, xRET or sync */
	bool want_scontext;	/* an hcontext Ownership wants its scontext */
	/* the block the last walk ended with, for the next: see walk() */
	uint32_t walk_prev, walk_resets;
	uint8_t walk_out;
	uint32_t run_prev;	/* the run its last message was: run_find() */
	/*
	 * While take_gen is the decoder's, the cache may take its
	 * messages in epoch take_epoch: run_source_epoch().
	 */
	uint64_t take_gen;
	uint32_t take_epoch;
	/*
	 * The run its last message was, when last, last_valid,
	 * priv_may_change and walk_prev do not show it yet: run_settle()
	 * writes them before the general path reads them. 0: they do.
	 */
	uint32_t run_last;
	uint64_t *addr;		/* the reader's address history of it */
	uint64_t *time;		/* the reader's time of it */
	unsigned int run_epoch_slot;	/* where run_epoch() looks first */
};

/* B-TYPE values an encoder reports traps with */
#define TRAPS_UNKNOWN	0
#define TRAPS_COMBINED	1	/* B-TYPE 1 */
#define TRAPS_SPLIT	2	/* B-TYPE 2 and 3 */

struct hist_src {
	uint64_t h;
	unsigned int nbits, i;
	uint64_t rep;
};

enum end_kind {
	END_NONE,		/* ResourceFull HIST: stop after the last bit */
	END_DIRECT,		/* last instruction: a taken direct branch */
	END_INDIRECT,		/* last instruction: an uninferable transfer */
	END_TRAP,		/* then a trap to the target */
	END_SYNC,		/* then the PC is the target, whatever ran last */
	END_STOP,		/* trace stops */
};

/*
 * One message as it decoded once, from pc: what taking its bytes
 * again from the same state does (see "run cache" below). In the
 * arena, followed by its nev events and then npop + npush values: the
 * entries of the return stack it popped (those it did not push itself;
 * compared where guard says) and what it left pushed.
 */
struct run {
	/*
	 * the message, first byte lowest, zero after; of a message longer
	 * than eight bytes (RUN_LONG) the first eight, the rest in bytes2
	 * under mask2 as a chain's
	 */
	uint64_t bytes;
	uint64_t mask;		/* of bytes: its size */
	uint64_t pc;		/* the source's PC before it */
	/* direct: the PC after it; indirect: target = address history ^ next */
	uint64_t next;
	uint32_t epoch;		/* of the state it decoded in: run_epoch() */
	uint32_t succ;		/* its source's next run last time, 0: none */
	uint32_t insns, halfwords, transfers;
	uint32_t chain;		/* it and its successor as one run, 0: none */
	/*
	 * a chain's (run_fuse()): its bytes after the first eight (bytes2
	 * under mask2), and the address history it was made for (ain
	 * under amask) when an IndirectBranch's target is a PC in it
	 */
	uint64_t bytes2, mask2, ain, amask;
	uint64_t uaddr_mask;	/* all ones if its target is U-ADDR's, else 0 */
	uint32_t guard;		/* bit i: the value of pop i decided the walk */
	/* the return stack's count may exceed npop by this much at most */
	uint32_t room;
	uint16_t nev;
	uint16_t to_at;		/* where its last event's to is, from it */
	uint8_t size, tcode, flags;
	uint8_t npop, npush;
	uint8_t nmsg;		/* messages: 1, 2 in a pair, more in a chain */
	/* nmsg of a chain, 0 of a single message: derived, it cost 1% */
	uint8_t chained;
	/*
	 * where event i's message starts, from the run's first byte: byte
	 * i of offs for i < 8, then 0 before tail_from (a pair's
	 * ResourceFull's walk goes on past eight events) and tail_off from
	 * it on (a chain's or a pair's last message's)
	 */
	uint8_t tail_off, tail_from;
	/* RUN_TIMED: where its last message with a TSTAMP starts */
	uint8_t time_off;
	uint64_t offs;
	uint64_t icnt, hist;	/* for a RepeatBranch after it */
	uint64_t push;		/* what it pushes, without RUN_STACK */
	/*
	 * A TSTAMP stream's: the TSTAMPs of its messages summed, and the
	 * time its events' times count from (see run_take())
	 */
	uint64_t dt, t_from;
	/*
	 * The stream offset its events' offsets count from, less the
	 * bytes before each event's message: its first byte's when it
	 * was last taken. run_take() moves them on by the difference, as
	 * times by t_from; a decoder that maps offsets (by source) writes
	 * them anew instead.
	 */
	uint64_t o_from;
};

#define RUN_INDIRECT		(1u << 0)	/* its target is U-ADDR's */
#define RUN_PRIV_MAY_CHANGE	(1u << 1)	/* it ended at a trap return */
#define RUN_STACK		(1u << 2)	/* more than a pop and a push */
#define RUN_GUARDED		(1u << 3)	/* a popped value decided it */
#define RUN_HEAD		(1u << 4)	/* may be chained to the next */
/* one message of 9 to 16 bytes: run_find_long()'s, never a successor */
#define RUN_LONG		(1u << 5)
#define RUN_TIMED		(1u << 6)	/* a message of it has TSTAMP */
/* the events take at least this many slots: see run_take() */
#define RUN_MIN_EVENT_SLOTS	4
/* a chain's bytes: two words */
#define RUN_CHAIN_BYTES		16

/* A state runs are made in: what decided a walk besides pc and bytes. */
struct run_epoch {
	uint64_t ctx;
	uint32_t order_gen;
	uint32_t id;		/* 0: unused */
	uint8_t priv;
};

/* A return-stack operation of the message being recorded. */
struct stack_op {
	uint64_t v;
	uint8_t push;		/* 1: push v; 0: pop that returned v */
	uint8_t ok;		/* pop: the stack was not empty */
	uint8_t guard;		/* pop: v decided where the walk went */
};

struct nt_decoder {
	struct nt_decoder_cfg cfg;
	unsigned int ring_mask;		/* of each source's return stack */
	nt_event_fn fn;
	void *ctx;
	/* nt_decoder_new_batch()'s: fn is then batch_of_one() */
	nt_events_fn batch_fn;
	void *batch_ctx;
	struct nt_reader *rd;
	struct img_ref imgs[MAX_IMAGES];
	unsigned int nimgs;
	struct block *blocks;
	uint32_t nblocks, capblocks;
	uint32_t resets;		/* times the block cache started over */
	uint32_t order_gens;		/* last src_dec.order_gen given out */
	struct slot *slots;
	uint32_t slot_mask;
	struct src_dec *srcs[MAX_SRC];
	struct nt_decoder_stats st;
	const struct nt_msg *msg;	/* message being decoded */
	const char *err;		/* why the current walk failed */
	uint64_t err_pc;
	bool end_ok;			/* the walk ended as the message said */
	bool ecall;			/* ... at an ecall counted as retired */
	bool end_inferred;		/* ... at a jump whose target it inferred */
	bool next_known;
	/*
	 * The INSNS event of walks: what a walk does not set stays zero
	 * (btype, sync, evcode, error), so it is not built anew each time.
	 */
	struct nt_event walk_ev;
	/* the run cache */
	bool run_on;			/* the stream and cfg allow it */
	uint32_t *run_slots;		/* arena offsets of runs, by hash */
	/* the next run_take()'s first run, a long one: run_cache_take() */
	struct run *run_long;
	uint8_t *run_arena;
	uint32_t run_used, run_cap;	/* bytes; offset 0 is no run */
	/*
	 * Moves on whenever a source's state may change other than by a
	 * run: a message the general path decodes, a gap, an image
	 * order, a reset of the cache (its epoch ids are given out anew).
	 */
	uint64_t take_gen;
	uint32_t run_epoch_ids;		/* last epoch id given out */
	unsigned int run_epoch_next;	/* the epoch replaced next */
	struct run_epoch run_epochs[RUN_EPOCHS];
	/* recording the message being decoded: the caller's callback */
	bool rec, rec_bad;
	nt_event_fn rec_fn;
	void *rec_ctx;
	unsigned int rec_nev, rec_nops;
	struct nt_event rec_evs[RUN_MAX_EVENTS];
	struct stack_op rec_ops[2 * RUN_MAX_VALUES];
	/* push() and pop() calls, for replay_hist() */
	uint64_t stack_ops;
	/* replay_hist(): the first repetitions' events, and the callback */
	bool rep_bad;
	nt_event_fn rep_fn;
	void *rep_ctx;
	unsigned int rep_nev;
	struct nt_event rep_evs[REPLAY_MAX_EVENTS];
	/* cfg.by_source: each source's decoder (see "by source" below) */
	struct demux *dm;
	uint64_t last_time_at;		/* offset of st.last_time's message */
	/*
	 * A child of cfg.by_source: run_take() hands its runs to hand_to,
	 * the parent, each offset made the parent's, map[offset - map_from]
	 * from map_origin ("by source" below).
	 */
	struct nt_decoder *hand_to;
	const uint32_t *map;
	uint64_t map_from, map_origin;
};

static struct demux *demux_new(struct nt_reader *rd);
static void demux_free(struct demux *dm);
static int demux_add_image(struct demux *dm, const struct nt_image *img,
			   bool any_context, uint64_t context);

void nt_decoder_cfg_default(struct nt_decoder_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->stream.xlen = 64;
	cfg->ir_depth = 64;
	cfg->src = -1;
	cfg->run_cache = true;
}

struct nt_decoder *nt_decoder_new(const struct nt_decoder_cfg *cfg,
				  nt_event_fn fn, void *ctx, const char **err)
{
	struct nt_decoder *d;

	if (cfg->mode && cfg->mode != NT_MODE_BTM && cfg->mode != NT_MODE_HTM) {
		*err = "mode must be BTM or HTM";
		return NULL;
	}
	if (cfg->ir_depth > 1024) {
		*err = "return stack depth must be at most 1024";
		return NULL;
	}
	if (cfg->src >= (int)MAX_SRC) {
		*err = "SRC out of range";
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		*err = "out of memory";
		return NULL;
	}
	d->cfg = *cfg;
	if (!d->cfg.ir_depth)
		d->cfg.ir_depth = 64;
	/*
	 * A mask, not a compare, wraps the ring in the run cache's loop,
	 * and the slot above the live entries is always free for its
	 * stores: see run_take().
	 */
	while (d->ring_mask < d->cfg.ir_depth)
		d->ring_mask = 2 * d->ring_mask + 1;
	if (!d->cfg.max_repeat)
		d->cfg.max_repeat = 1ull << 32;
	/*
	 * Wider than any encoder's counter (22 bits), so lenient, but a
	 * three-byte message cannot ask for an endless walk.
	 */
	if (!d->cfg.max_icnt)
		d->cfg.max_icnt = 1ull << 32;
	d->fn = fn;
	d->ctx = ctx;
	d->rd = nt_reader_new(&cfg->stream);
	if (d->rd && cfg->by_source && cfg->stream.src_bits && cfg->src < 0) {
		d->dm = demux_new(d->rd);
		if (!d->dm) {
			nt_decoder_free(d);
			*err = "out of memory";
			return NULL;
		}
	}
	/* by source, the children walk: the parent has no block cache */
	d->slot_mask = (1u << 12) - 1;
	if (!d->dm)
		d->slots = calloc(d->slot_mask + 1, sizeof(*d->slots));
	/*
	 * A run adds its TSTAMPs to the time (run_take()): SiFive's, the
	 * bits that changed, are no sum.
	 */
	d->take_gen = 1;	/* a new source's 0 is not it */
	d->run_on = cfg->run_cache && !d->dm &&
		    !(cfg->stream.timestamps &&
		      (cfg->stream.quirks & NT_QUIRK_SIFIVE));
	if (d->run_on) {
		d->run_slots = calloc(1u << RUN_SLOTS_LOG2,
				      sizeof(*d->run_slots));
		d->run_arena = malloc(RUN_ARENA_MIN);
		d->run_cap = RUN_ARENA_MIN;
		d->run_used = 8;
		if (!d->run_slots || !d->run_arena)
			d->run_on = false;
		else	/* no run starts at 0: see run_find() */
			memset(d->run_arena, 0, 8);
	}
	if (!d->rd || (!d->dm && !d->slots)) {
		nt_decoder_free(d);
		*err = d->rd ? "out of memory" : "bad stream configuration";
		return NULL;
	}
	return d;
}

/* A decoder made for batches hands the general path's events singly. */
static void batch_of_one(void *ctx, const struct nt_event *ev)
{
	struct nt_decoder *d = ctx;

	d->batch_fn(d->batch_ctx, ev, 1);
}

struct nt_decoder *nt_decoder_new_batch(const struct nt_decoder_cfg *cfg,
					nt_events_fn fn, void *ctx,
					const char **err)
{
	struct nt_decoder *d = nt_decoder_new(cfg, batch_of_one, NULL, err);

	if (d) {
		d->ctx = d;
		d->batch_fn = fn;
		d->batch_ctx = ctx;
	}
	return d;
}

void nt_decoder_free(struct nt_decoder *d)
{
	unsigned int i;

	if (!d)
		return;
	demux_free(d->dm);
	for (i = 0; i < MAX_SRC; i++) {
		if (d->srcs[i]) {
			free(d->srcs[i]->stack);
			free(d->srcs[i]);
		}
	}
	nt_reader_free(d->rd);
	free(d->blocks);
	free(d->slots);
	free(d->run_slots);
	free(d->run_arena);
	free(d);
}

const struct nt_decoder_stats *nt_decoder_stats(const struct nt_decoder *d)
{
	return &d->st;
}

const char *nt_deviation_name(unsigned int dev)
{
	static const char *const names[NT_DEV__COUNT] = {
		[NT_DEV_WIDE_ICNT] = "I-CNT wider than 22 bits",
		[NT_DEV_ECALL_RETIRED] = "ecall/ebreak counted as retired",
	};

	return dev < NT_DEV__COUNT ? names[dev] : "unknown deviation";
}

/* The time of the last message that gave one, and where it was. */
static inline void note_time(struct nt_decoder *d, const struct nt_msg *m)
{
	if (m->fields & NT_F_TSTAMP) {
		d->st.last_time = m->time;
		d->last_time_at = m->offset;
	}
}

static void deviation(struct nt_decoder *d, unsigned int dev,
		      uint64_t offset)
{
	if (!d->st.deviations[dev]++)
		d->st.deviation_at[dev] = offset;
}

static void cache_reset(struct nt_decoder *d);

/*
 * A generation for a new image search order. When the counter wraps,
 * every source gets a new one and every link goes with the cache: no
 * link can outlive the order it was made under.
 */
static uint32_t new_order_gen(struct nt_decoder *d)
{
	unsigned int i;

	if (++d->order_gens)
		return d->order_gens;
	cache_reset(d);
	for (i = 0; i < MAX_SRC; i++)
		if (d->srcs[i])
			d->srcs[i]->order_gen = ++d->order_gens;
	return ++d->order_gens;
}

/* Images searched for a process: its own first, then the shared ones. */
static void select_images(struct nt_decoder *d, struct src_dec *s)
{
	unsigned int i;

	s->norder = 0;
	for (i = 0; i < d->nimgs; i++)
		if (!d->imgs[i].any && d->imgs[i].ctx == s->ctx)
			s->order[s->norder++] = (uint8_t)i;
	for (i = 0; i < d->nimgs; i++)
		if (d->imgs[i].any)
			s->order[s->norder++] = (uint8_t)i;
	/* the links made under the old order may lead elsewhere now */
	s->order_gen = new_order_gen(d);
	d->take_gen++;
}

int nt_decoder_add_image(struct nt_decoder *d, const struct nt_image *img,
			 bool any_context, uint64_t context)
{
	unsigned int i;

	if (d->nimgs == MAX_IMAGES)
		return -1;
	d->imgs[d->nimgs].img = img;
	d->imgs[d->nimgs].any = any_context;
	d->imgs[d->nimgs].ctx = context;
	d->nimgs++;
	for (i = 0; i < MAX_SRC; i++)
		if (d->srcs[i])
			select_images(d, d->srcs[i]);
	return d->dm ? demux_add_image(d->dm, img, any_context, context) : 0;
}

static struct src_dec *get_src(struct nt_decoder *d, unsigned int src)
{
	struct src_dec *s = d->srcs[src];

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->stack = calloc(d->ring_mask + 1, sizeof(*s->stack));
	if (!s->stack) {
		free(s);
		return NULL;
	}
	select_images(d, s);
	s->addr = nt_reader_addr_of(d->rd, src);
	s->time = nt_reader_time_of(d->rd, src);
	d->srcs[src] = s;
	return s;
}

/* ---- block cache ----------------------------------------------------- */

static uint32_t hash_pc(uint64_t pc, uint32_t img)
{
	uint64_t h = (pc >> 1) * 0x9e3779b97f4a7c15ull + img;

	return (uint32_t)(h >> 32);
}

static void run_cache_reset(struct nt_decoder *d);

static void cache_reset(struct nt_decoder *d)
{
	if (d->slots)	/* NULL by source: see nt_decoder_new() */
		memset(d->slots, 0, (d->slot_mask + 1) * sizeof(*d->slots));
	d->nblocks = 0;
	d->resets++;
	/* its runs name order generations that may be given out again */
	run_cache_reset(d);
}

static bool cache_grow(struct nt_decoder *d)
{
	uint32_t nmask = d->slot_mask * 2 + 1, i;
	struct slot *ns = calloc(nmask + 1, sizeof(*ns));

	if (!ns)
		return false;
	for (i = 0; i <= d->slot_mask; i++) {
		struct slot *o = &d->slots[i];
		uint32_t j;

		if (!o->img)
			continue;
		for (j = hash_pc(o->pc, o->img) & nmask; ns[j].img;
		     j = (j + 1) & nmask)
			;
		ns[j] = *o;
	}
	free(d->slots);
	d->slots = ns;
	d->slot_mask = nmask;
	return true;
}

static void build_block(struct nt_decoder *d, struct block *b,
			const uint8_t *p, size_t avail, uint64_t pc)
{
	uint64_t mask = (d->cfg.isa & NT_ISA_RV32) ? 0xffffffffull : ~0ull;
	size_t off = 0;

	memset(b, 0, sizeof(*b));
	b->start = pc;
	b->code = p;
	for (;;) {
		struct nt_insn in;
		uint64_t at = (pc + off) & mask;
		int r = nt_insn_classify(p + off, avail - off, at, d->cfg.isa,
					 &in);
		bool plain = r > 0 && (in.iclass == NT_IC_OTHER ||
				       in.iclass == NT_IC_LUI ||
				       in.iclass == NT_IC_AUIPC);

		b->term_pc = at;
		if (r <= 0 || in.iclass == NT_IC_INVALID) {
			b->term_outside = off + 2 > avail ||
					  (r == 0 && off + 4 > avail);
			b->term.iclass = NT_IC_INVALID;
			b->need = b->plain_half + 1;
			return;
		}
		if (!plain || b->plain_n == MAX_BLOCK_INSNS) {
			b->term = in;
			b->term_ok = true;
			b->need = b->plain_half + in.size / 2u;
			return;
		}
		b->pre_const = (in.iclass == NT_IC_LUI ||
				in.iclass == NT_IC_AUIPC) && in.rd;
		if (b->pre_const) {
			b->const_rd = in.rd;
			b->const_val = (uint64_t)in.imm +
				       (in.iclass == NT_IC_AUIPC ? at : 0);
		}
		b->plain_n++;
		b->plain_half += in.size / 2;
		off += in.size;
	}
}

static const struct block *get_block(struct nt_decoder *d, struct src_dec *s,
				     uint64_t pc)
{
	unsigned int k;

	for (k = 0; k < s->norder; k++) {
		uint32_t img = s->order[k] + 1u, j;
		const uint8_t *p;
		size_t avail;
		struct block *b;

		for (j = hash_pc(pc, img) & d->slot_mask; d->slots[j].img;
		     j = (j + 1) & d->slot_mask)
			if (d->slots[j].pc == pc && d->slots[j].img == img)
				return &d->blocks[d->slots[j].blk];
		p = nt_image_lookup(d->imgs[img - 1].img, pc, &avail);
		if (!p)
			continue;
		/* bounded memory whatever the trace says: start over when full */
		if (d->nblocks == MAX_CACHED_BLOCKS)
			cache_reset(d);
		if (d->nblocks == d->capblocks) {
			uint32_t cap = d->capblocks ? d->capblocks * 2 : 1024;
			struct block *nb = realloc(d->blocks, cap * sizeof(*nb));

			if (!nb)
				return NULL;
			d->blocks = nb;
			d->capblocks = cap;
		}
		if ((d->nblocks + 1) * 2 > d->slot_mask && !cache_grow(d))
			return NULL;
		b = &d->blocks[d->nblocks];
		build_block(d, b, p, avail, pc);
		for (j = hash_pc(pc, img) & d->slot_mask; d->slots[j].img;
		     j = (j + 1) & d->slot_mask)
			;
		d->slots[j].pc = pc;
		d->slots[j].img = img;
		d->slots[j].blk = d->nblocks++;
		return b;
	}
	return NULL;
}

/* ---- events ---------------------------------------------------------- */

static void event_init(struct nt_decoder *d, struct nt_event *ev,
		       unsigned int kind, const struct src_dec *s)
{
	/* once per block: plain stores are cheaper than memset here */
	*ev = (struct nt_event){
		.kind = (uint8_t)kind,
		.src = d->msg ? d->msg->src : 0,
		.time = d->msg ? d->msg->time : 0,
		.offset = d->msg ? d->msg->offset : 0,
		.priv = s ? s->priv : 0,
		.context = s ? s->ctx : 0,
	};
}

static void gap(struct nt_decoder *d, struct src_dec *s, const char *why,
		uint64_t offset)
{
	struct nt_event ev;

	event_init(d, &ev, NT_EV_GAP, s);
	ev.offset = offset;
	ev.error = why;
	d->take_gen++;
	if (s) {
		ev.from = s->pc;
		s->synced = false;
	}
	d->st.gaps++;
	d->fn(d->ctx, &ev);
}

/* ---- return stack ---------------------------------------------------- */

static void record_op(struct nt_decoder *d, uint64_t v, bool push, bool ok)
{
	struct stack_op *op;

	if (d->rec_nops == 2 * RUN_MAX_VALUES) {
		d->rec_bad = true;
		return;
	}
	op = &d->rec_ops[d->rec_nops++];
	op->v = v;
	op->push = push;
	op->ok = ok;
	op->guard = !push;
}

static void push(struct nt_decoder *d, struct src_dec *s, uint64_t ret)
{
	d->stack_ops++;
	if (d->rec)
		record_op(d, ret, true, true);
	s->stack[s->top] = ret;
	s->top = (s->top + 1) & d->ring_mask;
	if (s->count < d->cfg.ir_depth)
		s->count++;
}

static bool pop(struct nt_decoder *d, struct src_dec *s, uint64_t *ret)
{
	d->stack_ops++;
	if (!s->count) {
		if (d->rec)
			record_op(d, 0, false, false);
		return false;
	}
	s->count--;
	s->top = (s->top - 1) & d->ring_mask;
	*ret = s->stack[s->top];
	if (d->rec)
		record_op(d, *ret, false, true);
	return true;
}

/*
 * The return stack after an indirect transfer whose destination the
 * message gives: a return or coroutine swap takes its entry off (the
 * address is not needed, the message has it), a call or swap pushes
 * the address after it ("Implicit Return Optimization").
 */
static void follow_given_indirect(struct nt_decoder *d, struct src_dec *s,
				  unsigned int itype, uint64_t fall)
{
	uint64_t ret;

	if (itype == NT_ITYPE_RETURN || itype == NT_ITYPE_COROUTINE_SWAP) {
		/* whatever it held, the walk went where the message says */
		if (pop(d, s, &ret) && d->rec && d->rec_nops)
			d->rec_ops[d->rec_nops - 1].guard = false;
	}
	if (itype == NT_ITYPE_INDIRECT_CALL ||
	    itype == NT_ITYPE_COROUTINE_SWAP)
		push(d, s, fall);
}

static void reset_state(struct src_dec *s)
{
	s->top = s->count = 0;
	s->pend_icnt = s->walked = 0;
	s->last_valid = false;
}

/* ---- walking ---------------------------------------------------------- */

/* hist_init() leaves rep 0 when there are no bits to repeat */
static bool hist_has(const struct hist_src *hs)
{
	return hs->rep != 0;
}

static unsigned int hist_take(struct hist_src *hs)
{
	unsigned int bit = (hs->h >> (hs->nbits - 1 - hs->i)) & 1;

	if (++hs->i == hs->nbits) {
		hs->i = 0;
		hs->rep--;
	}
	return bit;
}

/* HIST value with its stop bit -> bit source repeated rep times. */
static void hist_init(struct hist_src *hs, uint64_t hist, uint64_t rep)
{
	unsigned int n = hist ? 63 - (unsigned int)__builtin_clzll(hist) : 0;

	hs->h = hist;
	hs->nbits = n;
	hs->i = 0;
	hs->rep = n ? rep : 0;
}

static int fail(struct nt_decoder *d, const char *why, uint64_t pc)
{
	d->err = why;
	d->err_pc = pc;
	return -1;
}

static uint64_t xmask(const struct nt_decoder *d)
{
	return (d->cfg.isa & NT_ISA_RV32) ? 0xffffffffull : ~0ull;
}

/* terminator(): the message ends with an ecall or ebreak it counted */
#define ECALL_COUNTED	1

/*
 * The block's last instruction has retired; work out where it went.
 * last: it is the final instruction the message describes.
 */
static int terminator(struct nt_decoder *d, struct src_dec *s,
		      const struct block *b, struct hist_src *hs, bool last_icnt,
		      int end, uint64_t target, struct nt_event *ev)
{
	const struct nt_insn *t = &b->term;
	uint64_t fall = (b->term_pc + t->size) & xmask(d);
	uint64_t ret;
	bool last;

	ev->itype = t->itype;
	switch (t->iclass) {
	case NT_IC_OTHER:	/* a block cut at MAX_BLOCK_INSNS */
	case NT_IC_LUI:
	case NT_IC_AUIPC:
		ev->itype = NT_ITYPE_NONE;
		ev->to = fall;
		return 0;
	case NT_IC_BRANCH: {
		bool taken;

		if (hist_has(hs)) {
			taken = hist_take(hs);
			last = last_icnt && !hist_has(hs);
		} else {
			if (d->cfg.mode == NT_MODE_HTM)
				return fail(d, "conditional branch without a HIST bit",
					    b->term_pc);
			last = last_icnt;
			taken = last && end == END_DIRECT;
		}
		if (last && end == END_DIRECT) {
			if (!taken)
				return fail(d, "DirectBranch ends at a not-taken branch",
					    b->term_pc);
			d->end_ok = true;
		}
		ev->itype = taken ? NT_ITYPE_BRANCH_TAKEN :
				    NT_ITYPE_BRANCH_NOT_TAKEN;
		ev->flags |= taken ? NT_EVF_TAKEN : 0;
		ev->to = taken ? t->target : fall;
		return 0;
	}
	case NT_IC_JAL:
		if (d->cfg.all_jumps) {
			/* all-jumps mode reports direct jumps like branches */
			if (hist_has(hs)) {
				if (!hist_take(hs))
					return fail(d, "HIST bit 0 for a direct jump",
						    b->term_pc);
				last = last_icnt && !hist_has(hs);
			} else {
				if (d->cfg.mode == NT_MODE_HTM)
					return fail(d, "direct jump without a HIST bit",
						    b->term_pc);
				last = last_icnt;
				if (!(last && end == END_DIRECT))
					return fail(d, "direct jump without a DirectBranch",
						    b->term_pc);
			}
			if (last && end == END_DIRECT)
				d->end_ok = true;
		}
		if (t->itype == NT_ITYPE_DIRECT_CALL)
			push(d, s, fall);
		ev->flags |= NT_EVF_TAKEN;
		ev->to = t->target;
		return 0;
	case NT_IC_ECALL:
		/*
		 * They never retire (section "Trace Ingress Port", itype
		 * table), but rc7 counted an ecall once it had: the message
		 * that ends with one reports its trap. Anywhere else it is
		 * damage.
		 */
		if (!last_icnt || hist_has(hs) || end == END_NONE ||
		    end == END_DIRECT)
			return fail(d, "ecall/ebreak counted as retired",
				    b->term_pc);
		return ECALL_COUNTED;
	case NT_IC_INVALID:
		return fail(d, b->term_outside ? "PC outside every program image" :
				    "undecodable instruction", b->term_pc);
	default:
		break;
	}

	/* jalr, cm.popret, cm.jt/jalt, mret/sret */
	last = last_icnt && !hist_has(hs);
	ev->flags |= NT_EVF_TAKEN;
	if (last && (end == END_INDIRECT || end == END_SYNC || end == END_STOP)) {
		/* the message itself says where it went (or nobody knows) */
		follow_given_indirect(d, s, t->itype, fall);
		if (end == END_STOP) {
			ev->flags |= NT_EVF_NO_NEXT;
			ev->to = 0;
			d->next_known = false;
		} else {
			ev->to = target;
		}
		if (t->iclass == NT_IC_TRAP_RETURN)
			s->priv_may_change = true;
		d->end_ok = true;
		return 0;
	}
	/* not the end: the encoder must have been able to infer it */
	if (t->itype == NT_ITYPE_RETURN || t->itype == NT_ITYPE_COROUTINE_SWAP) {
		if (!pop(d, s, &ret))
			return fail(d, "return inside I-CNT with an empty return stack",
				    b->term_pc);
		if (t->itype == NT_ITYPE_COROUTINE_SWAP)
			push(d, s, fall);
		ev->flags |= NT_EVF_INFERRED;
		ev->to = ret;
		return 0;
	}
	if (t->iclass == NT_IC_JALR && b->pre_const && t->rs1 == b->const_rd) {
		/* section 8.1: target built by the lui/auipc right before */
		if (t->itype == NT_ITYPE_INDIRECT_CALL)
			push(d, s, fall);
		ev->flags |= NT_EVF_INFERRED;
		ev->to = (b->const_val + (uint64_t)t->imm) & ~1ull & xmask(d);
		return 0;
	}
	return fail(d, t->iclass == NT_IC_TRAP_RETURN ?
		    "trap return inside I-CNT" :
		    "uninferable jump inside I-CNT", b->term_pc);
}

/*
 * The first instructions of b's straight run into ev, which starts at
 * ev->from, as many as fit in half half-words; returns the half-words
 * they take.
 */
static uint64_t plain_run(const struct nt_decoder *d, const struct block *b,
			  uint64_t half, struct nt_event *ev)
{
	const uint8_t *p = b->code;
	uint64_t pc = ev->from, h = 0;

	while (h < half && ev->ninsn < b->plain_n) {
		unsigned int sz = (p[0] & 3) == 3 ? 4 : 2;

		ev->last = pc;
		ev->ninsn++;
		h += sz / 2;
		p += sz;
		pc = (pc + sz) & xmask(d);
	}
	ev->to = pc;
	return h;
}

/*
 * The message counted the ecall or ebreak that ends block b as retired
 * (NT_DEV_ECALL_RETIRED): what ran before it is reported, and the PC
 * left at it for the trap its caller reports, as if the message had
 * followed the ratified rule.
 */
static void ecall_counted(struct nt_decoder *d, struct src_dec *s,
			  const struct block *b, struct nt_event *ev, int end)
{
	deviation(d, NT_DEV_ECALL_RETIRED, d->msg->offset);
	if (b->plain_n) {
		ev->itype = NT_ITYPE_NONE;
		ev->flags = 0;
		ev->ninsn = 0;
		d->st.halfwords += plain_run(d, b, b->plain_half, ev);
		d->st.insns += ev->ninsn;
		d->fn(d->ctx, ev);
	}
	/*
	 * Reported with B-TYPE 0, it went through the encoder as an
	 * uninferable call (the reference encoder's model): its return
	 * address is on the encoder's return stack, so it goes on ours.
	 */
	if (end == END_INDIRECT)
		push(d, s, (b->term_pc + b->term.size) & xmask(d));
	s->pc = b->term_pc;
	d->ecall = true;
	d->end_ok = true;
}

/*
 * The common blocks of a message's walk, as walk() and terminator()
 * would take them, without their care for the rest: reached through a
 * link and, in the middle of the message's I-CNT, ending with a
 * conditional branch (a HIST bit, or not taken in BTM), a direct jump
 * or call without all-jumps, or the cut of a long straight run; as the
 * last, with the indirect transfer whose target the message gives
 * (end END_INDIRECT or END_SYNC, no HIST bits left), or in BTM the
 * branch a DirectBranch ends at. A block not linked yet is looked up
 * and linked. Stops at the first block that is anything else, and
 * walk() takes that one. *prevp, *resetsp, *outp: the block before, the
 * cache (its reset count) it is of and which way it went, as in walk().
 */
static inline __attribute__((always_inline))
void walk_simple(struct nt_decoder *d, struct src_dec *s,
			uint64_t *remp, struct hist_src *hs, uint32_t *prevp,
			uint32_t *resetsp, unsigned int *outp,
			struct nt_event *ev, int end, uint64_t target)
{
	uint64_t rem = *remp, pc = s->pc, mask = xmask(d);
	bool htm = d->cfg.mode == NT_MODE_HTM;
	uint32_t gen = s->order_gen, prev = *prevp, resets = *resetsp;
	unsigned int out = *outp;

	for (;;) {
		const struct link *l = &d->blocks[prev - 1].link[out];
		const struct block *b;
		const struct nt_insn *t;
		uint64_t fall, to;
		unsigned int taken, iclass;
		uint32_t bi;
		bool last;

		if (l->pc == pc && l->gen == gen) {
			bi = l->blk;
		} else {
			/* not linked (yet, or elsewhere): look it up and link it */
			b = get_block(d, s, pc);
			if (!b)
				break;	/* walk() reports it */
			bi = (uint32_t)(b - d->blocks);
			/* the block before is gone if the cache started over */
			if (resets == d->resets) {
				struct link *w = &d->blocks[prev - 1].link[out];

				w->pc = pc;
				w->blk = bi;
				w->gen = gen;
			}
		}
		b = &d->blocks[bi];
		t = &b->term;
		fall = (b->term_pc + t->size) & mask;

		if (rem < b->need)
			break;
		last = rem == b->need;
		/*
		 * Tests, not a switch: the kind of the next block follows the
		 * program, and a jump table's one indirect branch predicts it
		 * worse than a test for each kind, the commonest first.
		 */
		iclass = t->iclass;
		if (iclass == NT_IC_BRANCH) {
			if (last) {
				/* BTM: the branch the DirectBranch ends at */
				if (hist_has(hs) || htm || end != END_DIRECT)
					goto done;
				taken = 1;
				d->end_ok = true;
			} else if (hist_has(hs)) {
				taken = hist_take(hs);
			} else if (!htm) {
				taken = 0;
			} else {
				goto done;	/* walk() reports it */
			}
			ev->itype = taken ? NT_ITYPE_BRANCH_TAKEN :
					    NT_ITYPE_BRANCH_NOT_TAKEN;
			to = taken ? t->target : fall;
		} else if (iclass == NT_IC_OTHER || iclass == NT_IC_LUI ||
			   iclass == NT_IC_AUIPC) {
			if (last)
				goto done;
			ev->itype = NT_ITYPE_NONE;
			taken = 0;
			to = fall;
		} else if (iclass == NT_IC_JAL) {
			if (last || d->cfg.all_jumps)
				goto done;
			if (t->itype == NT_ITYPE_DIRECT_CALL)
				push(d, s, fall);
			ev->itype = t->itype;
			taken = 1;
			to = t->target;
		} else if (iclass == NT_IC_JALR || iclass == NT_IC_POPRET ||
			   iclass == NT_IC_TABLE_JUMP ||
			   iclass == NT_IC_TRAP_RETURN) {
			/* the message says where it went */
			if (!last || hist_has(hs) ||
			    (end != END_INDIRECT && end != END_SYNC))
				goto done;
			follow_given_indirect(d, s, t->itype, fall);
			if (iclass == NT_IC_TRAP_RETURN)
				s->priv_may_change = true;
			d->end_ok = true;
			ev->itype = t->itype;
			taken = 1;
			to = target;
		} else {
			goto done;
		}
		rem -= b->need;
		ev->from = pc;
		ev->code = b->code;
		ev->last = b->term_pc;
		ev->ninsn = b->plain_n + 1ull;
		ev->flags = taken ? NT_EVF_TAKEN : 0;
		ev->to = to;
		d->st.insns += ev->ninsn;
		d->st.halfwords += b->need;
		d->st.transfers += taken;
		/* the block before the next, of the cache as it is now */
		prev = bi + 1;
		resets = d->resets;
		out = taken;
		s->pc = pc = to;
		d->fn(d->ctx, ev);
		if (last)
			break;
	}
done:
	*remp = rem;
	*prevp = prev;
	*resetsp = resets;
	*outp = out;
}

/* What a walk starts with: its outcome unknown, its events' fields. */
static void walk_start(struct nt_decoder *d, const struct src_dec *s)
{
	struct nt_event *ev = &d->walk_ev;

	d->end_ok = false;
	d->ecall = false;
	d->end_inferred = false;
	d->next_known = true;
	/* what every event of the walk shares, set once */
	ev->kind = NT_EV_INSNS;
	ev->src = d->msg ? d->msg->src : 0;
	ev->time = d->msg ? d->msg->time : 0;
	ev->offset = d->msg ? d->msg->offset : 0;
	ev->priv = s->priv;
	ev->context = s->ctx;
}

/*
 * Walk rem half-words (UNBOUNDED: until the HIST bits are used up) from
 * s->pc, emitting INSNS events. Returns 0 or -1 (d->err says why).
 */
static int walk(struct nt_decoder *d, struct src_dec *s, uint64_t rem,
		struct hist_src *hs, int end, uint64_t target)
{
	uint64_t quiet = 0;	/* half-words since the last HIST bit */
	struct nt_event *ev = &d->walk_ev;
	/* index + 1 of the block before, 0: none; it may be the last walk's */
	uint32_t prev = s->walk_prev;
	uint32_t prev_resets = s->walk_resets;
	unsigned int prev_out = s->walk_out;
	int r;

	walk_start(d, s);
	for (;;) {
		const struct block *b;
		uint64_t need;

		if (rem == UNBOUNDED ? !hist_has(hs) : rem == 0) {
			if (hist_has(hs))
				return fail(d, "HIST bits left with no reachable branch",
					    s->pc);
			/* the next walk goes on from the last block's end */
			s->walk_prev = prev;
			s->walk_resets = prev_resets;
			s->walk_out = (uint8_t)prev_out;
			return 0;
		}
		if (rem != UNBOUNDED && prev && d->resets == prev_resets) {
			walk_simple(d, s, &rem, hs, &prev, &prev_resets,
				    &prev_out, ev, end, target);
			if (!rem)
				continue;	/* it took the last block */
		}
		/* the way the block before went last time, or a lookup */
		if (prev && d->resets == prev_resets) {
			const struct link *l = &d->blocks[prev - 1].link[prev_out];

			if (l->pc == s->pc && l->gen == s->order_gen) {
				prev = l->blk + 1;
				b = &d->blocks[l->blk];
				goto linked;
			} else {
				b = get_block(d, s, s->pc);
				if (b && d->resets == prev_resets) {
					struct link *w =
						&d->blocks[prev - 1].link[prev_out];

					w->pc = s->pc;
					w->blk = (uint32_t)(b - d->blocks);
					w->gen = s->order_gen;
				}
			}
		} else {
			b = get_block(d, s, s->pc);
		}
		if (!b)
			return fail(d, "PC outside every program image", s->pc);
		prev = (uint32_t)(b - d->blocks) + 1;
		prev_resets = d->resets;
linked:
		need = b->need;
		ev->from = s->pc;
		ev->code = b->code;
		ev->flags = 0;

		if (rem != UNBOUNDED && rem < need) {
			/* the message ends inside this block's straight run */
			uint64_t h;

			if (hist_has(hs))
				return fail(d, "HIST bits left with no reachable branch",
					    s->pc);
			ev->itype = NT_ITYPE_NONE;
			ev->ninsn = 0;
			s->walk_prev = 0;	/* it ends inside the block */
			h = plain_run(d, b, rem, ev);
			if (h != rem)
				return fail(d, "I-CNT ends inside an instruction",
					    ev->to);
			s->pc = ev->to;
			d->st.insns += ev->ninsn;
			d->st.halfwords += h;
			d->fn(d->ctx, ev);
			return 0;
		}
		if (!b->term_ok)
			return fail(d, b->term_outside ?
				    "PC outside every program image" :
				    "undecodable instruction", b->term_pc);
		if (rem != UNBOUNDED) {
			rem -= need;
		} else {
			/*
			 * HIST before its I-CNT: the final message settles it.
			 * Not bounded by what a 22-bit counter holds: encoders
			 * with wider ones send no RCODE 0 for millions of
			 * instructions, then one I-CNT with all of them.
			 */
			s->walked += need;
			quiet += need;
			if (quiet > WALK_SLACK)
				return fail(d, "no branch for the HIST bits",
					    s->pc);
			if (b->term.iclass == NT_IC_BRANCH ||
			    (b->term.iclass == NT_IC_JAL && d->cfg.all_jumps))
				quiet = 0;	/* it takes the next bit */
		}
		ev->last = b->term_pc;
		ev->ninsn = b->plain_n + 1ull;
		r = terminator(d, s, b, hs, rem == 0, end, target, ev);
		if (r < 0)
			return -1;
		if (r == ECALL_COUNTED) {
			ecall_counted(d, s, b, ev, end);
			return 0;
		}
		d->end_inferred = rem == 0 && (ev->flags & NT_EVF_INFERRED);
		d->st.insns += ev->ninsn;
		d->st.halfwords += need;
		prev_out = (ev->flags & NT_EVF_TAKEN) != 0;
		d->st.transfers += prev_out;
		d->fn(d->ctx, ev);
		if (ev->flags & NT_EVF_NO_NEXT)
			return 0;
		s->pc = ev->to;
	}
}

/*
 * walk() for a message's I-CNT (rem not UNBOUNDED), its common blocks
 * taken by walk_simple() first: most messages are done without walk().
 */
static int walk_msg(struct nt_decoder *d, struct src_dec *s, uint64_t rem,
		    struct hist_src *hs, int end, uint64_t target)
{
	uint32_t prev = s->walk_prev, resets = s->walk_resets;
	unsigned int out = s->walk_out;

	walk_start(d, s);
	if (rem && prev && resets == d->resets) {
		walk_simple(d, s, &rem, hs, &prev, &resets, &out, &d->walk_ev,
			    end, target);
		/* where the next walk (or walk() here) goes on from */
		s->walk_prev = prev;
		s->walk_resets = resets;
		s->walk_out = (uint8_t)out;
		/* it took the last block, with no HIST bits left */
		if (!rem)
			return 0;
	}
	return walk(d, s, rem, hs, end, target);
}

/* ---- messages ---------------------------------------------------------- */

static size_t bytes_at(struct nt_decoder *d, struct src_dec *s, uint64_t pc,
		       const uint8_t **code)
{
	unsigned int k;

	for (k = 0; k < s->norder; k++) {
		size_t avail;
		const uint8_t *p = nt_image_lookup(d->imgs[s->order[k]].img, pc,
						   &avail);

		if (p && avail >= 2) {
			*code = p;
			return avail;
		}
	}
	*code = NULL;
	return 0;
}

static void trap_event(struct nt_decoder *d, struct src_dec *s,
		       unsigned int btype, uint64_t handler)
{
	struct nt_event ev;
	struct nt_insn in;
	size_t avail;

	event_init(d, &ev, NT_EV_TRAP, s);
	ev.btype = (uint8_t)btype;
	ev.from = s->pc;
	ev.to = handler;
	avail = bytes_at(d, s, s->pc, &ev.code);
	/*
	 * An exception is raised by the instruction at epc (it did not
	 * retire). With B-TYPE 1 only ecall/ebreak tell it apart.
	 */
	if (btype == NT_BTYPE_EXCEPTION ||
	    (btype == NT_BTYPE_TRAP && ev.code &&
	     nt_insn_classify(ev.code, avail, s->pc, d->cfg.isa, &in) > 0 &&
	     in.iclass == NT_IC_ECALL))
		ev.itype = NT_ITYPE_EXCEPTION;
	else
		ev.itype = NT_ITYPE_INTERRUPT;
	d->st.traps++;
	d->st.transfers++;
	d->fn(d->ctx, &ev);
	s->pc = handler;
	s->priv_may_change = true;
}

/*
 * "Either 1-only or both 2 and 3 should be implemented and consistently
 * reported" (section "Common Fields", B-TYPE): one encoder reports every
 * trap with B-TYPE 1, or every trap with 2 or 3. A trap message of the
 * other kind in the same source's stream has a damaged B-TYPE, itself
 * or the one that set the kind: the next trap sets it anew.
 */
static int trap_btype(struct nt_decoder *d, struct src_dec *s,
		      unsigned int btype)
{
	uint8_t kind = btype == NT_BTYPE_TRAP ? TRAPS_COMBINED : TRAPS_SPLIT;

	if (s->trap_btypes == TRAPS_UNKNOWN)
		s->trap_btypes = kind;
	if (s->trap_btypes == kind)
		return 0;
	s->trap_btypes = TRAPS_UNKNOWN;
	return fail(d, "B-TYPE 1 and B-TYPE 2/3 traps in one stream", s->pc);
}

/*
 * The trap a message reports once its walk is done. An encoder sends
 * nothing for a return or sequential jump it infers (sections "Implicit
 * Return Optimization" and "Sequential Jump Optimization"), so the
 * I-CNT of a trap message may end with one: the trap was taken at its
 * target. But that target is not where the trap goes: no handler
 * starts at a return address, and a handler reached by a jump traps to
 * itself. A trap to that very address is the jump's own message,
 * B-TYPE 0, with its B-TYPE damaged ("Common Fields", B-TYPE).
 */
static int walked_to_trap(struct nt_decoder *d, struct src_dec *s,
			  unsigned int btype, uint64_t handler)
{
	if (d->end_inferred && s->pc == handler)
		return fail(d, "trap to where the inferred jump before it went",
			    s->pc);
	trap_event(d, s, btype, handler);
	return 0;
}

/*
 * The I-CNT still to walk for a message carrying icnt, after the
 * ResourceFull I-CNT and the HIST walks before it.
 */
static int message_rem(struct nt_decoder *d, struct src_dec *s, uint64_t icnt,
		       uint64_t *rem)
{
	uint64_t total = s->pend_icnt + icnt;

	if (icnt > d->cfg.max_icnt)
		return fail(d, "I-CNT larger than any encoder counts", s->pc);
	if (total < s->pend_icnt || total < s->walked)
		return fail(d, "HIST walk went past the message's I-CNT", s->pc);
	*rem = total - s->walked;
	s->pend_icnt = s->walked = 0;
	return 0;
}

/* DirectBranch, IndirectBranch, IndirectBranchHist (or a replay). */
static int branch_msg(struct nt_decoder *d, struct src_dec *s,
		      const struct last_branch *m)
{
	struct hist_src hs;
	uint64_t rem;
	int end;

	if (message_rem(d, s, m->icnt, &rem))
		return -1;
	hist_init(&hs, m->tcode == NT_TCODE_INDIRECT_BRANCH_HIST ? m->hist : 0, 1);
	if (m->tcode == NT_TCODE_DIRECT_BRANCH)
		end = END_DIRECT;
	else
		end = m->btype == NT_BTYPE_INDIRECT ? END_INDIRECT : END_TRAP;
	if (end == END_TRAP && trap_btype(d, s, m->btype))
		return -1;
	if (walk_msg(d, s, rem, &hs, end, m->target))
		return -1;
	if (end == END_TRAP || d->ecall)
		return walked_to_trap(d, s, end == END_TRAP ? m->btype :
				      NT_BTYPE_EXCEPTION, m->target);
	if (!d->end_ok)
		return fail(d, end == END_DIRECT ?
			    "DirectBranch does not end at a taken branch" :
			    "IndirectBranch does not end at an indirect jump",
			    s->pc);
	return 0;
}

static void sync_event(struct nt_decoder *d, struct src_dec *s,
		       const struct nt_msg *m)
{
	struct nt_event ev;

	reset_state(s);
	s->synced = true;
	s->pc = m->target;
	s->priv_may_change = true;
	event_init(d, &ev, NT_EV_SYNC, s);
	ev.sync = m->sync;
	ev.to = m->target;
	d->st.syncs++;
	d->fn(d->ctx, &ev);
}

/* Sync messages: finish what ran before (when synced), then restart. */
static int sync_msg(struct nt_decoder *d, struct src_dec *s,
		    const struct nt_msg *m)
{
	struct hist_src hs;
	uint64_t rem;
	int end;

	if (!s->synced) {
		sync_event(d, s, m);
		return 0;
	}
	if (message_rem(d, s, m->icnt, &rem))
		return -1;
	hist_init(&hs, (m->fields & NT_F_HIST) ? m->hist : 0, 1);
	if (m->tcode == NT_TCODE_DIRECT_BRANCH_SYNC)
		end = END_DIRECT;
	else if ((m->fields & NT_F_BTYPE) && m->btype != NT_BTYPE_INDIRECT)
		end = END_TRAP;
	else
		end = END_SYNC;
	if (end == END_TRAP && trap_btype(d, s, m->btype))
		return -1;
	if (walk(d, s, rem, &hs, end, m->target))
		return -1;
	if (end == END_TRAP || d->ecall) {
		if (walked_to_trap(d, s, end == END_TRAP ? m->btype :
				   NT_BTYPE_EXCEPTION, m->target))
			return -1;
	} else if (end == END_DIRECT && !d->end_ok) {
		return fail(d, "DirectBranchSync does not end at a taken branch",
			    s->pc);
	} else if (s->pc != m->target && !d->end_ok) {
		return fail(d, "sync address differs from the decoded PC", s->pc);
	}
	sync_event(d, s, m);
	return 0;
}

static int correlation_msg(struct nt_decoder *d, struct src_dec *s,
			   const struct nt_msg *m)
{
	struct hist_src hs;
	struct nt_event ev;
	uint64_t rem;

	if (message_rem(d, s, m->icnt, &rem))
		return -1;
	hist_init(&hs, (m->fields & NT_F_HIST) ? m->hist : 0, 1);
	if (walk(d, s, rem, &hs, END_STOP, 0))
		return -1;
	event_init(d, &ev, NT_EV_STOP, s);
	ev.evcode = m->evcode;
	ev.from = s->pc;
	d->fn(d->ctx, &ev);
	s->synced = false;
	return 0;
}

/*
 * A walk's event kept in evs, which has room for cap: bad once one is
 * not an INSNS or there is no room (recording a run, replay_hist()).
 */
static void keep_walk_event(const struct nt_event *ev, struct nt_event *evs,
			    unsigned int *n, unsigned int cap, bool *bad)
{
	if (ev->kind != NT_EV_INSNS || *n == cap)
		*bad = true;
	else
		evs[(*n)++] = *ev;
}

/* replay_hist(): the first repetitions' events kept, and handed on */
static void replay_event(void *ctx, const struct nt_event *ev)
{
	struct nt_decoder *d = ctx;

	keep_walk_event(ev, d->rep_evs, &d->rep_nev, REPLAY_MAX_EVENTS,
			&d->rep_bad);
	d->rep_fn(d->rep_ctx, ev);
}

/* Where a repetition of replay_hist() started, and what was done by then. */
struct replay_mark {
	uint64_t pc, stack_ops, insns, halfwords, transfers;
	unsigned int nev;
};

static void mark_repetition(const struct nt_decoder *d,
			    const struct src_dec *s, struct replay_mark *m)
{
	m->pc = s->pc;
	m->stack_ops = d->stack_ops;
	m->insns = d->st.insns;
	m->halfwords = d->st.halfwords;
	m->transfers = d->st.transfers;
	m->nev = d->rep_nev;
}

/*
 * The earliest of repetitions 0 to k that the source is back at the
 * start of, with no push or pop since; REPLAY_MAX_ROUND if none.
 */
static unsigned int replay_round(const struct nt_decoder *d,
				 const struct src_dec *s,
				 const struct replay_mark *at, uint64_t k)
{
	unsigned int i;

	for (i = 0; i <= k; i++)
		if (at[i].pc == s->pc && at[i].stack_ops == d->stack_ops)
			return i;
	return REPLAY_MAX_ROUND;
}

/*
 * HIST bits (hist with its stop bit) repeated rep times: ResourceFull
 * RCODE 2, and SiFive's RCODE 8 and 9 with a one-bit pattern. The
 * message may walk at most max_repeat half-words: a damaged HREPEAT can
 * ask for billions of branches, and each may lie up to WALK_SLACK
 * half-words from the one before, so the count of bits alone bounds
 * nothing useful.
 *
 * The walk depends on the PC, the return stack and the bits alone. So
 * where a repetition ends at the PC an earlier one started from, with
 * no push or pop in between, the repetitions from that one on come
 * round again and again, walking the same blocks to the same events,
 * and the half-words of all the whole rounds left are known before any
 * of them is walked: a damaged HREPEAT fails at once. With the run
 * cache those rounds' events are handed over again rather than walked
 * (without it they are walked, to compare). What is left over, less
 * than a round, is walked. Each repetition uses up its bits or fails:
 * a walk to no end (END_NONE) stops nowhere else.
 */
static int replay_hist(struct nt_decoder *d, struct src_dec *s,
		       uint64_t hist, uint64_t rep)
{
	struct replay_mark at[REPLAY_MAX_ROUND], now;
	uint64_t left = d->cfg.max_repeat, k, rounds, hw;
	bool keep = true;	/* the repetitions' events are kept */
	struct hist_src hs;
	unsigned int i;
	int r = 0;

	hist_init(&hs, hist, rep);
	if (!hs.nbits)
		return walk(d, s, UNBOUNDED, &hs, END_NONE, 0);
	if (hs.rep > d->cfg.max_repeat / hs.nbits)
		return fail(d, "repeated history beyond the replay limit", s->pc);
	d->rep_bad = false;
	d->rep_nev = 0;
	d->rep_fn = d->fn;
	d->rep_ctx = d->ctx;
	d->fn = replay_event;
	d->ctx = d;
	for (k = 0; k < hs.rep; k++) {
		struct hist_src one;

		if (keep)
			mark_repetition(d, s, &at[k]);
		hist_init(&one, hist, 1);
		hw = d->st.halfwords;
		r = walk(d, s, UNBOUNDED, &one, END_NONE, 0);
		if (r)
			break;
		hw = d->st.halfwords - hw;
		if (hw > left) {
			r = fail(d, "repeated history beyond the replay limit",
				 s->pc);
			break;
		}
		left -= hw;
		if (!keep)
			continue;
		i = d->rep_bad ? REPLAY_MAX_ROUND : replay_round(d, s, at, k);
		if (i == REPLAY_MAX_ROUND && !d->rep_bad &&
		    k + 1 < REPLAY_MAX_ROUND)
			continue;
		keep = false;
		d->fn = d->rep_fn;
		d->ctx = d->rep_ctx;
		if (i == REPLAY_MAX_ROUND)
			continue;	/* no round: each repetition is walked */
		/* repetitions i to k are a round */
		mark_repetition(d, s, &now);
		hw = now.halfwords - at[i].halfwords;
		rounds = (hs.rep - k - 1) / (k + 1 - i);
		if (rounds > left / hw) {
			r = fail(d, "repeated history beyond the replay limit",
				 s->pc);
			break;
		}
		if (!d->cfg.run_cache)
			continue;	/* walked, within the limit */
		for (uint64_t n = 0; n < rounds; n++) {
			unsigned int e;

			for (e = at[i].nev; e < now.nev; e++)
				d->fn(d->ctx, &d->rep_evs[e]);
		}
		left -= rounds * hw;
		d->st.insns += rounds * (now.insns - at[i].insns);
		d->st.halfwords += rounds * hw;
		d->st.transfers += rounds * (now.transfers - at[i].transfers);
		s->walked += rounds * hw;
		k += rounds * (k + 1 - i);
	}
	if (keep) {
		d->fn = d->rep_fn;
		d->ctx = d->rep_ctx;
	}
	return r;
}

static int resource_full(struct nt_decoder *d, struct src_dec *s,
			 const struct nt_msg *m)
{
	struct hist_src hs;

	switch (m->rcode) {
	case NT_RCODE_ICNT:
		if (m->rdata[0] > d->cfg.max_icnt ||
		    s->pend_icnt + m->rdata[0] < s->pend_icnt)
			return fail(d, "I-CNT larger than any encoder counts",
				    s->pc);
		s->pend_icnt += m->rdata[0];
		return 0;
	case NT_RCODE_HIST:
		hist_init(&hs, m->rdata[0], 1);
		return walk(d, s, UNBOUNDED, &hs, END_NONE, 0);
	case NT_RCODE_HIST_REPEAT:
		return replay_hist(d, s, m->rdata[0], m->rdata[1]);
	case NT_RCODE_SIFIVE_NOT_TAKEN:
	case NT_RCODE_SIFIVE_TAKEN:
		if (!(d->cfg.stream.quirks & NT_QUIRK_SIFIVE))
			return 0;
		/* one outcome RDATA times: a one-bit HIST pattern repeated */
		return replay_hist(d, s, m->rcode == NT_RCODE_SIFIVE_TAKEN ?
				   3 : 2, m->rdata[0]);
	default:
		/* vendor RCODEs carry nothing the flow depends on */
		return 0;
	}
}

/*
 * Section "Ownership Message": FORMAT 01 is reserved, and so is every
 * {V, PRV} but U, S, M, VU and VS. The privilege level changes only at
 * a trap or a trap return (the Privileged ISA), and the encoder reports
 * the change right after the message of that trap or return, or after
 * a sync; one anywhere else is a message damaged into an Ownership.
 * An hcontext message comes with the scontext message after it.
 */
#define VALID_OWN_PRIVS	0x3bu

static int ownership_msg(struct nt_decoder *d, struct src_dec *s,
			 const struct nt_msg *m)
{
	struct nt_event ev;
	unsigned int fmt = m->process & 3;
	uint8_t priv = (m->process >> 2) & 7;

	if (fmt == 1)
		return fail(d, "Ownership with a reserved FORMAT", s->pc);
	if (!((VALID_OWN_PRIVS >> priv) & 1))
		return fail(d, "Ownership with a reserved privilege level", s->pc);
	if (s->synced && !s->priv_may_change &&
	    (fmt == NT_OWN_PRIV || (s->own_known && priv != s->priv)))
		return fail(d, "privilege change without a trap, trap return "
			    "or sync", s->pc);
	s->priv = priv;
	s->own_known = true;
	s->want_scontext = fmt == NT_OWN_HCONTEXT;
	if (fmt == NT_OWN_SCONTEXT) {
		s->ctx = m->process >> 5;
		select_images(d, s);
	}
	event_init(d, &ev, NT_EV_OWNERSHIP, s);
	ev.sync = (uint8_t)fmt;
	d->fn(d->ctx, &ev);
	return 0;
}

static struct run *run_at(const struct nt_decoder *d, uint32_t at);

/*
 * What only the last message of a stretch of runs decides, which the
 * stretch's end left to be written (run_stretch_end()). PC and
 * address history are written at once: the reader moves the history
 * on before the next message of s is decoded, but s->pc, which is the
 * target an IndirectBranch's run leaves, stays.
 */
static void __attribute__((noinline))
run_settle(struct nt_decoder *d, struct src_dec *s)
{
	const struct run *last = run_at(d, s->run_last);

	s->run_last = 0;
	s->priv_may_change = last->flags & RUN_PRIV_MAY_CHANGE;
	s->last.tcode = last->tcode;
	s->last.btype = NT_BTYPE_INDIRECT;
	s->last.icnt = last->icnt;
	s->last.hist = last->hist;
	s->last.target = last->flags & RUN_INDIRECT ? s->pc : 0;
	s->last_valid = true;
	/* where the general path's next walk starts: no hint */
	s->walk_prev = 0;
}

static inline void run_settled(struct nt_decoder *d, struct src_dec *s)
{
	if (s->run_last)
		run_settle(d, s);
}

/*
 * The messages a branch trace is made of, when none of decode_msg()'s
 * checks apply: a well-formed DirectBranch, IndirectBranch or
 * IndirectBranchHist of a source in sync, with no hcontext pending,
 * its I-CNT within the spec's width, the images not said complete.
 * What decode_msg() does with it, without the checks; false: it goes
 * there. Called before decode_msg(), not from it: that one saves and
 * restores six registers, on every message if it came first.
 */
static inline __attribute__((always_inline))
bool branch_fast(struct nt_decoder *d, const struct nt_msg *m)
{
	struct last_branch lb;
	struct src_dec *s;
	int r;

	if ((m->tcode != NT_TCODE_DIRECT_BRANCH &&
	     m->tcode != NT_TCODE_INDIRECT_BRANCH &&
	     m->tcode != NT_TCODE_INDIRECT_BRANCH_HIST) || m->err ||
	    (d->cfg.src >= 0 && m->src != d->cfg.src) ||
	    d->cfg.images_complete || m->icnt >> NT_MAX_ICNT_BITS)
		return false;
	s = d->srcs[m->src];
	if (!s || !s->synced || s->want_scontext)
		return false;
	run_settled(d, s);
	d->take_gen++;
	d->st.msgs++;
	d->msg = m;
	note_time(d, m);
	s->priv_may_change = false;
	lb.tcode = m->tcode;
	lb.btype = m->btype;
	lb.icnt = m->icnt;
	lb.hist = m->hist;
	lb.target = m->target;
	r = branch_msg(d, s, &lb);
	s->last = lb;
	s->last_valid = !r;
	if (r) {
		d->st.errors++;
		gap(d, s, d->err, m->offset);
	}
	return true;
}

/* Every message but those branch_fast() takes. */
static void __attribute__((noinline))
decode_msg(struct nt_decoder *d, const struct nt_msg *m)
{
	const uint8_t *code;
	struct src_dec *s;
	int r = 0;

	d->take_gen++;
	d->st.msgs++;
	d->msg = m;
	if (m->err && m->err != NT_ERR_UNKNOWN_TCODE) {
		unsigned int i;

		unsigned int n = 0;

		/* the SRC of a damaged message is unknown: everyone resyncs */
		d->st.errors++;
		for (i = 0; i < MAX_SRC; i++) {
			if (d->srcs[i] && d->srcs[i]->synced) {
				gap(d, d->srcs[i], nt_err_name(m->err),
				    m->err_at);
				n++;
			}
		}
		if (!n)
			gap(d, NULL, nt_err_name(m->err), m->err_at);
		return;
	}
	if (d->cfg.src >= 0 && m->src != d->cfg.src)
		return;
	s = get_src(d, m->src);
	if (!s)
		return;
	run_settled(d, s);
	/* section "Common Fields", table "Maximum Field Sizes" */
	if (((m->fields & NT_F_ICNT) && m->icnt >> NT_MAX_ICNT_BITS) ||
	    (m->tcode == NT_TCODE_RESOURCE_FULL && m->rcode == NT_RCODE_ICNT &&
	     m->rdata[0] >> NT_MAX_ICNT_BITS))
		deviation(d, NT_DEV_WIDE_ICNT, m->offset);
	if (m->err || (m->tcode >= NT_TCODE_VENDOR_FIRST &&
		       m->tcode <= NT_TCODE_VENDOR_LAST) ||
	    m->tcode == NT_TCODE_DATA_ACQUISITION ||
	    m->tcode == NT_TCODE_IN_CIRCUIT_TRACE) {
		/*
		 * Reserved TCODEs mean damage. Vendor messages, software's
		 * data values and in-circuit signals carry no flow.
		 */
		if (m->err) {
			d->st.errors++;
			gap(d, s, "reserved TCODE", m->offset);
		}
		return;
	}
	note_time(d, m);
	if (m->tcode == NT_TCODE_ERROR) {
		s->want_scontext = false;
		gap(d, s, "trace lost (Error message)", m->offset);
		return;
	}
	if (s->want_scontext && (m->tcode != NT_TCODE_OWNERSHIP ||
				 (m->process & 3) != NT_OWN_SCONTEXT)) {
		/* the scontext, or the hcontext before, was damaged */
		s->want_scontext = false;
		d->st.errors++;
		gap(d, s, "hcontext Ownership without its scontext", m->offset);
	}
	if (!s->synced && m->tcode != NT_TCODE_OWNERSHIP &&
	    !nt_tcode_is_sync(m->tcode)) {
		d->st.skipped_msgs++;
		return;
	}
	/* a trap, trap return or sync may change the privilege next */
	if (m->tcode != NT_TCODE_OWNERSHIP)
		s->priv_may_change = false;

	switch (m->tcode) {
	case NT_TCODE_OWNERSHIP:
		r = ownership_msg(d, s, m);
		break;
	case NT_TCODE_DIRECT_BRANCH:
	case NT_TCODE_INDIRECT_BRANCH:
	case NT_TCODE_INDIRECT_BRANCH_HIST: {
		struct last_branch lb = {
			.tcode = m->tcode, .btype = m->btype, .icnt = m->icnt,
			.hist = m->hist, .target = m->target,
		};

		r = branch_msg(d, s, &lb);
		s->last = lb;
		s->last_valid = !r;
		break;
	}
	case NT_TCODE_REPEAT_BRANCH: {
		uint64_t k;

		if (!s->last_valid) {
			r = fail(d, "RepeatBranch without a branch message", s->pc);
			break;
		}
		if (m->bcnt && (s->last.icnt + 1) > d->cfg.max_repeat / m->bcnt) {
			r = fail(d, "RepeatBranch beyond the replay limit", s->pc);
			break;
		}
		for (k = 0; k < m->bcnt && !r; k++)
			r = branch_msg(d, s, &s->last);
		break;
	}
	case NT_TCODE_PROG_TRACE_SYNC:
	case NT_TCODE_DIRECT_BRANCH_SYNC:
	case NT_TCODE_INDIRECT_BRANCH_SYNC:
	case NT_TCODE_INDIRECT_BRANCH_HIST_SYNC:
		r = sync_msg(d, s, m);
		break;
	case NT_TCODE_RESOURCE_FULL:
		r = resource_full(d, s, m);
		break;
	case NT_TCODE_PROG_TRACE_CORRELATION:
		r = correlation_msg(d, s, m);
		break;
	default:
		break;
	}
	if (r) {
		d->st.errors++;
		gap(d, s, d->err, m->offset);
		/* a sync that failed its consistency check still resyncs */
		if (!nt_tcode_is_sync(m->tcode))
			return;
		sync_event(d, s, m);
	}
	/* the address the message gave, where decoding goes on */
	if (d->cfg.images_complete && s->synced &&
	    (m->fields & (NT_F_FADDR | NT_F_UADDR)) &&
	    !bytes_at(d, s, s->pc, &code)) {
		d->st.errors++;
		gap(d, s, "address outside every program image", m->offset);
	}
}

/* ---- run cache --------------------------------------------------------- */

/*
 * A trace is mostly the same few thousand branch messages sent from the
 * same few thousand PCs, again and again: a loop's DirectBranch from its
 * head, a function's IndirectBranch for its return. A message decoded
 * from a PC decodes the same way from that PC every time, so the events
 * of its walk, its statistics and what it did to the return stack are
 * remembered (a struct run) under its bytes and the PC, and taken again
 * straight from the bytes: no struct nt_msg, no walk, no block visited.
 *
 * What else the walk depended on is checked: the privilege and context
 * its events carry, the image search order, nothing pending from
 * ResourceFull messages, and the return stack: the entries it popped
 * from below what it pushed itself, those whose value it followed
 * (implicit returns) compared, and no overflow. An IndirectBranch's
 * target is the address history XOR its U-ADDR, which the bytes give:
 * the run keeps that XOR, and only its last event's destination
 * changes. Messages of nine to sixteen bytes, and a ResourceFull with
 * the branch message after it, are runs too (run_find_long()). Anything
 * else (a longer message, a B-TYPE other than 0, an error, a deviation)
 * is never remembered, and the general path takes it, as it takes every
 * message the cache does not know.
 */

/* No source's last message is a run. */
static void run_links_reset(struct nt_decoder *d)
{
	unsigned int i;

	for (i = 0; i < MAX_SRC; i++)
		if (d->srcs[i])
			d->srcs[i]->run_prev = 0;
}

/* Forget every run (the arena is full, or epochs may mean other states). */
static void run_cache_reset(struct nt_decoder *d)
{
	unsigned int i;

	if (!d->run_slots)
		return;
	/* the runs they were left to are going */
	for (i = 0; i < MAX_SRC; i++)
		if (d->srcs[i])
			run_settled(d, d->srcs[i]);
	memset(d->run_slots, 0, sizeof(*d->run_slots) << RUN_SLOTS_LOG2);
	memset(d->run_epochs, 0, sizeof(d->run_epochs));
	d->take_gen++;
	d->run_used = 8;
	run_links_reset(d);
}

static struct run *run_at(const struct nt_decoder *d, uint32_t at)
{
	return (struct run *)(void *)(d->run_arena + at);
}

static uint32_t run_slot(uint64_t pc, uint64_t bytes)
{
	uint64_t h = (pc >> 1) * 0x9e3779b97f4a7c15ull ^
		     bytes * 0xc2b2ae3d27d4eb4full;

	return (uint32_t)(h >> (64 - RUN_SLOTS_LOG2));
}

/* Whether epoch ep is of s's state. */
static inline bool run_epoch_is(const struct run_epoch *ep,
				const struct src_dec *s)
{
	return ep->id && ep->ctx == s->ctx && ep->priv == s->priv &&
	       ep->order_gen == s->order_gen;
}

/* run_epoch() when s's state is not where s found it last. */
static uint32_t __attribute__((noinline))
run_epoch_find(struct nt_decoder *d, struct src_dec *s)
{
	struct run_epoch *ep;
	unsigned int i, at;

	for (i = 1; i < RUN_EPOCHS; i++) {
		at = (s->run_epoch_slot + i) % RUN_EPOCHS;
		ep = &d->run_epochs[at];
		if (run_epoch_is(ep, s)) {
			s->run_epoch_slot = at;
			return ep->id;
		}
	}
	if (!++d->run_epoch_ids) {
		run_cache_reset(d);
		d->run_epoch_ids = 1;
	}
	s->run_epoch_slot = d->run_epoch_next;
	ep = &d->run_epochs[d->run_epoch_next];
	d->run_epoch_next = (d->run_epoch_next + 1) % RUN_EPOCHS;
	ep->ctx = s->ctx;
	ep->priv = s->priv;
	ep->order_gen = s->order_gen;
	ep->id = d->run_epoch_ids;
	return ep->id;
}

/*
 * The id of the state s is in (context, privilege, image order): runs
 * made in it are taken only in it again. A few states stay known;
 * one that comes back after that gets a new id, and its runs are made
 * again. A funnel's sources take turns, often every message or two,
 * and each turn looks for its epoch: first where it found it last,
 * inline (as a loop in a call, 14 more x86 instructions a turn).
 */
static inline uint32_t run_epoch(struct nt_decoder *d, struct src_dec *s)
{
	const struct run_epoch *ep = &d->run_epochs[s->run_epoch_slot];

	return run_epoch_is(ep, s) ? ep->id : run_epoch_find(d, s);
}

/*
 * The mask of the bytes of the message that starts word w (eight
 * bytes of the stream, see load_bytes()) when it ends within them;
 * 0 when w does not start one (MSEO of the first byte not 00: idle, or
 * not a boundary) or it is longer. A run keeps its bytes under it.
 */
static inline uint64_t first_msg_mask(uint64_t w)
{
	uint64_t ends = msg_ends(w);

	if ((w & 3) || !ends)
		return 0;
	return msg_mask_to_end(ends);
}

/*
 * Whether word w starts a ResourceFull that ends within it and no other
 * message end is in it: the first word of a pair (run_find_long()).
 */
static inline bool pair_first_word(uint64_t w)
{
	uint64_t ends = msg_ends(w);

	return !(w & 3) && ends && !(ends & (ends - 1)) &&
	       (w >> 2 & 0x3f) == NT_TCODE_RESOURCE_FULL;
}

static bool run_tcode(unsigned int tcode)
{
	return tcode == NT_TCODE_DIRECT_BRANCH ||
	       tcode == NT_TCODE_INDIRECT_BRANCH ||
	       tcode == NT_TCODE_INDIRECT_BRANCH_HIST;
}

/* Where event i of run e starts, from e's first byte. */
static unsigned int run_event_off(const struct run *e, unsigned int i)
{
	if (i < 8)
		return (e->offs >> (8 * i)) & 0xff;
	return i < e->tail_from ? 0 : e->tail_off;
}

static struct nt_event *run_events(struct run *e)
{
	return (struct nt_event *)(void *)(e + 1);
}

static unsigned int run_event_slots(unsigned int nev)
{
	return nev < RUN_MIN_EVENT_SLOTS ? RUN_MIN_EVENT_SLOTS : nev;
}

static uint64_t *run_values(struct run *e)
{
	return (uint64_t *)(void *)(run_events(e) + run_event_slots(e->nev));
}

/*
 * Whether the return stack is deep enough for run e's pops and not too
 * deep for its pushes (unsigned: fewer entries than npop wraps).
 */
static inline bool run_stack_room(const struct src_dec *s,
				  const struct run *e)
{
	return s->count - e->npop <= e->room;
}

/* The return stack as run e found it: deep enough, the followed values. */
static bool run_stack_fits(const struct nt_decoder *d,
			   const struct src_dec *s, struct run *e)
{
	const uint64_t *want = run_values(e);
	uint32_t guard = e->guard;

	if (!run_stack_room(s, e))
		return false;
	while (guard) {
		unsigned int i = (unsigned int)__builtin_ctz(guard);

		if (s->stack[(s->top - 1 - i) & d->ring_mask] != want[i])
			return false;
		guard &= guard - 1;
	}
	return true;
}

static void run_stack_apply(const struct nt_decoder *d, struct src_dec *s,
			    struct run *e)
{
	const uint64_t *pushed = run_values(e) + e->npop;
	unsigned int i;

	s->count -= e->npop;
	s->top = (s->top - e->npop) & d->ring_mask;
	for (i = 0; i < e->npush; i++) {
		s->stack[s->top] = pushed[i];
		s->top = (s->top + 1) & d->ring_mask;
		s->count++;
	}
}

/* Whether run e is for bytes from pc in epoch, with the stack as it is. */
static inline bool run_fits(const struct nt_decoder *d,
			    const struct src_dec *s, struct run *e,
			    uint64_t pc, uint64_t bytes, uint32_t epoch)
{
	return e->bytes == bytes && e->pc == pc && e->epoch == epoch &&
	       (!(e->flags & RUN_GUARDED) || run_stack_fits(d, s, e));
}

/*
 * The run for the message at the start of w from pc in epoch: the one
 * after prev, its bytes compared with w's under its mask (no need to
 * find where the message ends: a run's bytes end where its message
 * does), or else one of the two ways of the message's hash slot (two
 * runs of the same bytes from the same PC may differ in the return
 * addresses they followed). Always inlined: called, it cost 11%.
 */
static inline __attribute__((always_inline))
struct run *run_find(struct nt_decoder *d, const struct src_dec *s,
		     uint32_t prev, uint64_t pc, uint64_t w, uint32_t epoch)
{
	uint64_t bytes, mask;
	uint32_t at, slot;
	struct run *e;

	if (prev) {
		e = run_at(d, run_at(d, prev)->succ);
		/* succ 0 is the arena's unused head: bytes 0 is no message */
		if (run_fits(d, s, e, pc, w & e->mask, epoch))
			return e;
	}
	mask = first_msg_mask(w);
	if (!mask)
		return NULL;
	bytes = w & mask;
	slot = run_slot(pc, bytes);
	at = d->run_slots[slot];
	e = run_at(d, at);
	if (!at || !run_fits(d, s, e, pc, bytes, epoch)) {
		at = d->run_slots[slot ^ 1];
		e = run_at(d, at);
		if (!at || !run_fits(d, s, e, pc, bytes, epoch))
			return NULL;
	}
	if (prev)
		run_at(d, prev)->succ = at;
	return e;
}

/*
 * The run of the message of 9 to 16 bytes at p (avail bytes), or of a
 * pair, a ResourceFull within the first eight bytes and the message
 * after it, ending within the next eight; NULL if none. Out of line:
 * one HTM message in twenty-five is that long where HIST is repeated
 * (qsort_cb), fewer elsewhere. A long run is never another run's
 * successor: run_find() compares a successor's first eight bytes only.
 *
 * A ResourceFull with HIST leaves a walk pending that the next branch
 * message ends, and the cache takes nothing while one is pending: so
 * the two are one run, recorded as the general path decodes both
 * (record_begin(), nt_decoder_feed()). qsort_cb's HTM trace with
 * repeated history sends 9,664 of them in 30M instructions, of 50
 * kinds.
 */
static struct run * __attribute__((noinline))
run_find_long(struct nt_decoder *d, const struct src_dec *s, uint64_t pc,
	      const uint8_t *p, size_t avail, uint32_t epoch)
{
	uint64_t w, w2, ends, bytes2;
	uint32_t slot, at;
	struct run *e;
	unsigned int way;

	if (avail < 16)
		return NULL;
	w = load_bytes(p);
	if ((w & 3) || (msg_ends(w) && !pair_first_word(w)))
		return NULL;
	w2 = load_bytes(p + 8);
	ends = msg_ends(w2);
	if (!ends)
		return NULL;
	bytes2 = w2 & msg_mask_to_end(ends);
	slot = run_slot(pc, w ^ bytes2);
	for (way = 0; way < 2; way++) {
		at = d->run_slots[slot ^ way];
		e = run_at(d, at);
		if (at && e->bytes2 == bytes2 &&
		    run_fits(d, s, e, pc, w, epoch))
			return e;
	}
	return NULL;
}

/*
 * Whether the cache may take messages of s now and, if so, *epoch the
 * epoch they are taken in. The answer holds until d->take_gen moves,
 * and s keeps it: a funnel's sources take turns, often at every
 * message, and a turn then asks nothing again.
 */
static inline bool run_source_epoch(struct nt_decoder *d, struct src_dec *s,
				    uint32_t *epoch)
{
	if (!s)
		return false;
	if (s->take_gen == d->take_gen) {
		*epoch = s->take_epoch;
		return true;
	}
	if (!s->synced || s->want_scontext || s->pend_icnt || s->walked)
		return false;
	/* may start the cache over, which moves take_gen: first */
	s->take_epoch = run_epoch(d, s);
	s->take_gen = d->take_gen;
	*epoch = s->take_epoch;
	return true;
}

/*
 * A stretch of messages of s ends, last its last run taken (NULL: none),
 * pc, addr and time its PC, address history and time (if timed) after
 * it, prev last's arena offset: what only the last one decides, written
 * back, or left to run_settle() for what the runs do not read. A
 * funnel's sources take turns, often at every message.
 */
static inline void run_stretch_end(struct src_dec *s, const struct run *last,
				   uint64_t pc, uint64_t addr, uint64_t time,
				   uint32_t prev, bool timed)
{
	s->run_prev = prev;
	if (!last)
		return;
	s->pc = pc;
	*s->addr = addr;
	if (timed)
		*s->time = time;
	s->run_last = prev;
}

/*
 * Runs a and b of one source, b taken right after a: make them a chain,
 * one run found from a (a->chain) when the bytes after a's are b's
 * again and the address history is what the chain needs. Either may be
 * a chain already, up to RUN_CHAIN_BYTES in all, and the loop, having
 * found a chain, looks for the chain made from it in turn. A chain
 * costs a compare per link, one stack update and one hand-over: on
 * qsort_cb's BTM trace 92% of the messages are taken in chains, 2.9
 * messages a run taken.
 *
 * a is a head (RUN_HEAD): it pops nothing (a DirectBranch's pops are
 * inferred returns, which a popped value decides), nor may it change
 * the privilege level; and it is tried once, as a run seldom has two
 * successors worth a chain. b must not depend on the return stack's
 * values either. The loop updates the PC and the address history the
 * same way for every run: an IndirectBranch's target is the history ^
 * next, and the history becomes that target. If a ends at an
 * IndirectBranch, b's PC is a's target: the chain is then for the
 * history a started with (ain, which decides every PC in it), and b
 * must end at an IndirectBranch too, so that the update holds, its
 * target the history ^ a->next ^ b->next. The chain must do at most
 * one pop and one push, as the loop's branch-free update does them
 * (b's pop takes off a's push, or a's push or b's stays). Its room is
 * where both runs' bounds on the stack's count hold, b's moved by a's
 * push.
 */
static void __attribute__((noinline))
run_fuse(struct nt_decoder *d, struct run *a, struct run *b)
{
	unsigned int nev = a->nev + b->nev, npop, npush, i;
	uint8_t delta[RUN_MAX_EVENTS];
	uint32_t size, at;
	int64_t hi;
	struct run *f;

	/* tried once: a run seldom has two successors worth a chain */
	a->flags &= ~RUN_HEAD;
	if (a->size + b->size > RUN_CHAIN_BYTES || nev > RUN_MAX_EVENTS ||
	    (b->flags & (RUN_STACK | RUN_GUARDED)) ||
	    (a->uaddr_mask && !b->uaddr_mask))
		return;
	/* a pops nothing: heads do not */
	npop = b->npop > a->npush ? b->npop - a->npush : 0;
	npush = b->npush + (a->npush > b->npop ? a->npush - b->npop : 0);
	if (npop > 1 || npush > 1)
		return;
	/* the most entries a may start with, then b */
	hi = (int64_t)b->room + b->npop - a->npush;
	if (hi > a->room)
		hi = a->room;
	/* cannot be after both were taken; a chain's room must not wrap */
	if (hi < npop)
		return;
	for (i = 0; i < nev; i++)
		delta[i] = (uint8_t)(i < a->nev ? run_event_off(a, i) :
				     a->size + run_event_off(b, i - a->nev));
	/* past the eighth event, one message's */
	for (i = 8; i < nev; i++)
		if (delta[i] != delta[nev - 1])
			return;
	size = (uint32_t)(sizeof(*f) + run_event_slots(nev) *
			  sizeof(struct nt_event));
	if (d->run_used + size > d->run_cap)
		return;
	at = d->run_used;
	d->run_used += size;
	f = run_at(d, at);
	*f = *b;
	/* a's bytes, then b's, in two words */
	if (a->size < 8) {
		f->bytes = a->bytes | b->bytes << (8 * a->size);
		f->mask = a->mask | b->mask << (8 * a->size);
		f->bytes2 = b->bytes2 << (8 * a->size) |
			    b->bytes >> (64 - 8 * a->size);
		f->mask2 = b->mask2 << (8 * a->size) |
			   b->mask >> (64 - 8 * a->size);
	} else {
		f->bytes = a->bytes;
		f->mask = a->mask;
		f->bytes2 = a->bytes2 | b->bytes << (8 * (a->size - 8));
		f->mask2 = a->mask2 | b->mask << (8 * (a->size - 8));
	}
	if (a->amask) {
		f->ain = a->ain;
	} else if (a->uaddr_mask) {
		/* a's target, b's PC, is the history before a ^ a->next */
		f->ain = b->pc ^ a->next;
	} else {
		/* a leaves the history as it was */
		f->ain = b->ain;
	}
	f->amask = a->amask | a->uaddr_mask | b->amask;
	f->next = b->next ^ (a->next & a->uaddr_mask);
	f->pc = a->pc;
	f->succ = 0;
	f->insns = a->insns + b->insns;
	f->halfwords = a->halfwords + b->halfwords;
	f->transfers = a->transfers + b->transfers;
	f->chain = 0;
	f->nev = (uint16_t)nev;
	f->size = (uint8_t)(a->size + b->size);
	f->flags = (b->flags & (RUN_INDIRECT | RUN_PRIV_MAY_CHANGE)) |
		   ((a->flags | b->flags) & RUN_TIMED);
	f->time_off = (uint8_t)(b->flags & RUN_TIMED ? a->size + b->time_off :
				a->time_off);
	f->dt = a->dt + b->dt;
	/* b was taken right after a, which may be b itself: see below */
	f->t_from = b->t_from - a->dt;
	/* a head, like a single run, unless nothing can follow it */
	if (!(f->flags & RUN_PRIV_MAY_CHANGE) && !npop &&
	    f->size < RUN_CHAIN_BYTES)
		f->flags |= RUN_HEAD;
	f->npop = (uint8_t)npop;
	f->npush = (uint8_t)npush;
	f->push = b->npush ? b->push : a->push;
	f->room = (uint32_t)(hi - npop);
	f->nmsg = a->nmsg + b->nmsg;
	f->chained = f->nmsg;
	f->offs = 0;
	for (i = 0; i < nev && i < 8; i++)
		f->offs |= (uint64_t)delta[i] << (8 * i);
	f->tail_off = delta[nev - 1];
	f->tail_from = 8;
	memcpy(run_events(f), run_events(a), a->nev * sizeof(struct nt_event));
	memcpy(run_events(f) + a->nev, run_events(b),
	       b->nev * sizeof(struct nt_event));
	memset(run_events(f) + nev, 0,
	       (run_event_slots(nev) - nev) * sizeof(struct nt_event));
	/* as taken just now, a's bytes right before b's (a may be b) */
	f->o_from = b->o_from - a->size;
	for (i = 0; i < nev; i++)
		run_events(f)[i].offset = f->o_from + delta[i];
	/*
	 * b's events have their times of this take. a's have theirs from
	 * a->t_from, its last: this take's too, unless a is b (a loop of
	 * one message), whose take since then moved them on.
	 */
	for (i = 0; i < a->nev; i++)
		run_events(f)[i].time += f->t_from - a->t_from;
	f->to_at = (uint16_t)((uint8_t *)&run_events(f)[nev - 1].to -
			      (uint8_t *)f);
	a->chain = at;
}

/* A run's events to the caller's callback. */
static inline void run_hand(struct nt_decoder *d, const struct nt_event *ev,
			    unsigned int nev)
{
	const struct nt_event *end = ev + nev;

	if (d->batch_fn) {
		d->batch_fn(d->batch_ctx, ev, nev);
		return;
	}
	for (; ev < end; ev++)
		d->fn(d->ctx, ev);
}

/*
 * Take the messages at p (avail bytes, the first at stream offset off)
 * that the cache knows, until one it does not: what decode_msg() would
 * do with each. Returns the bytes taken. What only the last message of
 * a source decides (s->last, ...) is written back once, when another
 * source's message comes or at the end. The commonest runs are taken
 * without a branch on what they are: at most one pop (not followed)
 * and one push, so that a run without either is one that pops and
 * pushes nothing; the PC after it is its last event's destination,
 * which an IndirectBranch's run gets from the address history; the
 * offsets go into the first four event slots whether or not they are
 * events. A chain of runs (run_fuse()) is taken as one, each message's
 * events at its own offset.
 *
 * A multi-hart system's funnel interleaves its harts' messages, often
 * one by one. A run's bytes hold the message's SRC, and its epoch is of
 * one source (each has its own image order), so a run is of one
 * source; switching the source in the loop costs a write-back and a
 * load of its state. with_src, mapped and timed are constants in each
 * copy (run_cache_take() picks one): without SRC the test of each
 * message's SRC is left out, and without TSTAMP the time is, which
 * only a stream with TSTAMP moves. The state is in plain locals: kept
 * in a struct, GCC left it in memory, 10% slower.
 */
static inline __attribute__((always_inline))
size_t run_take(struct nt_decoder *d, const uint8_t *p, size_t avail,
		uint64_t off, bool with_src, bool mapped, bool timed)
{
	/* mapped: where p's bytes start, from map_origin */
	const uint32_t *map = mapped ? d->map + (off - d->map_from) : NULL;
	uint64_t origin = mapped ? d->map_origin : 0;
	struct nt_decoder *to = mapped ? d->hand_to : d;
	unsigned int src_bits = d->cfg.stream.src_bits;
	/* the word of the source's first message, and where its SRC is */
	uint64_t src_w = 0, src_wmask = msg_src_wmask(src_bits);
	uint64_t insns = 0, half = 0, taken = 0, msgs = 0, pc = 0, addr = 0;
	uint64_t chained = 0;
	/* timed: the source's time, and the last TSTAMP's */
	uint64_t time = 0, last_time = 0, last_time_at = 0;
	unsigned int ring_mask = d->ring_mask;
	struct run *e, *last = NULL;
	struct src_dec *s = NULL;
	uint32_t epoch = 0, prev = 0;
	const uint8_t *code;
	size_t done = 0;

	while (avail - done >= 8) {
		uint64_t w, dt = 0;
		unsigned int i, top;
		struct nt_event *ev;

		w = load_bytes(p + done);
		if (!s || (with_src && ((w ^ src_w) & src_wmask))) {
			if (s)
				run_stretch_end(s, last, pc, addr, time, prev,
						timed);
			src_w = w;
			s = d->srcs[msg_src(w, src_bits)];
			/* may start the cache over: before prev */
			if (!run_source_epoch(d, s, &epoch)) {
				s = NULL;
				break;
			}
			last = NULL;
			pc = s->pc;
			addr = *s->addr;
			if (timed)
				time = *s->time;
			prev = s->run_prev;
		}
		e = run_find(d, s, prev, pc, w, epoch);
		if (!e) {
			/* in memory: a register here cost 2% */
			e = d->run_long;
			if (!e)
				break;
			d->run_long = NULL;
		}
		/* e and the messages after it at once: see run_fuse() */
		if (e->chain) {
			/* a chain's last byte is never 0 (MSEO) */
			uint64_t w2 = avail - done >= 16 ?
				      load_bytes(p + done + 8) : 0;

			do {
				struct run *f = run_at(d, e->chain);

				if ((w & f->mask) != f->bytes ||
				    (w2 & f->mask2) != f->bytes2 ||
				    (addr & f->amask) != f->ain)
					break;
				e = f;
			} while (e->chain);
		}
		/*
		 * an IndirectBranch's target (see pc below), which
		 * decode_msg() reports if no image has it; the return
		 * stack (run_find() checked the values a guarded run
		 * followed): else e is not taken
		 */
		if ((d->cfg.images_complete && (e->flags & RUN_INDIRECT) &&
		     !bytes_at(d, s, addr ^ e->next, &code)) ||
		    !run_stack_room(s, e))
			break;
		if (e->flags & (RUN_STACK | RUN_GUARDED)) {
			run_stack_apply(d, s, e);
		} else {
			/*
			 * pop e->npop (0 or 1), then store e->push at the top
			 * and keep it if e->npush (0 or 1) says so: the slot
			 * is free otherwise, the ring having more slots than
			 * live entries. No branch, whose way would follow
			 * the program.
			 */
			top = (s->top - e->npop) & ring_mask;
			s->stack[top] = e->push;
			s->top = (top + e->npush) & ring_mask;
			s->count = s->count - e->npop + e->npush;
		}
		/* indirect: the target is next ^ the address history */
		pc = (addr & e->uaddr_mask) ^ e->next;
		addr ^= (addr ^ pc) & e->uaddr_mask;
		insns += e->insns;
		half += e->halfwords;
		taken += e->transfers;
		msgs += e->nmsg;
		chained += e->chained;
		ev = run_events(e);
		*(uint64_t *)(void *)((uint8_t *)e + e->to_at) = pc;
		if (timed) {
			/*
			 * Its events' times less t_from are its messages'
			 * TSTAMPs summed up to each: moved to this time.
			 * The first four slots are there, as for offsets;
			 * the others move in the offsets' loop.
			 */
			dt = time - e->t_from;
			e->t_from = time;
			ev[0].time += dt;
			ev[1].time += dt;
			ev[2].time += dt;
			ev[3].time += dt;
		}
		if (mapped) {
			const uint32_t *at = map + done;

			ev[0].offset = origin + at[run_event_off(e, 0)];
			ev[1].offset = origin + at[run_event_off(e, 1)];
			ev[2].offset = origin + at[run_event_off(e, 2)];
			ev[3].offset = origin + at[run_event_off(e, 3)];
			for (i = 4; i < e->nev; i++) {
				ev[i].offset = origin +
					       at[run_event_off(e, i)];
				if (timed)
					ev[i].time += dt;
			}
		} else {
			/* moved on from where e was taken last, as times */
			uint64_t dofs = off + done - e->o_from;

			e->o_from = off + done;
			ev[0].offset += dofs;
			ev[1].offset += dofs;
			ev[2].offset += dofs;
			ev[3].offset += dofs;
			for (i = 4; i < e->nev; i++) {
				ev[i].offset += dofs;
				if (timed)
					ev[i].time += dt;
			}
		}
		if (timed) {
			time += e->dt;
			if (e->flags & RUN_TIMED) {
				last_time = time;
				last_time_at = off + done + e->time_off;
			}
		}
		run_hand(to, ev, e->nev);
		/* the first time e comes right after such a run */
		if (last && (last->flags & RUN_HEAD))
			run_fuse(d, last, e);
		prev = (uint32_t)((uint8_t *)e - d->run_arena);
		last = e;
		done += e->size;
	}
	if (s)
		run_stretch_end(s, last, pc, addr, time, prev, timed);
	if (timed && last_time_at) {
		d->st.last_time = last_time;
		d->last_time_at = last_time_at;
	}
	d->st.msgs += msgs;
	d->st.cached_msgs += msgs;
	d->st.chained_msgs += chained;
	d->st.insns += insns;
	d->st.halfwords += half;
	d->st.transfers += taken;
	return done;
}

/*
 * The copy for streams with SRC, out of line: nt_decoder_feed() takes in
 * the copy without, and with both in it GCC stopped inlining
 * run_find(), which cost streams without SRC 11%.
 */
static size_t __attribute__((noinline))
run_take_srcs(struct nt_decoder *d, const uint8_t *p, size_t avail,
	      uint64_t off)
{
	return run_take(d, p, avail, off, true, false, false);
}

/* The copy for cfg.by_source's children ("by source" below). */
static size_t __attribute__((noinline))
run_take_mapped(struct nt_decoder *d, const uint8_t *p, size_t avail,
		uint64_t off)
{
	return run_take(d, p, avail, off, true, true, false);
}

/*
 * The copies for streams with TSTAMP, with SRC or without (its test
 * then always finds the same source), by source or not.
 */
static size_t __attribute__((noinline))
run_take_timed(struct nt_decoder *d, const uint8_t *p, size_t avail,
	       uint64_t off)
{
	return run_take(d, p, avail, off, true, false, true);
}

static size_t __attribute__((noinline))
run_take_mapped_timed(struct nt_decoder *d, const uint8_t *p, size_t avail,
		      uint64_t off)
{
	return run_take(d, p, avail, off, true, true, true);
}

/*
 * Whether the message at the reader's position is a long one whose run
 * the cache has: then it is d->run_long, for run_take() to start with.
 * Found here, not in run_take()'s loop, where the call cost registers
 * and 2% more instructions on BTM.
 */
static bool run_long_next(struct nt_decoder *d)
{
	struct src_dec *s;
	const uint8_t *p;
	uint32_t epoch;
	size_t avail;
	uint64_t off;

	p = nt_reader_peek(d->rd, &avail, &off);
	if (!p || avail < 16)
		return false;
	s = d->srcs[msg_src(load_bytes(p), d->cfg.stream.src_bits)];
	if (!run_source_epoch(d, s, &epoch))
		return false;
	d->run_long = run_find_long(d, s, s->pc, p, avail, epoch);
	return d->run_long;
}

/* Take the messages from the reader's position that the cache knows. */
static void run_cache_take(struct nt_decoder *d)
{
	bool with_long = false;
	size_t avail, done;
	const uint8_t *p;
	uint64_t off;

	for (;;) {
		p = nt_reader_peek(d->rd, &avail, &off);
		if (!p)
			return;
		if (d->cfg.stream.timestamps)
			done = d->hand_to ?
			       run_take_mapped_timed(d, p, avail, off) :
			       run_take_timed(d, p, avail, off);
		else if (d->hand_to)
			done = run_take_mapped(d, p, avail, off);
		else if (d->cfg.stream.src_bits)
			done = run_take_srcs(d, p, avail, off);
		else
			done = run_take(d, p, avail, off, false, false, false);
		nt_reader_take(d->rd, done);
		d->run_long = NULL;
		/* a long run not taken after all (no room on the stack) */
		if (with_long && !done)
			return;
		with_long = run_long_next(d);
		if (!with_long)
			return;
	}
}

/* What a message is recorded with, for record_end(). */
struct run_start {
	uint64_t pc, bytes, mask, bytes2, mask2, offset, addr, gaps, errors;
	/* the source's time, and where the last TSTAMP was */
	uint64_t time, time_at;
	uint64_t insns, halfwords, transfers;
	uint64_t deviations[NT_DEV__COUNT];
	/* first_size: of the ResourceFull a pair starts with, else 0 */
	unsigned int size, first_size, count, src;
	uint32_t epoch;
};

/* recording: the events of the walk, kept, then given to the caller's */
static void record_event(void *ctx, const struct nt_event *ev)
{
	struct nt_decoder *d = ctx;

	keep_walk_event(ev, d->rec_evs, &d->rec_nev, RUN_MAX_EVENTS,
			&d->rec_bad);
	d->rec_fn(d->rec_ctx, ev);
}

/* Stop recording: events go to the caller's callback alone again. */
static void record_stop(struct nt_decoder *d)
{
	d->fn = d->rec_fn;
	d->ctx = d->rec_ctx;
	d->rec = false;
}

/*
 * Record the next message if the cache could take it again; a
 * ResourceFull with the message after it (see run_find_long()).
 */
static bool record_begin(struct nt_decoder *d, struct run_start *rs)
{
	struct src_dec *s;
	const uint8_t *p;
	size_t avail;
	uint64_t w;
	bool pair;

	p = nt_reader_peek(d->rd, &avail, &rs->offset);
	if (!p || avail < 8)
		return false;
	w = load_bytes(p);
	rs->src = msg_src(w, d->cfg.stream.src_bits);
	s = d->srcs[rs->src];
	if (!run_source_epoch(d, s, &rs->epoch))
		return false;
	pair = pair_first_word(w);
	if (!run_tcode(p[0] >> 2) && !pair)
		return false;
	rs->mask = first_msg_mask(w);
	rs->bytes2 = 0;
	rs->mask2 = 0;
	rs->first_size = 0;
	if (pair) {
		/* the message after it is keyed as a long message's rest */
		rs->first_size =
			(unsigned int)(64 - __builtin_clzll(rs->mask)) / 8;
		rs->mask = 0;
	}
	if (!rs->mask) {
		/* 9 to 16 bytes: see run_find_long() */
		uint64_t ends = avail >= 16 && !(w & 3) ?
				msg_ends(load_bytes(p + 8)) : 0;

		if (!ends)
			return false;
		rs->mask = ~0ull;
		rs->mask2 = msg_mask_to_end(ends);
		rs->bytes2 = load_bytes(p + 8) & rs->mask2;
	}
	rs->bytes = w & rs->mask;
	rs->size = (unsigned int)(64 - __builtin_clzll(rs->mask)) / 8;
	if (rs->mask2)
		rs->size += (unsigned int)(64 - __builtin_clzll(rs->mask2)) / 8;
	rs->pc = s->pc;
	rs->addr = *s->addr;
	rs->time = *s->time;
	rs->time_at = d->last_time_at;
	rs->count = s->count;
	rs->gaps = d->st.gaps;
	rs->errors = d->st.errors;
	rs->insns = d->st.insns;
	rs->halfwords = d->st.halfwords;
	rs->transfers = d->st.transfers;
	memcpy(rs->deviations, d->st.deviations, sizeof(rs->deviations));
	d->rec = true;
	d->rec_bad = false;
	d->rec_nev = 0;
	d->rec_nops = 0;
	d->rec_fn = d->fn;
	d->rec_ctx = d->ctx;
	d->fn = record_event;
	d->ctx = d;
	return true;
}

/* Arena room for a run of size bytes: its offset, 0 if none. */
static uint32_t run_alloc(struct nt_decoder *d, uint32_t size)
{
	uint32_t at;

	if (d->run_used + size > d->run_cap) {
		uint32_t cap = d->run_cap;
		uint8_t *na;

		while (cap < d->run_used + size && cap < RUN_ARENA_MAX)
			cap *= 2;
		if (d->run_used + size > cap) {
			/* full: start over; bounded, whatever the trace */
			run_cache_reset(d);
		} else {
			na = realloc(d->run_arena, cap);
			if (!na)
				return 0;
			d->run_arena = na;
			d->run_cap = cap;
		}
	}
	at = d->run_used;
	d->run_used += size;
	return at;
}

/*
 * The message recorded since record_begin() is m: remember it, if it
 * decoded without a word and nothing but what the run checks decided
 * its walk. Returns its arena offset, 0 if it is not kept.
 */
static uint32_t record_end(struct nt_decoder *d, const struct nt_msg *m,
			   const struct run_start *rs)
{
	uint64_t vals[2 * RUN_MAX_VALUES], pushed[2 * RUN_MAX_VALUES];
	uint64_t offs = 0, delta, tail_off;
	unsigned int tail_from;
	unsigned int npop = 0, npush = 0, i;
	int h = 0, rise = 0;
	uint32_t guard = 0, at, size, slot;
	struct src_dec *s = d->srcs[rs->src];
	struct run *e, *prior;

	record_stop(d);
	if (d->rec_bad || !d->rec_nev ||
	    m->offset != rs->offset + rs->first_size ||
	    m->size != rs->size - rs->first_size ||
	    m->err || !run_tcode(m->tcode) || m->src != rs->src ||
	    (m->tcode != NT_TCODE_DIRECT_BRANCH &&
	     m->btype != NT_BTYPE_INDIRECT) ||
	    d->st.gaps != rs->gaps || d->st.errors != rs->errors ||
	    memcmp(d->st.deviations, rs->deviations, sizeof(rs->deviations)) ||
	    d->ecall || !s->synced || !s->last_valid || s->pend_icnt ||
	    s->walked || s->want_scontext ||
	    (d->last_time_at != rs->time_at &&
	     d->last_time_at - rs->offset >= rs->size))
		return 0;
	if ((m->tcode != NT_TCODE_DIRECT_BRANCH && s->pc != m->target) ||
	    d->rec_evs[d->rec_nev - 1].to != s->pc)
		return 0;
	/*
	 * Where each event's message starts, from the run's first byte: a
	 * pair's walk of its ResourceFull is the first message's, at 0.
	 * Past the eighth event, at 0 up to tail_from, then at the last
	 * event's (run_event_off()).
	 */
	tail_off = d->rec_evs[d->rec_nev - 1].offset - rs->offset;
	tail_from = 8;
	while (tail_off && tail_from < d->rec_nev &&
	       d->rec_evs[tail_from].offset == rs->offset)
		tail_from++;
	for (i = 0; i < d->rec_nev; i++) {
		delta = d->rec_evs[i].offset - rs->offset;
		if (delta >= rs->size ||
		    (i >= 8 && delta != (i < tail_from ? 0 : tail_off)))
			return 0;
		if (i < 8)
			offs |= delta << (8 * i);
	}
	/* the return stack: pops below the run's own pushes, then pushes */
	for (i = 0; i < d->rec_nops; i++) {
		const struct stack_op *op = &d->rec_ops[i];

		if (op->push) {
			pushed[npush++] = op->v;
			if (++h > rise)
				rise = h;
			continue;
		}
		if (!op->ok)
			return 0;	/* a pop on an empty stack: no run */
		h--;
		if (npush) {
			npush--;
			continue;
		}
		if (npop == RUN_MAX_VALUES)
			return 0;
		guard |= (uint32_t)op->guard << npop;
		vals[npop++] = op->v;
	}
	if (npush > RUN_MAX_VALUES || npop > rs->count ||
	    rs->count + (unsigned int)rise > d->cfg.ir_depth)
		return 0;
	size = (uint32_t)(sizeof(*e) + run_event_slots(d->rec_nev) *
			  sizeof(struct nt_event) +
			  (npop + npush) * sizeof(uint64_t));
	at = run_alloc(d, size);
	if (!at)
		return 0;
	e = run_at(d, at);
	e->bytes = rs->bytes;
	e->mask = rs->mask;
	e->pc = rs->pc;
	e->next = m->tcode == NT_TCODE_DIRECT_BRANCH ? s->pc :
		  m->target ^ rs->addr;
	e->epoch = rs->epoch;
	e->succ = 0;
	e->insns = (uint32_t)(d->st.insns - rs->insns);
	e->halfwords = (uint32_t)(d->st.halfwords - rs->halfwords);
	e->transfers = (uint32_t)(d->st.transfers - rs->transfers);
	e->guard = guard;
	e->nev = (uint16_t)d->rec_nev;
	e->size = (uint8_t)rs->size;
	e->tcode = m->tcode;
	e->flags = (m->tcode != NT_TCODE_DIRECT_BRANCH ? RUN_INDIRECT : 0) |
		   (s->priv_may_change ? RUN_PRIV_MAY_CHANGE : 0) |
		   (npop > 1 || npush > 1 ? RUN_STACK : 0) |
		   (guard ? RUN_GUARDED : 0) | (rs->mask2 ? RUN_LONG : 0);
	e->npop = (uint8_t)npop;
	e->npush = (uint8_t)npush;
	e->room = d->cfg.ir_depth - (unsigned int)rise - npop;
	e->uaddr_mask = m->tcode != NT_TCODE_DIRECT_BRANCH ? ~0ull : 0;
	e->to_at = (uint16_t)((uint8_t *)&run_events(e)[e->nev - 1].to -
			      (uint8_t *)e);
	e->icnt = m->icnt;
	e->hist = m->hist;
	e->push = npush ? pushed[0] : 0;
	e->chain = 0;
	e->bytes2 = rs->bytes2;
	e->mask2 = rs->mask2;
	e->ain = 0;
	e->amask = 0;
	e->nmsg = rs->first_size ? 2 : 1;
	e->chained = 0;
	e->offs = offs;
	e->tail_off = (uint8_t)tail_off;
	e->tail_from = (uint8_t)tail_from;
	e->o_from = rs->offset;
	/* its events' times are rs->time plus TSTAMPs: see run_take() */
	e->t_from = rs->time;
	e->dt = m->time - rs->time;
	if (d->last_time_at != rs->time_at) {
		e->flags |= RUN_TIMED;
		e->time_off = (uint8_t)(d->last_time_at - rs->offset);
	} else {
		e->time_off = 0;
	}
	/* see run_fuse() */
	if (!(e->flags & (RUN_PRIV_MAY_CHANGE | RUN_STACK | RUN_GUARDED)) &&
	    !npop)
		e->flags |= RUN_HEAD;
	memcpy(run_events(e), d->rec_evs, d->rec_nev * sizeof(*d->rec_evs));
	/* run_take() moves the slots past them too */
	memset(run_events(e) + d->rec_nev, 0,
	       (run_event_slots(d->rec_nev) - d->rec_nev) * sizeof(*d->rec_evs));
	memcpy(run_values(e), vals, npop * sizeof(*vals));
	memcpy(run_values(e) + npop, pushed, npush * sizeof(*pushed));
	/*
	 * The newest first, the one before it in the other way: a message
	 * from a PC that returns to two places alternately keeps both.
	 */
	slot = run_slot(rs->pc, rs->bytes ^ rs->bytes2);
	prior = run_at(d, d->run_slots[slot]);
	if (d->run_slots[slot] && (prior->bytes != rs->bytes ||
				   prior->bytes2 != rs->bytes2 ||
				   prior->pc != rs->pc || guard))
		d->run_slots[slot ^ 1] = d->run_slots[slot];
	d->run_slots[slot] = at;
	return at;
}

/* ---- by source ------------------------------------------------------- */

/*
 * cfg.by_source. A funnel interleaves its sources message by message,
 * and a decoder that follows them in stream order mispredicts at every
 * turn, on the turn and on the program's own branches, whose history
 * the other source's messages scramble ("Where a funnel's time goes" in
 * Documentation/ntrace/decoder.rst). So the parent's reader puts each
 * source's messages in a stream of that source's own, with a map of
 * where each came from (nt_reader_split(), demux_route() for the ones
 * it leaves), and each stream goes to a decoder of that source's own,
 * one source after another, a window of the input at a time.
 *
 * The child decoders see only whole messages. A child's stream starts
 * with an idle byte, so that offset 0 means "no message", as it does
 * for the parent. Every offset a child's event carries is where one of
 * the window's messages starts (event_init(), run_take()), and map says
 * where that message starts in the parent's stream: run_take() writes
 * a run's offsets so, as it hands the run to the parent itself (a
 * second pass over the events cost a fifth of the whole), and
 * part_event() makes any other event's the parent's. Damage is the
 * parent's: no source can be told from it, so every source
 * resynchronises at it, as in stream order (decode_msg()).
 */

/* the most a child decodes at a time: map's offsets fit 32 bits */
#define DEMUX_WINDOW		(1u << 20)
/* longer than any whole message: see max_msg_bytes() */
#define DEMUX_CARRY		(2 * NT_MAX_VENDOR_MSG_BYTES)
/* room demux_route() copies a message into: the longest one */
#define DEMUX_ROOM		NT_MAX_VENDOR_MSG_BYTES
/*
 * Decoders, each about 700 KiB before its first window: the sources
 * past the first fifteen share the last one, in stream order, so that
 * a stream that names thousands cannot make thousands.
 */
#define DEMUX_PARTS		16

struct src_part {
	struct nt_decoder *dec;
	struct nt_decoder *parent;
	/*
	 * the window's messages, and their parent offsets from the
	 * window's origin (struct demux), for the parent's reader to fill
	 */
	struct nt_split_dst sd;
	size_t cap;
	/* events given as they are: damage, whose offsets are the parent's */
	bool raw;
	bool dev_seen[NT_DEV__COUNT];
	uint64_t dev_at[NT_DEV__COUNT];
	/* the child's last_time_at, and the parent's offset for it */
	uint64_t time_sub, time_at;
};

struct demux {
	struct nt_reader *rd;		/* the parent's */
	struct src_part *parts[MAX_SRC];	/* by source */
	struct nt_split_dst *dst[MAX_SRC];	/* theirs, for nt_reader_split() */
	/* each part's first source, ascending: each part once */
	uint16_t order[DEMUX_PARTS];
	unsigned int nparts;
	struct src_part *spill;		/* the last part made */
	/* the parent's own: damage, and the bytes it was fed */
	struct nt_decoder_stats own;
	uint64_t fed;		/* parent offset of the next byte */
	/* parent offset map is kept from: DEMUX_CARRY before the window */
	uint64_t origin;
	/* the last bytes before the window, for a message they begin */
	uint8_t carry[DEMUX_CARRY];
};

/*
 * Child offset off made the parent's, for a window whose len bytes
 * start at child offset win and whose map counts from origin.
 */
static inline uint64_t map_offset(uint64_t off, uint64_t win, size_t len,
				  uint64_t origin, const uint32_t *map)
{
	uint64_t i = off - win;

	/* 0 is no message; an offset outside the window cannot happen */
	if (!off || i >= len)
		return off;
	return origin + map[i];
}

static uint64_t part_offset(const struct src_part *p, uint64_t off)
{
	const struct nt_decoder *c = p->dec;

	/* the window the child was fed last: see demux_flush() */
	return map_offset(off, c->map_from, p->sd.len, c->map_origin, c->map);
}

/*
 * A child's events but its runs' (run_take() hands those to the parent
 * itself), one at a time. The child may hand the same event again (a
 * walk's INSNS event, reused), so the parent's offset goes in a copy.
 */
static void part_event(void *ctx, const struct nt_event *ev)
{
	struct src_part *p = ctx;
	struct nt_event e = *ev;

	/* damage's offsets are the parent's already */
	if (!p->raw)
		e.offset = part_offset(p, ev->offset);
	run_hand(p->parent, &e, 1);
}

static void part_free(struct src_part *p)
{
	nt_decoder_free(p->dec);
	free(p->sd.buf);
	free(p->sd.map);
	free(p);
}

static struct src_part *part_new(struct nt_decoder *d, unsigned int src)
{
	static const uint8_t idle = 0xff;
	struct demux *dm = d->dm;
	struct nt_decoder_cfg cfg = d->cfg;
	struct src_part *p;
	const char *err;
	unsigned int i;

	if (dm->nparts == DEMUX_PARTS) {
		/* the last part made takes every source from here on */
		dm->parts[src] = dm->spill;
		dm->dst[src] = &dm->spill->sd;
		return dm->spill;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	cfg.by_source = false;
	p->parent = d;
	p->dec = nt_decoder_new(&cfg, part_event, p, &err);
	if (!p->dec) {
		free(p);
		return NULL;
	}
	for (i = 0; i < d->nimgs; i++)
		nt_decoder_add_image(p->dec, d->imgs[i].img, d->imgs[i].any,
				     d->imgs[i].ctx);
	nt_decoder_feed(p->dec, &idle, 1);
	p->dec->hand_to = d;
	p->dec->map_from = 1;
	dm->parts[src] = p;
	dm->dst[src] = &p->sd;
	for (i = dm->nparts++; i && dm->order[i - 1] > src; i--)
		dm->order[i] = dm->order[i - 1];
	dm->order[i] = (uint16_t)src;
	dm->spill = p;
	return p;
}

/* Room for one more message of the window in p, DEMUX_ROOM bytes. */
static bool part_room(struct src_part *p)
{
	size_t cap = p->cap ? 2 * p->cap : 4096;
	uint8_t *buf;
	uint32_t *map;

	if (cap > DEMUX_WINDOW + DEMUX_CARRY + DEMUX_ROOM)
		cap = DEMUX_WINDOW + DEMUX_CARRY + DEMUX_ROOM;
	if (p->sd.len + DEMUX_ROOM > cap)
		return false;
	buf = realloc(p->sd.buf, cap);
	if (!buf)
		return false;
	p->sd.buf = buf;
	map = realloc(p->sd.map, cap * sizeof(*map));
	if (!map)
		return false;
	p->sd.map = map;
	p->cap = cap;
	p->sd.lim = cap - NT_MEMO_MAX_BYTES + 1;
	return true;
}

/*
 * A damaged message: the sources' events before it go first, then each
 * synchronised source's gap, as decode_msg() gives them in stream order.
 */
static void demux_damage(struct nt_decoder *d, const struct nt_msg *m,
			 const char *why, uint64_t at);

/*
 * The message of size bytes at parent offset off from source src, of the
 * window at parent offset base whose bytes are at data: copied for its
 * source. It ends in the window, which it may begin before.
 */
static void demux_route(struct nt_decoder *d, uint64_t off, uint32_t size,
			unsigned int src, const uint8_t *data, uint64_t base)
{
	struct demux *dm = d->dm;
	struct src_part *p = dm->parts[src];
	uint64_t at = off - base;
	uint8_t *to;
	size_t i;

	if (!p || p->sd.len + DEMUX_ROOM > p->cap) {
		if (!p)
			p = part_new(d, src);
		if (!p || (p->sd.len + DEMUX_ROOM > p->cap && !part_room(p))) {
			struct nt_msg m = { .offset = off, .size = size,
					    .src = (uint16_t)src };

			/* its source must not go on as if it had it */
			demux_damage(d, &m, "out of memory", off);
			return;
		}
	}
	to = p->sd.buf + p->sd.len;
	p->sd.map[p->sd.len] = (uint32_t)(off - dm->origin);
	if (off >= base) {
		memcpy(to, data + at, size);
	} else if (base - off <= DEMUX_CARRY) {
		/* it began before the window: see demux_keep() */
		for (i = 0; i < size; i++) {
			uint64_t o = off + i;

			to[i] = o >= base ? data[o - base] :
				dm->carry[DEMUX_CARRY - (base - o)];
		}
	} else {
		/* a reader that held a whole message this long: lost */
		demux_damage(d, &(struct nt_msg){ .offset = off, .size = size,
						  .src = (uint16_t)src },
			     "message lost splitting the sources", off);
		return;
	}
	p->sd.len += size;
}

/* Hand each source's messages to its decoder, in SRC order. */
static void demux_flush(struct nt_decoder *d)
{
	struct demux *dm = d->dm;
	unsigned int i, k;

	for (i = 0; i < dm->nparts; i++) {
		struct src_part *p = dm->parts[dm->order[i]];
		const struct nt_decoder_stats *st;

		if (!p->sd.len)
			continue;
		/* map_from is where the last window ended */
		p->dec->map = p->sd.map;
		p->dec->map_origin = dm->origin;
		nt_decoder_feed(p->dec, p->sd.buf, p->sd.len);
		/* the first of each deviation, while map can place it */
		st = nt_decoder_stats(p->dec);
		for (k = 0; k < NT_DEV__COUNT; k++) {
			if (st->deviations[k] && !p->dev_seen[k]) {
				p->dev_seen[k] = true;
				p->dev_at[k] = part_offset(p,
							   st->deviation_at[k]);
			}
		}
		if (p->dec->last_time_at != p->time_sub) {
			p->time_sub = p->dec->last_time_at;
			p->time_at = part_offset(p, p->time_sub);
		}
		p->dec->map_from += p->sd.len;
		p->sd.len = 0;
	}
}

static void demux_damage(struct nt_decoder *d, const struct nt_msg *m,
			 const char *why, uint64_t at)
{
	struct demux *dm = d->dm;
	unsigned int j, n = 0;

	demux_flush(d);
	dm->own.msgs++;
	dm->own.errors++;
	/* in SRC order, as decode_msg() */
	for (j = 0; dm->nparts && j < MAX_SRC; j++) {
		struct src_part *p = dm->parts[j];
		struct src_dec *s = p ? p->dec->srcs[j] : NULL;

		if (s && s->synced) {
			p->raw = true;
			p->dec->msg = m;
			gap(p->dec, s, why, at);
			p->dec->msg = NULL;
			p->raw = false;
			n++;
		}
	}
	if (!n) {
		d->msg = m;
		gap(d, NULL, why, at);
		dm->own.gaps++;
		d->msg = NULL;
	}
}

static void demux_stats(struct nt_decoder *d)
{
	struct demux *dm = d->dm;
	struct nt_decoder_stats *t = &d->st;
	uint64_t time_at = 0;
	unsigned int i, k;

	*t = dm->own;
	t->bytes = dm->fed;
	for (i = 0; i < dm->nparts; i++) {
		const struct src_part *p = dm->parts[dm->order[i]];
		const struct nt_decoder_stats *s = nt_decoder_stats(p->dec);

		t->msgs += s->msgs;
		t->insns += s->insns;
		t->halfwords += s->halfwords;
		t->transfers += s->transfers;
		t->traps += s->traps;
		t->syncs += s->syncs;
		t->gaps += s->gaps;
		t->errors += s->errors;
		t->skipped_msgs += s->skipped_msgs;
		t->cached_msgs += s->cached_msgs;
		t->chained_msgs += s->chained_msgs;
		/* the time of the last message with one, in stream order */
		if (p->time_sub && p->time_at >= time_at) {
			time_at = p->time_at;
			t->last_time = s->last_time;
		}
		for (k = 0; k < NT_DEV__COUNT; k++) {
			if (!s->deviations[k])
				continue;
			if (!t->deviations[k] ||
			    p->dev_at[k] < t->deviation_at[k])
				t->deviation_at[k] = p->dev_at[k];
			t->deviations[k] += s->deviations[k];
		}
	}
}

/* The reader's records of the window, routed, damage where it falls. */
static void demux_take(struct nt_decoder *d, const uint8_t *data,
		       uint64_t base)
{
	struct demux *dm = d->dm;
	struct nt_msg m;

	dm->origin = base - DEMUX_CARRY;
	for (;;) {
		nt_reader_split(dm->rd, dm->dst, dm->origin);
		if (!nt_reader_next(dm->rd, &m))
			break;
		if (m.err && m.err != NT_ERR_UNKNOWN_TCODE)
			demux_damage(d, &m, nt_err_name(m.err), m.err_at);
		else if (m.size > DEMUX_ROOM)
			/* no reader makes one: DEMUX_ROOM has no room for it */
			demux_damage(d, &m, "message lost splitting the sources",
				     m.offset);
		else
			demux_route(d, m.offset, m.size, m.src, data, base);
	}
	demux_flush(d);
}

/*
 * Keep the window's last bytes: the message the reader holds unfinished
 * began within DEMUX_CARRY bytes of the end, or it is damage, whose
 * bytes no one needs.
 */
static void demux_keep(struct demux *dm, const uint8_t *data, size_t len)
{
	if (len >= DEMUX_CARRY) {
		memcpy(dm->carry, data + len - DEMUX_CARRY, DEMUX_CARRY);
	} else {
		memmove(dm->carry, dm->carry + len, DEMUX_CARRY - len);
		memcpy(dm->carry + DEMUX_CARRY - len, data, len);
	}
}

static void demux_feed(struct nt_decoder *d, const uint8_t *data, size_t len)
{
	struct demux *dm = d->dm;

	while (len) {
		size_t n = len < DEMUX_WINDOW ? len : DEMUX_WINDOW;
		uint64_t base = dm->fed;

		nt_reader_feed(dm->rd, data, n);
		dm->fed += n;
		demux_take(d, data, base);
		demux_keep(dm, data, n);
		data += n;
		len -= n;
	}
	demux_stats(d);
}

static void demux_finish(struct nt_decoder *d)
{
	struct demux *dm = d->dm;
	unsigned int i;

	nt_reader_finish(dm->rd);
	demux_take(d, NULL, dm->fed);
	for (i = 0; i < dm->nparts; i++)
		nt_decoder_finish(dm->parts[dm->order[i]]->dec);
	demux_stats(d);
}

/* The split reads with rd, the parent's reader: the parent decodes nothing. */
static struct demux *demux_new(struct nt_reader *rd)
{
	struct demux *dm = calloc(1, sizeof(*dm));

	if (dm)
		dm->rd = rd;
	return dm;
}

static int demux_add_image(struct demux *dm, const struct nt_image *img,
			   bool any_context, uint64_t context)
{
	unsigned int i;

	for (i = 0; i < dm->nparts; i++)
		if (nt_decoder_add_image(dm->parts[dm->order[i]]->dec, img,
					 any_context, context))
			return -1;
	return 0;
}

static void demux_free(struct demux *dm)
{
	unsigned int i;

	if (!dm)
		return;
	for (i = 0; i < dm->nparts; i++)
		part_free(dm->parts[dm->order[i]]);
	free(dm);
}

void nt_decoder_feed(struct nt_decoder *d, const uint8_t *data, size_t len)
{
	struct run_start rs;
	struct src_dec *s;
	struct nt_msg m;
	uint32_t at;
	bool rec;

	if (d->dm) {
		demux_feed(d, data, len);
		return;
	}
	d->st.bytes += len;
	nt_reader_feed(d->rd, data, len);
	if (!d->run_on) {
		while (nt_reader_next(d->rd, &m)) {
			if (!branch_fast(d, &m))
				decode_msg(d, &m);
		}
		d->msg = NULL;
		return;
	}
	for (;;) {
		run_cache_take(d);
		rec = record_begin(d, &rs);
		if (!nt_reader_next(d->rd, &m)) {
			if (rec)
				record_stop(d);
			break;
		}
		if (!branch_fast(d, &m))
			decode_msg(d, &m);
		if (rec && rs.first_size) {
			/*
			 * a ResourceFull: the run ends with the next message.
			 * The reader ends a message at its first MSEO=11, so
			 * at rs.offset it has rs.first_size bytes.
			 */
			if (!m.err && m.tcode == NT_TCODE_RESOURCE_FULL &&
			    m.offset == rs.offset && m.src == rs.src &&
			    nt_reader_next(d->rd, &m)) {
				if (!branch_fast(d, &m))
					decode_msg(d, &m);
			} else {
				record_stop(d);
				rec = false;
			}
		}
		at = rec ? record_end(d, &m, &rs) : 0;
		/* its source's run before the next, for its successor link */
		s = d->srcs[m.src];
		if (s) {
			if (at && s->run_prev &&
			    !(run_at(d, at)->flags & RUN_LONG))
				run_at(d, s->run_prev)->succ = at;
			s->run_prev = at;
		}
	}
	d->msg = NULL;
}

void nt_decoder_finish(struct nt_decoder *d)
{
	struct nt_msg m;

	if (d->dm) {
		demux_finish(d);
		return;
	}
	nt_reader_finish(d->rd);
	run_links_reset(d);
	while (nt_reader_next(d->rd, &m)) {
		if (!branch_fast(d, &m))
			decode_msg(d, &m);
	}
	d->msg = NULL;
}
