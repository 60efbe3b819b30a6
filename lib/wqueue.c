// SPDX-License-Identifier: MIT
/* Background writing of one file: see wqueue.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "buf.h"
#include "fdio.h"
#include "wqueue.h"

#define NBUF 4
/*
 * Direct writes wait for the disk: two in flight kept this machine's
 * disk busier than one (a plain 4 GiB write: 2.08-2.14 s against
 * 2.20-3.13 s). In the saver, whose reading of the snapshot is about as
 * slow here, no difference showed (4 GiB, four alternated runs each:
 * 2.04-2.92 s against 2.03-2.95 s); two stay for a reader faster than
 * the disk. Writes through the page cache take the file's lock anyway:
 * one thread.
 */
#define NWRITERS_DIRECT 2
/*
 * Writeback starts every this many bytes: the final fsync waits for at
 * most that much (32 MiB cost a 64 MiB checkpoint a quarter of its time).
 */
#define KICK (8ull << 20)

struct wqueue {
	int fd;
	int nth;		/* writer threads started */
	pthread_t th[NWRITERS_DIRECT];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint8_t *buf[NBUF];
	size_t len[NBUF];
	uint64_t off[NBUF];	/* where in the file each buffer goes */
	int busy[NBUF];		/* submitted, not yet written */
	uint64_t submitted;	/* buffers handed over so far */
	uint64_t taken;		/* of those, taken by a writer */
	uint64_t end;		/* the file offset after the last submitted */
	int direct;		/* still writing directly: see take */
	int inflight;		/* direct writes under way */
	uint64_t direct_bytes;	/* written so */
	int err;		/* the first errno of a write, 0 if none */
	int stop;
	uint64_t written, kicked;
};

/* Stops direct I/O for good (under the lock): 0, or -1 with errno set. */
static int stop_direct(struct wqueue *q)
{
	if (!q->direct)
		return 0;
	q->direct = 0;
	return fd_set_direct(q->fd, 0);
}

/*
 * Direct while every buffer so far was whole and aligned; the first that
 * is not (the tail of the file) turns direct I/O off, and it and all
 * after it go through the page cache. It waits for the direct writes in
 * flight first: one started after the switch would go through the cache
 * unseen (and be counted as direct). Under the lock.
 */
static int take(struct wqueue *q, int i, int *direct)
{
	if (q->direct && q->len[i] % WQ_DIRECT_ALIGN == 0 &&
	    q->off[i] % WQ_DIRECT_ALIGN == 0) {
		*direct = 1;
		q->inflight++;
		return 0;
	}
	*direct = 0;
	while (q->direct && q->inflight)
		pthread_cond_wait(&q->cv, &q->mu);
	return stop_direct(q);
}

/*
 * A direct write that fails or comes up short (a full disk, a file
 * system that refuses it after all) is finished through the page cache,
 * which reports the error if there is one. (A write the other thread
 * starts after that goes through the cache too, counted as direct: the
 * count is exact only where nothing failed.)
 */
static int put_buf(struct wqueue *q, int i, int direct)
{
	const uint8_t *p = q->buf[i];
	size_t len = q->len[i];
	uint64_t off = q->off[i];

	if (direct) {
		ssize_t k;

		do
			k = pwrite(q->fd, p, len, (off_t)off);
		while (k < 0 && errno == EINTR);
		if (k > 0) {
			pthread_mutex_lock(&q->mu);
			q->direct_bytes += (uint64_t)k;
			pthread_mutex_unlock(&q->mu);
		}
		if (k == (ssize_t)len)
			return 0;
		if (k > 0) {
			p += k;
			off += (uint64_t)k;
			len -= (size_t)k;
		}
		pthread_mutex_lock(&q->mu);
		int rc = stop_direct(q);

		pthread_mutex_unlock(&q->mu);
		if (rc)
			return -1;
	}
	return pwrite_full(q->fd, p, len, off);
}

/*
 * Writeback of what went through the page cache so far, without waiting
 * for it; only a hint (a file system without it just syncs later), so a
 * range another writer has not finished yet does no harm.
 */
static void kick(struct wqueue *q, size_t len)
{
	uint64_t from, n;

	pthread_mutex_lock(&q->mu);
	q->written += len;
	from = q->kicked;
	n = q->written - q->kicked;
	if (n >= KICK)
		q->kicked = q->written;
	pthread_mutex_unlock(&q->mu);
	if (n >= KICK)
		(void)sync_file_range(q->fd, (off_t)from, (off_t)n, SYNC_FILE_RANGE_WRITE);
}

static void *writer(void *arg)
{
	struct wqueue *q = arg;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (q->taken == q->submitted && !q->stop)
			pthread_cond_wait(&q->cv, &q->mu);
		if (q->taken == q->submitted)
			break;
		int i = (int)(q->taken++ % NBUF), err = 0, direct = 0;
		int skip = q->err != 0;	/* the image failed already */

		if (!skip && take(q, i, &direct))
			err = errno;
		pthread_mutex_unlock(&q->mu);
		if (!skip && !err) {
			err = put_buf(q, i, direct) ? errno : 0;
			if (!err && !direct)
				kick(q, q->len[i]);
		}
		pthread_mutex_lock(&q->mu);
		if (err && !q->err)
			q->err = err;
		if (direct)
			q->inflight--;
		q->busy[i] = 0;
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

static void free_bufs(struct wqueue *q)
{
	for (int i = 0; i < NBUF; i++)
		free(q->buf[i]);
	free(q);
}

struct wqueue *wq_open(int fd, int direct)
{
	struct wqueue *q = xcalloc(1, sizeof(*q));
	int want;

	q->fd = fd;
	/* a file system without direct I/O refuses it here: page cache then */
	q->direct = direct && !fd_set_direct(fd, 1);
	want = q->direct ? NWRITERS_DIRECT : 1;
	for (int i = 0; i < NBUF; i++)
		q->buf[i] = xmalloc_aligned(WQ_DIRECT_ALIGN, WQ_BUF_SIZE);
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	while (q->nth < want && !pthread_create(&q->th[q->nth], NULL, writer, q))
		q->nth++;
	if (!q->nth) {
		pthread_mutex_destroy(&q->mu);
		pthread_cond_destroy(&q->cv);
		free_bufs(q);
		return NULL;
	}
	return q;
}

uint8_t *wq_buf(struct wqueue *q)
{
	return q->buf[q->submitted % NBUF];
}

static int failed(struct wqueue *q)
{
	if (!q->err)
		return 0;
	errno = q->err;
	return -1;
}

int wq_submit(struct wqueue *q, size_t len)
{
	int i, rc;

	pthread_mutex_lock(&q->mu);
	i = (int)(q->submitted % NBUF);
	q->len[i] = len;
	q->off[i] = q->end;
	q->end += len;
	q->busy[i] = 1;
	q->submitted++;
	pthread_cond_broadcast(&q->cv);
	/* the next buffer to fill must be written out first */
	while (q->busy[q->submitted % NBUF])
		pthread_cond_wait(&q->cv, &q->mu);
	rc = failed(q);
	pthread_mutex_unlock(&q->mu);
	return rc;
}

static int any_busy(const struct wqueue *q)
{
	for (int i = 0; i < NBUF; i++)
		if (q->busy[i])
			return 1;
	return 0;
}

uint64_t wq_direct_bytes(struct wqueue *q)
{
	uint64_t n;

	pthread_mutex_lock(&q->mu);
	n = q->direct_bytes;
	pthread_mutex_unlock(&q->mu);
	return n;
}

int wq_drain(struct wqueue *q)
{
	int rc;

	pthread_mutex_lock(&q->mu);
	while (any_busy(q))
		pthread_cond_wait(&q->cv, &q->mu);
	rc = failed(q);
	pthread_mutex_unlock(&q->mu);
	return rc;
}

void wq_close(struct wqueue *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	q->stop = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	for (int i = 0; i < q->nth; i++)
		pthread_join(q->th[i], NULL);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	free_bufs(q);
}
