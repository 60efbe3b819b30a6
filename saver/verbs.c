// SPDX-License-Identifier: MIT
/*
 * Processes that run with the verbs shim (libibcr-verbs.so) are brought
 * to a quiet point by the shim itself, while they still run: the saver
 * writes commands into the shim's control object (lib/verbs_abi.h)
 * and waits for its answers. Phase 1 (sends complete) runs in every
 * process before phase 2 (drain every CQ), so that no completion caused
 * by a peer's last send arrives after a CQ was drained. The control
 * object then goes into the image as the OPAQUE "verbs" section, and the
 * shim's descriptors and device mappings are left to the restore stage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "elfsym.h"
#include "verbs_abi.h"
#include "procfs.h"
#include "saver.h"

#define QUIESCE_TIMEOUT_MS 60000

static int rw(struct target *t, uint64_t off, void *buf, size_t n, int write,
	      struct ibcr_err *e)
{
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)(t->verbs_addr + off), n };
	ssize_t k = write ? process_vm_writev(t->pid, &l, 1, &r, 1, 0) :
			    process_vm_readv(t->pid, &l, 1, &r, 1, 0);

	if (k != (ssize_t)n)
		return ibcr_fail_errno(e, k < 0 ? errno : EIO, "pid %d: %s the verbs "
				       "shim's control object", (int)t->pid,
				       write ? "writing" : "reading");
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

int verbs_find(struct target *t, struct ibcr_err *e)
{
	struct maps_entry *m;
	uint64_t value;
	size_t n;
	int rc = 0;

	t->verbs_addr = 0;
	if (maps_read(t->pid, 0, &m, &n, e))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!ends_with(m[i].path, "/libibcr-verbs.so") || m[i].pgoff != 0)
			continue;
		rc = elf_dynsym(m[i].path, IBCR_VERBS_SYMBOL, &value, e);
		if (!rc)
			t->verbs_addr = m[i].start + value;
		break;
	}
	maps_free(m, n);
	if (rc || !t->verbs_addr)
		return rc;
	t->verbs = calloc(1, sizeof(*t->verbs));
	if (!t->verbs || rw(t, 0, t->verbs, sizeof(*t->verbs), 0, e))
		return -1;
	if (t->verbs->magic != IBCR_VERBS_MAGIC || t->verbs->abi != IBCR_VERBS_ABI ||
	    t->verbs->size != sizeof(*t->verbs))
		return ibcr_fail(e, "pid %d: its verbs shim speaks another protocol "
				 "(abi %u, size %u; this saver: %u, %zu)", (int)t->pid,
				 t->verbs->abi, t->verbs->size, IBCR_VERBS_ABI,
				 sizeof(*t->verbs));
	/*
	 * A shim that never opened a device (mpirun started with
	 * ibcr-launch, a shell) has no helper to answer and no state: the
	 * process is saved as any other; verbs_after_seize looks again.
	 */
	if (!t->verbs->ndevices && !t->verbs->nfds && t->verbs->state == IBCR_VSTATE_RUNNING) {
		free(t->verbs);
		t->verbs = NULL;
	}
	return 0;
}

/*
 * A byte in the shim's wake pipe: its helper thread looks at `cmd` now,
 * not within a second. A full pipe has a byte already.
 */
void verbs_wake(struct target *t)
{
	char path[64];
	int fd;

	if (!t->verbs || t->verbs->wake_fd < 0)
		return;	/* no helper: nothing to wake */
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)t->pid, t->verbs->wake_fd);
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;		/* the helper polls once a second anyway */
	if (write(fd, "w", 1) < 0 && errno != EAGAIN)
		fprintf(stderr, "saver: note: pid %d: waking the verbs shim: %s\n",
			(int)t->pid, strerror(errno));
	close(fd);
}

static int send_cmd(struct target *t, int32_t cmd, struct ibcr_err *e)
{
	if (rw(t, offsetof(struct ibcr_verbs_control, cmd), &cmd, sizeof(cmd), 1, e))
		return -1;
	verbs_wake(t);
	return 0;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Waits until every shim says `want`; a FAILED shim stops it with its message. */
static int wait_state(struct target *t, uint32_t n, int32_t want, struct ibcr_err *e)
{
	long deadline = now_ms() + QUIESCE_TIMEOUT_MS;

	for (uint32_t i = 0; i < n; i++) {
		int32_t st;

		while (t[i].verbs) {
			if (rw(&t[i], offsetof(struct ibcr_verbs_control, state), &st,
			       sizeof(st), 0, e))
				return -1;
			if (st == want)
				break;
			if (st == IBCR_VSTATE_FAILED) {
				rw(&t[i], 0, t[i].verbs, sizeof(*t[i].verbs), 0, e);
				t[i].verbs->message[sizeof(t[i].verbs->message) - 1] = 0;
				return ibcr_fail(e, "pid %d: the verbs shim could not quiesce: %s",
						 (int)t[i].pid, t[i].verbs->message);
			}
			if (now_ms() > deadline)
				return ibcr_fail(e, "pid %d: the verbs shim did not quiesce "
						 "within %d s (state %d)", (int)t[i].pid,
						 QUIESCE_TIMEOUT_MS / 1000, st);
			usleep(2000);
		}
	}
	return 0;
}

static int all_cmd(struct target *t, uint32_t n, int32_t cmd, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < n; i++)
		if (t[i].verbs && send_cmd(&t[i], cmd, e))
			return -1;
	return 0;
}

/* Phase 1 in every process (and, with --barrier, on every node) first. */
int verbs_quiesce_sends(struct target *t, uint32_t n, struct ibcr_err *e)
{
	return all_cmd(t, n, IBCR_VCMD_QUIESCE_SENDS, e) ||
	       wait_state(t, n, IBCR_VSTATE_SENDS_DONE, e) ? -1 : 0;
}

int verbs_quiesce_drain(struct target *t, uint32_t n, struct ibcr_err *e)
{
	if (all_cmd(t, n, IBCR_VCMD_QUIESCE_DRAIN, e) ||
	    wait_state(t, n, IBCR_VSTATE_QUIESCED, e))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (t[i].verbs && rw(&t[i], 0, t[i].verbs, sizeof(*t[i].verbs), 0, e))
			return -1;
	return 0;
}

void verbs_release(struct target *t, uint32_t n)
{
	struct ibcr_err ignored;

	all_cmd(t, n, IBCR_VCMD_RELEASE, &ignored);
}

int verbs_owns_fd(const struct target *t, int fd)
{
	if (!t->verbs)
		return 0;
	for (uint32_t i = 0; i < t->verbs->nfds && i < IBCR_VERBS_MAX_FDS; i++)
		if (t->verbs->fds[i].fd == fd)
			return 1;
	return 0;
}

int verbs_write_section(struct target *t, uint32_t proc, struct img_writer *w,
			struct ibcr_err *e)
{
	struct ibcr_verbs_section s = { .control_addr = t->verbs_addr };

	if (!t->verbs)
		return 0;
	s.control = *t->verbs;
	return imgw_section(w, IBCR_SEC_OPAQUE, proc, IBCR_VERBS_SECTION, &s, sizeof(s), e);
}
