#!/usr/bin/env bash
# bench/jobscale.sh [OUT.csv]: the cost of a job's coordination as the
# number of nodes grows, measured on this host and projected (docs/
# benchmarks.md, "A job over many nodes"). N processes play N nodes' agents
# on one shared directory (tmpfs here, a network file system on a
# cluster): each runs ibcr-job's shared-directory engine for the phases of
# one checkpoint (sends, written) and one restart (addrs, sockets) plus the
# restart's all-to-all address exchange (each node writes its file, reads
# all others'), and the wall time from the first start to the last return
# is taken per phase. bench/jobscale.py fits the model and projects it.
# Rows: nodes,rep,phase,seconds.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOB=$ROOT/tools/ibcr-job
OUT=${1:-/dev/stdout}
REPS=${IBCR_JOBSCALE_REPS:-3}
NODES=${IBCR_JOBSCALE_NODES:-2 4 8 16 32}
D=$(mktemp -d /tmp/ibcr-jobscale.XXXXXX)
trap 'rm -rf "$D"' EXIT

# node R of N: the four barriers in order, an exchange between the 3rd and 4th
agent() {
	local n=$1 r=$2 dir=$3 i
	"$JOB" barrier -D "$dir/c" -n "$n" -r "$r" sends >/dev/null || return 1
	"$JOB" barrier -D "$dir/c" -n "$n" -r "$r" written >/dev/null || return 1
	echo "10.0.$((r / 256)).$((r % 256))" >"$dir/x/.addr.$r" && mv "$dir/x/.addr.$r" "$dir/x/addr.$r"
	"$JOB" barrier -D "$dir/c" -n "$n" -r "$r" addrs >/dev/null || return 1
	for ((i = 0; i < n; i++)); do
		read -r _ <"$dir/x/addr.$i" || return 1
	done
	echo "$EPOCHREALTIME" >"$dir/t/map.$r"
	"$JOB" barrier -D "$dir/c" -n "$n" -r "$r" sockets >/dev/null || return 1
}

echo "nodes,rep,phase,seconds" >"$OUT"
# the parts on their own, one node alone: a barrier command's start and
# one poll (nodes 1), and the listing's cost per file (one poll of a
# directory of 10000 files, "list10000")
for ((rep = 1; rep <= REPS; rep++)); do
	mkdir -p "$D/one.$rep"
	t0=$EPOCHREALTIME
	"$JOB" barrier -D "$D/one.$rep" -n 1 -r 0 p >/dev/null
	echo "1,$rep,barrier1,$(echo "$EPOCHREALTIME - $t0" | bc -l)" >>"$OUT"
done
mkdir -p "$D/big"
for ((i = 0; i < 10000; i++)); do : >"$D/big/p.$i"; done
for ((rep = 1; rep <= REPS; rep++)); do
	t0=$EPOCHREALTIME
	find "$D/big" -maxdepth 1 -name 'p.*' | wc -l >/dev/null
	t1=$EPOCHREALTIME
	find "$D/one.1" -maxdepth 1 -name 'p.*' | wc -l >/dev/null
	t2=$EPOCHREALTIME
	echo "10000,$rep,list10000,$(echo "($t1 - $t0) - ($t2 - $t1)" | bc -l)" >>"$OUT"
	echo "0,$rep,list0,$(echo "$t2 - $t1" | bc -l)" >>"$OUT"
done
rm -rf "$D/big"

# the wall time of PHASE: from t0 to when the last node saw it pass
for n in $NODES; do
	for ((rep = 1; rep <= REPS; rep++)); do
		dir=$D/$n.$rep
		mkdir -p "$dir/c" "$dir/x" "$dir/t"
		t0=$EPOCHREALTIME
		pids=()
		for ((r = 0; r < n; r++)); do
			agent "$n" "$r" "$dir" &
			pids+=($!)
		done
		ok=1
		for p in "${pids[@]}"; do wait "$p" || ok=0; done
		t1=$EPOCHREALTIME
		((ok)) || { echo "jobscale: a node failed at $n nodes" >&2; exit 1; }
		# each barrier's last arrival (its file's time) against t0
		for ph in sends written addrs sockets; do
			last=$(stat -c %.9Y "$dir/c/$ph".* | sort -n | tail -n 1)
			echo "$n,$rep,$ph,$(echo "$last - $t0" | bc -l)" >>"$OUT"
		done
		echo "$n,$rep,total,$(echo "$t1 - $t0" | bc -l)" >>"$OUT"
	done
done
