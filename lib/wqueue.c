// SPDX-License-Identifier: MIT
/* Ordered background writing of one file: see wqueue.h. */
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
 * Writeback starts every this many bytes: the final fsync waits for at
 * most that much (32 MiB cost a 64 MiB checkpoint a quarter of its time).
 */
#define KICK (8ull << 20)

struct wqueue {
	int fd;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint8_t *buf[NBUF];
	size_t len[NBUF];
	int fill;		/* the buffer the caller fills */
	int next;		/* the next buffer the thread writes */
	int pending;		/* submitted, not yet written */
	int err;		/* the thread's first errno, 0 if none */
	int stop;
	uint64_t written, kicked;
};

/* Writeback of what is written so far, without waiting for it. */
static void kick(struct wqueue *q)
{
	if (q->written - q->kicked < KICK)
		return;
	/* only a hint: a file system without it just syncs later */
	(void)sync_file_range(q->fd, (off_t)q->kicked, (off_t)(q->written - q->kicked),
			      SYNC_FILE_RANGE_WRITE);
	q->kicked = q->written;
}

static void *writer(void *arg)
{
	struct wqueue *q = arg;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->pending && !q->stop)
			pthread_cond_wait(&q->cv, &q->mu);
		if (!q->pending)
			break;
		int i = q->next, err = 0;

		pthread_mutex_unlock(&q->mu);
		if (!q->err) {
			err = write_full(q->fd, q->buf[i], q->len[i]) ? errno : 0;
			q->written += q->len[i];
			kick(q);
		}
		pthread_mutex_lock(&q->mu);
		if (err && !q->err)
			q->err = err;
		q->next = (i + 1) % NBUF;
		q->pending--;
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

struct wqueue *wq_open(int fd)
{
	struct wqueue *q = xcalloc(1, sizeof(*q));

	q->fd = fd;
	for (int i = 0; i < NBUF; i++)
		q->buf[i] = xmalloc(WQ_BUF_SIZE);
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	if (pthread_create(&q->th, NULL, writer, q)) {
		for (int i = 0; i < NBUF; i++)
			free(q->buf[i]);
		free(q);
		return NULL;
	}
	return q;
}

uint8_t *wq_buf(struct wqueue *q)
{
	return q->buf[q->fill];
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
	int rc;

	pthread_mutex_lock(&q->mu);
	q->len[q->fill] = len;
	q->pending++;
	q->fill = (q->fill + 1) % NBUF;
	pthread_cond_broadcast(&q->cv);
	/* the next buffer to fill must be written out first */
	while (q->pending == NBUF)
		pthread_cond_wait(&q->cv, &q->mu);
	rc = failed(q);
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int wq_drain(struct wqueue *q)
{
	int rc;

	pthread_mutex_lock(&q->mu);
	while (q->pending)
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
	pthread_join(q->th, NULL);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	for (int i = 0; i < NBUF; i++)
		free(q->buf[i]);
	free(q);
}
