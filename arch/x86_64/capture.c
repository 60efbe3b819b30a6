// SPDX-License-Identifier: MIT
/* x86_64: fs_base and gs_base are part of NT_PRSTATUS; nothing else. */
#include "capture.h"

int arch_capture_thread(pid_t tid, struct ibcr_thread *rec, struct ibcr_err *e)
{
	(void)tid;
	(void)rec;
	(void)e;
	return 0;
}
