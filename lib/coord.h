// SPDX-License-Identifier: MIT
/*
 * One checkpoint or one restart of a job over several nodes: every
 * node's saver (--barrier) or restart-loader (--barrier) runs the job's
 * barrier command at the points where all nodes must be before any goes
 * on (lib/coord.c lists the phases).
 */
#ifndef IBCR_COORD_H
#define IBCR_COORD_H

#include "err.h"

/* who: "checkpoint" or "restart", for the messages */
void coord_init(const char *cmd, const char *who);
int coord_active(void);
int coord_barrier(const char *phase, struct ibcr_err *e);
void coord_abort(const char *msg);
/* exit() before coord_settled() runs `CMD abort` (this process only) */
void coord_abort_on_exit(void);
void coord_settled(void);

#endif
