#!/bin/bash
# tests/lint/selftest.sh: tools/lint.sh fails on a planted bug. A copy of
# the linted sources gets a read of an uninitialised variable in
# lib/fdio.c, which both cppcheck and clang-tidy (clang-analyzer) must
# name; a lint that passes it, or names it through one tool only, fails
# this test. Run by `make check` after `make lint`'s own run.
set -u
cd "$(dirname "$0")/../.."
[ -d build/uapi ] || { echo "lint selftest: build/uapi missing: run make first" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ibcr-lint-selftest.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/tools" "$T/build"
cp -r lib freestanding saver loader verbs arch .clang-tidy "$T/"
cp tools/lint.sh tools/ckpt-info.c tools/info_json.c tools/info.h "$T/tools/"
ln -s "$PWD/build/uapi" "$T/build/uapi"
ln -s "$PWD/build/gen" "$T/build/gen"
cp -r build/view "$T/build/"	# relative links: they lead into the copy
cat >>"$T/lib/fdio.c" <<'C'

int lint_selftest_planted(int n);
int lint_selftest_planted(int n)
{
	int v;

	if (n > 0)
		v = n;
	return v;	/* uninitialised when n <= 0 */
}
C
st=0
out=$("$T/tools/lint.sh" --only lib/fdio.c 2>&1) || st=$?
fail=0
# the same file without the plant is clean: the finding is the plant's
tools/lint.sh --only lib/fdio.c >/dev/null 2>&1 ||
	{ echo "lint selftest: lib/fdio.c itself does not lint clean"; fail=1; }
[ "$st" = 1 ] || { echo "lint selftest: lint.sh exited $st on a planted bug, not 1"; fail=1; }
grep -q "lib/fdio.c:[0-9]*:[0-9]*:.*\(uninit\|Uninit\)" <<<"$out" ||
	{ echo "lint selftest: cppcheck did not name the planted bug"; fail=1; }
grep -q "lib/fdio.c: clang-tidy failed" <<<"$out" ||
	{ echo "lint selftest: clang-tidy did not name the planted bug"; fail=1; }
if [ $fail = 0 ]; then
	echo "PASS lint selftest (a planted bug fails both tools)"
else
	printf '%s\n' "$out" | head -40
	echo "FAIL lint selftest"
fi
exit $fail
