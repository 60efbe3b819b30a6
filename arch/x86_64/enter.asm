; SPDX-License-Identifier: MIT
; Used by the loader (musl) to jump into the restore core it copied into
; the hole; there is no way back.

bits 64
default rel

section .text

global ibcr_enter

; void ibcr_enter(uint64_t entry, void *plan, uint64_t sp)
ibcr_enter:
	mov rsp, rdx
	mov rax, rdi
	mov rdi, rsi
	xor ebp, ebp
	jmp rax

section .note.GNU-stack noalloc noexec nowrite progbits
