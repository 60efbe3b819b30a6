// SPDX-License-Identifier: MIT
/*
 * --path-map OLD=NEW: the image's paths under OLD are restored under
 * NEW (a tree moved or copied elsewhere, another mount point). One
 * translation, applied once to every path the image holds that the
 * restore opens, binds or changes to, right after the image is read:
 * the executable, mapped files (and files made again as shared memory),
 * the working directory, open files, directories, devices, named pipes,
 * the directories of deleted files, UNIX socket names (bound and the
 * peer a datagram socket reconnects to) and inotify watches. Everything
 * after that (checks, messages, the restore itself) sees the new paths,
 * as does the restored process in /proc/PID/maps, exe and cwd. What the
 * process keeps in its memory (argv, its own strings) is its own and
 * stays as it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "loader.h"

struct pathmap_rule {
	char *old, *new;
	size_t old_len;
};

/* A path without trailing slashes ("/" stays "/"). */
static char *trimmed(const char *s, size_t n)
{
	char *p;

	while (n > 1 && s[n - 1] == '/')
		n--;
	p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

int pathmap_add(struct pathmap *pm, const char *arg, struct ibcr_err *e)
{
	const char *eq = strchr(arg, '=');
	struct pathmap_rule r;

	if (!eq || arg[0] != '/' || eq[1] != '/')
		return ibcr_fail(e, "--path-map %s: expected OLD=NEW, both absolute paths", arg);
	r.old = trimmed(arg, (size_t)(eq - arg));
	r.new = trimmed(eq + 1, strlen(eq + 1));
	r.old_len = strlen(r.old);
	pm->rule = xrealloc(pm->rule, (pm->n + 1) * sizeof(*pm->rule));
	pm->rule[pm->n++] = r;
	return 0;
}

/*
 * The translation of path, malloc'd, or NULL when no rule applies. The
 * longest OLD that is path itself or a directory above it wins.
 */
char *pathmap_lookup(const struct pathmap *pm, const char *path)
{
	const struct pathmap_rule *best = NULL;
	char *out;

	for (size_t i = 0; pm && i < pm->n; i++) {
		const struct pathmap_rule *r = &pm->rule[i];
		int under = !strncmp(path, r->old, r->old_len) &&
			    (path[r->old_len] == 0 || path[r->old_len] == '/' ||
			     (r->old_len == 1 && r->old[0] == '/'));

		if (under && (!best || r->old_len > best->old_len))
			best = r;
	}
	if (!best)
		return NULL;
	out = xmalloc(strlen(best->new) + strlen(path) - best->old_len + 2);
	/* "/" as OLD keeps the rest's leading slash */
	sprintf(out, "%s%s%s", best->new,
		best->old_len == 1 && strcmp(best->new, "/") ? "/" : "",
		path + best->old_len + (best->old_len == 1));
	return out;
}

/* *s replaced by its translation, if any (the old string is freed). */
static void map_str(const struct pathmap *pm, char **s)
{
	char *n = pathmap_lookup(pm, *s);

	if (n) {
		free(*s);
		*s = n;
	}
}

void pathmap_process(const struct pathmap *pm, struct ibcr_process_state *ps)
{
	if (!pm || !pm->n)
		return;
	if (ps->exe)
		map_str(pm, &ps->exe);
	if (ps->cwd)
		map_str(pm, &ps->cwd);
	for (uint32_t i = 0; i < ps->nvmas; i++) {
		const struct ibcr_vma *v = &ps->vmas[i];

		if (v->kind == IBCR_VMA_FILE ||
		    (v->kind == IBCR_VMA_SHMEM && (v->flags & IBCR_VMAF_NAMED)))
			map_str(pm, &ps->vma_names[i]);
	}
}

/* A UNIX socket's data: u32 length and the peer's name, then its queue. */
static void map_peer(const struct pathmap *pm, struct ibcr_files *f, uint32_t i)
{
	struct ibcr_fobj *o = &f->objs[i];
	uint32_t len, nlen;
	char *old, *n;
	uint8_t *d;

	if (!f->data[i] || o->data_len < 4)
		return;
	memcpy(&len, f->data[i], 4);
	if (!len || len > o->data_len - 4 || f->data[i][4] != '/' || !memchr(f->data[i] + 4, 0, len))
		return;
	old = (char *)f->data[i] + 4;
	if (!(n = pathmap_lookup(pm, old)))
		return;
	nlen = (uint32_t)strlen(n) + 1;
	d = xmalloc(o->data_len - len + nlen + 1);
	memcpy(d, &nlen, 4);
	memcpy(d + 4, n, nlen);
	memcpy(d + 4 + nlen, f->data[i] + 4 + len, o->data_len - 4 - len);
	o->data_len = o->data_len - len + nlen;
	free(f->data[i]);
	free(n);
	f->data[i] = d;
}

/* inotify watches: per watch u32 wd, mask, path bytes, 0; the path, padded to 8. */
static void map_watches(const struct pathmap *pm, struct ibcr_files *f, uint32_t i)
{
	static const uint8_t zero[8];
	struct buf b = { 0 };
	uint64_t off = 0, n = f->objs[i].data_len, k;
	const uint8_t *d = f->data[i];

	for (k = 0; d && k < fobj_inotify_watches(&f->objs[i]); k++) {
		uint32_t w[4], len;
		const char *path;
		char *m;

		if (off + sizeof(w) > n)
			break;
		memcpy(w, d + off, sizeof(w));
		len = w[2];
		path = (const char *)d + off + sizeof(w);
		if (!len || len > n - off - sizeof(w) || path[len - 1])
			break;	/* malformed: left for fdinotify.c to refuse */
		m = pathmap_lookup(pm, path);
		if (m)
			w[2] = (uint32_t)strlen(m) + 1;
		buf_put(&b, w, sizeof(w));
		buf_put(&b, m ? m : path, w[2]);
		buf_put(&b, zero, (8 - w[2] % 8) % 8);
		free(m);
		off += sizeof(w) + (len + 7ull) / 8 * 8;
	}
	if (!d || k != fobj_inotify_watches(&f->objs[i])) {	/* as it was: fdinotify.c says why */
		buf_free(&b);
		return;
	}
	free(f->data[i]);
	f->data[i] = b.p;
	f->objs[i].data_len = b.len;
}

void pathmap_files(const struct pathmap *pm, struct ibcr_files *f)
{
	if (!pm || !pm->n)
		return;
	for (uint32_t i = 0; i < f->nobjs; i++) {
		switch (f->objs[i].kind) {
		case IBCR_FD_UNIX:
			if (f->paths[i][0] == '/')
				map_str(pm, &f->paths[i]);
			map_peer(pm, f, i);
			break;
		case IBCR_FD_INOTIFY:
			map_watches(pm, f, i);
			break;
		case IBCR_FD_REG:
		case IBCR_FD_DIR:
		case IBCR_FD_CHR:
		case IBCR_FD_FIFO:
		case IBCR_FD_DELETED:
			map_str(pm, &f->paths[i]);
			break;
		}
	}
}

void pathmap_backing(const struct pathmap *pm, struct ibcr_backings *b)
{
	for (uint32_t i = 0; pm && i < b->n; i++)
		map_str(pm, &b->paths[i]);
}
