// SPDX-License-Identifier: MIT
/*
 * Mappings of deleted files and memfds. When the file is a file object
 * of the image (a descriptor of some process has it), the mapping is of
 * that very file again: the restore maps the object, shared as the file
 * (its bytes are the object's: nothing saved for the region) or private
 * with only the pages the process changed, so the mapping and the
 * descriptor see each other as before. A shared mapping of one that no
 * descriptor has gets an object of its own, through map_files (as root);
 * without, it is refused. A private one stays a copy (nothing can
 * change the file it came from).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fdkinds.h"

static long object_of(const struct fobjs *o, const struct ibcr_vma *v)
{
	for (uint32_t i = 0; i < o->f.nobjs; i++)
		if ((o->f.objs[i].kind == IBCR_FD_DELETED || o->f.objs[i].kind == IBCR_FD_MEMFD) &&
		    o->f.objs[i].ino == v->file_ino && o->f.objs[i].dev == v->file_dev &&
		    !o->f.attrs[i].same_file)
			return i;
	return -1;
}

/* An object for a deleted file that only mappings have, read through map_files. */
static long object_from_map(const struct target *t, const struct ibcr_vma *v, const char *name,
			    struct fobjs *o, struct ibcr_err *e)
{
	char path[96];
	struct stat st;
	uint32_t i;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)t->pid,
		 (unsigned long long)v->start, (unsigned long long)v->end);
	if (stat(path, &st) || st.st_ino != v->file_ino)
		return ibcr_fail(e, "pid %d region %#llx: shared mapping of deleted file %s, which "
				 "no descriptor has open, and map_files cannot be read (%s): not "
				 "supported", (int)t->pid, (unsigned long long)v->start, name,
				 strerror(errno));
	i = fobjs_add(o, t->pid, -1, name);
	o->f.objs[i] = (struct ibcr_fobj){
		.kind = IBCR_FD_DELETED, .flags = O_RDWR, .ino = st.st_ino, .dev = st.st_dev,
		.size = (uint64_t)st.st_size, .mode = st.st_mode,
		.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			    (uint64_t)st.st_mtim.tv_nsec,
	};
	return filedata_capture_path(path, o, i, e) ? -1 : (long)i;
}

int delmap_finish(struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t r = 0; r < t[k].ps.nvmas; r++) {
			struct ibcr_vma *v = &t[k].ps.vmas[r];
			char name[4096];
			size_t len;
			long i;

			if (!(v->flags & IBCR_VMAF_DELETED) ||
			    (v->kind != IBCR_VMA_FILE && v->kind != IBCR_VMA_ANON))
				continue;
			i = object_of(o, v);
			if (i < 0 && v->kind == IBCR_VMA_ANON)
				continue;	/* a private copy, as before */
			if (i < 0) {
				snprintf(name, sizeof(name), "%s", t[k].ps.vma_names[r]);
				len = strlen(name);
				if (len > 10 && !strcmp(name + len - 10, " (deleted)"))
					name[len - 10] = 0;
				if ((i = object_from_map(&t[k], v, name, o, e)) < 0)
					return -1;
			}
			v->kind = IBCR_VMA_FILE;
			v->flags |= IBCR_VMAF_OBJFILE;
			v->file_size = o->f.objs[i].size;
			v->file_mtime_ns = o->f.objs[i].mtime_ns;
		}
	return 0;
}
