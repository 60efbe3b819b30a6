#!/bin/bash
# bench/guest.sh OUTDIR BUDGET_S PLAN...: the in-guest half of `make bench`, run by
# bench/run.sh through tools/vm/x86-vm.sh (Debian's 6.1 kernel under qemu
# TCG, where Debian's criu 3.17 works). ibcr and CRIU checkpoint and
# restore the same workloads in the same boot, so their ratio is taken
# under the same (emulated, slow) conditions.
#
# PLAN items as in bench/run.sh (NAME|WEIGHT|CONFIG:MIN[-MAX] ...|ARGS),
# e.g. 'inc-64M-1t|1.0|ibcr:2-5 criu:2-5|-k incompressible -s 64M -t 1';
# BUDGET_S: seconds for repetitions beyond the minimum (see run_plan).
# Rows go to OUTDIR/raw-guest.csv, `criu check` to OUTDIR/criu-guest.txt,
# the number of failures to OUTDIR/failures.
set -u
# IBCR_BENCH_TRACE=1: trace every step with a timestamp (where the time goes).
[[ -n ${IBCR_BENCH_TRACE:-} ]] && { PS4='+ $EPOCHREALTIME '; set -x; }
OUT=$1
BUDGET=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd -P)
TOP=$(dirname "$HERE")
BIN=$TOP/build/bench
IBCR=$TOP/build
# Images and logs on a tmpfs of the guest's own (its RAM, --mem): it must
# hold two images at once (the restart-loader keeps its image open while
# the program it restored runs: that image is still there, unlinked, when
# the next checkpoint is written), and RAM must also hold the workload.
WORK=/run/ibcr-bench
RAW=$OUT/raw-guest.csv
WHERE=guest
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
mkdir -p "$WORK"
mount -t tmpfs -o size=80% tmpfs "$WORK" || { echo "guest: cannot mount a tmpfs on $WORK" >&2; exit 1; }
: >"$RAW"

{
    echo "kernel: $(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo)"
    echo "criu: $(criu --version | tr '\n' ' ')"
    echo "criu check:"
    criu check 2>&1 | tail -n 5
} >"$OUT/criu-guest.txt"

run_plan "$BUDGET" "$@"
echo "$FAILURES" >"$OUT/failures"
((FAILURES == 0))
