#!/usr/bin/env bash
# tests/verbs/pair-guest.sh PHASE RWDIR - run INSIDE each guest of a pair
# (tools/vm/x86-vm-pair.sh) by tests/verbs/run-pair.sh; IBCR_VM_NAME is A
# or B. An rc_pp pair across the two guests (server in A, client in B),
# their connection data and output in RWDIR/pp, shared by both:
#
#   ckpt     both run until 300 iterations are verified, then each guest's
#            saver checkpoints its process with --kill, one checkpoint over
#            both nodes (saver --barrier, ibcr-job's shared-directory
#            engine): images RWDIR/img.A and RWDIR/img.B
#   swap     guest A restarts img.B, guest B img.A (addresses translated:
#            each process is now where its peer was): every iteration
#            verified to the end
#
# Prints "PASS pair_PHASE_NAME" or "FAIL pair_PHASE_NAME: why".
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=$ROOT/build
S=${IBCR_VERBS_TOOLS:-$B}
PHASE=${1:?phase} RW=${2:?rw dir}
ME=${IBCR_VM_NAME:?not in a pair guest}
N=1500
cd "$RW" || exit 1

fail() {
	echo "FAIL pair_${PHASE}_$ME: $*"
	for f in "$RW"/pp/*.out "$RW"/*.$ME.log; do
		[[ -f $f ]] && { echo "---- $f"; tail -n 15 "$f" | sed 's/^/    /'; }
	done
	exit 1
}

wait_for() {	# wait_for FILE REGEX SECS
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

ckpt() {
	local role=server pid lp rc=0
	[[ $ME == B ]] && role=client
	mkdir -p pp
	(cd pp && exec timeout 900 "$B/ibcr-launch" "$B/tests/verbs/rc_pp" -r $role -d "$RW/pp" \
		-n $N -p 100 -w 1000 >$role.out 2>&1) &
	lp=$!
	wait_for pp/$role.out "$role iter 300 ok" 300 || fail "rc_pp did not get going"
	pid=$(cat pp/$role.pid)
	"$S/saver" --kill -o "$RW/img.$ME" \
		--barrier "$B/ibcr-job barrier -D $RW/coord -n 2 -r $ME" "$pid" 2>saver.$ME.log ||
		fail "saver: $(cat saver.$ME.log)"
	wait $lp
	grep -q 'iterations verified' pp/$role.out && fail "rc_pp finished before the checkpoint"
	echo "PASS pair_ckpt_$ME"
}

swap() {
	local img=img.B role=client rc=0
	[[ $ME == B ]] && img=img.A role=server
	[[ -f $img ]] || fail "no $img from the first boot"
	timeout -k 10 600 "$S/restart-loader" "$RW/$img" >restart.$ME.log 2>&1 || rc=$?
	((rc == 0)) || fail "restart-loader of $img exit status $rc: $(tail -n 3 restart.$ME.log)"
	grep -q "rc_pp $role: $N iterations verified" pp/$role.out ||
		fail "not every iteration was verified after the restart"
	echo "PASS pair_swap_$ME ($role from the other guest)"
}

case $PHASE in
ckpt) ckpt ;;
swap) swap ;;
*) echo "unknown phase $PHASE" >&2; exit 2 ;;
esac
