// SPDX-License-Identifier: MIT
/*
 * x86_64 code for a vdso proxy. A jump clobbers only rax, which no vdso
 * function takes an argument in; a stand-in is the system call itself
 * (the vdso functions are its fast paths, with the same arguments and
 * results).
 */
#include <string.h>

#include "vdsojmp.h"

const char arch_vdso_prefix[] = "__vdso_";

const struct vdso_standin arch_vdso_standins[] = {
	{ "clock_gettime", VDSO_STUB_SYSCALL, 228 }, { "gettimeofday", VDSO_STUB_SYSCALL, 96 },
	{ "time", VDSO_STUB_SYSCALL, 201 }, { "getcpu", VDSO_STUB_SYSCALL, 309 },
	{ "clock_getres", VDSO_STUB_SYSCALL, 229 }, { "getrandom", VDSO_STUB_GETRANDOM, 0 },
	/* an enclave is device memory, which no image holds: never entered */
	{ "sgx_enter_enclave", VDSO_STUB_EINVAL, 0 },
	{ NULL, VDSO_STUB_NONE, 0 },
};

static size_t put(uint8_t *out, size_t room, const uint8_t *code, size_t n)
{
	if (n > room)
		return 0;
	memcpy(out, code, n);
	return n;
}

size_t arch_vdso_jump(uint8_t *out, uint64_t pc, uint64_t to, size_t room)
{
	int64_t rel = (int64_t)(to - (pc + 5));
	uint8_t code[12];

	if (rel >= INT32_MIN && rel <= INT32_MAX) {
		int32_t r32 = (int32_t)rel;

		code[0] = 0xe9;				/* jmp rel32 */
		memcpy(code + 1, &r32, 4);
		return put(out, room, code, 5);
	}
	code[0] = 0x48;					/* movabs $to, %rax */
	code[1] = 0xb8;
	memcpy(code + 2, &to, 8);
	code[10] = 0xff;				/* jmp *%rax */
	code[11] = 0xe0;
	return put(out, room, code, 12);
}

size_t arch_vdso_stub(uint8_t *out, enum vdso_stub kind, long nr, size_t room)
{
	static const uint8_t getrandom[] = {
		0x49, 0x83, 0xf8, 0xff,			/* cmp $-1, %r8 (the query) */
		0x74, 0x08,				/* je 1f */
		0xb8, 0x3e, 0x01, 0x00, 0x00,		/* mov $318, %eax */
		0x0f, 0x05,				/* syscall */
		0xc3,					/* ret */
		0x48, 0xc7, 0xc0, 0xda, 0xff, 0xff, 0xff,	/* 1: mov $-38, %rax */
		0xc3,					/* ret */
	};
	static const uint8_t einval[] = {
		0x48, 0xc7, 0xc0, 0xea, 0xff, 0xff, 0xff,	/* mov $-22, %rax */
		0xc3,					/* ret */
	};
	uint8_t code[8] = { 0xb8 };			/* mov $nr, %eax */
	int32_t n32 = (int32_t)nr;

	switch (kind) {
	case VDSO_STUB_SYSCALL:
		memcpy(code + 1, &n32, 4);
		code[5] = 0x0f;				/* syscall */
		code[6] = 0x05;
		code[7] = 0xc3;				/* ret */
		return put(out, room, code, 8);
	case VDSO_STUB_GETRANDOM:
		return put(out, room, getrandom, sizeof(getrandom));
	case VDSO_STUB_EINVAL:
		return put(out, room, einval, sizeof(einval));
	default:
		return 0;
	}
}
