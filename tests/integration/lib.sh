# shellcheck shell=bash
# Sourced by every integration test (tests/integration/t_*.sh). A test is a
# bash script that starts real processes, checkpoints them with `saver`,
# restarts them with `restart-loader` and checks what a user would check.
# It exits 0 when every check held, 1 otherwise; `skip` does not exist on
# purpose: a check that cannot run here fails.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${IBCR_BUILD:-$TOP/build}
SAVER=$B/saver
LOADER=$B/restart-loader
INFO=$B/ckpt-info
PROGS=$B/tests/progs
T=$(mktemp -d /tmp/ibcr-test.XXXXXX)
TEST_NAME=$(basename "$0" .sh)
STARTED=()

# holds GREP-ARGS...: grep -q over the whole of stdin. grep -q alone exits
# at the first match, and a writer still writing (nft writes piece by
# piece) then dies of SIGPIPE, which pipefail turns into a failed check.
holds() { local all; all=$(cat); grep -q "$@" <<<"$all"; }

# Everything a test started dies with it, whatever happens.
# kill_tree PID: PID and every descendant (children first found, then killed).
kill_tree() {
	local c
	for c in $(children_of "$1"); do kill_tree "$c"; done
	kill -9 "$1" 2>/dev/null || true
}

cleanup() {
	local p
	for p in "${STARTED[@]}"; do kill_tree "$p"; done
	[ -n "${KEEP:-}" ] || rm -rf "$T"
	# a network lock of a test that failed before its restore: its image
	# is gone now, so --unlock-net takes it (and no one else's)
	if [ -z "${KEEP:-}" ] && nft list tables 2>/dev/null | holds ' ibcr-'; then
		"$SAVER" --unlock-net >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

fail() {
	echo "FAIL $TEST_NAME: $*" >&2
	for f in "$T"/*.out "$T"/*.err; do
		[ -f "$f" ] || continue
		echo "--- $f (last lines)" >&2
		tail -n 8 "$f" >&2
	done
	exit 1
}

note() { echo "  $TEST_NAME: $*" >&2; }

# start OUT CMD...: runs CMD in the background, stdin /dev/null, stdout and
# stderr to OUT, no other inherited descriptors. Sets PID.
start() {
	local out=$1
	shift
	# clean-exec closes the rest in the process itself: a loop over
	# /proc/self/fd in the shell once let one through
	"$PROGS/clean-exec" "$@" </dev/null >"$out" 2>&1 &
	PID=$!
	STARTED+=("$PID")
}

# wait_line FILE REGEX [SECONDS]: waits until a line of FILE matches.
wait_line() {
	local file=$1 re=$2 secs=${3:-30} i
	for ((i = 0; i < secs * 20; i++)); do
		grep -qE -- "$re" "$file" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "no line matching '$re' in $file after ${secs}s"
}

# checkpoint PID IMAGE [SAVER-ARGS...]: saver must succeed and leave IMAGE.
checkpoint() {
	local pid=$1 img=$2
	shift 2
	"$SAVER" "$@" -o "$img" "$pid" 2>"$T/saver.err" ||
		fail "saver $* -o $img $pid failed: $(cat "$T/saver.err")"
	[ -s "$img" ] || fail "saver left no image $img"
	"$INFO" --verify "$img" >"$T/info.out" 2>&1 || fail "ckpt-info --verify $img failed"
}

# checkpoint_retry PID IMAGE [SAVER-ARGS...]: checkpoint, for a program
# that reads its own /proc/self/smaps: a checkpoint that catches it with
# that file open is refused, nothing written (t_fdrefuse), and is tried
# again, as a user would, up to 30 times.
checkpoint_retry() {
	local pid=$1 img=$2 i
	shift 2
	rm -f "$img"
	for ((i = 1; i <= 30; i++)); do
		"$SAVER" "$@" -o "$img" "$pid" 2>"$T/saver.err" && break
		grep -q "/smaps is a file of a process in the checkpoint" "$T/saver.err" ||
			fail "saver $* -o $img $pid failed: $(cat "$T/saver.err")"
	done
	[ -s "$img" ] || fail "no image $img after 30 tries: $(cat "$T/saver.err")"
	"$INFO" --verify "$img" >"$T/info.out" 2>&1 || fail "ckpt-info --verify $img failed"
}

# checkpoint_kill PID IMAGE: checkpoint with --kill, and reap the process.
checkpoint_kill() {
	checkpoint "$1" "$2" --kill
	wait "$1" 2>/dev/null || true
}

# children_of PID: the pids whose parent is PID (no pgrep in the arm64 guest).
# From /proc/PID/task/*/children where the kernel has them (the guest's
# does): scanning every /proc/N/stat takes about a second in bash under
# TCG, long enough for a restored test program to run to its end.
[ -e "/proc/$$/task/$$/children" ] && CHILDREN_FILES=1 || CHILDREN_FILES=
children_of() {
	local f s c
	if [ -n "$CHILDREN_FILES" ]; then
		for f in "/proc/$1/task/"*/children; do
			s=
			read -r s 2>/dev/null <"$f" || true	# no newline at the end
			for c in $s; do echo "$c"; done
		done
		return 0
	fi
	for f in /proc/[0-9]*/stat; do
		read -r s 2>/dev/null <"$f" || continue	# no fork: this runs in loops
		s=${s##*) }
		read -r _ s _ <<<"$s"
		[ "$s" = "$1" ] && { f=${f#/proc/}; echo "${f%/stat}"; }
	done
	return 0
}

# stat_field PID N: field N of /proc/PID/stat (no ps in the arm64 guest).
stat_field() {
	local s f
	read -r s 2>/dev/null <"/proc/$1/stat" || return 1
	s=${s##*) }	# the name may hold spaces and parentheses
	read -r -a f <<<"$s"
	echo "${f[$2 - 3]}"
}
ppid_of() { stat_field "$1" 4; }
pgid_of() { stat_field "$1" 5; }

# is_loader PID: PID runs restart-loader and its parent does not (a
# process the loader forked is called restart-loader too, until it has
# restored itself).
is_loader() {
	local c p
	read -r c 2>/dev/null <"/proc/$1/comm" && [ "$c" = restart-loader ] || return 1
	p=$(ppid_of "$1") && read -r c 2>/dev/null <"/proc/$p/comm" || return 1
	[ "$c" != restart-loader ]
}

# restart IMAGE: runs restart-loader in the background (stdout and stderr
# to $T/loader.out unless LOADER_OUT is set; stderr to LOADER_ERR if set;
# options in LOADER_ARGS go before IMAGE).
# Sets LPID (what to wait for) and RPID (the restored process, once it
# shows up).
restart() {
	local img=$1 out=${LOADER_OUT:-$T/loader.out} err=${LOADER_ERR:-} i c loader
	# Only fds 0-2 (and LOADER_KEEP_FD), as from a terminal: whatever else
	# the calling shell has open (make's jobserver...) is not part of the
	# test; t_stdio checks what the loader does with more.
	(
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			[ "$fd" -gt 2 ] && [ "$fd" != "${LOADER_KEEP_FD:-}" ] && eval "exec $fd>&-"
		done
		[ -z "$err" ] || exec 2>>"$err"
		exec timeout "${RESTART_TIMEOUT:-120}" "$LOADER" ${LOADER_ARGS:-} "$img"
	) >>"$out" 2>&1 &
	LPID=$!
	STARTED+=("$LPID")
	RPID=
	for ((i = 0; i < 400; i++)); do
		# coreutils' timeout forks the loader; busybox's execs it (and
		# the loader's own child, the restored process, may already be
		# there when it is seen as LPID's child)
		loader=
		for c in "$LPID" $(children_of "$LPID"); do
			is_loader "$c" && { loader=$c; break; }
		done
		[ -n "$loader" ] && RPID=$(children_of "$loader" | head -n 1)
		[ -n "$RPID" ] && break
		kill -0 "$LPID" 2>/dev/null || break	# the loader gave up already
		sleep 0.05
	done
	[ -n "$RPID" ] || fail "restart-loader $img started no process: $(cat "$out" ${err:+"$err"})"
	STARTED+=("$RPID")
}

# saver_refused PID REGEX...: saver --kill of PID must fail, before
# anything is written, in one line (warnings aside) matching every
# (extended) REGEX; the message is in $T/saver-refused.err.
saver_refused() {
	local pid=$1 st=0 re err=$T/saver-refused.err
	shift
	"$SAVER" --kill -o "$T/refused.ckpt" "$pid" 2>"$err" || st=$?
	[ $st != 0 ] || fail "saver took pid $pid, which it must refuse"
	[ "$(grep -vc '^saver: warning:' "$err")" = 1 ] || fail "the refusal is not one line: $(cat "$err")"
	for re; do
		grep -qE -- "$re" "$err" || fail "the refusal lacks /$re/: $(cat "$err")"
	done
	! ls "$T/refused.ckpt"* >/dev/null 2>&1 || fail "a refused checkpoint left an image"
}

# restart_refused IMAGE MESSAGE [COMMAND...]: restart-loader, run through
# COMMAND... when given (runas, nice...), must refuse IMAGE: exit status
# 1 and MESSAGE (a fixed string) in what it says ($T/refused.out).
restart_refused() {
	local img=$1 msg=$2 rc=0
	shift 2
	"$@" "$LOADER" ${LOADER_ARGS:-} "$img" >"$T/refused.out" 2>&1 || rc=$?
	[ "$rc" = 1 ] || fail "restart-loader $img: exit status $rc, not 1 (a refusal): $(cat "$T/refused.out")"
	grep -qF -- "$msg" "$T/refused.out" ||
		fail "restart-loader $img: the refusal does not say '$msg': $(cat "$T/refused.out")"
}

# As an ordinary user (root runs the test): as_nobody CMD... runs CMD as
# nobody; for_nobody makes $T and $T/prog.out nobody's to write;
# checkpoint_as_nobody PID IMAGE [SAVER-ARGS...] and restart_as_nobody
# IMAGE are checkpoint (without --verify's second look) and restart with
# saver and restart-loader run as nobody; nobody cannot choose pids, so
# the restart takes new ones (--new-pids, said on stderr).
as_nobody() { "$PROGS/runas" 65534 65534 "$@"; }
for_nobody() {
	chmod 777 "$T"
	: >"$T/prog.out"
	chmod 666 "$T/prog.out"
}
checkpoint_as_nobody() {
	local pid=$1 img=$2
	shift 2
	as_nobody "$SAVER" "$@" -o "$img" "$pid" 2>"$T/saver.err" ||
		fail "saver as nobody $* -o $img $pid failed: $(cat "$T/saver.err")"
	[ -s "$img" ] || fail "saver left no image $img"
}
restart_as_nobody() {
	LOADER=$PROGS/runas LOADER_ARGS="65534 65534 $B/restart-loader --new-pids" restart "$1"
}

# ticks FILE: the numbers of the "tick N" lines, one per line.
ticks() { sed -n 's/^tick \([0-9]*\).*/\1/p' "$1"; }

# assert_ticks_continuous FILE: ticks run 0,1,2,... with no gap or repeat.
assert_ticks_continuous() {
	local file=$1 want=0 n
	while read -r n; do
		[ "$n" = "$want" ] || fail "$file: tick $n where $want was expected (restart from zero, gap or repeat)"
		want=$((want + 1))
	done < <(ticks "$file")
	[ "$want" -gt 0 ] || fail "$file has no ticks"
}

# last_tick FILE
last_tick() { ticks "$1" | tail -n 1; }

# pids_in FILE: the distinct "pid P" values of tick lines.
pids_in() { sed -n 's/^tick [0-9]* pid \([0-9]*\).*/\1/p' "$1" | sort -u; }

# maps PID: address ranges, permissions and names, for comparing layouts.
maps() { awk '{ print $1, $2, $6 }' "/proc/$1/maps"; }

is_root() { [ "$(id -u)" = 0 ]; }

# expect_pid ORIGINAL RESTORED: the same PID when root can have it.
expect_pid() {
	if is_root && [ "$1" != "$2" ]; then
		fail "restored pid $2, original $1 (as root the pid must be kept)"
	fi
}

# replace PID IMAGE OUT [N]: kill the original, restart IMAGE (RPID, LPID),
# expect the same pid, and wait for the tick N (default 2) past the
# original's last one (KILLED): only the restored process writes that.
replace() {
	kill -9 "$1"
	wait "$1" 2>/dev/null || true
	KILLED=$(last_tick "$3")
	restart "$2"
	expect_pid "$1" "$RPID"
	wait_line "$3" "^tick $((KILLED + ${4:-2})) "
}

# saver_bg OUT ARGS...: runs the saver in the background, its stdout and
# stderr through a FIFO into OUT; SPID is the saver, CPID the reader,
# which ends when the saver and its guardian (which shares that output,
# and says there what it undid) have both closed it (t_saverkill*).
saver_bg() {
	local out=$1 w
	shift
	rm -f "$T/fifo"
	mkfifo "$T/fifo"
	timeout 30 cat "$T/fifo" >"$out" &
	CPID=$!
	# opened here, so that a saver killed before it runs closes it too
	exec {w}>"$T/fifo"
	"$SAVER" "$@" >&$w 2>&1 &
	SPID=$!
	exec {w}>&-
}
