#!/usr/bin/env bash
# An unmodified /usr/bin/python3 (Debian's) continues after saver --kill
# and restart-loader: its ticks go on, its objects still hold what it put
# in them (it checks), same pid and memory layout, and it finishes.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || fail "$PY is not installed"
start "$T/prog.out" "$PY" -c '
import os, sys, time
data = [i * i for i in range(200000)]
table = {str(i): i for i in range(50000)}
want = sum(data)
for n in range(60):
    if sum(data) != want or len(table) != 50000 or table["4242"] != 4242:
        print("FAIL python objects changed", flush=True)
        sys.exit(1)
    print(f"tick {n} pid {os.getpid()}", flush=True)
    time.sleep(0.1)
print(f"DONE pid {os.getpid()}", flush=True)
'
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
maps "$pid" >"$T/maps.before"
checkpoint_kill "$pid" "$T/img.ckpt"
before=$(last_tick "$T/prog.out")
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/prog.out" "^tick $((before + 3)) "
maps "$RPID" >"$T/maps.after"
wait "$LPID" || fail "restored python exited with status $?"
grep -q FAIL "$T/prog.out" && fail "python found its objects changed"
grep -q '^DONE' "$T/prog.out" || fail "python did not finish"
assert_ticks_continuous "$T/prog.out"
# last: the checks above tell whether the process works despite a difference
diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
	fail "memory layout changed: $(cat "$T/maps.diff")"
exit 0
