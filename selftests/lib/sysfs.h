/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The small files the board tests read and set: sysfs attributes, module
 * parameters, sysctls. One number or word each, read or written in one
 * system call, as the kernel expects of such files.
 */
#ifndef NTRACE_SELFTEST_SYSFS_H
#define NTRACE_SELFTEST_SYSFS_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The number in path (decimal, or 0x hex): 0, or -1. */
static inline int file_read_long(const char *path, long *v)
{
	char buf[64];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	*v = strtol(buf, NULL, 0);
	return 0;
}

/* The word in path, without its newline, in buf: 0, or -1. */
static inline int file_read_str(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Write s to path: 0, or -errno (the attribute's refusal, e.g. -EINVAL). */
static inline int file_write_str(const char *path, const char *s)
{
	ssize_t len = (ssize_t)strlen(s);
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	errno = 0;
	if (write(fd, s, len) != len)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}

#endif
