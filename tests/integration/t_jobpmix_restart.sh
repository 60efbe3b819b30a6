#!/usr/bin/env bash
# ibcr-job's restart through PMIx between two "nodes": Open MPI's mpirun
# (with its PMIx server) starts `ibcr-job node-restart` as two ranks, each
# standing for one node of an allocation (SLURM_NODEID = its rank), as
# srun --mpi=pmix does. Two counters, checkpointed as one cut, are restored
# by the two nodes' agents: the address exchange and the 'sockets'
# barrier go through the node agents' PMIx fences (2 per node, the stats
# files), and each node's agent returns only once its restored process
# ended: when mpirun returns, both counters reached their end, every tick
# checked by the program.
. "$(dirname "$0")/lib.sh"
JOB=$TOP/tools/ibcr-job
[ -x "$B/ibcr-pmix" ] || fail "$B/ibcr-pmix is not built (libpmix-dev: tools/deps.sh check)"
command -v mpirun >/dev/null || fail "no mpirun (openmpi-bin: tools/deps.sh check)"
export IBCR_JOB_TIMEOUT=100
D=$T/ckpt
mkdir -p "$D"
# the "nodes" are this host: the old addresses are the new ones (no map)
ADDR=$(ip -4 -o addr show scope global | awk '{ sub("/.*", "", $4); print $4; exit }')
[ -n "$ADDR" ] || ADDR=192.0.2.9

for r in 0 1; do
	start "$T/c$r.out" "$PROGS/counter" 60 50
	echo "$PID" >"$T/pid.$r"
done
for r in 0 1; do
	wait_line "$T/c$r.out" '^tick 3 '
	"$SAVER" --kill --barrier "$JOB barrier -D $T/cut -n 2 -r $r" -o "$D/img.$r" \
		"$(cat "$T/pid.$r")" 2>"$T/saver.$r.err" &
	eval "sp$r=\$!"
	printf 'host node%s\naddr %s\n' "$r" "$ADDR" >"$D/node.$r"
done
wait "$sp0" || fail "node 0's saver: $(cat "$T/saver.0.err")"
wait "$sp1" || fail "node 1's saver: $(cat "$T/saver.1.err")"
for r in 0 1; do
	p=$(cat "$T/pid.$r")
	while [ -e "/proc/$p" ]; do sleep 0.05; done
done

cat >"$T/node.sh" <<EOF
#!/usr/bin/env bash
export SLURM_NODEID=\$PMIX_RANK SLURM_NNODES=2
exec "$JOB" node-restart -D "$D" -a "$T/attempt" >"$T/node.\$PMIX_RANK.out" 2>&1
EOF
chmod +x "$T/node.sh"
mkdir -p "$T/attempt"
rc=0
timeout 200 mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self \
	"$T/node.sh" >"$T/mpirun.out" 2>&1 || rc=$?
for r in 0 1; do
	grep -q '^tick 59 ' "$T/c$r.out" ||
		fail "the node agents returned (mpirun status $rc) before process $r ended: $(tail -n 1 "$T/c$r.out"); $(cat "$T/node.$r.out")"
	f=$T/attempt/pmix-stats.$r
	[ "$(sed -n "s/^fences //p" "$f" 2>/dev/null)" = 2 ] ||
		fail "node $r's restart: '$(cat "$f" 2>/dev/null)' in $f, want 'fences 2' (address exchange, sockets)"
done
[ "$rc" = 0 ] || fail "mpirun: status $rc: $(cat "$T/mpirun.out" "$T"/node.*.out)"
grep -q FAIL "$T/c0.out" "$T/c1.out" && fail "a restored process found its state wrong"
exit 0
