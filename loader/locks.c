// SPDX-License-Identifier: MIT
/*
 * File locks come back in the process that becomes the restored one,
 * once its descriptors are in place and before the core runs: a POSIX
 * lock then belongs to the right process, and a flock or OFD lock to the
 * right open file description (shared by whoever shares it). A lock
 * someone else holds by now fails the restore, naming the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/file.h>

#include "loader.h"

static int take(const struct ibcr_lock *l)
{
	struct flock fl = {
		.l_type = l->write ? F_WRLCK : F_RDLCK,
		.l_whence = SEEK_SET,
		.l_start = (off_t)l->start,
		.l_len = l->end == UINT64_MAX ? 0 : (off_t)(l->end - l->start + 1),
	};

	switch (l->kind) {
	case IBCR_LOCK_POSIX:
		return fcntl(l->fd, F_SETLK, &fl);
	case IBCR_LOCK_OFD:
		return fcntl(l->fd, F_OFD_SETLK, &fl);
	default:
		return flock(l->fd, (l->write ? LOCK_EX : LOCK_SH) | LOCK_NB);
	}
}

int restore_locks(const struct restore *rs, struct ibcr_err *e)
{
	for (uint32_t i = 0; i < rs->ps->nlocks; i++) {
		const struct ibcr_lock *l = &rs->ps->locks[i];

		if (take(l))
			return ibcr_fail_errno(e, errno, "fd %d: taking back its %s lock on "
					       "bytes %llu-%llu", l->fd,
					       l->kind == IBCR_LOCK_POSIX ? "POSIX" :
					       l->kind == IBCR_LOCK_OFD ? "OFD" : "flock",
					       (unsigned long long)l->start,
					       (unsigned long long)l->end);
	}
	return 0;
}
