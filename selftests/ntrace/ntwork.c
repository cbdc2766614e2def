// SPDX-License-Identifier: GPL-2.0
/*
 * The workload the ntrace PMU tests trace (selftests/ntrace): the calls,
 * returns, jump table and recursion of the emulated-hardware workload,
 * a qsort callback, and on request a move to another hart every round, a
 * child doing the same work at the same time, the work done again by
 * the program exec'ing itself, or a 1 ms sleep after every round (the
 * task's events stop and start again).
 *
 * Usage: ntwork [ROUNDS [migrate|fork|exec|nap]]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../tools/qemu/guest/workload.h"

static int cmp(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return (x > y) - (x < y);
}

static void run_on(long cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

int main(int argc, char **argv)
{
	static unsigned int a[300];
	unsigned int rounds = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;
	const char *how = argc > 2 ? argv[2] : "";
	long harts = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int i, r, acc = 1;
	pid_t child = -1;
	int status;

	if (!strcmp(how, "fork")) {
		child = fork();
		if (child < 0)
			return 1;
		if (harts > 1)
			run_on(child ? 0 : 1);
	}
	for (i = 0; i < 300; i++)
		a[i] = (i * 2654435761u) >> 7;
	qsort(a, 300, sizeof(a[0]), cmp);
	for (r = 0; r < rounds; r++) {
		if (!strcmp(how, "migrate") && harts > 1)
			run_on(r % harts);
		for (i = 0; i < 2000; i++)
			acc = op(a[i % 300] + i, acc);
		acc += fib(16);
		if (!strcmp(how, "nap")) {
			struct timespec ms = { .tv_nsec = 1000000 };

			nanosleep(&ms, NULL);
		}
	}
	if (child == 0)
		return 0;
	if (!strcmp(how, "exec")) {
		char *again[] = { argv[0], argv[1], NULL };

		printf("ntwork: %u, exec\n", acc);
		fflush(stdout);
		execv(argv[0], again);
		return 1;
	}
	if (child > 0 && (waitpid(child, &status, 0) != child ||
			  !WIFEXITED(status) || WEXITSTATUS(status)))
		return 1;
	printf("ntwork: %u\n", acc);
	return 0;
}
