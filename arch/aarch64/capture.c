// SPDX-License-Identifier: MIT
/* aarch64: the TLS register tpidr_el0 (and tpidr2_el0 where present). */
#include <string.h>

#include "arch.h"
#include "capture.h"
#include "ptrace_util.h"

int arch_capture_thread(pid_t tid, struct ibcr_thread *rec, struct ibcr_err *e)
{
	uint64_t tls[2] = { 0, 0 };
	size_t len = sizeof(tls);	/* 8 on older kernels, 16 with tpidr2 */

	if (pt_getregset(tid, ARCH_NT_TLS, tls, &len, e))
		return -1;
	memcpy(rec->tls, tls, sizeof(tls));
	return 0;
}
