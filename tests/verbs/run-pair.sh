#!/usr/bin/env bash
# tests/verbs/run-pair.sh - verbs across two guests (tools/vm/x86-vm-pair.sh):
# an rc_pp pair checkpointed as one cut over both nodes (one saver per
# guest, saver --barrier), then each image restarted on the other guest
# (tests/verbs/pair-guest.sh); then an Open MPI job of 4 ranks, 2 per
# guest, checkpointed, restarted on the same guests, checkpointed again
# and restarted with the images swapped (tests/verbs/mpi-pair-guest.sh);
# the two guests as a Slurm cluster: the job checkpointed with ibcr-job
# (once failing on node 1, the job running on) and restarted with ibcr-job
# in the second boot's new allocation, each image on the other guest
# (IBCR_PAIR_SWAP=0: on its own). Two pair boots. Prints PASS/FAIL lines and "pair: N passed, M failed";
# exits non-zero on a failure.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
tools/vm/deps-x86.sh || exit 1
make -s all >/dev/null || { echo "run-pair.sh: make failed" >&2; exit 1; }

rw=$(mktemp -d "$ROOT/build/pair-rw.XXXXXX")
mkdir -p build/verbs-logs
log=build/verbs-logs/pair
G=tests/verbs/pair-guest.sh
MG=tests/verbs/mpi-pair-guest.sh
t0=$SECONDS
for phase in ckpt swap; do
	slurm=slurm
	[[ $phase == swap ]] && slurm=slurmrestart
	# each part on its own: one failing leaves the others their check
	cmd="bash $ROOT/$G $phase $rw; a=\$?; bash $ROOT/$MG $phase $rw || a=1;"
	cmd+=" IBCR_PAIR_SWAP=${IBCR_PAIR_SWAP:-1} bash $ROOT/$MG $slurm $rw || a=1; exit \$a"
	tools/vm/x86-vm-pair.sh --timeout 1800 --rw "$rw" -- "$cmd" "$cmd" 2>&1 | tee "$log.$phase"
done
passed=$(grep -cE 'PASS (mpi)?pair_' "$log".* | awk -F: '{s += $2} END {print s}')
failed=$(grep -cE 'FAIL (mpi)?pair_' "$log".* | awk -F: '{s += $2} END {print s}')
((passed == 12)) || failed=$((failed > 0 ? failed : 1))
if ((failed)); then
	rm -rf build/verbs-logs/pair-rw && mv "$rw" build/verbs-logs/pair-rw
else
	rm -rf "$rw"
fi
echo "pair: $passed passed, $failed failed ($((SECONDS - t0)) s)"
((failed == 0))
