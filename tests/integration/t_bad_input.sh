#!/usr/bin/env bash
# What cannot be done is refused with one line naming the object and the
# cause, a non-zero exit status, and nothing half-done: no image (not even
# a temporary file) after a failed checkpoint, the target still running;
# no process left behind by a failed restore.
#
# Every case runs; each failure is reported as found, and counted at the end.
. "$(dirname "$0")/lib.sh"

IMGTOOL=("$PROGS/imgtool")
problems=()
# said at once too: a later fail() must not hide what went wrong before
problem() { problems+=("$*"); note "problem: $*"; }

# refused NAME OUT ERR STATUS REGEX...: the command behind NAME exited
# non-zero, printed nothing on stdout and exactly one line on stderr,
# and that line matches every REGEX (case-insensitive extended).
refused() {
	local name=$1 out=$2 err=$3 st=$4 re
	shift 4
	if [ "$st" = 0 ]; then
		problem "$name: exit status 0"
		return
	fi
	[ ! -s "$out" ] || problem "$name: printed on stdout: $(head -c 300 "$out")"
	[ "$(wc -l <"$err")" = 1 ] || problem "$name: not one line on stderr: $(head -c 500 "$err")"
	for re in "$@"; do
		grep -qiE -- "$re" "$err" || problem "$name: message lacks /$re/: $(head -c 500 "$err")"
	done
}

# save_fails NAME DIR PID PROG_OUT REGEX...: saver -o DIR/img PID is
# refused and DIR stays empty; when PROG_OUT is not "-", PID (which
# writes its ticks there) keeps running, not stopped, and ticking.
save_fails() {
	local name=$1 dir=$2 pid=$3 prog_out=$4 st=0 n
	shift 4
	mkdir -p "$dir"
	# shellcheck disable=SC2086 # SAVE_ARGS: words on purpose
	"$SAVER" ${SAVE_ARGS:-} -o "$dir/img" "$pid" >"$T/$name.stdout" 2>"$T/$name.stderr" || st=$?
	refused "saver ($name)" "$T/$name.stdout" "$T/$name.stderr" "$st" "$@"
	[ -z "$(ls -A "$dir")" ] || problem "saver ($name) left files behind: $(ls -A "$dir")"
	[ "$prog_out" != - ] || return 0
	[ "$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status")" != T ] ||
		problem "saver ($name) left pid $pid stopped"
	n=$(last_tick "$prog_out")
	wait_line "$prog_out" "^tick $((n + 2)) pid $pid\$" 10
}

# restore_fails NAME IMAGE PID REGEX...: restart-loader IMAGE is refused
# within 30 s and no process runs as PID (the image's, free before).
restore_fails() {
	local name=$1 img=$2 pid=$3 st=0
	shift 3
	timeout 30 "$LOADER" "$img" >"$T/$name.stdout" 2>"$T/$name.stderr" || st=$?
	[ "$st" != 124 ] || problem "restart-loader ($name) hung"
	refused "restart-loader ($name)" "$T/$name.stdout" "$T/$name.stderr" "$st" "$@"
	[ ! -e "/proc/$pid" ] || problem "restart-loader ($name) left a process running as pid $pid"
}

is_root || fail "this test needs root (a root process for an unprivileged saver, a tmpfs mount)"

# --- saver: no such process
nopid=$(($(cat /proc/sys/kernel/pid_max) - 1))
while [ -e "/proc/$nopid" ]; do nopid=$((nopid - 1)); done
save_fails nopid "$T/nopid" "$nopid" - "pid $nopid\b" "no such process"

# --- saver: a kernel thread cannot be traced, even by root
save_fails kthread "$T/kthread" 2 - "pid 2\b" "kernel thread"

# --- saver as nobody against a root process
start "$T/nobody.prog.out" "$PROGS/counter" 1000 50
victim=$PID
wait_line "$T/nobody.prog.out" '^tick 2 '
chmod 711 "$T"
mkdir "$T/nobody" && chmod 777 "$T/nobody"
st=0
"$PROGS/runas" 65534 65534 "$SAVER" -o "$T/nobody/img" "$victim" \
	>"$T/nobody.stdout" 2>"$T/nobody.stderr" || st=$?
refused "saver (nobody)" "$T/nobody.stdout" "$T/nobody.stderr" "$st" "pid $victim\b" "permission denied|not permitted"
[ -z "$(ls -A "$T/nobody")" ] || problem "saver (nobody) left files behind: $(ls -A "$T/nobody")"
n=$(last_tick "$T/nobody.prog.out")
wait_line "$T/nobody.prog.out" "^tick $((n + 2)) pid $victim\$" 10

# --- saver onto a full file system: no file at all, target runs on
mkdir "$T/full"
mount -t tmpfs -o size=256k ibcr-full "$T/full" || fail "cannot mount a tmpfs on $T/full"
trap 'umount "$T/full" 2>/dev/null || true; cleanup' EXIT
save_fails full "$T/full" "$victim" "$T/nobody.prog.out" "$T/full/img" "no space left"
umount "$T/full"
# the same with direct I/O (tmpfs takes it since Linux 6.6) and an image
# of several full buffers: the write that fails is finished through the
# page cache, which names the error
start "$T/heap.prog.out" "$PROGS/heap" 1000 50
heap=$PID
wait_line "$T/heap.prog.out" '^tick 2 '
mount -t tmpfs -o size=4m ibcr-full "$T/full" || fail "cannot mount a tmpfs on $T/full"
SAVE_ARGS=--direct save_fails full-direct "$T/full" "$heap" "$T/heap.prog.out" "$T/full/img" "no space left"
umount "$T/full"
kill -9 "$heap"

# --- saver on unsupported descriptors: names pid, fd and kind (netlink
# sockets are restored now, t_netsocks; an unsupported socket kind, a
# packet socket, is refused in t_netrefuse)
for kind in pidfd; do
	start "$T/$kind.prog.out" "$PROGS/fdholder" $kind
	wait_line "$T/$kind.prog.out" '^tick 2 '
	[ $kind = pidfd ] && what=pidfd || what=socket
	save_fails $kind "$T/$kind" "$PID" "$T/$kind.prog.out" "pid $PID\b" "fd 3\b" "$what"
	kill -9 "$PID"
done

# --- a good image, then damaged copies of it; the original is gone
checkpoint_kill "$victim" "$T/good.ckpt"
"${IMGTOOL[@]}" sections "$T/good.ckpt" >"$T/sections" || fail "imgtool cannot read the image"

# every kind of metadata section the image has (PROC, THREAD, SIGACT...)
for sec in $(awk '$2 != "PAGES" && $2 != "END" { print $2 }' "$T/sections" | sort -u); do
	cp "$T/good.ckpt" "$T/flip-$sec.ckpt"
	"${IMGTOOL[@]}" flip "$T/flip-$sec.ckpt" $sec
	restore_fails "flip-$sec" "$T/flip-$sec.ckpt" "$victim" "flip-$sec.ckpt" "\b$sec section\b" "corrupt|crc"
	rm -f "$T/flip-$sec.ckpt"	# the arm64 guest's /tmp is small
done

# at 20%, 50% and 90% of the largest region: the restart-loader fills the
# end of a large one while the core fills the start (loader/pagehelp.c),
# with a userfaultfd (they meet where their speeds take them, each summing
# the windows it copies) or, IBCR_NO_UFFD=1, as where there is none (split
# at 55%)
for pct in 20 50 90 20nouffd 90nouffd; do
	cp "$T/good.ckpt" "$T/flip-pages$pct.ckpt"
	region=$("${IMGTOOL[@]}" flip-region "$T/flip-pages$pct.ckpt" ${pct%nouffd})
	[ "$pct" != "${pct%nouffd}" ] && export IBCR_NO_UFFD=1
	restore_fails flip-pages$pct "$T/flip-pages$pct.ckpt" "$victim" "flip-pages$pct.ckpt" \
		"region $region\b" "corrupt|crc"
	unset IBCR_NO_UFFD
	"$INFO" --verify "$T/flip-pages$pct.ckpt" >/dev/null 2>&1 &&
		problem "ckpt-info --verify accepts damaged page data ($pct%)"
	rm -f "$T/flip-pages$pct.ckpt"
done

cp "$T/good.ckpt" "$T/short.ckpt"
truncate -s $(($(stat -c %s "$T/good.ckpt") / 2)) "$T/short.ckpt"
restore_fails truncated "$T/short.ckpt" "$victim" "short.ckpt" "truncated"

# marked as made on the other architecture (enum ibcr_arch)
case $(uname -m) in
x86_64) other=2 other_name=aarch64 ;;
aarch64) other=1 other_name=x86_64 ;;
*) fail "no other architecture known for $(uname -m)" ;;
esac
cp "$T/good.ckpt" "$T/arch.ckpt"
"${IMGTOOL[@]}" set-header "$T/arch.ckpt" arch $other
restore_fails arch "$T/arch.ckpt" "$victim" "arch.ckpt" "$other_name"

cp "$T/good.ckpt" "$T/version.ckpt"
"${IMGTOOL[@]}" set-header "$T/version.ckpt" version 99
restore_fails version "$T/version.ckpt" "$victim" "version.ckpt" "version 99\b" "newer"
cp "$T/good.ckpt" "$T/old.ckpt"
"${IMGTOOL[@]}" set-header "$T/old.ckpt" version 1
restore_fails old-version "$T/old.ckpt" "$victim" "old.ckpt" "version 1\b" "older"

# the good image still restores: the damage above was what was refused
restart "$T/good.ckpt"
expect_pid "$victim" "$RPID"
n=$(last_tick "$T/nobody.prog.out")
wait_line "$T/nobody.prog.out" "^tick $((n + 2)) "
kill -9 "$RPID"

[ ${#problems[@]} = 0 ] || fail "${#problems[@]} problem(s), listed above"
exit 0
