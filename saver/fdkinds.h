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

#include "fdinfo.h"
#include "saver.h"

/*
 * Bytes of deleted files and memfds read in the freeze, at most: beyond,
 * they are read while the image is written, the processes stopped.
 */
#define IBCR_MAX_FILE_DATA (64ull << 20)

/* fdkinds.c */
int fdinfo_read(pid_t pid, int fd, char **s, struct ibcr_err *e);
int grab_fd(pid_t pid, int fd, struct ibcr_err *e);
/* 1: link names an anonymous kind we save (o->kind set), 0: it does not */
int anon_classify(const char *link, struct ibcr_fobj *o);
int anon_capture(pid_t pid, int fd, struct ibcr_fobj *o, struct ibcr_err *e);
/* epoll interest lists, once every object of every process is known */
int epoll_finish(struct fobjs *o, struct ibcr_err *e);

/* fdattrs.c: I/O signal owner and signal, lease of a description */
int fdattr_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e);
/* once every process is known: owners must be in the image */
int fdattr_check(const struct target *t, uint32_t n, const struct fobjs *o, struct ibcr_err *e);

/* fdtable.c: descriptor tables shared between processes (CLONE_FILES) */
int fdtable_share(struct target *t, uint32_t n, struct ibcr_err *e);

/* fdpidfd.c: pidfds of processes of the image */
int pidfd_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e);
int pidfd_check(const struct target *t, uint32_t n, const struct fobjs *o, struct ibcr_err *e);

/* fdeventfd.c: EFD_SEMAPHORE where fdinfo does not show it (before 6.4) */
int eventfd_semaphore_probe(pid_t pid, int fd, uint64_t count, uint64_t *sem,
			    struct ibcr_err *e);

/* fdinotify.c */
/* A path of inode (ino, dev) near where pid is (its directories, searched): 1, or 0 */
int inode_path(pid_t pid, uint64_t ino, dev_t dev, char *out, size_t len);
int inotify_capture(pid_t pid, int fd, struct ibcr_fobj *o, uint8_t **data,
		    struct ibcr_err *e);

/* fdpty.c: pty pairs whose master is in the image */
int is_ptmx(const struct stat *st);
int ptmx_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e);
/* controlling terminals of sessions below the roots, once every process is known */
int pty_ctty(const struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e);
/* slaves of those masters become IBCR_FD_PTS, once every fd is known */
void pty_finish(struct fobjs *o);

/* fdfiles.c */
int is_terminal(const struct stat *st);
/* 1: a deleted file or memfd (o->kind set, path trimmed), 0: not, -1: error */
int deleted_classify(pid_t pid, int fd, char *link, const struct stat *st,
		     struct ibcr_fobj *o, struct ibcr_err *e);
int deleted_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e);
/* filedata.c: its bytes (and owner, atime), once per file */
int filedata_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e);
/* the same, read through a path (a map_files entry) */
int filedata_capture_path(const char *path, struct fobjs *o, uint32_t i, struct ibcr_err *e);
/* delmap.c: mappings of deleted files and memfds that are file objects */
int delmap_finish(struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e);
/* removed directories: an open one (owner, times), a removed working directory */
int deldir_capture(pid_t pid, int fd, struct fobjs *o, uint32_t i, struct ibcr_err *e);
int deldir_cwds(const struct target *t, uint32_t n, struct fobjs *o, struct ibcr_err *e);
/* once every process's memory map is known */
int memfd_check_mapped(const struct target *t, uint32_t n, const struct fobjs *o,
		       struct ibcr_err *e);
int proc_check_own(const struct target *t, uint32_t n, const struct fobjs *o,
		   struct ibcr_err *e);

#endif
