#!/usr/bin/env bash
# ibcr-job's PMIx engine (ibcr-pmix) between two "nodes": two ranks that
# Open MPI's mpirun starts with its PMIx server, each with its own node
# agent (ibcr-pmix serve) and its own process.
#   1. node 1's image path is a directory: its saver fails before doing
#      anything, its abort goes out in one fence, and node 0's saver fails
#      at its first barrier at once, naming node 1 and why, leaves no image,
#      and its process runs on unharmed.
#   2. both processes checkpointed with --kill as one cut (2 fences per
#      node: sends, written), then restarted as one restart: the
#      addresses and host names exchanged all-to-all in ONE fence (not one
#      per key), then the loaders' 'sockets' barrier: 2 fences per node;
#      both counters go on to their end, every tick checked.
. "$(dirname "$0")/lib.sh"
PMIX=$B/ibcr-pmix
[ -x "$PMIX" ] || fail "$PMIX is not built (libpmix-dev: tools/deps.sh check)"
command -v mpirun >/dev/null || fail "no mpirun (openmpi-bin: tools/deps.sh check)"
export IBCR_JOB_TIMEOUT=100	# what node 0 must not wait for

# The node agent, run by mpirun as rank R: $T/node.sh MODE
cat >"$T/node.sh" <<EOF
#!/usr/bin/env bash
r=\$PMIX_RANK
s=$T/sock.\$r
serve() {
	IBCR_PMIX_STATS=$T/\$1.stats.\$r "$PMIX" serve "\$s" "\$2" >"$T/\$1.serve.\$r.out" 2>&1 &
	while [ ! -S "\$s" ]; do
		kill -0 \$! 2>/dev/null || { echo "no agent: \$(cat "$T/\$1.serve.\$r.out")"; exit 1; }
		sleep 0.05
	done
}
case \$1 in
abort)
	serve abort sends,written
	img=$T/img.\$r
	[ \$r = 1 ] && mkdir -p "\$img"
	"$SAVER" --kill --barrier "$PMIX -s \$s" -o "\$img" "\$(cat "$T/pid.\$r")" 2>"$T/abort.saver.\$r.err"
	echo \$? >"$T/abort.rc.\$r" ;;
ckpt)
	serve ckpt sends,written
	"$SAVER" --kill --barrier "$PMIX -s \$s" -o "$T/img.\$r" "\$(cat "$T/pid.\$r")" 2>"$T/ckpt.saver.\$r.err"
	echo \$? >"$T/ckpt.rc.\$r" ;;
restart)
	serve restart addrs,sockets
	{ "$PMIX" -s "\$s" put addr 192.0.2.\$r && "$PMIX" -s "\$s" put host node\$r &&
		"$PMIX" -s "\$s" addrs && "$PMIX" -s "\$s" get addr &&
		"$PMIX" -s "\$s" get host; } >"$T/exchange.\$r.out" 2>&1 || exit 1
	"$LOADER" --barrier "$PMIX -s \$s" "$T/img.\$r" >"$T/loader.\$r.out" 2>&1
	echo \$? >"$T/restart.rc.\$r" ;;
esac
wait
EOF
chmod +x "$T/node.sh"
mpi() {	# MODE: both ranks; mpirun's own status is the ranks' (checked apart)
	timeout 200 mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self \
		"$T/node.sh" "$1" >"$T/mpirun.$1.out" 2>&1 || true
}
stats() {	# MODE RANK: the fences the agent made
	sed -n 's/^fences //p' "$T/$1.stats.$2" 2>/dev/null
}

# 1. a failure on node 1 aborts the whole checkpoint
start "$T/a0.out" "$PROGS/counter" 1000 50
echo "$PID" >"$T/pid.0"
start "$T/a1.out" "$PROGS/counter" 1000 50
echo "$PID" >"$T/pid.1"
wait_line "$T/a0.out" '^tick 3 '
wait_line "$T/a1.out" '^tick 3 '
t0=$SECONDS
mpi abort
((SECONDS - t0 < 60)) || fail "node 0's saver waited $((SECONDS - t0)) s for a node that had failed"
[ "$(cat "$T/abort.rc.1" 2>/dev/null)" = 1 ] ||
	fail "node 1's saver of a directory: $(cat "$T/abort.saver.1.err" "$T/mpirun.abort.out")"
[ "$(cat "$T/abort.rc.0" 2>/dev/null)" = 1 ] ||
	fail "node 0's saver went on after node 1 failed: $(cat "$T/abort.saver.0.err" "$T/mpirun.abort.out")"
grep -q "the job's checkpoint was abandoned at barrier 'sends': node 1: image $T/img.1: is a directory" \
	"$T/abort.saver.0.err" || fail "node 0's saver does not say that node 1 failed: $(cat "$T/abort.saver.0.err")"
[ ! -e "$T/img.0" ] || fail "node 0 left an image"
[ "$(stats abort 0)/$(stats abort 1)" = 1/1 ] ||
	fail "fences for the abort: node 0 $(stats abort 0), node 1 $(stats abort 1), want 1 each"
for r in 0 1; do
	n=$(grep -c '^tick' "$T/a$r.out")
	wait_line "$T/a$r.out" "^tick $((n + 2)) "	# it runs on, unharmed
	grep -q FAIL "$T/a$r.out" && fail "process $r was harmed: $(grep FAIL "$T/a$r.out")"
	kill_tree "$(cat "$T/pid.$r")"
done
rmdir "$T/img.1"

# 2. one cut over both, then one restart with one exchange
for r in 0 1; do
	start "$T/c$r.out" "$PROGS/counter" 80 50
	echo "$PID" >"$T/pid.$r"
	wait_line "$T/c$r.out" '^tick 3 '
done
mpi ckpt
for r in 0 1; do
	[ "$(cat "$T/ckpt.rc.$r" 2>/dev/null)" = 0 ] ||
		fail "node $r's saver: $(cat "$T/ckpt.saver.$r.err" "$T/mpirun.ckpt.out")"
	[ -f "$T/img.$r" ] || fail "node $r left no image"
	[ "$(stats ckpt $r)" = 2 ] || fail "node $r: $(stats ckpt $r) fences for a checkpoint, want 2"
	p=$(cat "$T/pid.$r")
	while [ -e "/proc/$p" ]; do sleep 0.05; done
done
n0=$(grep -c '^tick' "$T/c0.out")
n1=$(grep -c '^tick' "$T/c1.out")
mpi restart
for r in 0 1; do
	[ "$(cat "$T/restart.rc.$r" 2>/dev/null)" = 0 ] ||
		fail "node $r's restart: $(cat "$T/loader.$r.out" "$T/exchange.$r.out" "$T/mpirun.restart.out")"
	[ "$(stats restart $r)" = 2 ] ||
		fail "node $r: $(stats restart $r) fences for a restart with 2 keys exchanged, want 2"
	[ "$(tr '\n' ' ' <"$T/exchange.$r.out")" = "0 192.0.2.0 1 192.0.2.1 0 node0 1 node1 " ] ||
		fail "node $r's exchange: $(cat "$T/exchange.$r.out")"
done
[ "$(grep -c '^tick' "$T/c0.out")" -gt "$n0" ] || fail "process 0 did not run on after the restart"
[ "$(grep -c '^tick' "$T/c1.out")" -gt "$n1" ] || fail "process 1 did not run on after the restart"
grep -q '^tick 79 ' "$T/c0.out" || fail "process 0 did not reach its end: $(tail -n 2 "$T/c0.out")"
grep -q '^tick 79 ' "$T/c1.out" || fail "process 1 did not reach its end: $(tail -n 2 "$T/c1.out")"
grep -q FAIL "$T/c0.out" "$T/c1.out" && fail "a restored process found its state wrong"
exit 0
