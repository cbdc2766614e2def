// SPDX-License-Identifier: GPL-2.0
/*
 * The user journey with the board's Debian perf: record branch stacks of
 * workload/brwork with perf record -b, then check that perf report
 * --branch-history and perf script -F ip,brstack show its hot branches.
 * The brstack text and the workload are left in $CTR_AUTOFDO_DIR when set
 * (the AutoFDO check runs the host-side tools on them).
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
/*
 * perf's branch history (machine.c, PERF_MAX_BRANCH_DEPTH for
 * remove_loops()) skips every stack of more than 127 entries as
 * "corrupted", so the journey runs at depth 64.
 */
#define JOURNEY_DEPTH 64

static const char *workload = "/selftests/workload/brwork";

static int write_depth(int d)
{
	FILE *f = fopen(DEPTH_PARAM, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%d\n", d) < 0;
	return fclose(f) || ret ? -1 : 0;
}

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

FIXTURE(journey) {
	char *out;
	size_t size;
	int old_depth;
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
	self->old_depth = read_depth();
	if (self->old_depth <= 0)
		SKIP(return, "no CTR branch stack support");
	if (self->old_depth > JOURNEY_DEPTH)
		ASSERT_EQ(0, write_depth(JOURNEY_DEPTH));
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
	if (self->old_depth > JOURNEY_DEPTH)
		write_depth(self->old_depth);
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
	int status, lines, pairs;

	status = run_capture(argv, &self->out, &self->size);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	lines = count_str(self->out, "\n");
	pairs = count_str(self->out, "/0x");	/* one per "from/to/..." */
	log_lines(_metadata, self->out, 3);
	TH_LOG("perf script -F ip,brstack: %d lines, %d branch records",
	       lines, pairs);
	EXPECT_LE(20, lines);
	EXPECT_LE(20 * 16, pairs);
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
