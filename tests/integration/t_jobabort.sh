#!/usr/bin/env bash
# One checkpoint of a job over two "nodes" (two savers joined by
# --barrier, ibcr-job's shared-directory engine): node 2's image path is a
# directory, which its saver refuses before it does anything. Node 1's
# saver must learn it at its next barrier and fail at once, naming node 2
# and why (not wait for the barrier's timeout), leave no image, and let
# its process run on unharmed.
. "$(dirname "$0")/lib.sh"
JOB=$TOP/tools/ibcr-job
export IBCR_JOB_TIMEOUT=100	# what node 1 must not wait for

start "$T/a.out" "$PROGS/counter" 1000 50
a=$PID
wait_line "$T/a.out" '^tick 3 '
mkdir -p "$T/img.2"	# node 2 cannot write its image
rc=0
"$SAVER" --barrier "$JOB barrier -D $T/cut -n 2 -r 2" -o "$T/img.2" "$a" 2>"$T/saver.2.err" || rc=$?
[ "$rc" = 1 ] || fail "node 2's saver of a directory: status $rc: $(cat "$T/saver.2.err")"
t0=$SECONDS
rc=0
"$SAVER" --kill --barrier "$JOB barrier -D $T/cut -n 2 -r 1" -o "$T/img.1" "$a" 2>"$T/saver.1.err" || rc=$?
[ "$rc" = 1 ] || fail "node 1's saver went on after node 2 failed: status $rc: $(cat "$T/saver.1.err")"
((SECONDS - t0 < 60)) || fail "node 1's saver waited $((SECONDS - t0)) s for a node that had failed"
grep -q "the job's checkpoint was abandoned at barrier '[a-z]*': node 2: image $T/img.2: is a directory" \
	"$T/saver.1.err" || fail "node 1's saver does not say that node 2 failed: $(cat "$T/saver.1.err")"
[ ! -e "$T/img.1" ] || fail "node 1 left an image"
n=$(grep -c '^tick' "$T/a.out")
wait_line "$T/a.out" "^tick $((n + 2)) "	# it runs on, unharmed
grep -q FAIL "$T/a.out" && fail "the process was harmed: $(grep FAIL "$T/a.out")"
exit 0
