; SPDX-License-Identifier: MIT
; The restore core blob, embedded into restart-loader.

section .rodata align=64

global ibcr_core_blob
global ibcr_core_blob_end

ibcr_core_blob:
	incbin "core.bin"
ibcr_core_blob_end:

section .note.GNU-stack noalloc noexec nowrite progbits
