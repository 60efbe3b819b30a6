/* SPDX-License-Identifier: MIT */
#ifndef IBCR_LOADER_FDKINDS_H
#define IBCR_LOADER_FDKINDS_H

/*
 * File kinds with state beyond a path and an offset, made again: in the
 * loader before it forks (fdk_open, like objects.c's), or in a restored
 * process once its fds are placed (epoll entries, terminals above fd 2).
 */
#include <fcntl.h>
#include <stdint.h>

#include "loader.h"

/* status flags an open file description keeps (F_SETFL) */
#define STATUS_FLAGS (O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME | O_ASYNC | O_DSYNC | O_SYNC)

/* fdkinds.c (loader): object i of a kind below; its new fd, or -1 */
int fdk_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e);
/* fdkinds.c (restored process, after its fds are placed) */
int epoll_fill(const struct restore *rs, struct ibcr_err *e);
int tty_place(const struct restore *rs, const struct ibcr_fd *f, struct ibcr_err *e);

/* fdinotify.c, fdfiles.c (loader) */
int inotify_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e);
/* deleted files, memfds: fds holds the objects before i (one may be the same file) */
int deleted_open(const struct ibcr_files *f, uint32_t i, const int *fds, struct ibcr_err *e);
/* preflight: deleted file i can be made again under its name (held: "mapped", ...) */
int deleted_name_free(const struct ibcr_files *f, uint32_t i, const char *held,
		      struct ibcr_err *e);
int memfd_open(const struct ibcr_files *f, uint32_t i, const int *fds, struct ibcr_err *e);
/* a removed directory made again; a removed working directory, in the process */
int deldir_open(const struct ibcr_files *f, uint32_t i, const int *fds, struct ibcr_err *e);
int deldir_chdir(const struct restore *rs, int *done, struct ibcr_err *e);
/* the deleted file or memfd object an OBJFILE region maps, or -1 */
long objfile_of(const struct ibcr_files *f, const struct ibcr_vma *v);
/* restored process: a descriptor to map a region of a deleted file or memfd object */
int objfile_open(const struct restore *rs, const struct ibcr_vma *v, int writable,
		 struct ibcr_err *e);
/* a memfd with its bytes and mode, unsealed: shm.c maps it before forking */
int memfd_make(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e);

/* fdexternal.c: descriptors that led outside (saver --external-fd), std streams */
uint32_t external_action(const struct ibcr_files *f, uint32_t i);	/* 0: not one */
int external_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e);
int external_preflight(const struct restore *rs, struct ibcr_err *e);
/* 0 placed, 1 an object to place as any other, -1 error */
int external_place(const struct restore *rs, const struct ibcr_fd *f, struct ibcr_err *e);
/* fdkinds.c: restart-loader's controlling terminal, for object i */
int tty_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e);

/* fdattrs.c: I/O signal when made; lease and signal owner once all processes exist */
int fdattr_open(const struct ibcr_files *f, uint32_t i, int fd, struct ibcr_err *e);
/* restored process, fds placed: O_ASYNC signals name the saved fd */
int fdattr_async(const struct restore *rs, struct ibcr_err *e);
int fdattr_finish(const struct job *j, uint32_t n, const struct ibcr_files *f, const int *fds,
		  struct ibcr_err *e);

/* fdtable.c: descriptor tables shared between processes (CLONE_FILES) */
int group_pipes(struct job *j, uint32_t n, int base);	/* loader, before forking */
unsigned long group_clone_flags(const struct job *child);
void group_wait_placed(const struct restore *rs);	/* a member, first thing */
int group_keeps(const struct restore *rs, int fd);
int group_lead(struct restore *rs, struct ibcr_err *e);	/* the leader, placed */
void group_close(struct restore *rs);
int group_follow(struct restore *rs, int (*open_own)(struct restore *, struct ibcr_err *),
		 struct ibcr_err *e);

/* fdpidfd.c (restored process): a pidfd, by the pid its process has now */
int pidfd_place(const struct restore *rs, const struct ibcr_fd *f, struct ibcr_err *e);

/* fdpipe.c (loader): every description of the pipe of object i, into fds[] */
int pipe_open_all(const struct ibcr_files *f, uint32_t i, int *fds, int base,
		  struct ibcr_err *e);

/* fdpty.c (loader): every master before any slave */
int ptmx_open(const struct ibcr_files *f, uint32_t i, struct ibcr_err *e);
int pts_open(const struct ibcr_files *f, uint32_t i, const int *fds, struct ibcr_err *e);
/* restored session leader: its controlling terminal (before forking), foreground group */
int pty_ctty_take(const struct restore *rs, struct ibcr_err *e);
int pty_ctty_restore(const struct restore *rs, struct ibcr_err *e);

#endif
