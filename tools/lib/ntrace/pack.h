/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Inside libntrace only (not installed): the packed writer for the
 * messages most branch trace is made of, shared by nt_write_msg() and the
 * encoder, which calls it without building a struct nt_msg.
 */
#ifndef NTRACE_PACK_H
#define NTRACE_PACK_H

#include <stdbool.h>
#include <stdint.h>

#include "ntrace.h"

/*
 * DirectBranch, IndirectBranch or IndirectBranchHist, without TSTAMP or
 * address extension, when its MDO bits fit 48 (eight bytes): written to
 * out, its length returned; 0 when it does not pack. With spare, out has
 * room for eight bytes and those past the message may be overwritten.
 */
int nt_pack_branch(const struct nt_stream_cfg *cfg, unsigned int tcode,
		   unsigned int src, unsigned int btype, uint64_t icnt,
		   uint64_t addr_field, uint64_t hist, uint8_t *out,
		   bool spare);

#endif
