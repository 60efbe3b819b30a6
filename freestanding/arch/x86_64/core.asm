; SPDX-License-Identifier: MIT
; The restore core's assembly for x86_64: the blob header and entry, the
; system call gate, thread creation and the final rt_sigreturn. Linked
; first into the position-independent core blob (see freestanding/core.lds).

bits 64
default rel

section .head progbits alloc exec nowrite align=16

extern core_main		; void core_main(struct plan *)
global core_start
global ibcr_syscall6
global ibcr_clone3
global ibcr_sigreturn

; Header read by the loader from the blob bytes: offsets from the start.
blob_base:
	dq 0x45524f4352434249	; "IBCRCORE"
	dd core_start - blob_base
	dd syscall_insn - blob_base	; used by the loader to inject munmap
	dd 0, 0

; Entered by ibcr_enter: rdi = plan, rsp = top of a stack in the hole.
core_start:
	and rsp, -16
	xor ebp, ebp
	call core_main
	ud2

; long ibcr_syscall6(long nr, long a1, long a2, long a3, long a4, long a5,
;                    long a6): a6 arrives on the stack.
ibcr_syscall6:
	mov rax, rdi
	mov rdi, rsi
	mov rsi, rdx
	mov rdx, rcx
	mov r10, r8
	mov r8, r9
	mov r9, [rsp + 8]
syscall_insn:
	syscall
	ret

; long ibcr_clone3(struct clone_args *args, unsigned long size,
;                  void (*fn)(void *, long), void *arg, long idx)
; The child starts on the stack named in args and runs fn(arg, idx),
; which never returns. The kernel keeps rdx and r8-r10 across syscall,
; so fn, arg and idx travel there.
ibcr_clone3:
	mov r9, rcx
	mov eax, 435		; __NR_clone3
	syscall
	test rax, rax
	jnz .parent
	xor ebp, ebp
	and rsp, -16
	mov rdi, r9
	mov rsi, r8
	call rdx
	ud2
.parent:
	ret

; void ibcr_sigreturn(struct rt_sigframe *frame): the kernel reads the
; frame at rsp - 8, as if a handler had just returned through pretcode.
ibcr_sigreturn:
	lea rsp, [rdi + 8]
	mov eax, 15		; __NR_rt_sigreturn
	syscall
	ud2

section .note.GNU-stack noalloc noexec nowrite progbits
