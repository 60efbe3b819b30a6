#!/usr/bin/env bash
# tests/verbs/guest.sh PHASE RWDIR - the verbs checks, run INSIDE the guest
# (tools/vm/x86-vm.sh) by tests/verbs/run-guest.sh. Prints one line
# "PASS name (N s)" or "FAIL name: why (N s)" per check, with the logs of a
# failed check. RWDIR is a host directory mounted writable in the guest,
# where images live across boots.
#
#   main   everything that needs one boot, and the image for `fresh`/`nodev`
#          (guest.sh main RWDIR CHECK... runs only the checks named)
#   fresh  restart of that image in a fresh boot (extra objects first)
#   nodev  restart of that image with no RDMA device (--net none)
#   kernel2  rc_pp, epoll/rdma_cm, Open MPI over UCX and eventfds again, on
#          the distribution's other kernel (6.12)
#   bench  shim overhead: ib_send_lat and ib_write_bw without and with it
#
# Every background process runs under timeout(1); the checks synchronise on
# what the programs print, never on sleeps alone.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=$ROOT/build
L=$B/ibcr-launch
T=$B/tests/verbs
# saver and restart-loader (IBCR_VERBS_TOOLS: another build of them)
S=${IBCR_VERBS_TOOLS:-$B}
PHASE=${1:?phase}
RW=${2:?rw dir}
FRESH=$RW/fresh

npass=0
nfail=0
W=

# Ends the check (each runs in its own subshell) with a reason.
fail() {
	echo "why: $*" >"$W/.why"
	exit 1
}

# check NAME FUNCTION: runs FUNCTION in its own work directory $W.
check() {
	local name=$1 fn=$2 t0=$SECONDS rc=0 f
	W=$(mktemp -d "/tmp/vt.$name.XXXXXX")
	(cd "$W" && "$fn") >"$W/.log" 2>&1 || rc=$?
	if ((rc == 0)); then
		npass=$((npass + 1))
		echo "PASS $name ($((SECONDS - t0)) s)"
		sed -n 's/^info: /    /p' "$W/.log"
	else
		nfail=$((nfail + 1))
		echo "FAIL $name: $(sed 's/^why: //' "$W/.why" 2>/dev/null || echo "status $rc") ($((SECONDS - t0)) s)"
		echo "---- $name: log"
		tail -n 40 "$W/.log" | sed 's/^/    /'
		for f in "$W"/*.out; do
			[[ -f $f ]] || continue
			echo "---- $name: $(basename "$f")"
			tail -n 25 "$f" | sed 's/^/    /'
		done
	fi
	# No stray process may outlive its check.
	pkill -KILL -f "$T/|ibv_(rc|ud|srq)_pingpong|ib_send_lat|ib_write_bw|restart-loader|mpirun|mpiring" 2>/dev/null || true
	return 0
}

# wait_for FILE REGEX SECS [PID]: until FILE has a line matching REGEX.
wait_for() {
	local file=$1 re=$2 secs=$3 pid=${4:-} i
	for ((i = 0; i < secs * 20; i++)); do
		grep -Eq -- "$re" "$file" 2>/dev/null && return 0
		if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
			grep -Eq -- "$re" "$file" 2>/dev/null && return 0
			echo "process $pid ended before '$re' appeared in $file"
			return 1
		fi
		sleep 0.05
	done
	echo "'$re' did not appear in $file within $secs s"
	return 1
}

# wait_port PORT PID: until a TCP listener is on PORT (pingpong servers).
wait_port() {
	local port=$1 pid=$2 i
	for ((i = 0; i < 1200; i++)); do
		ss -Hltn "sport = :$port" | grep -q . && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# The real program's pid under `timeout ... ibcr-launch prog` (launch execs).
child_of() {
	local p=$1 c i
	for ((i = 0; i < 100; i++)); do
		c=$(pgrep -P "$p" | head -n 1)
		[[ -n $c ]] && { echo "$c"; return 0; }
		sleep 0.05
	done
	return 1
}

# "iter N ok qpn A real B rkey C real D ..." -> "A B C D" of the last line.
last_ids() {
	grep ' ok qpn ' "$1" | tail -n 1 | awk '{print $6, $8, $10, $12}'
}

# ------------------------------------------------------------------ checks

rc_pp_pair() {	# rc_pp_pair LAUNCH ITERS [extra args]: a server and a client
	local launch=$1 n=$2
	shift 2
	timeout 300 $launch "$T/rc_pp" -r server -d "$W" -n "$n" -p 100 "$@" >server.out 2>&1 &
	local sp=$!
	timeout 300 $launch "$T/rc_pp" -r client -d "$W" -n "$n" -p 100 "$@" >client.out 2>&1
	local crc=$? src=0
	wait $sp || src=$?
	((crc == 0 && src == 0)) || fail "rc_pp exit status: client $crc, server $src"
	grep -q "rc_pp server: $n iterations verified" server.out &&
		grep -q "rc_pp client: $n iterations verified" client.out ||
		fail "not every iteration was verified"
}

t_rc_pp_plain() { rc_pp_pair "" 300; }
t_rc_pp_shim() { rc_pp_pair "$L" 300; }
t_rc_pp_shim_events() { rc_pp_pair "$L" 300 -e; }

t_ext_verbs() {
	timeout 120 "$T/ext_verbs" >plain.out 2>&1 || fail "ext_verbs failed without the shim"
	timeout 120 "$L" "$T/ext_verbs" >shim.out 2>&1 || fail "ext_verbs failed with the shim"
	[[ "$(grep 'device_ex:' plain.out)" == "$(grep 'device_ex:' shim.out)" ]] ||
		fail "ibv_query_device_ex differs with the shim: $(grep -h 'device_ex:' plain.out shim.out)"
	grep -q 'ok: create_cq_ex: 4 SEND_WITH_IMM' shim.out || fail "no extended CQ traffic with the shim"
	grep -q 'ok: create_qp_ex with send operations, wr_start' shim.out ||
		fail "no ibv_wr_* traffic with the shim"
	sed -n 's/^ *\(device_ex: .*\)/info: \1/p' shim.out
	sed -n 's/^ *\(ok: .*EOPNOTSUPP\|ext_verbs: .*\)/info: \1/p' shim.out
}

t_selftest() {
	mkdir -p rdv
	timeout 300 "$L" "$T/selftest" -d "$W/rdv" -c 2 -n 10 >st.out 2>&1 || fail "selftest failed"
	sed -n 's/^\(selftest: .*\|  rebuilt.*\|  quiesced.*\)/info: \1/p' st.out
}

t_mtstress() {
	mkdir -p rdv
	timeout 600 "$L" "$T/mtstress" -d "$W/rdv" -t 4 -c 6 >mt.out 2>&1 || fail "mtstress failed"
	sed 's/^/info: /' mt.out
}

# pingpong KIND PORT ARGS...: server + client of ibv_KIND_pingpong under the shim.
pingpong() {
	local kind=$1 port=$2
	shift 2
	timeout 300 "$L" "ibv_${kind}_pingpong" -p "$port" "$@" >server.out 2>&1 &
	local sp=$!
	wait_port "$port" $sp || fail "$kind server did not listen"
	timeout 300 "$L" "ibv_${kind}_pingpong" -p "$port" "$@" 127.0.0.1 >client.out 2>&1
	local crc=$? src=0
	wait $sp || src=$?
	((crc == 0 && src == 0)) || fail "ibv_${kind}_pingpong exit status: client $crc, server $src"
	grep -q ' iters in ' server.out && grep -q ' iters in ' client.out ||
		fail "no iteration summary"
}

t_rc_pingpong() { pingpong rc 18601 -g 1 -n 500; }
t_rc_pingpong_events() { pingpong rc 18602 -g 1 -n 500 -e; }
t_ud_pingpong() { pingpong ud 18603 -g 1 -n 500 -s 512; }
t_srq_pingpong() { pingpong srq 18604 -g 1 -n 200; }

perf() {	# perf TOOL PORT: a short perftest run under the shim
	local tool=$1 port=$2
	timeout 300 "$L" "$tool" -x 1 -n 200 -p "$port" >server.out 2>&1 &
	local sp=$!
	wait_port "$port" $sp || fail "$tool server did not listen"
	timeout 300 "$L" "$tool" -x 1 -n 200 -p "$port" 127.0.0.1 >client.out 2>&1
	local crc=$? src=0
	wait $sp || src=$?
	((crc == 0 && src == 0)) || fail "$tool exit status: client $crc, server $src"
}
t_perftest_shim() { perf ib_send_lat 18611 && perf ib_write_bw 18612; }

# ckpt_rc_pp DIR ITERS: an rc_pp pair in DIR, checkpointed (--kill) into
# DIR/job.ckpt once the client has verified 300 iterations.
ckpt_rc_pp() {
	local d=$1 n=$2 sp cp
	# shellcheck disable=SC2086 # RCPP_OPTS: more rc_pp options (-x)
	(cd "$d" && exec timeout 600 "$L" "$T/rc_pp" -r server -d "$d" -n "$n" -p 100 -w 1000 \
		${RCPP_OPTS:-} >server.out 2>&1) &
	sp=$!
	# shellcheck disable=SC2086
	(cd "$d" && exec timeout 600 "$L" "$T/rc_pp" -r client -d "$d" -n "$n" -p 100 -w 1000 \
		${RCPP_OPTS:-} >client.out 2>&1) &
	cp=$!
	wait_for "$d/client.out" 'client iter 300 ok' 120 $cp || fail "rc_pp did not get going"
	wait_for "$d/server.out" 'server iter 300 ok' 120 $sp || fail "rc_pp did not get going"
	read -r a b c d2 < <(last_ids "$d/client.out")
	[[ $a == "$b" && $c == "$d2" ]] || fail "before any restart the real QPN/rkey should be the application's ($a $b $c $d2)"
	"$S/saver" --kill -o "$d/job.ckpt" "$(cat "$d/server.pid")" "$(cat "$d/client.pid")" ||
		fail "saver failed"
	wait $sp
	wait $cp
	grep -q 'iterations verified' "$d/client.out" && fail "rc_pp finished before the checkpoint"
	return 0
}

# What every thread of the programs named is doing (for a hang).
dump_state() {
	local p t
	echo "== threads"
	ps -eLo pid,tid,stat,wchan:32,comm | grep -E "$1|PID"
	for p in $(pgrep -f "$1"); do
		for t in /proc/$p/task/*; do
			echo "== $t ($(cat "$t/comm")): syscall $(cat "$t/syscall" 2>/dev/null)"
			cat "$t/stack" 2>/dev/null | head -n 8
		done
	done
}

# run_loader SECS IMAGE: restart-loader under a watchdog that shows the
# restored threads' state before giving up. Status: the loader's.
run_loader() {
	local secs=$1 img=$2 lp i
	timeout -k 10 "$secs" "$S/restart-loader" "$img" >restart.out 2>&1 &
	lp=$!
	for ((i = 0; i < (secs - 5) * 10; i++)); do
		kill -0 $lp 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 $lp 2>/dev/null; then
		echo "restart-loader still running after $((secs - 5)) s"
		dump_state 'rc_pp|pingpong|restart-loader'
		ls -la "$(dirname "$img")"
	fi
	wait $lp
}

# restart_rc_pp DIR ITERS: restarts DIR/job.ckpt, checks the pair ran to the
# end with every iteration verified and new real QPNs and rkeys.
restart_rc_pp() {
	local d=$1 n=$2 rc=0 a b c e
	run_loader 300 "$d/job.ckpt" || rc=$?
	((rc == 0)) || fail "restart-loader exit status $rc: $(tail -n 3 restart.out)"
	grep -q "rc_pp server: $n iterations verified" "$d/server.out" &&
		grep -q "rc_pp client: $n iterations verified" "$d/client.out" ||
		fail "not every iteration was verified after the restart"
	for f in client server; do
		read -r a b c e < <(last_ids "$d/$f.out")
		[[ $a != "$b" ]] || fail "$f: the real QPN did not change ($a)"
		[[ $c != "$e" ]] || fail "$f: the real rkey did not change ($c)"
		echo "info: $f: QPN $a, now really $b; rkey $c, now really $e"
	done
}

t_ckpt_rc_pp() {
	ckpt_rc_pp "$W" 1500 && restart_rc_pp "$W" 1500
}

# The same with extended CQs polled through ibv_start_poll (rc_pp -x): each
# completion's QP number reads as the application's after the restart.
t_ckpt_rc_pp_cq_ex() {
	RCPP_OPTS=-x ckpt_rc_pp "$W" 1500 && restart_rc_pp "$W" 1500
}

# Posted with the ibv_wr_* API on a QP of ibv_create_qp_ex (rc_pp -W):
# after the restart the builder's requests carry the new keys too.
t_ckpt_rc_pp_wr() {
	RCPP_OPTS=-W ckpt_rc_pp "$W" 1500 && restart_rc_pp "$W" 1500
}

t_ckpt_rc_pp_extra() {
	ckpt_rc_pp "$W" 1500 || return 1
	timeout 600 "$T/extra_objs" 8 >extra.out 2>&1 &
	wait_for extra.out 'ready' 60 $! || fail "extra_objs did not start"
	restart_rc_pp "$W" 1500
}

# Checkpointed while running on (no --kill), then restarted from that image
# after the originals finished: both runs verify every iteration.
t_ckpt_live_then_restart() {
	local sp cp
	timeout 600 "$L" "$T/rc_pp" -r server -d "$W" -n 1500 -p 100 -w 1000 >server.out 2>&1 &
	sp=$!
	timeout 600 "$L" "$T/rc_pp" -r client -d "$W" -n 1500 -p 100 -w 1000 >client.out 2>&1 &
	cp=$!
	wait_for client.out 'client iter 300 ok' 120 $cp || fail "rc_pp did not get going"
	"$S/saver" -o job.ckpt "$(cat server.pid)" "$(cat client.pid)" || fail "saver failed"
	wait $sp || fail "the server failed after the checkpoint"
	wait $cp || fail "the client failed after the checkpoint"
	grep -q "rc_pp client: 1500 iterations verified" client.out ||
		fail "the checkpointed run did not finish"
	echo "info: the checkpointed pair finished: $(grep -c ' ok qpn ' client.out) progress lines"
	rm -f ./*.done
	# the restored programs write their output files again from where
	# they were at the checkpoint
	restart_rc_pp "$W" 1500
}

# Checkpointed, restarted, checkpointed again while restarted, restarted
# again: the second rebuild replaces the first one's objects and fds.
t_ckpt_twice() {
	local lp rc=0
	ckpt_rc_pp "$W" 3000 || return 1
	timeout -k 10 600 "$S/restart-loader" job.ckpt >restart1.out 2>&1 &
	lp=$!
	wait_for client.out 'client iter 1000 ok' 120 $lp || fail "the first restart did not run"
	"$S/saver" --kill -o job2.ckpt "$(cat server.pid)" "$(cat client.pid)" ||
		fail "second checkpoint failed"
	wait $lp
	grep -q 'iterations verified' client.out && fail "rc_pp finished before the second checkpoint"
	mv job2.ckpt job.ckpt
	restart_rc_pp "$W" 3000
}

# ckpt_pingpong KIND PORT ARGS...: checkpointed mid-run, both restarted.
ckpt_pingpong() {
	local kind=$1 port=$2 sp cp spid cpid rc=0
	shift 2
	# stdbuf: the pingpongs' "remote address" lines are what we wait for
	timeout 900 stdbuf -oL "$L" "ibv_${kind}_pingpong" -p "$port" "$@" >server.out 2>&1 &
	sp=$!
	wait_port "$port" $sp || fail "$kind server did not listen"
	timeout 900 stdbuf -oL "$L" "ibv_${kind}_pingpong" -p "$port" "$@" 127.0.0.1 >client.out 2>&1 &
	cp=$!
	wait_for client.out 'remote address' 60 $cp || fail "client did not connect"
	wait_for server.out 'remote address' 60 $sp || fail "server did not connect"
	sleep 0.3	# into the run (the pingpongs print nothing until the end)
	spid=$(child_of $sp) && cpid=$(child_of $cp) || fail "no pingpong pids"
	"$S/saver" --kill -o job.ckpt "$spid" "$cpid" || fail "saver failed"
	wait $sp
	wait $cp
	grep -q ' iters in ' client.out && fail "the pingpong finished before the checkpoint"
	run_loader 900 job.ckpt || rc=$?
	((rc == 0)) || fail "restart-loader exit status $rc"
	grep -q ' iters in ' server.out && grep -q ' iters in ' client.out ||
		fail "no iteration summary after the restart"
	sed -n 's/^\(.* iters in .*\)/info: \1/p' server.out client.out
}

t_ckpt_rc_pingpong() { ckpt_pingpong rc 18621 -g 1 -n 20000 -s 64 -e; }
t_ckpt_ud_pingpong() { ckpt_pingpong ud 18622 -g 1 -n 100000 -s 64; }
t_ckpt_srq_pingpong() { ckpt_pingpong srq 18623 -g 1 -n 60000 -s 64; }

# One process of a pair checkpointed alone: its restart waits for a peer
# that never comes, and says which.
t_missing_peer() {
	local sp cp rc=0
	timeout 600 "$L" "$T/rc_pp" -r server -d "$W" -n 100000 -p 100 -w 1000 >server.out 2>&1 &
	sp=$!
	timeout 600 "$L" "$T/rc_pp" -r client -d "$W" -n 100000 -p 100 -w 1000 >client.out 2>&1 &
	cp=$!
	wait_for client.out 'client iter 100 ok' 120 $cp || fail "rc_pp did not get going"
	"$S/saver" --kill -o a.ckpt "$(cat server.pid)" || fail "saver failed"
	kill $cp 2>/dev/null
	wait $sp
	wait $cp
	IBCR_RENDEZVOUS_TIMEOUT=5 run_loader 120 a.ckpt || rc=$?
	cat restart.out
	((rc == 70)) || fail "restart-loader exit status $rc, want 70"
	grep -q 'ibcr-verbs: restart: the peer of QP 0x[0-9a-f]* (remote QP 0x[0-9a-f]* at g[0-9a-f]*) did not show up' server.out ||
		fail "no message naming the missing peer"
	sed -n 's/^\(ibcr-verbs:.*\)/info: \1/p' server.out
}

# A pair run by nobody, checkpointed by root: restored by root its threads
# would each get a credential of their own, and the kernel would refuse
# their verbs commands (EACCES): refused before anything runs, naming
# the pid. Restored by nobody, the threads share theirs: every iteration
# verified to the end.
t_other_creds() {
	local sp cp rc=0 R=$B/tests/progs/runas
	chmod 777 "$W"
	touch server.out client.out	# nobody's, to reopen at its restore
	chown 65534:65534 server.out client.out
	timeout 600 "$R" 65534 65534 "$L" "$T/rc_pp" -r server -d "$W" -n 1500 -p 100 -w 1000 \
		>server.out 2>&1 &
	sp=$!
	timeout 600 "$R" 65534 65534 "$L" "$T/rc_pp" -r client -d "$W" -n 1500 -p 100 -w 1000 \
		>client.out 2>&1 &
	cp=$!
	wait_for client.out 'client iter 300 ok' 120 $cp || fail "rc_pp did not get going as nobody"
	"$S/saver" --kill -o job.ckpt "$(cat server.pid)" "$(cat client.pid)" || fail "saver failed"
	wait $sp
	wait $cp
	chmod 644 job.ckpt
	"$S/restart-loader" job.ckpt >refused.out 2>&1 || rc=$?
	((rc == 1)) || fail "restart-loader by root: status $rc, not 1: $(tail -n 3 refused.out)"
	grep -q "pid $(cat server.pid): a verbs process restored with other credentials than restart-loader's" \
		refused.out || fail "the refusal does not say why: $(cat refused.out)"
	! pgrep -f "$T/rc_pp" >/dev/null || fail "an rc_pp runs after the refusal"
	sed 's/^/info: /' refused.out
	rc=0
	"$R" 65534 65534 "$S/restart-loader" --new-pids job.ckpt >restart.out 2>&1 || rc=$?
	((rc == 0)) || fail "restart-loader by nobody: status $rc: $(tail -n 3 restart.out)"
	grep -q "rc_pp client: 1500 iterations verified" client.out ||
		fail "restored by nobody, the pair did not finish: $(tail -n 3 restart.out client.out)"
	grep -q "rc_pp server: 1500 iterations verified" server.out ||
		fail "restored by nobody, the server did not finish: $(tail -n 3 server.out)"
}

# The image for the other boots: an rc_pp pair checkpointed in $FRESH.
t_fresh_prepare() {
	rm -rf "$FRESH"
	mkdir -p "$FRESH"
	ckpt_rc_pp "$FRESH" 1500
}

t_fresh_restart() {
	[[ -f $FRESH/job.ckpt ]] || fail "no image from the first boot"
	timeout 600 "$T/extra_objs" 8 >extra.out 2>&1 &
	wait_for extra.out 'ready' 60 $! || fail "extra_objs did not start"
	sed 's/^/info: /' extra.out
	restart_rc_pp "$FRESH" 1500
}

t_no_device() {
	local rc=0 before after
	[[ -f $FRESH/job.ckpt ]] || fail "no image from the first boot"
	[[ ! -e /sys/class/infiniband/rxe0 ]] || fail "this boot has an RDMA device"
	before=$(cat "$FRESH"/*.out | md5sum)
	run_loader 120 "$FRESH/job.ckpt" || rc=$?
	sed 's/^/info: /' restart.out
	((rc != 0)) || fail "restart-loader succeeded without an RDMA device"
	grep -q 'RDMA device' restart.out || fail "the message does not say an RDMA device is missing"
	pgrep -f "$T/rc_pp" && fail "a restored process is running"
	after=$(cat "$FRESH"/*.out | md5sum)
	[[ $before == "$after" ]] || fail "the restored programs wrote output"
	return 0
}

# ------------------------------------------------- what UCX and MPI use

# epoll on the async fd and a completion channel, an rdma_cm channel:
# checkpointed, restarted, checkpointed again while restarted, restarted.
t_epoll_rdmacm() {
	local lp rc=0
	timeout 600 "$L" "$T/epollcm" 400 20 >prog.out 2>&1 &
	lp=$!
	wait_for prog.out '^iter 50 ok' 120 $lp || fail "epollcm did not get going"
	pid=$(sed -n 's/^epollcm pid \([0-9]*\).*/\1/p' prog.out)
	"$S/saver" --kill -o job.ckpt "$pid" || fail "saver failed"
	wait $lp
	grep -q DONE prog.out && fail "epollcm finished before the checkpoint"
	timeout -k 10 600 "$S/restart-loader" job.ckpt >restart1.out 2>&1 &
	lp=$!
	wait_for prog.out '^iter 150 ok' 120 $lp || fail "the restart did not run on"
	"$S/saver" --kill -o job2.ckpt "$pid" || fail "second checkpoint failed"
	wait $lp
	grep -q DONE prog.out && fail "epollcm finished before the second checkpoint"
	run_loader 300 job2.ckpt || rc=$?
	((rc == 0)) || fail "restart-loader exit status $rc: $(tail -n 3 restart.out)"
	grep -q '^DONE 400 iterations verified' prog.out || fail "epollcm did not finish"
	echo "info: $(head -n 1 prog.out)"
}

# A CM id alive: the checkpoint is refused, naming it; the program runs on.
t_cm_id_refused() {
	local lp rc=0
	timeout 600 "$L" "$T/epollcm" -i 200 20 >prog.out 2>&1 &
	lp=$!
	wait_for prog.out '^iter 20 ok' 120 $lp || fail "epollcm did not get going"
	pid=$(sed -n 's/^epollcm pid \([0-9]*\).*/\1/p' prog.out)
	"$S/saver" --kill -o job.ckpt "$pid" 2>saver.err && fail "the saver did not refuse"
	cat saver.err
	grep -q "pid $pid: the verbs shim could not quiesce: quiesce: 1 RDMA CM id is alive" saver.err ||
		fail "the message does not name the CM id: $(cat saver.err)"
	[[ ! -e job.ckpt ]] || fail "an image was left"
	wait $lp || rc=$?
	((rc == 0)) || fail "epollcm failed after the refusal (status $rc)"
	grep -q '^DONE 200 iterations verified' prog.out || fail "epollcm did not run on to the end"
	sed 's/^/info: /' saver.err
}

# Open MPI over UCX verbs (rc_verbs, ud_verbs), as a user starts it: the
# 4-rank job saved with --tree from mpirun mid-run and killed, restarted,
# saved again while running restarted, killed, restarted: the right
# answer, every step verified by the ranks, ticks continuous; the ranks'
# QPs new after each restart and RoCE traffic going on.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 4 --mca pml ucx --mca btl self
	--mca oob_tcp_if_include lo -x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=rxe0:1
	-x UCX_UD_VERBS_ETH_DGID_CHECK=n)
# Device contexts the ranks hold: one each before a restart; after it the
# shim's new one too (the rebuild's objects; `rdma resource show qp` lists
# no QP made by the rebuilding thread of a restored process on 6.1).
rank_devs() {	# rank_devs PID...
	local p
	for p in "$@"; do
		readlink /proc/$p/fd/* | grep -c /dev/infiniband/uverbs
	done | tr '\n' ' '
}
sent_pkts() { cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts; }
mpi_wait_tick() {	# mpi_wait_tick N PID: rank 0 printed tick N
	wait_for mpi.out "^tick $1 " 300 "$2" || fail "the job did not reach tick $1"
}
t_ckpt_mpi_ucx() {
	local mp lp q0 q1 pk ranks rc=0
	timeout 900 "$L" "${MPIRUN[@]}" "$B/tests/progs/mpiring" 1000 5 >mpi.out 2>&1 &
	lp=$!
	mpi_wait_tick 5 $lp
	mp=$(pgrep -x mpirun) || fail "no mpirun"
	ranks=$(pgrep -P "$mp" -f mpiring | tr '\n' ' ')
	[[ $(echo $ranks | wc -w) == 4 ]] || fail "mpirun has not 4 ranks: $ranks"
	q0=$(rank_devs $ranks)
	[[ $q0 == "1 1 1 1 " ]] || fail "the ranks have not one verbs device open each: $q0"
	pk=$(sent_pkts)
	mpi_wait_tick $(($(grep -c '^tick' mpi.out) + 2)) $lp
	(($(sent_pkts) > pk)) || fail "no RoCE packets sent: not over verbs"
	echo "info: $SECONDS s: tick $(grep -c '^tick' mpi.out), checkpoint"
	"$S/saver" --tree --kill -o job.ckpt "$mp" || fail "saver --tree failed"
	echo "info: $SECONDS s: restart"
	wait $lp
	grep -q ANSWER mpi.out && fail "the job finished before the checkpoint"
	timeout -k 10 900 "$S/restart-loader" job.ckpt >restart1.out 2>&1 &
	lp=$!
	# the ticks written before the checkpoint are there already
	mpi_wait_tick $(($(grep -c '^tick' mpi.out) + 3)) $lp
	q1=$(rank_devs $ranks)
	[[ $q1 == "2 2 2 2 " ]] || fail "the ranks have not their new device contexts: $q1"
	pk=$(sent_pkts)
	mpi_wait_tick $(($(grep -c '^tick' mpi.out) + 2)) $lp
	(($(sent_pkts) > pk)) || fail "no RoCE packets sent after the restart"
	echo "info: $SECONDS s: tick $(grep -c '^tick' mpi.out), second checkpoint"
	"$S/saver" --tree --kill -o job2.ckpt "$mp" || fail "second saver --tree failed"
	echo "info: $SECONDS s: second restart"
	wait $lp
	grep -q ANSWER mpi.out && fail "the job finished before the second checkpoint"
	run_loader 900 job2.ckpt || rc=$?
	((rc == 0)) || fail "restart-loader exit status $rc: $(tail -n 3 restart.out)"
	grep FAIL mpi.out && fail "a rank found a wrong result"
	grep -q '^ANSWER ok' mpi.out || fail "no right answer: $(tail -n 3 mpi.out)"
	[[ $(grep -c '^tick' mpi.out) == 100 ]] || fail "$(grep -c '^tick' mpi.out) ticks, want 100"
	[[ $(sed -n 's/^tick \([0-9]*\).*/\1/p' mpi.out | sort -n | uniq | wc -l) == 100 ]] ||
		fail "ticks missing or repeated"
	echo "info: $SECONDS s: $(grep ANSWER mpi.out)"
}

# The guest's kernel (6.1: its eventfd fdinfo does not show the semaphore
# mode, which the saver then tests): eventfds of both modes at counts 0, 1
# and more, checked by the program itself after the restore; then the
# host suite's Open MPI job over shared memory and TCP (t_mpi), whose
# runtime holds eventfds.
t_guest_kernel() {
	local lp rc=0
	timeout 600 "$T/efdmodes" 40 100 >prog.out 2>&1 &
	lp=$!
	wait_for prog.out '^tick 5 ' 120 $lp || fail "efdmodes did not get going"
	"$S/saver" --kill -o job.ckpt "$(sed -n 's/^tick 5 pid \([0-9]*\).*/\1/p' prog.out)" 2>saver.err ||
		fail "saver failed on $(uname -r): $(cat saver.err)"
	wait $lp
	run_loader 300 job.ckpt || rc=$?
	((rc == 0)) || fail "restart-loader exit status $rc: $(tail -n 3 prog.out)"
	grep -q '^DONE 6 eventfds as they were' prog.out || fail "efdmodes: $(tail -n 1 prog.out)"
	(cd "$ROOT" && tests/integration/run.sh t_mpi) >suite.out 2>&1 ||
		{ tail -n 30 suite.out; fail "t_mpi failed on $(uname -r)"; }
	echo "info: eventfds and t_mpi on $(uname -r)"
}

# ------------------------------------------------------------------ bench

# perf_once TOOL PORT LAUNCH ARGS...: one server+client run; prints the
# client's result line (the one that starts with #bytes #iterations).
perf_once() {
	local tool=$1 port=$2 launch=$3 sp
	shift 3
	timeout 300 $launch "$tool" -p "$port" "$@" >bs.out 2>&1 &
	sp=$!
	wait_port "$port" $sp || { echo "$tool server did not listen" >&2; return 1; }
	timeout 300 $launch "$tool" -p "$port" "$@" 127.0.0.1 >bc.out 2>&1 || {
		cat bc.out >&2
		return 1
	}
	wait $sp || return 1
	grep -E '^ *[0-9]+ +[0-9]+ ' bc.out | tail -n 1
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# ib_send_lat (t_typical) and ib_write_bw (BW average), without and with
# the shim, alternating, IBCR_BENCH_ROUNDS rounds; medians and ratios.
bench() {
	local rounds=${IBCR_BENCH_ROUNDS:-5} r port=18700 l
	local lat_n=${IBCR_BENCH_LAT_ITERS:-20000} bw_n=${IBCR_BENCH_BW_ITERS:-5000}
	W=$(mktemp -d /tmp/vt.bench.XXXXXX)
	cd "$W" || return 1
	: >lat.plain
	: >lat.shim
	: >bw.plain
	: >bw.shim
	for ((r = 1; r <= rounds; r++)); do
		for mode in plain shim; do
			[[ $mode == shim ]] && l=$L || l=
			port=$((port + 1))
			perf_once ib_send_lat $port "$l" -x 1 -n "$lat_n" | awk '{print $5}' >>lat.$mode ||
				return 1
			port=$((port + 1))
			perf_once ib_write_bw $port "$l" -x 1 -n "$bw_n" | awk '{print $4}' >>bw.$mode ||
				return 1
		done
		echo "bench: round $r: send_lat t_typical plain $(tail -n 1 lat.plain) us," \
			"shim $(tail -n 1 lat.shim) us; write_bw plain $(tail -n 1 bw.plain) MB/s," \
			"shim $(tail -n 1 bw.shim) MB/s"
	done
	# the per-call cost in isolation (no wire): empty polls, receive posts
	for ((r = 1; r <= rounds; r++)); do
		timeout 300 "$T/microbench" -n 1000000 | sed 's/^/bench: /'
		timeout 300 "$L" "$T/microbench" -n 1000000 -d "$W/rdv$r" | sed 's/^/bench: /'
	done
	local lp ls bp bs
	lp=$(median <lat.plain)
	ls=$(median <lat.shim)
	bp=$(median <bw.plain)
	bs=$(median <bw.shim)
	echo "bench: ib_send_lat t_typical median of $rounds: plain $lp us, shim $ls us," \
		"ratio shim/plain $(awk -v a="$ls" -v b="$lp" 'BEGIN {printf "%.3f", a / b}')"
	echo "bench: ib_write_bw BW average median of $rounds: plain $bp MB/s, shim $bs MB/s," \
		"ratio shim/plain $(awk -v a="$bs" -v b="$bp" 'BEGIN {printf "%.3f", a / b}')"
}

ONLY=" ${*:3} "
# check_main NAME FUNCTION: a check of the main phase (all, or those named).
check_main() {
	[[ $ONLY == "  " || $ONLY == *" $1 "* ]] && check "$1" "$2"
	return 0
}

case $PHASE in
main)
	check_main rc_pp_plain t_rc_pp_plain
	check_main rc_pp_shim t_rc_pp_shim
	check_main rc_pp_shim_events t_rc_pp_shim_events
	check_main ext_verbs t_ext_verbs
	check_main selftest_rebuild t_selftest
	check_main threads_quiesce_rebuild t_mtstress
	check_main rc_pingpong_shim t_rc_pingpong
	check_main rc_pingpong_events_shim t_rc_pingpong_events
	check_main ud_pingpong_shim t_ud_pingpong
	check_main srq_pingpong_shim t_srq_pingpong
	check_main perftest_shim t_perftest_shim
	check_main ckpt_rc_pp t_ckpt_rc_pp
	check_main ckpt_rc_pp_cq_ex t_ckpt_rc_pp_cq_ex
	check_main ckpt_rc_pp_wr t_ckpt_rc_pp_wr
	check_main ckpt_rc_pp_extra_objects t_ckpt_rc_pp_extra
	check_main ckpt_live_then_restart t_ckpt_live_then_restart
	check_main ckpt_restart_twice t_ckpt_twice
	check_main ckpt_rc_pingpong_events t_ckpt_rc_pingpong
	check_main ckpt_ud_pingpong t_ckpt_ud_pingpong
	check_main ckpt_srq_pingpong t_ckpt_srq_pingpong
	check_main ckpt_missing_peer t_missing_peer
	check_main verbs_other_creds t_other_creds
	check_main epoll_rdmacm t_epoll_rdmacm
	check_main cm_id_refused t_cm_id_refused
	check_main ckpt_mpi_ucx t_ckpt_mpi_ucx
	check_main guest_kernel_eventfd_mpi t_guest_kernel
	check_main fresh_boot_prepare t_fresh_prepare
	;;
kernel2)	# the distribution's other kernel (run-guest.sh: IBCR_VM_KSERIES)
	echo "kernel $(uname -r)"
	check ckpt_rc_pp_$(uname -r) t_ckpt_rc_pp
	check epoll_rdmacm_$(uname -r) t_epoll_rdmacm
	check ckpt_mpi_ucx_$(uname -r) t_ckpt_mpi_ucx
	check guest_kernel_eventfd_mpi_$(uname -r) t_guest_kernel
	;;
fresh) check fresh_boot_restart t_fresh_restart ;;
nodev) check no_device_restart t_no_device ;;
bench) bench; exit ;;
*) echo "unknown phase $PHASE" >&2; exit 2 ;;
esac
echo "guest $PHASE: $npass passed, $nfail failed"
((nfail == 0))
