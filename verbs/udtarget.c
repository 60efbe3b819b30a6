/* SPDX-License-Identifier: MIT */
/*
 * UD destinations after a restart: the real AH recreated on first use,
 * the destination QPN translated from the peer tables or from the
 * destination's announcement in the rendezvous directory.
 */
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"

struct ibv_ah *ah_recreate(struct sah *h)
{
	struct ibv_ah_attr a = h->attr;
	struct rdev *rd = NULL;
	struct ibv_ah *real;

	xl_ah_attr(&a, &rd);
	real = R.create_ah(h->pd->real, &a);
	if (!real)
		return NULL;
	__atomic_store_n(&h->rdev, rd, __ATOMIC_RELEASE);
	__atomic_store_n(&h->real, real, __ATOMIC_RELEASE);
	return real;
}

struct ibv_ah *ud_real_ah(struct sah *h)
{
	struct ibv_ah *r = __atomic_load_n(&h->real, __ATOMIC_ACQUIRE);

	if (likely(r))
		return r;
	pthread_mutex_lock(&S.lock);
	r = h->real ? h->real : ah_recreate(h);
	pthread_mutex_unlock(&S.lock);
	return r;
}

/*
 * The current QPN of a UD destination: from the tables when known, else
 * from the destination's announcement in the rendezvous directory (it is
 * written once the destination is rebuilt), else unchanged.
 */
uint32_t ud_remote_qpn(struct sah *h, uint32_t qpn)
{
	struct rdev *rd = __atomic_load_n(&h->rdev, __ATOMIC_ACQUIRE);
	struct vaddr a;
	char name[256];
	uint64_t v, deadline;
	char *t = NULL;
	int i;

	if (likely(rd && ht_get(&rd->qpn, qpn, &v)))
		return (uint32_t)v;
	ah_addr(&h->attr, &a);
	pthread_mutex_lock(&S.lock);
	rd = rdev_find(&a);
	if (rd && ht_get(&rd->qpn, qpn, &v))
		goto found;
	for (i = 0; i < S.n_ud_neg; i++)
		if (S.ud_neg[i].qpn == qpn && addr_eq(&S.ud_neg[i].a, &a)) {
			pthread_mutex_unlock(&S.lock);
			return qpn;
		}
	ud_pub_name(name, sizeof name, &a, qpn);
	/* A destination restarted with us announces itself within the
	 * restart's window; after it, a missing announcement means a QP this
	 * restart does not know (created since): no waiting then. */
	deadline = S.restart_start_ns + restart_timeout() * 1000000ull;
	for (;;) {
		if (read_pub(name, &t) == 1)
			break;
		if (now_ns(CLOCK_REALTIME) > deadline) {
			char as[40];

			addr_str(&a, as);
			dbg("UD destination QP 0x%x at %s did not announce itself in %s; "
			    "sending to it untranslated", qpn, as, rdv_dir());
			if (S.n_ud_neg < (int)(sizeof S.ud_neg / sizeof S.ud_neg[0])) {
				S.ud_neg[S.n_ud_neg].a = a;
				S.ud_neg[S.n_ud_neg].qpn = qpn;
				S.n_ud_neg++;
			}
			pthread_mutex_unlock(&S.lock);
			return qpn;
		}
		sleep_ms(5);
	}
	ingest(t);
	free(t);
	rd = rdev_find(&a);
	if (!rd || !ht_get(&rd->qpn, qpn, &v)) {
		pthread_mutex_unlock(&S.lock);
		return qpn;
	}
found:
	if (h->rdev != rd) {
		/* The destination's address may have changed too. */
		struct ibv_ah_attr x;

		/* a byte copy, padding too: only the fields xl_ah_attr changes differ */
		memcpy(&x, &h->attr, sizeof x);
		if (xl_ah_attr(&x, NULL) &&
		    memcmp(&x, &h->attr, sizeof x))	// NOLINT(bugprone-suspicious-memory-comparison)
			ah_recreate(h);	/* the old real AH is left alone */
		__atomic_store_n(&h->rdev, rd, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&S.lock);
	return (uint32_t)v;
}

