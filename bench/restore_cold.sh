#!/usr/bin/env bash
# shellcheck shell=bash
# bench/restore_cold.sh: cold and warm restore of an incompressible
# workload's image, eager and with `restart-loader --lazy` (until
# running, until fully restored), beside reading the image with O_DIRECT
# (dd iflag=direct, cold) and the fill limit (bench/baseline fill:
# populating as much memory from the cached image), all in the same run.
# "cold": the image dropped from the page cache (posix_fadvise
# DONTNEED); "warm": read once before. Sourced by bench/run.sh
# (cold_part, rows to $COLD_RAW), or run alone:
#   bench/restore_cold.sh [REPS [SIZE...]]   (default 2 reps of 1G 4G)
# which prints the rows and the table (bench/cold_report.py); then a
# tree of 1 GiB in four processes (IBCR_BENCH_COLD_TREE=0: not).
# Each restore waits until the program it restored is gone before the
# next begins: a 4 GiB process's memory being freed by the kernel beside
# the next restore made that one seconds slower (the "warm slower than
# cold" of 2026-12-01).

COLD_RAW_HEADER="where,size,way,rep,running_ms,full_ms"
COLD_WAYS=("cold" "cold --lazy" "warm" "warm --lazy")

# cold_drop FILE: out of the page cache (written and synced first)
cold_drop() {
    sync -f "$1" 2>/dev/null || sync
    python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}

# cold_tree_pids PID: PID and its descendants (the restored tree's), deepest first
cold_tree_pids() {
    local c f kids
    for f in /proc/"$1"/task/*/children; do
        kids=()
        read -r -a kids 2>/dev/null <"$f"
        for c in "${kids[@]}"; do cold_tree_pids "$c"; done
    done
    echo "$1"
}

# cold_restore IMG ARGS...: one restore; CR_RUN (ms until it runs
# again), CR_FULL (until its memory is all in: the same when eager).
cold_restore() {
    local img=$1 err=$WORK/cold-loader.err lpid kids k
    shift
    : >"$err"
    "$IBCR/restart-loader" --stats "$@" "$img" </dev/null >/dev/null 2>"$err" &
    lpid=$!
    if [[ " $* " == *" --lazy "* ]]; then
        wait_line "$err" 0 '^ibcr-stats: lazy_fill_ms=' 0.05
    else
        wait_line "$err" 0 '^ibcr-stats: restore_ms=' 0.05
    fi
    local ok=$?
    parse_kv "$(grep -m1 '^ibcr-stats: restore_ms=' "$err")"
    CR_RUN=${KV[restore_ms]:-}
    CR_FULL=$CR_RUN
    if [[ " $* " == *" --lazy "* ]]; then
        parse_kv "$(grep -m1 '^ibcr-stats: lazy_fill_ms=' "$err")"
        CR_FULL=${KV[full_ms]:-}
        # a tree: the fills' lines come together, once every one is over
        grep -q '^ibcr-stats: lazy_fill_ms=' "$err" || CR_FULL=''
    fi
    kids=$(cold_tree_pids "$lpid")
    # shellcheck disable=SC2086 # the pids, one word each
    kill -9 $kids 2>/dev/null
    wait "$lpid" 2>/dev/null
    for k in $kids; do wait_gone "$k"; done
    if ((ok != 0)) || [[ -z $CR_RUN || -z $CR_FULL ]]; then
        fail "cold: restart-loader $* $img: $(tail -n 2 "$err")"
        return 1
    fi
}

# cold_size SIZE REPS: one image of SIZE, REPS rounds of every way
cold_size() {
    local size=$1 reps=$2 img=$WORK/cold.ckpt log=$WORK/cold-wl.log
    : >"$log"
    rm -f "$WORK/cold.pid"
    # its memory checked every 10 s: at once after a restore, so a lazy
    # one serves a program reading all of its memory
    setsid "$BIN/benchexec" -n -p "$WORK/cold.pid" -- "$BIN/workload" \
        -k incompressible -s "$size" </dev/null >>"$log" 2>&1 &
    wait_line "$log" 0 '^(ready|FAIL)' 0.05 || { fail "cold: workload $size did not start"; return 1; }
    [[ $LINE == ready* ]] || { fail "cold: workload $size: $LINE"; return 1; }
    parse_kv "$LINE"
    local pid=${KV[pid]} bytes=${KV[bytes]}
    "$IBCR/saver" --kill -o "$img" "$pid" 2>"$WORK/cold-saver.err" ||
        { fail "cold: saver $size: $(tail -n 2 "$WORK/cold-saver.err")"; return 1; }
    wait_gone "$pid"
    cold_rounds "$size" "$img" "$bytes" "$reps"
    rm -f "$img"
}

# cold_tree REPS: a tree of 1 GiB in all (treeload: a parent and 3
# children of 320 MiB each, no shared memory), REPS rounds of every way;
# "running" is until every process runs, "full" until every fill is over
cold_tree() {
    local reps=$1 img=$WORK/cold-tree.ckpt log=$WORK/cold-tree.log label=1G-tree4
    : >"$log"
    setsid "$BIN/benchexec" -n -p "$WORK/cold-tree.pid" -- "$BIN/treeload" -y 0 -c 3 -s 320M \
        -t 1 </dev/null >>"$log" 2>&1 &
    wait_line "$log" 0 '^ready children=' 0.05 || { fail "cold: treeload did not start"; return 1; }
    parse_kv "$LINE"
    local tpid=${KV[pid]}
    "$IBCR/saver" --tree --kill -o "$img" "$tpid" 2>"$WORK/cold-saver.err" ||
        { fail "cold: saver --tree: $(tail -n 2 "$WORK/cold-saver.err")"; return 1; }
    wait_gone "$tpid"
    cold_rounds "$label" "$img" $((960 << 20)) "$reps"
    rm -f "$img"
}

# cold_rounds LABEL IMG BYTES REPS: the direct read, the fill limit of
# BYTES and every way, REPS times, as rows of LABEL
cold_rounds() {
    local size=$1 img=$2 bytes=$3 reps=$4 r way t0 ms
    for ((r = 1; r <= reps; r++)); do
        cold_drop "$img"
        now_ms; t0=$NOW_MS
        dd if="$img" of=/dev/null bs=4M iflag=direct 2>/dev/null ||
            { fail "cold: dd iflag=direct of $img failed"; return 1; }
        now_ms; ms=$((NOW_MS - t0))
        printf '%s\n' "host,$size,direct-read,$r,$ms,$ms" >>"$COLD_RAW"
        parse_kv "$("$BIN/baseline" fill "$img" "$bytes")"
        ms=${KV[populate_pread_ms]:-}
        [[ -n $ms ]] && printf '%s\n' "host,$size,fill-limit,$r,$ms,$ms" >>"$COLD_RAW"
        for way in "${COLD_WAYS[@]}"; do
            # shellcheck disable=SC2086 # "cold --lazy": two words
            set -- $way
            if [[ $1 == cold ]]; then cold_drop "$img"; else cat "$img" >/dev/null; fi
            cold_restore "$img" "${@:2}" || continue
            printf '%s\n' "host,$size,${way/ /},$r,$CR_RUN,$CR_FULL" >>"$COLD_RAW"
            say "    $size $way #$r: running again in $CR_RUN ms, all in at $CR_FULL ms"
        done
    done
}

# cold_part REPS SIZE...: rows to $COLD_RAW
cold_part() {
    local reps=$1 size
    shift
    echo "$COLD_RAW_HEADER" >"$COLD_RAW"
    for size in "$@"; do
        say "== host cold and lazy restore, $size ($reps rounds)"
        cold_size "$size" "$reps"
    done
    if [[ ${IBCR_BENCH_COLD_TREE:-1} == 1 ]]; then
        say "== host cold and lazy restore of a tree, 1 GiB in 4 processes ($reps rounds)"
        cold_tree "$reps"
    fi
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -u
    HERE=$(cd "$(dirname "$0")" && pwd)
    TOP=$(cd "$HERE/.." && pwd)
    BIN=$TOP/build/bench
    IBCR=${IBCR_BUILD:-$TOP/build}
    FAILURES=0
    WAIT_S=${WAIT_S:-300}
    # shellcheck source=bench/lib.sh
    . "$HERE/lib.sh"
    mkdir -p "${IBCR_BENCH_DIR:-$TOP/build/bench}" || exit 1
    WORK=$(mktemp -d "${IBCR_BENCH_DIR:-$TOP/build/bench}/cold.XXXXXX") || exit 1
    trap 'rm -rf "$WORK"' EXIT
    COLD_RAW=$WORK/raw-cold.csv
    reps=${1:-2}
    sizes=("${@:2}")
    ((${#sizes[@]})) || sizes=(1G 4G)
    cold_part "$reps" "${sizes[@]}"
    cat "$COLD_RAW"
    python3 "$HERE/cold_report.py" "$COLD_RAW"
    ((FAILURES == 0))
fi
