#!/usr/bin/env bash
# deps-x86.sh - install what tools/vm/x86-vm.sh needs on a Debian (bookworm) host.
#
# Idempotent: packages already installed are not touched, `apt-get update` only
# runs when something has to be installed.  Quiet on success; on failure the
# apt output is printed to stderr.  Must run as root when anything is missing.
#
# The guest kernel (linux-image-*) is deliberately NOT installed here: x86-vm.sh
# downloads and unpacks it into its own cache without touching the host.
set -euo pipefail

# qemu-system-x86: the emulator (TCG; no KVM needed).
# busybox-static: PID 1 of the guest initramfs (a dynamic busybox cannot run there).
# rdma-core, ibverbs-*, libibverbs-dev, perftest: verbs userspace, run from the
#   host root inside the guest (and headers for building verbs code on the host).
# iproute2: `ip` and `rdma` (creates rxe0) inside the guest, `ss` for tests.
# kmod: depmod/modprobe on the host, to resolve guest module dependencies.
# cpio: to pack the initramfs.
# slurmctld, slurmd, slurm-client, munge: the pair guests as a Slurm cluster
#   (tests/verbs/slurm-up.sh), for ibcr-job.
# libpmix-dev: ibcr-pmix (ibcr-job's PMIx engine) and Slurm's mpi/pmix plugin.
readonly PACKAGES=(
    qemu-system-x86 busybox-static rdma-core ibverbs-utils ibverbs-providers
    libibverbs-dev perftest iproute2 kmod cpio slurmctld slurmd slurm-client munge
    libpmix-dev
)

# Prints the packages of PACKAGES that are not fully installed.
missing_packages() {
    local pkg status
    for pkg in "${PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
        [[ $status == ii* ]] || printf '%s\n' "$pkg"
    done
}

main() {
    local missing log
    mapfile -t missing < <(missing_packages)
    ((${#missing[@]} == 0)) && return 0

    if ((EUID != 0)); then
        echo "deps-x86.sh: missing packages (${missing[*]}); run as root to install them" >&2
        return 1
    fi

    log=$(mktemp "${TMPDIR:-/tmp}/ibcr-deps.XXXXXX")
    # shellcheck disable=SC2064  # expand $log now: it is local
    trap "rm -f '$log'" EXIT
    export DEBIAN_FRONTEND=noninteractive
    # Wait for a concurrent apt/dpkg (another CI job, unattended-upgrades)
    # instead of failing on its lock.
    local -a apt_opts=(-q -y -o DPkg::Lock::Timeout=600)
    if ! apt-get "${apt_opts[@]}" update >"$log" 2>&1 ||
       ! apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
        echo "deps-x86.sh: installing ${missing[*]} failed:" >&2
        cat "$log" >&2
        return 1
    fi
}

main "$@"
