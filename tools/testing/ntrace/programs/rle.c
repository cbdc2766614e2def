// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Compression-like loop: run-length encode a buffer with runs of
 * varying length, decode it again and compare. Run detection gives
 * loops with data-dependent trip counts.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define LEN 6000

static uint8_t in[LEN], enc[2 * LEN], out[LEN];

__attribute__((noinline)) static size_t rle_encode(const uint8_t *src, size_t n, uint8_t *dst)
{
	size_t i = 0, o = 0;

	while (i < n) {
		uint8_t c = src[i];
		size_t run = 1;

		while (i + run < n && src[i + run] == c && run < 255)
			run++;
		dst[o++] = (uint8_t)run;
		dst[o++] = c;
		i += run;
	}
	return o;
}

__attribute__((noinline)) static size_t rle_decode(const uint8_t *src, size_t n, uint8_t *dst)
{
	size_t i, o = 0;

	for (i = 0; i + 1 < n; i += 2) {
		uint8_t run = src[i];

		while (run--)
			dst[o++] = src[i + 1];
	}
	return o;
}

int main(void)
{
	uint32_t s = 99;
	size_t i = 0, elen, dlen;

	while (i < LEN) {
		size_t run;

		s = s * 1103515245u + 12345u;
		run = 1 + ((s >> 16) % 40);
		while (run-- && i < LEN)
			in[i++] = (uint8_t)(s >> 24);
	}
	elen = rle_encode(in, LEN, enc);
	dlen = rle_decode(enc, elen, out);
	if (dlen != LEN || memcmp(in, out, LEN))
		return 1;
	printf("rle %d -> %zu bytes\n", LEN, elen);
	return 0;
}
