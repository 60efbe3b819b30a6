/* SPDX-License-Identifier: MIT */
#ifndef IBCR_ERR_H
#define IBCR_ERR_H

/*
 * Error reporting for hosted code (saver, loader's musl part, tools).
 * A failing function fills the message, naming the object (pid, path,
 * section, region) and the cause, and returns -1; the caller prints it
 * once, prefixed by the program name. No function prints on its own.
 */
struct ibcr_err {
	char msg[512];
};

__attribute__((format(printf, 2, 3)))
int ibcr_fail(struct ibcr_err *e, const char *fmt, ...);

/* Like ibcr_fail, appending ": strerror(errnum)". */
__attribute__((format(printf, 3, 4)))
int ibcr_fail_errno(struct ibcr_err *e, int errnum, const char *fmt, ...);

#endif
