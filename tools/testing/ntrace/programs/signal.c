// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Signal delivery: raise(SIGUSR1) repeatedly with a handler installed.
 * The handler returns through the signal trampoline, which under
 * qemu-user lives outside the program image.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define NRAISE 60

static volatile sig_atomic_t count;
static volatile unsigned hash = 1;

/*
 * A little work inside the handler so that the handler body, not just
 * the kernel-side entry/exit, is a visible part of the trace.
 */
static void on_usr1(int sig)
{
	unsigned h = hash;
	int i;

	if (sig != SIGUSR1)
		return;
	for (i = 0; i < 100; i++)
		h = h * 31 + (unsigned)(i ^ count);
	hash = h;
	count++;
}

int main(void)
{
	struct sigaction sa;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	for (i = 0; i < NRAISE; i++)
		raise(SIGUSR1);
	printf("signal count=%d hash=%08x\n", (int)count, hash);
	return count == NRAISE ? 0 : 1;
}
