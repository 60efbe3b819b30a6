// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "procfs.h"

int proc_read(const char *path, char **out, size_t *len, struct ibcr_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, n = 0;
	char *b;

	if (fd < 0)
		return ibcr_fail_errno(e, errno, "opening %s", path);
	b = xmalloc(cap);
	for (;;) {
		ssize_t k;

		if (n + 1 >= cap)
			b = xrealloc(b, cap *= 2);
		k = read(fd, b + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int err = errno;

			close(fd);
			free(b);
			return ibcr_fail_errno(e, err, "reading %s", path);
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	b[n] = 0;
	*out = b;
	if (len)
		*len = n;
	return 0;
}

static uint32_t parse_vmflags(const char *s)
{
	static const struct {
		char name[3];
		uint32_t bit;
	} names[] = {
		{ "gd", VMF_GROWSDOWN }, { "hg", VMF_HUGEPAGE },
		{ "nh", VMF_NOHUGEPAGE }, { "dd", VMF_DONTDUMP },
		{ "dc", VMF_DONTFORK }, { "wf", VMF_WIPEONFORK },
		{ "mg", VMF_MERGEABLE }, { "io", VMF_IO },
		{ "pf", VMF_PFNMAP }, { "ht", VMF_HUGETLB },
		{ "nr", VMF_NORESERVE }, { "lo", VMF_LOCKED },
		{ "ac", VMF_ACCOUNT }, { "mw", VMF_MAYWRITE },
		{ "dp", VMF_DROPPABLE },
	};
	uint32_t f = 0;

	for (; *s; s++) {
		if (s[0] == ' ' || s[0] == '\n' || !s[1])
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (s[0] == names[i].name[0] && s[1] == names[i].name[1] &&
			    (s[2] == ' ' || s[2] == '\n' || !s[2]))
				f |= names[i].bit;
		s += 2;
		if (!*s)
			break;
	}
	return f;
}

/* "start-end perms offset major:minor inode   path" */
static int parse_line(const char *line, struct maps_entry *m)
{
	char perms[5];
	int pos = 0;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 "%n",
		   &m->start, &m->end, perms, &m->pgoff, &m->dev_major,
		   &m->dev_minor, &m->ino, &pos) < 7)
		return -1;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) |
		  (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	m->shared = perms[3] == 's';
	line += pos;
	while (*line == ' ')
		line++;
	m->path = xstrdup(line);
	m->path[strcspn(m->path, "\n")] = 0;
	return 0;
}

void maps_parse(char *text, int with_flags, struct maps_entry **out, size_t *n)
{
	char *line, *save = NULL;
	struct maps_entry *v = NULL;
	size_t cnt = 0, cap = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct maps_entry m;

		if (with_flags && cnt && !strncmp(line, "VmFlags:", 8)) {
			v[cnt - 1].vmflags |= parse_vmflags(line + 8);
			continue;
		}
		if (with_flags && cnt && !strncmp(line, "ProtectionKey:", 14)) {
			if (strtoull(line + 14, NULL, 10))
				v[cnt - 1].vmflags |= VMF_PKEY;
			continue;
		}
		if (with_flags && cnt && !strncmp(line, "AnonHugePages:", 14)) {
			if (strtoull(line + 14, NULL, 10))
				v[cnt - 1].vmflags |= VMF_THP;
			continue;
		}
		if (parse_line(line, &m))
			continue;	/* an smaps field line */
		if (cnt == cap)
			v = xrealloc(v, sizeof(*v) * (cap = cap ? cap * 2 : 64));
		v[cnt++] = m;
	}
	*out = v;
	*n = cnt;
}

int maps_read(pid_t pid, int with_flags, struct maps_entry **out, size_t *n,
	      struct ibcr_err *e)
{
	char path[64], *text = NULL;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid,
			 with_flags ? "smaps" : "maps");
	else
		snprintf(path, sizeof(path), "/proc/self/%s", with_flags ? "smaps" : "maps");
	if (proc_read(path, &text, NULL, e))
		return -1;
	maps_parse(text, with_flags, out, n);
	free(text);
	return 0;
}

void maps_free(struct maps_entry *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}

static int maps_has(pid_t pid, unsigned major, unsigned minor, uint64_t ino)
{
	struct ibcr_err e;
	struct maps_entry *m;
	size_t n;
	int found = 0;

	if (maps_read(pid, 0, &m, &n, &e))
		return 0;	/* gone, or not ours to read: cannot tell */
	for (size_t i = 0; i < n && !found; i++)
		found = m[i].dev_major == major && m[i].dev_minor == minor && m[i].ino == ino;
	maps_free(m, n);
	return found;
}

pid_t maps_users(unsigned major, unsigned minor, uint64_t ino)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t self = getpid(), found = 0;

	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self)
			continue;
		if (maps_has((pid_t)pid, major, minor, ino))
			found = (pid_t)pid;
	}
	closedir(d);
	return found;
}
