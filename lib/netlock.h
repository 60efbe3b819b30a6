/* SPDX-License-Identifier: MIT */
#ifndef IBCR_NETLOCK_H
#define IBCR_NETLOCK_H

/*
 * The network lock: while a checkpointed TCP connection has no live
 * socket (from its capture until its restore), its packets are dropped
 * by the kernel's packet filter, so that the peer retransmits instead of
 * getting an acknowledgement for bytes that would be lost, or a reset.
 * One nftables table per checkpoint ("inet ibcr-<saver pid>-<seconds>"),
 * made and removed with the `nft` command (nftables): two checkpoints
 * never touch each other's rules. The saver takes it (saver/netlock.c);
 * the loader lets it go once the restored sockets are live.
 */
#include <stdint.h>

#include "err.h"
#include "image.h"

struct img_reader;

#define NETLOCK_PREFIX "ibcr-"
/*
 * Packets with this mark (SO_MARK) pass the lock: the restore's own, that
 * hand a restored connection the FIN or ACK its peer had sent (loader/tcpfin.c).
 */
#define NETLOCK_MARK 0x49424352u	/* "IBCR" */

/*
 * Runs `nft -f -` with script on its standard input. 0, or -1 with the
 * cause (nft missing, or its first line of complaint) in e.
 */
int nft_run(const char *script, struct ibcr_err *e);
/* Runs `nft ARG...` and returns what it printed (malloc'd), or NULL. */
char *nft_output(const char *const *argv, struct ibcr_err *e);
/* A name the saver could have given: prefix, digits, one dash. */
int netlock_name_ok(const char *table);
/* Removes the table (gone already is fine). */
int netlock_drop(const char *table, struct ibcr_err *e);
/* The image's NETLOCK record; 0 with *found = 0 when it has none. */
int imgr_load_netlock(struct img_reader *r, struct ibcr_netlock *l, int *found,
		      struct ibcr_err *e);

#endif
