/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_GUARD_H
#define IBCR_SAVER_GUARD_H

#include <sys/types.h>

struct target;

/*
 * guard.c: a process forked before anything is attached (so it is no
 * tracer, and survives the saver's death) that undoes what a saver
 * killed in mid-checkpoint leaves: the snapshot's zombie (reaped by an
 * injected wait4, as the saver would), TCP sockets left in repair mode
 * (turned off while their process lives, the moment the saver's end is
 * read, while the threads are held: hold.c), a UNIX socket's peek
 * offset, the network lock (removed unless a complete image holds it
 * and its processes are gone), the temporary image. The
 * threads themselves need no help: they are parked (park.h). The saver
 * tells it each step before taking it. Without a guardian (fork failed)
 * the saver goes on, as before.
 */
/* Starts the guardian for a checkpoint into image (once per saver). */
void guard_start(const char *image);
/* The checkpoint ended; nothing is left to undo. Waits for the guardian. */
void guard_end(void);
pid_t guard_pid(void);	/* 0 when there is none */

/* A snapshot of t: about to be made (child 0), made (its pid). */
void guard_snapshot(const struct target *t, pid_t child);
/* t's snapshot was reaped. */
void guard_snapshot_reaped(const struct target *t);
/* Socket s (pid's fd, SO_REUSEADDR reuse) goes into repair mode; its copy goes to the guardian. */
void guard_tcp(pid_t pid, int fd, int s, int reuse);
/* Every socket left repair mode (or its process was killed). */
void guard_tcp_released(void);
/* Socket s (pid's fd) is about to be read with SO_PEEK_OFF and SO_PASSCRED; they were so. */
void guard_unix(pid_t pid, int fd, int s, int peek_off, int passcred);
/* They are as they were again. */
void guard_unix_done(void);
/* IBCR_SAVER_DIE_IN=where: the saver kills itself there (tests). */
void saver_die_at(const char *where);
/* The network lock table is about to be taken (netlock.c). */
void guard_netlock(const char *table);
/* It was removed, or left to the image with its processes killed. */
void guard_netlock_over(void);

#endif
