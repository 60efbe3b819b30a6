/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_GUARD_H
#define IBCR_SAVER_GUARD_H

#include <sys/types.h>

/*
 * guard.c: a process forked before anything is attached (not a tracer)
 * that outlives a saver killed in mid-checkpoint and undoes what it
 * leaves: the snapshot's zombie, TCP sockets in repair mode, the
 * temporary image. The saver tells it each step before taking it.
 */
pid_t guard_pid(void);	/* 0 when there is none */

#endif
