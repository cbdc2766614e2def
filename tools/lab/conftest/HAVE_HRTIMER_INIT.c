// SPDX-License-Identifier: GPL-2.0
/*
 * hrtimer_init() and a separately assigned callback, before mainline
 * 6.15 replaced them with hrtimer_setup() (and 6.17 removed the old form).
 */
#include <linux/hrtimer.h>

static enum hrtimer_restart conftest_fn(struct hrtimer *t)
{
	return HRTIMER_NORESTART;
}

void conftest_init(struct hrtimer *t);
void conftest_init(struct hrtimer *t)
{
	hrtimer_init(t, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	t->function = conftest_fn;
}
