// SPDX-License-Identifier: MIT
/*
 * Image reader: structure checks, section payloads, decoding of one
 * process with every internal reference checked. A damaged image is
 * always reported here, naming the section or region, before a restore
 * changes anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "buf.h"
#include "rt/crc32c.h"
#include "image_io.h"

const char *ibcr_sec_type_name(uint32_t type)
{
	switch (type) {
	case IBCR_SEC_PROC: return "PROC";
	case IBCR_SEC_THREAD: return "THREAD";
	case IBCR_SEC_SIGACT: return "SIGACT";
	case IBCR_SEC_FILES: return "FILES";
	case IBCR_SEC_PAGES: return "PAGES";
	case IBCR_SEC_VMAS: return "VMAS";
	case IBCR_SEC_OPAQUE: return "OPAQUE";
	case IBCR_SEC_FILEOBJS: return "FILEOBJS";
	case IBCR_SEC_SYSVSHM: return "SYSVSHM";
	case IBCR_SEC_SYSVSEM: return "SYSVSEM";
	case IBCR_SEC_SYSVMSG: return "SYSVMSG";
	case IBCR_SEC_CREDS: return "CREDS";
	case IBCR_SEC_SECCOMP: return "SECCOMP";
	case IBCR_SEC_COW: return "COW";
	case IBCR_SEC_PAGESUMS: return "PAGESUMS";
	case IBCR_SEC_PATTRS: return "PATTRS";
	case IBCR_SEC_TATTRS: return "TATTRS";
	case IBCR_SEC_PTIMERS: return "PTIMERS";
	case IBCR_SEC_FILEDATA: return "FILEDATA";
	case IBCR_SEC_FILEATTRS: return "FILEATTRS";
	case IBCR_SEC_BACKING: return "BACKING";
	case IBCR_SEC_VDSO: return "VDSO";
	case IBCR_SEC_SOCKOPTS: return "SOCKOPTS";
	case IBCR_SEC_NETLOCK: return "NETLOCK";
	case IBCR_SEC_END: return "END";
	}
	return "unknown";
}

const char *ibcr_vma_label(const struct ibcr_process_state *ps, uint32_t vma)
{
	const struct ibcr_vma *v = &ps->vmas[vma];

	if (ps->vma_names && ps->vma_names[vma] && ps->vma_names[vma][0])
		return ps->vma_names[vma];
	if (v->flags & IBCR_VMAF_STACK)
		return "stack";
	if (v->flags & IBCR_VMAF_HEAP)
		return "heap";
	return v->kind == IBCR_VMA_SHMEM ? "shared memory" : "anonymous memory";
}

const char *ibcr_arch_name(uint32_t arch)
{
	switch (arch) {
	case IBCR_ARCH_X86_64: return "x86_64";
	case IBCR_ARCH_AARCH64: return "aarch64";
	}
	return "unknown";
}

uint32_t ibcr_host_arch(void)
{
#if defined(__x86_64__)
	return IBCR_ARCH_X86_64;
#elif defined(__aarch64__)
	return IBCR_ARCH_AARCH64;
#else
	return 0;
#endif
}

static int check_file_hdr(struct img_reader *r, struct ibcr_err *e)
{
	struct ibcr_file_hdr *h = &r->hdr;

	if (r->size < sizeof(*h) || pread_full(r->fd, h, sizeof(*h), 0))
		return ibcr_fail(e, "image %s: too short to be an ibcr image (%llu bytes)",
				 r->path, (unsigned long long)r->size);
	if (memcmp(h->magic, IBCR_MAGIC, 8))
		return ibcr_fail(e, "image %s: not an ibcr image (bad magic)", r->path);
	if (h->crc != crc32c(0, h, offsetof(struct ibcr_file_hdr, crc)))
		return ibcr_fail(e, "image %s: file header is corrupt (CRC mismatch)",
				 r->path);
	if (h->version > IBCR_VERSION)
		return ibcr_fail(e, "image %s: format version %u is newer than this "
				 "program supports (%u); use a newer ibcr",
				 r->path, h->version, IBCR_VERSION);
	if (h->version < IBCR_VERSION)
		return ibcr_fail(e, "image %s: format version %u was made by an older saver "
				 "(its page checksums are computed otherwise); this one reads "
				 "version %u", r->path, h->version, IBCR_VERSION);
	if (h->hdr_size != sizeof(*h) || (h->flags & ~(uint32_t)IBCR_HDRF_SELF_CONTAINED))
		return ibcr_fail(e, "image %s: unsupported header (version %u, size %u, flags %#x)",
				 r->path, h->version, h->hdr_size, h->flags);
	if (h->page_size < 4096 || h->page_size > 65536 ||
	    (h->page_size & (h->page_size - 1)))
		return ibcr_fail(e, "image %s: invalid page size %u", r->path,
				 h->page_size);
	if (h->nprocs == 0 || h->nprocs > 4096)
		return ibcr_fail(e, "image %s: invalid process count %u", r->path,
				 h->nprocs);
	return 0;
}

/* Reads and checks section header number `n` at `off`. */
static int read_sec(struct img_reader *r, uint32_t n, uint64_t off,
		    struct img_section *s, struct ibcr_err *e)
{
	struct ibcr_sec_hdr *h = &s->h;

	if (off + sizeof(*h) > r->size)
		return ibcr_fail(e, "image %s: truncated: section %u at offset %llu "
				 "is cut off (file ends at %llu)", r->path, n,
				 (unsigned long long)off, (unsigned long long)r->size);
	if (pread_full(r->fd, h, sizeof(*h), off))
		return ibcr_fail_errno(e, errno, "image %s: reading section %u", r->path, n);
	if (h->magic != IBCR_SEC_MAGIC ||
	    h->hdr_crc != crc32c(0, h, offsetof(struct ibcr_sec_hdr, hdr_crc)))
		return ibcr_fail(e, "image %s: section %u at offset %llu: header is "
				 "corrupt (CRC mismatch)", r->path, n,
				 (unsigned long long)off);
	s->off = off;
	s->payload = off + sizeof(*h) + h->pad;
	if (h->pad > 65536 || s->payload + h->size < s->payload ||
	    s->payload + h->size > r->size)
		return ibcr_fail(e, "image %s: truncated: %s section %u at offset %llu "
				 "needs %llu bytes, file ends at %llu", r->path,
				 ibcr_sec_type_name(h->type), n, (unsigned long long)off,
				 (unsigned long long)(s->payload + h->size),
				 (unsigned long long)r->size);
	/* an image-wide section nobody reads would be ignored: refused */
	if (!strcmp(ibcr_sec_type_name(h->type), "unknown"))
		return ibcr_fail(e, "image %s: section %u at offset %llu has type %u, which "
				 "this reader does not know", r->path, n, (unsigned long long)off,
				 h->type);
	if (h->type != IBCR_SEC_END && h->proc != IBCR_PROC_NONE &&
	    h->proc >= r->hdr.nprocs)
		return ibcr_fail(e, "image %s: %s section %u names process %u of %u",
				 r->path, ibcr_sec_type_name(h->type), n, h->proc,
				 r->hdr.nprocs);
	return 0;
}

static int check_end(struct img_reader *r, struct img_section *s, uint32_t n,
		     struct ibcr_err *e)
{
	struct ibcr_end end;

	if (s->h.size != sizeof(end) || pread_full(r->fd, &end, sizeof(end), s->payload) ||
	    crc32c(0, &end, sizeof(end)) != s->h.data_crc)
		return ibcr_fail(e, "image %s: END section is corrupt", r->path);
	if (end.nsections != n || end.file_size != s->off)
		return ibcr_fail(e, "image %s: END section does not match the image "
				 "(%llu sections expected, %u found)", r->path,
				 (unsigned long long)end.nsections, n);
	if (s->payload + s->h.size != r->size)
		return ibcr_fail(e, "image %s: %llu unexpected bytes after the END section",
				 r->path, (unsigned long long)(r->size - s->payload - s->h.size));
	return 0;
}

/* Bytes that no CRC covers must be zero, so that no flipped byte passes. */
static int check_zero(struct img_reader *r, uint64_t off, uint64_t len,
		      struct ibcr_err *e)
{
	uint8_t buf[4096];

	while (len) {
		size_t k = len < sizeof(buf) ? (size_t)len : sizeof(buf);

		if (pread_full(r->fd, buf, k, off))
			return ibcr_fail_errno(e, errno, "image %s: reading at %llu",
					       r->path, (unsigned long long)off);
		for (size_t i = 0; i < k; i++)
			if (buf[i])
				return ibcr_fail(e, "image %s: padding at offset %llu is "
						 "corrupt (not zero)", r->path,
						 (unsigned long long)(off + i));
		off += k;
		len -= k;
	}
	return 0;
}

int imgr_open(struct img_reader *r, const char *path, struct ibcr_err *e)
{
	struct stat st;
	uint64_t off;
	uint32_t cap = 64;

	memset(r, 0, sizeof(*r));
	r->path = xstrdup(path);
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		ibcr_fail_errno(e, errno, "opening image %s", path);
		goto fail;
	}
	if (fstat(r->fd, &st)) {
		ibcr_fail_errno(e, errno, "image %s", path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ibcr_fail(e, "image %s: not a regular file", path);
		goto fail;
	}
	r->size = (uint64_t)st.st_size;
	if (check_file_hdr(r, e))
		goto fail;
	r->secs = xmalloc(sizeof(*r->secs) * cap);
	for (off = sizeof(struct ibcr_file_hdr);; ) {
		struct img_section *s;
		uint64_t aligned = (off + 7) & ~7ull;

		if (aligned > off && aligned <= r->size && check_zero(r, off, aligned - off, e))
			goto fail;
		off = aligned;
		if (r->nsecs == cap) {
			cap *= 2;
			r->secs = xrealloc(r->secs, sizeof(*r->secs) * cap);
		}
		s = &r->secs[r->nsecs];
		if (off >= r->size) {
			ibcr_fail(e, "image %s: truncated: no END section after %u sections "
				  "(file ends at %llu)", path, r->nsecs,
				  (unsigned long long)r->size);
			goto fail;
		}
		if (read_sec(r, r->nsecs, off, s, e) ||
		    check_zero(r, off + sizeof(s->h), s->h.pad, e))
			goto fail;
		if (s->h.type == IBCR_SEC_END) {
			if (check_end(r, s, r->nsecs, e))
				goto fail;
			break;
		}
		r->nsecs++;
		off = s->payload + s->h.size;
	}
	return 0;
fail:
	imgr_close(r);
	return -1;
}

void imgr_close(struct img_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->secs);
	free(r->path);
	r->secs = NULL;
	r->path = NULL;
}

int imgr_payload(struct img_reader *r, uint32_t idx, uint8_t **out,
		 struct ibcr_err *e)
{
	struct img_section *s = &r->secs[idx];
	uint8_t *p;

	if (s->h.size > (1ull << 32))
		return ibcr_fail(e, "image %s: %s section %u is implausibly large (%llu bytes)",
				 r->path, ibcr_sec_type_name(s->h.type), idx,
				 (unsigned long long)s->h.size);
	p = xmalloc(s->h.size + 1);
	if (pread_full(r->fd, p, s->h.size, s->payload)) {
		free(p);
		return ibcr_fail_errno(e, errno, "image %s: reading %s section %u",
				       r->path, ibcr_sec_type_name(s->h.type), idx);
	}
	if (crc32c(0, p, s->h.size) != s->h.data_crc) {
		free(p);
		char whose[32] = "image-wide";

		if (s->h.proc != IBCR_PROC_NONE)
			snprintf(whose, sizeof(whose), "process %u", s->h.proc);
		return ibcr_fail(e, "image %s: %s section %u (%s) is corrupt "
				 "(CRC mismatch)", r->path, ibcr_sec_type_name(s->h.type),
				 idx, whose);
	}
	p[s->h.size] = 0;
	*out = p;
	return 0;
}
