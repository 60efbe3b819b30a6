// SPDX-License-Identifier: MIT
/*
 * Mappings of deleted files and memfds. A deleted file is one file object
 * of the image however it is held (saver/filedata.c saves its bytes
 * once, loader/fdfiles.c makes it again), and every mapping of it is of
 * that object again (OBJFILE): shared as the file (its bytes are the
 * object's: nothing saved for the region), private with only the pages
 * the process changed, so that mappings and descriptors see each other
 * as before, /proc/PID/maps names the file as it did, and a dropped page
 * reads the file's bytes. A deleted file that no descriptor has gets an
 * object of its own, read through map_files (as root; refused without).
 * A memfd mapped privately that no descriptor has stays a copy (nothing
 * can change the file it came from; mapped shared, it is shared memory).
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

#define REGION_FAIL(...) \
	ibcr_fail(e, "pid %d: region %#llx-%#llx (%s): " __VA_ARGS__)
#define REGION_ARGS (int)t->pid, (unsigned long long)v->start, (unsigned long long)v->end, shown

/*
 * An object for a deleted file that only mappings have, read through
 * map_files: a regular file with no name left (one with another name
 * would not be that file once copied).
 */
static long object_from_map(const struct target *t, const struct ibcr_vma *v, const char *shown,
			    struct fobjs *o, struct ibcr_err *e)
{
	size_t len = strlen(shown);
	char path[96], name[4096];
	struct stat st;
	uint32_t i;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)t->pid,
		 (unsigned long long)v->start, (unsigned long long)v->end);
	if (stat(path, &st))
		return REGION_FAIL("a deleted file that no descriptor has open, whose bytes only "
				   "%s shows (root): %s", REGION_ARGS, path, strerror(errno));
	if (st.st_ino != v->file_ino || !S_ISREG(st.st_mode))
		return REGION_FAIL("%s is not the regular file it maps", REGION_ARGS, path);
	if (st.st_nlink)
		return REGION_FAIL("the file is deleted here but has another name (%lu links): a "
				   "copy would not be that file", REGION_ARGS,
				   (unsigned long)st.st_nlink);
	if (len > 10 && !strcmp(shown + len - 10, " (deleted)"))
		len -= 10;
	snprintf(name, sizeof(name), "%.*s", (int)len, shown);
	i = fobjs_add(o, t->pid, -1, name);
	o->f.objs[i] = (struct ibcr_fobj){
		.kind = IBCR_FD_DELETED, .ino = st.st_ino, .dev = st.st_dev,
		.flags = (v->flags & IBCR_VMAF_SHARED) ? O_RDWR : O_RDONLY,
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
			long i;

			if (!(v->flags & IBCR_VMAF_DELETED) ||
			    (v->kind != IBCR_VMA_FILE && v->kind != IBCR_VMA_ANON))
				continue;
			i = object_of(o, v);
			if (i < 0 && v->kind == IBCR_VMA_ANON)
				continue;	/* a memfd's private copy */
			if (i < 0 && (i = object_from_map(&t[k], v, t[k].ps.vma_names[r], o, e)) < 0)
				return -1;
			v->kind = IBCR_VMA_FILE;
			v->flags |= IBCR_VMAF_OBJFILE;
			v->file_size = o->f.objs[i].size;
			v->file_mtime_ns = o->f.objs[i].mtime_ns;
		}
	return 0;
}
