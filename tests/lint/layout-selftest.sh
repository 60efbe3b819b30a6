#!/bin/bash
# tests/lint/layout-selftest.sh: tools/layout.sh (the include boundaries)
# passes the tree as it is and names each planted crossing in a copy: lib/
# reaching up by "..", lib/ including the core's plan.h, lib/ including a
# loader header through a widened include path, the core including a
# hosted lib/ header. The core's own compile of that last plant fails too:
# its include path, not only the check, keeps hosted headers out. Run by
# `make check` after the lint.
set -u
cd "$(dirname "$0")/../.."
[ -f build/gen/incpaths.sh ] && [ -d build/view ] && [ -d build/uapi ] ||
	{ echo "layout selftest: build/gen, build/view or build/uapi missing: run make first" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ibcr-layout-selftest.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/tools" "$T/tests" "$T/build"
cp -r lib arch saver loader verbs freestanding "$T/"
cp -r tests/unit "$T/tests/"
cp tools/*.c tools/*.h tools/layout.sh "$T/tools/"
cp -r build/gen build/view "$T/build/"
fail=0

tools/layout.sh "$T" >/dev/null 2>&1 ||
	{ echo "layout selftest: the unchanged tree does not pass"; tools/layout.sh "$T" | head; fail=1; }

echo '#include "../loader/loader.h"' >>"$T/lib/fdio.c"
echo '#include "core/plan.h"' >>"$T/lib/err.c"
echo '#include "loader.h"' >>"$T/lib/buf.c"
sed -i "s|^INC_lib='|INC_lib='-Iloader |" "$T/build/gen/incpaths.sh"
echo '#include "err.h"' >>"$T/freestanding/core/proc.c"
st=0
out=$(tools/layout.sh "$T" 2>&1) || st=$?
[ "$st" = 1 ] || { echo "layout selftest: layout.sh exited $st on planted crossings, not 1"; fail=1; }
for want in 'lib/fdio.c:[0-9]*: "../loader/loader.h" leaves the include path' \
	'lib/err.c:[0-9]*: "core/plan.h" is not on the include path of lib/' \
	'lib/buf.c:[0-9]*: "loader.h" is loader/loader.h, which lib/ must not include' \
	'freestanding/core/proc.c:[0-9]*: "err.h" is not on the include path of core/'; do
	grep -q "$want" <<<"$out" || { echo "layout selftest: not named: $want"; fail=1; }
done

# the core's compile of the hosted header fails (the GNUmakefile's CORECFLAGS' paths)
# shellcheck source=/dev/null
. build/gen/incpaths.sh
uapi=$(realpath build/uapi)
cc_out=$(cd "$T" && gcc -fsyntax-only -ffreestanding -nostdinc -isystem "$(gcc -print-file-name=include)" \
	$INC_core -idirafter "$uapi" -include freestanding/core/hidden.h freestanding/core/proc.c 2>&1) &&
	{ echo "layout selftest: the core compiled with a hosted header"; fail=1; }
grep -q 'err.h' <<<"$cc_out" ||
	{ echo "layout selftest: the core's compile did not fail on err.h"; printf '%s\n' "$cc_out" | head -5; fail=1; }

if [ $fail = 0 ]; then
	echo "PASS layout selftest (each planted crossing is named)"
else
	printf '%s\n' "$out" | head -20
	echo "FAIL layout selftest"
fi
exit $fail
