// SPDX-License-Identifier: MIT
/*
 * Lazy restore (restart-loader --lazy), the core's part: the regions the
 * loader marked lazy are mapped as any other, given their own anon_vma
 * (their first page, written and dropped, as own_anon_vma in mem.c does
 * for an empty region kept apart) and registered with one userfaultfd
 * for missing pages, not filled. Its descriptor goes to the loader (ST_LAZY),
 * which puts the pages in from then on, faults first, while the threads
 * are made and after they resume (loader/lazy.c). The userfaultfd is made
 * without UFFD_USER_MODE_ONLY: a page the kernel touches for the program
 * (a read(2) into it, the TID written at clone, an rseq area) must wait
 * for the loader too, not fail. That needs CAP_SYS_PTRACE (or
 * vm.unprivileged_userfaultfd): without it, or whenever the loader
 * cannot take the descriptor, the regions are filled here, as always.
 * From the hand-over on, the loader's fill thread serves every fault in
 * them, ours included (pokes, the threads' frames and TIDs written later
 * land there and wait for it like the program's own).
 */
#include <linux/ioctl.h>
#include <linux/mman.h>
#include <linux/userfaultfd.h>

#include "core.h"
#include "sys.h"

#define CORE_O_CLOEXEC 02000000
#define CORE_O_NONBLOCK 04000
#define LAZY_EVENTS (UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE | \
		     UFFD_FEATURE_EVENT_UNMAP)
#define LAZY_IOCTLS ((1ull << _UFFDIO_COPY) | (1ull << _UFFDIO_ZEROPAGE) | \
		     (1ull << _UFFDIO_WAKE))

static long uffd_ioctl(int fd, unsigned long req, void *arg)
{
	return SYS(__NR_ioctl, fd, req, arg, 0, 0, 0);
}

/* The userfaultfd for every lazy region, or -errno (lazy regions filled here). */
long core_lazy_open(struct plan *p)
{
	struct uffdio_api api = { .api = UFFD_API, .features = LAZY_EVENTS };
	long fd, rc;

	if (!(p->flags & PLAN_LAZY))
		return -1;
	if (p->flags & PLAN_NO_UFFD)
		return -95;	/* EOPNOTSUPP: IBCR_NO_UFFD=1 */
	fd = SYS(__NR_userfaultfd, CORE_O_CLOEXEC | CORE_O_NONBLOCK, 0, 0, 0, 0, 0);
	if (fd < 0)
		return fd;	/* EPERM: kernel faults need CAP_SYS_PTRACE */
	rc = uffd_ioctl((int)fd, UFFDIO_API, &api);
	if (rc || (api.features & LAZY_EVENTS) != LAZY_EVENTS) {
		sys_close((int)fd);
		return rc ? rc : -22 /* EINVAL */;
	}
	return fd;
}

/*
 * Region v registered: 1; 0 when it is no lazy one. A private anonymous
 * region refused by a userfaultfd that took the others is the kernel's
 * surprise: the restore stops rather than guess which are whose.
 */
int core_lazy_register(struct plan *p, long fd, const struct plan_vma *v)
{
	struct uffdio_register reg = {
		.range = { v->start, v->end - v->start },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	long rc;

	if (fd < 0 || !v->lazy || (p->flags & PLAN_NO_UFFD))
		return 0;
	rc = uffd_ioctl((int)fd, UFFDIO_REGISTER, &reg);
	if (rc || (reg.ioctls & LAZY_IOCTLS) != LAZY_IOCTLS)
		core_die(p, "region %#lx-%#lx (%s): registering it for a lazy fill: error %ld",
			 (unsigned long)v->start, (unsigned long)v->end, v->name,
			 rc ? -rc : 22L);
	return 1;
}

/*
 * ST_LAZY, our descriptor's number and the errno that kept us from making
 * one (0 when fd is one): with a descriptor, the loader answers CT_DONE
 * (it serves the regions from now on) or CT_CANNOT (it cannot: we fill them).
 */
static char tell_loader(struct plan *p, long fd)
{
	struct st_lazy msg = { ST_LAZY, fd < 0 ? -1 : (int32_t)fd, fd < 0 ? (int32_t)-fd : 0 };
	char reply = CT_CANNOT;

	if (sys_write(p->status_fd, &msg, sizeof(msg)) != sizeof(msg))
		sys_exit_group(127);
	if (fd >= 0 && (sys_read(p->control_fd, &reply, 1) != 1 ||
			(reply != CT_DONE && reply != CT_CANNOT)))
		sys_exit_group(127);	/* the loader said why */
	return reply;
}

/* The lazy regions, filled here after all: the loader could not take them. */
static void fill_here(struct plan *p, long fd)
{
	for (uint64_t i = 0; i < p->nvmas; i++) {
		const struct plan_vma *v = &p->vmas[i];
		struct uffdio_range r = { v->start, v->end - v->start };
		uint64_t upto = 0;
		uint32_t sum;

		if (!v->lazy || !v->data_len)
			continue;
		sum = uffd_fill(p, v, (int)fd, &upto);
		if (upto != v->data_len || sum != v->data_crc)
			core_die(p, "image %s: region %#lx-%#lx (%s): page data is corrupt "
				 "(checksum mismatch); nothing was resumed", p->image_path,
				 (unsigned long)v->start, (unsigned long)v->end, v->name);
		if (uffd_ioctl((int)fd, UFFDIO_UNREGISTER, &r))
			core_die(p, "region %#lx-%#lx (%s): unregistering its userfaultfd "
				 "failed", (unsigned long)v->start, (unsigned long)v->end, v->name);
	}
}

void core_lazy_handover(struct plan *p, long fd, uint64_t nregistered)
{
	if (!(p->flags & PLAN_LAZY))
		return;
	if (fd >= 0 && !nregistered) {
		sys_close((int)fd);
		fd = -2;	/* ENOENT: nothing came out lazy */
	}
	if (tell_loader(p, fd) == CT_CANNOT && fd >= 0)
		fill_here(p, fd);
	/* the loader holds its own: ours would be an fd the program never had */
	if (fd >= 0)
		sys_close((int)fd);
}
