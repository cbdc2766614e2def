// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Program images: address -> instruction bytes, from ELF files (through
 * libelf from elfutils) and raw binaries.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ntrace.h"

#ifndef EM_RISCV
#define EM_RISCV 243
#endif

struct segment {
	uint64_t start, end;	/* [start, end) */
	uint8_t *data;
};

/* pages a fill callback found nothing for, so that it is asked once */
#define MISS_SLOTS	64
#define MISS_SHIFT	12

struct nt_image {
	struct segment *seg;	/* sorted by start, never overlapping */
	size_t nseg, capseg;
	unsigned int nelf, nelf32;
	nt_image_fill_fn fill;
	void *fill_ctx;
	bool filling;
	uint64_t miss[MISS_SLOTS];	/* page + 1; 0 = empty */
};

struct nt_image *nt_image_new(void)
{
	return calloc(1, sizeof(struct nt_image));
}

void nt_image_free(struct nt_image *img)
{
	size_t i;

	if (!img)
		return;
	for (i = 0; i < img->nseg; i++)
		free(img->seg[i].data);
	free(img->seg);
	free(img);
}

unsigned int nt_image_xlen(const struct nt_image *img)
{
	return img->nelf && img->nelf == img->nelf32 ? 32 : 64;
}

/* Takes ownership of data. */
static int add_segment(struct nt_image *img, uint64_t start, uint8_t *data,
		       size_t len, const char **err)
{
	size_t i, pos;

	if (!len) {
		free(data);
		return 0;
	}
	if (start + len < start) {
		free(data);
		*err = "segment wraps around the address space";
		return -1;
	}
	for (pos = 0; pos < img->nseg && img->seg[pos].start < start; pos++)
		;
	if ((pos > 0 && img->seg[pos - 1].end > start) ||
	    (pos < img->nseg && img->seg[pos].start < start + len)) {
		free(data);
		*err = "segment overlaps another image";
		return -1;
	}
	if (img->nseg == img->capseg) {
		size_t cap = img->capseg ? img->capseg * 2 : 8;
		struct segment *s = realloc(img->seg, cap * sizeof(*s));

		if (!s) {
			free(data);
			*err = "out of memory";
			return -1;
		}
		img->seg = s;
		img->capseg = cap;
	}
	for (i = img->nseg; i > pos; i--)
		img->seg[i] = img->seg[i - 1];
	img->seg[pos].start = start;
	img->seg[pos].end = start + len;
	img->seg[pos].data = data;
	img->nseg++;
	/* a page missed before may be covered now */
	memset(img->miss, 0, sizeof(img->miss));
	return 0;
}

int nt_image_add_mem(struct nt_image *img, const void *data, size_t len,
		     uint64_t addr, const char **err)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy) {
		*err = "out of memory";
		return -1;
	}
	memcpy(copy, data, len);
	return add_segment(img, addr, copy, len, err);
}

static uint8_t *read_file(const char *path, size_t *len, const char **err)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		*err = "cannot open image file";
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		*err = "out of memory";
		return NULL;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			free(buf);
			close(fd);
			*err = "cannot read image file";
			return NULL;
		}
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return buf;
}

int nt_image_add_raw(struct nt_image *img, const char *path, uint64_t addr,
		     const char **err)
{
	size_t len;
	uint8_t *buf = read_file(path, &len, err);

	if (!buf)
		return -1;
	return add_segment(img, addr, buf, len, err);
}

int nt_image_add_elf(struct nt_image *img, const char *path, uint64_t bias,
		     const char **err)
{
	size_t i, nphdr, flen;
	uint8_t *file;
	GElf_Ehdr eh;
	Elf *elf;
	int ret = -1, added = 0;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		*err = "libelf is too old";
		return -1;
	}
	file = read_file(path, &flen, err);
	if (!file)
		return -1;
	elf = elf_memory((char *)file, flen);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		*err = "not an ELF file";
		goto out;
	}
	if (eh.e_machine != EM_RISCV) {
		*err = "not a RISC-V ELF file";
		goto out;
	}
	if (elf_getphdrnum(elf, &nphdr)) {
		*err = "ELF program headers unreadable";
		goto out;
	}
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;
		uint8_t *seg;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (ph.p_offset > flen || ph.p_filesz > flen - ph.p_offset) {
			*err = "ELF segment lies outside the file";
			goto out;
		}
		seg = malloc(ph.p_filesz ? ph.p_filesz : 1);
		if (!seg) {
			*err = "out of memory";
			goto out;
		}
		memcpy(seg, file + ph.p_offset, ph.p_filesz);
		if (add_segment(img, ph.p_vaddr + bias, seg, ph.p_filesz, err))
			goto out;
		added++;
	}
	if (!added) {
		*err = "ELF file has no executable segment";
		goto out;
	}
	img->nelf++;
	if (gelf_getclass(elf) == ELFCLASS32)
		img->nelf32++;
	ret = 0;
out:
	if (elf)
		elf_end(elf);
	free(file);
	return ret;
}

void nt_image_set_fill(struct nt_image *img, nt_image_fill_fn fn, void *ctx)
{
	img->fill = fn;
	img->fill_ctx = ctx;
	memset(img->miss, 0, sizeof(img->miss));
}

static const struct segment *find_segment(const struct nt_image *img,
					  uint64_t addr)
{
	size_t lo = 0, hi = img->nseg;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct segment *s = &img->seg[mid];

		if (addr < s->start)
			hi = mid;
		else if (addr >= s->end)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

/*
 * The image is logically const to its readers: what a fill callback adds
 * is what was at those addresses all along, only read late. Segments
 * never move their data, so bytes handed out before stay valid.
 */
static const struct segment *fill_segment(const struct nt_image *cimg,
					  uint64_t addr)
{
	struct nt_image *img = (struct nt_image *)cimg;
	uint64_t page = (addr >> MISS_SHIFT) + 1;
	uint64_t *slot = &img->miss[page % MISS_SLOTS];
	int ret;

	if (img->filling || *slot == page)
		return NULL;
	img->filling = true;
	ret = img->fill(img->fill_ctx, img, addr);
	img->filling = false;
	if (!ret) {
		const struct segment *s = find_segment(img, addr);

		if (s)
			return s;
	}
	*slot = page;
	return NULL;
}

const uint8_t *nt_image_lookup(const struct nt_image *img, uint64_t addr,
			       size_t *avail)
{
	const struct segment *s = find_segment(img, addr);

	if (!s && img->fill)
		s = fill_segment(img, addr);
	if (!s) {
		*avail = 0;
		return NULL;
	}
	*avail = (size_t)(s->end - addr);
	return s->data + (addr - s->start);
}
