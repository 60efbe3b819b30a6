/* SPDX-License-Identifier: MIT */
#ifndef IBCR_SAVER_FDKINDS_H
#define IBCR_SAVER_FDKINDS_H

/*
 * File kinds with state beyond a path and an offset (files.c finds the
 * objects, these read what each one holds): eventfd, timerfd, signalfd,
 * epoll (fdkinds.c), inotify (fdinotify.c), deleted files, memfds and
 * terminals above fd 2 (fdfiles.c), pty pairs (fdpty.c).
 */
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "saver.h"

/* Largest deleted file or memfd whose bytes go into the image. */
#define IBCR_MAX_FILE_DATA (64ull << 20)

/* fdkinds.c */
int fdinfo_read(pid_t pid, int fd, char **s, struct ibcr_err *e);
int fdinfo_field(const char *s, const char *key, int base, uint64_t *v);
int grab_fd(pid_t pid, int fd, struct ibcr_err *e);
/* 1: link names an anonymous kind we save (o->kind set), 0: it does not */
int anon_classify(const char *link, struct ibcr_fobj *o);
int anon_capture(pid_t pid, int fd, struct ibcr_fobj *o, struct ibcr_err *e);
/* epoll interest lists, once every object of every process is known */
int epoll_finish(struct fobjs *o, struct ibcr_err *e);

/* fdeventfd.c: EFD_SEMAPHORE where fdinfo does not show it (before 6.4) */
int eventfd_semaphore_probe(pid_t pid, int fd, uint64_t count, uint64_t *sem,
			    struct ibcr_err *e);

/* fdinotify.c */
int inotify_capture(pid_t pid, int fd, struct ibcr_fobj *o, uint8_t **data,
		    struct ibcr_err *e);

/* fdpty.c: pty pairs whose master is in the image */
int is_ptmx(const struct stat *st);
int ptmx_capture(pid_t pid, int fd, struct ibcr_fobj *o, uint8_t **data, struct ibcr_err *e);
/* slaves of those masters become IBCR_FD_PTS, once every fd is known */
void pty_finish(struct fobjs *o);

/* fdfiles.c */
int is_terminal(const struct stat *st);
/* 1: a deleted file or memfd (o->kind set, path trimmed), 0: not, -1: error */
int deleted_classify(pid_t pid, int fd, char *link, const struct stat *st,
		     struct ibcr_fobj *o, struct ibcr_err *e);
int deleted_capture(pid_t pid, int fd, const char *path, struct ibcr_fobj *o,
		    uint8_t **data, struct ibcr_err *e);
/* once every process's memory map is known */
int memfd_check_mapped(const struct target *t, uint32_t n, const struct fobjs *o,
		       struct ibcr_err *e);
int proc_check_own(const struct target *t, uint32_t n, const struct fobjs *o,
		   struct ibcr_err *e);

#endif
