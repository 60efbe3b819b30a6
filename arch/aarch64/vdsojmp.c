// SPDX-License-Identifier: MIT
/*
 * aarch64 code for a vdso proxy. A far jump goes through x16, the
 * intra-procedure-call scratch register that any call may clobber (and
 * that a BTI "c" landing pad accepts for br); a stand-in is the system
 * call itself. __kernel_rt_sigreturn keeps its saved code: it is a
 * system call only, and signal frames of the program may return to it.
 */
#include <string.h>

#include "vdsojmp.h"

const char arch_vdso_prefix[] = "__kernel_";

const struct vdso_standin arch_vdso_standins[] = {
	{ "clock_gettime", VDSO_STUB_SYSCALL, 113 }, { "gettimeofday", VDSO_STUB_SYSCALL, 169 },
	{ "clock_getres", VDSO_STUB_SYSCALL, 114 }, { "getrandom", VDSO_STUB_GETRANDOM, 0 },
	{ "rt_sigreturn", VDSO_STUB_KEEP, 0 },
	{ NULL, VDSO_STUB_NONE, 0 },
};

static size_t put(uint8_t *out, size_t room, const uint32_t *insn, size_t n)
{
	if (n * 4 > room)
		return 0;
	memcpy(out, insn, n * 4);
	return n * 4;
}

size_t arch_vdso_jump(uint8_t *out, uint64_t pc, uint64_t to, size_t room)
{
	int64_t rel = (int64_t)(to - pc);
	uint32_t code[4];

	if (rel >= -(1ll << 27) && rel < (1ll << 27)) {
		code[0] = 0x14000000u | ((uint32_t)(rel >> 2) & 0x3ffffffu);	/* b to */
		return put(out, room, code, 1);
	}
	code[0] = 0x58000050u;		/* ldr x16, 1f */
	code[1] = 0xd61f0200u;		/* br x16 */
	memcpy(code + 2, &to, 8);	/* 1: .quad to */
	return put(out, room, code, 4);
}

size_t arch_vdso_stub(uint8_t *out, enum vdso_stub kind, long nr, size_t room)
{
	static const uint32_t getrandom[] = {
		0xb100049fu,	/* cmn x4, #1 (the state query) */
		0x54000080u,	/* b.eq 1f */
		0xd28022c8u,	/* mov x8, #278 */
		0xd4000001u,	/* svc #0 */
		0xd65f03c0u,	/* ret */
		0x928004a0u,	/* 1: mov x0, #-38 */
		0xd65f03c0u,	/* ret */
	};
	static const uint32_t einval[] = { 0x928002a0u /* mov x0, #-22 */, 0xd65f03c0u };
	uint32_t call[3] = {
		0xd2800008u | ((uint32_t)nr & 0xffffu) << 5,	/* mov x8, #nr */
		0xd4000001u,	/* svc #0 */
		0xd65f03c0u,	/* ret */
	};

	switch (kind) {
	case VDSO_STUB_SYSCALL:
		return put(out, room, call, 3);
	case VDSO_STUB_GETRANDOM:
		return put(out, room, getrandom, 7);
	case VDSO_STUB_EINVAL:
		return put(out, room, einval, 2);
	default:
		return 0;
	}
}
