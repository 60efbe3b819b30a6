#!/usr/bin/env bash
# smoke-x86.sh - proves tools/vm/x86-vm.sh and x86-vm-pair.sh work with real
# verbs (Soft-RoCE / rdma_rxe in a qemu TCG guest running Debian's kernel).
#
#   1. one guest, one boot: ibv_devices lists rxe0, and an ibv_rc_pingpong
#      server + client (over 127.0.0.1, GID index 1) do 1000 iterations.
#   2. two guests (x86-vm-pair.sh): rc_pingpong server in A, client in B.
#   3. one guest: --rw writes reach the host, writes elsewhere do not, the
#      argv form and --env arrive intact, stdout/stderr are kept apart, and
#      `exit 7` comes back as 7.
#
# Needs root (installs its packages on first use, see tools/vm/deps-x86.sh).
# Prints "smoke-x86: N passed, M failed" last; exits non-zero on any failure.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly VM=$ROOT/tools/vm/x86-vm.sh
readonly PAIR=$ROOT/tools/vm/x86-vm-pair.sh

passed=0
failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibcr-smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run_test NAME FUNCTION: runs FUNCTION, counts and reports the result.
run_test() {
    local name=$1 fn=$2 t0 rc=0
    t0=$SECONDS
    echo "--- $name"
    "$fn" || rc=$?
    if ((rc == 0)); then
        passed=$((passed + 1))
        echo "PASS $name ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1))
        echo "FAIL $name (status $rc, $((SECONDS - t0)) s)"
    fi
}

# --- 1: verbs in one guest -------------------------------------------------
# Runs in the guest.  rc_pingpong's server takes exactly one TCP peer, so its
# readiness is seen with `ss` (a probing connect would use it up).  Every
# process has a timeout so a failed peer cannot hang the run.
guest_pingpong() {
    cat <<'EOF'
set -euo pipefail
ibv_devices
[[ " $(ibv_devices) " =~ [[:space:]]rxe0[[:space:]] ]] || { echo "rxe0 not listed by ibv_devices" >&2; exit 1; }
port=18515
srv_log=$(mktemp)
timeout 120 ibv_rc_pingpong -d rxe0 -g 1 -n 1000 -p "$port" >"$srv_log" 2>&1 &
server=$!
for ((i = 0; i < 600; i++)); do
    ss -Hltn "sport = :$port" | grep -q . && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
done
client_rc=0
timeout 120 ibv_rc_pingpong -d rxe0 -g 1 -n 1000 -p "$port" 127.0.0.1 || client_rc=$?
server_rc=0
wait "$server" || server_rc=$?
sed 's/^/server: /' "$srv_log"
echo "client exit $client_rc, server exit $server_rc"
grep -q '^1000 iters' "$srv_log" || { echo "server did not complete 1000 iterations" >&2; exit 1; }
((client_rc == 0 && server_rc == 0))
EOF
}

test_one_guest_pingpong() {
    local rc
    "$VM" --timeout 600 -- "$(guest_pingpong)" | tee "$tmp/one.out"
    rc=${PIPESTATUS[0]}
    ((rc == 0)) && grep -q '^1000 iters' "$tmp/one.out"
}

# --- 2: two guests over qemu's dgram link -----------------------------------
test_two_guest_pingpong() {
    local server client rc
    server='timeout 240 ibv_rc_pingpong -d rxe0 -g 1 -n 1000'
    # shellcheck disable=SC2016  # expanded in the guest
    # The peer boots on its own schedule: retry until the server listens.
    # "Couldn't connect" does not consume the server; any other failure
    # leaves it without a peer, so a later success is a real exchange.
    client='deadline=$((SECONDS + 180))
        until timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -n 1000 "$IBCR_VM_PEER_IP"; do
            ((SECONDS < deadline)) || exit 1
            sleep 0.5
        done'
    "$PAIR" --timeout 600 -- "$server" "$client" | tee "$tmp/pair.out"
    rc=${PIPESTATUS[0]}
    ((rc == 0)) && grep -q '^\[A\] 1000 iters' "$tmp/pair.out" && grep -q '^\[B\] 1000 iters' "$tmp/pair.out"
}

# --- 3: --rw, isolation, argv form, --env, streams, exit status -------------
test_rw_and_status() {
    local dir=$tmp/rw leak=/tmp/ibcr-smoke-leak.$$ rc=0
    mkdir -p "$dir"
    # argv form: each word arrives as one argument, spaces included.
    # shellcheck disable=SC2016  # expanded in the guest
    "$VM" --rw "$dir" --env 'SMOKE_VALUE=a b' -- \
        bash -c 'echo "$SMOKE_VALUE" >"$1/from-guest"; : >"$2"; echo to-stdout; echo to-stderr >&2; exit 7' \
        _ "$dir" "$leak" >"$tmp/rw.out" 2>"$tmp/rw.err" || rc=$?
    cat "$tmp/rw.out"
    cat "$tmp/rw.err" >&2
    local ok=0
    ((rc == 7)) || { echo "exit status $rc, expected 7"; ok=1; }
    [[ $(cat "$dir/from-guest" 2>/dev/null) == "a b" ]] || { echo "--rw file missing or wrong"; ok=1; }
    [[ ! -e $leak ]] || { echo "a write outside --rw reached the host: $leak"; rm -f "$leak"; ok=1; }
    [[ $(cat "$tmp/rw.out") == to-stdout ]] || { echo "stdout is not exactly 'to-stdout'"; ok=1; }
    grep -qx to-stderr "$tmp/rw.err" || { echo "stderr lacks 'to-stderr'"; ok=1; }
    ! grep -q to-stderr "$tmp/rw.out" || { echo "stderr leaked into stdout"; ok=1; }
    return "$ok"
}

main() {
    local t0=$SECONDS
    run_test "one guest: ibv_devices + rc_pingpong 1000 iters" test_one_guest_pingpong
    run_test "two guests: rc_pingpong A <-> B" test_two_guest_pingpong
    run_test "--rw, isolation, argv, --env, exit 7" test_rw_and_status
    echo "smoke-x86 took $((SECONDS - t0)) s"
    echo "smoke-x86: $passed passed, $failed failed"
    ((failed == 0))
}

main "$@"
