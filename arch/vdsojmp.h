/* SPDX-License-Identifier: MIT */
/*
 * Machine code that a vdso proxy puts at the saved vdso's entry points
 * (loader/vdso.c): a jump to this kernel's vdso, or a stand-in that makes
 * the system call the entry point is the fast path of. arch/<arch>/vdsojmp.c.
 */
#ifndef IBCR_VDSOJMP_H
#define IBCR_VDSOJMP_H

#include <stddef.h>
#include <stdint.h>

/* What stands in for an entry point this kernel's vdso lacks. */
enum vdso_stub {
	VDSO_STUB_NONE = 0,	/* none: refused */
	VDSO_STUB_SYSCALL,	/* the system call `nr`, same arguments */
	VDSO_STUB_GETRANDOM,	/* getrandom(2); the state query says ENOSYS */
	VDSO_STUB_EINVAL,	/* returns -EINVAL: needs what no image holds */
	VDSO_STUB_KEEP,		/* the saved code itself: it makes a system call only */
};

/* The longest code arch_vdso_jump or arch_vdso_stub writes. */
#define VDSO_PATCH_MAX 32

/*
 * The stand-ins of entry points this kernel's vdso may lack, by name
 * without the arch's prefix ("__vdso_", "__kernel_"); nr is the system
 * call of a VDSO_STUB_SYSCALL. Ends with a NULL name.
 */
struct vdso_standin {
	const char *name;
	enum vdso_stub stub;
	long nr;
};
extern const char arch_vdso_prefix[];
extern const struct vdso_standin arch_vdso_standins[];
/*
 * Code at address pc (written to out) that continues at `to`, at most
 * `room` bytes; its length, or 0 when it does not fit.
 */
size_t arch_vdso_jump(uint8_t *out, uint64_t pc, uint64_t to, size_t room);
/* The stand-in `kind` (not KEEP), at most `room` bytes; its length or 0. */
size_t arch_vdso_stub(uint8_t *out, enum vdso_stub kind, long nr, size_t room);

#endif
