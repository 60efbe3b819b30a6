#!/usr/bin/env bash
# An unmodified Open MPI job (`mpirun -np 4`: mpirun, its PMIx server and
# four ranks, with ptys, UNIX and TCP sockets, epolls, eventfds, pipes,
# files mapped shared in /tmp and /dev/shm) doing collectives and ring
# traffic is saved mid-run with --tree and killed; after restart it
# finishes with the right answer. Twice: ranks talking over shared memory
# (vader), then over TCP on loopback (established connections between
# ranks, taken over with TCP_REPAIR).
. "$(dirname "$0")/lib.sh"

MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl_tcp_if_include lo
	--mca oob_tcp_if_include lo)

# run BTLS: one job with those transports, checkpointed and restored.
run() {
	local btl=$1 pid kids k out=$T/mpi-${1//,/-}.out
	start "$out" "${MPIRUN[@]}" --mca btl "$btl" "$PROGS/mpiring" 400 20
	pid=$PID
	wait_line "$out" '^tick 8 ' 120
	kids=$(children_of "$pid")
	[ "$(echo "$kids" | wc -w)" = 4 ] || fail "$btl: mpirun has not 4 ranks: $kids"
	checkpoint "$pid" "$T/img.ckpt" --tree --kill
	wait "$pid" 2>/dev/null || true
	for k in $kids; do
		while [ -e "/proc/$k" ]; do sleep 0.05; done
	done
	LOADER_OUT=$T/loader-${1//,/-}.out restart "$T/img.ckpt"
	expect_pid "$pid" "$RPID"
	wait "$LPID" || fail "$btl: restored mpirun exited with status $? ($(tail -n 3 "$out"))"
	grep -q FAIL "$out" && fail "$btl: $(grep FAIL "$out" | head -3)"
	grep -q '^ANSWER ok' "$out" || fail "$btl: the job gave no right answer"
	assert_ticks_continuous "$out"
	[ "$(last_tick "$out")" = 39 ] || fail "$btl: ticks end at $(last_tick "$out")"
}

run self,vader
run self,tcp
exit 0
