#!/usr/bin/env bash
# The forked tree of t_cowtree checkpointed and restored by an ordinary
# user: the kernel hides page frames from it, so no page is found shared
# and each process keeps all its pages; every process must still see
# exactly its own view (each checks every tick, and every word at the
# end). Restored in a PID namespace of its own (--pid-ns): an ordinary
# user cannot choose the child's pid otherwise, and a child under
# another pid is refused (its parent knows it by its pid).
. "$(dirname "$0")/lib.sh"
is_root || fail "this test drops from root to nobody; run it as root"
chmod 755 "$T"
cp "$PROGS/cowtree" "$T/cowtree"
cat >"$T/job.sh" <<EOS
cd "$T"
for fd in /proc/\$\$/fd/*; do fd=\${fd##*/}; [ \$fd -gt 2 ] && eval "exec \$fd>&-"; done
./cowtree 100000 50 16 4 >prog.out 2>&1 </dev/null &
pid=\$!
while ! grep -q '^tick 5 ' prog.out 2>/dev/null; do sleep 0.05; done
"$SAVER" --tree --kill -o img.ckpt \$pid 2>saver.err || exit 10
wait \$pid
"$INFO" img.ckpt >info.out 2>&1 || exit 11
"$LOADER" --pid-ns img.ckpt 2>loader.err &
lpid=\$!
last=\$(sed -n 's/^tick \([0-9]*\) .*/\1/p' prog.out | tail -n 1)
while ! grep -q "^tick \$((last + 5)) " prog.out 2>/dev/null; do
	kill -0 \$lpid 2>/dev/null || exit 12
	sleep 0.05
done
kill -USR1 \$lpid	# the loader passes it on to the root
wait \$lpid || exit 13
EOS
chown -R 65534:65534 "$T"
timeout 120 "$PROGS/runas" 65534 65534 bash "$T/job.sh" </dev/null 3>&- ||
	fail "unprivileged tree checkpoint/restart failed (status $?: 10 saver, 11 ckpt-info, 12 loader gone, 13 tree's status): $(cat "$T"/*.err 2>/dev/null; grep FAIL "$T/prog.out")"
grep -q '+cow' "$T/info.out" && fail "pages were found shared without page frames: $(grep -c '+cow' "$T/info.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out")"
grep -q '^DONE' "$T/prog.out" || fail "the tree did not finish"
assert_ticks_continuous "$T/prog.out"
[ "$(pids_in "$T/prog.out" | wc -l)" = 1 ] || fail "not the saved pid in the namespace: $(pids_in "$T/prog.out" | tr '\n' ' ')"
exit 0
