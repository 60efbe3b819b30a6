// SPDX-License-Identifier: MIT
/* x86_64 parts of the restore core that are easier in C than in nasm. */
#include <asm/prctl.h>
#include <asm/unistd.h>
#include <stdint.h>

long ibcr_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
long arch_set_tls(const uint64_t tls[2]);
void arch_touch_xstate(void);

/* rt_sigreturn does not restore fs_base and gs_base: set them first. */
long arch_set_tls(const uint64_t tls[2])
{
	long rc = ibcr_syscall6(__NR_arch_prctl, ARCH_SET_FS, (long)tls[0], 0, 0, 0, 0);

	if (!rc && tls[1])
		rc = ibcr_syscall6(__NR_arch_prctl, ARCH_SET_GS, (long)tls[1], 0, 0, 0, 0);
	return rc;
}

/*
 * The kernel grows a thread's XSAVE buffer for AMX tile data at the
 * thread's first access to tile data (the XFD fault), not when the
 * process asks for AMX; until then it takes a signal frame holding tile
 * data as x87/SSE only. So: one 64-byte row in tile 0 (palette 1), zero
 * it (the access), release the tiles; the rt_sigreturn after it loads
 * them from the frame. TILERELEASE alone, and an XRSTOR of the initial
 * state, do not fault: they were tried.
 */
void arch_touch_xstate(void)
{
	uint8_t cfg[64] __attribute__((aligned(64))) = { 1 };	/* palette 1 */

	cfg[16] = 64;	/* colsb[0]: bytes per row of tile 0 */
	cfg[48] = 1;	/* rows[0] */
	__asm__ volatile("ldtilecfg %0\n\ttilezero %%tmm0\n\ttilerelease" : : "m"(cfg) : "memory");
}
