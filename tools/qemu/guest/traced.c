// SPDX-License-Identifier: GPL-2.0
/*
 * The workload the emulated-trace tests capture: it turns the trace on
 * and off itself (through the test module), so that what is traced is
 * its own user-mode code, with calls, returns, a jump table, a callback
 * through qsort and data-dependent branches in between.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

static int poke(const char *path)
{
	int fd = open(path, O_WRONLY);
	int ok = fd >= 0 && write(fd, "1", 1) == 1;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

static int cmp(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return (x > y) - (x < y);
}

/*
 * traced [ROUNDS [notrace]]: ROUNDS times the work (default 1); with
 * "notrace" it leaves the trace hardware alone (benchmark baseline).
 * Under trace on a board with several harts a child does the same work
 * on hart 1 while the parent does it on hart 0, so that two encoders
 * share the sink at once.
 */
int main(int argc, char **argv)
{
	static unsigned int a[300];
	unsigned int i, r, acc = 1;
	unsigned int rounds = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;
	int trace = argc < 3;
	pid_t child = -1;
	cpu_set_t cpu;
	int status;

	if (trace && poke("/proc/ntrace_hw/start"))
		return 1;
	if (trace && sysconf(_SC_NPROCESSORS_ONLN) > 1) {
		child = fork();
		if (child < 0)
			return 1;
		CPU_ZERO(&cpu);
		CPU_SET(child ? 0 : 1, &cpu);
		if (sched_setaffinity(0, sizeof(cpu), &cpu))
			return 1;
	}
	for (i = 0; i < 300; i++)
		a[i] = (i * 2654435761u) >> 7;
	qsort(a, 300, sizeof(a[0]), cmp);
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < 2000; i++)
			acc = op(a[i % 300] + i, acc);
		acc += fib(16);
	}
	if (child == 0)
		return 0;
	if (child > 0 &&
	    (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	     WEXITSTATUS(status)))
		acc = 0;
	if (trace)
		poke("/proc/ntrace_hw/stop");
	printf("traced: %u\n", acc);
	return 0;
}
