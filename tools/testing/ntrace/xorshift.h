/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The host tests' pseudo-random numbers: Marsaglia's xorshift64 (13, 7,
 * 17), so that every run of a test sees the same inputs for its seed.
 */
#ifndef NTRACE_XORSHIFT_H
#define NTRACE_XORSHIFT_H

#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
