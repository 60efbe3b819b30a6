// SPDX-License-Identifier: MIT
// The restore core blob, embedded into restart-loader.

	.section .rodata
	.p2align 6
	.global ibcr_core_blob
	.global ibcr_core_blob_end
ibcr_core_blob:
	.incbin "core.bin"
ibcr_core_blob_end:

	.section .note.GNU-stack, "", %progbits
