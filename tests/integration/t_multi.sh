#!/usr/bin/env bash
# One saver call with two pids writes one image holding both processes;
# one restart-loader brings both back (same pids as root), waits for both
# and exits 0 once both finished well.
. "$(dirname "$0")/lib.sh"

start "$T/a.out" "$PROGS/counter" 50 50
a=$PID
start "$T/b.out" "$PROGS/counter-musl" 50 50
b=$PID
wait_line "$T/a.out" '^tick 5 '
wait_line "$T/b.out" '^tick 5 '
"$SAVER" --kill -o "$T/img.ckpt" "$a" "$b" 2>"$T/saver.err" || fail "saver: $(cat "$T/saver.err")"
wait "$a" "$b" 2>/dev/null || true
"$INFO" "$T/img.ckpt" >"$T/info.out" || fail "ckpt-info failed"
grep -q "2 process(es)" "$T/info.out" || fail "image does not hold 2 processes"
timeout 60 "$LOADER" "$T/img.ckpt" >"$T/loader.out" 2>&1 || fail "restart-loader exited with $?"
for f in a b; do
	grep -q '^DONE' "$T/$f.out" || fail "process $f did not finish"
	grep -q FAIL "$T/$f.out" && fail "process $f found its memory changed"
	assert_ticks_continuous "$T/$f.out"
done
is_root && { [ "$(pids_in "$T/a.out")" = "$a" ] && [ "$(pids_in "$T/b.out")" = "$b" ] ||
	fail "pids changed"; }
exit 0
