// SPDX-License-Identifier: MIT
/*
 * runas UID GID PROGRAM ARGS...: runs PROGRAM as UID:GID with no
 * supplementary groups (as setpriv --reuid --regid --clear-groups does;
 * the arm64 guest's busybox has no such setpriv). Needs root.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *end1, *end2;
	unsigned long uid, gid;

	if (argc < 4) {
		fprintf(stderr, "usage: runas UID GID PROGRAM ARGS...\n");
		return 2;
	}
	uid = strtoul(argv[1], &end1, 10);
	gid = strtoul(argv[2], &end2, 10);
	if (*end1 || *end2 || !*argv[1] || !*argv[2]) {
		fprintf(stderr, "runas: UID and GID must be numbers\n");
		return 2;
	}
	if (setgroups(0, NULL) || setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) ||
	    setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid)) {
		perror("runas");
		return 126;
	}
	execvp(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
