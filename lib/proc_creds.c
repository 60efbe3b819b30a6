// SPDX-License-Identifier: MIT
/*
 * A thread's credentials as /proc/PID/task/TID/status shows them: ids,
 * every supplementary group, the five capability sets, no_new_privs and
 * the seccomp mode. The saver reads its targets' with it, the loader its
 * own (what it can give a restored process).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "proc_creds.h"
#include "procfs.h"

static void parse_ids(const char *s, uint32_t out[4])
{
	sscanf(s, "%" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu32,
	       &out[0], &out[1], &out[2], &out[3]);
}

/* "Groups:\t4 24 27 \n": every one, however many (NGROUPS_MAX is 65536). */
static void parse_groups(const char *s, struct buf *g)
{
	char *end;

	for (;;) {
		unsigned long v = strtoul(s, &end, 10);
		uint32_t id = (uint32_t)v;

		if (end == s)
			break;
		buf_put(g, &id, sizeof(id));
		s = end;
	}
}

static void parse_line(const char *line, struct ibcr_creds *c, struct buf *g)
{
	static const struct {
		const char *name;
		size_t off;
	} caps[] = {
		{ "CapInh:", offsetof(struct ibcr_creds, cap_inh) },
		{ "CapPrm:", offsetof(struct ibcr_creds, cap_prm) },
		{ "CapEff:", offsetof(struct ibcr_creds, cap_eff) },
		{ "CapBnd:", offsetof(struct ibcr_creds, cap_bnd) },
		{ "CapAmb:", offsetof(struct ibcr_creds, cap_amb) },
	};

	if (!strncmp(line, "Uid:", 4))
		parse_ids(line + 4, c->uid);
	else if (!strncmp(line, "Gid:", 4))
		parse_ids(line + 4, c->gid);
	else if (!strncmp(line, "Groups:", 7))
		parse_groups(line + 7, g);
	else if (!strncmp(line, "NoNewPrivs:", 11) && atoi(line + 11))
		c->flags |= IBCR_CREDF_NO_NEW_PRIVS;
	else if (!strncmp(line, "Seccomp:", 8))
		c->seccomp = (uint32_t)atoi(line + 8);
	else
		for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
			if (!strncmp(line, caps[i].name, 7))
				*(uint64_t *)((char *)c + caps[i].off) = strtoull(line + 7, NULL, 16);
}

void proc_creds_parse(char *text, struct ibcr_creds *c, struct buf *groups)
{
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		parse_line(line, c, groups);
}

int proc_creds(const char *path, struct ibcr_creds *c, struct buf *groups,
	       struct ibcr_err *e)
{
	char *s;

	if (proc_read(path, &s, NULL, e))
		return -1;
	proc_creds_parse(s, c, groups);
	free(s);
	if (c->seccomp > IBCR_SECCOMP_FILTER)
		return ibcr_fail(e, "%s: unknown seccomp mode %u", path, c->seccomp);
	return 0;
}

int proc_number(const char *path, uint32_t *v, struct ibcr_err *e)
{
	char *s;

	if (proc_read(path, &s, NULL, e))
		return -1;
	*v = (uint32_t)strtoul(s, NULL, 10);
	free(s);
	return 0;
}
