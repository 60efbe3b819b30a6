// SPDX-License-Identifier: MIT
/* Process-wide state from /proc: ids, mm fields, limits. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "procfs.h"
#include "saver.h"

static int read_stat(struct target *t, struct ibcr_err *e)
{
	struct ibcr_proc *r = &t->ps.rec;
	unsigned long long f[64] = { 0 };
	char path[64], *s, *p, *tok, *save = NULL;
	int n = 3;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	p = strrchr(s, ')');
	if (!p) {
		free(s);
		return ibcr_fail(e, "pid %d: cannot parse %s", (int)t->pid, path);
	}
	/* fields numbered as in proc(5); field 3 (state) is a letter */
	for (tok = strtok_r(p + 2, " ", &save); tok && n < 64;
	     tok = strtok_r(NULL, " ", &save), n++)
		f[n] = strtoull(tok, NULL, 10);
	free(s);
	if (n < 52)
		return ibcr_fail(e, "pid %d: %s has only %d fields", (int)t->pid, path, n);
	r->ppid = (int32_t)f[4];
	r->pgid = (int32_t)f[5];
	r->sid = (int32_t)f[6];
	t->tty_nr = (uint32_t)f[7];
	if (!t->tty_nr)
		r->flags |= IBCR_PROCF_NOTTY;
	t->tpgid = (int32_t)f[8];
	r->start_code = f[26];
	r->end_code = f[27];
	r->start_stack = f[28];
	r->start_data = f[45];
	r->end_data = f[46];
	r->start_brk = f[47];
	r->arg_start = f[48];
	r->arg_end = f[49];
	r->env_start = f[50];
	r->env_end = f[51];
	return 0;
}

static void parse_ids(const char *line, uint32_t out[4])
{
	sscanf(line, "%" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu32,
	       &out[0], &out[1], &out[2], &out[3]);
}

static int read_status(struct target *t, struct ibcr_err *e)
{
	struct ibcr_proc *r = &t->ps.rec;
	char path[64], *s, *line, *save = NULL;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)t->pid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "Umask:", 6))
			r->umask = (uint32_t)strtoul(line + 6, NULL, 8);
		else if (!strncmp(line, "Uid:", 4))
			parse_ids(line + 4, r->uid);
		else if (!strncmp(line, "Gid:", 4))
			parse_ids(line + 4, r->gid);
		else if (!strncmp(line, "Groups:", 7)) {
			char *p = line + 7, *end;

			while (r->ngroups < 32) {
				unsigned long g = strtoul(p, &end, 10);

				if (end == p)
					break;
				r->groups[r->ngroups++] = (uint32_t)g;
				p = end;
			}
		}
	}
	free(s);
	return 0;
}

static int read_link(const char *path, char **out, struct ibcr_err *e)
{
	char buf[4096];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	if (n < 0)
		return ibcr_fail_errno(e, errno, "reading link %s", path);
	buf[n] = 0;
	*out = xstrdup(buf);
	return 0;
}

static int read_auxv(struct target *t, struct ibcr_err *e)
{
	struct ibcr_proc *r = &t->ps.rec;
	char path[64], *s;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)t->pid);
	if (proc_read(path, &s, &len, e))
		return -1;
	if (len > sizeof(r->auxv))
		len = sizeof(r->auxv);
	memcpy(r->auxv, s, len);
	r->auxv_words = (uint32_t)(len / 8);
	free(s);
	return 0;
}

static int read_exe(struct target *t, struct ibcr_err *e)
{
	struct ibcr_proc *r = &t->ps.rec;
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)t->pid);
	if (read_link(path, &t->ps.exe, e))
		return -1;
	if (stat(path, &st) == 0) {
		r->exe_ino = st.st_ino;
		r->exe_dev = st.st_dev;
		r->exe_size = (uint64_t)st.st_size;
		r->exe_mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
				  (uint64_t)st.st_mtim.tv_nsec;
	}
	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)t->pid);
	return read_link(path, &t->ps.cwd, e);
}

static int read_misc(struct target *t, struct ibcr_err *e)
{
	struct ibcr_proc *r = &t->ps.rec;
	char path[64], *s;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)t->pid);
	if (proc_read(path, &t->ps.cmdline, &len, e))
		return -1;
	r->cmdline_len = (uint32_t)len;
	snprintf(path, sizeof(path), "/proc/%d/personality", (int)t->pid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	r->personality = (uint32_t)strtoul(s, NULL, 16);
	free(s);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->pid);
	if (proc_read(path, &s, NULL, e))
		return -1;
	s[strcspn(s, "\n")] = 0;
	strncpy(r->comm, s, sizeof(r->comm) - 1);
	free(s);
	return read_limits(t->pid, r->rlim, e);
}

static int in_set(const struct target *t, uint32_t n, pid_t pid)
{
	for (uint32_t i = 0; i < n; i++)
		if (t[i].pid == pid)
			return 1;
	return 0;
}

/* Children not saved with their parent (given neither as pids nor by --tree): say so. */
void warn_children(const struct target *t, uint32_t n)
{
	char path[64], *s = NULL, *tok, *save;
	struct ibcr_err ignored;

	for (uint32_t p = 0; p < n; p++)
		for (uint32_t i = 0; !t[p].tree && !t[p].zombie && i < t[p].nthreads; i++) {
			char left[256] = "";

			snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)t[p].pid,
				 (int)t[p].tids[i]);
			if (proc_read(path, &s, NULL, &ignored))
				continue;
			for (tok = strtok_r(s, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
				if (!in_set(t, n, (pid_t)atoi(tok)) &&
				    strlen(left) + strlen(tok) + 2 < sizeof(left))
					snprintf(left + strlen(left), sizeof(left) - strlen(left), "%s%s",
						 left[0] ? " " : "", tok);
			if (left[0])
				fprintf(stderr, "saver: warning: pid %d has child processes (%s) "
					"that are not saved\n", (int)t[p].pid, left);
			free(s);
			s = NULL;
		}
}

int capture_procinfo(struct target *t, struct ibcr_err *e)
{
	t->ps.rec.pid = t->pid;
	t->ps.rec.nthreads = t->nthreads;
	if (read_stat(t, e) || read_status(t, e) || read_auxv(t, e) ||
	    read_exe(t, e) || read_misc(t, e))
		return -1;
	return 0;
}
