#!/usr/bin/env bash
# An ordinary user restores its own process with its original PID in a
# PID namespace of the restore's own: restart-loader --pid-ns, and the
# same by hand with unshare -cpf --keep-caps --mount-proc. As the root of
# a user namespace (unshare -Urpf) the saved uid is not mapped: refused,
# saying how to do it instead. Where the kernel forbids user namespaces
# (here: user.max_user_namespaces=0 in a namespace of the test's own, no
# capabilities) --pid-ns is refused with the reason, and the same image
# restores afterwards: nothing was changed.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test drops from root to nobody; run it as root"
chmod 755 "$T"
cp "$PROGS/counter" "$T/counter"
cat >"$T/job.sh" <<EOS
cd "$T"
for fd in /proc/\$\$/fd/*; do fd=\${fd##*/}; [ \$fd -gt 2 ] && eval "exec \$fd>&-"; done
# saved NAME: counter checkpointed (--kill) into NAME.ckpt, ticking into NAME.out
saved() {
	./counter 40 50 >\$1.out 2>&1 </dev/null &
	local pid=\$!
	while ! grep -q '^tick 5 ' \$1.out 2>/dev/null; do sleep 0.05; done
	echo \$pid >\$1.pid
	"$SAVER" --kill -o \$1.ckpt \$pid 2>\$1.saver.err || exit 10
	wait \$pid
}
saved a
timeout 60 "$LOADER" --pid-ns a.ckpt 2>a.err || exit 11
saved b
timeout 60 unshare -cpf --keep-caps --mount-proc "$LOADER" b.ckpt 2>b.err || exit 12
saved c
cp c.out c.before
timeout 60 unshare -Urpf --mount-proc "$LOADER" c.ckpt >c.refused 2>&1 && exit 13
saved d
timeout 60 unshare -Ur sh -c 'echo 0 >/proc/sys/user/max_user_namespaces &&
	exec setpriv --securebits +noroot,+noroot_locked --bounding-set -all --inh-caps -all \
	"$LOADER" --pid-ns d.ckpt' >d.refused 2>&1 && exit 14
[ "\$(cat /proc/sys/user/max_user_namespaces)" != 0 ] || exit 15
timeout 60 "$LOADER" --pid-ns d.ckpt 2>d.err || exit 16
exit 0
EOS
chown -R 65534:65534 "$T"
st=0
timeout 300 "$PROGS/runas" 65534 65534 bash "$T/job.sh" </dev/null 3>&- || st=$?
[ "$st" = 0 ] || fail "the user's job failed (status $st: 10 saver, 11 --pid-ns, 12 unshare -c," \
	"13 unshare -r restored, 14 a forbidden namespace restored, 15 the limit leaked," \
	"16 restore after the refusal): $(cat "$T"/*.err "$T"/*.refused 2>/dev/null)"
for n in a b d; do
	pid=$(cat "$T/$n.pid")
	[ "$(pids_in "$T/$n.out")" = "$pid" ] ||
		fail "$n: pids $(pids_in "$T/$n.out" | tr '\n' ' ')where only the original $pid should be"
	grep -q "^DONE pid $pid\$" "$T/$n.out" || fail "$n: the program did not finish as $pid"
	grep -q FAIL "$T/$n.out" && fail "$n: the program found its memory changed"
	grep -q 'new pid' "$T/$n.err" && fail "$n: the loader said the pid changed"
	assert_ticks_continuous "$T/$n.out"
done
grep -q "ran as uid 65534, which this user namespace does not map" "$T/c.refused" ||
	fail "unshare -r: no clear refusal: $(cat "$T/c.refused")"
cmp -s "$T/c.out" "$T/c.before" || fail "unshare -r: the refused restore ran"
grep -q "refuses a new user namespace: user.max_user_namespaces" "$T/d.refused" ||
	fail "a forbidden user namespace: no clear refusal: $(cat "$T/d.refused")"
exit 0
