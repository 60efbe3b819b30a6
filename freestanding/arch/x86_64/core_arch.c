// SPDX-License-Identifier: MIT
/* x86_64 parts of the restore core that are easier in C than in nasm. */
#include <asm/prctl.h>
#include <asm/unistd.h>
#include <stdint.h>

long ibcr_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
long arch_set_tls(const uint64_t tls[2]);

/* rt_sigreturn does not restore fs_base and gs_base: set them first. */
long arch_set_tls(const uint64_t tls[2])
{
	long rc = ibcr_syscall6(__NR_arch_prctl, ARCH_SET_FS, (long)tls[0], 0, 0, 0, 0);

	if (!rc && tls[1])
		rc = ibcr_syscall6(__NR_arch_prctl, ARCH_SET_GS, (long)tls[1], 0, 0, 0, 0);
	return rc;
}
