#!/usr/bin/env bash
# Seccomp strict mode: a worker thread in strict mode (only read, write,
# _exit and rt_sigreturn allowed; any other call kills it) next to a main
# thread that is not (tests/progs/strict.c). A checkpoint runs nothing
# inside a strict thread unprotected (once that killed it): after a live
# checkpoint it runs on; after each of two checkpoint (--kill) and
# restart cycles the worker is in strict mode again and still dies of the
# forbidden call it makes at the end, which the program reports. An
# ordinary user's saver cannot protect it: it refuses, naming the pid,
# the thread and strict mode, and the process runs on unharmed.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test needs root (PTRACE_O_SUSPEND_SECCOMP) and drops to nobody; run it as root"

modes_of() {
	local t
	for t in "/proc/$1/task/"*; do grep '^Seccomp:' "$t/status"; done
}

start "$T/prog.out" "$PROGS/strict" 80 100
pid=$PID
wait_line "$T/prog.out" '^tick 3 '
modes_of "$pid" >"$T/modes.before"
[ "$(sort "$T/modes.before" | tr -d '\t ' | tr '\n' ' ')" = "Seccomp:0 Seccomp:1 " ] ||
	fail "expected one thread in strict mode: $(cat "$T/modes.before")"

checkpoint "$pid" "$T/img0.ckpt"
before=$(last_tick "$T/prog.out")
wait_line "$T/prog.out" "^tick $((before + 3)) "
grep FAIL "$T/prog.out" && fail "the live checkpoint harmed the process"
grep -q 'seccomp: strict' "$T/info.out" ||
	fail "ckpt-info does not show strict mode: $(grep -i seccomp "$T/info.out")"

orig=$pid
for cycle in 1 2; do
	checkpoint "$pid" "$T/img$cycle.ckpt" --kill
	wait "$pid" 2>/dev/null || true
	[ -z "${LPID:-}" ] || wait "$LPID" 2>/dev/null || true
	before=$(last_tick "$T/prog.out")
	restart "$T/img$cycle.ckpt"
	expect_pid "$orig" "$RPID"
	wait_line "$T/prog.out" "^tick $((before + 3)) "
	grep FAIL "$T/prog.out" && fail "cycle $cycle: $(grep FAIL "$T/prog.out")"
	modes_of "$RPID" >"$T/modes.after"
	diff "$T/modes.before" "$T/modes.after" >"$T/modes.diff" ||
		fail "cycle $cycle: seccomp modes changed: $(cat "$T/modes.diff")"
	pid=$RPID
done
wait "$LPID" || fail "restored program exited with status $?: $(grep FAIL "$T/prog.out")"
grep -q '^DONE .* strict held' "$T/prog.out" || fail "program did not finish with strict mode held"

# An ordinary user's saver: refused, the process unharmed.
chmod 755 "$T"
mkdir "$T/user"
cat >"$T/user/job.sh" <<EOS
cd "$T/user"
for fd in /proc/\$\$/fd/*; do fd=\${fd##*/}; [ \$fd -gt 2 ] && eval "exec \$fd>&-"; done
"$PROGS/strict" 30 50 >prog.out 2>&1 </dev/null &
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
grep -qE "^saver: pid $upid thread [0-9]+: .*strict" "$T/user/saver.err" ||
	fail "the user's saver did not say why it refused: $(cat "$T/user/saver.err")"
[ "$(wc -l <"$T/user/saver.err")" = 1 ] || fail "more than one line: $(cat "$T/user/saver.err")"
[ ! -e "$T/user/img.ckpt" ] || fail "a refused checkpoint left an image"
grep -q FAIL "$T/user/prog.out" && fail "the refused checkpoint harmed the process: $(grep FAIL "$T/user/prog.out")"
grep -q '^DONE .* strict held' "$T/user/prog.out" || fail "after the refusal the program did not finish"
exit 0
