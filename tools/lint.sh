#!/bin/bash
# tools/lint.sh [aarch64]: the static checks of `make lint` (run by `make
# check`). cppcheck and clang-tidy (.clang-tidy) over the product's C:
# lib, freestanding (the restore core and its runtime), arch, saver,
# loader, verbs, tools. Any finding fails.
# A finding that is wrong is silenced where it is, with the reason beside
# it (cppcheck-suppress, NOLINT(check)). Needs build/uapi: run after
# `make`. With aarch64 (after `make ARCH=aarch64 all`): clang-tidy over
# arch/aarch64 and the files of lib with code of their own for aarch64
# (`__aarch64__`), as the aarch64 musl build sees them; the rest of the
# code is the same for both and checked by the first form. With --only
# FILE...: the host checks over those files alone (the selftest's planted
# bug needs no second lint of the whole tree). A full run first checks
# the include boundaries (tools/layout.sh).
set -u
cd "$(dirname "$0")/.."
only=()
if [ "${1:-}" = --only ]; then
	shift
	only=("$@")
	[ ${#only[@]} -gt 0 ] || { echo "lint: --only needs files" >&2; exit 2; }
	set --
fi
for t in cppcheck clang-tidy; do
	command -v $t >/dev/null || { echo "lint: $t missing (apt-get install $t)" >&2; exit 2; }
done
WARN="-Wall -Wextra -Wshadow -Wno-unused-parameter"

if [ "${1:-}" = aarch64 ]; then
	UAPI=build/aarch64/uapi MUSL=/usr/include/aarch64-linux-musl
	[ -d "$UAPI" ] && [ -d "$MUSL" ] ||
		{ echo "lint: $UAPI or $MUSL missing: run make ARCH=aarch64 all first" >&2; exit 2; }
	own=$(grep -l "__aarch64__" lib/*.c freestanding/rt/*.c)
	echo "lint: clang-tidy, arch/aarch64 and" $own
	fail=0
	# +crc: clang's arm_acle.h declares the CRC32 intrinsics only for a
	# file built for it; GCC's (the build's) also for a function's
	# target("+crc"), which freestanding/rt/crc32c.c uses so the rest runs anywhere
	# shellcheck source=/dev/null
	. build/aarch64/gen/incpaths.sh || exit 2
	for f in arch/aarch64/*.c $own; do
		case $f in
		freestanding/*) inc=$INC_freestanding ;;
		*) inc="INC_${f%%/*}"; inc=${!inc} ;;
		esac
		if ! out=$(clang-tidy --quiet "$f" -- --target=aarch64-linux-musl -march=armv8-a+crc -nostdlibinc \
			-isystem "$MUSL" $WARN -D_GNU_SOURCE $inc -idirafter "$UAPI" 2>&1) ||
		   grep -q "warning:\|error:" <<<"$out"; then
			printf '%s: clang-tidy failed\n%s\n' "$f" "$out"
			fail=1
		fi
	done
	[ $fail = 0 ] && echo "lint: clean"
	exit $fail
fi

ARCH=$(uname -m)
UAPI=build/uapi
[ -d "$UAPI" ] && [ -f build/gen/release.h ] || { echo "lint: $UAPI or build/gen missing: run make first" >&2; exit 2; }
JOBS=$(nproc)
# each component's include path, as the build has it (GNUmakefile, INC_*)
# shellcheck source=/dev/null
. build/gen/incpaths.sh || exit 2
BASE="$WARN -D_GNU_SOURCE -idirafter $UAPI"
CORE="$BASE $INC_core -ffreestanding -nostdinc -isystem $(gcc -print-file-name=include) \
-include freestanding/core/hidden.h"
fail=0

# what is checked: the product's C, or the --only files
cpp_set=(lib freestanding/rt freestanding/core freestanding/arch/"$ARCH" saver loader verbs arch/"$ARCH" tools/ckpt-info.c tools/info_json.c tools/ckpt-oci.c)
tidy_set=(lib/*.c freestanding/rt/*.c freestanding/core/*.c freestanding/arch/"$ARCH"/*.c
	saver/*.c loader/*.c verbs/*.c arch/"$ARCH"/*.c
	tools/ckpt-info.c tools/info_json.c tools/ckpt-oci.c)
# ibcr-pmix: built only with libpmix-dev (verbs/verbs.mk)
PMIX_CFLAGS=$(pkg-config --cflags pmix 2>/dev/null) && {
	cpp_set+=(tools/ibcr-pmix.c tools/pmix_bundle.c)
	tidy_set+=(tools/ibcr-pmix.c tools/pmix_bundle.c)
}
if [ ${#only[@]} -gt 0 ]; then
	cpp_set=("${only[@]}")
	tidy_set=("${only[@]}")
else
	tools/layout.sh || fail=1
fi

# cppcheck: ctuuninitvar takes every out-parameter (a buffer a read fills)
# for a use of uninitialised memory; its checks within a file stay on.
echo "lint: cppcheck"
if ! cppcheck -q --error-exitcode=1 --inline-suppr --enable=warning,portability,performance \
	--suppress=missingIncludeSystem --suppress=ctuuninitvar -D__${ARCH}__ \
	-Ilib -Ifreestanding -Iarch -Iarch/"$ARCH" -Iverbs -Ibuild/gen -Itools \
	"${cpp_set[@]}"; then
	fail=1
fi

# clang-tidy, one file per run, $JOBS at a time; core files get the core's flags
tidy() {
	local f=$1 flags out
	case $f in
	freestanding/core/*|freestanding/arch/*) flags=$CORE ;;
	freestanding/*) flags="$BASE $INC_freestanding" ;;
	tools/ibcr-pmix.c) flags="$BASE $INC_tools $PMIX_CFLAGS" ;;
	*) local inc="INC_${f%%/*}"; flags="$BASE ${!inc}" ;;
	esac
	# a finding fails (WarningsAsErrors), and so does a clang-tidy that
	# could not run at all: its status, not only its output, decides
	if ! out=$(clang-tidy --quiet "$f" -- $flags 2>&1) ||
	   grep -q "warning:\|error:" <<<"$out"; then
		printf '%s: clang-tidy failed\n%s\n' "$f" "$out"
		return 1
	fi
}
export -f tidy
export BASE CORE PMIX_CFLAGS INC_lib INC_arch INC_saver INC_loader INC_tools INC_verbs INC_freestanding
echo "lint: clang-tidy ($JOBS at a time)"
if ! printf '%s\n' "${tidy_set[@]}" | xargs -P "$JOBS" -I{} bash -c 'tidy {}'; then
	fail=1
fi
[ $fail = 0 ] && echo "lint: clean"
exit $fail
