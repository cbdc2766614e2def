/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Running the board's tools (perf) from a kselftest: their output is
 * captured whole so the test can search it, and shown as TAP comments.
 * Include after kselftest_harness.h.
 */
#ifndef NTRACE_SELFTEST_CAPTURE_H
#define NTRACE_SELFTEST_CAPTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Run argv with stdout and stderr captured into *out, a malloc'ed buffer
 * of *size bytes that grows as needed and is always NUL-terminated;
 * returns the wait status, or -1 when argv could not be run.
 */
static int run_capture(char *const argv[], char **out, size_t *size)
{
	int pipefd[2], status;
	size_t used = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	for (;;) {
		if (used + 65536 > *size) {
			char *p = realloc(*out, *size * 2);

			if (!p)
				break;
			*out = p;
			*size *= 2;
		}
		n = read(pipefd[0], *out + used, *size - used - 1);
		if (n <= 0)
			break;
		used += n;
	}
	(*out)[used] = '\0';
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return status;
}

/*
 * The first max_lines non-empty lines of text, one TH_LOG each, so that
 * every line of a tool's output stays a TAP comment.
 */
static void log_lines(struct __test_metadata *_metadata, const char *text,
		      int max_lines)
{
	const char *line = text;

	while (*line && max_lines > 0) {
		const char *end = strchrnul(line, '\n');

		if (end > line) {
			TH_LOG("%.*s", (int)(end - line), line);
			max_lines--;
		}
		line = *end ? end + 1 : end;
	}
}

#endif
