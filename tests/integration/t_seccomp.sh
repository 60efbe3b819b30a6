#!/usr/bin/env bash
# Seccomp filters come back as the kernel had them: a process whose main
# thread installed a filter, forked a child (which added its own, with
# SECCOMP_FILTER_FLAG_LOG), started two threads and installed a second
# filter with TSYNC, one thread adding a third of its own (tests/progs/
# seccomp.c), checks after a live checkpoint and after each of two
# checkpoint (--tree --kill) and restart cycles which calls fail with
# which errno in every thread of both processes; at its end a TSYNC
# proves that the threads share their filters (not copies). Its filters
# kill it on a call the saver makes inside it and refuse every munmap
# (the loader removes its restore area with one): neither may stop the
# checkpoint or the restore, nor harm the process. /proc shows the same
# seccomp state and the same memory layout afterwards. An ordinary user's
# saver cannot read filters: it refuses, naming the pid, and the process
# runs on unharmed.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test needs root (reading seccomp filters) and drops to nobody; run it as root"

# seccomp_of PID: each thread's seccomp state, the child's too
seccomp_of() {
	local p t
	for p in "$1" $(children_of "$1"); do
		for t in "/proc/$p/task/"*; do
			echo "process $p thread ${t##*/}"
			grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs):' "$t/status"
		done
	done
}

start "$T/prog.out" "$PROGS/seccomp" 120 100
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
wait_line "$T/prog.out" '^child tick 3$'
seccomp_of "$pid" >"$T/seccomp.before"
[ "$(grep -c 'Seccomp_filters:.*[1-9]' "$T/seccomp.before")" = 4 ] ||
	fail "expected 4 threads under filters: $(cat "$T/seccomp.before")"
maps "$pid" >"$T/maps.before"

# live: the process runs on, unharmed by what the saver did inside it
checkpoint "$pid" "$T/img0.ckpt" --tree
before=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((before + 3)) "
kill -0 "$pid" || fail "the process died of the live checkpoint"
grep FAIL "$T/prog.out" && fail "the live checkpoint changed the process"
grep -q 'seccomp: 3 filters' "$T/info.out" ||
	fail "ckpt-info shows no filters: $(grep -i seccomp "$T/info.out")"

# gone PID...: waits until no process has these pids (an orphan killed
# by saver --kill is reaped by init a moment later: its pid is taken
# until then)
gone() {
	local p i
	for p in "$@"; do
		for ((i = 0; i < 200; i++)); do [ -e "/proc/$p" ] || break; sleep 0.05; done
		[ ! -e "/proc/$p" ] || fail "pid $p still there 10 s after saver --kill"
	done
}

orig=$pid
for cycle in 1 2; do
	kids=$(children_of "$pid")
	checkpoint "$pid" "$T/img$cycle.ckpt" --tree --kill
	wait "$pid" 2>/dev/null || true
	[ -z "${LPID:-}" ] || wait "$LPID" 2>/dev/null || true
	gone "$pid" $kids
	before=$(last_tick "$T/prog.out")
	restart "$T/img$cycle.ckpt"
	expect_pid "$orig" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	grep FAIL "$T/prog.out" && fail "cycle $cycle: the program found its filters changed"
	seccomp_of "$RPID" >"$T/seccomp.after$cycle"
	# the child's pid is its own (kept as root); the order is the same
	diff <(sed 's/^process [0-9]* /process /' "$T/seccomp.before") \
		<(sed 's/^process [0-9]* /process /' "$T/seccomp.after$cycle") >"$T/seccomp.diff" ||
		fail "cycle $cycle: seccomp state changed: $(cat "$T/seccomp.diff")"
	maps "$RPID" >"$T/maps.after"
	diff "$T/maps.before" "$T/maps.after" >"$T/maps.diff" ||
		fail "cycle $cycle: memory layout changed (restore area left?): $(cat "$T/maps.diff")"
	pid=$RPID
done
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
assert_ticks_continuous "$T/prog.out"

# An ordinary user's saver: refused, the process unharmed.
chmod 755 "$T"
mkdir "$T/user"
cat >"$T/user/job.sh" <<EOS
cd "$T/user"
for fd in /proc/\$\$/fd/*; do fd=\${fd##*/}; [ \$fd -gt 2 ] && eval "exec \$fd>&-"; done
"$PROGS/seccomp" 30 50 >prog.out 2>&1 </dev/null &
pid=\$!
echo \$pid >pid
while ! grep -q '^tick 5 ' prog.out 2>/dev/null; do sleep 0.05; done
"$SAVER" --kill -o img.ckpt \$pid 2>saver.err && exit 10
wait \$pid || exit 12
EOS
chown -R 65534:65534 "$T/user"
timeout 60 "$PROGS/runas" 65534 65534 bash "$T/user/job.sh" </dev/null 3>&- ||
	fail "as a user (status $?: 10 the saver did not refuse, 12 the program failed): $(cat "$T"/user/*.err "$T/user/prog.out" 2>/dev/null)"
upid=$(cat "$T/user/pid")
grep -qE "^saver: pid $upid( thread [0-9]+)?: .*seccomp" "$T/user/saver.err" ||
	fail "the user's saver did not say why it refused: $(cat "$T/user/saver.err")"
[ "$(wc -l <"$T/user/saver.err")" = 1 ] || fail "more than one line: $(cat "$T/user/saver.err")"
[ ! -e "$T/user/img.ckpt" ] || fail "a refused checkpoint left an image"
grep -q FAIL "$T/user/prog.out" && fail "the refused checkpoint harmed the process: $(grep FAIL "$T/user/prog.out")"
grep -q '^DONE' "$T/user/prog.out" || fail "after the refusal the program did not finish"
exit 0
