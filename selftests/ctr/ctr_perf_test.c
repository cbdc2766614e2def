// SPDX-License-Identifier: GPL-2.0
/*
 * The user journey with the board's Debian perf: record branch stacks of
 * workload/brwork with perf record -b, then check that perf report
 * --branch-history and perf script -F ip,brstack show its hot branches.
 * The brstack text and the workload are left in $CTR_AUTOFDO_DIR when set
 * (the AutoFDO check runs the host-side tools on them).
 *
 * It runs at the default configuration, as a user would: CTR at its full
 * depth (256 on the lab board), perf's default sample_max_stack. perf's
 * branch history (machine.c, PERF_MAX_BRANCH_DEPTH for remove_loops())
 * skips every stack of more than 127 entries as "corrupted", so the
 * driver must hand perf no more than the event's sample_max_stack, whose
 * default (kernel.perf_event_max_stack) is 127.
 *
 * Then the same with the riscv64 perf of patches/perf, whose 0003 lifts
 * that limit to 1024 entries: with kernel.perf_event_max_stack at the
 * depth, perf report --branch-history must use the whole 256-entry
 * stacks. tools/lab/lab-test puts that perf on the board's share; a run
 * without it skips those tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "../lib/capture.h"
#include "../lib/irq.h"
#include "../lib/sysfs.h"

#define OUT_SIZE (1 << 20)
#define DATA "/tmp/ctr-perf.data"
#define DEPTH_PARAM "/sys/module/riscv_ctr/parameters/depth"
#define PERF_MAX_BRANCH_DEPTH 127
#define OUR_PERF "/mnt/host/perf"
#define DEEP_DATA "/tmp/ctr-perf-deep.data"
#define MAX_STACK "/proc/sys/kernel/perf_event_max_stack"

static const char *workload = "/selftests/workload/brwork";

static int read_depth(void)
{
	FILE *f = fopen(DEPTH_PARAM, "r");
	int d = -1;

	if (f) {
		if (fscanf(f, "%d", &d) != 1)
			d = -1;
		fclose(f);
	}
	return d;
}

static int count_str(const char *text, const char *s)
{
	int n = 0;

	while ((text = strstr(text, s))) {
		n++;
		text += strlen(s);
	}
	return n;
}

/* The largest number of occurrences of s on one line of text. */
static int longest_line(const char *text, const char *s)
{
	int best = 0;

	while (*text) {
		const char *eol = strchr(text, '\n');
		const char *p = text;
		int n = 0;

		if (!eol)
			eol = text + strlen(text);
		while ((p = strstr(p, s)) && p < eol) {
			n++;
			p += strlen(s);
		}
		if (n > best)
			best = n;
		text = *eol ? eol + 1 : eol;
	}
	return best;
}

/* harts whose overflow interrupts a short recording logs */
#define LOGGED_HARTS 4

/*
 * "riscv-pmu interrupts by hart: 10 -> 12, 5 -> 5" for the counts
 * before[] and now, into buf.
 */
static void interrupts_moved(char *buf, size_t len, const long long *before)
{
	size_t at = snprintf(buf, len, "riscv-pmu interrupts by hart:");
	int cpu;

	for (cpu = 0; cpu < LOGGED_HARTS && before[cpu] >= 0 && at < len;
	     cpu++)
		at += snprintf(buf + at, len - at, "%s %lld -> %lld",
			       cpu ? "," : "", before[cpu],
			       pmu_interrupts(cpu));
}

/*
 * perf record -b of brwork into data with the given perf: the number of
 * samples, or -1 when perf record failed (its output is then in *out).
 * The emulated cycle counter overflows irregularly (from a handful to
 * thousands of samples per run, see Documentation/lab.rst): retry, then
 * fall back to instructions, which overflow steadily. 200 samples at
 * least, so that the workload's loops, not its start, show.
 *
 * A recording with fewer logs what perf said and each hart's overflow
 * interrupts.
 *
 * brwork sleeps once before its loops (BRWORK_PAUSE_MS): an event that
 * is started once and never switched out may never overflow under QEMU
 * (Documentation/lab.rst, "Known limits"), which is what brwork alone
 * on a hart of a two-hart board is. There, 8 of 30 recordings without
 * the sleep got no sample and no overflow interrupt, with cycles and
 * instructions alike, and six such tries in a row once failed the
 * journey; none of 30 with it.
 */
static int record_brwork(struct __test_metadata *_metadata, char *perf,
			 char *data, char **out, size_t *size)
{
	/* :u: the workload's own branches, not its exec and page faults */
	char *argv[] = { perf, "record", "-b", "-e", "cycles:u", "-c",
			 "20011", "-o", data, "--", (char *)workload,
			 "1000000", NULL };
	char *rep[] = { perf, "report", "-i", data, "--stats", NULL };
	long long irq[LOGGED_HARTS];
	int try, cpu, status, samples = 0;
	char said[512];

	if (setenv("BRWORK_PAUSE_MS", "50", 1)) {
		TH_LOG("setenv: %s", strerror(errno));
		return -1;
	}
	for (try = 0; try < 6 && samples < 200; try++) {
		const char *p;
		size_t len;

		if (try == 3)
			argv[4] = "instructions:u";
		for (cpu = 0; cpu < LOGGED_HARTS; cpu++)
			irq[cpu] = pmu_interrupts(cpu);
		status = run_capture(argv, out, size);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			TH_LOG("%s record: wait status %#x", perf, status);
			return -1;
		}
		/* its last lines, for a recording with too few samples */
		len = strlen(*out);
		p = len < sizeof(said) ? *out : *out + len - sizeof(said) + 1;
		snprintf(said, sizeof(said), "%s", p);
		run_capture(rep, out, size);
		p = strstr(*out, "SAMPLE events:");
		samples = p ? atoi(p + strlen("SAMPLE events:")) : 0;
		TH_LOG("%s record -b -e %s: %d samples", perf, argv[4],
		       samples);
		if (samples < 200) {
			char moved[256];

			/* perf report samples nothing: the counts stand */
			interrupts_moved(moved, sizeof(moved), irq);
			TH_LOG("%s", moved);
			log_lines(_metadata, said, 6);
			if (!p)
				log_lines(_metadata, *out, 10);
		}
	}
	return samples;
}

FIXTURE(journey) {
	char *out;
	size_t size;
	int depth;
};

FIXTURE_SETUP(journey)
{
	int samples;

	self->size = OUT_SIZE;
	self->out = malloc(self->size);
	ASSERT_NE(NULL, self->out);
	self->depth = read_depth();
	if (self->depth <= 0)
		SKIP(return, "no CTR branch stack support");
	samples = record_brwork(_metadata, "perf", DATA, &self->out,
				&self->size);
	ASSERT_LE(0, samples)
		log_lines(_metadata, self->out, 20);
	ASSERT_LE(200, samples);
}

FIXTURE_TEARDOWN(journey)
{
	free(self->out);
}

TEST_F_TIMEOUT(journey, report_branch_history, 600)
{
	char *argv[] = { "perf", "report", "-i", DATA, "--branch-history",
			 "--stdio", "--no-children", NULL };
	int status;

	status = run_capture(argv, &self->out, &self->size);
	log_lines(_metadata, self->out, 40);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
		TH_LOG("perf report: wait status %#x", status);
	}
	EXPECT_EQ(0, count_str(self->out, "corrupted branch chain"));
	EXPECT_NE(NULL, strstr(self->out, "brwork_mix"));
	EXPECT_NE(NULL, strstr(self->out, "brwork_leaf"));
}

TEST_F_TIMEOUT(journey, script_brstack, 600)
{
	char *argv[] = { "perf", "script", "-i", DATA, "-F", "ip,brstack",
			 NULL };
	char *sym[] = { "perf", "script", "-i", DATA, "-F", "brstacksym",
			NULL };
	const char *dir = getenv("CTR_AUTOFDO_DIR");
	int status, lines, pairs, longest;

	status = run_capture(argv, &self->out, &self->size);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	lines = count_str(self->out, "\n");
	pairs = count_str(self->out, "/0x");	/* one per "from/to/..." */
	longest = longest_line(self->out, "/0x");
	log_lines(_metadata, self->out, 3);
	TH_LOG("perf script -F ip,brstack: %d lines, %d branch records, at most %d in a sample (depth %d)",
	       lines, pairs, longest, self->depth);
	EXPECT_LE(20, lines);
	EXPECT_LE(20 * 16, pairs);
	/* full stacks, cut to what perf's branch history takes */
	EXPECT_GE(PERF_MAX_BRANCH_DEPTH, longest);
	if (self->depth > PERF_MAX_BRANCH_DEPTH)
		EXPECT_LT(64, longest);
	if (dir) {
		char path[256];
		FILE *f;

		mkdir(dir, 0755);
		snprintf(path, sizeof(path), "%s/brstack.txt", dir);
		f = fopen(path, "w");
		if (f) {
			fputs(self->out, f);
			fclose(f);
		}
	}

	status = run_capture(sym, &self->out, &self->size);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	log_lines(_metadata, self->out, 2);
	/* the indirect call, the chain and the data-dependent branch */
	EXPECT_LT(0, count_str(self->out, "brwork_mix+"));
	EXPECT_LT(0, count_str(self->out, "brwork_chain+"));
	EXPECT_LT(0, count_str(self->out, "brwork_odd+") +
		     count_str(self->out, "brwork_even+"));
}

FIXTURE(deep) {
	char *out;
	size_t size;
	int depth;
};

FIXTURE_SETUP(deep)
{
	char depth[16];
	long saved;
	int samples, ret;

	self->size = OUT_SIZE;
	self->out = malloc(self->size);
	ASSERT_NE(NULL, self->out);
	self->depth = read_depth();
	if (self->depth <= PERF_MAX_BRANCH_DEPTH)
		SKIP(return, "CTR depth %d: no stack deeper than 127 entries",
		     self->depth);
	if (access(OUR_PERF, X_OK))
		SKIP(return, "no perf of patches/perf at " OUR_PERF);
	/*
	 * The driver cuts every stack to the event's sample_max_stack,
	 * which perf record -b leaves to this sysctl (127 by default).
	 * It counts when the event is opened: put it back right after, so
	 * that no later test sees it raised, even one that fails.
	 */
	ASSERT_EQ(0, file_read_long(MAX_STACK, &saved));
	snprintf(depth, sizeof(depth), "%d", self->depth);
	ASSERT_EQ(0, file_write_str(MAX_STACK, depth));
	samples = record_brwork(_metadata, OUR_PERF, DEEP_DATA, &self->out,
				&self->size);
	snprintf(depth, sizeof(depth), "%ld", saved);
	ret = file_write_str(MAX_STACK, depth);
	ASSERT_LE(0, samples)
		log_lines(_metadata, self->out, 20);
	ASSERT_EQ(0, ret);
	ASSERT_LE(200, samples);
}

FIXTURE_TEARDOWN(deep)
{
	free(self->out);
}

/*
 * The longest branch history perf report gives, in entries: with -g
 * folded, each path of the history is one line, its entries separated
 * by ';', two per branch used (its target and its source).
 */
static int longest_history(struct __test_metadata *_metadata,
			   char *max_stack, char **out, size_t *size)
{
	char *argv[] = { OUR_PERF, "report", "-i", DEEP_DATA,
			 "--branch-history", "--stdio", "--no-children",
			 "-g", "folded,0", max_stack ? "--max-stack" : NULL,
			 max_stack, NULL };
	int status = run_capture(argv, out, size);

	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		log_lines(_metadata, *out, 20);
		TH_LOG("perf report: wait status %#x", status);
		return -1;
	}
	return longest_line(*out, ";") + 1;
}

TEST_F_TIMEOUT(deep, report_branch_history, 600)
{
	char *argv[] = { OUR_PERF, "report", "-i", DEEP_DATA,
			 "--branch-history", "--stdio", "--no-children",
			 NULL };
	int status, full, cut;

	status = run_capture(argv, &self->out, &self->size);
	log_lines(_metadata, self->out, 30);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
		TH_LOG("perf report: wait status %#x", status);
	}
	EXPECT_EQ(0, count_str(self->out, "corrupted branch chain"));

	/*
	 * Deeper than 127 for real: a path longer than 2 * 127 entries
	 * needs more than 127 branches of one sample. --max-stack 127
	 * cuts them as the old limit did, and shows that the count sees
	 * the cut.
	 */
	full = longest_history(_metadata, NULL, &self->out, &self->size);
	cut = longest_history(_metadata, "127", &self->out, &self->size);
	TH_LOG("longest branch history: %d entries, %d with --max-stack 127 (depth %d)",
	       full, cut, self->depth);
	EXPECT_LT(2 * PERF_MAX_BRANCH_DEPTH, full);
	EXPECT_LE(0, cut);
	EXPECT_GE(2 * PERF_MAX_BRANCH_DEPTH, cut);
	EXPECT_GE(2 * self->depth, full);
}

TEST_F_TIMEOUT(deep, script_brstack, 600)
{
	char *argv[] = { OUR_PERF, "script", "-i", DEEP_DATA, "-F",
			 "ip,brstack", NULL };
	int status, longest;

	status = run_capture(argv, &self->out, &self->size);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	longest = longest_line(self->out, "/0x");
	TH_LOG("perf script -F ip,brstack: at most %d branch records in a sample (depth %d)",
	       longest, self->depth);
	/* the whole ring: what the branch history above had to take */
	EXPECT_EQ(self->depth, longest);
}

TEST_HARNESS_MAIN
