#!/usr/bin/env bash
# ibcr-job finds a Slurm job's processes on a node (`ibcr-job roots
# JOBID`, what each node's agent of `ibcr-job checkpoint` saves): the
# children of the job's step daemons (slurmstepd titled "slurmstepd:
# [JOB.STEP]"), but not those of the agent's own step (SLURM_STEP_ID),
# of the extern step, or of another job; a restart-loader's children
# (a job restarted by `ibcr-job restart`) in its place. Step daemons are
# played here by a shell named slurmstepd, as Slurm titles its own.
. "$(dirname "$0")/lib.sh"
JOB=$TOP/tools/ibcr-job
cp "$(command -v bash)" "$T/slurmstepd"
cp "$(command -v bash)" "$T/restart-loader"

# step TITLE NAME...: a step daemon whose children are sleeps, each
# writing its pid to $T/NAME.pid; a NAME starting with "rl-" is a
# restart-loader with one such child of its own, NAME without "rl-"
step() {
	local title=$1 n
	shift
	for n in "$@"; do
		if [[ $n == rl-* ]]; then
			printf '%s -c %q &\necho $! >%s\n' "$T/restart-loader" \
				"sleep 600 & echo \$! >$T/${n#rl-}.pid; wait" "$T/$n.pid"
		else
			printf 'sleep 600 &\necho $! >%s\n' "$T/$n.pid"
		fi
	done >"$T/step.$title.sh"
	echo wait >>"$T/step.$title.sh"
	start "$T/step.$title.out" bash -c "exec -a 'slurmstepd: [$title]' $T/slurmstepd $T/step.$title.sh"
}
step 7.0 mpirun rl-restored
step 7.3 agent
step 7.extern extern
step 8.0 other
for n in mpirun rl-restored restored agent extern other; do
	for ((i = 0; i < 200; i++)); do
		[ -s "$T/$n.pid" ] && break
		sleep 0.05
	done
	[ -s "$T/$n.pid" ] || fail "the fake step did not start $n"
done

got=$(SLURM_STEP_ID=3 "$JOB" roots 7 2>"$T/roots.err" | sort -n | tr '\n' ' ')
want=$(sort -n "$T/mpirun.pid" "$T/restored.pid" | tr '\n' ' ')
[ "$got" = "$want" ] || fail "roots of job 7: '$got', want '$want' (mpirun, restored): $(cat "$T/roots.err")"

# run outside a step (no SLURM_STEP_ID): the agent's step counts too
got=$(env -u SLURM_STEP_ID "$JOB" roots 7 | sort -n | tr '\n' ' ')
want=$(sort -n "$T/mpirun.pid" "$T/restored.pid" "$T/agent.pid" | tr '\n' ' ')
[ "$got" = "$want" ] || fail "roots of job 7 outside a step: '$got', want '$want'"

# a job without a step here: nothing, and why
got=$("$JOB" roots 9 2>"$T/roots9.err")
[ -z "$got" ] || fail "roots of job 9 (none here): '$got'"
grep -q 'no step of job 9 among the [0-9]* processes here' "$T/roots9.err" ||
	fail "no reason given for job 9: $(cat "$T/roots9.err")"
exit 0
