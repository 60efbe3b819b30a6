# shellcheck shell=bash
# bench/verbs-mpi.sh: the MPI part of the verbs bench, sourced by
# bench/verbs-guest.sh (its helpers, $ROUNDS, csv, $WORK). Open MPI over
# UCX rc_verbs/ud_verbs on rxe0, as the guest checks run it:
#
#  3. the shim's overhead on MPI: bench/mpipp (8-byte ping-pong latency,
#     1 MiB bandwidth) between two ranks, plain and under ibcr-launch,
#     up to 3 rounds in alternating orders; rows mpi_lat, mpi_bw;
#  4. the 4-rank job (tests/progs/mpiring under ibcr-launch mpirun),
#     checkpointed with saver --tree --kill from mpirun mid-run and
#     restarted, MPI_CKPTS times; it must end with the right answer, every
#     step verified by the ranks. Rows mpi_job: freeze_ms, ckpt_ms,
#     ckpt_wall_ms, image_bytes, restore_ms, and "verified".
# shellcheck disable=SC2054 # UCX_TLS's commas are one word
MPI_OPTS=(--allow-run-as-root --oversubscribe --mca pml ucx --mca btl self
	--mca oob_tcp_if_include lo -x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=rxe0:1
	-x UCX_UD_VERBS_ETH_DGID_CHECK=n)
MPI_CKPTS=${MPI_CKPTS:-2}
MPI_STEPS=$((MPI_CKPTS * 100 + 100))	# a checkpoint every 10 ticks from tick 3
MPI_ROUNDS=$((ROUNDS < 3 ? ROUNDS : 3))	# an mpirun takes seconds to start in TCG

# mpipp_run CONFIG REP: one run of mpipp; rows for it.
mpipp_run() {
	local config=$1 rep=$2 pre=() w=()
	[[ $config == shim ]] && pre=("$L")
	timeout 300 "${pre[@]}" mpirun "${MPI_OPTS[@]}" -np 2 "$BIN/mpipp" 2000 64 \
		</dev/null >"$WORK/mpipp.out" 2>&1 ||
		{ fail "mpipp ($config): $(tail -n 2 "$WORK/mpipp.out")"; return 1; }
	READ=''
	while IFS='' read -r READ; do [[ $READ == "mpipp lat_us "* ]] && break; done <"$WORK/mpipp.out"
	read -r -a w <<<"$READ"
	[[ ${w[0]:-} == mpipp && ${w[3]:-} == bw_mb_s ]] ||
		{ fail "mpipp ($config): no result line: $(tail -n 2 "$WORK/mpipp.out")"; return 1; }
	csv mpi_lat "$config" "$rep" lat_us "${w[2]}"
	csv mpi_bw "$config" "$rep" bw_mb_s "${w[4]}"
	MPIPP_LINE+=" $config: lat ${w[2]} us, bw ${w[4]} MB/s;"
}

mpipp_part() {
	local r c order
	say "== verbs: mpipp (MPI over UCX verbs, 2 ranks), plain and under ibcr-launch, $MPI_ROUNDS rounds"
	for ((r = 1; r <= MPI_ROUNDS; r++)); do
		((r % 2)) && order='plain shim' || order='shim plain'
		MPIPP_LINE="  round $r:"
		for c in $order; do
			mpipp_run "$c" "$r" || return 1
		done
		say "${MPIPP_LINE%;}"
	done
}

# mpi_tick N: rank 0 printed tick N (or the job failed)
mpi_tick() {
	wait_line "$D/mpi.out" 0 "^(tick $1 |FAIL|ANSWER)" 0.05 || { fail "mpi job: no tick $1"; return 1; }
	[[ $LINE == "tick "* ]] || { fail "mpi job: $LINE before tick $1"; return 1; }
}

mpi_job_part() {
	local k lp mp n
	say "== verbs: the 4-rank MPI job, $MPI_CKPTS x (saver --tree --kill, restart-loader)"
	D=$WORK/mpi
	rm -rf "$D"
	mkdir -p "$D"
	(cd "$D" && exec timeout 900 "$BIN/benchexec" -n -- "$L" mpirun "${MPI_OPTS[@]}" -np 4 \
		"$IBCR/tests/progs/mpiring" "$MPI_STEPS" 5 </dev/null >"$D/mpi.out" 2>&1) &
	disown
	n=3
	for ((k = 1; k <= MPI_CKPTS; k++)); do
		mpi_tick "$n" || return 1
		mp=$(pgrep -x mpirun) || { fail "mpi job: no mpirun"; return 1; }
		SPID=$mp
		mpi_saver "$k" || return 1
		wait_gone "$mp" || { fail "mpi job: mpirun $mp still there after saver --kill"; return 1; }
		[[ -n ${lp:-} ]] && wait "$lp"
		rm -f "$D/loader.res"
		timeout 600 "$BIN/benchexec" -o "$D/loader.res" -- "$IBCR/restart-loader" --stats \
			"$D/job.ckpt" </dev/null >"$D/loader.out" 2>"$D/loader.err" &
		lp=$!
		wait_line "$D/loader.err" 0 '^ibcr-stats:' || { fail "mpi job: no ibcr-stats line from the restart-loader"; return 1; }
		parse_kv "$LINE"
		csv mpi_job restart "$k" restore_ms "${KV[restore_ms]}"
		say "    restart #$k: restore ${KV[restore_ms]} ms"
		n=$((n + 10))
	done
	wait "$lp"
	res_kv "$D/loader.res"
	[[ ${KV[status]:-} == 0 ]] || { fail "mpi job: the restart-loader exited ${KV[status]:-?}"; return 1; }
	if ! grep -q '^ANSWER ok' "$D/mpi.out" || grep -q FAIL "$D/mpi.out"; then
		fail "mpi job: NO RIGHT ANSWER after the restarts: $(tail -n 2 "$D/mpi.out")"
		return 1
	fi
	csv mpi_job restart all verified "$MPI_STEPS"
	say "    the restored job finished: $MPI_STEPS steps verified by the ranks, the right answer"
}

# mpi_saver K: saver --tree --kill of mpirun ($SPID) into $D/job.ckpt
mpi_saver() {
	local stats=''
	rm -f "$D/job.ckpt"
	timeout 300 "$BIN/benchexec" -o "$D/saver.res" -- "$IBCR/saver" --stats --tree --kill \
		-o "$D/job.ckpt" "$SPID" 2>"$D/saver.err"
	res_kv "$D/saver.res"
	[[ ${KV[status]:-} == 0 ]] || { fail "mpi job: saver exited ${KV[status]:-?}: $(tail -n 3 "$D/saver.err")"; return 1; }
	csv mpi_job kill "$1" ckpt_wall_ms "${KV[wall_ms]}"
	while IFS='' read -r stats; do [[ $stats == ibcr-stats:* ]] && break; done <"$D/saver.err"
	[[ $stats == ibcr-stats:* ]] || { fail "mpi job: no ibcr-stats line from the saver"; return 1; }
	parse_kv "$stats"
	csv mpi_job kill "$1" freeze_ms "${KV[freeze_ms]}"
	csv mpi_job kill "$1" ckpt_ms "${KV[total_ms]}"
	csv mpi_job kill "$1" image_bytes "${KV[image_bytes]}"
	say "    checkpoint #$1: freeze ${KV[freeze_ms]} ms, saver ${KV[total_ms]} ms, image $((KV[image_bytes] >> 20)) MiB"
}
