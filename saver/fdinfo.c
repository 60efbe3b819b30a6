// SPDX-License-Identifier: MIT
/*
 * Parsers of /proc/PID/fdinfo/FD text, apart from reading it (which the
 * callers do with the processes stopped): the fields every description
 * has, an epoll's entries, an inotify's watches, any "key: number" line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "fdinfo.h"

int fdinfo_field(const char *s, const char *key, int base, uint64_t *v)
{
	size_t n = strlen(key);

	for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n)) {
			*v = strtoull(p + n, NULL, base);
			return 1;
		}
	return 0;
}

void fdinfo_pos_flags(const char *s, uint64_t *pos, uint32_t *flags)
{
	const char *p;

	if ((p = strstr(s, "pos:")))
		*pos = strtoull(p + 4, NULL, 10);
	if ((p = strstr(s, "flags:")))
		*flags = (uint32_t)strtoul(p + 6, NULL, 8);
}

int fdinfo_epoll_entry(const char *line, int *tfd, uint32_t *events, uint64_t *data)
{
	unsigned long long d;
	unsigned ev;

	if (sscanf(line, "tfd: %d events: %x data: %llx", tfd, &ev, &d) != 3)
		return -1;
	*events = ev;
	*data = d;
	return 0;
}

int fdinfo_inotify_watch(const char *line, struct fdinfo_watch *w)
{
	unsigned wd, sdev, mask, ign;
	unsigned long long ino;
	int n = sscanf(line, "inotify wd:%x ino:%llx sdev:%x mask:%x ignored_mask:%x "
		       "fhandle-bytes:%x fhandle-type:%x f_handle:%258s", &wd, &ino, &sdev,
		       &mask, &ign, &w->hbytes, &w->htype, w->handle);

	if (n < 4)
		return -1;
	if (n < 8)
		w->hbytes = 0;
	w->wd = wd;
	w->mask = mask;
	w->ino = ino;
	w->dev = makedev(sdev >> 20, sdev & 0xfffff);	/* the kernel's encoding */
	return 0;
}
