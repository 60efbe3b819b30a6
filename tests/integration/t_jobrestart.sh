#!/usr/bin/env bash
# A job over two "nodes" (two addresses, 192.0.2.1 and .2, on lo of a
# network namespace of the test's own): a TCP connection's two ends are
# checkpointed by two savers as one cut (--barrier, ibcr-job's engine) and
# restarted by two restart-loaders as one restart (restart-loader
# --barrier), each on the other's address (--addr-map). A loader that made
# its end waits at the barrier until the other's end exists too (leaving
# repair mode sends a window probe, which a host without that end answers
# with a reset): nothing runs meanwhile. A node whose restart fails stops
# the other's before any process is made. Then both ends come back and the
# connection goes on to the end, every record checked.
if [ -z "${IBCR_T_NETNS:-}" ]; then
	IBCR_T_NETNS=1 exec unshare -n bash "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" "$@"
fi
. "$(dirname "$0")/lib.sh"
JOB=$TOP/tools/ibcr-job
ip link set lo up
ip addr add 192.0.2.1/32 dev lo
ip addr add 192.0.2.2/32 dev lo
MAP="--addr-map 192.0.2.1=192.0.2.2 --addr-map 192.0.2.2=192.0.2.1"

start "$T/prog.out" "$PROGS/tcppair" 40 192.0.2.1 192.0.2.2
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
client=$(sed -n 's/^client pid //p' "$T/prog.out")
for r in 1 2; do
	p=$pid
	[ $r = 2 ] && p=$client
	"$SAVER" --kill --barrier "$JOB barrier -D $T/cut -n 2 -r $r" -o "$T/img.$r" "$p" \
		2>"$T/saver.$r.err" &
	eval "sp$r=\$!"
done
wait "$sp1" || fail "saver of the server failed: $(cat "$T/saver.1.err")"
wait "$sp2" || fail "saver of the client failed: $(cat "$T/saver.2.err")"
wait "$pid" 2>/dev/null || true
while [ -e "/proc/$client" ]; do sleep 0.05; done
n=$(grep -c '^tick' "$T/prog.out")

# node 2's restart fails (no such image): node 1's stops at the barrier,
# having made nothing run
"$LOADER" $MAP --barrier "$JOB barrier -D $T/r0 -n 2 -r 1" "$T/img.1" >"$T/l1.out" 2>&1 &
l1=$!
while [ ! -e "$T/r0/sockets.1" ] && kill -0 "$l1" 2>/dev/null; do sleep 0.05; done
[ -e "$T/r0/sockets.1" ] || fail "node 1's loader did not reach the barrier: $(cat "$T/l1.out")"
kill -0 "$l1" 2>/dev/null || fail "node 1's loader did not wait at the barrier: $(cat "$T/l1.out")"
[ "$(grep -c '^tick' "$T/prog.out")" = "$n" ] || fail "the server ran before the other node's end was made"
rc=0
"$LOADER" $MAP --barrier "$JOB barrier -D $T/r0 -n 2 -r 2" "$T/missing.ckpt" >"$T/l2.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "node 2's loader of a missing image: status $rc: $(cat "$T/l2.out")"
rc=0
wait "$l1" || rc=$?
[ "$rc" = 1 ] || fail "node 1's loader went on after node 2 failed: status $rc: $(cat "$T/l1.out")"
grep -q "the job's restart was abandoned at barrier 'sockets': node 2: it failed" "$T/l1.out" ||
	fail "node 1's loader does not say that node 2 failed: $(cat "$T/l1.out")"
[ "$(grep -c '^tick' "$T/prog.out")" = "$n" ] || fail "a process ran in the failed restart"
[ ! -e "/proc/$pid" ] || fail "the server runs after the failed restart"

# the restart: node 1 waits for node 2, then both go on
"$LOADER" $MAP --barrier "$JOB barrier -D $T/r1 -n 2 -r 1" "$T/img.1" >"$T/l1.out" 2>&1 &
l1=$!
STARTED+=("$l1")
while [ ! -e "$T/r1/sockets.1" ] && kill -0 "$l1" 2>/dev/null; do sleep 0.05; done
[ "$(grep -c '^tick' "$T/prog.out")" = "$n" ] || fail "the server ran before the other node's end was made"
"$LOADER" $MAP --barrier "$JOB barrier -D $T/r1 -n 2 -r 2" "$T/img.2" >"$T/l2.out" 2>&1 &
l2=$!
STARTED+=("$l2")
wait "$l1" || fail "node 1's restart-loader: status $?: $(cat "$T/l1.out")"
wait "$l2" || fail "node 2's restart-loader: status $?: $(cat "$T/l2.out")"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out" | head -3)"
grep -q '^DONE' "$T/prog.out" || fail "the server did not finish"
grep -q '^CLIENT DONE' "$T/prog.out" || fail "the client did not finish"
assert_ticks_continuous "$T/prog.out"
grep '^tick' "$T/prog.out" | tail -n 1 | holds ' conn 192\.0\.2\.2:[0-9]*->192\.0\.2\.1:' ||
	fail "the connection did not move: $(grep '^tick' "$T/prog.out" | tail -n 1)"
exit 0
