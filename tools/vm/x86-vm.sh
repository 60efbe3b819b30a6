#!/usr/bin/env bash
# x86-vm.sh - run a command as root inside a qemu-system-x86_64 (TCG) guest that
# boots Debian's own x86_64 kernel and has a real Soft-RoCE device (rdma_rxe).
#
#   tools/vm/x86-vm.sh [options] -- COMMAND [ARG...]
#   tools/vm/x86-vm.sh [options] -- 'shell string'
#
# The guest sees the whole host root (read-only 9p + overlayfs with a tmpfs upper
# layer, so it is writable but nothing leaks back), runs COMMAND with bash in the
# caller's cwd, and this script prints the command's stdout/stderr and exits with
# its status: 124 when qemu hit the timeout, 125 when the guest gave no status.
# See docs/vm-harness.md for the design, cache layout and measured timings.
#
# Options:
#   --rw DIR          host DIR is mounted writable at the same path (repeatable)
#   --timeout SECS    kill qemu after SECS (default $IBCR_VM_TIMEOUT or 900)
#   --mem SIZE        guest RAM, qemu syntax (default $IBCR_VM_MEM or 2G)
#   --smp N           guest vCPUs (default $IBCR_VM_SMP or 2)
#   --net MODE        dummy: rxe0 on dummy0 (default, nothing leaves the guest)
#                     nic:   rxe0 on eth0, a virtio NIC linked to 127.0.0.1 UDP
#                            ports (see --udp; used by x86-vm-pair.sh)
#                     none:  no rxe device, only lo
#   --env NAME=VALUE  export NAME in the guest command's environment (repeatable)
#   -v                verbose: guest kernel log and harness steps to stderr
# Advanced (used by x86-vm-pair.sh):
#   --ip ADDR         guest address of dummy0/eth0 (default 10.99.0.1), /24
#   --udp LOCAL:REMOTE  --net nic: UDP ports on 127.0.0.1 of this guest's NIC and
#                     of its peer (default: a free LOCAL, REMOTE = LOCAL + 1)
#   --name NAME       guest hostname (default ibcr-vm)
# Environment:
#   IBCR_VM_CACHE      cache root (default /var/cache/ibcr-vm; this script uses
#                      its x86_64/ subdirectory)
#   IBCR_VM_KSERIES    a kernel series of the distribution, e.g. 6.12: its newest
#                      ABI (meta package linux-image-6.12-amd64)
#   IBCR_VM_KVER       pin the guest kernel ABI, e.g. 6.1.0-57-amd64 (default:
#                      what linux-image-amd64 depends on)
#   IBCR_VM_SKIP_DEPS=1  don't run tools/vm/deps-x86.sh
#   IBCR_VM_TIMEOUT, IBCR_VM_MEM, IBCR_VM_SMP, IBCR_VM_VERBOSE=1: option defaults
#   IBCR_VM_ACCEL      qemu accelerator (default tcg)
#   IBCR_VM_QEMU_OPTS  extra qemu options (word-split), for experiments
set -euo pipefail

readonly PROG=x86-vm.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE
# Our part of the shared VM cache (tools/vm/arm64-vm.sh uses .../arm64).
readonly CACHE=${IBCR_VM_CACHE:-/var/cache/ibcr-vm}/x86_64

# Modules loaded in the guest, in this order (modprobe pulls in dependencies).
# 9p/virtio/overlay: the host root; rxe + uverbs + rdma_ucm: verbs and rdma_cm;
# crc32*: rxe's ICRC; dummy/veth/virtio_net/tun: netdevs; *_diag + nf_tables +
# nfnetlink: what criu needs for sockets and network locking.
readonly GUEST_MODULES=(
    virtio_pci virtio_net 9pnet_virtio 9p overlay
    crc32_generic crc32c_generic libcrc32c
    rdma_rxe ib_uverbs rdma_ucm ib_umad
    dummy veth tun
    unix_diag inet_diag tcp_diag udp_diag netlink_diag af_packet_diag raw_diag
    nfnetlink nf_tables
)
# Bump when the layout of the cached base initramfs changes.
readonly BASE_FORMAT=1
# 9p message size: bigger means fewer round trips through TCG.
readonly MSIZE=262144

# ---------------------------------------------------------------- helpers ----
note() { echo "$PROG: $*" >&2; }
die() { note "$*"; exit 125; }
verbose() { if ((opt_verbose)); then note "$*"; fi; }

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

# --------------------------------------------------------------- options ----
opt_rw=()
opt_env=()
opt_timeout=${IBCR_VM_TIMEOUT:-900}
opt_mem=${IBCR_VM_MEM:-2G}
opt_smp=${IBCR_VM_SMP:-2}
opt_net=dummy
opt_verbose=${IBCR_VM_VERBOSE:-0}
opt_ip=10.99.0.1
opt_udp=
opt_name=ibcr-vm
command_string=

parse_args() {
    while (($#)); do
        case $1 in
            --rw) opt_rw+=("${2:?--rw needs a directory}"); shift 2 ;;
            --timeout) opt_timeout=${2:?--timeout needs seconds}; shift 2 ;;
            --mem) opt_mem=${2:?--mem needs a size}; shift 2 ;;
            --smp) opt_smp=${2:?--smp needs a number}; shift 2 ;;
            --net) opt_net=${2:?--net needs dummy, nic or none}; shift 2 ;;
            --env) opt_env+=("${2:?--env needs NAME=VALUE}"); shift 2 ;;
            --ip) opt_ip=${2:?--ip needs an address}; shift 2 ;;
            --udp) opt_udp=${2:?--udp needs LOCAL:REMOTE}; shift 2 ;;
            --name) opt_name=${2:?--name needs a name}; shift 2 ;;
            -v | --verbose) opt_verbose=1; shift ;;
            -h | --help) usage; exit 0 ;;
            --) shift; break ;;
            -*) note "unknown option $1 (see --help)"; exit 2 ;;
            *) break ;;
        esac
    done
    (($#)) || { note "no command given (see --help)"; exit 2; }
    # One argument is a shell string; several are a command line to quote.
    if (($# == 1)); then
        command_string=$1
    else
        command_string=$(printf '%q ' "$@")
    fi

    [[ $opt_timeout =~ ^[0-9]+$ ]] || { note "--timeout: not a number: $opt_timeout"; exit 2; }
    [[ $opt_smp =~ ^[0-9]+$ ]] || { note "--smp: not a number: $opt_smp"; exit 2; }
    [[ $opt_net =~ ^(dummy|nic|none)$ ]] || { note "--net: dummy, nic or none, not $opt_net"; exit 2; }
    [[ $opt_ip =~ ^[0-9]+(\.[0-9]+){3}$ ]] || { note "--ip: not an IPv4 address: $opt_ip"; exit 2; }
    [[ -z $opt_udp || $opt_udp =~ ^[0-9]+:[0-9]+$ ]] || { note "--udp: LOCAL:REMOTE, not $opt_udp"; exit 2; }
    [[ $opt_name =~ ^[A-Za-z0-9-]+$ ]] || { note "--name: letters, digits and - only"; exit 2; }
    local e
    for e in ${opt_env[@]+"${opt_env[@]}"}; do
        [[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { note "--env: not NAME=VALUE: $e"; exit 2; }
    done
}

# ----------------------------------------------------------- kernel cache ----
# Layout ($CACHE = ${IBCR_VM_CACHE:-/var/cache/ibcr-vm}/x86_64):
#         $CACHE/<kver>/linux-image-<kver>_*.deb   the package (only read to
#                                                 build a new base initramfs)
#         $CACHE/<kver>/vmlinuz                   written last: ABI complete
#         $CACHE/<kver>/base-<hash>.cpio.gz       busybox + modules, per module
#                                                 list/busybox/format (hash)
#         $CACHE/.lock                            flock(1) of every builder
# Everything is built in $CACHE/.tmp.* and renamed into place, so a reader that
# does not take the lock never sees a half-written file.

lock_fd=
# Serialises cache builders (concurrent runs, CI jobs sharing the cache).
take_cache_lock() {
    [[ -n $lock_fd ]] && return 0
    if ! mkdir -p "$CACHE" 2>/dev/null || ! touch "$CACHE/.lock" 2>/dev/null; then
        die "cannot write the cache directory $CACHE (IBCR_VM_CACHE)"
    fi
    exec {lock_fd}>>"$CACHE/.lock"
    if ! flock -w 1800 "$lock_fd"; then
        die "timed out waiting for the cache lock $CACHE/.lock"
    fi
    # Holding the lock, any build directory left behind is from a killed run.
    rm -rf "$CACHE"/.tmp.*
}

release_cache_lock() {
    [[ -n $lock_fd ]] || return 0
    exec {lock_fd}>&-
    lock_fd=
}

# The kernel ABI Debian's linux-image-amd64 points at right now, or nothing.
# apt-cache takes ~1.5 s here (no pkgcache.bin), so the answer is remembered
# in $CACHE/apt-abi for as long as the package lists stay the same.
apt_kernel_abi() {
    # IBCR_VM_KSERIES=6.12: the newest ABI of that series (its meta package)
    local meta=linux-image-${IBCR_VM_KSERIES:+$IBCR_VM_KSERIES-}amd64
    local key memo=$CACHE/apt-abi${IBCR_VM_KSERIES:+-$IBCR_VM_KSERIES} kver mkey
    key=$(find /var/lib/apt/lists/ -maxdepth 1 -printf '%f %s %T@\n' 2>/dev/null | sort | md5sum | cut -c1-32)
    if [[ -f $memo ]] && read -r mkey kver <"$memo" && [[ $mkey == "$key" && -n $kver ]]; then
        echo "$kver"
        return
    fi
    kver=$(apt-cache depends "$meta" 2>/dev/null |
        sed -n 's/^ *Depends: linux-image-\([^ ]*\)$/\1/p' | head -n 1) || true
    if [[ -n $kver ]] && mkdir -p "$CACHE" 2>/dev/null; then
        if ! { echo "$key $kver" >"$memo.$$" && mv -f "$memo.$$" "$memo"; }; then
            rm -f "$memo.$$"
        fi
    fi
    echo "$kver"
}

# Newest ABI with a complete entry in the cache, or nothing.
newest_cached_abi() {
    local d
    for d in "$CACHE"/*/vmlinuz; do
        if [[ -f $d ]]; then basename "$(dirname "$d")"; fi
    done | sort -V | tail -n 1
}

cached_deb() { compgen -G "$CACHE/$1/linux-image-$1_*.deb" | head -n 1; }
kernel_is_cached() { [[ -f $CACHE/$1/vmlinuz && -n $(cached_deb "$1") ]]; }

# Downloads linux-image-<kver> (without installing it) into the cache.
# Returns non-zero when apt cannot get it; the caller decides what then.
fetch_kernel() {
    local kver=$1 tmp
    take_cache_lock
    kernel_is_cached "$kver" && return 0
    note "fetching linux-image-$kver (once per kernel ABI) into $CACHE"
    # Callers test our status, which turns `set -e` off in here: every step
    # is checked by hand.
    tmp=$(mktemp -d "$CACHE/.tmp.XXXXXX") || die "cannot create a directory in $CACHE"
    # apt drops privileges to _apt for downloads; let it write there.
    chmod 0777 "$tmp"
    if ! (cd "$tmp" && apt-get download -q "linux-image-$kver") >"$tmp/log" 2>&1; then
        verbose "apt-get download linux-image-$kver failed: $(tail -n 3 "$tmp/log")"
        rm -rf "$tmp"
        return 1
    fi
    local deb
    deb=$(compgen -G "$tmp/linux-image-${kver}_*.deb" | head -n 1)
    [[ -n $deb ]] || { rm -rf "$tmp"; die "apt-get download gave no .deb for $kver"; }
    if ! { mkdir -p "$tmp/x" &&
           dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" "./boot/vmlinuz-$kver" &&
           mkdir -p "$CACHE/$kver" &&
           mv -f "$deb" "$CACHE/$kver/" &&
           mv -f "$tmp/x/boot/vmlinuz-$kver" "$CACHE/$kver/vmlinuz"; }; then  # marks complete
        rm -rf "$tmp"
        die "cannot store /boot/vmlinuz-$kver of $deb in $CACHE/$kver"
    fi
    rm -rf "$tmp"
}

# Prints the kernel ABI to boot, fetching it when needed.  Order: IBCR_VM_KVER;
# what apt says (after one `apt-get update` if the lists are stale or missing);
# the newest cached ABI when apt cannot tell or cannot download.
resolve_kernel() {
    local kver
    if [[ -n ${IBCR_VM_KVER:-} ]]; then
        kver=$IBCR_VM_KVER
        kernel_is_cached "$kver" || fetch_kernel "$kver" ||
            die "cannot download pinned kernel linux-image-$kver"
        echo "$kver"
        return
    fi
    local attempt
    for attempt in 1 2; do
        kver=$(apt_kernel_abi)
        if [[ -n $kver ]] && { kernel_is_cached "$kver" || fetch_kernel "$kver"; }; then
            echo "$kver"
            return
        fi
        # Stale or missing package lists: refresh once, as root only.
        ((attempt == 1 && EUID == 0)) || break
        verbose "apt-get update (kernel ABI '${kver:-?}' not resolvable)"
        apt-get -q -o DPkg::Lock::Timeout=600 update >/dev/null 2>&1 || break
    done
    kver=$(newest_cached_abi)
    [[ -n $kver ]] || die "cannot resolve or download Debian's x86_64 kernel (apt-cache depends linux-image-${IBCR_VM_KSERIES:+$IBCR_VM_KSERIES-}amd64)"
    note "apt cannot provide the current kernel; using cached $kver"
    echo "$kver"
}

# ------------------------------------------------------ base initramfs -----
base_hash() {
    local bb_version
    bb_version=$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null || echo unknown)
    printf '%s\n' "$BASE_FORMAT" "$1" "$bb_version" "${GUEST_MODULES[@]}" |
        sha256sum | cut -c1-12
}

# Copies module file $1 into the initramfs tree $2 at the same relative path,
# decompressed (busybox insmod is simplest with plain .ko; 6.1 ships .ko).
copy_module() {
    local src=$1 tree=$2 modroot=$3 rel dst
    rel=${src#"$modroot"/}
    dst=$tree/$(dirname "$rel")
    mkdir -p "$dst"
    case $src in
        *.ko) cp "$src" "$dst/" ;;
        *.ko.xz) xz -dc "$src" >"$dst/$(basename "${src%.xz}")" ;;
        *.ko.zst) zstd -qdc "$src" >"$dst/$(basename "${src%.zst}")" ;;
        *.ko.gz) gzip -dc "$src" >"$dst/$(basename "${src%.gz}")" ;;
        *) note "unexpected module file $src"; return 1 ;;
    esac
}

# Builds $CACHE/<kver>/base-<hash>.cpio.gz: static busybox (+ applet links),
# GUEST_MODULES with their dependencies and a modules.dep for busybox modprobe.
build_base() {
    local kver=$1 out=$2 tmp deb modroot root m line n=0
    take_cache_lock
    [[ -f $out ]] && return 0
    note "building guest initramfs for $kver (once per kernel ABI)"
    tmp=$(mktemp -d "$CACHE/.tmp.XXXXXX")
    deb=$(cached_deb "$kver")
    # All modules are needed for depmod to resolve dependencies.
    dpkg-deb -x "$deb" "$tmp/x"
    if [[ -d $tmp/x/usr/lib/modules/$kver && ! -d $tmp/x/lib/modules/$kver ]]; then
        mkdir -p "$tmp/x/lib" && mv "$tmp/x/usr/lib/modules" "$tmp/x/lib/modules"
    fi
    modroot=$tmp/x/lib/modules/$kver
    [[ -d $modroot ]] || { rm -rf "$tmp"; die "no /lib/modules/$kver in $deb"; }
    depmod -b "$tmp/x" "$kver"

    root=$tmp/root
    mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,mnt,tmp,run,etc/ibcr-vm,lib/modules/"$kver"}
    cp /bin/busybox "$root/bin/busybox"
    # Applet links at their usual places; /sbin/modprobe is what the kernel
    # runs to auto-load modules, also after the guest command's chroot.
    while read -r line; do
        [[ $line == bin/busybox ]] || ln -sf /bin/busybox "$root/$line"
    done < <(/bin/busybox --list-full)
    mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true

    for m in "${GUEST_MODULES[@]}"; do
        # "insmod /path/x.ko [params]" per module to load, "builtin x" for =y.
        if ! line=$(modprobe -d "$tmp/x" -S "$kver" --show-depends "$m" 2>&1); then
            note "module $m not in $kver: skipped"
            continue
        fi
        while read -r m_kind m_path _; do
            [[ $m_kind == insmod ]] || continue
            [[ -f $root/lib/modules/$kver/${m_path#"$modroot"/} ]] && continue
            copy_module "$m_path" "$root/lib/modules/$kver" "$modroot"
            n=$((n + 1))
        done <<<"$line"
    done
    cp "$modroot"/modules.{order,builtin,builtin.modinfo} "$root/lib/modules/$kver/" 2>/dev/null || true
    depmod -b "$root" "$kver"
    printf '%s\n' "${GUEST_MODULES[@]}" >"$root/etc/ibcr-vm/modules"
    echo "$kver" >"$root/etc/ibcr-vm/kver"
    verbose "initramfs: busybox + $n modules"

    (cd "$root" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
        cpio --null -o -H newc -R 0:0 --quiet) | gzip -6 >"$tmp/base.cpio.gz"
    mv -f "$tmp/base.cpio.gz" "$out"
    rm -rf "$tmp"
}

# ----------------------------------------------------------- guest /init ----
# PID 1 of the guest (busybox sh).  It stays in the initramfs for the whole run,
# so the kernel's module auto-loading (/sbin/modprobe + modules.dep in the
# initramfs) keeps working after the command's chroot into the host root.
write_init() {
    cat >"$1" <<'INIT'
#!/bin/sh
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

verbose=0
grep -q 'ibcr_verbose=1' /proc/cmdline && verbose=1
say() { [ "$verbose" = 1 ] && echo "ibcr-vm init: $*"; return 0; }
# No exit status file means the host reports 125 and shows this console.
fail() { echo "ibcr-vm init: FAILED: $*"; poweroff -f; }
ninep() { mount -t 9p -o "trans=virtio,version=9p2000.L,msize=MSIZE,$1" "$2" "$3"; }

for m in $(cat /etc/ibcr-vm/modules); do
    opts=
    # No automatic dummy0: stage2 makes one only for --net dummy.
    [ "$m" = dummy ] && opts=numdummies=0
    modprobe "$m" $opts 2>/dev/null || echo "ibcr-vm init: module $m did not load"
done
say "modules loaded, uptime $(cut -d' ' -f1 /proc/uptime)"

M=/mnt
R=$M/root
mkdir -p $M/run $M/host $M/upper $R
# Per-run directory: config, command, stdout, stderr, rc.  cache=mmap: writes
# go straight to the host, so the host streams output while the command runs.
ninep cache=mmap ibcrrun $M/run || fail "mount run dir"
# Host root read-only; overlayfs with a tmpfs upper layer makes it writable
# (also /tmp, where the caller's cwd may be) without touching the host.
ninep cache=loose,ro ibcrroot $M/host || fail "mount host root"
mount -t tmpfs -o mode=0755 tmpfs $M/upper
mkdir -p $M/upper/data $M/upper/work
mount -t overlay -o lowerdir=$M/host,upperdir=$M/upper/data,workdir=$M/upper/work \
    overlay $R || fail "overlay mount"

mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup 2>/dev/null
mount -t configfs configfs $R/sys/kernel/config 2>/dev/null
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
# devtmpfs has no /dev/fd etc.; bash's <(...) needs /dev/fd.
ln -sfn /proc/self/fd $R/dev/fd
ln -sfn /proc/self/fd/0 $R/dev/stdin
ln -sfn /proc/self/fd/1 $R/dev/stdout
ln -sfn /proc/self/fd/2 $R/dev/stderr
mount -t tmpfs -o mode=0755 tmpfs $R/run
# The host has no modules for this kernel: show ours, so that modprobe/modinfo
# in the guest work for the modules the initramfs carries.
kver=$(uname -r)
mkdir -p $R/lib/modules/$kver && mount --bind /lib/modules/$kver $R/lib/modules/$kver
mkdir -p $R/run/ibcr-vm $R/run/lock
mount --bind $M/run $R/run/ibcr-vm
# --rw directories, "TAG PATH" per line, parents before children.
while read -r tag path; do
    [ -n "$tag" ] || continue
    mkdir -p "$R$path"   # e.g. under the fresh /run
    ninep cache=mmap "$tag" "$R$path" || fail "mount --rw $path"
done < $M/run/rw

hostname "$(cat $M/run/hostname)"
say "chroot, uptime $(cut -d' ' -f1 /proc/uptime)"
chroot $R /bin/bash /run/ibcr-vm/stage2
say "command done, uptime $(cut -d' ' -f1 /proc/uptime)"
sync
poweroff -f
INIT
    sed -i "s/MSIZE/$MSIZE/" "$1"
    chmod 0755 "$1"
}

# Second stage, run by the host's bash inside the chroot: network + rxe0, then
# the command.  Its own errors land in the command's stderr file.
write_stage2() {
    cat >"$1" <<'STAGE2'
#!/bin/bash
set -u
run=/run/ibcr-vm
exec </dev/null >>"$run/stdout" 2>>"$run/stderr"
# shellcheck source=/dev/null
source "$run/config"   # net ip cwd guest_env[]
uptime_s() { cut -d' ' -f1 /proc/uptime; }
echo "chroot $(uptime_s)" >>"$run/times"

fail() { echo "ibcr-vm: $*" >&2; exit 125; }   # no rc file: host says 125

# rxe is usable once its port is ACTIVE and the IPv4 GID (index 1) exists.
wait_rxe() {
    local port=/sys/class/infiniband/rxe0/ports/1 i
    for ((i = 0; i < 200; i++)); do
        if grep -q ACTIVE "$port/state" 2>/dev/null &&
           ! grep -q '^0000:0000:0000:0000:0000:0000:0000:0000$' "$port/gids/1" 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    return 1
}

setup_net() {
    local dev
    ip link set lo up || return 1
    case $net in
        none) return 0 ;;
        dummy)
            dev=dummy0
            [[ -d /sys/class/net/dummy0 ]] || ip link add dummy0 type dummy || return 1 ;;
        nic)
            dev=$(ls /sys/class/net | grep -v '^lo$' | grep -v '^dummy' | head -n 1)
            [[ -n $dev ]] || { echo "no NIC in the guest" >&2; return 1; } ;;
    esac
    ip addr add "$ip/24" dev "$dev" &&
        ip link set "$dev" up &&
        rdma link add rxe0 type rxe netdev "$dev" &&
        wait_rxe || { echo "rxe0 not ACTIVE with an IPv4 GID" >&2; return 1; }
}

setup_net || fail "network/rxe setup failed (net=$net)"
cd -- "$cwd" || fail "cannot cd to $cwd in the guest"
echo "command $(uptime_s)" >>"$run/times"
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb \
    IBCR_VM=1 IBCR_VM_IP="$ip" IBCR_VM_NET="$net" \
    ${guest_env[@]+"${guest_env[@]}"} \
    /bin/bash -c "$(<"$run/cmd")"
rc=$?
echo "end $(uptime_s)" >>"$run/times"
echo "$rc" >"$run/rc.tmp" && mv -f "$run/rc.tmp" "$run/rc"
STAGE2
    chmod 0755 "$1"
}

# -------------------------------------------------------------- the run -----
run_dir=
qemu_pid=
guest_done=0
# shellcheck disable=SC2317  # called through the EXIT trap
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    # A failure of the harness itself (not a usage error, not a signal) must
    # not look like a status of the guest command.
    if ((!guest_done && status != 0 && status != 2 && status < 128)); then
        status=125
    fi
    if [[ -n $qemu_pid ]]; then
        kill "$qemu_pid" 2>/dev/null || true   # timeout(1) passes it on to qemu
        wait "$qemu_pid" 2>/dev/null || true
    fi
    [[ -n $run_dir ]] && rm -rf "$run_dir"
    exit "$status"
}

# Free UDP port on 127.0.0.1 (for --net nic without --udp).
free_udp_port() {
    local port used
    used=$(ss -Hlun 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
    for _ in {1..100}; do
        port=$((20000 + RANDOM % 20000))
        grep -qx "$port" <<<"$used" || grep -qx "$((port + 1))" <<<"$used" || { echo "$port"; return; }
    done
    die "no free UDP port found"
}

prepare_run_dir() {
    local kver=$1 base=$2 i dir cwd
    run_dir=$(mktemp -d "${TMPDIR:-/tmp}/ibcr-vm.XXXXXX")
    chmod 0755 "$run_dir"
    : >"$run_dir/stdout"
    : >"$run_dir/stderr"
    printf '%s\n' "$command_string" >"$run_dir/cmd"
    echo "$opt_name" >"$run_dir/hostname"

    cwd=$(pwd -P)
    {
        printf 'net=%q\nip=%q\ncwd=%q\n' "$opt_net" "$opt_ip" "$cwd"
        printf 'guest_env=('
        if ((${#opt_env[@]})); then printf '%q ' "${opt_env[@]}"; fi
        printf ')\n'
    } >"$run_dir/config"

    # --rw dirs: canonical paths, parents first so nested mounts stack right.
    : >"$run_dir/rw"
    rw_dirs=()
    if ((${#opt_rw[@]})); then
        for dir in "${opt_rw[@]}"; do
            mkdir -p "$dir"
            dir=$(cd "$dir" && pwd -P)
            [[ $dir != / && $dir != *$'\n'* ]] || die "--rw: unusable directory '$dir'"
            rw_dirs+=("$dir")
        done
        mapfile -t rw_dirs < <(printf '%s\n' "${rw_dirs[@]}" | sort -u)
        for i in "${!rw_dirs[@]}"; do
            printf 'ibcrrw%d %s\n' "$i" "${rw_dirs[i]}" >>"$run_dir/rw"
        done
    fi

    write_stage2 "$run_dir/stage2"
    # Initramfs = cached base + this run's /init (the kernel unpacks
    # concatenated cpio archives in order).
    mkdir "$run_dir/initfs"
    write_init "$run_dir/initfs/init"
    (cd "$run_dir/initfs" && echo init | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$run_dir/init.cpio.gz"
    cat "$base" "$run_dir/init.cpio.gz" >"$run_dir/initrd.gz"
    rm -rf "$run_dir/initfs" "$run_dir/init.cpio.gz"
}

qemu_args=()
build_qemu_args() {
    local kver=$1 i append mac
    append="console=ttyS0 panic=-1 mitigations=off"
    if ((opt_verbose)); then
        append+=" loglevel=6 ibcr_verbose=1"
    else
        append+=" quiet loglevel=3"
    fi
    qemu_args=(
        -nodefaults -no-user-config
        -machine "q35,accel=${IBCR_VM_ACCEL:-tcg}" -cpu max
        -smp "$opt_smp" -m "$opt_mem"
        -display none -no-reboot
        -serial "file:$run_dir/console"
        -kernel "$CACHE/$kver/vmlinuz" -initrd "$run_dir/initrd.gz" -append "$append"
        # multidevs=remap: / spans several host filesystems (inode clashes).
        -virtfs "local,path=/,mount_tag=ibcrroot,security_model=none,readonly=on,multidevs=remap"
        -virtfs "local,path=$run_dir,mount_tag=ibcrrun,security_model=none"
    )
    # Extra qemu options for experiments/debugging (word-split on purpose).
    # shellcheck disable=SC2206
    qemu_args+=(${IBCR_VM_QEMU_OPTS:-})
    for i in "${!rw_dirs[@]}"; do
        qemu_args+=(-virtfs "local,path=${rw_dirs[i]},mount_tag=ibcrrw$i,security_model=none,multidevs=remap")
    done
    if [[ $opt_net == nic ]]; then
        local lport rport
        if [[ -n $opt_udp ]]; then
            lport=${opt_udp%%:*} rport=${opt_udp##*:}
        else
            lport=$(free_udp_port) rport=$((lport + 1))
        fi
        # Locally administered MAC derived from the guest address.
        # shellcheck disable=SC2086  # split the validated address at the dots
        mac=$(IFS=.; set -- $opt_ip; printf '52:54:%02x:%02x:%02x:%02x' "$1" "$2" "$3" "$4")
        qemu_args+=(
            -netdev "dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=$lport,remote.type=inet,remote.host=127.0.0.1,remote.port=$rport"
            -device "virtio-net-pci,netdev=n0,mac=$mac"
        )
    fi
}

# Copies what the guest appended to file $1 since the last call to fd $2.
declare -A sent=()
pump() {
    local file=$1 fd=$2 size off=${sent[$1]:-0}
    size=$(stat -c %s "$file" 2>/dev/null || echo 0)
    ((size > off)) || return 0
    # shellcheck disable=SC2261  # stdout goes to $fd first, then dd's own
    # complaints (EPIPE when our reader is gone) to /dev/null, even for fd 2.
    dd if="$file" bs=64K skip="$off" count=$((size - off)) \
        iflag=skip_bytes,count_bytes status=none >&"$fd" 2>/dev/null || true
    sent[$file]=$size
}

pump_all() {
    pump "$run_dir/stdout" 1
    pump "$run_dir/stderr" 2
    if ((opt_verbose)); then pump "$run_dir/console" 2; fi
}

# Runs qemu under timeout(1), streaming the guest's output while it runs.
# Returns the exit status of the guest command (or 124/125).
run_qemu() {
    local t0 qstatus=0 rc
    t0=$(date +%s%N)
    : >"$run_dir/console"
    # --foreground keeps qemu in our process group: a signal to the group
    # (Ctrl-C, x86-vm-pair.sh stopping a guest) reaches qemu directly.
    timeout --foreground --kill-after=10 "$opt_timeout" qemu-system-x86_64 "${qemu_args[@]}" \
        </dev/null >"$run_dir/qemu.log" 2>&1 &
    qemu_pid=$!
    while kill -0 "$qemu_pid" 2>/dev/null; do
        pump_all
        sleep 0.2
    done
    wait "$qemu_pid" || qstatus=$?
    qemu_pid=
    pump_all

    if ((opt_verbose)); then
        note "qemu exit $qstatus, wall $((($(date +%s%N) - t0) / 1000000)) ms, guest uptime: $(tr '\n' ' ' <"$run_dir/times" 2>/dev/null)"
    fi
    rc=$(cat "$run_dir/rc" 2>/dev/null || true)
    if [[ $rc =~ ^[0-9]+$ ]]; then
        return "$rc"
    fi
    if ((qstatus == 124 || qstatus == 137)); then
        note "qemu killed after the ${opt_timeout}s timeout"
        show_console
        return 124
    fi
    note "the guest gave no exit status (qemu exit $qstatus)"
    show_console
    return 125
}

show_console() {
    if [[ -s $run_dir/qemu.log ]]; then
        note "qemu said:"
        sed 's/^/  /' "$run_dir/qemu.log" >&2
    fi
    if ((!opt_verbose)) && [[ -s $run_dir/console ]]; then
        note "last lines of the guest console:"
        tail -n 30 "$run_dir/console" | sed 's/^/  /' >&2
    fi
}

main() {
    parse_args "$@"
    if [[ ${IBCR_VM_SKIP_DEPS:-0} != 1 ]]; then
        "$HERE/deps-x86.sh" || die "dependencies missing (tools/vm/deps-x86.sh)"
    fi
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # Whoever reads our output may be gone (a prefixing sed killed with us):
    # a write must not kill this script before cleanup stops qemu.
    trap '' PIPE

    local kver base
    kver=$(resolve_kernel)
    base=$CACHE/$kver/base-$(base_hash "$kver").cpio.gz
    if [[ ! -f $base ]]; then
        build_base "$kver" "$base"
    fi
    release_cache_lock
    verbose "kernel $kver, initramfs $base"

    prepare_run_dir "$kver" "$base"
    build_qemu_args "$kver"
    local rc=0
    run_qemu || rc=$?
    guest_done=1
    exit "$rc"
}

main "$@"
