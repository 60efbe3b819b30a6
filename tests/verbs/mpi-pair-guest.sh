#!/usr/bin/env bash
# tests/verbs/mpi-pair-guest.sh PHASE RWDIR - run INSIDE each guest of a pair
# (tools/vm/x86-vm-pair.sh) by tests/verbs/run-pair.sh, after pair-guest.sh;
# IBCR_VM_NAME is A or B. An Open MPI job of 4 ranks, 2 per guest, over UCX
# verbs (rc_verbs, ud_verbs on each guest's rxe0): mpirun and its 2 ranks in
# A, the orted that mpirun starts in B (tests/verbs/mpi-rsh: the guests have
# no ssh) and its 2 ranks; ORTE's out-of-band TCP connection between them
# crosses the wire. Files in RWDIR/mpi, shared by both:
#
#   ckpt   the job runs to tick 3; each guest's saver checkpoints its tree
#          (mpirun, orted) with --kill as one cut (--barrier, ibcr-job's
#          shared-directory engine); each guest restarts its own image, the
#          job runs on two ticks more, and is checkpointed again
#          (self-contained: the next boot has none of this one's /tmp)
#   swap   guest A restarts B's image and B A's, with the two guests'
#          addresses swapped (restart-loader --addr-map): the ORTE
#          connection's ends and the verbs peers each find the other where
#          it now is; the job runs to its end with the right answer, every
#          step verified by the ranks, ticks continuous
#   slurm  (first boot, after ckpt) the two guests as a Slurm cluster
#          (slurm-up.sh); the same job as a step of an allocation; `ibcr-job
#          checkpoint JOBID -D DIR --kill` with node 1's image path blocked
#          fails and the job runs on (the files engine); then it succeeds
#          (the PMIx engine, 2 fences per node; files in RWDIR/slurm);
#          `ibcr-job restart` in the same allocation (PMIx by default: the
#          addresses, 'sockets' and the verbs id exchange's two rounds, 4
#          fences per node, the verbs files through them), which does not
#          return while the job runs; the restarted job checkpointed again
#   slurmrestart  (second boot) a new Slurm cluster and allocation: the
#          second checkpoint's images, each on the other guest (IBCR_PAIR_SWAP=0:
#          each on its own node),
#          `ibcr-job restart -D DIR --jobid JOBID2` (PMIx, 4 fences per
#          node): the right answer
#
# Prints "PASS mpipair_PHASE_NAME (N s)" or "FAIL mpipair_PHASE_NAME: why".
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=$ROOT/build
S=${IBCR_VERBS_TOOLS:-$B}
PHASE=${1:?phase} RW=${2:?rw dir}
ME=${IBCR_VM_NAME:?not in a pair guest}
STEPS=400 MS=5	# ranks' steps and sleep per step (slurm: longer, see there)
M=$RW/mpi
IPS=(10.99.0.1 10.99.0.2)
t0=$SECONDS
export IBCR_MPI_RSH_DIR=$M/rsh
# one node's image may take minutes longer than the other's on a loaded host
export IBCR_JOB_TIMEOUT=600

fail() {
	local p
	echo "FAIL mpipair_${PHASE}_$ME: $* ($((SECONDS - t0)) s)"
	for f in "$M"/mpi.out "$M"/*.$ME.log "$M"/orted.log; do
		[[ -f $f ]] && { echo "---- $f"; tail -n 15 "$f" | sed 's/^/    /'; }
	done
	job_state
	# nothing of the job may outlive the check (this guest's processes;
	# pgrep -x matches nothing for a pattern over 15 characters)
	for p in srun mpirun orted mpiring restart-loader saver; do
		pkill -KILL -x "$p"
	done
	exit 1
}

# What the job's processes here are doing, for a failure's report: state,
# where each waits in the kernel, and the TCP connections between them.
job_state() {
	echo "---- $ME: the job's processes"
	ps -eo pid=,ppid=,stat=,wchan:24=,comm= |
		awk '$NF ~ /^(srun|mpirun|orted|mpiring|restart-loader|saver|slurmstepd)$/ { print "    " $0 }' 
	echo "---- $ME: TCP"
	ss -tanpH 2>/dev/null | grep -E 'mpirun|orted|mpiring' | sed 's/^/    /'
}

# The other guest's progress is seen through files it makes (a new name
# shows up at once; a file's growth may not, through the guests' caches).
mark() { : >"$M/.tmp.$1" && mv -f "$M/.tmp.$1" "$M/$1"; }
wait_mark() {	# wait_mark NAME SECS
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[[ -f $M/$1 ]] && return 0
		[[ -f $M/abort ]] && fail "the other guest failed: $(cat "$M/abort")"
		sleep 0.1
	done
	fail "the other guest did not reach '$1' within $2 s"
}
abort() { echo "$ME: $*" >"$M/abort"; fail "$*"; }

# fresh NAME: a phase's directory $M made anew by A alone (B waits for it:
# B's removal could take files A had made already, the job's output).
fresh() {
	if [[ $ME == A ]]; then
		rm -rf "$M"
		mkdir -p "$M/rsh"
		mark "fresh.$1"
	else
		wait_mark "fresh.$1" 900
	fi
}

ticks() { grep -c '^tick' "$M/mpi.out" 2>/dev/null; }
wait_tick() {	# wait_tick N: rank 0 printed tick N (A's own file)
	local i
	for ((i = 0; i < 3000; i++)); do
		grep -q "^tick $1 " "$M/mpi.out" 2>/dev/null && return 0
		grep -q '^FAIL' "$M/mpi.out" 2>/dev/null && abort "a rank failed: $(grep FAIL "$M/mpi.out")"
		sleep 0.1
	done
	abort "the job did not reach tick $1"
}

# setup [PIDBASE]: the names the job uses for the hosts, and pids out of
# the way of the ones a restore takes back: a first boot's job gets pids
# after 20000, a second boot's restart and daemons (Slurm's, whose
# threads come and go) after 30000 (pid_max is 32768 there). A rank
# whose pid was taken is refused (its parent waits for that pid).
setup() {
	grep -q ' vm-b$' /etc/hosts || printf '10.99.0.1 vm-a\n10.99.0.2 vm-b\n' >>/etc/hosts
	echo "${1:-20000}" >/proc/sys/kernel/ns_last_pid
}

# start_job [PREFIX...]: the launch through PREFIX (srun); mpirun's output
# to mpi.out itself, not through a pipe of srun's (no image holds it).
# mpirun's daemons are started by mpi-rsh (--mca plm rsh: under Slurm,
# Open MPI would start them with an srun of its own, a child of mpirun).
start_job() {
	timeout 900 "$@" bash -c 'exec "$@" </dev/null >"$0" 2>&1' "$M/mpi.out" \
		"$B/ibcr-launch" mpirun --allow-run-as-root --oversubscribe \
		-H vm-a:2,vm-b:2 -np 4 --mca plm rsh --mca plm_rsh_agent "$ROOT/tests/verbs/mpi-rsh" \
		--mca pml ucx --mca btl self --mca oob_tcp_if_include eth0 \
		-x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=rxe0:1 \
		-x UCX_UD_VERBS_ETH_DGID_CHECK=n \
		"$B/tests/progs/mpiring" $STEPS $MS </dev/null >"$M/launch.out" 2>&1 &
}

# B: the command mpirun's agent hands over (ORTE's orted), started detached.
serve_orted() {
	local i cmd
	for ((i = 0; i < 3000; i++)); do
		[[ -f $M/rsh/req.vm-b ]] && break
		sleep 0.1
	done
	[[ -f $M/rsh/req.vm-b ]] || fail "mpirun did not ask for an orted"
	cmd=$(cat "$M/rsh/req.vm-b")
	setsid bash -c "$ROOT/build/ibcr-launch $cmd" </dev/null >"$M/orted.log" 2>&1 &
	: >"$M/rsh/started.vm-b"
}

root_pid() {	# this guest's root of the job: mpirun in A, orted in B
	if [[ $ME == A ]]; then pgrep -x mpirun; else pgrep -x orted; fi
}

ranks_here() { pgrep -P "$1" -f mpiring | wc -l; }

cut() {	# cut NAME [SAVER-OPTS]: one checkpoint of the job over both guests
	local name=$1 pid
	shift
	pid=$(root_pid) || abort "no $([[ $ME == A ]] && echo mpirun || echo orted) to checkpoint"
	[[ $(ranks_here "$pid") == 2 ]] || abort "not 2 ranks below $pid: $(pgrep -a -P "$pid")"
	mkdir -p "$M/$name"
	"$S/saver" --tree --kill "$@" -o "$M/$name/img.$ME" \
		--barrier "$B/ibcr-job barrier -D $M/$name/coord -n 2 -r $ME" "$pid" \
		2>"$M/saver.$name.$ME.log" || abort "saver ($name): $(tail -n 3 "$M/saver.$name.$ME.log")"
	echo "info: $name: $(stat -c %s "$M/$name/img.$ME") bytes"
}

ckpt() {
	local lp n
	setup
	fresh ckpt
	if [[ $ME == A ]]; then
		start_job
		lp=$!
		wait_tick 3
		mark running
	else
		serve_orted
		wait_mark running 600
	fi
	echo "info: $((SECONDS - t0)) s: first cut"
	cut cut1
	[[ $ME == A ]] && { wait $lp; grep -q ANSWER "$M/mpi.out" && abort "the job ended before the cut"; }
	n=$(ticks)
	mark "cut1.$ME"
	wait_mark "cut1.$([[ $ME == A ]] && echo B || echo A)" 300
	echo "info: $((SECONDS - t0)) s: restart on the same guests"
	timeout -k 10 900 "$S/restart-loader" --barrier "$B/ibcr-job barrier -D $M/cut1/rcoord -n 2 -r $ME" \
		"$M/cut1/img.$ME" >"$M/restart1.$ME.log" 2>&1 &
	lp=$!
	if [[ $ME == A ]]; then
		wait_tick $((n + 2))
		mark running2
	else
		wait_mark running2 600
	fi
	echo "info: $((SECONDS - t0)) s: second cut"
	cut cut2 --self-contained --compress
	wait $lp
	[[ $ME == A ]] && grep -q ANSWER "$M/mpi.out" && abort "the job ended before the second cut"
	echo "PASS mpipair_ckpt_$ME ($((SECONDS - t0)) s)"
}

swap() {
	local img=img.B rc=0
	[[ $ME == B ]] && img=img.A
	setup 30000
	[[ -f $M/cut2/$img ]] || fail "no cut2/$img from the first boot"
	rm -f "$M/abort"
	timeout -k 10 900 "$S/restart-loader" --addr-map "${IPS[0]}=${IPS[1]}" \
		--addr-map "${IPS[1]}=${IPS[0]}" \
		--barrier "$B/ibcr-job barrier -D $M/cut2/rcoord -n 2 -r $ME" \
		"$M/cut2/$img" >"$M/swap.$ME.log" 2>&1 || rc=$?
	((rc == 0)) || abort "restart-loader of $img: exit status $rc: $(tail -n 3 "$M/swap.$ME.log")"
	[[ $ME == B ]] && check_answer	# mpirun (A's image) is here now
	echo "PASS mpipair_swap_$ME ($([[ $ME == A ]] && echo orted || echo mpirun) from the other guest, $((SECONDS - t0)) s)"
}

check_answer() {
	grep FAIL "$M/mpi.out" && fail "a rank found a wrong result"
	grep -q '^ANSWER ok' "$M/mpi.out" || fail "no right answer: $(tail -n 3 "$M/mpi.out")"
	[[ $(ticks) == $((STEPS / 10)) ]] || fail "$(ticks) ticks, want $((STEPS / 10))"
	[[ $(sed -n 's/^tick \([0-9]*\).*/\1/p' "$M/mpi.out" | sort -n | uniq | wc -l) == \
		$((STEPS / 10)) ]] || fail "ticks missing or repeated"
}

slurm_cluster() {
	local out
	out=$(bash "$ROOT/tests/verbs/slurm-up.sh" "$RW" 2>&1) || fail "no Slurm cluster: $out"
	if [[ $ME == A ]]; then
		out=$(salloc -N2 --no-shell -J ibcr-test 2>&1)
		J=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' <<<"$out")
		[[ -n $J ]] || abort "salloc: $out"
		echo "$J" >"$M/.jobid" && mv "$M/.jobid" "$M/jobid.$PHASE"
	else
		wait_mark "jobid.$PHASE" 300
		J=$(cat "$M/jobid.$PHASE")
	fi
}

# The Slurm job runs long enough for two ibcr-job checkpoints (an agent
# step takes seconds to start in a slow guest), whatever the load.
slurm_job() { STEPS=1500 MS=60; }

# DIR WHAT N: each node's agent made N PMIx fences (a checkpoint: sends,
# written; a restart: the address exchange, sockets, and the two rounds of
# the verbs id exchange), whatever the keys; a restart's verbs files went
# through them (none met in the shared directory). The fences' times are
# printed (docs/benchmarks.md).
pmix_fences() {
	local i f k
	for i in 0 1; do
		f=$1/pmix-stats.$i
		k=0	# written at the agent's end
		while [[ ! -f $f ]] && ((k++ < 600)); do sleep 0.1; done
		[[ -f $f ]] || abort "the $2 did not use PMIx on node $i (no $f)"
		[[ $(sed -n 's/^fences //p' "$f") == "$3" ]] ||
			abort "node $i's $2: $(tr '\n' ' ' <"$f"), want $3 fences"
		echo "info: $2 node $i: $(tr '\n' ' ' <"$f")"
		[[ -f $1/saver.$i.log ]] &&
			echo "info: $2 node $i: $(grep -h 'ibcr-stats' "$1/saver.$i.log")"
		[[ $3 == 2 ]] && continue
		grep -Eq '^files sent [1-9][0-9]* received [1-9]' "$f" ||
			abort "node $i's $2: no verbs files went through PMIx: $(tr '\n' ' ' <"$f")"
	done
	! compgen -G "$1/verbs/*-*" >/dev/null ||
		abort "the $2's verbs rendezvous met in the shared directory: $(ls "$1/verbs" | head -3)"
	echo "info: $2 with PMIx: $3 fences per node"
	[[ $3 == 2 ]] && return 0
	for i in /tmp/ibcr-pmix.r.*.verbs; do	# this node's, and what came
		[[ -d $i ]] && echo "info: $2: verbs files in $i: $(find "$i" -type f -name '[a-z]*' ! -name 'mark-*' |
			wc -l), $(find "$i" -type f -name '[a-z]*' ! -name 'mark-*' -exec cat {} + | wc -c) bytes"
	done
	return 0
}

# The last restart attempt directory of DIR.
attempt() { ls -d "$1"/restart.* | tail -n 1; }

slurm() {
	local lp n rc=0 out
	setup
	slurm_job
	M=$RW/slurm
	export IBCR_MPI_RSH_DIR=$M/rsh
	fresh slurm
	slurm_cluster
	if [[ $ME == B ]]; then	# orted: a step of the job (mpi-rsh)
		wait_mark running 600
		pgrep -x orted >/dev/null || abort "no orted in B"
		echo "info: ibcr-job roots $J in B: $("$B/ibcr-job" roots "$J" 2>&1 | tr '\n' ' ')"
		wait_mark ckpted 900
		! pgrep -x orted >/dev/null || fail "orted runs on after ibcr-job checkpoint --kill"
		echo "PASS mpipair_slurm_$ME ($((SECONDS - t0)) s)"
		return
	fi
	start_job srun --jobid "$J" -N1 -n1 -w vm-a --overlap
	lp=$!
	wait_tick 3
	mark running
	echo "info: mpirun $(pgrep -x mpirun); ibcr-job roots $J in A: $("$B/ibcr-job" roots "$J" 2>&1 | tr '\n' ' ')"
	mkdir -p "$M/ckpt/img.1"	# node 1 cannot write its image: all fail
	echo "info: srun --mpi=list: $(srun --mpi=list 2>&1 | tr -s '\n ' ' ')"
	# the failure with the fallback engine (files), the checkpoint with PMIx
	# (t_jobpmix tests a failure with PMIx, on the host)
	echo "info: $((SECONDS - t0)) s: ibcr-job checkpoint $J, node 1 failing (files engine)"
	out=$(IBCR_JOB_ENGINE=files "$B/ibcr-job" checkpoint "$J" -D "$M/ckpt" --kill 2>&1) || rc=$?
	echo "info: $((SECONDS - t0)) s: $(tr '\n' '|' <<<"$out")"
	((rc == 1)) || abort "ibcr-job checkpoint with node 1 failing: status $rc: $out"
	grep -q 'node 1 (vm-b)' <<<"$out" || abort "the failure does not name node 1: $out"
	[[ ! -e $M/ckpt/img.0 ]] || abort "an image was left by the failed checkpoint"
	! compgen -G "$M/ckpt/pmix-stats.*" >/dev/null || abort "IBCR_JOB_ENGINE=files used PMIx"
	echo "info: $(grep 'node 1' <<<"$out" | head -n 1)"
	n=$(ticks)
	wait_tick $((n + 2))	# every process ran on
	rmdir "$M/ckpt/img.1"
	echo "info: $((SECONDS - t0)) s: ibcr-job checkpoint $J (PMIx engine)"
	out=$(IBCR_JOB_ENGINE=pmix "$B/ibcr-job" checkpoint "$J" -D "$M/ckpt" --kill 2>&1) ||
		abort "ibcr-job checkpoint: $out"
	echo "info: $out"
	pmix_fences "$M/ckpt" checkpoint 2
	wait $lp
	grep -q ANSWER "$M/mpi.out" && abort "the job ended before the checkpoint"
	! pgrep -x mpirun >/dev/null || abort "mpirun runs on after ibcr-job checkpoint --kill"
	# the restart in the same allocation, PMIx by default; it must not
	# return while the job runs: checkpointed again (--kill), it returns
	n=$(ticks)
	echo "info: $((SECONDS - t0)) s: ibcr-job restart -D ckpt --jobid $J (default engine)"
	"$B/ibcr-job" restart -D "$M/ckpt" --jobid "$J" >"$M/restart1.out" 2>&1 &
	lp=$!
	wait_tick $((n + 2))
	kill -0 $lp 2>/dev/null || abort "ibcr-job restart returned while the job ran: $(cat "$M/restart1.out")"
	pmix_fences "$(attempt "$M/ckpt")" restart 4
	echo "info: $((SECONDS - t0)) s: ibcr-job checkpoint $J -D ckpt2 of the restarted job"
	out=$("$B/ibcr-job" checkpoint "$J" -D "$M/ckpt2" --kill 2>&1) ||
		abort "ibcr-job checkpoint of the restarted job: $out"
	echo "info: $out"
	pmix_fences "$M/ckpt2" checkpoint 2
	grep -q ANSWER "$M/mpi.out" && abort "the job ended before the second checkpoint"
	wait $lp
	echo "info: $((SECONDS - t0)) s: the restart returned: $(tail -n 2 "$M/restart1.out" | tr '\n' '|')"
	echo "info: restart: $(grep -h 'ibcr-stats' "$M/restart1.out" | tr '\n' '|')"
	! pgrep -x mpirun >/dev/null || abort "mpirun runs on after the second checkpoint --kill"
	mark ckpted
	echo "PASS mpipair_slurm_$ME ($((SECONDS - t0)) s)"
}

# restart_to_end DIR: ibcr-job restart of DIR's images in job $J, which
# returns when the job ends. The job ends seconds after its answer: a
# restart still running 120 s after it is a hang, and both guests say
# what their processes do (not the whole restart's timeout later).
restart_to_end() {
	local lp rc=0 i
	"$B/ibcr-job" restart -D "$1" --jobid "$J" >"$M/restart2.out" 2>&1 &
	lp=$!
	for ((i = 0; i < 9000; i++)); do
		kill -0 $lp 2>/dev/null || break
		[[ -f $M/answer ]] && break	# B saw it (swapped)
		grep -q '^ANSWER' "$M/mpi.out" 2>/dev/null && break
		sleep 0.1
	done
	for ((i = 0; i < 1200; i++)); do
		kill -0 $lp 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 $lp 2>/dev/null; then
		echo "$ME: the job did not end within 120 s of its answer" >"$M/abort"
		sleep 3	# B's report too
		kill $lp
		fail "ibcr-job restart did not return within 120 s of the answer: $(tail -n 5 "$M/restart2.out")"
	fi
	wait $lp || rc=$?
	((rc == 0)) || abort "ibcr-job restart: status $rc: $(tail -n 5 "$M/restart2.out")"
	out=$(cat "$M/restart2.out")
}

slurmrestart() {
	local out i j
	setup 30000
	slurm_job
	M=$RW/slurm
	[[ -f $M/ckpt2/img.0 && -f $M/ckpt2/img.1 ]] || fail "no second images from the first boot"
	slurm_cluster
	if [[ $ME == B ]]; then	# swapped, mpirun is here: its output is B's
		for ((i = 0; i < 9000; i++)); do
			[[ -f $M/restarted || -f $M/abort ]] && break
			[[ ${IBCR_PAIR_SWAP:-1} == 1 && ! -f $M/answer ]] &&
				grep -q '^ANSWER' "$M/mpi.out" 2>/dev/null && mark answer
			sleep 0.1
		done
		wait_mark restarted 1
		[[ ${IBCR_PAIR_SWAP:-1} == 0 ]] || check_answer
		echo "PASS mpipair_slurmrestart_$ME (swap ${IBCR_PAIR_SWAP:-1}, $((SECONDS - t0)) s)"
		return
	fi
	# each image on its own node (IBCR_PAIR_SWAP=1: on the other guest,
	# node 0 restarts node 1's image with node 1's old address, node 1
	# node 0's)
	mkdir -p "$M/swapped"
	for i in 0 1; do
		j=$((1 - i))
		[[ ${IBCR_PAIR_SWAP:-1} == 0 ]] && j=$i
		mv -f "$M/ckpt2/img.$i" "$M/swapped/img.$j" &&
			cp "$M/ckpt2/node.$i" "$M/swapped/node.$j" || abort "no swapped images"
	done
	restart_to_end "$M/swapped"
	[[ ${IBCR_PAIR_SWAP:-1} == 0 ]] && check_answer
	pmix_fences "$(attempt "$M/swapped")" restart 4
	echo "info: restart: $(grep -h 'ibcr-stats' <<<"$out" | tr '\n' '|')"
	mark restarted
	echo "PASS mpipair_slurmrestart_$ME (job $J, swap ${IBCR_PAIR_SWAP:-1}, $((SECONDS - t0)) s)"
}

case $PHASE in
ckpt) ckpt ;;
swap) swap ;;
slurm) slurm ;;
slurmrestart) slurmrestart ;;
*) echo "unknown phase $PHASE" >&2; exit 2 ;;
esac
