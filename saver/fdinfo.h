/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_FDINFO_H
#define IBCR_SAVER_FDINFO_H

/*
 * The lines of /proc/PID/fdinfo/FD, parsed from their text (fdinfo.c):
 * no I/O here, so that the unit tests reach every case.
 */
#include <stdint.h>
#include <sys/types.h>

/* The number after KEY at the start of a line of s, in base: 1, or 0 when none. */
int fdinfo_field(const char *s, const char *key, int base, uint64_t *v);
/* Every description's "pos:" and "flags:" (octal); each left as it is when missing. */
void fdinfo_pos_flags(const char *s, uint64_t *pos, uint32_t *flags);
/* An epoll's "tfd: N events: X data: X" line: 0, or -1 when it is not one. */
int fdinfo_epoll_entry(const char *line, int *tfd, uint32_t *events, uint64_t *data);

/* One watch of an inotify, as its "inotify wd:..." line says (hbytes 0: no file handle). */
struct fdinfo_watch {
	uint32_t wd, mask;
	uint64_t ino;
	dev_t dev;
	unsigned htype, hbytes;
	char handle[260];	/* hex */
};

int fdinfo_inotify_watch(const char *line, struct fdinfo_watch *w);

#endif
