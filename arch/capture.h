/* SPDX-License-Identifier: MIT */
#ifndef IBCR_CAPTURE_H
#define IBCR_CAPTURE_H

#include <sys/types.h>

#include "err.h"
#include "image.h"

/* Per-thread state outside the general and FP register sets (saver). */
int arch_capture_thread(pid_t tid, struct ibcr_thread *rec, struct ibcr_err *e);

#endif
