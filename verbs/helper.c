/* SPDX-License-Identifier: MIT */
/*
 * The helper thread: the cmd/state protocol of ibcr_verbs_abi.h (the
 * saver or the restore writes cmd, the helper answers in state), woken
 * through its pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"

void set_state(enum ibcr_verbs_state st)
{
	__atomic_store_n(&CTL.state, st, __ATOMIC_RELEASE);
}

void set_failed(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(CTL.message, sizeof CTL.message, fmt, ap);
	va_end(ap);
	CTL.error = err;
	warnx_("%s", CTL.message);
	set_state(IBCR_VSTATE_FAILED);
}

void fatal(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(CTL.message, sizeof CTL.message, fmt, ap);
	va_end(ap);
	CTL.error = err ? err : EIO;
	set_state(IBCR_VSTATE_FAILED);
	warnx_("%s", CTL.message);
	_exit(70);
}

uint64_t restart_timeout(void)
{
	return CTL.restart_timeout_ms ? CTL.restart_timeout_ms : 60000;
}

/*
 * Sleeps until a byte arrives in the wake pipe (the saver or the restore
 * wrote `cmd`), or a second has passed; takes whatever bytes are there.
 */
static void wait_wake(void)
{
	struct pollfd pf = { S.wake[0], POLLIN, 0 };
	struct stat r, w;
	char buf[64];

	if (S.wake[0] < 0) {
		sleep_ms(20);
		return;
	}
	if (poll(&pf, 1, 1000) <= 0)
		return;
	/*
	 * The application may have closed the descriptor, or put one of its
	 * own at its number (closefrom, dup2): never read what is not ours
	 * (both ends are one pipe, after a restore too); poll every 20 ms
	 * from then on, as before ABI 2.
	 */
	if ((pf.revents & POLLNVAL) || fstat(S.wake[0], &r) || fstat(S.wake[1], &w) ||
	    !S_ISFIFO(r.st_mode) || r.st_ino != w.st_ino || r.st_dev != w.st_dev) {
		S.wake[0] = -1;
		CTL.wake_fd = -1;
		return;
	}
	while (read(S.wake[0], buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
}

static void *helper_main(void *arg)
{
	(void)arg;
	t_helper = 1;
	for (;;) {
		int cmd = __atomic_load_n(&CTL.cmd, __ATOMIC_ACQUIRE);

		if (cmd != S.last_cmd) {
			S.last_cmd = cmd;
			switch (cmd) {
			case IBCR_VCMD_QUIESCE_SENDS:
				quiesce_sends();
				break;
			case IBCR_VCMD_QUIESCE_DRAIN:
				quiesce_drain();
				break;
			case IBCR_VCMD_RELEASE:
				release();
				break;
			case IBCR_VCMD_RESTART:
				set_state(IBCR_VSTATE_BUSY);
				CTL.message[0] = 0;
				CTL.error = 0;
				rebuild();
				release();
				break;
			default:
				break;
			}
			continue;
		}
		wait_wake();
	}
	return NULL;
}

void helper_start(void)
{
	sigset_t all, old;
	pthread_t t;

	pthread_mutex_lock(&S.lock);
	if (S.helper_started) {
		pthread_mutex_unlock(&S.lock);
		return;
	}
	S.last_cmd = CTL.cmd;
	/* both ends stay open: the read end never sees EOF */
	if (pipe2(S.wake, O_CLOEXEC | O_NONBLOCK)) {
		S.wake[0] = S.wake[1] = -1;
		warnx_("cannot make the helper's wake pipe: it polls instead");
	}
	CTL.wake_fd = S.wake[0];
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, helper_main, NULL) == 0) {
		S.helper = t;
		S.helper_started = 1;
		pthread_setname_np(t, "ibcr-verbs");
	} else {
		warnx_("cannot start the helper thread: checkpoints will not work");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_unlock(&S.lock);
}

