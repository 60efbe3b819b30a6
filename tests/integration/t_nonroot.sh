#!/usr/bin/env bash
# An unprivileged user checkpoints and restores its own process. The pid
# cannot be chosen: the restore is refused in one line that says so and
# names the way out, and nothing runs; with --new-pids the program
# continues under a new pid (said once on stderr) with its memory intact
# and the restore area removed.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test drops from root to nobody; run it as root"
chmod 755 "$T"
cp "$PROGS/counter" "$T/counter"
cat >"$T/job.sh" <<EOS
cd "$T"
for fd in /proc/\$\$/fd/*; do fd=\${fd##*/}; [ \$fd -gt 2 ] && eval "exec \$fd>&-"; done
./counter 40 50 >prog.out 2>&1 </dev/null &
pid=\$!
while ! grep -q '^tick 5 ' prog.out 2>/dev/null; do sleep 0.05; done
awk '{print \$1, \$2, \$6}' /proc/\$pid/maps >maps.before
"$SAVER" --kill -o img.ckpt \$pid 2>saver.err || exit 10
wait \$pid
n=\$(wc -l <prog.out)
"$LOADER" img.ckpt 2>refused.err && exit 13
sleep 0.5
[ "\$(wc -l <prog.out)" = "\$n" ] || exit 14
"$LOADER" --new-pids img.ckpt 2>loader.err &
lpid=\$!
while ! grep -q '^tick 20 ' prog.out 2>/dev/null; do sleep 0.05; done
# the restored process says its new pid (no pgrep in the arm64 guest)
rpid=\$(sed -n 's/^tick 20 pid \([0-9]*\)\$/\1/p' prog.out)
awk '{print \$1, \$2, \$6}' /proc/\$rpid/maps >maps.after
diff maps.before maps.after >maps.diff || exit 11
wait \$lpid || exit 12
EOS
chown -R 65534:65534 "$T"
timeout 60 "$PROGS/runas" 65534 65534 bash "$T/job.sh" </dev/null 3>&- ||
	fail "unprivileged checkpoint/restart failed (status $?: 10 saver, 11 layout, 12 program, 13 not refused, 14 refused but ran): $(cat "$T"/*.err "$T"/maps.diff 2>/dev/null)"
[ "$(wc -l <"$T/refused.err")" = 1 ] && holds -F "not permitted to choose its pid (needs root or CAP_CHECKPOINT_RESTORE) (restore with --pid-ns, or accept a new one with --new-pids)" <"$T/refused.err" ||
	fail "the refusal is not one line naming the cause and the options: $(cat "$T/refused.err")"
grep -qE "restored as pid [0-9]+" "$T/loader.err" || fail "loader did not say the pid changed"
[ "$(grep -cE 'restored as pid [0-9]+' "$T/loader.err")" = 1 ] || fail "said more than once"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
grep -q FAIL "$T/prog.out" && fail "program found its memory changed"
assert_ticks_continuous "$T/prog.out"
[ "$(pids_in "$T/prog.out" | wc -l)" = 2 ] || fail "expected a new pid after restore"
exit 0
