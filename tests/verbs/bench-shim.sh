#!/usr/bin/env bash
# tests/verbs/bench-shim.sh - what the verbs shim costs: ib_send_lat
# (t_typical latency) and ib_write_bw (average bandwidth) over Soft-RoCE in
# one boot of the x86 guest, without and with build/ibcr-launch, alternating,
# IBCR_BENCH_ROUNDS rounds (default 5); prints medians and shim/plain ratios.
# The guest is emulated (TCG): absolute numbers mean little, ratios of
# interleaved runs in the same boot are what to look at.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
# the guest's packages, libibverbs-dev included (the shim builds against it)
tools/vm/deps-x86.sh || { echo "$(basename "$0"): tools/vm/deps-x86.sh failed" >&2; exit 1; }
make -s all >/dev/null || { echo "$(basename "$0"): make failed" >&2; exit 1; }
env_args=()
for v in IBCR_BENCH_ROUNDS IBCR_BENCH_LAT_ITERS IBCR_BENCH_BW_ITERS; do
	[[ -n ${!v:-} ]] && env_args+=(--env "$v=${!v}")
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tools/vm/x86-vm.sh --timeout 3600 ${env_args[@]+"${env_args[@]}"} -- \
	bash "$ROOT/tests/verbs/guest.sh" bench "$tmp"
