#!/usr/bin/env bash
# x86-vm-pair.sh - two "hosts": boot two x86-vm.sh guests whose NICs are linked
# by qemu's dgram netdev (UDP on 127.0.0.1 of this host, nothing else), each with
# rxe0 on its eth0, and run one command in each, concurrently.
#
#   tools/vm/x86-vm-pair.sh [options] -- 'CMD_A' 'CMD_B'
#
# Guest A is 10.99.0.1, guest B 10.99.0.2 (/24 on eth0, RoCE v2 GID index 1 =
# ::ffff:<address>).  Each command sees IBCR_VM_NAME (A or B), IBCR_VM_IP (its
# own address) and IBCR_VM_PEER_IP (the other guest's).  Output lines are
# prefixed with [A] or [B] (stdout stays stdout, stderr stays stderr).  Exits 0
# when both commands exit 0, else with A's status if non-zero, else B's.
#
# The guests boot independently: a command that needs its peer must wait for it
# (e.g. retry a client until the server listens), never rely on a fixed sleep.
#
# Options (passed to both guests): --rw DIR, --timeout SECS, --mem SIZE,
# --env NAME=VALUE, -v; --smp N (default 1 per guest: the host has 2 cores).
set -euo pipefail

readonly PROG=x86-vm-pair.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE
readonly IP_A=10.99.0.1 IP_B=10.99.0.2

note() { echo "$PROG: $*" >&2; }

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

# Two consecutive free UDP ports on 127.0.0.1; prints the first.
free_udp_ports() {
    local port used
    used=$(ss -Hlun 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
    for _ in {1..100}; do
        port=$((20000 + RANDOM % 20000))
        if ! grep -qx -e "$port" -e "$((port + 1))" <<<"$used"; then
            echo "$port"
            return 0
        fi
    done
    note "no free UDP ports found"
    return 1
}

# Runs one guest; its stdout and stderr lines get a [TAG] prefix and stay on
# stdout and stderr (fd 3 carries stdout past the stderr pipe).  The status is
# x86-vm.sh's (pipefail); the seds are part of the pipeline, so all output is
# written when this returns.
run_guest() {
    local tag=$1
    shift
    { "$HERE/x86-vm.sh" "$@" 2>&1 1>&3 3>&- | sed -u "s/^/[$tag] /" >&2; } 3>&1 |
        sed -u "s/^/[$tag] /"
}

pids=()
# On INT/TERM stop both guests.  Each runs in its own process group (set -m),
# so the whole pipeline gets the signal; x86-vm.sh's trap then stops its qemu.
stop_guests() {
    trap - INT TERM
    local pid
    for pid in ${pids[@]+"${pids[@]}"}; do
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    wait || true
    exit 143
}

main() {
    local common=(--net nic --smp 1)
    while (($#)); do
        case $1 in
            --rw | --timeout | --mem | --env | --smp)
                common+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
            -v | --verbose) common+=(-v); shift ;;
            -h | --help) usage; exit 0 ;;
            --) shift; break ;;
            *) note "unknown option $1 (see --help)"; exit 2 ;;
        esac
    done
    if (($# != 2)); then
        note "need exactly two commands: -- 'CMD_A' 'CMD_B'"
        exit 2
    fi
    local cmd_a=$1 cmd_b=$2

    # Install once here so the two guests do not both run apt (the kernel
    # cache itself is shared safely under flock by the two x86-vm.sh runs).
    if [[ ${IBCR_VM_SKIP_DEPS:-0} != 1 ]]; then
        "$HERE/deps-x86.sh"
    fi
    export IBCR_VM_SKIP_DEPS=1

    local rc_a=0 rc_b=0 port
    port=$(free_udp_ports)
    trap stop_guests INT TERM
    set -m   # a process group per background job, for stop_guests
    # A listens on port, sends to port+1; B the other way round.
    run_guest A "${common[@]}" --name vm-a --ip "$IP_A" --udp "$port:$((port + 1))" \
        --env IBCR_VM_NAME=A --env IBCR_VM_PEER_IP="$IP_B" -- "$cmd_a" &
    pids+=($!)
    run_guest B "${common[@]}" --name vm-b --ip "$IP_B" --udp "$((port + 1)):$port" \
        --env IBCR_VM_NAME=B --env IBCR_VM_PEER_IP="$IP_A" -- "$cmd_b" &
    pids+=($!)
    set +m   # the groups stay; this only silences bash's job notices
    # Both x86-vm.sh runs are bounded by their qemu timeout.
    wait "${pids[0]}" || rc_a=$?
    wait "${pids[1]}" || rc_b=$?
    if ((rc_a || rc_b)); then
        note "guest A exit $rc_a, guest B exit $rc_b"
        exit $((rc_a ? rc_a : rc_b))
    fi
}

main "$@"
