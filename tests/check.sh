#!/bin/bash
# tests/check.sh: the steps of `make check`, after its build. Each step runs
# even when an earlier one failed; each says its result and duration, and
# a summary at the end repeats them all (CI's log shows where time went).
# Exits non-zero if any step failed.
set -u
cd "$(dirname "$0")/.."
summary=() rc=0 t0=$SECONDS

# step NAME CMD...: runs CMD, records its result and duration
step() {
	local name=$1 s=$SECONDS st=0
	shift
	echo "=== check: $name"
	"$@" || st=$?
	local line
	line=$(printf '%-10s %-7s %5d s' "$name" "$([ $st = 0 ] && echo ok || echo FAILED)" $((SECONDS - s)))
	echo "=== check: $line"
	summary+=("$line")
	[ $st = 0 ] || rc=1
}

# the cross toolchain and the arm64 guest's packages first (a fresh machine)
aarch64() {
	tools/aarch64/deps.sh -q && make -s ARCH=aarch64 all progs unit-bins && tools/lint.sh aarch64 && tests/vm/aarch64-suite.sh
}

step lint tools/lint.sh
step lint-self tests/lint/selftest.sh
step layout-self tests/lint/layout-selftest.sh
step integ tests/integration/run.sh
step verbs tests/verbs/run-guest.sh
step verbs-pair tests/verbs/run-pair.sh
step xkernel tests/vm/xkernel.sh
step aarch64 aarch64
echo "=== check: summary ($((SECONDS - t0)) s)"
printf '    %s\n' "${summary[@]}"
exit $rc
