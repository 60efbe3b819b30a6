#!/usr/bin/env bash
# Identity (issue 14): a restore started the moment `saver --kill`
# returns gets the original pid, ten times in a row; a pid still held by
# the zombie of the checkpointed process (its parent slow to reap it) is
# waited for; a root's pid or a thread id in use refuses the restore in
# one line naming its holder, and nothing runs; with --new-pids it gets a
# new one, said once, and the next cycle is exact again; a child's pid in
# use refuses the restore even so (its parent would wait for it in vain),
# and once the pid is free the same image restores exactly.
. "$(dirname "$0")/lib.sh"

is_root || fail "this test needs root (restoring the original pids)"

# --- ten cycles, each restore started as soon as saver --kill returns
start "$T/prog.out" "$PROGS/counter" 100000 20
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
cur=$pid
for cycle in $(seq 10); do
	"$SAVER" --kill -o "$T/c.ckpt" "$cur" 2>"$T/saver.err" ||
		fail "cycle $cycle: saver --kill failed: $(cat "$T/saver.err")"
	n=$(last_tick "$T/prog.out")
	: >"$T/loader.err"
	LOADER_ERR=$T/loader.err restart "$T/c.ckpt"
	[ "$RPID" = "$pid" ] ||
		fail "cycle $cycle: restored as pid $RPID, not $pid: $(cat "$T/loader.err")"
	[ ! -s "$T/loader.err" ] || fail "cycle $cycle: the loader said: $(cat "$T/loader.err")"
	wait_line "$T/prog.out" "^tick $((n + 2)) "
	cur=$RPID
done
grep -q FAIL "$T/prog.out" && fail "program found its memory changed: $(grep FAIL "$T/prog.out")"
assert_ticks_continuous "$T/prog.out"
kill -9 "$cur"
wait "$LPID" 2>/dev/null || true

# --- a parent that reaps its killed child only 3 s after its death: the
# zombie holds the pid; saver --kill waits 2 s, the loader the rest
# (its notes apart: the restored counter writes over its old output)
start "$T/lazy.out" sh -c "exec \"\$0\" \"\$@\" 2>'$T/lazy.err'" "$PROGS/lazyparent" 3000 "$PROGS/counter" 100000 20
wait_line "$T/lazy.out" '^tick 3 '
pid=$(pids_in "$T/lazy.out")
"$SAVER" --kill -o "$T/lazy.ckpt" "$pid" 2>"$T/saver.err" ||
	fail "saver --kill (lazy parent) failed: $(cat "$T/saver.err")"
[ "$(stat_field "$pid" 3 2>/dev/null || echo gone)" = Z ] ||
	note "pid $pid was no zombie when the restore began (reaped already, or still exiting)"
: >"$T/loader.err"
LOADER_ERR=$T/loader.err restart "$T/lazy.ckpt"
[ "$RPID" = "$pid" ] ||
	fail "restored as pid $RPID, not $pid, after its zombie was reaped: $(cat "$T/loader.err")"
[ ! -s "$T/loader.err" ] || fail "the loader said (lazy parent): $(cat "$T/loader.err")"
wait_line "$T/lazy.err" '^reaped'
n=$(last_tick "$T/lazy.out")
wait_line "$T/lazy.out" "^tick $((n + 2)) pid $pid\$"
kill -9 "$RPID"
wait "$LPID" 2>/dev/null || true

# --- the pid in use by a running process (the original, not killed):
# refused, one line naming the holder; with --new-pids a new pid, said
# once, naming both
start "$T/busy.out" "$PROGS/counter" 100000 20
pid=$PID
wait_line "$T/busy.out" '^tick 3 '
checkpoint "$pid" "$T/busy.ckpt"
restart_refused "$T/busy.ckpt" "pid $pid (counter) is in use by a process, 'counter' (free it, restore with --pid-ns, or accept a new one with --new-pids)"
[ "$(wc -l <"$T/refused.out")" = 1 ] || fail "the refusal is not one line: $(cat "$T/refused.out")"
n=$(last_tick "$T/busy.out")
wait_line "$T/busy.out" "^tick $((n + 2)) "
[ "$(pids_in "$T/busy.out")" = "$pid" ] || fail "the refused restore ran: pids $(pids_in "$T/busy.out" | tr '\n' ' ')"
: >"$T/loader.err"
LOADER_ARGS=--new-pids LOADER_ERR=$T/loader.err restart "$T/busy.ckpt"
[ "$RPID" != "$pid" ] || fail "restored as pid $pid, which was in use"
[ "$(wc -l <"$T/loader.err")" = 1 ] && grep -qE "pid $pid \(counter\) is in use.*restored as pid $RPID \(--new-pids\)" "$T/loader.err" ||
	fail "not one line naming the pid in use and the new one: $(cat "$T/loader.err")"
kill -9 "$RPID" "$pid"
wait "$LPID" "$pid" 2>/dev/null || true

# --- a thread id in use (held by another process): refused, naming the
# thread and the holder; with --new-pids the pid comes back, that thread
# gets a new id, said once; the next cycle is exact again
start "$T/thr.out" "$PROGS/threads" 100000 100
pid=$PID
wait_line "$T/thr.out" '^tick 3 '
tid=$(ls "/proc/$pid/task" | grep -vx "$pid" | head -n 1)
checkpoint_kill "$pid" "$T/thr.ckpt"
start "$T/hog.out" "$PROGS/pidhog" "$tid"
wait_line "$T/hog.out" "^hog $tid\$"
restart_refused "$T/thr.ckpt" "pid $pid (threads): its thread id $tid is in use by a process, 'pidhog'"
[ "$(wc -l <"$T/refused.out")" = 1 ] || fail "the refusal is not one line: $(cat "$T/refused.out")"
[ ! -e "/proc/$pid" ] || fail "pid $pid runs after the refused restore: $(cat "/proc/$pid/comm")"
: >"$T/loader.err"
LOADER_ARGS=--new-pids LOADER_ERR=$T/loader.err restart "$T/thr.ckpt"
[ "$RPID" = "$pid" ] || fail "restored as pid $RPID, not $pid: $(cat "$T/loader.err")"
[ "$(wc -l <"$T/loader.err")" = 1 ] && grep -qE "pid $pid: thread id\(s\) $tid were in use; those threads were restored as [0-9]+" "$T/loader.err" ||
	fail "not one line naming thread $tid and its new id: $(cat "$T/loader.err")"
newtid=$(sed -n 's/.*restored as \([0-9]*\)$/\1/p' "$T/loader.err")
[ -d "/proc/$pid/task/$newtid" ] || fail "thread $newtid named by the loader is not a thread of $pid"
ls "/proc/$pid/task" | sort >"$T/tids.1"
n=$(last_tick "$T/thr.out")
wait_line "$T/thr.out" "^tick $((n + 3)) "
checkpoint_kill "$RPID" "$T/thr2.ckpt"
wait "$LPID" 2>/dev/null || true
: >"$T/loader.err"
LOADER_ERR=$T/loader.err restart "$T/thr2.ckpt"
[ ! -s "$T/loader.err" ] || fail "second cycle: the loader said: $(cat "$T/loader.err")"
ls "/proc/$RPID/task" | sort >"$T/tids.2"
diff "$T/tids.1" "$T/tids.2" >/dev/null ||
	fail "second cycle: thread ids $(tr '\n' ' ' <"$T/tids.2") instead of $(tr '\n' ' ' <"$T/tids.1")"
n=$(last_tick "$T/thr.out")
wait_line "$T/thr.out" "^tick $((n + 3)) "
grep -q FAIL "$T/thr.out" && fail "threads program failed: $(grep FAIL "$T/thr.out")"
kill -9 "$RPID"
wait "$LPID" 2>/dev/null || true

# --- a child's pid in use: refused, nothing of the image runs; then exact
start "$T/fam.out" "$PROGS/family" 40 100
pid=$PID
wait_line "$T/fam.out" '^tick 5 '
worker=$(children_of "$pid")
[ -n "$worker" ] || fail "family did not start its worker"
checkpoint "$pid" "$T/fam.ckpt" --tree --kill
wait "$pid" 2>/dev/null || true
while [ -e "/proc/$worker" ]; do sleep 0.05; done
start "$T/hog2.out" "$PROGS/pidhog" "$worker"
hog=$PID
wait_line "$T/hog2.out" "^hog $worker\$"
restart_refused "$T/fam.ckpt" "pid $pid: its child, pid $worker (family), is in use by a process, 'pidhog': the parent knows it by that pid"
[ "$(wc -l <"$T/refused.out")" = 1 ] || fail "the refusal is not one line: $(cat "$T/refused.out")"
[ ! -e "/proc/$pid" ] || fail "pid $pid runs after the refused restore: $(cat "/proc/$pid/comm")"
kill -9 "$worker"	# the hog's child holds it; the hog then exits
wait "$hog" 2>/dev/null || true
while [ -e "/proc/$worker" ]; do sleep 0.05; done
n=$(last_tick "$T/fam.out")
restart "$T/fam.ckpt"
expect_pid "$pid" "$RPID"
[ "$(children_of "$RPID")" = "$worker" ] || fail "the worker is not $worker: $(children_of "$RPID")"
wait "$LPID" || fail "the restored family exited with status $?"
grep -q FAIL "$T/fam.out" && fail "family failed: $(grep FAIL "$T/fam.out")"
exit 0
