// SPDX-License-Identifier: MIT
/*
 * The loader's share of the verbs stage (the shim does the rest inside
 * the restored process): refuse early when the image needs an RDMA
 * device and there is none, put stand-ins at the shim's descriptor
 * numbers, and have the core write the restart command, the rendezvous
 * directory, the peer timeout and the epoll entries that watch the
 * shim's descriptors into the shim's control object before any thread
 * resumes. See lib/verbs_abi.h and docs/verbs.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/capability.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "verbs_abi.h"
#include "loader.h"

static const struct ibcr_verbs_section *section_of(const struct ibcr_process_state *ps)
{
	for (uint32_t i = 0; i < ps->nopaque; i++)
		if (!strcmp(ps->opaque[i].name, IBCR_VERBS_SECTION) &&
		    ps->opaque[i].size == sizeof(struct ibcr_verbs_section))
			return (const void *)ps->opaque[i].data;
	return NULL;
}

static int count_devices(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

int verbs_preflight(const struct ibcr_process_state *ps, struct ibcr_err *e)
{
	const struct ibcr_verbs_section *s = section_of(ps);
	const struct ibcr_verbs_control *c;

	if (!s)
		return 0;
	c = &s->control;
	if (c->magic != IBCR_VERBS_MAGIC || c->abi != IBCR_VERBS_ABI ||
	    c->size != sizeof(*c) || c->nfds > IBCR_VERBS_MAX_FDS ||
	    c->ndevices > IBCR_VERBS_MAX_DEVICES)
		return ibcr_fail(e, "pid %d: the image's verbs section is of another "
				 "version or malformed", ps->rec.pid);
	if (c->state != IBCR_VSTATE_QUIESCED)
		return ibcr_fail(e, "pid %d: the verbs shim was not quiesced when the "
				 "image was made (state %d)", ps->rec.pid, c->state);
	if (c->ndevices && !count_devices())
		return ibcr_fail(e, "pid %d: the image needs an RDMA device (it used %.63s) "
				 "and this system has none (/sys/class/infiniband is empty)",
				 ps->rec.pid, c->devices[0]);
	return 0;
}

/* A pipe holding the completion events that wake blocked readers. */
static int channel_standin(const struct ibcr_verbs_fd *f, struct ibcr_err *e)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return ibcr_fail_errno(e, errno, "verbs channel fd %d: pipe", f->fd);
	for (uint32_t k = 0; k < f->nwake && k < IBCR_VERBS_MAX_WAKE; k++)
		if (write(p[1], &f->wake_cq[k], 8) != 8) {
			close(p[0]);
			close(p[1]);
			return ibcr_fail_errno(e, errno, "verbs channel fd %d: writing "
					       "its wake-up events", f->fd);
		}
	close(p[1]);
	return p[0];
}

int verbs_standins(struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_verbs_section *s = section_of(rs->ps);

	if (!s)
		return 0;
	for (uint32_t i = 0; i < s->control.nfds; i++) {
		const struct ibcr_verbs_fd *f = &s->control.fds[i];
		/* an eventfd that never becomes ready: an epoll can watch it */
		int fd = f->kind == IBCR_VFD_COMP_CHANNEL ? channel_standin(f, e) :
			 (int)syscall(SYS_eventfd2, 0, O_CLOEXEC);

		if (fd < 0)
			return f->kind == IBCR_VFD_COMP_CHANNEL ? -1 :
			       ibcr_fail_errno(e, errno, "verbs fd %d: an eventfd", f->fd);
		if (fd != f->fd && dup2(fd, f->fd) < 0) {
			close(fd);
			return ibcr_fail_errno(e, errno, "verbs fd %d: placing a stand-in",
					       f->fd);
		}
		if (fd != f->fd)
			close(fd);
	}
	return 0;
}

static void add_poke(struct restore *rs, uint64_t addr, const void *data, uint32_t len)
{
	struct poke *pk;

	rs->pokes = xrealloc(rs->pokes, sizeof(*rs->pokes) * (rs->npokes + 1));
	pk = &rs->pokes[rs->npokes++];
	pk->addr = addr;
	pk->len = len;
	pk->data = xmalloc(len);
	memcpy(pk->data, data, len);
}

/* Default rendezvous: the image's own directory, as an absolute path. */
static void rendezvous_dir(const char *image, char out[512])
{
	const char *env = getenv("IBCR_RENDEZVOUS");
	char *copy = xstrdup(image), *real;

	memset(out, 0, 512);
	if (env && *env) {
		strncpy(out, env, 511);
	} else {
		real = realpath(dirname(copy), NULL);
		strncpy(out, real ? real : ".", 511);
		free(real);
	}
	free(copy);
}

static int is_verbs_fd(const struct ibcr_verbs_control *c, int fd)
{
	for (uint32_t i = 0; i < c->nfds; i++)
		if (c->fds[i].fd == fd)
			return 1;
	return 0;
}

/* The fd number at which this process has file object i, or -1. */
static int fd_number(const struct restore *rs, uint32_t i)
{
	for (uint32_t k = 0; k < rs->ps->nfds; k++)
		if (rs->ps->fds[k].obj == i)
			return rs->ps->fds[k].fd;
	return -1;
}

/*
 * This process's epoll entries that watch a descriptor of the shim: the
 * loader adds them for the stand-ins (epoll_fill), the shim again for
 * the files it puts at those numbers (verbs_abi.h).
 */
static int epoll_entries(const struct restore *rs, const struct ibcr_verbs_control *c,
			 struct ibcr_verbs_epoll *out, uint32_t *n, struct ibcr_err *e)
{
	*n = 0;
	for (uint32_t i = 0; i < rs->files->nobjs; i++) {
		const struct ibcr_fobj *o = &rs->files->objs[i];
		const uint64_t *w = (const uint64_t *)rs->files->data[i];
		int epfd = fd_number(rs, i);

		if (o->kind != IBCR_FD_EPOLL || fobj_epoll_pid(o) != rs->ps->rec.pid ||
		    epfd < 0 || !w || o->data_len != fobj_epoll_entries(o) * 24)
			continue;	/* epoll_fill refuses a malformed one */
		for (uint64_t k = 0; k < fobj_epoll_entries(o); k++, w += 3) {
			if (!is_verbs_fd(c, (int)w[0]))
				continue;
			if (*n == IBCR_VERBS_MAX_EPOLL)
				return ibcr_fail(e, "pid %d: more than %d epoll entries watch "
						 "descriptors of the verbs shim", rs->ps->rec.pid,
						 IBCR_VERBS_MAX_EPOLL);
			out[*n] = (struct ibcr_verbs_epoll){ .epfd = epfd, .tfd = (int32_t)w[0],
							     .events = (uint32_t)w[1], .data = w[2] };
			(*n)++;
		}
	}
	return 0;
}

/*
 * The restored threads must keep sharing one credential (docs/design-notes.md,
 * "Shared credentials"): the kernel refuses a verbs command (EACCES) from
 * a thread whose credential is not the very one the device was opened
 * with. They do when the core sets them once for all (PLAN_CREDS_SHARED)
 * or changes nothing (they are the loader's already); otherwise (another
 * user's threads with their saved TIDs: the main thread could not make
 * them once it is that user) each would get one of its own: refused,
 * before the program runs. The child prefixes the pid.
 */
static int same_creds_as_loader(const struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_process_state *ps = rs->ps;
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	uint64_t eff, prm, inh;

	if (syscall(SYS_capget, &h, d))
		return ibcr_fail_errno(e, errno, "reading restart-loader's capabilities");
	eff = d[0].effective | (uint64_t)d[1].effective << 32;
	prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	for (uint32_t i = 0; i < ps->rec.nthreads; i++) {
		const struct ibcr_creds *c = &ps->priv.creds[i];

		if ((rs->cred_flags[i] & (PLAN_CRED_IDS | PLAN_CRED_LATE_CAPS |
					  PLAN_CRED_DUMP_ROOT)) ||
		    c->cap_eff != eff || c->cap_prm != prm || c->cap_inh != inh)
			return ibcr_fail(e, "a verbs process restored with other "
					 "credentials than restart-loader's would have its threads' "
					 "verbs commands refused by the kernel (EACCES): restore it "
					 "as the user it ran as, with the same capabilities");
	}
	return 0;
}

int verbs_creds_check(const struct restore *rs, const struct plan *p, struct ibcr_err *e)
{
	const struct ibcr_verbs_section *s = section_of(rs->ps);

	if (!s || !s->control.ndevices || (p->flags & PLAN_CREDS_SHARED))
		return 0;
	return same_creds_as_loader(rs, e);
}

int verbs_pokes(struct restore *rs, struct ibcr_err *e)
{
	const struct ibcr_verbs_section *s = section_of(rs->ps);
	const char *tmo = getenv("IBCR_RENDEZVOUS_TIMEOUT");
	uint64_t ms = (tmo && *tmo ? strtoull(tmo, NULL, 10) : 60) * 1000;
	int32_t cmd = IBCR_VCMD_RESTART;
	struct ibcr_verbs_epoll ep[IBCR_VERBS_MAX_EPOLL];
	uint32_t nep;
	char dir[512];

	if (!s)
		return 0;
	if (epoll_entries(rs, &s->control, ep, &nep, e))
		return -1;
	if (nep) {
		add_poke(rs, s->control_addr + offsetof(struct ibcr_verbs_control, epoll), ep,
			 nep * (uint32_t)sizeof(ep[0]));
		add_poke(rs, s->control_addr + offsetof(struct ibcr_verbs_control, nepoll),
			 &nep, sizeof(nep));
	}
	rendezvous_dir(rs->r->path, dir);
	add_poke(rs, s->control_addr + offsetof(struct ibcr_verbs_control, rendezvous),
		 dir, sizeof(dir));
	add_poke(rs, s->control_addr +
		 offsetof(struct ibcr_verbs_control, restart_timeout_ms), &ms, sizeof(ms));
	/* last: the shim's helper acts on cmd as soon as it runs */
	add_poke(rs, s->control_addr + offsetof(struct ibcr_verbs_control, cmd),
		 &cmd, sizeof(cmd));
	return 0;
}
