// SPDX-License-Identifier: MIT
/*
 * Resource limits, from /proc/PID/limits. prlimit() of another user's
 * process needs CAP_SYS_RESOURCE, which root lacks in many containers
 * (and on the build machine); the file is readable by anyone and shows
 * the same numbers, soft and hard, in the order of the RLIMIT_* numbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "saver.h"

/* The kernel's names (fs/proc/base.c), index = RLIMIT_* number. */
static const char *const names[IBCR_RLIM_NLIMITS] = {
	"Max cpu time", "Max file size", "Max data size", "Max stack size",
	"Max core file size", "Max resident set", "Max processes", "Max open files",
	"Max locked memory", "Max address space", "Max file locks",
	"Max pending signals", "Max msgqueue size", "Max nice priority",
	"Max realtime priority", "Max realtime timeout",
};

/* "unlimited" or a decimal number; *s moves past it. */
static int limit_value(char **s, uint64_t *v)
{
	char *p = *s + strspn(*s, " "), *end;

	if (!strncmp(p, "unlimited", 9)) {
		*v = UINT64_MAX;	/* RLIM_INFINITY */
		*s = p + 9;
		return 0;
	}
	if (*p < '0' || *p > '9')
		return -1;
	*v = strtoull(p, &end, 10);
	*s = end;
	return 0;
}

static int parse_line(char *line, int i, uint64_t out[2])
{
	size_t n = strlen(names[i]);
	char *p = line + n;

	if (strncmp(line, names[i], n) || *p != ' ')
		return -1;
	return limit_value(&p, &out[0]) || limit_value(&p, &out[1]) ? -1 : 0;
}

int read_limits(pid_t pid, uint64_t rlim[IBCR_RLIM_NLIMITS][2], struct ibcr_err *e)
{
	char path[64], *s, *line, *save = NULL;
	int i = -1;	/* the first line is the header */

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	for (line = strtok_r(s, "\n", &save); line && i < IBCR_RLIM_NLIMITS;
	     line = strtok_r(NULL, "\n", &save), i++)
		if (i >= 0 && parse_line(line, i, rlim[i])) {
			free(s);
			return ibcr_fail(e, "pid %d: cannot parse resource limit %d (%s) "
					 "in %s", (int)pid, i, names[i], path);
		}
	free(s);
	if (i < IBCR_RLIM_NLIMITS)
		return ibcr_fail(e, "pid %d: %s shows %d resource limits, not %d",
				 (int)pid, path, i < 0 ? 0 : i, IBCR_RLIM_NLIMITS);
	return 0;
}
