/* SPDX-License-Identifier: MIT */
/*
 * Internal to the shim's checkpoint side: what the helper thread
 * (helper.c), the quiesce (quiesce.c), the rebuild (rebuild.c), the
 * rendezvous with the peers (rendezvous.c) and the UD targets
 * (udtarget.c) share. The data path sees only shim.h.
 */
#ifndef IBCR_VERBS_CKPT_H
#define IBCR_VERBS_CKPT_H

#include "shim.h"

#define CTL ibcr_verbs_control

/* helper.c: the state word of the cmd/state protocol */
HIDDEN void set_state(enum ibcr_verbs_state st);
HIDDEN void set_failed(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A restart that cannot complete: the application cannot go on. */
HIDDEN void fatal(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
HIDDEN uint64_t restart_timeout(void);	/* ms */

/* core.c: the gate */
HIDDEN void heavy_barrier(void);
HIDDEN void membarrier_setup(void);
HIDDEN int gate_busy(int slow_too);

/* quiesce.c: the two phases, and back to running */
HIDDEN int quiesce_sends(void);
HIDDEN int quiesce_drain(void);
HIDDEN void release(void);

/* rebuild.c: every object again after a restart (fatal on failure) */
HIDDEN void rebuild(void);

/* addr.c */
HIDDEN void addr_str(const struct vaddr *a, char *out);	/* out: 40 bytes */
HIDDEN int addr_eq(const struct vaddr *a, const struct vaddr *b);
HIDDEN void ah_addr(const struct ibv_ah_attr *at, struct vaddr *a);
HIDDEN void hex(char *out, const uint8_t *p, int n);
HIDDEN int unhex(const char *s, uint8_t *p, int n);

/*
 * rendezvous.c: the exchange of old -> new numbers with the peers through
 * the rendezvous directory. A restart goes through two rounds: RDV_RC
 * (each connected QP's peer gets this end's tables) and RDV_READY (this end
 * is rebuilt; UD QPs announce themselves too).
 */
enum rdv_round {
	RDV_RC,
	RDV_READY,
};
HIDDEN void rdv_prepare(void);			/* the directory exists */
HIDDEN void rdv_forget_peers(void);		/* S.lock held */
HIDDEN void rdv_publish(enum rdv_round round);	/* S.lock held */
HIDDEN void rdv_mark(enum rdv_round round);	/* after rdv_publish */
HIDDEN void rdv_await(enum rdv_round round, uint64_t deadline);	/* S.lock not held */
HIDDEN int read_pub(const char *name, char **out);
HIDDEN void ingest(const char *text);		/* S.lock held */
HIDDEN void ud_pub_name(char *out, size_t n, const struct vaddr *a, uint32_t qpn);

/* udtarget.c */
HIDDEN struct ibv_ah *ah_recreate(struct sah *h);	/* S.lock held */

#endif
