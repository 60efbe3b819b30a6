#!/bin/bash
# bench/verbs-guest.sh OUTDIR ROUNDS LAT_ITERS BW_ITERS CKPTS RESTARTS: the
# verbs part of `make bench`, run by bench/run.sh inside the x86 guest with
# Soft-RoCE (tools/vm/x86-vm.sh: Debian's kernel under qemu TCG, rxe0 on a
# dummy netdev). docs/benchmarks.md explains the method.
#
#  1. the shim's runtime overhead: ib_send_lat (t_typical) and ib_write_bw
#     (BW average) over rxe0, plain and under build/ibcr-launch, ROUNDS
#     rounds, the two orders alternating (plain first in odd rounds, shim
#     first in even ones), LAT_ITERS / BW_ITERS iterations per run, server
#     on vCPU 0 and client on vCPU 1;
#  (3., 4.: the MPI part, bench/verbs-mpi.sh)
#  2. checkpoint and restart of the verbs job: rc_pp (tests/verbs/rc_pp.c,
#     a server and a client over one RC connection, every iteration
#     verified) under ibcr-launch. One pair is checkpointed CKPTS times
#     while it runs on (and must go on each time); another one is
#     checkpointed with --kill and restarted from the image RESTARTS times
#     (the restored pair is the one checkpointed next), and must finish all
#     its iterations, every one verified.
#
# Rows "part,config,rep,metric,value" go to OUTDIR/raw-verbs.csv, what was
# measured on to OUTDIR/verbs-guest.txt, the number of failures to
# OUTDIR/failures. Exit status 0, or 1 when anything failed ("bench: FAIL:").
set -u
# IBCR_BENCH_TRACE=1: trace every step with a timestamp (where the time goes).
[[ -n ${IBCR_BENCH_TRACE:-} ]] && { PS4='+ $EPOCHREALTIME '; set -x; }
OUT=$1
ROUNDS=$2
LAT_N=$3
BW_N=$4
CKPTS=$5
RESTARTS=$6
# rc_pp with --kill: the k-th checkpoint once the client has verified
# k x RC_STEP iterations (the pair runs on for another 100-200 while the
# saver starts and the verbs quiesce takes hold), RC_TAIL more after the
# last restart. The pair checkpointed while it runs
# on goes on for an unknown number of iterations (the saver's time) and is
# killed after its last check.
RC_STEP=300
RC_TAIL=500
RC_N=$((RESTARTS * RC_STEP + RC_TAIL))
RC_LIVE_N=1000000
HERE=$(cd "$(dirname "$0")" && pwd -P)
TOP=$(dirname "$HERE")
BIN=$TOP/build/bench
IBCR=$TOP/build
L=$IBCR/ibcr-launch
T=$IBCR/tests/verbs
# The guest's /tmp: the overlay's tmpfs (guest RAM), not the host.
WORK=$(mktemp -d /tmp/ibcr-vbench.XXXXXX) || exit 1
RAW=$OUT/raw-verbs.csv
WHERE=verbs
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
WAIT_S=120   # longest wait for one line: everything here takes seconds
echo "part,config,rep,metric,value" >"$RAW"
NCPU=$(nproc)

{
    echo "kernel: $(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo) (qemu TCG: emulated)"
    echo "device: $(cd /sys/class/infiniband 2>/dev/null && echo *) (Soft-RoCE, rdma_rxe on a dummy netdev; client and server in the same guest)"
    echo "perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
    echo "perftest runs: $ROUNDS rounds, ib_send_lat -x 1 -n $LAT_N, ib_write_bw -x 1 -n $BW_N (server on vCPU 0, client on vCPU 1)"
    echo "rc_pp jobs (4096 bytes per iteration): $CKPTS checkpoints running on; $RESTARTS checkpoints with --kill, each restarted, $RC_N iterations"
    echo "MPI: Open MPI $(dpkg-query -W -f='${Version}' openmpi-bin 2>/dev/null) over UCX $(dpkg-query -W -f='${Version}' libucx0 2>/dev/null) rc_verbs/ud_verbs; mpipp 2 ranks (2000 ping-pongs of 8 bytes, 64 x 1 MiB); mpiring 4 ranks checkpointed with --tree --kill and restarted twice"
} >"$OUT/verbs-guest.txt"

csv() { printf '%s\n' "$1,$2,$3,$4,$5" >>"$RAW"; }   # csv PART CONFIG REP METRIC VALUE

# listening PORT: a TCP socket listens on PORT (from /proc/net/tcp{,6}:
# no fork; the perftest server listens on one of the two families).
listening() {
    local hex local_ st f
    printf -v hex ':%04X' "$1"
    for f in /proc/net/tcp /proc/net/tcp6; do
        [[ -r $f ]] || continue
        # "sl local_address rem_address st ...", state 0A: LISTEN
        while read -r _ local_ _ st _; do
            [[ $local_ == *"$hex" && $st == 0A ]] && return 0
        done <"$f"
    done
    return 1
}

# ---- 1. perftest, plain and under the shim ---------------------------------
PORT=18800
# perf TOOL CONFIG ARGS...: one server + client run of a perftest tool
# (CONFIG plain | shim); sets PERF (the client's result line as words).
perf() {
    local tool=$1 config=$2 launch=() pin_s=() pin_c=() sp crc=0 src=0 l i
    shift 2
    [[ $config == shim ]] && launch=("$L")
    # Server and client on vCPUs of their own: two busy-polling processes
    # sharing one vCPU take turns by time slices (~1 ms round trips).
    if ((NCPU >= 2)); then
        pin_s=(taskset -c 0)
        pin_c=(taskset -c 1)
    fi
    PORT=$((PORT + 1))   # a fresh port per run: no TIME_WAIT of the last one
    PERF=()
    timeout 120 ${pin_s[@]+"${pin_s[@]}"} ${launch[@]+"${launch[@]}"} "$tool" -p "$PORT" "$@" \
        </dev/null >"$WORK/ps.out" 2>&1 &
    sp=$!
    # the client does not retry: it may only start once the server listens
    for ((i = 0; i < 1200; i++)); do
        listening "$PORT" && break
        kill -0 "$sp" 2>/dev/null || break
        nap 0.05
    done
    if ! listening "$PORT"; then
        kill "$sp" 2>/dev/null
        wait "$sp"
        fail "$tool ($config): the server did not listen: $(tail -n 3 "$WORK/ps.out")"
        return 1
    fi
    timeout 120 ${pin_c[@]+"${pin_c[@]}"} ${launch[@]+"${launch[@]}"} "$tool" -p "$PORT" "$@" 127.0.0.1 \
        </dev/null >"$WORK/pc.out" 2>&1 || crc=$?
    wait "$sp" || src=$?
    if ((crc || src)); then
        fail "$tool ($config): exit status client $crc, server $src: $(tail -n 3 "$WORK/pc.out")"
        return 1
    fi
    # the result line: "#bytes #iterations ..." (numbers only)
    while IFS='' read -r l; do
        [[ $l =~ ^\ *[0-9]+\ +[0-9]+\  ]] && read -r -a PERF <<<"$l"
    done <"$WORK/pc.out"
    ((${#PERF[@]} >= 5)) || { fail "$tool ($config): no result line: $(tail -n 3 "$WORK/pc.out")"; return 1; }
}

# measure TOOL CONFIG FIELD ARGS...: perf; sets VALUE to field FIELD (from 0)
# of the result line. Run again (twice at most) when that is no number:
# perftest now and then prints "inf" for every time in the guest (its
# cycles-to-time conversion went wrong); such a run is not a measurement.
measure() {
    local tool=$1 config=$2 field=$3 try
    shift 3
    for try in 1 2 3; do
        perf "$tool" "$config" "$@" || return 1
        VALUE=${PERF[$field]}
        [[ $VALUE =~ ^[0-9]+(\.[0-9]+)?$ ]] && return 0
        say "  $tool ($config): result '$VALUE' is no number (try $try of 3): $(tail -n 2 "$WORK/pc.out")"
    done
    fail "$tool ($config): no numeric result in 3 runs"
}

perftest_part() {
    local r c order lat bw line t0
    say "== verbs: ib_send_lat -n $LAT_N and ib_write_bw -n $BW_N, plain and under ibcr-launch, $ROUNDS rounds"
    for ((r = 1; r <= ROUNDS; r++)); do
        # Alternating orders: a drift of the (shared, emulated) machine
        # during a round does not always favour the same side.
        ((r % 2)) && order='plain shim' || order='shim plain'
        line="  round $r:"
        now_ms; t0=$NOW_MS
        for c in $order; do
            # t_typical: field 5 of "#bytes #iterations t_min t_max t_typical ..."
            measure ib_send_lat "$c" 4 -x 1 -n "$LAT_N" || return 1
            lat=$VALUE
            # BW average [MB/sec]: field 4 of "#bytes #iterations BW_peak BW_average ..."
            measure ib_write_bw "$c" 3 -x 1 -n "$BW_N" || return 1
            bw=$VALUE
            csv send_lat "$c" "$r" t_typical_us "$lat"
            csv write_bw "$c" "$r" bw_avg_mb_s "$bw"
            line+=" $c: send_lat $lat us, write_bw $bw MB/s;"
        done
        now_ms
        say "${line%;} [$(((NOW_MS - t0) / 1000)) s]"
    done
}

# ---- 2. the rc_pp job: checkpoint and restart -------------------------------
D=''
SPID='' CPID=''
# The rc_pp logs get a line per iteration (-p 1), stamped with the
# iteration's end (-T: " t_ns=", CLOCK_REALTIME). They are followed from
# where the last look ended (an fd per log kept open), a chunk at a time
# (mapfile), and only the lines that matter are looked at: bash in TCG
# needs about a millisecond per line for more, while the pair writes one
# every 2-3 ms and the harness would lag behind it by whole seconds.
declare -A FOLLOW_FD=() LAST_IT=() LAST_T=() MAXGAP=() WATCH=() WATCH_T=() PART=()
FAILED=0 GAPS=0
# follow ROLE: reads what $D/ROLE.out gained. LAST_IT[ROLE], LAST_T[ROLE]:
# the last iteration it verified (0: none yet) and when it ended. With
# GAPS=1, MAXGAP[ROLE]: the longest time between two iterations since
# reset_gaps; with WATCH[ROLE]=1, WATCH_T[ROLE]: when the first iteration
# read from then on ended. FAILED=1 on a line with FAIL.
follow() {
    local role=$1 l n t i
    local -a new
    [[ -n ${FOLLOW_FD[$role]:-} ]] || { exec {n}<"$D/$role.out" && FOLLOW_FD[$role]=$n; } || return 1
    mapfile -u "${FOLLOW_FD[$role]}" new
    ((${#new[@]})) || return 0
    new[0]=${PART[$role]:-}${new[0]}
    PART[$role]=''
    if [[ ${new[-1]} != *$'\n' ]]; then   # unfinished: read on from there
        PART[$role]=${new[-1]}
        unset 'new[-1]'
        ((${#new[@]})) || return 0
    fi
    if [[ ${new[*]} == *FAIL* ]]; then
        FAILED=1
        say "  rc_pp $role: $(printf '%s' "${new[@]}" | grep -m1 FAIL)"
    fi
    if ((GAPS)) || [[ -n ${WATCH[$role]:-} ]]; then
        for l in "${new[@]}"; do
            [[ $l == "$role iter "*" t_ns="* ]] || continue
            t=${l##* t_ns=}
            t=${t%$'\n'}
            if [[ -n ${WATCH[$role]:-} ]]; then
                WATCH_T[$role]=$t
                WATCH[$role]=''
            fi
            if [[ -n ${LAST_T[$role]:-} ]] && ((t - LAST_T[$role] > ${MAXGAP[$role]:-0})); then
                MAXGAP[$role]=$((t - LAST_T[$role]))
            fi
            LAST_T[$role]=$t
            ((GAPS)) || break
        done
    fi
    # the last iteration: the last line but for the summary at the end
    for ((i = ${#new[@]} - 1; i >= 0; i--)); do
        l=${new[i]}
        [[ $l == "$role iter "* ]] || continue
        n=${l#"$role iter "}
        LAST_IT[$role]=${n%% *}
        t=${l##* t_ns=}
        LAST_T[$role]=${t%$'\n'}
        break
    done
}
unfollow() {
    local role fd
    for role in "${!FOLLOW_FD[@]}"; do
        fd=${FOLLOW_FD[$role]}
        exec {fd}<&-
    done
    FOLLOW_FD=() LAST_IT=([server]=0 [client]=0) LAST_T=() MAXGAP=() WATCH=() WATCH_T=() PART=()
    FAILED=0 GAPS=0
}
reset_gaps() { MAXGAP=([server]=0 [client]=0); }
# wait_iter ROLE N: until ROLE has verified iteration N (WAIT_S at most).
wait_iter() {
    local role=$1 deadline=$((EPOCHSECONDS + WAIT_S))
    while follow "$role" && ((LAST_IT[$role] < $2 && !FAILED)); do
        ((EPOCHSECONDS > deadline)) && break
        nap 0.01
    done
    ((LAST_IT[$role] >= $2))
}

# progress WHAT: both processes verify at least one more iteration.
progress() {
    local role
    for role in server client; do
        follow "$role"
        wait_iter "$role" $((LAST_IT[$role] + 1)) ||
            { fail "rc_pp: the $role verified no iteration $1"; return 1; }
    done
}

# saver_run CONFIG REP [saver options]: one checkpoint of both processes
# into $D/job.ckpt; rows for CONFIG/REP.
saver_run() {
    local config=$1 rep=$2 stats='' l
    shift 2
    rm -f "$D/job.ckpt"
    timeout 120 "$BIN/benchexec" -o "$D/saver.res" -- "$IBCR/saver" --stats "$@" -o "$D/job.ckpt" \
        "$SPID" "$CPID" 2>"$D/saver.err"
    res_kv "$D/saver.res"
    if [[ ${KV[status]:-} != 0 ]]; then
        fail "rc_pp: saver $* exited ${KV[status]:-?}: $(tail -n 3 "$D/saver.err")"
        return 1
    fi
    csv rc_pp "$config" "$rep" ckpt_wall_ms "${KV[wall_ms]}"
    csv rc_pp "$config" "$rep" saver_rss_kb "${KV[maxrss_kb]}"
    l=${KV[wall_ms]}
    while IFS='' read -r stats; do [[ $stats == ibcr-stats:* ]] && break; done <"$D/saver.err"
    [[ $stats == ibcr-stats:* ]] || { fail "rc_pp: no ibcr-stats line from the saver"; return 1; }
    parse_kv "$stats"
    csv rc_pp "$config" "$rep" freeze_ms "${KV[freeze_ms]}"
    csv rc_pp "$config" "$rep" ckpt_ms "${KV[total_ms]}"
    csv rc_pp "$config" "$rep" image_bytes "${KV[image_bytes]}"
    say "    checkpoint $config #$rep: freeze ${KV[freeze_ms]} ms, saver ${KV[total_ms]} ms (wall $l ms), image $((KV[image_bytes] >> 10)) KiB"
}

# rc_start N: an rc_pp pair of N iterations in $D (made anew); sets SPID CPID.
rc_start() {
    local role
    rm -rf "$D"
    mkdir -p "$D"
    : >"$D/server.out"   # waited on before the subshells open them
    : >"$D/client.out"
    for role in server client; do
        # benchexec -n: only fds 0-2 (this shell's FIFO and line readers
        # would be in the image otherwise). -p 1 -T: a line per iteration
        # with its time; -w 1000: a pause of 1 ms per iteration, as the
        # checks do.
        (cd "$D" && exec timeout 600 "$BIN/benchexec" -n -- "$L" "$T/rc_pp" -r "$role" -d "$D" \
            -n "$1" -p 1 -w 1000 -T </dev/null >"$D/$role.out" 2>&1) &
        # its end (killed by the saver) is no news worth a line from bash
        disown
    done
    unfollow
    wait_iter client 50 && wait_iter server 50 || { fail "rc_pp did not get going"; return 1; }
    read_file "$D/server.pid"; SPID=$READ
    read_file "$D/client.pid"; CPID=$READ
}

# rc_logs: the ends of the job's logs (after a failure).
rc_logs() {
    local f
    for f in server.out client.out saver.err loader.err; do
        [[ -s $D/$f ]] || continue
        say "---- $f"
        tail -n 5 "$D/$f" | sed 's/^/    /' >&2
    done
}

# restart K: restart-loader of $D/job.ckpt; both processes must verify an
# iteration again. Rows restore_ms (the loader's own), running_ms (from
# just before the loader starts until the later of the two ended its first
# iteration after the restore: the shim has rebuilt the connection, met
# the peer, and the iteration's data is verified).
restart() {
    local k=$1 ns nc stamp l t
    follow server && follow client || return 1
    ns=${LAST_IT[server]} nc=${LAST_IT[client]}
    WATCH=([server]=1 [client]=1) WATCH_T=()
    rm -f "$D/stamp" "$D/loader.res"
    timeout 300 "$BIN/benchexec" -s "$D/stamp" -o "$D/loader.res" -- \
        "$IBCR/restart-loader" --stats "$D/job.ckpt" </dev/null >"$D/loader.out" 2>"$D/loader.err" &
    LOADER_PID=$!
    wait_iter server $((ns + 1)) && wait_iter client $((nc + 1)) ||
        { fail "rc_pp: the restored pair did not run"; return 1; }
    # until the later of the two first iterations after the restore ended
    read_file "$D/stamp"; stamp=$READ
    t=${WATCH_T[server]:-}
    [[ -n ${WATCH_T[client]:-} && ${WATCH_T[client]} -gt ${t:-0} ]] && t=${WATCH_T[client]}
    [[ -n $t ]] || { fail "rc_pp: no t_ns= on its lines"; return 1; }
    dec $(((t - stamp) / 100000))
    wait_line "$D/loader.err" 0 '^ibcr-stats:' || { fail "rc_pp: no ibcr-stats line from the restart-loader"; return 1; }
    parse_kv "$LINE"
    csv rc_pp restart "$k" restore_ms "${KV[restore_ms]}"
    csv rc_pp restart "$k" running_ms "$DEC"
    csv rc_pp restart "$k" loader_rss_kb "${KV[peak_rss_kb]}"
    # The application's QPN and rkey stay, the real ones are new.
    l=$(grep -m1 "^client iter $((nc + 1)) ok" "$D/client.out")
    say "    restart #$k: restart-loader restore ${KV[restore_ms]} ms, both running after $DEC ms; client: ${l#client iter * ok }"
    read_file "$D/server.pid"; SPID=$READ
    read_file "$D/client.pid"; CPID=$READ
}

rc_part() {
    local k gap it0 t0
    say "== verbs: rc_pp, $CKPTS checkpoints running on"
    D=$WORK/rc-live
    rc_start "$RC_LIVE_N" || return 1
    # the pair's pace without checkpoints: 50 iterations
    it0=${LAST_IT[client]} t0=${LAST_T[client]}
    wait_iter client $((it0 + 50)) || { fail "rc_pp: the client stopped"; return 1; }
    dec $(((LAST_T[client] - t0) / (LAST_IT[client] - it0) / 100000))
    csv rc_pp live 0 iter_ms "$DEC"
    say "    one iteration: $DEC ms"
    for ((k = 1; k <= CKPTS; k++)); do
        follow server && follow client || return 1
        reset_gaps
        GAPS=1
        saver_run live "$k" || return 1
        # The pair that ran on must go on (the saver let it go).
        progress "after a checkpoint it ran on from" || return 1
        GAPS=0
        # What the application felt: the longest time between two of its
        # iterations across the checkpoint (the verbs quiesce, before the
        # saver's freeze_ms starts, included), one iteration included.
        gap=${MAXGAP[server]}
        ((MAXGAP[client] > gap)) && gap=${MAXGAP[client]}
        dec $((gap / 100000))
        csv rc_pp live "$k" stall_ms "$DEC"
        say "      the pair ran on; longest time between two iterations: $DEC ms"
    done
    kill -9 "$SPID" "$CPID"
    unfollow
    wait_gone "$SPID" && wait_gone "$CPID" || { fail "rc_pp: pids $SPID $CPID do not go"; return 1; }

    say "== verbs: rc_pp, $RESTARTS x (checkpoint --kill, restart-loader), $RC_N iterations"
    D=$WORK/rc-kill
    rc_start "$RC_N" || return 1
    for ((k = 1; k <= RESTARTS; k++)); do
        # the same point of the job in every run of the bench
        wait_iter client $((k * RC_STEP)) ||
            { fail "rc_pp: the client did not get to iteration $((k * RC_STEP))"; return 1; }
        saver_run kill "$k" --kill || return 1
        wait_gone "$SPID" && wait_gone "$CPID" ||
            { fail "rc_pp: pids $SPID $CPID still there after saver --kill"; return 1; }
        # the restart-loader of the last restart goes with the pair it restored
        [[ -n $LOADER_PID ]] && wait "$LOADER_PID"
        follow client
        if ((LAST_IT[client] >= RC_N)); then
            fail "rc_pp finished before the checkpoint (RC_TAIL too small)"
            return 1
        fi
        say "    (killed at client iteration ${LAST_IT[client]} of $RC_N)"
        restart "$k" || return 1
    done
    # The restored pair finishes, every iteration verified, and so does
    # its restart-loader.
    wait "$LOADER_PID"
    LOADER_PID=''
    res_kv "$D/loader.res"
    [[ ${KV[status]:-} == 0 ]] || { fail "rc_pp: the restart-loader exited ${KV[status]:-?}"; return 1; }
    grep -q "^rc_pp server: $RC_N iterations verified" "$D/server.out" &&
        grep -q "^rc_pp client: $RC_N iterations verified" "$D/client.out" ||
        { fail "rc_pp: NOT EVERY ITERATION VERIFIED after the restart"; return 1; }
    unfollow
    csv rc_pp restart all verified "$RC_N"
    say "    the restored pair finished: $RC_N iterations verified by both"
}

# shellcheck source=bench/verbs-mpi.sh
. "$HERE/verbs-mpi.sh"
LOADER_PID=''
now_ms; t0=$NOW_MS
perftest_part
now_ms; t1=$NOW_MS
((FAILURES)) || rc_part || rc_logs
now_ms; t2=$NOW_MS
[[ -n $LOADER_PID ]] && { kill "$LOADER_PID" 2>/dev/null; wait "$LOADER_PID"; }
((FAILURES)) || { mpipp_part && mpi_job_part; } || rc_logs
now_ms
echo "in the guest: perftest $(((t1 - t0) / 1000)) s, rc_pp job $(((t2 - t1) / 1000)) s, MPI $(((NOW_MS - t2) / 1000)) s" >>"$OUT/verbs-guest.txt"
say "  verbs: perftest $(((t1 - t0) / 1000)) s, rc_pp job $(((t2 - t1) / 1000)) s, MPI $(((NOW_MS - t2) / 1000)) s, $FAILURES failures"
echo "$FAILURES" >"$OUT/failures"
rm -rf "$WORK"
((FAILURES == 0))
