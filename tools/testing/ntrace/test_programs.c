// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Real programs through the encoder model: every option set must give a
 * well-formed stream whose I-CNT total is exactly the half-words of the
 * retired instructions, at a sane number of bits per instruction.
 *
 * usage: test_programs DIR [NAME...]   (DIR holds NAME and NAME.pcs)
 */
#include <inttypes.h>

#include "progs.h"
#include "tap.h"

struct stream_check {
	uint64_t msgs, errors, halfwords, syncs;
};

static void check_stream(const struct nt_encoder_cfg *cfg, const uint8_t *buf,
			 size_t len, struct stream_check *c)
{
	struct nt_reader *r = nt_reader_new(&cfg->stream);
	uint64_t last_branch_icnt = 0;
	struct nt_msg m;

	memset(c, 0, sizeof(*c));
	nt_reader_feed(r, buf, len);
	nt_reader_finish(r);
	while (nt_reader_next(r, &m)) {
		c->msgs++;
		if (m.err) {
			c->errors++;
			continue;
		}
		if (nt_tcode_is_sync(m.tcode))
			c->syncs++;
		c->halfwords += nt_msg_halfwords(&m, &last_branch_icnt);
	}
	nt_reader_free(r);
}

int main(int argc, char **argv)
{
	const char *const *names = default_programs;
	size_t nnames = sizeof(default_programs) / sizeof(default_programs[0]);
	size_t i, k;

	if (argc < 2) {
		fprintf(stderr, "usage: test_programs DIR [NAME...]\n");
		return 2;
	}
	if (argc > 2) {
		names = (const char *const *)argv + 2;
		nnames = (size_t)argc - 2;
	}
	for (i = 0; i < nnames; i++) {
		struct prog p;
		double bits[N_OPTION_SETS];

		if (!tap_ok(!prog_load(&p, argv[1], names[i], 0),
			    "%s: ELF, %s.pcs and records", names[i], names[i])) {
			prog_free(&p);
			continue;
		}
		for (k = 0; k < N_OPTION_SETS; k++) {
			struct nt_encoder_cfg cfg;
			struct stream_check c;
			uint8_t *buf;
			size_t len;

			nt_encoder_cfg_default(&cfg);
			option_sets[k].apply(&cfg);
			buf = prog_encode(&p, &cfg, &len);
			if (!buf) {
				tap_ok(0, "%s %s: encode", p.name,
				       option_sets[k].name);
				continue;
			}
			check_stream(&cfg, buf, len, &c);
			bits[k] = 8.0 * (double)len / (double)p.npcs;
			tap_ok(!c.errors && c.halfwords == p.gen.halfwords &&
			       bits[k] > 0.01 && bits[k] < 8.0,
			       "%s %s: %" PRIu64 " messages, I-CNT %" PRIu64
			       " = %" PRIu64 " half-words retired, %.3f bits/insn",
			       p.name, option_sets[k].name, c.msgs, c.halfwords,
			       p.gen.halfwords, bits[k]);
			if (cfg.sync_mode)
				tap_ok(c.syncs > 1, "%s %s: %" PRIu64
				       " sync messages", p.name,
				       option_sets[k].name, c.syncs);
			free(buf);
		}
		/* implicit return + repeated history never costs more */
		tap_ok(bits[2] <= bits[1],
		       "%s: HTM+IR3+repeated history %.3f <= HTM %.3f bits/insn",
		       p.name, bits[2], bits[1]);
		prog_free(&p);
	}
	return tap_done();
}
