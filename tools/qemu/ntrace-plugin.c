// SPDX-License-Identifier: GPL-2.0-only
/*
 * Emulated N-Trace hardware for the lab board: a QEMU TCG plugin that is,
 * register for register, one trace encoder per hart, a trace funnel that
 * merges them when there are several, and one SMEM trace RAM sink of the
 * RISC-V Trace Control Interface 1.0, producing real N-Trace with
 * libntrace's encoder model into guest memory.
 *
 * Plugin arguments (-plugin ntrace-plugin.so,ARG=VALUE,...):
 *   base=ADDR    physical base of the register windows: encoder of hart h
 *                at base + 0x1000 * h, the RAM sink at base + 0x10000,
 *                the funnel (only with more than one hart; its input n
 *                is the encoder of hart n) at base + 0x18000
 *   mem=ADDR     start of the memory the sink may write (reserved, no-map)
 *   memsize=N    its size
 *   ram=ADDR     optional: system memory the sink may write too (SMEM at
 *   ramsize=N    any address, as "SMEM generic" sinks allow), so that a
 *                driver can point it at its own buffers
 *   lack=MASK    optional: a smaller encoder, for drivers' probing: bit 0
 *                no HTM (InstMode 6 reads back 3), bit 1 no repeated
 *                history, bit 2 no timestamp unit, bit 3 no Context,
 *                bit 4 no external timestamp input (only the core clock)
 *   timebase=HZ  optional: the frequency of the time CSR, the external
 *                timestamps' clock (default 10000000, the virt board's)
 *   truth=PATH   ground truth: PATH.<hart> gets every instruction the
 *                encoder saw retire (and every reported faulting one)
 *
 * How execution becomes ingress-port records: each translation block is
 * classified once when QEMU translates it, privilege level included (QEMU
 * keys blocks by it, so a block only ever runs at the level it was
 * translated for); its exec callback marks it as running; the next
 * block's start, or a discontinuity callback (trap), says how far it got
 * and where its last instruction went. A block that ran to its end goes
 * to the encoder whole (nt_encoder_retire_block()); one a trap cut short,
 * record by record. The exec callback is conditional
 * on a per-hart flag that is set only while the hart's encoder is enabled
 * or its timestamp counter counts: an idle plugin leaves QEMU's generated
 * code almost as fast as without it. Register writes are seen by store
 * callbacks in blocks above U-mode; the windows are ordinary (reserved)
 * RAM, so guest reads see what the plugin last wrote there. Run QEMU with
 * -accel tcg,thread=single: the encoders, the shared sink and the
 * registers then need no locking.
 *
 * In that mode QEMU 11 compiles the vCPU index of the hart that
 * translated a block into the block's callbacks and scoreboard accesses
 * (it assumes one vCPU when blocks are not generated for parallel
 * execution), yet every hart runs every block: with several harts the
 * callbacks take the hart from mhartid.
 *
 * With several harts the exec callback is not conditional either: QEMU
 * 11.1 then makes the floating-point instructions of every hart but the
 * first illegal while the condition holds (frflags, fmv.d: SIGILL with
 * sstatus.FS Dirty), even with an empty callback, and not with an
 * unconditional one. The callback returns at once while no hart is
 * watched, which keeps the idle cost to the call.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ntrace.h"
#include "qemu-plugin-api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = NTRACE_QEMU_PLUGIN_API_VERSION;

#define MAX_HARTS	16
#define WINDOW		0x1000u
#define SINK_OFF	0x10000u
#define FUNNEL_OFF	0x18000u
#define REGION		0x19000u
/*
 * Encoder output is moved to the sink in batches of about this size, and
 * whenever the hart traps or a trace register is written: software never
 * sees a sink that is behind its own hart (it only runs after a trap).
 */
#define DRAIN_BYTES	2048u

/* trTeControl */
#define TE_ACTIVE	(1u << 0)
#define TE_ENABLE	(1u << 1)
#define TE_TRACING	(1u << 2)
#define TE_EMPTY	(1u << 3)
#define TE_MODE_SHIFT	4
#define TE_CONTEXT	(1u << 9)
#define TE_OVERFLOW	(1u << 12)
#define TE_INHIBIT_SRC	(1u << 15)
#define TE_SYNCMODE_SHIFT 16
#define TE_SYNCMAX_SHIFT 20
#define TE_FORMAT_SHIFT	24
/* trTeInstFeatures */
#define IF_SEQ_JUMP	(1u << 2)
#define IF_IMPL_RET	(1u << 3)
#define IF_IRMODE_SHIFT	6
#define IF_REP_HIST	(1u << 8)
#define IF_ALL_JUMPS	(1u << 9)
#define IF_EXT_MSB	(1u << 10)
#define IF_SRCID_SHIFT	16
#define IF_SRCBITS_SHIFT 28
/* trTsControl */
#define TS_ACTIVE	(1u << 0)
#define TS_COUNT	(1u << 1)
#define TS_RESET	(1u << 2)
#define TS_MODE_SHIFT	4
#define TS_MODE_EXTERNAL 1u
#define TS_MODE_CORE	3u
#define TS_ENABLE	(1u << 15)
#define TS_WIDTH	48u
/* trRamControl */
#define RAM_ACTIVE	(1u << 0)
#define RAM_ENABLE	(1u << 1)
#define RAM_EMPTY	(1u << 3)
#define RAM_MODE_SMEM	(1u << 4)
#define RAM_STOP_ON_WRAP (1u << 8)
/* trFunnelControl */
#define FUN_ACTIVE	(1u << 0)
#define FUN_ENABLE	(1u << 1)
#define FUN_EMPTY	(1u << 3)

/* encoder register offsets */
enum {
	TE_CONTROL = 0x000, TE_IMPL = 0x004, TE_FEATURES = 0x008,
	TE_FILTERS = 0x00c, TE_DATACTL = 0x010, TS_CONTROL = 0x040,
	TS_COUNTER_LO = 0x048, TS_COUNTER_HI = 0x04c,
	TE_F0_CONTROL = 0x400, TE_F0_MATCHINST = 0x404,
};

/* sink register offsets */
enum {
	RAM_CONTROL = 0x000, RAM_IMPL = 0x004, RAM_START_LO = 0x010,
	RAM_START_HI = 0x014, RAM_LIMIT_LO = 0x018, RAM_LIMIT_HI = 0x01c,
	RAM_WP_LO = 0x020, RAM_WP_HI = 0x024,
};

/* funnel register offsets */
enum {
	FUN_CONTROL = 0x000, FUN_IMPL = 0x004, FUN_DISINPUT = 0x008,
};

struct insn {
	uint64_t pc;
	struct nt_insn in;
	bool seq;	/* a lui/auipc right before set this jalr's base */
	uint64_t seq_target;
};

struct tbinfo {
	unsigned int n;
	uint8_t priv;		/* the level QEMU translated the block for */
	bool whole;		/* only its last instruction is not plain */
	struct nt_block blk;	/* the block for the encoder, if whole */
	/* for retire_part(): */
	unsigned int run;	/* leading plain instructions (not the last) */
	uint64_t run_half;	/* their size in halfwords */
	struct insn insn[];
};

struct hart {
	uint32_t ctl, features, filters, tsctl, f0ctl, f0inst;
	struct nt_encoder *enc;
	bool tracing;			/* records go to the encoder */
	const struct tbinfo *cur;	/* block running, not yet retired */
	uint8_t priv;
	uint64_t insns;			/* the core clock: retired instructions */
	FILE *truth;
	uint64_t unreported_traps;	/* seen only from the level change */
	uint64_t io_restarts;		/* blocks a device access cut short */
	bool watched;			/* its blocks call tb_exec */
	bool trap_pending;		/* trap_pc, if its handler is traced */
	uint64_t trap_pc;
	/*
	 * Another hart's store disabled this encoder while it traced: a
	 * driver pausing it to drain the sink. What the hart runs at a
	 * traced level until it is enabled again is lost to the trace,
	 * and no part of the hardware reports it, so count it here.
	 */
	bool paused_by_other;
	uint8_t paused_levels;		/* bit n: level n was traced */
	uint64_t untraced;		/* blocks' instructions, this pause */
	uint64_t untraced_total;
};

/* another hart's store enabled this one: its level shows in its next block */
#define PRIV_UNKNOWN	0xffu

struct sink {
	uint32_t ctl;
	uint64_t start, limit, wp;
	bool wrap;
	uint8_t word[4];		/* bytes not yet forming a full word */
	unsigned int nword;
};

/*
 * With one hart the encoder feeds the sink directly; with more, all of
 * them go through the funnel, as on real multi-hart systems.
 */
struct funnel {
	bool present;
	uint32_t ctl;		/* Active, Enable */
	uint32_t disinput;	/* bit n: the encoder of hart n is discarded */
};

static struct hart harts[MAX_HARTS];
static unsigned int nharts;
static struct sink sink;
static struct funnel funnel;
static uint64_t base, mem_lo, mem_hi, ram_lo, ram_hi;
/* features this encoder lacks (lack=) */
static uint64_t lack;
#define LACK_HTM	1u
#define LACK_RH		2u
#define LACK_TS		4u
#define LACK_CONTEXT	8u
#define LACK_TS_EXTERNAL 16u
static bool regs_written;
static GByteArray *scratch;
/* one hart: nonzero while its blocks must call tb_exec (the condition) */
static qemu_plugin_u64 watch;
/* any hart watched: with several harts tb_exec runs for every block */
static bool any_watched;
static struct qemu_plugin_register *priv_reg, *hartid_reg, *time_reg;
static unsigned int storing_hart = MAX_HARTS;	/* in mem_cb */

static bool read_reg(struct qemu_plugin_register *reg, uint64_t *v)
{
	g_byte_array_set_size(scratch, 0);
	if (!reg || !qemu_plugin_read_register(reg, scratch) ||
	    scratch->len < sizeof(*v))
		return false;
	memcpy(v, scratch->data, sizeof(*v));
	return true;
}

/* ---- timestamps ------------------------------------------------------ */

/*
 * The external timestamp input (trTsMode 1) is wired to the platform
 * timer, what the time CSR reads: all harts then stamp with one clock,
 * the one Linux's sched_clock() and so perf's sample times count. QEMU's
 * timer counts its virtual clock, which without -icount runs with the
 * host's CLOCK_MONOTONIC from a fixed offset while the machine runs. One
 * read of the time register gives that offset; after it, the host's clock
 * gives the time at a fraction of a register read's cost, which matters
 * when every block is stamped.
 */
static uint64_t timebase = 10000000;
static bool time_known;
static int64_t time_offset;		/* mtime - host_ticks() */
static uint64_t time_last;		/* stamps never run backwards */

static uint64_t host_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * timebase +
	       (uint64_t)ts.tv_nsec * timebase / 1000000000u;
}

/* In a callback that may read registers: learn the timer's offset. */
static void time_calibrate(void)
{
	uint64_t mtime;

	if (time_known || !read_reg(time_reg, &mtime))
		return;
	time_offset = (int64_t)(mtime - host_ticks());
	time_known = true;
}

static uint64_t platform_time(void)
{
	uint64_t now = host_ticks() + (uint64_t)time_offset;

	if (now > time_last)
		time_last = now;
	return time_last;
}

static bool ts_external(const struct hart *t)
{
	return ((t->tsctl >> TS_MODE_SHIFT) & 7) == TS_MODE_EXTERNAL;
}

/* The timestamp counter (trTsCounter) and what messages are stamped with. */
static uint64_t ts_value(const struct hart *t)
{
	return ts_external(t) ? platform_time() : t->insns;
}

/* ---- guest memory --------------------------------------------------- */

static void guest_write(uint64_t pa, const void *data, size_t len)
{
	g_byte_array_set_size(scratch, 0);
	g_byte_array_append(scratch, data, (guint)len);
	qemu_plugin_write_memory_hwaddr(pa, scratch);
}

static void put_reg(uint64_t pa, uint32_t v)
{
	guest_write(pa, &v, 4);
}

static uint64_t te_base(unsigned int h)
{
	return base + (uint64_t)h * WINDOW;
}

static void publish_hart(unsigned int h)
{
	struct hart *t = &harts[h];
	uint64_t b = te_base(h), ts = ts_value(t);
	uint32_t ctl = t->ctl;

	/* encoding is synchronous: nothing is ever queued */
	ctl |= TE_EMPTY;
	put_reg(b + TE_CONTROL, ctl);
	put_reg(b + TE_IMPL, t->ctl & TE_ACTIVE ? 0x00010101u : 0);
	put_reg(b + TE_FEATURES, t->features);
	put_reg(b + TE_FILTERS, t->filters);
	put_reg(b + TE_DATACTL, 0);
	put_reg(b + TS_CONTROL, lack & LACK_TS ? 0 : t->tsctl | (TS_WIDTH << 24));
	put_reg(b + TS_COUNTER_LO, (uint32_t)ts);
	put_reg(b + TS_COUNTER_HI, (uint32_t)(ts >> 32));
	put_reg(b + TE_F0_CONTROL, t->f0ctl);
	put_reg(b + TE_F0_MATCHINST, t->f0inst);
}

static void publish_wp(void)
{
	uint64_t b = base + SINK_OFF;

	put_reg(b + RAM_WP_LO, (uint32_t)sink.wp | (sink.wrap ? 1u : 0u));
	put_reg(b + RAM_WP_HI, (uint32_t)(sink.wp >> 32));
}

static void publish_sink(void)
{
	uint64_t b = base + SINK_OFF;

	put_reg(b + RAM_CONTROL, sink.ctl | RAM_EMPTY);
	put_reg(b + RAM_IMPL, sink.ctl & RAM_ACTIVE ? 0x00002901u : 0);
	put_reg(b + RAM_START_LO, (uint32_t)sink.start);
	put_reg(b + RAM_START_HI, (uint32_t)(sink.start >> 32));
	put_reg(b + RAM_LIMIT_LO, (uint32_t)sink.limit);
	put_reg(b + RAM_LIMIT_HI, (uint32_t)(sink.limit >> 32));
	publish_wp();
}

static void publish_funnel(void)
{
	uint64_t b = base + FUNNEL_OFF;
	bool active = funnel.ctl & FUN_ACTIVE;

	if (!funnel.present)
		return;
	/* nothing is ever queued in it: Empty reads 1 */
	put_reg(b + FUN_CONTROL, funnel.ctl | FUN_EMPTY);
	/* held in reset only Control means anything, as for the others */
	put_reg(b + FUN_IMPL, active ? 0x00000801u : 0);
	put_reg(b + FUN_DISINPUT, active ? funnel.disinput : 0);
}

/* ---- the RAM sink --------------------------------------------------- */

/*
 * Store whole 32-bit words at WP, as many at a time as fit before Limit
 * (the address of the last word); false when StopOnWrap stopped the sink
 * before all of them were stored.
 */
static bool sink_words(const uint8_t *p, size_t len)
{
	while (len) {
		uint64_t room = sink.limit + 4 - sink.wp;
		size_t n = len < room ? len : (size_t)room;

		if (!(sink.ctl & RAM_ENABLE))
			return false;
		guest_write(sink.wp, p, n);
		p += n;
		len -= n;
		if (n < room) {
			sink.wp += n;
			continue;
		}
		sink.wp = sink.start;
		sink.wrap = true;
		if (sink.ctl & RAM_STOP_ON_WRAP) {
			/* a full buffer: the sink stops taking trace */
			sink.ctl &= ~RAM_ENABLE;
			publish_sink();
			return !len;
		}
	}
	return true;
}

/* Trace bytes from an encoder; false if the sink lost some of them. */
static bool sink_bytes(const uint8_t *p, size_t len)
{
	size_t whole;

	if (!(sink.ctl & RAM_ENABLE))
		return false;
	while (len && sink.nword) {
		sink.word[sink.nword++] = *p++;
		len--;
		if (sink.nword == 4) {
			sink.nword = 0;
			if (!sink_words(sink.word, 4))
				return false;
		}
	}
	whole = len & ~(size_t)3;
	if (whole && !sink_words(p, whole))
		return false;
	for (p += whole, len -= whole; len; len--)
		sink.word[sink.nword++] = *p++;
	publish_wp();
	return true;
}

/* Disabling the sink pushes out the last word, padded with idle bytes. */
static void sink_flush(void)
{
	if (!sink.nword)
		return;
	while (sink.nword < 4)
		sink.word[sink.nword++] = 0xff;
	sink.nword = 0;
	sink_words(sink.word, 4);
}

/* Does the path from hart h's encoder to the sink let its bytes through? */
static bool funnel_passes(unsigned int h)
{
	if (!funnel.present)
		return true;
	return (funnel.ctl & (FUN_ACTIVE | FUN_ENABLE)) ==
	       (FUN_ACTIVE | FUN_ENABLE) && !(funnel.disinput >> h & 1);
}

static void drain(unsigned int h)
{
	struct hart *t = &harts[h];
	const uint8_t *p;
	size_t len;

	if (!t->enc)
		return;
	p = nt_encoder_output(t->enc, &len);
	if (!len)
		return;
	/*
	 * A funnel that is off, or discards this input, loses the bytes
	 * just as a sink that refuses them does.
	 */
	if (!funnel_passes(h) || !sink_bytes(p, len)) {
		/* section 6.4: the encoder reports the loss, then SYNC=7 */
		t->ctl |= TE_OVERFLOW;
		nt_encoder_lost(t->enc);
		publish_hart(h);
		return;
	}
	nt_encoder_consume(t->enc, len);
}

/* ---- encoders ------------------------------------------------------- */

/*
 * A hart's blocks report to tb_exec only while its encoder is enabled or
 * its timestamp counter counts.
 */
static void update_watch(unsigned int h)
{
	struct hart *t = &harts[h];
	bool on = (t->enc && (t->ctl & TE_ENABLE)) ||
		  ((t->tsctl & (TS_ACTIVE | TS_COUNT)) == (TS_ACTIVE | TS_COUNT));

	if (on == t->watched)
		return;
	t->watched = on;
	if (on) {
		/* blocks ran unobserved: what ran last is history */
		t->cur = NULL;
		if (h != storing_hart)
			t->priv = PRIV_UNKNOWN;
	}
	if (nharts == 1) {
		qemu_plugin_u64_set(watch, 0, on);
		return;
	}
	for (unsigned int i = 0; i < nharts; i++)
		on |= harts[i].watched || harts[i].paused_by_other;
	any_watched = on;
}

static bool filter_passes(const struct hart *t, unsigned int priv)
{
	/* one filter, privilege matching only; no filter: trace all */
	if (!(t->filters & 1) || !(t->f0ctl & 1))
		return true;
	if (t->f0ctl & 2)
		return (t->f0inst >> (priv & 3)) & 1;
	return true;
}

static bool want_tracing(const struct hart *t)
{
	return t->enc && (t->ctl & TE_ENABLE) && (t->ctl & TE_TRACING) &&
	       t->priv != PRIV_UNKNOWN && filter_passes(t, t->priv);
}

/* Start or stop the encoder where tracing turns on or off. */
static void update_tracing(unsigned int h, unsigned int reason)
{
	struct hart *t = &harts[h];
	bool on = want_tracing(t);

	if (on == t->tracing)
		return;
	t->tracing = on;
	if (on)
		nt_encoder_start(t->enc, reason);
	else
		nt_encoder_stop(t->enc, NT_EVCODE_TRACE_DISABLED, ts_value(t));
	drain(h);
}

static void encoder_enable(unsigned int h)
{
	struct hart *t = &harts[h];
	struct nt_encoder_cfg cfg;
	const char *err = NULL;
	uint32_t f = t->features;

	nt_encoder_cfg_default(&cfg);
	cfg.mode = (t->ctl >> TE_MODE_SHIFT) & 7;
	cfg.context = t->ctl & TE_CONTEXT;
	cfg.sync_mode = (t->ctl >> TE_SYNCMODE_SHIFT) & 3;
	cfg.sync_max = (t->ctl >> TE_SYNCMAX_SHIFT) & 15;
	cfg.sequential_jump = f & IF_SEQ_JUMP;
	cfg.implicit_return = f & IF_IMPL_RET ? (f >> IF_IRMODE_SHIFT) & 3 : 0;
	cfg.repeat_history = (f & IF_REP_HIST) && cfg.mode == NT_MODE_HTM;
	cfg.repeat_branch = cfg.mode == NT_MODE_BTM;
	cfg.all_jumps = f & IF_ALL_JUMPS;
	cfg.stream.extend_addr_msb = f & IF_EXT_MSB;
	if (!(t->ctl & TE_INHIBIT_SRC)) {
		cfg.stream.src_bits = (f >> IF_SRCBITS_SHIFT) & 15;
		cfg.src_id = (f >> IF_SRCID_SHIFT) & 0xfff;
		cfg.src_id &= (uint16_t)((1u << cfg.stream.src_bits) - 1);
	}
	cfg.stream.timestamps = (t->tsctl & TS_ACTIVE) && (t->tsctl & TS_ENABLE);
	if (!cfg.mode || cfg.mode == 7)
		return;		/* instruction trace off */
	nt_encoder_free(t->enc);
	t->enc = nt_encoder_new(&cfg, &err);
	/* the ground truth of one capture starts here */
	if (t->truth)
		fputs("# enable\n", t->truth);
	if (!t->enc)
		fprintf(stderr, "ntrace-plugin: hart %u: %s\n", h, err);
	t->tracing = false;
}

/*
 * The encoder another hart's store disabled is enabled again or reset.
 * Only another hart enabling it again closes a pause (a drain pauses and
 * resumes the encoders it stopped); anything else makes the disabling a
 * stop, whose aftermath is not trace the session lost. The ground truth
 * of this hart notes every pause and how much of it went untraced.
 */
static void pause_ends(unsigned int h, bool resumed)
{
	struct hart *t = &harts[h];

	/* every pause, even one with nothing run: a test counts them */
	if (resumed) {
		if (t->truth)
			fprintf(t->truth, "# untraced %" PRIu64 "\n",
				t->untraced);
		t->untraced_total += t->untraced;
	}
	t->untraced = 0;
	t->paused_by_other = false;
}

/* Write to trTeControl: the WARL rules of TCI 1.0 section 4.2. */
static void write_te_control(unsigned int h, uint32_t v)
{
	struct hart *t = &harts[h];
	uint32_t old = t->ctl, mode;

	if (t->paused_by_other && (!(v & TE_ACTIVE) || (v & TE_ENABLE)))
		pause_ends(h, (v & TE_ACTIVE) && storing_hart != h);
	if (!(v & TE_ACTIVE)) {
		/* held in reset: only Active and Enable are defined */
		if (t->enc && t->tracing)
			update_tracing(h, 0);
		nt_encoder_free(t->enc);
		t->enc = NULL;
		t->tracing = false;
		t->ctl = 0;
		t->features = t->filters = t->tsctl = t->f0ctl = t->f0inst = 0;
		return;
	}
	if (old & TE_ENABLE && v & TE_ENABLE) {
		/* running: only InstTracing and the overflow flag change */
		t->ctl = (old & ~TE_TRACING) | (v & TE_TRACING);
		if (v & TE_OVERFLOW)
			t->ctl &= ~TE_OVERFLOW;
		update_tracing(h, NT_SYNC_TRACE_ENABLE);
		return;
	}
	mode = (v >> TE_MODE_SHIFT) & 7;
	if (mode && mode != 3 && mode != 6)
		mode = 6;	/* an unsupported mode reads back supported */
	if (mode == 6 && (lack & LACK_HTM))
		mode = 3;
	if (lack & LACK_CONTEXT)
		v &= ~TE_CONTEXT;
	t->ctl = (v & (TE_ACTIVE | TE_ENABLE | TE_TRACING | TE_CONTEXT |
		       TE_INHIBIT_SRC | (3u << TE_SYNCMODE_SHIFT) |
		       (15u << TE_SYNCMAX_SHIFT))) |
		 (mode << TE_MODE_SHIFT) | (1u << TE_FORMAT_SHIFT) |
		 (old & TE_OVERFLOW);
	if (v & TE_OVERFLOW)
		t->ctl &= ~TE_OVERFLOW;
	if (!(old & TE_ENABLE) && (v & TE_ENABLE)) {
		t->ctl &= ~TE_OVERFLOW;
		encoder_enable(h);
		if (!t->enc)
			t->ctl &= ~TE_ENABLE;
		update_tracing(h, NT_SYNC_TRACE_ENABLE);
	} else if ((old & TE_ENABLE) && !(v & TE_ENABLE)) {
		/* disabling flushes what was traced */
		update_tracing(h, 0);
		t->paused_by_other = nharts > 1 && storing_hart != h &&
				     (old & TE_TRACING);
		/* the restart rewrites the filter: keep what it traced */
		t->paused_levels = 0;
		for (unsigned int l = 0; l < 4; l++)
			if (filter_passes(t, l))
				t->paused_levels |= 1u << l;
	}
}

static void write_encoder(unsigned int h, uint32_t off, uint32_t v)
{
	struct hart *t = &harts[h];
	bool running = t->ctl & TE_ENABLE;

	if (off == TE_CONTROL) {
		write_te_control(h, v);
	} else if (!(t->ctl & TE_ACTIVE) || running) {
		/* in reset, or configuration locked while enabled */
	} else if (off == TE_FEATURES) {
		uint32_t bits = (v >> IF_SRCBITS_SHIFT) & 15;

		t->features = (v & (IF_SEQ_JUMP | IF_IMPL_RET | IF_REP_HIST |
				    IF_ALL_JUMPS | IF_EXT_MSB |
				    (3u << IF_IRMODE_SHIFT) |
				    (0xfffu << IF_SRCID_SHIFT))) |
			      ((bits > 12 ? 12 : bits) << IF_SRCBITS_SHIFT);
		if (lack & LACK_RH)
			t->features &= ~IF_REP_HIST;
	} else if (off == TE_FILTERS) {
		t->filters = v & 1;		/* one filter implemented */
	} else if (off == TS_CONTROL && (lack & LACK_TS)) {
		/* no timestamp unit: the register reads 0 */
	} else if (off == TS_CONTROL) {
		uint32_t mode = (v >> TS_MODE_SHIFT) & 7;

		/* Count and Reset are for the internal clocks only */
		if (v & TS_RESET)
			t->insns = 0;
		t->tsctl = v & (TS_ACTIVE | TS_COUNT | TS_ENABLE);
		/* WARL: the external input if wired, else the core clock */
		if (mode != TS_MODE_EXTERNAL || (lack & LACK_TS_EXTERNAL) ||
		    !time_known)
			mode = mode ? TS_MODE_CORE : 0;
		t->tsctl |= mode << TS_MODE_SHIFT;
	} else if (off == TE_F0_CONTROL) {
		t->f0ctl = v & 3;		/* Enable, MatchPrivilege */
	} else if (off == TE_F0_MATCHINST) {
		t->f0inst = v & 0x1ff;
	}
	publish_hart(h);
	update_watch(h);
}

static void write_sink(uint32_t off, uint32_t v)
{
	uint64_t lo32 = v, hi = (uint64_t)v << 32;

	if (off == RAM_CONTROL) {
		if (!(v & RAM_ACTIVE)) {
			memset(&sink, 0, sizeof(sink));
		} else {
			uint32_t old = sink.ctl;

			/*
			 * Leaving reset starts a capture (a perf session in
			 * the driver): the ground truth marks it for every
			 * hart, so a test can find each session's part.
			 */
			if (!(old & RAM_ACTIVE))
				for (unsigned int h = 0; h < nharts; h++)
					if (harts[h].truth)
						fputs("# sink\n", harts[h].truth);

			/* SMEM only: Mode reads back 1 */
			sink.ctl = (v & (RAM_ACTIVE | RAM_ENABLE |
					 RAM_STOP_ON_WRAP)) | RAM_MODE_SMEM;
			if ((old & RAM_ENABLE) && !(v & RAM_ENABLE)) {
				for (unsigned int h = 0; h < nharts; h++)
					drain(h);
				sink.ctl |= RAM_ENABLE;
				sink_flush();
				sink.ctl &= ~RAM_ENABLE;
			}
		}
	} else if (!(sink.ctl & RAM_ACTIVE) || (sink.ctl & RAM_ENABLE)) {
		/* Start, Limit and WP are locked while enabled */
	} else if (off == RAM_START_LO || off == RAM_LIMIT_LO ||
		   off == RAM_WP_LO) {
		uint64_t *r = off == RAM_START_LO ? &sink.start :
			      off == RAM_LIMIT_LO ? &sink.limit : &sink.wp;

		*r = (*r & ~0xffffffffull) | (lo32 & ~3ull);
		if (off == RAM_WP_LO)
			sink.wrap = false;
	} else if (off == RAM_START_HI || off == RAM_LIMIT_HI ||
		   off == RAM_WP_HI) {
		uint64_t *r = off == RAM_START_HI ? &sink.start :
			      off == RAM_LIMIT_HI ? &sink.limit : &sink.wp;

		*r = (*r & 0xffffffffull) | hi;
	}
	/*
	 * WARL: the buffer stays inside the memory reserved for trace, or
	 * inside system memory when the sink may write there
	 */
	if (ram_hi && sink.start >= ram_lo && sink.start < ram_hi) {
		if (sink.limit < sink.start || sink.limit > ram_hi - 4)
			sink.limit = ram_hi - 4;
	} else {
		if (sink.start < mem_lo || sink.start >= mem_hi)
			sink.start = mem_lo;
		if (sink.limit < sink.start || sink.limit > mem_hi - 4)
			sink.limit = mem_hi - 4;
	}
	if (sink.wp < sink.start || sink.wp > sink.limit)
		sink.wp = sink.start;
	publish_sink();
}

/* Write to a funnel register (TCI 1.0, Trace Funnel). */
static void write_funnel(uint32_t off, uint32_t v)
{
	if (off == FUN_CONTROL) {
		/* Enable goes with Active: a funnel in reset is disabled */
		uint32_t ctl = v & FUN_ACTIVE ? v & (FUN_ACTIVE | FUN_ENABLE) : 0;

		/*
		 * Disabling flushes: what the encoders hold goes out while
		 * the funnel still passes it.
		 */
		if ((funnel.ctl & FUN_ENABLE) && !(ctl & FUN_ENABLE)) {
			for (unsigned int h = 0; h < nharts; h++)
				drain(h);
		}
		funnel.ctl = ctl;
		if (!(ctl & FUN_ACTIVE))
			funnel.disinput = 0;
	} else if (off == FUN_DISINPUT && (funnel.ctl & FUN_ACTIVE)) {
		/* WARL: one bit per input, and an input per hart */
		funnel.disinput = v & ((1u << nharts) - 1);
	}
	publish_funnel();
}

/* The hart running the callback (see the top of this file for why). */
static unsigned int running_hart(void)
{
	uint64_t id;

	if (nharts == 1)
		return 0;
	return read_reg(hartid_reg, &id) && id < nharts ? (unsigned int)id :
							  MAX_HARTS;
}

/* ---- execution -------------------------------------------------------- */

/* The ground truth, if kept: the first n instructions of b retired. */
static void truth_insns(const struct hart *t, const struct tbinfo *b,
			unsigned int n)
{
	for (unsigned int i = 0; t->truth && i < n; i++)
		fprintf(t->truth, "0x%" PRIx64 "\n", b->insn[i].pc);
}

static void retire(unsigned int h, const struct nt_record *r)
{
	struct hart *t = &harts[h];

	if (r->itype != NT_ITYPE_EXCEPTION && r->itype != NT_ITYPE_INTERRUPT)
		t->insns++;
	if (!t->tracing)
		return;
	nt_encoder_retire(t->enc, r);
	if (t->truth && r->itype != NT_ITYPE_INTERRUPT &&
	    r->itype != NT_ITYPE_EXCEPTION)
		fprintf(t->truth, "0x%" PRIx64 "\n", r->addr);
}

/* What x does as a block's last instruction; conditional branches TAKEN. */
static uint8_t transfer_itype(const struct insn *x)
{
	switch (x->in.iclass) {
	case NT_IC_BRANCH:
		return NT_ITYPE_BRANCH_TAKEN;
	case NT_IC_JAL:
	case NT_IC_JALR:
	case NT_IC_POPRET:
	case NT_IC_TABLE_JUMP:
	case NT_IC_TRAP_RETURN:
		return x->in.itype;
	default:
		return NT_ITYPE_NONE;
	}
}

/* Records for insn i of a block, now that the next PC is known. */
static void complete(unsigned int h, const struct insn *x, uint64_t next,
		     bool next_known)
{
	struct nt_record r = { .addr = x->pc, .size = x->in.size,
			       .priv = harts[h].priv, .tstamp = ts_value(&harts[h]),
			       .itype = transfer_itype(x) };

	if (r.itype == NT_ITYPE_BRANCH_TAKEN &&
	    !(next_known && next == x->in.target))
		r.itype = NT_ITYPE_BRANCH_NOT_TAKEN;
	if (x->seq && next_known && next == x->seq_target)
		r.flags = NT_REC_SEQ_INFERABLE;
	retire(h, &r);
}

static bool plain(const struct insn *x)
{
	return x->in.iclass == NT_IC_OTHER || x->in.iclass == NT_IC_LUI ||
	       x->in.iclass == NT_IC_AUIPC;
}

/*
 * The straight run in front of the last of the first upto instructions
 * (QEMU ends blocks at control transfers): its length, and its size in
 * halfwords in *half.
 */
static unsigned int plain_run(const struct tbinfo *b, unsigned int upto,
			      uint64_t *half)
{
	unsigned int run;

	*half = 0;
	for (run = 0; run + 1 < upto && plain(&b->insn[run]); run++)
		*half += b->insn[run].in.size / 2;
	return run;
}

/*
 * The block ran to its end and went to next: the common case. Returns
 * the encoder's output waiting to be drained.
 */
static size_t retire_whole(struct hart *t, const struct tbinfo *b,
			   uint64_t next)
{
	size_t pending = 0;

	if (t->tracing) {
		pending = nt_encoder_retire_block(t->enc, &b->blk, next, 0,
						  ts_value(t));
		truth_insns(t, b, b->n);
	}
	t->insns += b->n;
	return pending;
}

/*
 * Instructions [0, upto) of the block retired (a trap ended it early, or
 * where it went is not known), one record each but for the straight run
 * in front of the last one (QEMU ends blocks at control transfers).
 */
static void retire_part(unsigned int h, const struct tbinfo *b,
			unsigned int upto, uint64_t next, bool next_known)
{
	struct hart *t = &harts[h];
	unsigned int i, run;
	uint64_t half = 0;

	if (upto == b->n) {
		run = b->run;
		half = b->run_half;
	} else {
		run = plain_run(b, upto, &half);
	}
	if (run) {
		struct nt_record r = { .addr = b->insn[0].pc,
				       .size = b->insn[0].in.size,
				       .priv = t->priv, .tstamp = ts_value(t) };

		t->insns += run;
		if (t->tracing) {
			nt_encoder_retire_plain(t->enc, &r, run, half);
			truth_insns(t, b, run);
		}
	}
	for (i = run; i < upto; i++) {
		bool last = i + 1 == upto;

		complete(h, &b->insn[i], last ? next : b->insn[i].pc +
			 b->insn[i].in.size, last ? next_known : true);
	}
}

/*
 * The running block ended: instructions [0, upto) retired, the last of
 * them continuing at next.
 */
static void finish_block(unsigned int h, unsigned int upto, uint64_t next,
			 bool next_known)
{
	struct hart *t = &harts[h];
	const struct tbinfo *b = t->cur;
	size_t pending = 0;

	t->cur = NULL;
	if (!b || !upto)
		return;
	if (upto == b->n && next_known && b->whole) {
		pending = retire_whole(t, b, next);
	} else {
		retire_part(h, b, upto, next, next_known);
		if (t->tracing)
			nt_encoder_output(t->enc, &pending);
	}
	if (pending >= DRAIN_BYTES)
		drain(h);
}

static void publish_once(void)
{
	if (regs_written)
		return;
	regs_written = true;
	for (unsigned int h = 0; h < nharts; h++) {
		publish_hart(h);
		update_watch(h);
	}
	publish_sink();
	publish_funnel();
}

/*
 * A trap: the running block got as far as the instruction at from (an
 * exception) or all the way (an interrupt, taken between instructions).
 */
static void trap(unsigned int h, bool exception, uint64_t from)
{
	struct hart *t = &harts[h];
	struct nt_record r = { .addr = from, .priv = t->priv };
	unsigned int k = 0;

	if (t->cur) {
		while (k < t->cur->n && t->cur->insn[k].pc != from)
			k++;
		finish_block(h, exception && k < t->cur->n ? k : t->cur->n,
			     from, true);
	}
	r.itype = exception ? NT_ITYPE_EXCEPTION : NT_ITYPE_INTERRUPT;
	r.tstamp = ts_value(t);
	retire(h, &r);
	t->trap_pending = exception && t->tracing && t->truth;
	t->trap_pc = from;
	/* software runs next: it finds this hart's trace in the sink */
	drain(h);
}

/* The hart runs at priv from here on. */
static void enter_level(unsigned int h, uint8_t priv)
{
	struct hart *t = &harts[h];

	if (priv != t->priv) {
		t->priv = priv;
		update_tracing(h, NT_SYNC_TRACE_ENABLE);
	}
	/* a faulting instruction is in the truth if its handler is traced */
	if (t->trap_pending && t->tracing)
		fprintf(t->truth, "0x%" PRIx64 "\n", t->trap_pc);
	t->trap_pending = false;
}

/*
 * Whether the last instruction of b can continue at next: where else
 * QEMU started the next block is not where b ended.
 */
static bool may_follow(const struct tbinfo *b, uint64_t next)
{
	const struct insn *last = &b->insn[b->n - 1];

	switch (last->in.iclass) {
	case NT_IC_BRANCH:
		return next == last->in.target ||
		       next == last->pc + last->in.size;
	case NT_IC_JAL:
		return next == last->in.target;
	case NT_IC_OTHER:
	case NT_IC_LUI:
	case NT_IC_AUIPC:
		return next == last->pc + last->in.size;
	default:
		return true;
	}
}

/*
 * How many of prev's instructions retired when the next block starts at
 * next and no trap came between. All of them, unless next cannot follow
 * prev's end but is one of prev's own instructions: QEMU cuts a block
 * short that way when an instruction in its middle touches a device
 * (cpu_io_recompile()). It runs that one instruction again in a block of
 * its own that has memory callbacks only (CF_MEMI_ONLY), so no exec
 * callback tells of it, and goes on at the instruction after it.
 */
static unsigned int ran_before(const struct tbinfo *prev, uint64_t next)
{
	unsigned int k;

	if (may_follow(prev, next))
		return prev->n;
	for (k = 1; k < prev->n; k++)
		if (prev->insn[k].pc == next)
			return k;
	return prev->n;
}

static void tb_exec(unsigned int vcpu, void *ud)
{
	const struct tbinfo *b = ud, *prev;
	struct hart *t;

	if (nharts > 1 && !any_watched)
		return;
	/* QEMU's vcpu can name another hart (see the top of this file) */
	vcpu = running_hart();
	if (vcpu >= nharts)
		return;
	time_calibrate();
	publish_once();
	t = &harts[vcpu];
	if (t->paused_by_other && (t->paused_levels >> (b->priv & 3) & 1))
		t->untraced += b->n;
	if (!t->watched)
		return;
	prev = t->cur;
	if (prev && prev->whole && b->priv == t->priv &&
	    may_follow(prev, b->blk.addr)) {
		/* the common case, finish_block()'s first branch at once */
		t->cur = NULL;
		if (retire_whole(t, prev, b->blk.addr) >= DRAIN_BYTES)
			drain(vcpu);
	} else if (prev) {
		const struct insn *last = &prev->insn[prev->n - 1];
		unsigned int upto = ran_before(prev, b->blk.addr);

		/*
		 * Only traps and trap returns change the level: should QEMU
		 * ever not report a trap, the block gets no target rather
		 * than a jump into the handler.
		 */
		bool unreported = b->priv > t->priv &&
				  last->in.iclass != NT_IC_TRAP_RETURN;

		t->unreported_traps += unreported;
		t->io_restarts += upto < prev->n;
		finish_block(vcpu, upto, b->blk.addr, !unreported);
	}
	if (b->priv != t->priv || t->trap_pending)
		enter_level(vcpu, b->priv);
	t->cur = b;
}

static void discon(unsigned int vcpu, enum qemu_plugin_discon_type type,
		   uint64_t from, uint64_t to, void *ud)
{
	uint64_t priv;

	(void)to;
	(void)ud;
	if (vcpu >= nharts || !harts[vcpu].watched)
		return;
	trap(vcpu, type != QEMU_PLUGIN_DISCON_INTERRUPT, from);
	/*
	 * The handler's level now, not when its first block runs: another
	 * trap may come first (an M-mode interrupt at the S-mode vector),
	 * and its address must not look like the next user instruction.
	 */
	if (read_reg(priv_reg, &priv))
		enter_level(vcpu, priv & 3);
}

static void mem_cb(unsigned int vcpu, qemu_plugin_meminfo_t info,
		   uint64_t vaddr, void *ud)
{
	struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
	qemu_plugin_mem_value val;
	uint64_t pa, off;
	unsigned int h;

	if (!hw)
		return;
	pa = qemu_plugin_hwaddr_phys_addr(hw);
	if (pa < base || pa >= base + REGION)
		return;
	/* registers are 32 bits wide and written whole */
	if (qemu_plugin_mem_size_shift(info) != 2 || (pa & 3))
		return;
	/* the store's own block says at which level the hart runs */
	(void)vcpu;	/* it may name another hart: see the top of this file */
	h = running_hart();
	/* (nharts <= MAX_HARTS, but GCC cannot see it and warns) */
	if (h < nharts && h < MAX_HARTS)
		harts[h].priv = (uint8_t)(uintptr_t)ud;
	storing_hart = h;
	/* a register write sees every byte traced so far in the sink */
	for (h = 0; h < nharts; h++)
		drain(h);
	val = qemu_plugin_mem_get_value(info);
	off = pa - base;
	if (off >= FUNNEL_OFF && off < FUNNEL_OFF + WINDOW) {
		if (funnel.present)
			write_funnel((uint32_t)(off - FUNNEL_OFF), val.data.u32);
		else
			put_reg(pa, 0);	/* one hart: no funnel there */
	} else if (off >= SINK_OFF && off < SINK_OFF + WINDOW) {
		write_sink((uint32_t)(off - SINK_OFF), val.data.u32);
	} else if (off / WINDOW < nharts) {
		write_encoder((unsigned int)(off / WINDOW),
			      (uint32_t)(off % WINDOW), val.data.u32);
	}
	storing_hart = MAX_HARTS;
}

/* The block as the encoder retires it when it runs to its end. */
static void describe_block(struct tbinfo *b)
{
	const struct insn *last = &b->insn[b->n - 1];
	struct nt_block *k = &b->blk;

	k->addr = b->insn[0].pc;
	k->first_size = b->insn[0].in.size;
	k->last = last->pc;
	k->last_size = last->in.size;
	k->n = b->n;
	k->halfwords = (uint32_t)(b->run_half + last->in.size / 2);
	k->priv = b->priv;
	k->last_itype = transfer_itype(last);
	k->target = last->in.target;
	if (last->seq) {
		k->target = last->seq_target;
		k->flags = NT_BLOCK_SEQ;
	}
}

static uint8_t translated_priv(void)
{
	uint64_t v;

	/* a block is translated for the level the hart runs at now */
	return read_reg(priv_reg, &v) ? v & 3 : NT_PRIV_M;
}

static void tb_trans(struct qemu_plugin_tb *tb, void *ud)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct tbinfo *b = g_malloc0(sizeof(*b) + n * sizeof(b->insn[0]));

	(void)ud;
	b->n = (unsigned int)n;
	b->priv = translated_priv();
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *qi = qemu_plugin_tb_get_insn(tb, i);
		struct insn *x = &b->insn[i];
		uint8_t bytes[4] = { 0 };
		size_t len = qemu_plugin_insn_data(qi, bytes, sizeof(bytes));

		x->pc = qemu_plugin_insn_vaddr(qi);
		if (nt_insn_classify(bytes, len, x->pc, 0, &x->in) <= 0) {
			x->in.size = (uint8_t)qemu_plugin_insn_size(qi);
			x->in.iclass = NT_IC_OTHER;
		}
		/* section 8.1: lui/auipc immediately before the jalr */
		if (i && x->in.iclass == NT_IC_JALR) {
			const struct nt_insn *p = &b->insn[i - 1].in;

			if ((p->iclass == NT_IC_LUI || p->iclass == NT_IC_AUIPC) &&
			    p->rd && p->rd == x->in.rs1) {
				uint64_t v = (uint64_t)p->imm;

				if (p->iclass == NT_IC_AUIPC)
					v += b->insn[i - 1].pc;
				x->seq = true;
				x->seq_target = (v + (uint64_t)x->in.imm) & ~1ull;
			}
		}
		/*
		 * Software above U-mode programs the trace components; with
		 * several harts the callback reads which one stores.
		 */
		if (b->priv != NT_PRIV_U)
			qemu_plugin_register_vcpu_mem_cb(qi, mem_cb,
				nharts > 1 ? QEMU_PLUGIN_CB_R_REGS :
					     QEMU_PLUGIN_CB_NO_REGS,
				QEMU_PLUGIN_MEM_W, (void *)(uintptr_t)b->priv);
	}
	b->run = plain_run(b, b->n, &b->run_half);
	describe_block(b);
	b->whole = b->run + 1 == b->n && !nt_block_check(&b->blk);
	/* R_REGS: with several harts it reads mhartid */
	qemu_plugin_register_vcpu_tb_exec_cond_cb(tb, tb_exec,
						  QEMU_PLUGIN_CB_R_REGS,
						  nharts == 1 ? QEMU_PLUGIN_COND_NE :
							QEMU_PLUGIN_COND_ALWAYS,
						  watch, 0, b);
}

/* ---- set-up ---------------------------------------------------------- */

static void vcpu_init(unsigned int vcpu, void *ud)
{
	struct hart *t = &harts[vcpu];
	GArray *regs;

	(void)ud;
	if (vcpu >= nharts)
		return;
	regs = qemu_plugin_get_registers();
	for (guint i = 0; regs && i < regs->len; i++) {
		/*
		 * QEMU 11's descriptors are longer than the three fields used
		 * here: step by the array's own element size.
		 */
		const qemu_plugin_reg_descriptor *d = (const void *)
			(regs->data + (size_t)i * g_array_get_element_size(regs));

		if (!strcmp(d->name, "priv"))
			priv_reg = d->handle;
		if (!strcmp(d->name, "mhartid"))
			hartid_reg = d->handle;
		if (!strcmp(d->name, "time"))
			time_reg = d->handle;
	}
	if (regs)
		g_array_free(regs, TRUE);
	t->priv = NT_PRIV_M;	/* harts start in M-mode firmware */
	/* until the registers are published, every block reports */
	t->watched = true;
	any_watched = true;
	qemu_plugin_u64_set(watch, vcpu, 1);
}

static void at_exit(void *ud)
{
	(void)ud;
	for (unsigned int h = 0; h < nharts; h++) {
		if (harts[h].unreported_traps)
			fprintf(stderr, "ntrace-plugin: hart %u: %" PRIu64
				" traps not reported by QEMU\n",
				h, harts[h].unreported_traps);
		if (harts[h].io_restarts)
			fprintf(stderr, "ntrace-plugin: hart %u: %" PRIu64
				" blocks cut short by a device access\n",
				h, harts[h].io_restarts);
		if (harts[h].untraced_total)
			fprintf(stderr, "ntrace-plugin: hart %u: about %" PRIu64
				" instructions ran untraced while another hart had its encoder paused\n",
				h, harts[h].untraced_total);
		if (harts[h].truth)
			fclose(harts[h].truth);
		nt_encoder_free(harts[h].enc);
	}
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	*v = strtoull(s, &end, 0);
	return *s && !*end;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *truth = NULL;
	uint64_t size = 0, ramsize = 0;

	if (!info->system_emulation || strcmp(info->target_name, "riscv64")) {
		fprintf(stderr, "ntrace-plugin: needs qemu-system-riscv64\n");
		return -1;
	}
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool ok = true;

		if (!strncmp(a, "base=", 5))
			ok = parse_u64(a + 5, &base);
		else if (!strncmp(a, "mem=", 4))
			ok = parse_u64(a + 4, &mem_lo);
		else if (!strncmp(a, "memsize=", 8))
			ok = parse_u64(a + 8, &size);
		else if (!strncmp(a, "ram=", 4))
			ok = parse_u64(a + 4, &ram_lo);
		else if (!strncmp(a, "ramsize=", 8))
			ok = parse_u64(a + 8, &ramsize);
		else if (!strncmp(a, "lack=", 5))
			ok = parse_u64(a + 5, &lack);
		else if (!strncmp(a, "timebase=", 9))
			ok = parse_u64(a + 9, &timebase) && timebase &&
			     timebase <= 1000000000u;
		else if (!strncmp(a, "truth=", 6))
			truth = a + 6;
		else
			ok = false;
		if (!ok) {
			fprintf(stderr, "ntrace-plugin: bad argument '%s'\n", a);
			return -1;
		}
	}
	if (!base || !mem_lo || size < 4096 || (base & 0xfff)) {
		fprintf(stderr, "ntrace-plugin: need base=, mem= and memsize=\n");
		return -1;
	}
	mem_hi = mem_lo + size;
	if (ramsize)
		ram_hi = ram_lo + ramsize;
	nharts = (unsigned int)info->system.smp_vcpus;
	if (nharts > MAX_HARTS)
		nharts = MAX_HARTS;
	funnel.present = nharts > 1;
	for (unsigned int h = 0; truth && h < nharts; h++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s.%u", truth, h);
		harts[h].truth = fopen(path, "w");
		if (!harts[h].truth) {
			fprintf(stderr, "ntrace-plugin: cannot write %s\n", path);
			return -1;
		}
	}
	sink.start = mem_lo;
	sink.limit = mem_hi - 4;
	sink.wp = mem_lo;
	scratch = g_byte_array_new();
	watch.score = qemu_plugin_scoreboard_new(sizeof(uint64_t));
	watch.offset = 0;
	qemu_plugin_register_vcpu_init_cb(id, vcpu_init, NULL);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans, NULL);
	qemu_plugin_register_vcpu_discon_cb(id, QEMU_PLUGIN_DISCON_ALL, discon,
					    NULL);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
