#!/usr/bin/env bash
# The output path can never hurt the machine: `saver -o` onto a device
# node (made with mknod in a private directory, never the machine's own
# /dev), a symbolic link to one, a FIFO, a socket, a directory, an empty
# path, '-', a path ending in '/', a directory that does not exist or
# takes no files: each refused with one line naming the path and what it
# is, before anything is attached (the message is the path's even when
# the pid given does not exist), the node unchanged afterwards, nothing
# left in its directory, the target running on. A link to a regular file
# gets the image at its target. Temporary images of savers that died
# are removed by the next run; one of a live saver stays. Also as nobody.
. "$(dirname "$0")/lib.sh"

is_root || fail "this test needs root (mknod, a read-only mount, nobody's runs)"
problems=()
problem() { problems+=("$*"); note "problem: $*"; }

start "$T/prog.out" "$PROGS/counter" 100000 20
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
nopid=$(($(cat /proc/sys/kernel/pid_max) - 1))
while [ -e "/proc/$nopid" ]; do nopid=$((nopid - 1)); done

D=$T/out
mkdir "$D"
mknod "$D/null" c 1 3
mknod "$D/loop" b 7 200
mkfifo "$D/fifo"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$D/sock"
mkdir "$D/dir"
ln -s null "$D/link-to-null"
ls -l --time-style=+ "$D" >"$T/dir.before"

# refused NAME PID PATH REGEX...: saver -o PATH PID is refused with one
# line on stderr matching every REGEX, nothing on stdout
refused() {
	local name=$1 p=$2 path=$3 st=0 re
	shift 3
	"$SAVER" -o "$path" "$p" >"$T/$name.stdout" 2>"$T/$name.stderr" || st=$?
	[ "$st" != 0 ] || problem "$name: exit status 0"
	[ ! -s "$T/$name.stdout" ] || problem "$name: printed on stdout: $(head -c 300 "$T/$name.stdout")"
	[ "$(wc -l <"$T/$name.stderr")" = 1 ] ||
		problem "$name: not one line on stderr: $(head -c 500 "$T/$name.stderr")"
	for re in "$@"; do
		grep -qiE -- "$re" "$T/$name.stderr" ||
			problem "$name: message lacks /$re/: $(head -c 500 "$T/$name.stderr")"
	done
}

for p in "$pid" "$nopid"; do
	refused "chr.$p" "$p" "$D/null" "$D/null" "character device"
	refused "blk.$p" "$p" "$D/loop" "$D/loop" "block device"
	refused "fifo.$p" "$p" "$D/fifo" "$D/fifo" "named pipe|fifo"
	refused "sock.$p" "$p" "$D/sock" "$D/sock" "socket"
	refused "dir.$p" "$p" "$D/dir" "$D/dir" "directory"
	refused "link.$p" "$p" "$D/link-to-null" "link-to-null" "character device"
	refused "slash.$p" "$p" "$D/img/" "$D/img/" "directory"
	refused "empty.$p" "$p" "" "empty"
	refused "dash.$p" "$p" "-" "standard output"
	refused "nodir.$p" "$p" "$D/none/img" "$D/none" "no such file or directory"
	refused "proc.$p" "$p" "/proc/ibcr-img" "/proc/ibcr-img" "cannot create"
done
mkdir "$T/ro"
mount -t tmpfs -o ro ibcr-ro "$T/ro" || fail "cannot mount a read-only tmpfs on $T/ro"
trap 'umount "$T/ro" 2>/dev/null || true; cleanup' EXIT
refused ro "$pid" "$T/ro/img" "$T/ro" "read-only"
umount "$T/ro"

# the nodes are what they were, nothing was added beside them
ls -l --time-style=+ "$D" >"$T/dir.after"
diff "$T/dir.before" "$T/dir.after" >"$T/dir.diff" ||
	problem "the directory changed: $(cat "$T/dir.diff")"
[ "$(stat -c %t:%T "$D/null")" = 1:3 ] || problem "$D/null is no longer the device 1:3"
n=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((n + 3)) pid $pid\$" 10
[ "$(stat_field "$pid" 3)" != T ] || problem "pid $pid was left stopped"

# a link to a regular file: the image goes to its target, the link stays
: >"$D/target.ckpt"
ln -s target.ckpt "$D/latest.ckpt"
checkpoint "$pid" "$D/latest.ckpt"
[ -L "$D/latest.ckpt" ] || problem "the link $D/latest.ckpt was replaced"
"$INFO" --verify "$D/target.ckpt" >/dev/null 2>&1 || problem "no image at the link's target"

# stale temporary images: of a dead saver and of a live process that is
# no saver: removed (one note each); of a live saver: kept
sh -c 'exit 0' &
dead=$!
wait "$dead"
cp /bin/sleep "$T/saver"
"$T/saver" 600 &
fake=$!
STARTED+=("$fake")
for p in "$dead" "$pid" "$fake"; do echo partial >"$D/img.ckpt.tmp.$p"; done
echo partial >"$D/img.ckpt.7.tmp.$dead"
checkpoint "$pid" "$D/img.ckpt"
[ ! -e "$D/img.ckpt.tmp.$dead" ] || problem "the temporary image of dead saver $dead stayed"
[ ! -e "$D/img.ckpt.7.tmp.$dead" ] || problem "the numbered temporary image of dead saver $dead stayed"
[ ! -e "$D/img.ckpt.tmp.$pid" ] || problem "the temporary image named after a live non-saver $pid stayed"
[ -e "$D/img.ckpt.tmp.$fake" ] || problem "the temporary image of the live saver $fake was removed"
grep -q "removed $D/img.ckpt.tmp.$dead" "$T/saver.err" || problem "no note of the removal: $(cat "$T/saver.err")"
kill "$fake"

# as nobody: a FIFO and a directory nobody cannot write are refused too
chmod 755 "$T"
mkdir "$T/nobody" && chmod 777 "$T/nobody"
mkfifo "$T/nobody/fifo"
mkdir "$T/rootonly" && chmod 755 "$T/rootonly"
# its output file nobody's own: a saver run by nobody refuses files it
# could not open again at a restore (saver/reopen.c)
: >"$T/nobody/prog.out" && chown 65534:65534 "$T/nobody/prog.out"
start "$T/nobody/prog.out" "$PROGS/runas" 65534 65534 "$PROGS/counter" 100000 20
npid=$PID
wait_line "$T/nobody/prog.out" '^tick 3 '
for c in "fifo:$T/nobody/fifo:named pipe" "rootonly:$T/rootonly/img:permission denied"; do
	IFS=: read -r name path re <<<"$c"
	st=0
	"$PROGS/runas" 65534 65534 "$SAVER" -o "$path" "$npid" >"$T/n.$name.out" 2>&1 || st=$?
	[ "$st" != 0 ] && [ "$(wc -l <"$T/n.$name.out")" = 1 ] && grep -qiE "$re" "$T/n.$name.out" ||
		problem "nobody, $name: status $st: $(cat "$T/n.$name.out")"
done
[ -p "$T/nobody/fifo" ] || problem "nobody's FIFO was replaced"
[ -z "$(ls -A "$T/rootonly")" ] || problem "files left in $T/rootonly: $(ls -A "$T/rootonly")"
"$PROGS/runas" 65534 65534 "$SAVER" -o "$T/nobody/img" "$npid" >"$T/n.ok.out" 2>&1 ||
	problem "nobody's checkpoint into its own directory failed: $(cat "$T/n.ok.out")"
n=$(last_tick "$T/nobody/prog.out")
wait_line "$T/nobody/prog.out" "^tick $((n + 3)) " 10

[ ${#problems[@]} -eq 0 ] || fail "${#problems[@]} problem(s): ${problems[*]}"
exit 0
