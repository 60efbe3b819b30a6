// SPDX-License-Identifier: MIT
/* aarch64: the TLS register tpidr_el0 (and tpidr2_el0 where present). */
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "arch.h"
#include "capture.h"

int arch_capture_thread(pid_t tid, struct arch_thread_extra *x, int *regset)
{
	/* 8 bytes on older kernels, 16 with tpidr2: the rest stays zero */
	struct iovec iov = { x->tls, sizeof(x->tls) };

	memset(x, 0, sizeof(*x));
	if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)ARCH_NT_TLS, &iov) == -1) {
		*regset = ARCH_NT_TLS;
		return -1;
	}
	return 0;
}

int arch_fp_pkeys_default(const uint8_t *fpregs, uint32_t size)
{
	(void)fpregs;
	(void)size;
	return 0;	/* no protection keys in the saved state */
}
