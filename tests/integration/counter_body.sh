# shellcheck shell=bash
# The body of the t_counter_* tests: COUNTER names the binary.

start "$T/prog.out" "$PROGS/$COUNTER" 60 50
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
maps "$pid" >"$T/maps.before"
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 2)) "
maps "$RPID" >"$T/maps.after"
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
wait "$LPID" || fail "restored program exited with status $?"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
grep -q FAIL "$T/prog.out" && fail "program found its memory changed"
assert_ticks_continuous "$T/prog.out"
exit 0
