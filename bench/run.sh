#!/bin/bash
# bench/run.sh: `make bench`. Measures ibcr against the limits of issue 5
# and against CRIU, and the verbs shim's overhead and the verbs job's
# checkpoint and restart in the Soft-RoCE guest; prints the tables, writes
# bench/results/latest.{csv,png}, bench/results/latest-raw.csv,
# bench/results/latest-verbs{,-raw}.csv and the results section of
# docs/benchmarks.md. docs/benchmarks.md explains the method.
#
# Environment:
#   IBCR_BENCH_QUICK=1     small sizes, one or two repetitions (a smoke run,
#                          ~1 min); results in build/bench/results-quick, the
#                          committed ones and docs/benchmarks.md untouched
#   IBCR_BENCH_SKIP_GUEST=1  no CRIU-in-guest part
#   IBCR_BENCH_SKIP_VERBS=1  no verbs part (the Soft-RoCE guest)
#   IBCR_BENCH_ONLY_VERBS=1  the verbs part alone; results in
#                          build/bench/results-verbs (results-quick with
#                          IBCR_BENCH_QUICK=1), docs/benchmarks.md untouched
#   IBCR_BENCH_VERBS_ROUNDS=N  perftest rounds of the verbs part (default 5)
#   IBCR_BENCH_STRICT=1    also fail when a target (of issue 5, or the verbs
#                          shim's) is missed
#   IBCR_BENCH_DIR=DIR     where images go, in a temporary directory made
#                          there (default build/bench; the baselines write to
#                          the same directory)
#   IBCR_BENCH_BUDGET_S, IBCR_BENCH_GUEST_S   see "what to run" below
#   IBCR_BENCH_NO_DOCS=1   do not rewrite docs/benchmarks.md
#   IBCR_BENCH_SKIP_FREEZE=1  no freeze-of-trees part (bench/freeze.sh)
#   IBCR_BENCH_SKIP_COLD=1    no cold and lazy restore part
#                          (bench/restore_cold.sh); IBCR_BENCH_COLD_REPS=N
#                          rounds (default 2, quick 1), IBCR_BENCH_COLD_SIZES
#                          (default "1G 4G", quick "256M"), then a tree of
#                          1 GiB in 4 processes (IBCR_BENCH_COLD_TREE=0: not)
#
# Exit status: 0, or 1 when any run failed (a restore whose memory does not
# verify, a tool that failed, a workload that did not answer): the reason
# is printed with "bench: FAIL:".
set -u
HERE=$(cd "$(dirname "$0")" && pwd -P)
TOP=$(dirname "$HERE")
cd "$TOP" || exit 1
BIN=$TOP/build/bench
IBCR=$TOP/build
RESULTS=$TOP/bench/results
WHERE=host
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
# shellcheck source=bench/freeze.sh
. "$HERE/freeze.sh"
# shellcheck source=bench/restore_cold.sh
. "$HERE/restore_cold.sh"
mkdir -p "${IBCR_BENCH_DIR:-$TOP/build/bench}" || exit 1
WORK=$(mktemp -d "${IBCR_BENCH_DIR:-$TOP/build/bench}/work.XXXXXX") || exit 1
RAW=$WORK/raw-host.csv
# Whatever happens, no workload or loader of ours is left behind, no image.
trap 'wl_abort; rm -rf "$WORK"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_ms; T_START=$NOW_MS

# ---- what to run -------------------------------------------------------
# NAME|WEIGHT|CONFIG:MIN[-MAX] ...|workload arguments (see run_plan in
# lib.sh). Every configuration runs MIN times; more repetitions, up to MAX,
# while the time budget allows: the host and CRIU guest parts are meant to
# stay within IBCR_BENCH_BUDGET_S, so that `make bench` with its build and
# the verbs part ends within 15 minutes on the 2-core build machine. The
# verbs part does a fixed amount of work, measured at VERBS_COST_S there
# (boot included); the default budget is 780 s less that (780 s when it is
# skipped). The weights share the host's part of it out. zlib is not run on
# the 4 GiB workloads (on incompressible data it runs at ~30 MiB/s: over
# two minutes for one checkpoint; its throughput per byte is the 1 GiB
# one's).
VERBS_COST_S=240	# 120 s, and the MPI part's (bench/verbs-mpi.sh)
if [[ ${IBCR_BENCH_SKIP_VERBS:-0} == 1 ]]; then
    BUDGET_S=${IBCR_BENCH_BUDGET_S:-780}
else
    BUDGET_S=${IBCR_BENCH_BUDGET_S:-$((780 - VERBS_COST_S))}
fi
GUEST_S=${IBCR_BENCH_GUEST_S:-270}
HOST_PLAN=(
    'inc-64M-1t|0.3|ibcr:5-15 ibcr-zstd:2-3 ibcr-zlib:2-3|-k incompressible -s 64M -t 1'
    'inc-64M-4t|0.3|ibcr:5-15 ibcr-zstd:1-3 ibcr-zlib:1-3|-k incompressible -s 64M -t 4'
    'inc-1G-1t|1.2|ibcr:3-7 ibcr-zstd:1-3 ibcr-zlib:1-2|-k incompressible -s 1G -t 1'
    'inc-1G-4t|0.8|ibcr:3-7 ibcr-zstd:1-3 ibcr-zlib:0-1|-k incompressible -s 1G -t 4'
    'inc-4G-1t|3.0|ibcr:2-3 ibcr-zstd:1-2|-k incompressible -s 4G -t 1'
    'inc-4G-4t|2.0|ibcr:1-3 ibcr-zstd:0-1|-k incompressible -s 4G -t 4'
    'sparse-16G-5pct|1.0|ibcr:2-5 ibcr-zstd:1-3 ibcr-zlib:0-2|-k sparse -m 16G -f 5 -t 1'
    'heap-1G|1.2|ibcr:2-5 ibcr-zstd:2-3 ibcr-zlib:1-3|-k compressible -s 1G -t 1'
)
# In the guest (TCG: 10-20x slower; --mem 5G: a 1 GiB workload, two
# images on tmpfs, CRIU): 64 MiB and 1 GiB only.
GUEST_MEM=5G
GUEST_PLAN=(
    'inc-64M-1t|1.0|ibcr:2-5 criu:2-5|-k incompressible -s 64M -t 1'
    'inc-64M-4t|1.0|ibcr:1-5 criu:1-5|-k incompressible -s 64M -t 4'
    'inc-1G-1t|3.0|ibcr:1-3 criu:1-3|-k incompressible -s 1G -t 1'
)
# The verbs part (bench/verbs-guest.sh): perftest rounds, iterations of
# ib_send_lat and of ib_write_bw (64 KiB messages) per run, checkpoints of
# the rc_pp pair while it runs on, --kill checkpoints with restarts. A
# perftest run costs 2-5 s of start-up in TCG whatever its length: a round
# (4 runs) takes 10-19 s, the rc_pp jobs 11-22 s, the boot ~10 s; the
# whole part 74 s at load 2, up to ~125 s on a busier machine
# (VERBS_COST_S above).
VERBS_ROUNDS=${IBCR_BENCH_VERBS_ROUNDS:-5}
VERBS_LAT_N=10000
VERBS_BW_N=1000
VERBS_CKPTS=5
VERBS_RESTARTS=3
ONLY_VERBS=${IBCR_BENCH_ONLY_VERBS:-0}
if [[ ${IBCR_BENCH_QUICK:-0} == 1 ]]; then
    BUDGET_S=${IBCR_BENCH_BUDGET_S:-60}
    GUEST_S=${IBCR_BENCH_GUEST_S:-30}
    HOST_PLAN=(
        'inc-64M-1t|1.0|ibcr:1-2 ibcr-zstd:1 ibcr-zlib:1|-k incompressible -s 64M -t 1'
        'inc-64M-4t|1.0|ibcr:1-2|-k incompressible -s 64M -t 4'
        'sparse-1G-5pct|1.0|ibcr:1-2|-k sparse -m 1G -f 5 -t 1'
        'heap-64M|1.0|ibcr:1-2 ibcr-zstd:1 ibcr-zlib:1|-k compressible -s 64M -t 1'
    )
    GUEST_MEM=2G
    GUEST_PLAN=('inc-64M-1t|1.0|ibcr:1 criu:1|-k incompressible -s 64M -t 1')
    VERBS_ROUNDS=${IBCR_BENCH_VERBS_ROUNDS:-1}
    VERBS_LAT_N=2000
    VERBS_BW_N=300
    VERBS_CKPTS=1
    VERBS_RESTARTS=1
    RESULTS=$TOP/build/bench/results-quick
    IBCR_BENCH_NO_DOCS=1
fi
if [[ $ONLY_VERBS == 1 ]]; then
    # a part of the results only: the committed ones and the docs stay
    [[ ${IBCR_BENCH_QUICK:-0} == 1 ]] || RESULTS=$TOP/build/bench/results-verbs
    IBCR_BENCH_NO_DOCS=1
    IBCR_BENCH_SKIP_VERBS=0
fi

# ---- preparation -------------------------------------------------------
need_pkgs=()
command -v criu >/dev/null || need_pkgs+=(criu)
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need_pkgs+=(python3-matplotlib)
if ((${#need_pkgs[@]})); then
    say "bench: installing ${need_pkgs[*]} (Debian packages)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${need_pkgs[@]}" >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 &&
          apt-get install -y -q --no-install-recommends "${need_pkgs[@]}" >/dev/null; } ||
        say "bench: could not install ${need_pkgs[*]}: going on without"
fi
for f in "$BIN/workload" "$BIN/baseline" "$BIN/benchexec" "$BIN/treeload" "$IBCR/saver" "$IBCR/restart-loader"; do
    [[ -x $f ]] || { say "bench: $f missing: run 'make bench'"; exit 1; }
done
[[ $(id -u) == 0 ]] || say "bench: not root: restores get new PIDs, CRIU will not run"

# What this saver can do: compression arrived with issue 5.
saver_help=$("$IBCR/saver" --help 2>&1)
has_compress=0
grep -q -- '--compress' <<<"$saver_help" && has_compress=1
grep -q -- '--stats' <<<"$saver_help" || say "bench: this saver has no --stats: freeze = the stall the workload saw"
filter_plan() {   # drops compressed configs when the saver cannot compress
    local item name weight plan args out=() c
    for item in "$@"; do
        IFS='|' read -r name weight plan args <<<"$item"
        if ((!has_compress)); then
            out=()
            for c in $plan; do [[ $c == ibcr-z* ]] || out+=("$c"); done
            plan=${out[*]}
        fi
        printf '%s|%s|%s|%s\n' "$name" "$weight" "$plan" "$args"
    done
}
mapfile -t HOST_PLAN < <(filter_plan "${HOST_PLAN[@]}")
((has_compress)) || say "bench: this saver has no --compress: compression is reported as pending"

mkdir -p "$RESULTS"
echo "$RAW_HEADER" >"$RAW"

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "commit: $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null)$(git -C "$TOP" diff --quiet HEAD -- lib saver loader arch 2>/dev/null || echo ' (+ uncommitted changes in lib/saver/loader/arch)')"
    echo "host: $(uname -r), $(nproc) cores, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), THP $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
    echo "images: $WORK ($(df -T "$WORK" | awk 'NR == 2 { print $2 }'))"
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "compression: $( ((has_compress)) && echo measured || echo 'pending (saver has no --compress)')"
} >"$WORK/meta.txt"

# ---- CRIU on this host: expected to fail on 6.18 -------------------------
criu_host() {
    local txt=$WORK/criu-host.txt
    {
        echo "criu: $(criu --version 2>&1 | tr '\n' ' ')"
        echo "criu check:"
        criu check 2>&1 | tail -n 4
    } >"$txt"
    wl_start criu-host -k incompressible -s 64M -t 1 || return 0
    mkdir -p "$WORK/criu-host.img"
    if criu dump -t "$WL_PID" -D "$WORK/criu-host.img" --leave-running -o dump.log 2>/dev/null; then
        echo "criu dump: works on this host" >>"$txt"
    else
        { echo "criu dump: fails:"; grep -m3 Error "$WORK/criu-host.img/dump.log"; } >>"$txt"
    fi
    wl_stop
    rm -rf "$WORK/criu-host.img"
    say "== host criu: $(grep -m1 -E 'Error|works|Looks good' "$txt")"
}
if [[ $ONLY_VERBS == 1 ]]; then
    :
elif command -v criu >/dev/null; then
    criu_host
else
    echo "criu: not installed" >"$WORK/criu-host.txt"
fi
# (When CRIU does work on a host, add "criu:N" to HOST_PLAN items.)

# ---- the host ---------------------------------------------------------------
now_ms
host_s=$((BUDGET_S - GUEST_S - (NOW_MS - T_START) / 1000))
[[ ${IBCR_BENCH_SKIP_GUEST:-0} == 1 ]] && host_s=$((host_s + GUEST_S))
((host_s > 0)) || host_s=1
if [[ $ONLY_VERBS != 1 ]]; then
    say "== host: ${#HOST_PLAN[@]} workloads, ${host_s} s for repetitions beyond the minimum"
    run_plan "$host_s" "${HOST_PLAN[@]}"
fi
# ---- the freeze of trees and many threads (bench/freeze.sh) -------------
FREEZE_RAW=$WORK/raw-freeze.csv
if [[ ${IBCR_BENCH_SKIP_FREEZE:-0} != 1 && $ONLY_VERBS != 1 ]]; then
    freeze_part "${IBCR_BENCH_FREEZE_REPS:-$([[ ${IBCR_BENCH_QUICK:-0} == 1 ]] && echo 1 || echo 3)}"
fi
# ---- cold and lazy restore (bench/restore_cold.sh) ---------------------
COLD_RAW=$WORK/raw-cold.csv
if [[ ${IBCR_BENCH_SKIP_COLD:-0} != 1 && $ONLY_VERBS != 1 ]]; then
    # shellcheck disable=SC2046 # the sizes, one word each
    cold_part "${IBCR_BENCH_COLD_REPS:-$([[ ${IBCR_BENCH_QUICK:-0} == 1 ]] && echo 1 || echo 2)}" \
        ${IBCR_BENCH_COLD_SIZES:-$([[ ${IBCR_BENCH_QUICK:-0} == 1 ]] && echo 256M || echo 1G 4G)}
fi
now_ms; T_HOST=$NOW_MS

# ---- the 6.1 guest with CRIU ---------------------------------------------
T_GUEST=$T_HOST
if [[ ${IBCR_BENCH_SKIP_GUEST:-0} != 1 && $ONLY_VERBS != 1 ]]; then
    gout=$WORK/guest
    mkdir -p "$gout"
    say "== guest (qemu TCG, Debian 6.1 kernel, --mem $GUEST_MEM): ${#GUEST_PLAN[@]} workloads"
    # setsid: the guest command runs in PID 1's session 0, which CRIU
    # refuses to dump from; in a session of its own it is an external one.
    # The guest's budget: what is left of the whole one, at least GUEST_S
    # less ~20 s to boot.
    guest_s=$((BUDGET_S - (T_HOST - T_START) / 1000))
    ((guest_s < GUEST_S)) && guest_s=$GUEST_S
    "$TOP/tools/vm/x86-vm.sh" --net none --mem "$GUEST_MEM" --timeout 900 --rw "$gout" -- \
        setsid -w "$HERE/guest.sh" "$gout" "$((guest_s - 20))" "${GUEST_PLAN[@]}"
    grc=$?
    if [[ -s $gout/raw-guest.csv ]]; then
        cat "$gout/raw-guest.csv" >>"$RAW"
    fi
    cp "$gout/criu-guest.txt" "$WORK/" 2>/dev/null
    if ((grc != 0)); then
        fail "guest part: exit status $grc ($(cat "$gout/failures" 2>/dev/null || echo '?') failures inside)"
    fi
    now_ms; T_GUEST=$NOW_MS
fi

# ---- the verbs shim in the Soft-RoCE guest --------------------------------
# Its own boot of the x86 guest (tools/vm/x86-vm.sh, rxe0 on a dummy
# netdev), as `make verbs-bench` does: perftest plain and under
# ibcr-launch, checkpoint and restart of the rc_pp pair
# (bench/verbs-guest.sh).
verbs_part() {
    local vout=$WORK/verbs rc
    mkdir -p "$vout"
    # The guest's packages, libibverbs-dev included: without its headers
    # `make all` built no shim.
    "$TOP/tools/vm/deps-x86.sh" || { fail "verbs part: tools/vm/deps-x86.sh failed"; return 1; }
    if [[ ! -x $IBCR/ibcr-launch || ! -f $IBCR/libibcr-verbs.so || ! -x $IBCR/tests/verbs/rc_pp ]]; then
        say "bench: building the verbs shim and its test programs (make all)"
        make -s all >/dev/null || { fail "verbs part: make all failed"; return 1; }
    fi
    if [[ ! -x $IBCR/bench/mpipp || ! -x $IBCR/tests/progs/mpiring ]]; then
        make -s bench-progs >/dev/null || { fail "verbs part: make bench-progs failed"; return 1; }
    fi
    say "== verbs (qemu TCG, Debian kernel, Soft-RoCE): $VERBS_ROUNDS perftest rounds, rc_pp: $VERBS_CKPTS checkpoints, $VERBS_RESTARTS restarts"
    "$TOP/tools/vm/x86-vm.sh" --timeout 900 --rw "$vout" -- \
        "$HERE/verbs-guest.sh" "$vout" "$VERBS_ROUNDS" "$VERBS_LAT_N" "$VERBS_BW_N" \
        "$VERBS_CKPTS" "$VERBS_RESTARTS"
    rc=$?
    [[ -s $vout/raw-verbs.csv ]] && cp "$vout/raw-verbs.csv" "$WORK/"
    cp "$vout/verbs-guest.txt" "$WORK/" 2>/dev/null
    if ((rc != 0)); then
        fail "verbs part: exit status $rc ($(cat "$vout/failures" 2>/dev/null || echo '?') failures inside)"
    fi
}
T_VERBS=$T_GUEST
if [[ ${IBCR_BENCH_SKIP_VERBS:-0} != 1 ]]; then
    verbs_part
    now_ms; T_VERBS=$NOW_MS
fi

# ---- report --------------------------------------------------------------
{
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "host part: $(((T_HOST - T_START) / 1000)) s"
    echo "guest part: $(((T_GUEST - T_HOST) / 1000)) s"
    echo "verbs part: $(((T_VERBS - T_GUEST) / 1000)) s"
    echo "failures: $FAILURES"
} >>"$WORK/meta.txt"
report_args=(--raw "$RAW" --meta "$WORK/meta.txt" --criu-host "$WORK/criu-host.txt"
             --criu-guest "$WORK/criu-guest.txt" --out "$RESULTS")
[[ -s $FREEZE_RAW ]] && report_args+=(--freeze "$FREEZE_RAW")
[[ -s $COLD_RAW ]] && report_args+=(--cold "$COLD_RAW")
[[ -s $WORK/raw-verbs.csv ]] &&
    report_args+=(--verbs "$WORK/raw-verbs.csv" --verbs-meta "$WORK/verbs-guest.txt")
[[ ${IBCR_BENCH_NO_DOCS:-0} == 1 ]] || report_args+=(--docs "$TOP/docs/benchmarks.md")
[[ ${IBCR_BENCH_STRICT:-0} == 1 ]] && report_args+=(--strict)
/usr/bin/python3 "$HERE/report.py" "${report_args[@]}"
rrc=$?
say "bench: $(((T_VERBS - T_START) / 1000)) s of measuring, $FAILURES failures"
if ((FAILURES)); then
    say "bench: FAILED ($FAILURES failures, see 'bench: FAIL:' above)"
    exit 1
fi
exit "$rrc"
