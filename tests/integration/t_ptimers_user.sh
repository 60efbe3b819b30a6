#!/usr/bin/env bash
# POSIX timers as an ordinary user (nobody): the program of t_ptimers,
# checkpointed with --kill and restored by nobody (new pid and TIDs: the
# thread-directed timer follows its thread), checks every timer by its id
# and exits cleanly on SIGUSR1.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test drops from root to nobody; run it as root"
chmod 755 "$T"
cat >"$T/job.sh" <<EOS
cd "$T"
"$PROGS/clean-exec" "$PROGS/ptimers" 100 </dev/null >prog.out 2>&1 &
pid=\$!
while ! grep -q '^tick 2 ' prog.out 2>/dev/null; do sleep 0.05; done
"$SAVER" --kill -o img.ckpt \$pid 2>saver.err || exit 10
wait \$pid
"$LOADER" --new-pids img.ckpt 2>loader.err &
lpid=\$!
n=\$(grep -c '^tick' prog.out)
while [ "\$(grep -c '^tick' prog.out)" -lt \$((n + 3)) ]; do
	grep -q FAIL prog.out && exit 11
	kill -0 \$lpid 2>/dev/null || { wait \$lpid; echo "restart-loader exited with status \$?" >>loader.err; exit 11; }
	sleep 0.05
done
rpid=\$(sed -n 's/^tick [0-9]* pid \([0-9]*\) .*/\1/p' prog.out | tail -n 1)
[ "\$rpid" != "\$pid" ] || exit 12
kill -USR1 \$rpid
wait \$lpid || exit 11
EOS
chown -R 65534:65534 "$T"
timeout 60 "$PROGS/runas" 65534 65534 bash "$T/job.sh" </dev/null 3>&- ||
	fail "nobody: checkpoint/restart failed (status $?: 10 saver, 11 loader or program, 12 no restore): $(cat "$T"/*.err; tail -n 3 "$T/prog.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "the restored program did not finish: $(tail -n 3 "$T/prog.out")"
exit 0
