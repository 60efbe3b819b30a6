#!/usr/bin/env bash
# Which mapped file is the saved one: an executable edited in place with
# its size and mtime kept, and one replaced by rename with a changed copy
# of the same size and mtime, are both refused (they would run changed
# code: "tack" for "tick"), naming the file and why; a file only touched
# (same contents, new times) and a copied tree restored with --path-map
# (other inodes and mtimes, same contents) are restored and run on.
. "$(dirname "$0")/lib.sh"

# edit FILE: "tick" becomes "tack" in its format string, in place (same
# inode, size and, afterwards, mtime; its change time moves on)
edit() {
	local off
	off=$(grep -obUa 'tick %ld pid' "$1" | head -n 1 | cut -d: -f1)
	[ -n "$off" ] || fail "no format string in $1"
	touch -r "$1" "$T/stamp"
	printf 'tack' | dd of="$1" bs=1 seek="$off" conv=notrunc status=none
	touch -r "$T/stamp" "$1"
}

# saved DIR NAME: counter copied to DIR, started, checkpointed (--kill)
# into $T/NAME.ckpt; its output in $T/NAME.out
saved() {
	mkdir -p "$1"
	cp "$PROGS/counter" "$1/counter"
	start "$T/$2.out" "$1/counter" 400 30
	wait_line "$T/$2.out" '^tick 3 '
	checkpoint_kill "$PID" "$T/$2.ckpt"
}

# refused NAME WHY: the restore of NAME is refused, saying WHY, and ran nothing
refused() {
	local n
	n=$(wc -l <"$T/$1.out")
	if "$LOADER" "$T/$1.ckpt" >>"$T/$1.out" 2>"$T/$1.err"; then
		fail "$1: restored, and ran: $(grep -m1 '^tack' "$T/$1.out")"
	fi
	grep -q "$2" "$T/$1.err" || fail "$1: refused, but not for '$2': $(cat "$T/$1.err")"
	grep -q "$T/$1/counter" "$T/$1.err" || fail "$1: the refusal does not name the file"
	[ "$(wc -l <"$T/$1.out")" = "$n" ] || fail "$1: the refused restore wrote output"
}

# restored NAME: the restore of NAME runs on to its end, unchanged
restored() {
	local before
	before=$(last_tick "$T/$1.out")
	restart "$T/$1.ckpt"
	wait_line "$T/$1.out" "^tick $((before + 2)) "
	wait "$LPID" || fail "$1: restored program exited with status $?"
	grep -q '^DONE' "$T/$1.out" || fail "$1: program did not finish"
	grep -q FAIL "$T/$1.out" && fail "$1: program found its memory changed"
	grep -q '^tack' "$T/$1.out" && fail "$1: ran changed code"
	assert_ticks_continuous "$T/$1.out"
}

saved "$T/inplace" inplace
size=$(stat -c %s "$T/inplace/counter") mtime=$(stat -c %Y.%y "$T/inplace/counter")
edit "$T/inplace/counter"
[ "$(stat -c %s "$T/inplace/counter")" = "$size" ] &&
	[ "$(stat -c %Y.%y "$T/inplace/counter")" = "$mtime" ] || fail "the edit changed size or mtime"
refused inplace "was changed in place since the checkpoint"

saved "$T/renamed" renamed
cp "$T/renamed/counter" "$T/renamed/new"
edit "$T/renamed/new"
touch -r "$T/renamed/counter" "$T/renamed/new"
mv "$T/renamed/new" "$T/renamed/counter"
refused renamed "is another file than the one saved (another inode) with other contents"

saved "$T/touched" touched
touch "$T/touched/counter"
restored touched

saved "$T/copied" copied
cp -r "$T/copied" "$T/copy"
rm -rf "$T/copied"
LOADER_ARGS="--path-map $T/copied=$T/copy" restored copied
exit 0
