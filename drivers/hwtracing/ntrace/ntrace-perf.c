// SPDX-License-Identifier: GPL-2.0
/*
 * The "ntrace" perf PMU: N-Trace from the encoder of the hart an event
 * runs on, copied from the shared RAM sink into the event's AUX buffer.
 *
 * Drain model. All encoders feed one sink, set to stop when full
 * (StopOnWrap), so a buffer nobody emptied in time loses the newest
 * trace and says so: the encoders report the loss and resynchronise
 * (N-Trace 1.0, loss of trace), and the AUX record gets PARTIAL. The
 * sink is drained into the AUX buffer of the event that happens to be
 * stopping (sched-out, disable, exit) and, while an event runs, from a
 * per-hart hrtimer whose period follows the rate the sink fills at.
 * Bytes from every hart of a session may land in any of the session's
 * AUX buffers; the SRC field (SRC = cpu number) tells them apart. A
 * drain copies what the sink wrote up to its write pointer while it
 * keeps running, so the other harts go on tracing. The sink is rewound
 * to its start only when no encoder is running, when it filled, or when
 * it is half full; only the last can cost another hart trace, and that
 * hart reports it.
 */
#include <linux/bitfield.h>
#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "ntrace.h"

/* attr.config */
#define CFG_MODE	GENMASK_ULL(1, 0)	/* 0 best, 1 BTM, 2 HTM */
#define CFG_IR		GENMASK_ULL(3, 2)	/* ImplicitReturnMode */
#define CFG_RH		BIT_ULL(4)		/* repeated history */
#define CFG_SEQJUMP	BIT_ULL(5)
#define CFG_ALLJUMPS	BIT_ULL(6)
#define CFG_EXTMSB	BIT_ULL(7)
#define CFG_SYNCMODE	GENMASK_ULL(9, 8)
#define CFG_SYNCMAX	GENMASK_ULL(13, 10)
#define CFG_TS		BIT_ULL(14)
#define CFG_CONTEXT	BIT_ULL(15)
#define CFG_ALL		GENMASK_ULL(15, 0)

#define PERIOD_MIN_NS	(1 * NSEC_PER_MSEC)
#define PERIOD_MAX_NS	(100 * NSEC_PER_MSEC)

/* The AUX buffer, mapped flat. */
struct ntrace_aux {
	void *base;
	size_t size;
	bool snapshot;
	struct page *pg[];
};

struct ntrace_cpu {
	struct perf_event *event;	/* running here */
	struct hrtimer timer;
	u64 started_ns;
	u64 last_tick_ns;	/* 0: no tick since the event started */
};

static DEFINE_PER_CPU(struct ntrace_cpu, ntrace_cpu);

/* One session owns the sink at a time; the lock orders all sink access. */
static DEFINE_RAW_SPINLOCK(ntrace_lock);
static struct {
	pid_t owner;		/* tgid of the perf process, 0: free */
	unsigned int events;	/* its events alive */
	unsigned int running;	/* its encoders enabled */
	bool path_on;
	size_t size;		/* sink bytes in use */
	size_t copied_to;	/* copy mode: sink bytes already drained */
	u64 drained_ns;		/* when the sink was last drained */
	bool loss_pending;	/* bytes dropped with no AUX record to say so */
	u64 period_ns;		/* of the drain timers */
	/*
	 * Direct mode: the sink writes into the AUX pages of the session's
	 * only event, the window [win, win + win_len) at the handle's head,
	 * the handle held while it does.
	 */
	bool direct;
	struct perf_output_handle dh;
	u64 win;
	size_t win_len;
} sess;

/*
 * What the drain timers measured since the module loaded, for every
 * session to plan with: the trace rate and the timer's lateness belong
 * to the machine more than to one session. A session's own first ticks
 * can catch its workload in page faults, a few percent of the rate it
 * then computes at (a window planned on that filled), and a timer fired
 * up to 0.45 s late on the emulated board with the debug kernel.
 */
static struct {
	/*
	 * The most bytes the sink took in PERIOD_MIN_NS, measured over
	 * spans of at least that: the drains are planned for a burst at
	 * this rate, whatever the last period brought.
	 */
	u64 burst;
	u64 late_ns;		/* the latest a drain timer fired */
} pace;

/* Since the module loaded, for the stats directory. */
static struct {
	u64 drains, rewinds, bytes, drain_ns;
	u64 sink_full, overflows, dropped;
	u64 late_fills;		/* of sink_full: the drain came too late */
	u64 trace_ns;		/* encoders enabled, summed over harts */
	u64 direct_bytes;	/* written by the sink into AUX pages */
	u64 direct_padded;	/* AUX bytes skipped at the ends of runs */
	u64 max_fill;		/* most bytes the sink held at a drain */
	u64 max_period_ns;	/* longest drain timer period */
	u64 max_gap_ns;		/* longest time between two timer drains */
	u64 switch_drains;	/* drains at a context switch */
} stats;

static struct pmu ntrace_pmu;
/* every encoder has HTM: the default mode */
static bool ntrace_all_htm;

/* ---- sink size: a module parameter, checked ------------------------- */

static unsigned int sink_size;

static int sink_size_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int ret = kstrtouint(val, 0, &v);

	if (ret)
		return ret;
	/* 0: all of the sink's memory */
	if (v && (v < SZ_4K || !is_power_of_2(v)))
		return -EINVAL;
	return param_set_uint(val, kp);
}

static const struct kernel_param_ops sink_size_ops = {
	.set = sink_size_set,
	.get = param_get_uint,
};
module_param_cb(sink_size, &sink_size_ops, &sink_size, 0644);
MODULE_PARM_DESC(sink_size,
		 "Bytes of the sink's memory a session uses: 0 (all) or a power of two >= 4096");

static bool direct = true;
module_param(direct, bool, 0644);
MODULE_PARM_DESC(direct,
		 "Let a sink that writes system memory write straight into the AUX buffer (default on)");

/* ---- copying into the AUX buffer ------------------------------------ */

static void aux_put(struct ntrace_aux *aux, unsigned long head, const u8 *src,
		    size_t len)
{
	while (len) {
		size_t off = head % aux->size;
		size_t n = min(len, aux->size - off);

		memcpy(aux->base + off, src, n);
		head += n;
		src += n;
		len -= n;
	}
}

struct drain_out {
	struct perf_output_handle h;
	struct ntrace_aux *aux;
	size_t copied;
	size_t dropped;
};

/* Sink bytes [from, from + len) to the AUX buffer, or dropped. */
static void drain_bytes(struct drain_out *o, const u8 *from, size_t len)
{
	struct ntrace_aux *aux = o->aux;
	size_t n;

	if (!aux) {
		o->dropped += len;
		return;
	}
	if (aux->snapshot) {
		/* overwrite mode keeps the newest: skip what would be overwritten */
		if (len > aux->size) {
			o->h.head += len - aux->size;
			o->copied += len - aux->size;
			from += len - aux->size;
			len = aux->size;
		}
		aux_put(aux, o->h.head, from, len);
		o->h.head += len;
		o->copied += len;
		return;
	}
	n = min(len, o->h.size - o->copied);
	aux_put(aux, o->h.head + o->copied, from, n);
	o->copied += n;
	if (n < len) {
		o->dropped += len - n;
		perf_aux_output_flag(&o->h, PERF_AUX_FLAG_TRUNCATED);
	}
}

static bool encoders_overflowed(void)
{
	struct ntrace_encoder *te;
	bool lost = false;

	lockdep_assert_held(&ntrace_lock);
	list_for_each_entry(te, &ntrace_dev.encoders, node) {
		if (!te->enabled ||
		    !(readl(te->base + TR_CONTROL) & TE_OVERFLOW))
			continue;
		/* RW1C, written with the control it runs with */
		writel(te->control | TE_OVERFLOW, te->base + TR_CONTROL);
		stats.overflows++;
		lost = true;
	}
	return lost;
}

/*
 * Disabling the sink, to rewind it or move its window, refuses what an
 * encoder sends meanwhile, and the encoder reports that as an overflow.
 * The draining hart's own encoder is paused instead (a stop, which
 * flushes it into the sink, then a restart with a sync): its hart runs
 * the driver meanwhile, so the pause costs only the driver's own
 * instructions. Other harts' encoders are never paused: their harts go
 * on running, untraced, and nothing would say so.
 */
static struct ntrace_encoder *pause_own_encoder(void)
{
	struct ntrace_encoder *te = ntrace_dev.cpu_encoder[smp_processor_id()];

	if (!te || !te->enabled)
		return NULL;
	ntrace_encoder_stop(te);
	return te;
}

static void resume_own_encoder(struct ntrace_encoder *te)
{
	if (te && ntrace_encoder_restart(te))
		sess.running--;
}

/*
 * The longest physically contiguous run of AUX pages from byte offset
 * off, at most max bytes: where the sink may write.
 */
static size_t aux_contiguous(struct ntrace_aux *aux, size_t off, size_t max)
{
	size_t page = off / PAGE_SIZE, len;
	phys_addr_t next;

	len = min(max, PAGE_SIZE - off % PAGE_SIZE);
	next = page_to_phys(aux->pg[page]) + PAGE_SIZE;
	while (len < max && ++page < aux->size / PAGE_SIZE &&
	       page_to_phys(aux->pg[page]) == next) {
		len = min(max, len + PAGE_SIZE);
		next += PAGE_SIZE;
	}
	return len;
}

/*
 * The least room a direct window must have: what the sink takes at the
 * burst rate in eight of the drain timer's shortest periods (its margin,
 * plan_drains()) and in twice the longest the timer was ever late. A
 * direct window has no sink memory behind it to absorb a late drain,
 * as copying has. Before a tick has measured any rate, a run long
 * enough for 1 ms at 256 MB/s. But copying is the fallback only because
 * the sink's memory has more room, half of it at least after a drain: a
 * small sink_size has less, and a window as long as that is no worse.
 */
static u64 direct_margin(void)
{
	u64 margin = SZ_256K;

	if (pace.burst)
		margin = max_t(u64, SZ_4K,
			       div64_u64(pace.burst * (8 * PERIOD_MIN_NS +
						       2 * pace.late_ns),
					 PERIOD_MIN_NS));
	return min_t(u64, margin, sess.size / 2);
}

/*
 * Point the disabled sink at the free AUX space at the handle's head.
 * False, with no handle held, when there is no room or the sink does not
 * take the window: the caller falls back to copying.
 */
static bool direct_arm(struct perf_event *event)
{
	struct ntrace_sink *sink = ntrace_dev.sink;
	struct ntrace_aux *aux;
	size_t off, len, need;

	aux = perf_aux_output_begin(&sess.dh, event);
	if (!aux)
		return false;
	off = sess.dh.head % aux->size;
	len = aux_contiguous(aux, off, sess.dh.size) & ~(size_t)3;
	need = direct_margin();
	/*
	 * Each drain takes what the last period brought off the window's
	 * start, so near the end of a contiguous run the window ends up
	 * shorter than a period's trace, and fills before the next drain
	 * (trace lost at the end of perf's 4 MiB chunks). Once the rest of
	 * a run is shorter than the timer's margin, pad it with idle bytes
	 * (0xff, N-Trace 1.0 idle) and start at the next run. A window that
	 * is all the free space is taken as it is: it filling means the AUX
	 * buffer is full.
	 */
	if (!aux->snapshot && len < need && len < sess.dh.size) {
		size_t next = aux_contiguous(aux, (off + len) % aux->size,
					     sess.dh.size - len) & ~(size_t)3;

		/*
		 * Each run costs up to need bytes of padding at its end: take
		 * the next one only if trace fills three quarters of it at
		 * least. Shorter runs, copying through the sink's memory.
		 */
		if (next < 4 * need && next < sess.dh.size - len)
			goto refuse;
		memset(aux->base + off, 0xff, len);
		if (perf_aux_output_skip(&sess.dh, len))
			goto refuse;
		stats.direct_padded += len;
		off = sess.dh.head % aux->size;
		len = next;
	}
	if (aux->snapshot || len < 64 ||
	    ntrace_sink_window(sink, page_to_phys(aux->pg[off / PAGE_SIZE]) +
			       off % PAGE_SIZE, len))
		goto refuse;
	sess.win = page_to_phys(aux->pg[off / PAGE_SIZE]) + off % PAGE_SIZE;
	sess.win_len = len;
	return true;

refuse:
	perf_aux_output_end(&sess.dh, 0);
	return false;
}

/* Back to copying through the sink's own memory. */
static void direct_off(void)
{
	struct ntrace_sink *sink = ntrace_dev.sink;

	sess.direct = false;
	sess.copied_to = 0;
	ntrace_sink_flush(sink);
	if (ntrace_sink_window(sink, sink->mem, sess.size))
		sess.path_on = false;
}

/*
 * Was a fill the drain's lateness rather than the plan's? The room the
 * last drain left (the window, or the sink's memory above what it
 * copied) lasts room / burst at the fastest rate seen, and the drains
 * are planned to come eight times sooner (plan_drains()), but never
 * sooner than PERIOD_MIN_NS. One that comes after the room ran out, and
 * a period or more after it was due, met a timer that fired late (up to
 * 0.8 s on the emulated board under a loaded host, stats/max_late_ns),
 * which only a bigger sink absorbs. A fill found in time means the rate
 * outran the plan.
 */
static bool fill_was_late(void)
{
	u64 room = sess.direct ? sess.win_len : sess.size - sess.copied_to;
	u64 since = ktime_get_ns() - sess.drained_ns;

	return pace.burst && since > 2 * sess.period_ns &&
	       since > div64_u64(room * PERIOD_MIN_NS, pace.burst);
}

/*
 * Stop the sink with everything written: *wp is where it stopped,
 * *filled whether it filled (then it stopped itself: StopOnWrap).
 */
static void drain_stop_sink(u64 *wp, bool *filled)
{
	struct ntrace_sink *sink = ntrace_dev.sink;
	bool wrapped;

	*filled = !ntrace_sink_running(sink);
	if (!*filled)
		ntrace_sink_flush(sink);
	*wp = ntrace_sink_wp(sink, &wrapped);
	*filled |= wrapped;
	stats.sink_full += *filled;
	stats.late_fills += *filled && fill_was_late();
}

/*
 * Direct mode's drain: hand what the sink wrote to perf and, if the
 * event goes on, point the sink at the next free space. Returns the
 * bytes written, *room the space the sink has from now on: the next
 * window, which can be far smaller than the last one where the free AUX
 * space wraps.
 */
static u64 direct_drain(struct perf_event *event, bool going_on, u64 *room)
{
	bool lost = encoders_overflowed() || sess.loss_pending, filled;
	struct ntrace_encoder *own = pause_own_encoder();
	size_t written;
	u64 wp;

	drain_stop_sink(&wp, &filled);
	lost |= filled;
	written = filled ? sess.win_len : wp - sess.win;
	stats.direct_bytes += written;
	stats.bytes += written;
	/* a full window that was all the free space: the AUX buffer is full */
	if (filled && sess.win_len >= sess.dh.size)
		perf_aux_output_flag(&sess.dh, PERF_AUX_FLAG_TRUNCATED);
	else if (lost)
		perf_aux_output_flag(&sess.dh, PERF_AUX_FLAG_PARTIAL);
	perf_aux_output_end(&sess.dh, written);
	sess.loss_pending = false;
	if (!going_on || !direct_arm(event))
		direct_off();
	*room = sess.direct ? sess.win_len : sess.size;
	stats.max_fill = max_t(u64, stats.max_fill, written);
	stats.rewinds++;
	resume_own_encoder(own);
	return written;
}

/* Sink bytes [sess.copied_to, to) into the AUX buffer. */
static void copy_upto(struct drain_out *o, size_t to)
{
	/* a write pointer outside the buffer must not take the copy past it */
	to = min(to, sess.size);
	if (to <= sess.copied_to)
		return;
	drain_bytes(o, ntrace_dev.sink->buf + sess.copied_to,
		    to - sess.copied_to);
	sess.copied_to = to;
}

/*
 * Copy mode's drain. What a running sink wrote below its write pointer
 * is final, and an SMEM sink's memory may be read while it runs (TCI
 * 1.0, "Accessing and Detecting RAM Sink Registers": only the last word
 * may still be held inside), so it is copied while the sink runs and
 * every other hart goes on tracing; a message cut there continues in the
 * next drain's bytes. The sink is stopped and rewound only when no
 * encoder runs, when it filled, or when it is half full. In the last
 * case the other harts' encoders keep running: what one sends in the few
 * register writes the sink is off for is refused, and the encoder
 * reports the overflow and resynchronises.
 * Returns the bytes drained, *room the space the sink has until it stops.
 */
static u64 copy_drain(struct perf_event *event, u64 *room)
{
	struct ntrace_sink *sink = ntrace_dev.sink;
	size_t from = sess.copied_to;
	struct ntrace_encoder *own;
	struct drain_out o = { };
	bool lost = encoders_overflowed() || sess.loss_pending, filled;
	u64 wp;

	o.aux = perf_aux_output_begin(&o.h, event);
	if (ntrace_sink_running(sink)) {
		wp = ntrace_sink_wp(sink, &filled);
		/* a wrapped WP is back at the start: the sink just filled */
		if (!filled) {
			copy_upto(&o, wp - sink->mem);
			if (sess.running && sess.copied_to < sess.size / 2)
				goto out;
		}
	}
	own = pause_own_encoder();
	/* the rest of it, which the sink held inside until stopped */
	drain_stop_sink(&wp, &filled);
	lost |= filled;
	copy_upto(&o, filled ? sess.size : wp - sink->mem);
	ntrace_sink_rewind(sink);
	sess.copied_to = 0;
	stats.rewinds++;
	resume_own_encoder(own);
out:
	*room = sess.size - sess.copied_to;
	stats.bytes += o.copied;
	stats.dropped += o.dropped;
	if (o.aux) {
		if (lost)
			perf_aux_output_flag(&o.h, PERF_AUX_FLAG_PARTIAL);
		perf_aux_output_end(&o.h, o.copied);
		sess.loss_pending = false;
	} else if (o.dropped || lost) {
		/* the next record that reaches perf carries the news */
		sess.loss_pending = true;
	}
	stats.max_fill = max_t(u64, stats.max_fill, from + o.copied + o.dropped);
	return o.copied + o.dropped;
}

/*
 * Move what the sink wrote since the last drain into event's AUX
 * buffer. Returns those bytes, *room the space the sink has until it
 * stops (0, 0: nothing to drain).
 */
static u64 ntrace_drain(struct perf_event *event, bool going_on, u64 *room)
{
	u64 t0 = ktime_get_ns(), drained;

	lockdep_assert_held(&ntrace_lock);
	*room = 0;
	if (!sess.path_on)
		return 0;
	drained = sess.direct ? direct_drain(event, going_on, room) :
				copy_drain(event, room);
	sess.drained_ns = ktime_get_ns();
	stats.drains++;
	stats.drain_ns += sess.drained_ns - t0;
	return drained;
}

/* ---- the per-hart drain timer --------------------------------------- */

/*
 * The drain timers' period, for room bytes the sink has left after a
 * drain that found used bytes written in since ns (0, 0: a new window,
 * nothing measured); a measure also updates pace.burst. Drain again
 * when the room would be an eighth full at the rate it filled since the
 * last drain, or at the fastest rate it has filled at: the rate may grow
 * eightfold between ticks before any trace is lost. The period may
 * shrink at once but only grow by half per tick: a quiet phase must not
 * leave a burst undrained.
 */
static void plan_drains(u64 room, u64 used, u64 since)
{
	u64 p = sess.period_ns;

	if (used && since >= PERIOD_MIN_NS)
		pace.burst = max(pace.burst,
				 div64_u64(used * PERIOD_MIN_NS, since));
	if (used && since)
		p = min(div64_u64((room / 8) * since, used), p + p / 2);
	if (pace.burst)
		p = min(p, div64_u64((room / 8) * PERIOD_MIN_NS, pace.burst));
	sess.period_ns = clamp_t(u64, p, PERIOD_MIN_NS, PERIOD_MAX_NS);
}

static enum hrtimer_restart ntrace_timer_fn(struct hrtimer *t)
{
	struct ntrace_cpu *nc = container_of(t, struct ntrace_cpu, timer);
	struct ntrace_encoder *te = ntrace_dev.cpu_encoder[smp_processor_id()];
	u64 now = ktime_get_ns(), used, since, period, room;
	s64 late = now - ktime_to_ns(hrtimer_get_expires(t));
	unsigned long flags;

	if (!nc->event || !te)
		return HRTIMER_NORESTART;
	raw_spin_lock_irqsave(&ntrace_lock, flags);
	if (late > 0)
		pace.late_ns = max_t(u64, pace.late_ns, late);
	if (nc->last_tick_ns)
		stats.max_gap_ns = max(stats.max_gap_ns, now - nc->last_tick_ns);
	nc->last_tick_ns = now;
	/* what the drain finds was written since the last one, by any hart */
	since = now - sess.drained_ns;
	used = ntrace_drain(nc->event, te->enabled, &room);
	plan_drains(room, used, since);
	period = sess.period_ns;
	stats.max_period_ns = max(stats.max_period_ns, period);
	raw_spin_unlock_irqrestore(&ntrace_lock, flags);
	hrtimer_forward_now(t, ns_to_ktime(period));
	return HRTIMER_RESTART;
}

/* ---- the PMU -------------------------------------------------------- */

static u32 event_control(struct perf_event *event, bool *htm)
{
	u64 cfg = event->attr.config;
	u32 mode;

	switch (FIELD_GET(CFG_MODE, cfg)) {
	case 1:
		mode = TE_MODE_BTM;
		break;
	case 2:
		mode = TE_MODE_HTM;
		break;
	default:
		mode = ntrace_all_htm ? TE_MODE_HTM : TE_MODE_BTM;
		break;
	}
	*htm = mode == TE_MODE_HTM;
	return FIELD_PREP(TE_INST_MODE, mode) |
	       FIELD_PREP(TE_SYNC_MODE, FIELD_GET(CFG_SYNCMODE, cfg)) |
	       FIELD_PREP(TE_SYNC_MAX, FIELD_GET(CFG_SYNCMAX, cfg)) |
	       (cfg & CFG_CONTEXT ? TE_CONTEXT : 0);
}

static u32 event_features(struct perf_event *event, int cpu)
{
	u64 cfg = event->attr.config;
	u32 f = 0;

	if (FIELD_GET(CFG_IR, cfg))
		f |= TE_IMPL_RET | FIELD_PREP(TE_IR_MODE, FIELD_GET(CFG_IR, cfg));
	if (cfg & CFG_RH)
		f |= TE_REP_HIST;
	if (cfg & CFG_SEQJUMP)
		f |= TE_SEQ_JUMP;
	if (cfg & CFG_ALLJUMPS)
		f |= TE_ALL_JUMPS;
	if (cfg & CFG_EXTMSB)
		f |= TE_EXT_MSB;
	if (ntrace_dev.src_bits)
		f |= FIELD_PREP(TE_SRC_BITS, ntrace_dev.src_bits) |
		     FIELD_PREP(TE_SRC_ID, cpu);
	return f;
}

static u8 event_priv(struct perf_event *event)
{
	/* bit n traces privilege level n: U is 0, S is 1; M never */
	return (event->attr.exclude_user ? 0 : BIT(0)) |
	       (event->attr.exclude_kernel ? 0 : BIT(1));
}

/*
 * Every encoder must take the configuration: a per-task event can run
 * on any of them.
 */
static int check_config(struct perf_event *event)
{
	struct perf_event_attr *attr = &event->attr;
	u64 cfg = attr->config;
	struct ntrace_encoder *te;
	bool htm;

	if ((cfg & ~CFG_ALL) || attr->config1 || attr->config2 ||
	    FIELD_GET(CFG_MODE, cfg) == 3)
		return -EINVAL;
	if (attr->exclude_user && attr->exclude_kernel)
		return -EINVAL;
	event_control(event, &htm);
	if ((cfg & CFG_RH) && !htm)
		return -EINVAL;		/* repeated history is HTM's */
	list_for_each_entry(te, &ntrace_dev.encoders, node) {
		const struct ntrace_te_caps *c = &te->caps;

		if ((FIELD_GET(CFG_MODE, cfg) == 1 && !c->btm) ||
		    (FIELD_GET(CFG_MODE, cfg) == 2 && !c->htm) ||
		    (FIELD_GET(CFG_IR, cfg) &&
		     !(c->ir_modes & BIT(FIELD_GET(CFG_IR, cfg)))) ||
		    ((cfg & CFG_RH) && !c->rep_hist) ||
		    ((cfg & CFG_SEQJUMP) && !c->seq_jump) ||
		    ((cfg & CFG_ALLJUMPS) && !c->all_jumps) ||
		    ((cfg & CFG_EXTMSB) && !c->ext_msb) ||
		    !(c->sync_modes & BIT(FIELD_GET(CFG_SYNCMODE, cfg))) ||
		    ((cfg & CFG_TS) && !c->timestamp) ||
		    ((cfg & CFG_CONTEXT) && !c->context) ||
		    /* without a privilege filter M-mode would be traced */
		    !c->filter_priv)
			return -EOPNOTSUPP;
	}
	return 0;
}

static void ntrace_event_destroy(struct perf_event *event)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ntrace_lock, flags);
	if (!--sess.events) {
		if (sess.path_on)
			ntrace_path_disable(ntrace_dev.sink);
		sess.path_on = false;
		sess.owner = 0;
	}
	raw_spin_unlock_irqrestore(&ntrace_lock, flags);
}

static int ntrace_event_init(struct perf_event *event)
{
	unsigned long flags;
	pid_t owner;
	int ret;

	if (event->attr.type != ntrace_pmu.type)
		return -ENOENT;
	if (event->cpu >= 0 && !cpumask_test_cpu(event->cpu, &ntrace_dev.cpus))
		return -ENODEV;
	ret = check_config(event);
	if (ret)
		return ret;
	/* inherited events belong to the session of the event they came from */
	owner = event->parent ? (pid_t)event->parent->hw.config :
				task_tgid_nr(current);

	raw_spin_lock_irqsave(&ntrace_lock, flags);
	if (sess.owner && sess.owner != owner) {
		raw_spin_unlock_irqrestore(&ntrace_lock, flags);
		return -EBUSY;
	}
	if (!sess.owner) {
		size_t size = ntrace_dev.sink->mem_size;

		if (sink_size && sink_size < size)
			size = sink_size;
		sess.owner = owner;
		sess.size = size & ~(size_t)3;
		sess.running = 0;
		sess.loss_pending = false;
	}
	sess.events++;
	raw_spin_unlock_irqrestore(&ntrace_lock, flags);
	event->hw.config = owner;
	event->destroy = ntrace_event_destroy;
	return 0;
}

static void ntrace_event_start(struct perf_event *event, int flags)
{
	int cpu = smp_processor_id();
	struct ntrace_encoder *te = ntrace_dev.cpu_encoder[cpu];
	struct ntrace_cpu *nc = this_cpu_ptr(&ntrace_cpu);
	unsigned long irqflags;
	u32 control;
	bool htm;
	int ret;

	if (!te)
		return;
	control = event_control(event, &htm);
	raw_spin_lock_irqsave(&ntrace_lock, irqflags);
	/*
	 * The session's first start sets the sink up: an open that perf
	 * refuses after event_init (a per-CPU event without the right
	 * paranoia, say) never touches the hardware.
	 */
	if (!sess.path_on) {
		ret = ntrace_path_enable(ntrace_dev.sink, sess.size);
		sess.path_on = !ret;
		sess.copied_to = 0;
		sess.drained_ns = ktime_get_ns();
		/* the rate is not known yet: start fast, the timer adapts */
		sess.period_ns = PERIOD_MIN_NS;
	}
	/*
	 * Another event of the session starting would have its trace
	 * written into the direct event's window: back to copying first.
	 */
	if (sess.direct && sess.dh.event != event) {
		u64 room;

		ntrace_drain(event, false, &room);
	}
	/*
	 * A session of one event, with no other encoder running, may have
	 * the sink write straight into its AUX pages.
	 */
	if (sess.path_on && !sess.direct && direct && sess.events == 1 &&
	    !sess.running) {
		ntrace_sink_flush(ntrace_dev.sink);
		sess.direct = direct_arm(event);
		if (sess.direct) {
			sess.drained_ns = ktime_get_ns();
			/* the period was planned for other room than this */
			plan_drains(sess.win_len, 0, 0);
		} else {
			direct_off();
		}
	}
	/*
	 * Nothing runs, so the sink was rewound when the last encoder
	 * stopped: its fill rate counts from now, not from then (a task
	 * that sleeps would otherwise look slow, and the timer wait long).
	 */
	if (!sess.running)
		sess.drained_ns = ktime_get_ns();
	ret = sess.path_on ?
	      ntrace_encoder_start(te, control, event_features(event, cpu),
				   event_priv(event),
				   event->attr.config & CFG_TS) : -EIO;
	if (!ret)
		sess.running++;
	nc->started_ns = ktime_get_ns();
	nc->last_tick_ns = 0;
	raw_spin_unlock_irqrestore(&ntrace_lock, irqflags);
	if (ret) {
		event->hw.state = PERF_HES_STOPPED;
		return;
	}
	event->hw.state = 0;
	hrtimer_start(&nc->timer, ns_to_ktime(READ_ONCE(sess.period_ns)),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

static void ntrace_event_stop(struct perf_event *event, int flags)
{
	struct ntrace_encoder *te = ntrace_dev.cpu_encoder[smp_processor_id()];
	struct ntrace_cpu *nc = this_cpu_ptr(&ntrace_cpu);
	unsigned long irqflags;
	u64 room;

	if (event->hw.state & PERF_HES_STOPPED)
		return;
	/* pinned to this hart, whose interrupts are off: it is not running */
	hrtimer_try_to_cancel(&nc->timer);
	raw_spin_lock_irqsave(&ntrace_lock, irqflags);
	if (te && te->enabled) {
		ntrace_encoder_stop(te);
		sess.running--;
	}
	stats.trace_ns += ktime_get_ns() - nc->started_ns;
	ntrace_drain(event, false, &room);
	raw_spin_unlock_irqrestore(&ntrace_lock, irqflags);
	event->hw.state = PERF_HES_STOPPED | PERF_HES_UPTODATE;
}

/*
 * Drains at context switches. perf switches two tasks whose contexts are
 * clones (a parent and the child it forked, with inherited events)
 * without stopping their events, so nothing drains between them, and
 * the PERF_RECORD_AUX that brings both tasks' bytes names the one task
 * current at the drain. Untimed, nothing else tells their bytes apart
 * (same code, no process ID in the trace). So an untimed per-task event
 * asks for a callback at every switch of its hart (perf_sched_cb_inc()),
 * and the sink is drained there while the task going out is still
 * current: each record then holds the bytes of the task it names. With
 * ts=1 perf places each message by its time, and per CPU it places
 * tasks by the switch events, not by the records' tasks: neither pays
 * for a drain per switch.
 *
 * perf_sched_cb_inc() is not exported by mainline; the lab's kernels
 * export it (patches/linux-*), and the Kbuild file defines
 * HAVE_PERF_SCHED_CB where the kernel's Module.symvers has it.
 */
#ifdef HAVE_PERF_SCHED_CB
static void ntrace_sched_task(struct perf_event_pmu_context *pmu_ctx,
			      struct task_struct *task, bool sched_in)
{
	struct ntrace_encoder *te = ntrace_dev.cpu_encoder[smp_processor_id()];
	struct ntrace_cpu *nc = this_cpu_ptr(&ntrace_cpu);
	unsigned long flags;
	u64 room;

	if (sched_in || !nc->event || !te ||
	    (nc->event->hw.state & PERF_HES_STOPPED))
		return;
	raw_spin_lock_irqsave(&ntrace_lock, flags);
	if (ntrace_drain(nc->event, te->enabled, &room))
		stats.switch_drains++;
	raw_spin_unlock_irqrestore(&ntrace_lock, flags);
}

#ifdef HAVE_PMU_SCHED_TASK_NO_TASK
/* before 6.15 (6.12.117 in the 6.12 series), without the task */
static void ntrace_sched_task_hook(struct perf_event_pmu_context *pmu_ctx,
				   bool sched_in)
{
	ntrace_sched_task(pmu_ctx, current, sched_in);
}
#else
#define ntrace_sched_task_hook ntrace_sched_task
#endif

/* fixed for the event's life, so that put() undoes what get() did */
static bool wants_switch_drains(struct perf_event *event)
{
	return (event->attach_state & PERF_ATTACH_TASK) &&
	       !(event->attr.config & CFG_TS);
}

static void switch_drains_get(struct perf_event *event)
{
	if (wants_switch_drains(event))
		perf_sched_cb_inc(event->pmu);
}

static void switch_drains_put(struct perf_event *event)
{
	if (wants_switch_drains(event))
		perf_sched_cb_dec(event->pmu);
}
#else
#define ntrace_sched_task_hook NULL
static void switch_drains_get(struct perf_event *event) { }
static void switch_drains_put(struct perf_event *event) { }
#endif

static int ntrace_event_add(struct perf_event *event, int flags)
{
	struct ntrace_cpu *nc = this_cpu_ptr(&ntrace_cpu);

	if (!ntrace_dev.cpu_encoder[smp_processor_id()])
		return -ENODEV;
	if (nc->event)
		return -EBUSY;
	nc->event = event;
	event->hw.state = PERF_HES_STOPPED;
	if (flags & PERF_EF_START) {
		ntrace_event_start(event, 0);
		if (event->hw.state & PERF_HES_STOPPED) {
			nc->event = NULL;
			return -EIO;
		}
	}
	switch_drains_get(event);
	return 0;
}

static void ntrace_event_del(struct perf_event *event, int flags)
{
	switch_drains_put(event);
	ntrace_event_stop(event, PERF_EF_UPDATE);
	this_cpu_ptr(&ntrace_cpu)->event = NULL;
}

static void ntrace_event_read(struct perf_event *event)
{
	/* trace has no count: the data is in the AUX buffer */
}

static void *ntrace_setup_aux(struct perf_event *event, void **pages,
			      int nr_pages, bool overwrite)
{
	struct ntrace_aux *aux;
	int i;

	if (nr_pages < 1)
		return NULL;
	aux = kzalloc(struct_size(aux, pg, nr_pages), GFP_KERNEL);
	if (!aux)
		return NULL;
	for (i = 0; i < nr_pages; i++)
		aux->pg[i] = virt_to_page(pages[i]);
	aux->base = vmap(aux->pg, nr_pages, VM_MAP, PAGE_KERNEL);
	if (!aux->base) {
		kfree(aux);
		return NULL;
	}
	aux->size = (size_t)nr_pages * PAGE_SIZE;
	aux->snapshot = overwrite;
	return aux;
}

static void ntrace_free_aux(void *data)
{
	struct ntrace_aux *aux = data;

	vunmap(aux->base);
	kfree(aux);
}

/* ---- sysfs: format, caps, cpumask ----------------------------------- */

PMU_FORMAT_ATTR(mode, "config:0-1");
PMU_FORMAT_ATTR(ir, "config:2-3");
PMU_FORMAT_ATTR(rh, "config:4");
PMU_FORMAT_ATTR(seqjump, "config:5");
PMU_FORMAT_ATTR(alljumps, "config:6");
PMU_FORMAT_ATTR(extmsb, "config:7");
PMU_FORMAT_ATTR(syncmode, "config:8-9");
PMU_FORMAT_ATTR(syncmax, "config:10-13");
PMU_FORMAT_ATTR(ts, "config:14");
PMU_FORMAT_ATTR(context, "config:15");

static struct attribute *ntrace_format_attrs[] = {
	&format_attr_mode.attr, &format_attr_ir.attr, &format_attr_rh.attr,
	&format_attr_seqjump.attr, &format_attr_alljumps.attr,
	&format_attr_extmsb.attr, &format_attr_syncmode.attr,
	&format_attr_syncmax.attr, &format_attr_ts.attr,
	&format_attr_context.attr, NULL,
};

static const struct attribute_group ntrace_format_group = {
	.name = "format",
	.attrs = ntrace_format_attrs,
};

/*
 * Caps are what every encoder has (a per-task event may run on any of
 * them), and the sink's.
 */
enum cap_id {
	CAP_BTM, CAP_HTM, CAP_IR_MODES, CAP_RH, CAP_SEQJUMP, CAP_ALLJUMPS,
	CAP_EXTMSB, CAP_SYNC_MODES, CAP_TS, CAP_TS_WIDTH, CAP_TS_TIME,
	CAP_CONTEXT,
	CAP_FILTERS, CAP_SRC_BITS, CAP_ENCODERS, CAP_FUNNEL, CAP_SINK_SIZE,
};

static unsigned long cap_value(enum cap_id id)
{
	struct ntrace_encoder *te;
	unsigned long v = ~0UL;

	if (id == CAP_ENCODERS)
		return cpumask_weight(&ntrace_dev.cpus);
	if (id == CAP_FUNNEL)
		return !!ntrace_dev.sink->funnel;
	if (id == CAP_SINK_SIZE)
		return ntrace_dev.sink->mem_size;
	if (id == CAP_SRC_BITS)
		return ntrace_dev.src_bits;
	list_for_each_entry(te, &ntrace_dev.encoders, node) {
		const struct ntrace_te_caps *c = &te->caps;
		unsigned long x[] = {
			[CAP_BTM] = c->btm, [CAP_HTM] = c->htm,
			[CAP_IR_MODES] = c->ir_modes, [CAP_RH] = c->rep_hist,
			[CAP_SEQJUMP] = c->seq_jump,
			[CAP_ALLJUMPS] = c->all_jumps,
			[CAP_EXTMSB] = c->ext_msb,
			[CAP_SYNC_MODES] = c->sync_modes,
			[CAP_TS] = c->timestamp, [CAP_TS_WIDTH] = c->ts_width,
			[CAP_TS_TIME] = c->timestamp && c->ts_time,
			[CAP_CONTEXT] = c->context, [CAP_FILTERS] = c->filters,
		};

		/* bitmaps and flags: what all have; numbers: the least */
		v = (id == CAP_TS_WIDTH || id == CAP_FILTERS) ?
		    min(v, x[id]) : v & x[id];
	}
	return v;
}

struct cap_attr {
	struct device_attribute attr;
	enum cap_id id;
	bool hex;
};

static ssize_t cap_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	struct cap_attr *ca = container_of(attr, struct cap_attr, attr);

	return sysfs_emit(buf, ca->hex ? "0x%lx\n" : "%lu\n", cap_value(ca->id));
}

#define CAP(_name, _id, _hex)						\
	static struct cap_attr cap_##_name = {				\
		.attr = __ATTR(_name, 0444, cap_show, NULL),		\
		.id = _id, .hex = _hex,					\
	}

CAP(btm, CAP_BTM, false);
CAP(htm, CAP_HTM, false);
CAP(ir_modes, CAP_IR_MODES, true);
CAP(rh, CAP_RH, false);
CAP(seqjump, CAP_SEQJUMP, false);
CAP(alljumps, CAP_ALLJUMPS, false);
CAP(extmsb, CAP_EXTMSB, false);
CAP(sync_modes, CAP_SYNC_MODES, true);
CAP(ts, CAP_TS, false);
CAP(ts_width, CAP_TS_WIDTH, false);
CAP(ts_time, CAP_TS_TIME, false);
CAP(context, CAP_CONTEXT, false);
CAP(filters, CAP_FILTERS, false);
CAP(src_bits, CAP_SRC_BITS, false);
CAP(encoders, CAP_ENCODERS, false);
CAP(funnel, CAP_FUNNEL, false);
CAP(sink_size, CAP_SINK_SIZE, false);

static struct attribute *ntrace_caps_attrs[] = {
	&cap_btm.attr.attr, &cap_htm.attr.attr, &cap_ir_modes.attr.attr,
	&cap_rh.attr.attr, &cap_seqjump.attr.attr, &cap_alljumps.attr.attr,
	&cap_extmsb.attr.attr, &cap_sync_modes.attr.attr, &cap_ts.attr.attr,
	&cap_ts_width.attr.attr, &cap_ts_time.attr.attr, &cap_context.attr.attr,
	&cap_filters.attr.attr, &cap_src_bits.attr.attr,
	&cap_encoders.attr.attr, &cap_funnel.attr.attr,
	&cap_sink_size.attr.attr, NULL,
};

static const struct attribute_group ntrace_caps_group = {
	.name = "caps",
	.attrs = ntrace_caps_attrs,
};

enum stat_id {
	STAT_DRAINS, STAT_REWINDS, STAT_BYTES, STAT_DRAIN_NS, STAT_SINK_FULL,
	STAT_OVERFLOWS, STAT_DROPPED, STAT_TRACE_NS, STAT_MAX_FILL,
	STAT_MAX_PERIOD_NS, STAT_DIRECT_BYTES, STAT_MAX_GAP_NS,
	STAT_DIRECT_PADDED, STAT_BURST, STAT_MAX_LATE_NS, STAT_SWITCH_DRAINS,
	STAT_LATE_FILLS,
};

struct stat_attr {
	struct device_attribute attr;
	enum stat_id id;
};

static ssize_t stat_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct stat_attr *sa = container_of(attr, struct stat_attr, attr);
	const u64 *v[] = {
		[STAT_DRAINS] = &stats.drains, [STAT_REWINDS] = &stats.rewinds,
		[STAT_BYTES] = &stats.bytes, [STAT_DRAIN_NS] = &stats.drain_ns,
		[STAT_SINK_FULL] = &stats.sink_full,
		[STAT_OVERFLOWS] = &stats.overflows,
		[STAT_DROPPED] = &stats.dropped,
		[STAT_TRACE_NS] = &stats.trace_ns,
		[STAT_MAX_FILL] = &stats.max_fill,
		[STAT_MAX_PERIOD_NS] = &stats.max_period_ns,
		[STAT_DIRECT_BYTES] = &stats.direct_bytes,
		[STAT_MAX_GAP_NS] = &stats.max_gap_ns,
		[STAT_DIRECT_PADDED] = &stats.direct_padded,
		[STAT_BURST] = &pace.burst, [STAT_MAX_LATE_NS] = &pace.late_ns,
		[STAT_SWITCH_DRAINS] = &stats.switch_drains,
		[STAT_LATE_FILLS] = &stats.late_fills,
	};
	unsigned long flags;
	u64 val;

	raw_spin_lock_irqsave(&ntrace_lock, flags);
	val = *v[sa->id];
	raw_spin_unlock_irqrestore(&ntrace_lock, flags);
	return sysfs_emit(buf, "%llu\n", val);
}

#define STAT(_name, _id)						\
	static struct stat_attr stat_##_name = {			\
		.attr = __ATTR(_name, 0444, stat_show, NULL),		\
		.id = _id,						\
	}

STAT(drains, STAT_DRAINS);
STAT(rewinds, STAT_REWINDS);
STAT(bytes, STAT_BYTES);
STAT(drain_ns, STAT_DRAIN_NS);
STAT(sink_full, STAT_SINK_FULL);
STAT(overflows, STAT_OVERFLOWS);
STAT(dropped, STAT_DROPPED);
STAT(trace_ns, STAT_TRACE_NS);
STAT(max_fill, STAT_MAX_FILL);
STAT(max_period_ns, STAT_MAX_PERIOD_NS);
STAT(direct_bytes, STAT_DIRECT_BYTES);
STAT(max_gap_ns, STAT_MAX_GAP_NS);
STAT(direct_padded, STAT_DIRECT_PADDED);
STAT(burst, STAT_BURST);
STAT(max_late_ns, STAT_MAX_LATE_NS);
STAT(switch_drains, STAT_SWITCH_DRAINS);
STAT(late_fills, STAT_LATE_FILLS);

static struct attribute *ntrace_stats_attrs[] = {
	&stat_drains.attr.attr, &stat_rewinds.attr.attr,
	&stat_bytes.attr.attr, &stat_drain_ns.attr.attr,
	&stat_sink_full.attr.attr, &stat_overflows.attr.attr,
	&stat_dropped.attr.attr, &stat_trace_ns.attr.attr,
	&stat_max_fill.attr.attr,
	&stat_max_period_ns.attr.attr, &stat_direct_bytes.attr.attr,
	&stat_max_gap_ns.attr.attr, &stat_direct_padded.attr.attr,
	&stat_burst.attr.attr, &stat_max_late_ns.attr.attr,
	&stat_switch_drains.attr.attr, &stat_late_fills.attr.attr, NULL,
};

static const struct attribute_group ntrace_stats_group = {
	.name = "stats",
	.attrs = ntrace_stats_attrs,
};

static ssize_t cpumask_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%*pbl\n", cpumask_pr_args(&ntrace_dev.cpus));
}
static DEVICE_ATTR_RO(cpumask);

static struct attribute *ntrace_pmu_attrs[] = {
	&dev_attr_cpumask.attr, NULL,
};

static const struct attribute_group ntrace_pmu_group = {
	.attrs = ntrace_pmu_attrs,
};

/*
 * The modes by name: "-e ntrace/btm/" with any perf, and "-e
 * ntrace/mode=btm/" with a perf that takes a term's value by the name
 * of an event setting that term alone (patches/perf). A mode not every
 * encoder has is not shown: event_init() would refuse it.
 */
PMU_EVENT_ATTR_STRING(btm, ntrace_event_btm, "mode=1");
PMU_EVENT_ATTR_STRING(htm, ntrace_event_htm, "mode=2");

static struct attribute *ntrace_events_attrs[] = {
	&ntrace_event_btm.attr.attr, &ntrace_event_htm.attr.attr, NULL,
};

static umode_t ntrace_events_visible(struct kobject *kobj,
				     struct attribute *attr, int i)
{
	enum cap_id id = attr == &ntrace_event_btm.attr.attr ? CAP_BTM : CAP_HTM;

	return cap_value(id) ? attr->mode : 0;
}

static const struct attribute_group ntrace_events_group = {
	.name = "events",
	.attrs = ntrace_events_attrs,
	.is_visible = ntrace_events_visible,
};

static const struct attribute_group *ntrace_attr_groups[] = {
	&ntrace_pmu_group, &ntrace_format_group, &ntrace_events_group,
	&ntrace_caps_group, &ntrace_stats_group, NULL,
};

static struct pmu ntrace_pmu = {
	.module = THIS_MODULE,
	.task_ctx_nr = perf_sw_context,
	/* large AUX chunks: long physically contiguous runs for direct mode */
	.capabilities = PERF_PMU_CAP_EXCLUSIVE | PERF_PMU_CAP_ITRACE |
			PERF_PMU_CAP_AUX_PREFER_LARGE,
	.attr_groups = ntrace_attr_groups,
	.event_init = ntrace_event_init,
	.add = ntrace_event_add,
	.del = ntrace_event_del,
	.start = ntrace_event_start,
	.stop = ntrace_event_stop,
	.read = ntrace_event_read,
	.sched_task = ntrace_sched_task_hook,
	.setup_aux = ntrace_setup_aux,
	.free_aux = ntrace_free_aux,
};

int ntrace_pmu_register(void)
{
	struct ntrace_encoder *te;
	int cpu;

	ntrace_all_htm = true;
	list_for_each_entry(te, &ntrace_dev.encoders, node)
		ntrace_all_htm &= te->caps.htm;
	for_each_possible_cpu(cpu) {
		struct ntrace_cpu *nc = per_cpu_ptr(&ntrace_cpu, cpu);

#ifdef HAVE_HRTIMER_INIT
		hrtimer_init(&nc->timer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL_PINNED_HARD);
		nc->timer.function = ntrace_timer_fn;
#else
		hrtimer_setup(&nc->timer, ntrace_timer_fn, CLOCK_MONOTONIC,
			      HRTIMER_MODE_REL_PINNED_HARD);
#endif
	}
	return perf_pmu_register(&ntrace_pmu, "ntrace", -1);
}

void ntrace_pmu_unregister(void)
{
	perf_pmu_unregister(&ntrace_pmu);
}
