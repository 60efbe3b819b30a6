# shellcheck shell=bash
# bench/freeze.sh, sourced by bench/run.sh: the freeze of a live
# checkpoint (saver without --kill) of the workloads whose freeze used
# to be long (issue 21): a tree with shared memory (bench/treeload: a
# 64 MiB SysV segment in the parent, three forked children of 256 MiB
# and 8 threads each) and a process of 24 busy threads (bench/workload
# -t 24 -b). Each repetition alternates "ibcr" (the saver as it is) and
# "ibcr-frozen" (--no-snapshot: stopped for the whole write, as a tree
# with shared memory was before 2026-12-01), so the ratio is of one run.
# freeze_ms is the saver's (--stats), stall_ms what the program's
# heartbeat saw. Rows go to $FREEZE_RAW.

FREEZE_RAW_HEADER="where,workload,config,rep,freeze_ms,stall_ms,seize_ms,capture_ms,snapshot_ms,ckpt_ms"
FREEZE_PLAN=(
    'tree-sysv64M-3x256M-8t|--tree|treeload|-y 64M -c 3 -s 256M -t 8'
    'busy-24t-64M||workload|-p 0 -k incompressible -s 64M -t 24 -b'
)

# freeze_start PROGRAM ARGS...: started as the workloads are; FZ_PID.
freeze_start() {
    local prog=$1 log=$WORK/freeze.log
    shift
    : >"$log"
    rm -f "$WORK/fz.pid"
    setsid "$BIN/benchexec" -n -p "$WORK/fz.pid" -- "$BIN/$prog" "$@" </dev/null >>"$log" 2>&1 &
    wait_line "$log" 0 '^(ready|FAIL)' || { fail "freeze: $prog did not start"; return 1; }
    [[ $LINE == ready* ]] || { fail "freeze: $prog: $LINE"; return 1; }
    parse_kv "$LINE"
    FZ_PID=${KV[pid]}
}

# freeze_stall: SIGUSR2, the longest gap since the last one (FZ_STALL).
freeze_stall() {
    count_lines "$WORK/freeze.log"
    kill -USR2 "$FZ_PID" 2>/dev/null || return 1
    wait_line "$WORK/freeze.log" "$NLINES" "^stall.* pid=$FZ_PID\$" || return 1
    parse_kv "$LINE"
    FZ_STALL=${KV[max_ms]}
}

# freeze_rep NAME CONFIG REP TREE: one live checkpoint, one row.
freeze_rep() {
    local name=$1 config=$2 rep=$3 tree=$4 err=$WORK/freeze-saver.err res=$WORK/freeze.res stats='' l
    local -a opts=(--stats)
    [[ -n $tree ]] && opts+=("$tree")
    [[ $config == ibcr-frozen ]] && opts+=(--no-snapshot)
    settle
    freeze_stall || { fail "freeze: $name: no stall answer"; return 1; }
    "$BIN/benchexec" -o "$res" -- "$IBCR/saver" "${opts[@]}" -o "$WORK/freeze.ckpt" "$FZ_PID" 2>"$err"
    res_kv "$res"
    [[ ${KV[status]:-} == 0 ]] || { fail "freeze: $name: saver exited ${KV[status]:-?}: $(tail -n 2 "$err")"; return 1; }
    local ckpt=${KV[wall_ms]}
    rm -f "$WORK/freeze.ckpt"
    while IFS='' read -r l; do [[ $l == ibcr-stats:* ]] && stats=$l; done <"$err"
    parse_kv "$stats"
    local fr=${KV[freeze_ms]} se=${KV[seize_ms]} ca=${KV[capture_ms]} sn=${KV[snapshot_ms]}
    nap 0.3
    freeze_stall || { fail "freeze: $name: no stall answer"; return 1; }
    printf '%s\n' "host,$name,$config,$rep,$fr,$FZ_STALL,$se,$ca,$sn,$ckpt" >>"$FREEZE_RAW"
    say "    $config #$rep: freeze $fr ms (app stall $FZ_STALL; seize $se, capture $ca, snapshot $sn), checkpoint $ckpt ms"
}

# freeze_part REPS
freeze_part() {
    local reps=$1 item name tree prog args r
    echo "$FREEZE_RAW_HEADER" >"$FREEZE_RAW"
    for item in "${FREEZE_PLAN[@]}"; do
        IFS='|' read -r name tree prog args <<<"$item"
        say "== host freeze $name ($prog $args)"
        # shellcheck disable=SC2086  # the program's arguments, split on purpose
        freeze_start "$prog" $args || return 1
        for ((r = 1; r <= reps; r++)); do
            freeze_rep "$name" ibcr "$r" "$tree" || break
            freeze_rep "$name" ibcr-frozen "$r" "$tree" || break
        done
        kill -TERM "$FZ_PID" 2>/dev/null
        wait_gone "$FZ_PID" || kill -9 "$FZ_PID" 2>/dev/null
    done
}
