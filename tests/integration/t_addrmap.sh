#!/usr/bin/env bash
# restart-loader --addr-map: a TCP connection between two hosts' addresses
# (192.0.2.1 and .2, both on lo of a network namespace of the test's own)
# is restored with the two addresses swapped, as when the two ends of a
# job's connection are each restarted on the other's node: both ends'
# 4-tuples are rewritten alike, not a record is lost, doubled or out of
# order, and the connection goes on to the end. Without the map the same
# image comes back on the old addresses; a map of the wildcard address or
# between families is refused before anything runs.
if [ -z "${IBCR_T_NETNS:-}" ]; then
	IBCR_T_NETNS=1 exec unshare -n bash "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" "$@"
fi
. "$(dirname "$0")/lib.sh"
ip link set lo up
ip addr add 192.0.2.1/32 dev lo
ip addr add 192.0.2.2/32 dev lo

start "$T/prog.out" "$PROGS/tcppair" 40 192.0.2.1 192.0.2.2
pid=$PID
wait_line "$T/prog.out" '^tick 5 '
grep -q '^tick 5 .* conn 192\.0\.2\.1:[0-9]*->192\.0\.2\.2:' "$T/prog.out" ||
	fail "the connection is not 192.0.2.1 -> 192.0.2.2: $(grep '^tick 5 ' "$T/prog.out")"
client=$(sed -n 's/^client pid //p' "$T/prog.out")
checkpoint "$pid" "$T/img.ckpt" --kill "$client"
wait "$pid" 2>/dev/null || true
while [ -e "/proc/$client" ]; do sleep 0.05; done
n=$(grep -c '^tick' "$T/prog.out")
first=$(grep -n '^tick' "$T/prog.out" | sed -n "${n}s/:.*//p")

# refused before anything runs: the loader's usage errors
for m in 0.0.0.0=192.0.2.1 192.0.2.1=::1 192.0.2.1; do
	rc=0
	"$LOADER" --addr-map "$m" "$T/img.ckpt" >"$T/refused.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] || fail "--addr-map $m: exit status $rc, not 2: $(cat "$T/refused.out")"
	grep -q -- "--addr-map $m:" "$T/refused.out" ||
		fail "--addr-map $m: no message naming it: $(cat "$T/refused.out")"
done
[ "$(grep -c '^tick' "$T/prog.out")" = "$n" ] || fail "a refused restore ran the program"

LOADER_ARGS="--addr-map 192.0.2.1=192.0.2.2 --addr-map 192.0.2.2=192.0.2.1" restart "$T/img.ckpt"
wait "$LPID" || fail "restored program exited with status $?"
grep -q FAIL "$T/prog.out" && fail "$(grep FAIL "$T/prog.out" | head -3)"
grep -q '^DONE' "$T/prog.out" || fail "program did not finish"
while [ -e "/proc/$client" ]; do sleep 0.05; done
grep -q '^CLIENT DONE' "$T/prog.out" || fail "the client did not finish"
assert_ticks_continuous "$T/prog.out"
[ "$(pids_in "$T/prog.out")" = "$pid" ] || fail "the server's pid changed: $(pids_in "$T/prog.out")"
# the ends' addresses are swapped, their ports kept
old=$(sed -n "$first"'s/.* conn 192\.0\.2\.1:\([0-9]*\)->192\.0\.2\.2:\([0-9]*\)$/\1 \2/p' "$T/prog.out")
[ -n "$old" ] || fail "no connection named in the last tick before the checkpoint"
last=$(grep '^tick' "$T/prog.out" | tail -n 1)
set -- $old
case $last in
*" conn 192.0.2.2:$1->192.0.2.1:$2") ;;
*) fail "after the restart the connection is not 192.0.2.2:$1->192.0.2.1:$2: $last" ;;
esac
exit 0
