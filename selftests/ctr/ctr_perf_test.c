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

#define OUT_SIZE (1 << 20)
#define DATA "/tmp/ctr-perf.data"
#define DEPTH_PARAM "/sys/module/riscv_ctr/parameters/depth"
#define PERF_MAX_BRANCH_DEPTH 127

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

FIXTURE(journey) {
	char *out;
	size_t size;
	int depth;
};

FIXTURE_SETUP(journey)
{
	/* :u: the workload's own branches, not its exec and page faults */
	char *argv[] = { "perf", "record", "-b", "-e", "cycles:u", "-c",
			 "20011", "-o", DATA, "--", (char *)workload,
			 "1000000", NULL };
	int try, status, samples = 0;

	self->size = OUT_SIZE;
	self->out = malloc(self->size);
	ASSERT_NE(NULL, self->out);
	self->depth = read_depth();
	if (self->depth <= 0)
		SKIP(return, "no CTR branch stack support");
	/*
	 * The emulated cycle counter overflows irregularly (from a handful
	 * to thousands of samples per run, see Documentation/lab.rst):
	 * retry, then fall back to instructions, which overflow steadily.
	 */
	/* enough samples that the workload's loops, not its start, show */
	for (try = 0; try < 6 && samples < 200; try++) {
		char *rep[] = { "perf", "report", "-i", DATA, "--stats",
				NULL };
		const char *p;

		if (try == 3)
			argv[4] = "instructions:u";
		status = run_capture(argv, &self->out, &self->size);
		ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			log_lines(_metadata, self->out, 20);
		run_capture(rep, &self->out, &self->size);
		p = strstr(self->out, "SAMPLE events:");
		samples = p ? atoi(p + strlen("SAMPLE events:")) : 0;
		TH_LOG("perf record -b -e %s: %d samples", argv[4], samples);
	}
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

TEST_HARNESS_MAIN
