#!/usr/bin/env bash
# tests/verbs/run-guest.sh - every verbs check, in four boots of the x86
# guest with Soft-RoCE (tools/vm/x86-vm.sh):
#
#   boot 1 (rxe0)       shim with and without, in-process rebuild self-test,
#                       ibv_{rc,ud,srq}_pingpong and perftest under the shim,
#                       checkpoint/restart of rc_pp and of the pingpongs,
#                       a missing peer; leaves an image in a --rw directory
#   boot 2 (rxe0)       that image restarted in a fresh boot (extra QPs/MRs
#                       created first so the new numbers differ)
#   boot 3 (--net none) that image restarted with no RDMA device: refused
#   boot 4 (rxe0, 6.12) rc_pp, epoll/rdma_cm, Open MPI over UCX, eventfds on
#                       Debian 12's other kernel (IBCR_VERBS_KSERIES2, 6.12)
#
# Prints PASS/FAIL per check and a summary; exits non-zero on any failure.
# IBCR_VERBS_TOOLS=DIR takes saver and restart-loader from DIR.
# Options: --main-only (boot 1 only), --only CHECK... (boot 1, those checks;
# boots 2 and 3 too when fresh_boot_prepare is one of them).
# The guests' output is kept in build/verbs-logs/. Environment: IBCR_VM_* (see
# docs/vm-harness.md). Needs root (the harness installs its packages).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
VM=$ROOT/tools/vm/x86-vm.sh
main_only=0
only=()
case ${1:-} in
--main-only) main_only=1 ;;
--only)
	shift
	only=("$@")
	# the image for the later boots comes from fresh_boot_prepare
	[[ " $* " == *" fresh_boot_prepare "* ]] || main_only=1 ;;
esac

cd "$ROOT" || exit 2
# the guest's packages, libibverbs-dev included (the shim builds against it)
tools/vm/deps-x86.sh || { echo "$(basename "$0"): tools/vm/deps-x86.sh failed" >&2; exit 1; }
make -s all >/dev/null || { echo "$(basename "$0"): make failed" >&2; exit 1; }

rw=$(mktemp -d "$ROOT/build/verbs-rw.XXXXXX")
mkdir -p build/verbs-logs
log=$ROOT/build/verbs-logs/run
# The images stay for a post-mortem when something failed.
keep_rw() {
	if ((failed)); then
		rm -rf build/verbs-logs/rw
		mv "$rw" build/verbs-logs/rw && echo "verbs: images kept in build/verbs-logs/rw"
	else
		rm -rf "$rw"
	fi
}
trap keep_rw EXIT
# IBCR_VERBS_TOOLS=DIR: saver and restart-loader from DIR instead of build/
tools_env=()
[[ -n ${IBCR_VERBS_TOOLS:-} ]] && tools_env=(--env "IBCR_VERBS_TOOLS=$IBCR_VERBS_TOOLS")
passed=0
failed=0
t0=$SECONDS

# boot PHASE [harness options]: runs guest.sh PHASE; counts its PASS/FAIL.
boot() {
	local phase=$1 rc=0 b0=$SECONDS
	shift
	echo "=== boot: $phase"
	"$VM" --timeout 2400 --rw "$rw" "$@" ${tools_env[@]+"${tools_env[@]}"} -- bash "$ROOT/tests/verbs/guest.sh" "$phase" "$rw" \
		${only[@]+"${only[@]}"} \
		2>&1 | tee "$log.$phase"
	rc=${PIPESTATUS[0]}
	passed=$((passed + $(grep -c '^PASS ' "$log.$phase")))
	failed=$((failed + $(grep -c '^FAIL ' "$log.$phase")))
	if ((rc != 0)) && ! grep -q '^FAIL ' "$log.$phase"; then
		echo "FAIL boot-$phase: the guest exited with status $rc"
		failed=$((failed + 1))
	fi
	echo "=== boot $phase: $((SECONDS - b0)) s"
}

boot main
if ((!main_only)); then
	boot fresh
	boot nodev --net none
	# Debian 12's other kernel: what Open MPI over UCX needs, again
	IBCR_VM_KSERIES=${IBCR_VERBS_KSERIES2:-6.12} boot kernel2
fi
echo "verbs: $passed passed, $failed failed ($((SECONDS - t0)) s)"
((failed == 0))
