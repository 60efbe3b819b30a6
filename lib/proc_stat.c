// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc_stat.h"

int proc_stat_of(pid_t pid, struct proc_stat *st)
{
	char path[64], buf[1024];
	FILE *f;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return proc_stat_parse(buf, st);
}

int proc_stat_parse(char *buf, struct proc_stat *st)
{
	char *open, *close_, *save = NULL, *tok;
	int n = 3;	/* the field the state is */

	memset(st, 0, sizeof(*st));
	/* the name may hold spaces and parentheses: up to the last ')' */
	open = strchr(buf, '(');
	close_ = strrchr(buf, ')');
	if (!open || !close_ || close_ < open || close_[1] != ' ')
		return 0;
	snprintf(st->comm, sizeof(st->comm), "%.*s", (int)(close_ - open - 1), open + 1);
	for (tok = strtok_r(close_ + 2, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), n++) {
		switch (n) {
		case 3: st->state = tok[0]; break;
		case 4: st->ppid = atoi(tok); break;
		case 9: st->flags = strtoul(tok, NULL, 10); break;
		case 22: st->start = strtoull(tok, NULL, 10); break;
		case 38: st->exit_signal = atoi(tok); break;
		case 52: st->exit_code = atoi(tok); break;
		default: break;
		}
	}
	return st->state != 0;
}

long long proc_key_num(const char *path, const char *key, int base)
{
	char line[256];
	size_t k = strlen(key);
	long long v = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, k)) {
			v = strtoll(line + k, NULL, base);
			break;
		}
	fclose(f);
	return v;
}

long long proc_status_num(pid_t pid, const char *key, int base)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	return proc_key_num(path, key, base);
}
