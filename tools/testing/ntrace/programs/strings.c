// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * String-heavy code: strlen/strcmp/memcpy/strchr from libc on a set of
 * generated words. glibc selects its string routines at start-up, so
 * this also exercises the ifunc-resolved versions.
 */
#include <stdio.h>
#include <string.h>

#define NW 120

static char words[NW][32];
static char joined[NW * 33];

int main(void)
{
	unsigned s = 7, total = 0, eq = 0, hits = 0;
	size_t off = 0;
	int i, j;

	for (i = 0; i < NW; i++) {
		int n = 3 + (i * 7) % 25;

		for (j = 0; j < n; j++) {
			s = s * 69069u + 1;
			words[i][j] = (char)('a' + (s >> 28) % 6);
		}
		words[i][n] = 0;
	}
	for (i = 0; i < NW; i++) {
		size_t n = strlen(words[i]);

		memcpy(joined + off, words[i], n);
		off += n;
		joined[off++] = ' ';
		total += (unsigned)n;
	}
	joined[off] = 0;
	for (i = 0; i < NW; i++)
		for (j = i; j < NW; j += 7)
			eq += strcmp(words[i], words[j]) < 0;
	for (const char *p = joined; (p = strchr(p, 'c')); p++)
		hits++;
	printf("strings total=%u len=%zu lt=%u c=%u\n", total, strlen(joined), eq, hits);
	return 0;
}
