// SPDX-License-Identifier: MIT
/* Process-wide state: mm fields, signal actions, limits, timers, fds. */
#include <linux/prctl.h>
#include <linux/time.h>

#include "core.h"
#include "sys.h"

static void set_mm(struct plan *p)
{
	long rc = sys_prctl(PR_SET_MM, PR_SET_MM_MAP, (uint64_t)&p->mm,
			    sizeof(p->mm), 0);

	/* Changing /proc/PID/exe needs CAP_CHECKPOINT_RESTORE; the rest not. */
	if (rc == -1 /* EPERM */ && p->mm.exe_fd != (uint32_t)-1) {
		p->mm.exe_fd = (uint32_t)-1;
		rc = sys_prctl(PR_SET_MM, PR_SET_MM_MAP, (uint64_t)&p->mm,
			       sizeof(p->mm), 0);
	}
	if (rc)
		core_die(p, "restoring the memory layout fields (prctl PR_SET_MM_MAP): "
			 "error %ld", -rc);
}

static void set_sigactions(struct plan *p)
{
	for (int sig = 1; sig <= IBCR_NSIG; sig++) {
		long rc;

		if (sig == 9 || sig == 19)	/* SIGKILL, SIGSTOP */
			continue;
		rc = SYS(__NR_rt_sigaction, sig, &p->sigact[sig - 1], 0, 8, 0, 0);
		if (rc)
			core_die(p, "restoring the action of signal %d: error %ld",
				 sig, -rc);
	}
}

static void set_limits(struct plan *p)
{
	for (int r = 0; r < 16; r++) {
		long rc = SYS(__NR_prlimit64, 0, r, p->rlim[r], 0, 0, 0);

		if (rc)
			core_die(p, "restoring resource limit %d: error %ld", r, -rc);
	}
}

static void set_itimers(struct plan *p)
{
	for (int w = 0; w < 3; w++) {
		struct {
			long is, iu, vs, vu;
		} it = { (long)p->itimer[w][0], (long)p->itimer[w][1],
			 (long)p->itimer[w][2], (long)p->itimer[w][3] };
		long rc;

		if (!it.vs && !it.vu)
			continue;
		rc = SYS(__NR_setitimer, w, &it, 0, 0, 0, 0);
		if (rc)
			core_die(p, "restoring interval timer %d: error %ld", w, -rc);
	}
}

void core_set_process(struct plan *p)
{
	set_mm(p);
	set_sigactions(p);
	set_limits(p);
	for (int i = 0; i < p->nclose; i++)
		sys_close(p->close_fds[i]);
	sys_close(p->img_fd);
	set_itimers(p);
}
