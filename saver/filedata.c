// SPDX-License-Identifier: MIT
/*
 * The bytes of deleted files and memfds (FILEDATA, lib/filedata.h): only
 * their data extents (SEEK_DATA, SEEK_HOLE), so holes stay holes. Up to
 * IBCR_MAX_FILE_DATA in all they are read while the processes are
 * stopped and held here; beyond it they are read from the file while the
 * image is written, with the processes kept stopped until then (like
 * shared memory: the copy-on-write snapshot does not cover files), so a
 * file larger than memory is saved in bounded memory. A file open in
 * several descriptions (two processes, or two opens) is saved once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fdio.h"
#include "fdkinds.h"
#include "filedata.h"
#include "rt/xxh64.h"

struct fdata {
	int fd;			/* ours, on the file, until written (or -1) */
	uint32_t nx;
	struct ibcr_extent *x;
	uint8_t *bytes;		/* read in the freeze, or NULL: from fd */
};

/* The data extents of fd, up to size. */
static int extents(int fd, uint64_t size, struct fdata *d)
{
	off_t at = 0;

	while ((uint64_t)at < size) {
		off_t start = lseek(fd, at, SEEK_DATA), end;

		if (start < 0 && errno == ENXIO)
			break;	/* only a hole after at */
		if (start < 0)
			return -1;
		if ((end = lseek(fd, start, SEEK_HOLE)) < 0)
			return -1;
		if ((uint64_t)end > size)
			end = (off_t)size;
		if (end <= start)
			break;
		d->x = xrealloc(d->x, sizeof(*d->x) * (d->nx + 1));
		d->x[d->nx++] = (struct ibcr_extent){ (uint64_t)start, (uint64_t)(end - start) };
		at = end;
	}
	return 0;
}

static uint64_t data_bytes(const struct fdata *d)
{
	uint64_t n = 0;

	for (uint32_t k = 0; k < d->nx; k++)
		n += d->x[k].len;
	return n;
}

static int read_extents(const struct fdata *d, uint8_t *p)
{
	for (uint32_t k = 0; k < d->nx; k++) {
		if (pread_full(d->fd, p, d->x[k].len, d->x[k].off))
			return -1;
		p += d->x[k].len;
	}
	return 0;
}

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

int filedata_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", (int)pid, fd);
	return filedata_capture_path(proc, o, i, e);
}

int filedata_capture_path(const char *proc, struct fobjs *o, uint32_t i, struct ibcr_err *e)
{
	struct ibcr_fattr *a = &o->f.attrs[i];
	pid_t pid = o->rep_pid[i];
	int fd = o->rep_fd[i];
	struct fdata *d;
	struct stat st;
	uint64_t n;

	for (uint32_t k = 0; k < i; k++)
		if (o->f.objs[k].kind == o->f.objs[i].kind && o->f.objs[k].ino == o->f.objs[i].ino &&
		    o->f.objs[k].dev == o->f.objs[i].dev) {
			*a = o->f.attrs[k];	/* the same file: one copy, with object k */
			a->same_file = k + 1;
			a->flags &= ~(uint32_t)IBCR_FATTR_DATA;
			return 0;
		}
	o->fdata = xrealloc(o->fdata, sizeof(*o->fdata) * o->cap);
	d = &o->fdata[i];
	/* reading must not change the time it was last read (as the owner, or root) */
	*d = (struct fdata){ .fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOATIME) };
	if (d->fd < 0 && errno == EPERM)
		d->fd = open(proc, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0 || fstat(d->fd, &st))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: opening %s to save its contents",
				       (int)pid, fd, o->f.paths[i]);
	a->flags |= IBCR_FATTR_OWNER;
	a->uid = st.st_uid;
	a->gid = st.st_gid;
	a->atime_ns = ts_ns(&st.st_atim);
	if (extents(d->fd, o->f.objs[i].size, d))
		return ibcr_fail_errno(e, errno, "pid %d fd %d: finding the data of %s "
				       "(SEEK_DATA)", (int)pid, fd, o->f.paths[i]);
	n = data_bytes(d);
	a->flags |= IBCR_FATTR_DATA;
	a->nextents = d->nx;
	a->data_len = (uint64_t)d->nx * sizeof(struct ibcr_extent) + n;
	if (o->held_bytes + n > IBCR_MAX_FILE_DATA) {
		o->keep_stopped = 1;	/* read while writing: the file must not change */
		return 0;
	}
	d->bytes = xmalloc(n + 1);
	if (read_extents(d, d->bytes))
		return ibcr_fail_errno(e, errno ? errno : EIO, "pid %d fd %d: reading the %llu "
				       "bytes of %s", (int)pid, fd, (unsigned long long)n,
				       o->f.paths[i]);
	o->held_bytes += n;
	close(d->fd);
	d->fd = -1;
	return 0;
}

/* Object i's bytes into the open FILEDATA section, summed as filedata.h says. */
static int write_one(struct img_writer *w, struct fobjs *o, uint32_t i, uint8_t *buf,
		     struct ibcr_err *e)
{
	struct ibcr_fattr *a = &o->f.attrs[i];
	struct fdata *d = &o->fdata[i];
	uint64_t piece = 0, done = 0, total = a->data_len - (uint64_t)d->nx * sizeof(*d->x);
	uint32_t k = 0;
	uint64_t in = 0;

	a->data_off = imgw_payload_pos(w);
	a->data_sum = file_table_sum(d->x, d->nx);
	if (imgw_data(w, d->x, (uint64_t)d->nx * sizeof(*d->x), e))
		return -1;
	while (done < total) {
		size_t n = 0;

		while (n < FILE_CHUNK && k < d->nx) {
			uint64_t take = d->x[k].len - in;
			size_t m = take < FILE_CHUNK - n ? (size_t)take : FILE_CHUNK - n;

			if (d->bytes)
				memcpy(buf + n, d->bytes + done + n, m);
			else if (pread_full(d->fd, buf + n, m, d->x[k].off + in))
				return ibcr_fail_errno(e, errno ? errno : EIO, "pid %d fd %d: "
						       "reading %s (it changed meanwhile?)",
						       (int)o->rep_pid[i], o->rep_fd[i],
						       o->f.paths[i]);
			n += m;
			in += m;
			if (in == d->x[k].len)
				k++, in = 0;
		}
		a->data_sum = page_sum(a->data_sum, buf, n, FILE_CHUNK, piece++);
		if (imgw_data(w, buf, n, e))
			return -1;
		done += n;
	}
	return 0;
}

int filedata_write(struct img_writer *w, struct fobjs *o, struct ibcr_err *e)
{
	uint8_t *buf;
	int rc = 0, any = 0;

	for (uint32_t i = 0; i < o->f.nobjs; i++)
		any |= (o->f.attrs[i].flags & IBCR_FATTR_DATA) != 0;
	if (!any)
		return 0;	/* no file with bytes: no section */
	if (imgw_begin(w, IBCR_SEC_FILEDATA, IBCR_PROC_NONE, IBCR_SECF_CRC_PER_REGION, 8, e))
		return -1;
	buf = xmalloc(FILE_CHUNK);
	for (uint32_t i = 0; i < o->f.nobjs && !rc; i++) {
		static const uint8_t zero[8];
		uint64_t pos = imgw_payload_pos(w);

		if (!(o->f.attrs[i].flags & IBCR_FATTR_DATA))
			continue;
		rc = imgw_data(w, zero, (8 - pos % 8) % 8, e) || write_one(w, o, i, buf, e);
	}
	free(buf);
	if (!rc)
		rc = imgw_end(w, e);
	/* the copies of the file: same sum, same place */
	for (uint32_t i = 0; i < o->f.nobjs; i++)
		if (o->f.attrs[i].same_file) {
			const struct ibcr_fattr *src = &o->f.attrs[o->f.attrs[i].same_file - 1];

			o->f.attrs[i].data_sum = src->data_sum;
			o->f.attrs[i].data_off = src->data_off;
		}
	return rc;
}

void filedata_free(struct fobjs *o)
{
	for (uint32_t i = 0; o->fdata && i < o->f.nobjs; i++) {
		if (!(o->f.attrs[i].flags & IBCR_FATTR_DATA))
			continue;
		if (o->fdata[i].fd >= 0)
			close(o->fdata[i].fd);
		free(o->fdata[i].x);
		free(o->fdata[i].bytes);
	}
	free(o->fdata);
	o->fdata = NULL;
}
