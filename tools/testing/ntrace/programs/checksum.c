// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Long loop over a buffer: an Adler-like checksum with a data dependent
 * branch whose outcome repeats with a short period, so the same branch
 * history pattern recurs many times.
 */
#include <stdint.h>
#include <stdio.h>

#define LEN 8192

static uint8_t buf[LEN];

int main(void)
{
	uint32_t a = 1, b = 0, odd = 0;
	int i, pass;

	for (i = 0; i < LEN; i++)
		buf[i] = (uint8_t)(i * 7 + (i >> 5));
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < LEN; i++) {
			if (buf[i] & 1)
				odd++;
			else
				a += 3;
			a = (a + buf[i]) % 65521;
			b = (b + a) % 65521;
		}
	}
	printf("checksum %08x odd=%u\n", (b << 16) | a, odd);
	return 0;
}
