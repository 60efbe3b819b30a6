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
# Then the verbs id exchange's carrier: each node's agent sends the files
# of its node-local rendezvous directory that a round names (putdir) in
# ONE fence and writes every other node's into its own (getdir): exactly
# those files, byte for byte, not the marks or the other round's.
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
export SLURM_NODEID=\$PMIX_RANK SLURM_NNODES=2 TMPDIR=$T	# the agents' files here
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

# the files of a round, through one fence
cat >"$T/dir.sh" <<EOF
#!/usr/bin/env bash
r=\$PMIX_RANK d=$T/rdv.\$PMIX_RANK s=$T/dsock.\$PMIX_RANK
mkdir -p "\$d"
printf 'ibcr-verbs-rendezvous 1\nqp %s 7\nend\n' "\$r" >"\$d/rc-from-\$r"
head -c 3000 /dev/urandom | base64 >"\$d/rc-big-\$r"
: >"\$d/mark-rc-\$r"
echo other >"\$d/ready-from-\$r"
echo tmp >"\$d/.tmp.rc-x-\$r"
IBCR_PMIX_STATS=$T/dir.stats.\$r "$B/ibcr-pmix" serve "\$s" >"$T/dir.serve.\$r.out" 2>&1 &
while [ ! -S "\$s" ]; do
	kill -0 \$! 2>/dev/null || { echo "no agent: \$(cat "$T/dir.serve.\$r.out")"; exit 1; }
	sleep 0.05
done
{ "$B/ibcr-pmix" -s "\$s" putdir verbs-rc "\$d" rc- && "$B/ibcr-pmix" -s "\$s" verbs-rc &&
	"$B/ibcr-pmix" -s "\$s" getdir verbs-rc "\$d" && "$B/ibcr-pmix" -s "\$s" end; } \
	>"$T/dir.\$r.out" 2>&1
echo \$? >"$T/dir.rc.\$r"
wait
EOF
chmod +x "$T/dir.sh"
timeout 200 mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self \
	"$T/dir.sh" >"$T/mpirun.dir.out" 2>&1 || true
for r in 0 1; do
	o=$((1 - r))
	[ "$(cat "$T/dir.rc.$r" 2>/dev/null)" = 0 ] ||
		fail "node $r's exchange of files: $(cat "$T/dir.$r.out" "$T/mpirun.dir.out")"
	for f in rc-from-$o rc-big-$o; do
		cmp -s "$T/rdv.$o/$f" "$T/rdv.$r/$f" || fail "node $r did not get node $o's $f as it was"
	done
	for f in mark-rc-$o ready-from-$o .tmp.rc-x-$o; do
		[ ! -e "$T/rdv.$r/$f" ] || fail "node $r got node $o's $f, which the round does not name"
	done
	[ "$(sed -n 's/^fences //p' "$T/dir.stats.$r")" = 1 ] ||
		fail "node $r: $(tr '\n' ' ' <"$T/dir.stats.$r"), want 1 fence for the files"
	grep -qx 'files sent 2 received 2' "$T/dir.stats.$r" ||
		fail "node $r: $(tr '\n' ' ' <"$T/dir.stats.$r"), want 2 files sent and 2 received"
done
exit 0
