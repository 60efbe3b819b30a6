/* SPDX-License-Identifier: MIT */
/*
 * System calls for the freestanding restore core: one assembly gate
 * (freestanding/arch/<arch>/core.*) and typed wrappers. Results are raw:
 * -errno on failure, as the kernel returns them.
 */
#ifndef IBCR_CORE_SYS_H
#define IBCR_CORE_SYS_H

#include <asm/unistd.h>
#include <stddef.h>
#include <stdint.h>

long ibcr_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
long ibcr_clone3(void *args, unsigned long size, void (*fn)(void *, long),
		 void *arg, long idx);
__attribute__((noreturn)) void ibcr_sigreturn(void *frame);

#define SYS(nr, a, b, c, d, e, f) \
	ibcr_syscall6(nr, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

static inline long sys_mmap(uint64_t addr, uint64_t len, int prot, int flags,
			    int fd, uint64_t off)
{
	return SYS(__NR_mmap, addr, len, prot, flags, fd, off);
}

static inline long sys_munmap(uint64_t addr, uint64_t len)
{
	return SYS(__NR_munmap, addr, len, 0, 0, 0, 0);
}

static inline long sys_mremap(uint64_t old, uint64_t len, uint64_t new_len,
			      int flags, uint64_t new_addr)
{
	return SYS(__NR_mremap, old, len, new_len, flags, new_addr, 0);
}

static inline long sys_mprotect(uint64_t addr, uint64_t len, int prot)
{
	return SYS(__NR_mprotect, addr, len, prot, 0, 0, 0);
}

static inline long sys_madvise(uint64_t addr, uint64_t len, int advice)
{
	return SYS(__NR_madvise, addr, len, advice, 0, 0, 0);
}

static inline long sys_pread(int fd, void *buf, uint64_t n, uint64_t off)
{
	return SYS(__NR_pread64, fd, buf, n, off, 0, 0);
}

static inline long sys_read(int fd, void *buf, uint64_t n)
{
	return SYS(__NR_read, fd, buf, n, 0, 0, 0);
}

static inline long sys_write(int fd, const void *buf, uint64_t n)
{
	return SYS(__NR_write, fd, buf, n, 0, 0, 0);
}

static inline long sys_close(int fd)
{
	return SYS(__NR_close, fd, 0, 0, 0, 0, 0);
}

static inline long sys_prctl(int op, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	return SYS(__NR_prctl, op, a, b, c, d, 0);
}

static inline long sys_getpid(void)
{
	return SYS(__NR_getpid, 0, 0, 0, 0, 0, 0);
}

static inline long sys_gettid(void)
{
	return SYS(__NR_gettid, 0, 0, 0, 0, 0, 0);
}

static inline long sys_futex(int32_t *uaddr, int op, int val)
{
	return SYS(__NR_futex, uaddr, op, val, 0, 0, 0);
}

__attribute__((noreturn)) static inline void sys_exit_group(int code)
{
	for (;;)
		SYS(__NR_exit_group, code, 0, 0, 0, 0, 0);
}

#endif
