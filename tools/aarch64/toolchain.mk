# tools/aarch64/toolchain.mk - aarch64 cross toolchain for ibcr (GNU make).
#
# The top GNUmakefile includes this when ARCH=aarch64:
#
#     ifeq ($(ARCH),aarch64)
#     include tools/aarch64/toolchain.mk
#     endif
#
# It only sets variables (no targets), so where it is included does not
# change the default goal.  Everything it names is installed/built by
# tools/aarch64/deps.sh (run as root; $(A64_DEPS) -q is quick once done).
#
# Output: fully static musl ELF executables for aarch64 (ET_EXEC at
# 0x400000).  They run in the guest of tools/vm/arm64-vm.sh, not on the host.
#
# Notes (see docs/aarch64.md and shared/recipes/aarch64-vm.md):
#  - aarch64-linux-musl-gcc is musl-dev:arm64's wrapper around
#    aarch64-linux-gnu-gcc with musl's specs.  The specs use -nostdinc, so
#    kernel uapi headers (<linux/...>, <asm/...>) come from
#    $(A64_EXTRA)/include, added with -idirafter so musl's own headers always
#    win.  Include musl's <elf.h>, not <linux/elf.h> (typedefs clash).
#  - cmocka.h would typedef uintptr_t again on musl: -D_UINTPTR_T_DEFINED
#    (recipe pitfall 4).  The macro means nothing to musl or to any other
#    header used here, so it is simply part of CFLAGS.
#  - Debian's libz.a and libzstd.a were built against glibc with
#    _FORTIFY_SOURCE; the few __*_chk functions they call (gzprintf,
#    zstd's debug fprintf) come from libibcr-fortify-shim.a
#    (tools/aarch64/fortify-shim.c), which must come after them on the
#    link line.  A64_ZLIB_LIBS / A64_ZSTD_LIBS already include it.
#  - -static-pie does not work through the musl specs wrapper (it adds an
#    INTERP); use plain -static (recipe pitfall 5).
#  - .S files go to the same $(CC), which runs GNU as.

A64_TOOLCHAIN_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

# Where deps.sh put the extra aarch64 headers and static libraries.
A64_EXTRA ?= $(or $(IBCR_A64_EXTRA),/opt/ibcr-aarch64)
A64_DEPS  := $(A64_TOOLCHAIN_DIR)/deps.sh
# The harness that runs a directory of static test binaries in one boot.
A64_VM    := $(A64_TOOLCHAIN_DIR)/../vm/arm64-vm.sh

CROSS_COMPILE ?= aarch64-linux-gnu-

# ":=" on purpose: make's built-in default CC=cc must not survive, but a
# CC=... given on the command line still overrides this.
CC      := aarch64-linux-musl-gcc
AR      := $(CROSS_COMPILE)ar
LD      := $(CROSS_COMPILE)ld
OBJCOPY := $(CROSS_COMPILE)objcopy
OBJDUMP := $(CROSS_COMPILE)objdump
NM      := $(CROSS_COMPILE)nm
RANLIB  := $(CROSS_COMPILE)ranlib
STRIP   := $(CROSS_COMPILE)strip

# Kernel uapi headers (asm, asm-generic, linux, ...), after musl's.
A64_UAPI_CFLAGS   := -idirafter $(A64_EXTRA)/include

A64_FORTIFY_SHIM  := $(A64_EXTRA)/zlib/lib/libibcr-fortify-shim.a

A64_ZLIB_CFLAGS   := -I$(A64_EXTRA)/zlib/include
A64_ZLIB_LIBS     := $(A64_EXTRA)/zlib/lib/libz.a $(A64_FORTIFY_SHIM)

A64_ZSTD_CFLAGS   := -I$(A64_EXTRA)/zstd/include
A64_ZSTD_LIBS     := $(A64_EXTRA)/zstd/lib/libzstd.a $(A64_FORTIFY_SHIM)

A64_CMOCKA_CFLAGS := -I$(A64_EXTRA)/cmocka/include -D_UINTPTR_T_DEFINED
A64_CMOCKA_LIBS   := $(A64_EXTRA)/cmocka/lib/libcmocka.a

CFLAGS  += $(A64_UAPI_CFLAGS) $(A64_ZLIB_CFLAGS) $(A64_ZSTD_CFLAGS) \
           $(A64_CMOCKA_CFLAGS)
LDFLAGS += -static
