# shellcheck shell=bash
# bench/lib.sh: the measuring steps of `make bench`, sourced by bench/run.sh
# on the host and by bench/guest.sh inside the 6.1 guest.
#
# The caller sets:
#   BIN    directory with workload, baseline, benchexec (build/bench)
#   IBCR   directory with saver and restart-loader (build)
#   WORK   directory for images, logs and baseline files (all on the same
#          file system: "the same directory")
#   RAW    CSV file the rows are appended to
#   WHERE  host | guest
#
# One workload process lives through a chain of repetitions: it is
# checkpointed (it runs on), killed, restored, verified, and the restored
# process is the one checkpointed in the next repetition. Every restore is
# verified: the workload's checksum after the restore must be the one it
# printed when it first touched its memory, else the whole run fails.

RAW_HEADER=where,workload,config,rep,freeze_ms,stall_ms,ckpt_ms,capture_ms,write_ms,running_ms,restore_stat_ms,whole_ms,image_bytes,page_bytes,direct_bytes,touched_bytes,mapped_bytes,threads,saver_rss_kb,loader_rss_kb,verify_warm_ms,verify_after_ms,restored_rss_kb,base_write_ms,base_popfill_ms,base_pread_ms,verified

FAILURES=0
WAIT_S=${IBCR_BENCH_WAIT_S:-300}   # longest wait for one workload line
# How often the log is looked at while a restore runs. Every time measured
# comes from timestamps (the workload's, benchexec's), not from when the
# harness notices a line, so polling less often loses nothing; polling
# costs CPU the measured restore may want: in the TCG guest, every 10 ms
# took 8% of a CPU, which ibcr's fill (on both CPUs) lost and CRIU's (on
# one) did not. Other waits (answers to signals) poll every 10 ms.
POLL_S=${IBCR_BENCH_POLL_S:-0.1}

# The harness forks as little as it can: in the TCG guest every fork+exec
# costs a few hundred milliseconds. Helpers set variables instead of
# printing, sleeping is a read with a timeout on a FIFO nobody writes.
say() { printf '%s\n' "$*" >&2; }
fail() {
    say "bench: FAIL: $*"
    FAILURES=$((FAILURES + 1))
    return 1
}

NAP_FD=''
nap() {   # nap SECONDS (fractions allowed), without forking
    if [[ -z $NAP_FD ]]; then
        local fifo=$WORK/.nap
        [[ -p $fifo ]] || mkfifo "$fifo"
        exec {NAP_FD}<>"$fifo"
    fi
    read -r -t "$1" -u "$NAP_FD" _ || true
}

now_ms() { NOW_MS=$(( ${EPOCHREALTIME/./} / 1000 )); }

# parse_kv LINE: KV[key]=value for every key=value word of LINE.
declare -A KV
parse_kv() {
    local w
    KV=()
    for w in $1; do
        [[ $w == *=* ]] && KV[${w%%=*}]=${w#*=}
    done
}

# tenths "39.25" -> 392 (integer tenths of a decimal number; 0 if empty)
tenths() {
    local v=${1:-0} i f
    i=${v%%.*}
    f=0
    [[ $v == *.* ]] && f=${v#*.}
    f=${f:0:1}
    TENTHS=$(( 10#${i:-0} * 10 + 10#${f:-0} ))
}
# dec TENTHS -> "39.2"
dec() { printf -v DEC '%d.%d' $(($1 / 10)) $(($1 % 10)); }

read_file() { READ=; [[ -r $1 ]] && IFS='' read -r READ <"$1"; return 0; }

# wait_line FILE FROM REGEX [POLL]: waits until FILE has, after its first
# FROM lines, a line matching REGEX; sets LINE. Polls every POLL seconds
# (0.01 by default), WAIT_S seconds at most.
wait_line() {
    local file=$1 from=$2 re=$3 poll=${4:-0.01} fd n=0 part='' l
    local deadline=$((EPOCHSECONDS + WAIT_S))
    LINE=''
    # a program started in the background may not have opened it yet
    while [[ ! -e $file ]]; do
        ((EPOCHSECONDS < deadline)) || return 1
        sleep "$poll"
    done
    exec {fd}<"$file" || return 1
    while :; do
        if IFS='' read -r -u "$fd" l; then
            l=$part$l
            part=''
            n=$((n + 1))
            if ((n > from)) && [[ $l =~ $re ]]; then
                LINE=$l
                exec {fd}<&-
                return 0
            fi
            continue
        fi
        part+=$l   # an unfinished last line: read on from there
        if ((EPOCHSECONDS > deadline)); then
            exec {fd}<&-
            say "bench: no line matching '$re' in $file after ${WAIT_S}s; its end:"
            tail -n 5 "$file" >&2
            return 1
        fi
        nap "$poll"
    done
}

# count_lines FILE: sets NLINES.
count_lines() {
    local l
    NLINES=0
    while IFS='' read -r l; do NLINES=$((NLINES + 1)); done <"$1"
}

wait_gone() {
    local pid=$1 deadline=$((EPOCHSECONDS + WAIT_S))
    while kill -0 "$pid" 2>/dev/null; do
        ((EPOCHSECONDS > deadline)) && return 1
        nap 0.02
    done
    return 0
}

# ---- the workload ----------------------------------------------------------
WL_NAME='' WL_PID='' WL_LOG='' WL_SUM='' WL_BYTES='' WL_MAPPED='' WL_THREADS='' WL_VERIFY=''
LOADER_PID='' LOADER_RES=''

# wl_start NAME WORKLOAD-ARGS...
wl_start() {
    WL_NAME=$1
    shift
    WL_LOG=$WORK/$WL_NAME.log
    : >"$WL_LOG"
    rm -f "$WORK/wl.pid"
    # setsid, stdin /dev/null, stdout+stderr a regular file opened O_APPEND:
    # what both ibcr and CRIU restore as it was. benchexec -n closes any
    # other fd the shell holds.
    setsid "$BIN/benchexec" -n -p "$WORK/wl.pid" -- "$BIN/workload" -p 0 "$@" \
        </dev/null >>"$WL_LOG" 2>&1 &
    wait_line "$WL_LOG" 0 '^(ready|FAIL)' || { fail "$WL_NAME: workload did not start"; return 1; }
    [[ $LINE == ready* ]] || { fail "$WL_NAME: $LINE"; return 1; }
    parse_kv "$LINE"
    WL_PID=${KV[pid]} WL_SUM=${KV[sum]} WL_BYTES=${KV[bytes]} WL_MAPPED=${KV[mapped]}
    WL_THREADS=${KV[threads]} WL_VERIFY=${KV[verify_ms]}
    LOADER_PID='' LOADER_RES=''
    say "  $WL_NAME: pid $WL_PID, touched in ${KV[touch_ms]} ms, a warm verification takes $WL_VERIFY ms"
}

# wl_ask SIGNAL REGEX: signal the workload, wait for its answer (LINE, KV).
wl_ask() {
    count_lines "$WL_LOG"
    kill -"$1" "$WL_PID" 2>/dev/null || { fail "$WL_NAME: pid $WL_PID is gone"; return 1; }
    wait_line "$WL_LOG" "$NLINES" "($2).* pid=$WL_PID\$" || return 1
    parse_kv "$LINE"
}

# wl_verify WHAT: USR1, the answer must be OK with the checksum of the
# start. Sets VERIFY_MS, RESTORED_RSS.
wl_verify() {
    wl_ask USR1 '^OK|^FAIL' || { fail "$WL_NAME: no answer to the verification request after $1"; return 1; }
    if [[ $LINE != OK* || ${KV[sum]} != "$WL_SUM" ]]; then
        fail "$WL_NAME: MEMORY MISMATCH after $1: '$LINE', expected sum=$WL_SUM"
        return 1
    fi
    VERIFY_MS=${KV[verify_ms]}
    RESTORED_RSS=${KV[rss_kb]}
}

# wl_stop: SIGTERM; the workload must say "exit status=0" and go; the
# restart-loader that restored it must exit 0 too.
wl_stop() {
    [[ -n $WL_PID ]] || return 0
    if wl_ask TERM '^exit'; then
        [[ ${KV[status]} == 0 ]] || fail "$WL_NAME: workload exit line '$LINE'"
    else
        fail "$WL_NAME: no exit line"
        kill -9 "$WL_PID" 2>/dev/null
    fi
    wait_gone "$WL_PID" || { fail "$WL_NAME: pid $WL_PID does not exit"; kill -9 "$WL_PID" 2>/dev/null; }
    if [[ -n $LOADER_PID ]]; then
        wait "$LOADER_PID" 2>/dev/null
        read_file "$LOADER_RES"
        parse_kv "$READ"
        [[ ${KV[status]:-} == 0 ]] || fail "$WL_NAME: the restart-loader exited with '${KV[status]:-?}'"
    fi
    WL_PID='' LOADER_PID=''
}

# ---- one checkpoint --------------------------------------------------------
# Sets FREEZE STALL CKPT CAPTURE WRITE IMG_BYTES PAGE_BYTES DIRECT_BYTES SAVER_RSS.
reset_stall() { wl_ask USR2 '^stall'; }
read_stall() { wl_ask USR2 '^stall' && STALL=${KV[max_ms]}; }

# res_kv FILE: parse the benchexec result line (KV).
res_kv() { read_file "$1"; parse_kv "$READ"; }

# ckpt_ibcr IMAGE [saver options...]
ckpt_ibcr() {
    local img=$1 res=$WORK/saver.res err=$WORK/saver.err stats='' l
    shift
    rm -f "$img"
    settle
    reset_stall || return 1
    "$BIN/benchexec" -o "$res" -- "$IBCR/saver" --stats "$@" -o "$img" "$WL_PID" 2>"$err"
    res_kv "$res"
    if [[ ${KV[status]:-} != 0 ]]; then
        fail "$WL_NAME: saver $* exited ${KV[status]:-?}: $(tail -n 3 "$err")"
        return 1
    fi
    CKPT=${KV[wall_ms]} SAVER_RSS=${KV[maxrss_kb]}
    while IFS='' read -r l; do [[ $l == ibcr-stats:* ]] && stats=$l; done <"$err"
    parse_kv "$stats"
    FREEZE=${KV[freeze_ms]:-} CAPTURE=${KV[capture_ms]:-} WRITE=${KV[write_ms]:-}
    PAGE_BYTES=${KV[page_bytes]:-} IMG_BYTES=${KV[image_bytes]:-}
    DIRECT_BYTES=${KV[direct_bytes]:-}
    [[ -n $IMG_BYTES ]] || IMG_BYTES=$(stat -c %s "$img")
    read_stall || return 1
    [[ -n $FREEZE ]] || FREEZE=$STALL   # a saver without --stats
    # The live process must be intact too (the saver wrote from a snapshot).
    wl_verify "checkpoint (the process that ran on)"
}

# ckpt_criu DIR: criu dump --leave-running (the counterpart of the saver
# without --kill). The freeze is what the workload saw (CRIU keeps the
# tasks frozen while it dumps and writes the pages).
ckpt_criu() {
    local dir=$1 res=$WORK/criu-dump.res sizes f sz
    rm -rf "$dir"
    settle
    mkdir -p "$dir"
    reset_stall || return 1
    # --shell-job: the session leader may be outside the dump (a process
    # that ibcr restored is in the restart-loader's session).
    "$BIN/benchexec" -o "$res" -- criu dump -t "$WL_PID" -D "$dir" --leave-running \
        --shell-job -o dump.log 2>/dev/null
    res_kv "$res"
    if [[ ${KV[status]:-} != 0 ]]; then
        fail "$WL_NAME: criu dump exited ${KV[status]:-?}: $(grep -m3 Error "$dir/dump.log")"
        return 1
    fi
    CKPT=${KV[wall_ms]} SAVER_RSS=${KV[maxrss_kb]}
    CAPTURE='' WRITE=''
    IMG_BYTES=0 PAGE_BYTES=0 DIRECT_BYTES=''
    sizes=$(stat -c '%n %s' "$dir"/*.img)
    while read -r f sz; do
        IMG_BYTES=$((IMG_BYTES + sz))
        [[ ${f##*/} == pages-* ]] && PAGE_BYTES=$((PAGE_BYTES + sz))
    done <<<"$sizes"
    read_stall || return 1
    FREEZE=$STALL
    wl_verify "criu dump (the process that ran on)"
}

# ---- one restore -----------------------------------------------------------
# Kills the checkpointed process, restores, waits until the program runs,
# verifies. Sets RUNNING RESTORE_STAT WHOLE LOADER_RSS VERIFY_MS.
# restore_with KIND IMAGE-OR-DIR   (KIND: ibcr | criu)
restore_with() {
    local kind=$1 img=$2 l i err=$WORK/loader.err stamp
    wl_stop || return 1
    count_lines "$WL_LOG"
    local n=$NLINES
    LOADER_RES=$WORK/loader.res
    rm -f "$LOADER_RES" "$WORK/loader.pid" "$WORK/stamp" "$WORK/criu.pid"
    if [[ $kind == ibcr ]]; then
        "$BIN/benchexec" -s "$WORK/stamp" -p "$WORK/loader.pid" -o "$LOADER_RES" -- \
            "$IBCR/restart-loader" --stats "$img" 2>"$err" &
    else
        "$BIN/benchexec" -s "$WORK/stamp" -o "$LOADER_RES" -- \
            criu restore -d --shell-job -D "$img" -o restore.log \
            --pidfile "$WORK/criu.pid" 2>"$err" &
    fi
    LOADER_PID=$!
    # criu restore -d returns once the program runs: a failed one says so
    # now, not after wait_line's long timeout
    if [[ $kind == criu ]]; then
        for ((i = 0; i < 3000; i++)); do
            [[ -s $LOADER_RES ]] && break
            nap 0.1
        done
        if [[ ! -s $LOADER_RES ]]; then
            fail "$WL_NAME: criu restore did not end within 300 s"
            kill "$LOADER_PID" 2>/dev/null
            LOADER_PID=''
            return 1
        fi
        wait "$LOADER_PID"
        LOADER_PID=''
        res_kv "$LOADER_RES"
        if [[ ${KV[status]:-} != 0 ]]; then
            fail "$WL_NAME: criu restore exited ${KV[status]:-?}: $(grep -m3 Error "$img/restore.log")"
            return 1
        fi
        LOADER_RSS=${KV[maxrss_kb]}
    fi
    # The restored program's first heartbeat, after its long gap.
    if ! wait_line "$WL_LOG" "$n" '^gap ' "$POLL_S"; then
        [[ $kind == criu ]] && criu_evidence "$img"
        fail "$WL_NAME: the restored program never ran ($kind): $(tail -n 3 "$err")"
        kill "$LOADER_PID" 2>/dev/null
        LOADER_PID=''
        return 1
    fi
    parse_kv "$LINE"
    WL_PID=${KV[pid]}
    local end=${KV[end_rt_ns]}
    read_file "$WORK/stamp"
    stamp=$READ
    dec $(((end - stamp) / 100000))
    RUNNING=$DEC
    RESTORE_STAT=''
    if [[ $kind == ibcr ]]; then
        # VmHWM of the loader itself (the program, its child, is not counted).
        read_file "$WORK/loader.pid"
        while read -r l i _; do
            [[ $l == VmHWM: ]] && LOADER_RSS=$i
        done <"/proc/$READ/status"
        for ((i = 0; i < 300; i++)); do
            l=''
            while IFS='' read -r l; do [[ $l == ibcr-stats:* ]] && break; l=; done <"$err"
            [[ -n $l ]] && break
            nap 0.01
        done
        parse_kv "$l"
        RESTORE_STAT=${KV[restore_ms]:-}
        [[ -n $LOADER_RSS ]] || LOADER_RSS=${KV[peak_rss_kb]:-}
    fi
    wl_verify "restore ($kind)" || return 1
    # Whole restore: until the program runs, plus what its first full pass
    # over its memory cost beyond a warm pass (memory a lazy restore had
    # not filled yet); nothing extra when all was in place.
    local r a w x
    tenths "$RUNNING"; r=$TENTHS
    tenths "$VERIFY_MS"; a=$TENTHS
    tenths "$WL_VERIFY"; w=$TENTHS
    x=$((a - w))
    ((x < 0)) && x=0
    dec $((r + x))
    WHOLE=$DEC
}

# criu_evidence IMG: what a CRIU restore that returned 0 left, when its
# program never runs: the end of its log, the restored process's state
# (it happened twice; see docs/benchmarks.md, CRIU).
criu_evidence() {
    local pid=''
    say "bench: criu restore.log ends:"
    tail -n 8 "$1/restore.log" >&2
    read_file "$WORK/criu.pid"
    pid=$READ
    [[ -n $pid && -r /proc/$pid/status ]] || { say "bench: restored pid ${pid:-?} is gone"; return; }
    say "bench: restored pid $pid: $(grep -E '^(State|SigPnd|ShdPnd|SigBlk)' "/proc/$pid/status" | tr '\n\t' '  ')wchan $(cat "/proc/$pid/wchan" 2>/dev/null)"
}

# settle: what deleting a file left to do is done before the next timed
# write. The build machine's root file system is mounted with `discard`:
# a deleted file's blocks are trimmed at the next journal commit, and a
# gigabyte of trim slows whatever writes next. syncfs waits for it.
settle() { sync -f "$WORK" 2>/dev/null || sync; }

# ---- baselines -------------------------------------------------------------
# This VM gives memory the guest freed back to its host (free page
# reporting; DAMON pages cold page cache out), and memory given back is
# several times slower on its next first touch: a write lands on fast or
# slow memory by chance of history. So the write baseline runs just before
# the checkpoint it is compared with and its file is deleted at once: the
# image then goes into the memory the baseline just left, as the baseline
# went into what the last image left.
# base_write BYTES: sets BASE_WRITE.
base_write() {
    local f=$WORK/baseline.dat
    "$BIN/baseline" write "$f" "$1" >"$WORK/baseline.out" || { fail "baseline write"; return 1; }
    res_kv "$WORK/baseline.out"
    BASE_WRITE=${KV[write_ms]}
    rm -f "$f"
    settle
}

# base_fill FILE BYTES: from the image just restored (in the page cache);
# sets BASE_POPFILL BASE_PREAD.
base_fill() {
    "$BIN/baseline" fill "$1" "$2" >"$WORK/baseline.out" || { fail "baseline fill"; return 1; }
    res_kv "$WORK/baseline.out"
    BASE_POPFILL=${KV[populate_pread_ms]} BASE_PREAD=${KV[pread_ms]}
}

# ---- rows --------------------------------------------------------------
row() {   # row CONFIG REP
    printf '%s\n' "$WHERE,$WL_NAME,$1,$2,$FREEZE,$STALL,$CKPT,$CAPTURE,$WRITE,$RUNNING,$RESTORE_STAT,$WHOLE,$IMG_BYTES,$PAGE_BYTES,$DIRECT_BYTES,$WL_BYTES,$WL_MAPPED,$WL_THREADS,$SAVER_RSS,$LOADER_RSS,$WL_VERIFY,$VERIFY_MS,$RESTORED_RSS,$BASE_WRITE,$BASE_POPFILL,$BASE_PREAD,yes" >>"$RAW"
}

clear_vars() {
    FREEZE='' STALL='' CKPT='' CAPTURE='' WRITE='' RUNNING='' RESTORE_STAT='' WHOLE='' IMG_BYTES='' PAGE_BYTES='' DIRECT_BYTES=''
    SAVER_RSS='' LOADER_RSS='' VERIFY_MS='' RESTORED_RSS='' BASE_WRITE='' BASE_POPFILL='' BASE_PREAD=''
}

# one_rep CONFIG REP WITH_BASELINES: checkpoint, kill, restore, verify,
# (baselines), one row. CONFIG: ibcr | ibcr-zstd | ibcr-zlib | criu
one_rep() {
    local config=$1 rep=$2 base=$3 t0
    now_ms; t0=$NOW_MS
    clear_vars
    if ((base)); then
        settle
        base_write "$WL_BYTES" || return 1
    fi
    case $config in
        ibcr) ckpt_ibcr "$WORK/bench.ckpt" && restore_with ibcr "$WORK/bench.ckpt" ;;
        ibcr-zstd) ckpt_ibcr "$WORK/bench.ckpt" --compress=zstd && restore_with ibcr "$WORK/bench.ckpt" ;;
        ibcr-zlib) ckpt_ibcr "$WORK/bench.ckpt" --compress=zlib && restore_with ibcr "$WORK/bench.ckpt" ;;
        criu) ckpt_criu "$WORK/criu.img" && restore_with criu "$WORK/criu.img" ;;
        *) fail "unknown configuration $config" ;;
    esac || return 1
    if ((base)); then
        base_fill "$WORK/bench.ckpt" "$WL_BYTES" || return 1
    fi
    if [[ $config == criu ]]; then rm -rf "$WORK/criu.img"; else rm -f "$WORK/bench.ckpt"; fi
    row "$config" "$rep"
    now_ms
    say "    $config #$rep: freeze $FREEZE ms (app stall $STALL), checkpoint $CKPT ms, running after $RUNNING ms, image $((IMG_BYTES >> 20)) MiB${BASE_WRITE:+, baselines: write $BASE_WRITE, fill $BASE_POPFILL ms} [$((NOW_MS - t0)) ms]"
}

# bench_workload NAME "CONFIG:MIN[-MAX] ..." WORKLOAD-ARGS...
# First MIN repetitions of every configuration, then more, one per
# configuration in turn, up to MAX, while the next one (as long as the last
# one of its configuration took) ends before DEADLINE_MS (0: no deadline;
# CLOCK_REALTIME ms). The baselines run in every repetition of "ibcr"
# (uncompressed) on the host.
bench_workload() {
    local name=$1 plan=$2 item config t0 i more
    local -a cfgs=() mins=() maxs=() done_=() last=()
    shift 2
    for item in $plan; do
        cfgs+=("${item%%:*}")
        item=${item##*:}
        mins+=("${item%%-*}")
        maxs+=("${item##*-}")
        done_+=(0)
        last+=(0)
    done
    now_ms; t0=$NOW_MS
    say "== $WHERE $name ($*)"
    wl_start "$name" "$@" || { wl_abort; return 1; }
    # one_rep_of I: the next repetition of configuration I.
    one_rep_of() {
        local base=0 s
        config=${cfgs[$1]}
        # baselines on the host only (in the guest they would only cost time)
        [[ $config == ibcr && $WHERE == host ]] && base=1
        now_ms; s=$NOW_MS
        one_rep "$config" "$((done_[$1] + 1))" "$base" || return 1
        now_ms
        last[$1]=$((NOW_MS - s))
        done_[$1]=$((done_[$1] + 1))
    }
    for i in "${!cfgs[@]}"; do
        while ((done_[i] < mins[i])); do
            one_rep_of "$i" || { wl_abort; return 1; }
        done
    done
    more=1
    while ((more)); do
        more=0
        for i in "${!cfgs[@]}"; do
            ((done_[i] < maxs[i])) || continue
            now_ms
            if ((${DEADLINE_MS:-0} && NOW_MS + last[i] > DEADLINE_MS)); then
                continue
            fi
            one_rep_of "$i" || { wl_abort; return 1; }
            more=1
        done
    done
    wl_stop
    now_ms
    item=''
    for i in "${!cfgs[@]}"; do item+=" ${cfgs[i]}x${done_[i]}"; done
    say "  $name: $(((NOW_MS - t0) / 1000)) s,$item"
}

# run_plan BUDGET_S ITEM...: runs the workloads of a plan; ITEM is
# "NAME|WEIGHT|CONFIG:MIN[-MAX] ...|WORKLOAD-ARGS". Workload k may use the
# time up to (its share of BUDGET_S by WEIGHT, plus the shares of those
# before it) for repetitions beyond the minimum; the minimum always runs.
run_plan() {
    local budget=$1 item name weight plan args total=0 acc=0 start
    shift
    for item in "$@"; do
        IFS='|' read -r name weight plan args <<<"$item"
        total=$((total + 10#${weight/./}))   # weights with one decimal
    done
    now_ms; start=$NOW_MS
    for item in "$@"; do
        IFS='|' read -r name weight plan args <<<"$item"
        acc=$((acc + 10#${weight/./}))
        DEADLINE_MS=$((start + budget * 1000 * acc / total))
        # shellcheck disable=SC2086  # workload arguments, word-split on purpose
        bench_workload "$name" "$plan" $args
    done
    DEADLINE_MS=0
}

# After a failure: stop whatever is left of this workload, loudly.
wl_abort() {
    [[ -n $WL_PID ]] && kill -9 "$WL_PID" 2>/dev/null
    [[ -n $LOADER_PID ]] && { kill "$LOADER_PID" 2>/dev/null; wait "$LOADER_PID" 2>/dev/null; }
    WL_PID='' LOADER_PID=''
    rm -f "$WORK/bench.ckpt"
    rm -rf "$WORK/criu.img"
}
