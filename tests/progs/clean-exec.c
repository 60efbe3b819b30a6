// SPDX-License-Identifier: MIT
/*
 * clean-exec PROGRAM ARGS...: runs PROGRAM with only fds 0-2, whatever
 * the caller had open. The integration tests start their processes
 * through it, so that what the test harness (or make, or a terminal
 * multiplexer) leaves open never reaches a process being checkpointed.
 */
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: clean-exec PROGRAM ARGS...\n");
		return 2;
	}
	if (syscall(SYS_close_range, 3u, ~0u, 0u)) {
		for (int fd = 3; fd < 65536; fd++)	/* kernels before 5.9 */
			close(fd);
	}
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
