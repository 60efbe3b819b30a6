#!/usr/bin/env bash
# The socket behaviours an ordinary user's program has, checkpointed and
# restored by that user (nobody, no privilege): UNIX sockets with
# datagrams and senders, shut down directions, a closed end with bytes
# pending, connections not accepted yet, descriptors in flight
# (tests/progs/unixmore), and UDP datagrams waiting (tests/progs/udpqueue,
# sent again by the image's own sender sockets). Credentials in flight are
# root's to give back (SCM_CREDENTIALS with another pid): not here.
. "$(dirname "$0")/lib.sh"
is_root || fail "this test drops from root to nobody; run it as root"
chmod 755 "$T"
cat >"$T/job.sh" <<EOS
cd "$T"
for fd in /proc/\$\$/fd/*; do fd=\${fd##*/}; [ \$fd -gt 2 ] && eval "exec \$fd>&-"; done
one() {	# one NAME PROGRAM ARGS...: run, save with --kill, restore, finish
	local name=\$1 pid lpid
	shift
	"\$@" >\$name.out 2>&1 </dev/null &
	pid=\$!
	while ! grep -qE '^(tick 2 |FAIL)' \$name.out 2>/dev/null; do sleep 0.05; done
	"$SAVER" --kill -o \$name.ckpt \$pid 2>\$name.saver || { echo "\$name: saver: \$(cat \$name.saver)"; return 1; }
	wait \$pid
	"$LOADER" --new-pids \$name.ckpt >>\$name.out 2>\$name.loader || { echo "\$name: restore: \$(cat \$name.loader) \$(grep FAIL \$name.out)"; return 1; }
	grep -q '^DONE' \$name.out || { echo "\$name: did not finish: \$(tail -2 \$name.out)"; return 1; }
}
st=0
for m in dgram-bound dgram-deleted half-closed peer-closed pending rights; do
	mkdir \$m
	one \$m "$PROGS/unixmore" \$m "$T/\$m" 20 50 || st=1
done
one udp "$PROGS/udpqueue" 20 50 || st=1
exit \$st
EOS
chown -R 65534:65534 "$T"
out=$(timeout 120 "$PROGS/runas" 65534 65534 bash "$T/job.sh" </dev/null 3>&- 2>&1) ||
	fail "as an ordinary user: $out"
exit 0
