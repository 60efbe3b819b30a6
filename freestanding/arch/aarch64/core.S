// SPDX-License-Identifier: MIT
// The restore core's assembly for aarch64: the blob header and entry, the
// system call gate, thread creation and the final rt_sigreturn. Linked
// first into the position-independent core blob (see freestanding/core.lds).

	.section .head, "ax"
	.p2align 4

	.global core_start
	.global ibcr_syscall6
	.global ibcr_clone3
	.global ibcr_sigreturn

// Header read by the loader from the blob bytes: offsets from the start.
blob_base:
	.quad 0x45524f4352434249	// "IBCRCORE"
	.word core_start - blob_base
	.word syscall_insn - blob_base	// used by the loader to inject munmap
	.word 0, 0

// Entered by ibcr_enter: x0 = plan, sp = top of a stack in the hole.
core_start:
	mov x29, #0
	mov x30, #0
	bl core_main
	brk #0

// long ibcr_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
ibcr_syscall6:
	mov x8, x0
	mov x0, x1
	mov x1, x2
	mov x2, x3
	mov x3, x4
	mov x4, x5
	mov x5, x6
syscall_insn:
	svc #0
	ret

// long ibcr_clone3(struct clone_args *args, unsigned long size,
//                  void (*fn)(void *, long), void *arg, long idx)
// The child starts on the stack named in args and runs fn(arg, idx),
// which never returns; x2-x4 survive the svc in both parent and child.
ibcr_clone3:
	mov x8, #435		// __NR_clone3
	svc #0
	cbnz x0, 1f
	mov x29, #0
	mov x30, #0
	mov x0, x3
	mov x1, x4
	blr x2
	brk #0
1:	ret

// void ibcr_sigreturn(struct rt_sigframe *frame): the kernel reads the
// frame at sp.
ibcr_sigreturn:
	mov sp, x0
	mov x8, #139		// __NR_rt_sigreturn
	svc #0
	brk #0

	.section .note.GNU-stack, "", %progbits
