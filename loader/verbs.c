// SPDX-License-Identifier: MIT
/*
 * The loader's share of the verbs stage (the shim does the rest inside
 * the restored process): refuse early when the image needs an RDMA
 * device and there is none, put stand-ins at the shim's descriptor
 * numbers, and have the core write the restart command, the rendezvous
 * directory and the peer timeout into the shim's control object before
 * any thread resumes. See verbs/ibcr_verbs_abi.h and docs/verbs.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "ibcr_verbs_abi.h"
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
		int fd = f->kind == IBCR_VFD_COMP_CHANNEL ? channel_standin(f, e) :
			 open("/dev/null", O_RDWR | O_CLOEXEC);

		if (fd < 0)
			return f->kind == IBCR_VFD_COMP_CHANNEL ? -1 :
			       ibcr_fail_errno(e, errno, "verbs fd %d: /dev/null", f->fd);
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

void verbs_pokes(struct restore *rs)
{
	const struct ibcr_verbs_section *s = section_of(rs->ps);
	const char *tmo = getenv("IBCR_RENDEZVOUS_TIMEOUT");
	uint64_t ms = (tmo && *tmo ? strtoull(tmo, NULL, 10) : 60) * 1000;
	int32_t cmd = IBCR_VCMD_RESTART;
	char dir[512];

	if (!s)
		return;
	rendezvous_dir(rs->r->path, dir);
	add_poke(rs, s->control_addr + offsetof(struct ibcr_verbs_control, rendezvous),
		 dir, sizeof(dir));
	add_poke(rs, s->control_addr +
		 offsetof(struct ibcr_verbs_control, restart_timeout_ms), &ms, sizeof(ms));
	/* last: the shim's helper acts on cmd as soon as it runs */
	add_poke(rs, s->control_addr + offsetof(struct ibcr_verbs_control, cmd),
		 &cmd, sizeof(cmd));
}
