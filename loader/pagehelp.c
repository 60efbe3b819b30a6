// SPDX-License-Identifier: MIT
/*
 * The loader's share of filling a large region of an uncompressed image.
 * Filling memory is mostly the kernel's work per page (fault, zero,
 * copy), and the core is one thread: so for a large region it asks ('H',
 * the region's index and a byte offset into its page data) the loader,
 * idle meanwhile on another CPU, to put the data from that offset to the
 * end in place with process_vm_writev, while it fills the part before
 * the offset itself. The core sums the whole region once the loader
 * answers 'K': the checksum is checked by the core as for any region, in
 * order, before any thread resumes.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "buf.h"
#include "loader.h"

#define HELP_BUF (4u << 20)

/* k bytes of the image at off, whole. */
static int read_full(int fd, uint8_t *p, size_t k, uint64_t off)
{
	while (k) {
		ssize_t got = pread(fd, p, k, (off_t)off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			errno = got ? errno : EIO;
			return -1;
		}
		p += got;
		k -= (size_t)got;
		off += (uint64_t)got;
	}
	return 0;
}

/*
 * process_vm_writev copies once; /proc/PID/mem copies through a kernel
 * page but also writes read-only regions without making them writable.
 */
int pages_write(struct pages *pg, uint64_t addr, const uint8_t *p, size_t k)
{
	struct iovec local = { (void *)p, k }, remote = { (void *)(uintptr_t)addr, k };

	if (process_vm_writev(pg->child, &local, 1, &remote, 1, 0) == (ssize_t)k)
		return 0;
	return pwrite(pg->memfd, p, k, (off_t)addr) == (ssize_t)k ? 0 : -1;
}

int pages_help(struct pages *pg, uint32_t idx, uint64_t from, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = pg->ps;
	const struct ibcr_vma *v;
	uint64_t size = (uint64_t)getpagesize(), pos = 0;

	if (idx >= ps->nvmas || from > ps->vmas[idx].data_len)
		return ibcr_fail(e, "the core asked for help with region %u at %llu", idx,
				 (unsigned long long)from);
	v = &ps->vmas[idx];
	if (!pg->help_buf)
		pg->help_buf = xmalloc(HELP_BUF);
	for (uint64_t r = v->run0; r < v->run0 + v->nruns; r++) {
		uint64_t len = ps->runs[r].npages * size;

		for (uint64_t at = from > pos ? from - pos : 0; at < len; ) {
			size_t k = len - at < HELP_BUF ? (size_t)(len - at) : HELP_BUF;

			if (read_full(pg->img_fd, pg->help_buf, k,
				      ps->pages_off + v->data_off + pos + at))
				return ibcr_fail_errno(e, errno, "image %s: reading region "
						       "%#llx-%#llx", pg->path,
						       (unsigned long long)v->start,
						       (unsigned long long)v->end);
			if (pages_write(pg, ps->runs[r].addr + at, pg->help_buf, k))
				return ibcr_fail_errno(e, errno, "writing region %#llx-%#llx "
						       "(%s) into the restored process",
						       (unsigned long long)v->start,
						       (unsigned long long)v->end,
						       ps->vma_names[idx]);
			at += k;
		}
		pos += len;
	}
	return 0;
}
