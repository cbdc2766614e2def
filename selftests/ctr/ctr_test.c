// SPDX-License-Identifier: GPL-2.0
/*
 * Load ctr_selftest.ko, which records known control transfers with
 * Smctr/Ssctr and refuses to load when they do not read back as expected,
 * and show what it logged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"

static void module_path(char *buf, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n;
	const char *env = getenv("CTR_SELFTEST_KO");

	if (env) {
		snprintf(buf, size, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	snprintf(buf, size, "%s/ctr_selftest.ko", dirname(exe));
}

/* Print the module's own lines from the kernel log into the TAP stream. */
static void show_module_log(struct __test_metadata *_metadata)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf, *line, *save;

	if (len <= 0)
		return;
	buf = calloc(1, len + 1);
	if (!buf)
		return;
	if (klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len) > 0) {
		for (line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			if (strstr(line, "ctr_selftest: "))
				TH_LOG("%s", line);
	}
	free(buf);
}

TEST(ctr_records_known_transfers)
{
	char path[PATH_MAX];
	int fd, ret, err;

	module_path(path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) {
		TH_LOG("open %s: %s", path, strerror(errno));
	}
	ret = syscall(__NR_finit_module, fd, "", 0);
	err = errno;
	close(fd);
	show_module_log(_metadata);
	ASSERT_EQ(0, ret) {
		TH_LOG("finit_module: %s", strerror(err));
	}
	EXPECT_EQ(0, syscall(__NR_delete_module, "ctr_selftest", O_NONBLOCK));
}

TEST_HARNESS_MAIN
