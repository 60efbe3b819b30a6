// SPDX-License-Identifier: MIT
// Used by the loader (musl) to jump into the restore core it copied into
// the hole; there is no way back.

	.text
	.global ibcr_enter

// void ibcr_enter(uint64_t entry, void *plan, uint64_t sp)
ibcr_enter:
	mov sp, x2
	mov x16, x0
	mov x0, x1
	mov x29, #0
	br x16

	.section .note.GNU-stack, "", %progbits
