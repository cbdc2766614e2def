// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Small hosted program; linked statically so the classifier cross-check
 * covers all of libc's text as well.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf env;

static int cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv)
{
	const char *w[] = { "pear", "apple", "fig", "kiwi" };
	size_t i;

	qsort(w, 4, sizeof(w[0]), cmp);
	for (i = 0; i < 4; i++)
		printf("%s%c", w[i], i == 3 ? '\n' : ' ');
	if (!setjmp(env) && argc > 5)
		longjmp(env, 1);
	return argc > 1 ? atoi(argv[1]) : 0;
}
