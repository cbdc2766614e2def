/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Real RISC-V programs for the host tests: the ELF, its executed PCs as
 * QEMU logged them, and the ingress-port records derived from both.
 */
#ifndef NTRACE_PROGS_H
#define NTRACE_PROGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"

/*
 * QEMU 7.2 user mode returns from signal handlers through two
 * instructions of its own (li a7, 139; ecall) at this address; give the
 * decoder and the record generator their bytes.
 */
#define QEMU_SIGTRAMP_ADDR 0x4000801000ull
static const uint8_t qemu_sigtramp[] = {
	0x93, 0x08, 0xb0, 0x08, 0x73, 0x00, 0x00, 0x00,
};

struct prog {
	char name[64];
	struct nt_image *img;
	uint64_t *pcs;
	size_t npcs;
	struct nt_record *recs;
	size_t nrecs;
	struct nt_pcgen_stats gen;
};

static int load_pcs(struct prog *p, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[64];
	size_t cap = 1 << 16;

	if (!f)
		return -1;
	p->pcs = malloc(cap * sizeof(*p->pcs));
	while (p->pcs && fgets(line, sizeof(line), f)) {
		if (p->npcs == cap) {
			cap *= 2;
			p->pcs = realloc(p->pcs, cap * sizeof(*p->pcs));
			if (!p->pcs)
				break;
		}
		p->pcs[p->npcs++] = strtoull(line, NULL, 16);
	}
	fclose(f);
	return p->pcs ? 0 : -1;
}

/* Load dir/name and dir/name.pcs and derive the records; 0 on success. */
__attribute__((unused))
static int prog_load(struct prog *p, const char *dir, const char *name,
		     unsigned int isa)
{
	char path[4096];
	const char *err = NULL;
	struct nt_pcgen *g;
	size_t i;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->img = nt_image_new();
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!p->img || nt_image_add_elf(p->img, path, 0, &err) ||
	    nt_image_add_mem(p->img, qemu_sigtramp, sizeof(qemu_sigtramp),
			     QEMU_SIGTRAMP_ADDR, &err))
		return -1;
	snprintf(path, sizeof(path), "%s/%s.pcs", dir, name);
	if (load_pcs(p, path) || !p->npcs)
		return -1;
	p->recs = malloc((2 * p->npcs + 2) * sizeof(*p->recs));
	g = nt_pcgen_new(p->img, isa);
	if (!p->recs || !g)
		return -1;
	for (i = 0; i <= p->npcs; i++) {
		int n = i < p->npcs ?
			nt_pcgen_next(g, p->pcs[i], p->recs + p->nrecs, &err) :
			nt_pcgen_finish(g, p->recs + p->nrecs, &err);

		if (err) {
			fprintf(stderr, "%s: pc #%zu 0x%llx: %s\n", name, i,
				(unsigned long long)p->pcs[i], err);
			nt_pcgen_free(g);
			return -1;
		}
		p->nrecs += (size_t)n;
	}
	/* one time unit per record, as `ntrace encode` does */
	for (i = 0; i < p->nrecs; i++)
		p->recs[i].tstamp = i + 1;
	p->gen = *nt_pcgen_stats(g);
	nt_pcgen_free(g);
	return 0;
}

__attribute__((unused))
static void prog_free(struct prog *p)
{
	nt_image_free(p->img);
	free(p->pcs);
	free(p->recs);
}

/* Encode all records of p with cfg into a malloc'ed buffer. */
__attribute__((unused))
static uint8_t *prog_encode(const struct prog *p,
			    const struct nt_encoder_cfg *cfg, size_t *len)
{
	const char *err = NULL;
	struct nt_encoder *e = nt_encoder_new(cfg, &err);
	const uint8_t *out;
	uint8_t *copy;
	size_t i;

	if (!e)
		return NULL;
	nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
	for (i = 0; i < p->nrecs; i++)
		nt_encoder_retire(e, &p->recs[i]);
	nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, p->nrecs + 1);
	out = nt_encoder_output(e, len);
	copy = malloc(*len ? *len : 1);
	if (copy)
		memcpy(copy, out, *len);
	nt_encoder_free(e);
	return copy;
}

/* The encoder option sets the program tests run. */
struct option_set {
	const char *name;
	void (*apply)(struct nt_encoder_cfg *c);
};

static void os_btm(struct nt_encoder_cfg *c)
{
	c->mode = NT_MODE_BTM;
}

static void os_htm(struct nt_encoder_cfg *c)
{
	c->mode = NT_MODE_HTM;
}

static void os_htm_ir3_rh(struct nt_encoder_cfg *c)
{
	c->implicit_return = 3;
	c->repeat_history = true;
}

static void os_htm_ir1(struct nt_encoder_cfg *c)
{
	c->implicit_return = 1;
}

static void os_htm_ir2_d8(struct nt_encoder_cfg *c)
{
	c->implicit_return = 2;
	c->ir_depth = 8;
	c->ir_partial_bits = 20;
}

static void os_btm_rb_ir3(struct nt_encoder_cfg *c)
{
	c->mode = NT_MODE_BTM;
	c->repeat_branch = true;
	c->implicit_return = 3;
}

static void os_htm_seq_all(struct nt_encoder_cfg *c)
{
	c->sequential_jump = true;
	c->all_jumps = true;
	c->implicit_return = 3;
	c->ir_depth = 3;	/* not a power of two */
}

static void os_htm_sync_ts(struct nt_encoder_cfg *c)
{
	c->sync_mode = 3;
	c->sync_max = 8;	/* 4096 half-words */
	c->stream.timestamps = true;
	c->context = true;
	c->stream.src_bits = 4;
	c->src_id = 3;
	c->stream.extend_addr_msb = true;
	c->repeat_branch = true;
}

static void os_btm_sync_msgs(struct nt_encoder_cfg *c)
{
	c->mode = NT_MODE_BTM;
	c->sync_mode = 1;
	c->sync_max = 4;	/* 256 messages */
	c->stream.timestamps = true;
	c->btype_trap_only = true;
	c->all_jumps = true;
}

static void os_htm_small(struct nt_encoder_cfg *c)
{
	c->icnt_bits = 8;
	c->hist_bits = 8;
	c->repeat_history = true;
	c->hrepeat_bits = 3;
	c->implicit_return = 3;
	c->ir_depth = 2;
	c->repeat_branch = true;
}

__attribute__((unused))
static const struct option_set option_sets[] = {
	{ "btm", os_btm },
	{ "htm", os_htm },
	{ "htm+ir3+repeat-history", os_htm_ir3_rh },
	{ "htm+ir1", os_htm_ir1 },
	{ "htm+ir2-depth8", os_htm_ir2_d8 },
	{ "btm+repeat-branch+ir3", os_btm_rb_ir3 },
	{ "htm+seq-jump+all-jumps+ir3-depth3", os_htm_seq_all },
	{ "htm+sync4096+ts+context+src+ext-addr", os_htm_sync_ts },
	{ "btm+sync256msgs+ts+btype1+all-jumps", os_btm_sync_msgs },
	{ "htm+icnt8+hist8+hrepeat3+ir3-depth2", os_htm_small },
};

#define N_OPTION_SETS (sizeof(option_sets) / sizeof(option_sets[0]))

__attribute__((unused))
static const char *const default_programs[] = {
	"recursion", "dispatch", "jumptable", "qsort_cb", "longjmp",
	"checksum", "deepcall", "rle", "interp", "strings", "signal",
	"rsort", "vvadd", "median", "quicksort",
};

#endif
