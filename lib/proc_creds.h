/* SPDX-License-Identifier: MIT */
#ifndef IBCR_PROC_CREDS_H
#define IBCR_PROC_CREDS_H

#include <stdint.h>

#include "err.h"
#include "image.h"

struct buf;

/*
 * Reads a status file (/proc/PID/task/TID/status, /proc/self/status)
 * into c: ids, capability sets, no_new_privs, seccomp mode; appends every
 * supplementary group to groups (u32 each). Other fields of c untouched.
 */
int proc_creds(const char *path, struct ibcr_creds *c, struct buf *groups,
	       struct ibcr_err *e);
/* The same from the file's text, which it cuts into lines (proc_creds' part). */
void proc_creds_parse(char *text, struct ibcr_creds *c, struct buf *groups);
/* A file holding one decimal number (loginuid, sessionid, a sysctl). */
int proc_number(const char *path, uint32_t *v, struct ibcr_err *e);

#endif
