#!/usr/bin/env bash
# arm64-vm.sh - run a directory of static aarch64 test binaries in ONE boot of
# Debian's arm64 kernel under qemu-system-aarch64 (TCG; no KVM needed).
#
#   tools/vm/arm64-vm.sh [options] DIR [-- COMMAND [ARG...]]
#
# DIR (static aarch64 binaries, scripts, data) is copied into the guest's
# initramfs at /t.  The guest's /init mounts proc, sys, devtmpfs, devpts and
# tmpfs /tmp, cds to /t and runs COMMAND with busybox sh (default: sh
# ./run-suite.sh, if DIR has one), stdin from /dev/null, stdout+stderr on the
# serial console.  This script streams that output (kernel messages removed)
# to its stdout and exits with COMMAND's status; 124 if the guest hit the
# timeout, 125 if no status came back (crash, panic, qemu failure), 2 for a
# usage error.  Booting takes ~2-4 s, so batch many tests into one run.
#
# Options:
#   -o, --out HOSTDIR  the guest's /t/out is HOSTDIR on the host (9p, virtio),
#                      so files written there are back on the host when this
#                      script returns.  HOSTDIR is created if missing.  Without
#                      -o, /t/out is an ordinary guest directory.
#   --env NAME=VALUE   export NAME to COMMAND in the guest (repeatable)
#   --timeout SECS     kill qemu after SECS (default 600)
#   --mem SIZE         guest RAM, qemu syntax (default 1G; DIR lives in it)
#   --smp N            guest vCPUs (default 2)
#   --cpu MODEL        qemu CPU model (default cortex-a57; "max" is ~3x slower
#                      because of pointer-auth emulation, "max,pauth-impdef=on"
#                      is not)
#   -v, --verbose      kernel log, harness steps and guest timings to stderr
#   -h, --help         this text
#
# Environment:
#   IBCR_VM_CACHE       cache root (default /var/cache/ibcr-vm; this script
#                       uses its arm64/ subdirectory only)
#   IBCR_VM_KVER_ARM64  pin the guest kernel ABI, e.g. 6.1.0-57-arm64
#                       (default: what linux-image-arm64 depends on)
#   IBCR_VM_SKIP_DEPS=1 never run tools/aarch64/deps.sh --vm-only
#
# The kernel and busybox are Debian packages that are only downloaded
# (apt-get download) and unpacked, never installed.  See docs/aarch64.md.
#
# (The cache fillers run through with_cache_lock, which shellcheck can't see.)
# shellcheck disable=SC2317
set -euo pipefail

readonly PROG=arm64-vm.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE
readonly DEPS=$HERE/../aarch64/deps.sh

# Guest modules for -o (9p over virtio-mmio), in load order.  They are plain
# .ko files (Debian's arm64 kernel does not compress modules) loaded with
# busybox insmod, so no modules.dep/depmod is needed.
readonly NINEP_MODULES=(
    kernel/drivers/virtio/virtio_mmio.ko
    kernel/fs/netfs/netfs.ko
    kernel/fs/fscache/fscache.ko
    kernel/net/9p/9pnet.ko
    kernel/net/9p/9pnet_virtio.ko
    kernel/fs/9p/9p.ko
)
# Bump when what goes into a cached kernel directory changes.
readonly KERNEL_FORMAT=1

# Markers on the console.  Unlikely to appear in test output by accident.
readonly M_BEGIN='@@IBCR-A64-BEGIN'
readonly M_STATUS='@@IBCR-A64-STATUS='

opt_out=
opt_env=()
opt_timeout=600
opt_mem=1G
opt_smp=2
opt_cpu=cortex-a57
opt_verbose=0
dir=
cmd=()

# ---------------------------------------------------------------- helpers ----
note() { echo "$PROG: $*" >&2; }
die() { note "error: $*"; exit 125; }
usage_error() { note "$* (see --help)"; exit 2; }
verbose() { if ((opt_verbose)); then note "$*"; fi; }

usage() {
    sed -n '2,/^# (The cache fillers/{/^# (The cache fillers/d;s/^# \{0,1\}//;p}' "$0"
}

# POSIX-sh single quoting, so the guest's busybox sh gets each argument back
# unchanged (bash's printf %q may produce $'...', which is not POSIX).
shquote() {
    local s=$1
    printf "'%s'" "${s//\'/\'\\\'\'}"
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

parse_args() {
    while (($#)); do
        case $1 in
            -o | --out) opt_out=${2:?--out needs a directory}; shift 2 ;;
            --env)
                [[ ${2:-} == [A-Za-z_]*=* ]] || usage_error "--env needs NAME=VALUE"
                opt_env+=("$2"); shift 2 ;;
            --timeout) opt_timeout=${2:?--timeout needs seconds}; shift 2 ;;
            --mem) opt_mem=${2:?--mem needs a size}; shift 2 ;;
            --smp) opt_smp=${2:?--smp needs a number}; shift 2 ;;
            --cpu) opt_cpu=${2:?--cpu needs a model}; shift 2 ;;
            -v | --verbose) opt_verbose=1; shift ;;
            -h | --help) usage; exit 0 ;;
            --) usage_error "DIR must come before --" ;;
            -*) usage_error "unknown option $1" ;;
            *)
                dir=$1; shift
                if (($#)); then
                    [[ $1 == -- ]] || usage_error "expected -- after DIR, got '$1'"
                    shift
                    (($#)) || usage_error "no COMMAND after --"
                    cmd=("$@")
                fi
                break ;;
        esac
    done
    [[ -n $dir ]] || usage_error "no DIR given"
    [[ -d $dir ]] || usage_error "$dir is not a directory"
    [[ $opt_timeout =~ ^[0-9]+$ && $opt_timeout -gt 0 ]] || usage_error "bad --timeout"
    [[ $opt_smp =~ ^[0-9]+$ && $opt_smp -gt 0 ]] || usage_error "bad --smp"
    if ((${#cmd[@]} == 0)); then
        [[ -f $dir/run-suite.sh ]] ||
            usage_error "no COMMAND given and $dir has no run-suite.sh"
        cmd=(sh ./run-suite.sh)
    fi
}

# ------------------------------------------------------------- host tools ----
# What this script needs on the host.  On a fresh machine (as root) it asks
# tools/aarch64/deps.sh --vm-only for them: the arm64 dpkg architecture (so
# apt can download :arm64 packages), qemu-system-arm and cpio.
arm64_lists() { compgen -G '/var/lib/apt/lists/*_binary-arm64_Packages*' || true; }

host_ready() {
    command -v qemu-system-aarch64 >/dev/null && command -v cpio >/dev/null &&
        dpkg --print-foreign-architectures | grep -qx arm64 &&
        [[ -n $(arm64_lists) ]]
}

ensure_host() {
    host_ready && return 0
    if [[ ${IBCR_VM_SKIP_DEPS:-0} != 1 && $(id -u) == 0 ]]; then
        note "setting up the host (tools/aarch64/deps.sh --vm-only)"
        "$DEPS" --vm-only -q || die "tools/aarch64/deps.sh --vm-only failed"
    fi
    host_ready || die "need qemu-system-aarch64, cpio and arm64 apt lists:" \
        "run tools/aarch64/deps.sh --vm-only as root"
}

# ------------------------------------------------------------------ cache ----
# Layout (all under $CACHE = ${IBCR_VM_CACHE:-/var/cache/ibcr-vm}/arm64):
#   .lock                        flock(1) held by whoever fills the cache
#   resolved                     apt's answer (kernel ABI + versions, busybox
#                                version), reused while the arm64 apt lists
#                                are unchanged (apt-cache takes ~1 s a call)
#   kernel-<abi>/vmlinuz         the kernel Image (written last: complete)
#   kernel-<abi>/config          its .config, for reference
#   kernel-<abi>/version         linux-image-<abi> package version
#   kernel-<abi>/modules/*.ko    the 9p modules, for -o
#   busybox-<version>/busybox    static busybox from busybox-static:arm64
#                                (":" of the epoch written as "_")
#   base-<abi>-<bb>-<hash>.cpio  base initramfs: busybox, /init, modules;
#                                <hash> covers /init, so editing it in this
#                                script makes a new one
#   .tmp.*                       in-progress downloads, renamed into place
# Readers never lock: everything appears by rename(2), complete or not at all.
CACHE=

setup_cache() {
    local root=${IBCR_VM_CACHE:-}
    if [[ -z $root ]]; then
        root=/var/cache/ibcr-vm
        if ! mkdir -p "$root" 2>/dev/null || [[ ! -w $root ]]; then
            root=${XDG_CACHE_HOME:-$HOME/.cache}/ibcr-vm
        fi
    fi
    CACHE=$root/arm64
    mkdir -p "$CACHE"
}

# Run "$@" holding the cache lock (one filler at a time; others wait).
with_cache_lock() {
    local fd rc=0
    exec {fd}>>"$CACHE/.lock"
    flock -w 1800 "$fd" || die "timed out waiting for $CACHE/.lock"
    # Holding the lock, no other filler is at work: leftovers are from
    # killed runs.
    rm -rf "$CACHE"/.tmp.kernel.* "$CACHE"/.tmp.busybox.* "$CACHE"/.tmp.base.*
    "$@" || rc=$?
    exec {fd}>&-
    return "$rc"
}

# apt-get download PKG=VER into DEST (a fresh dir).  The dir belongs to _apt
# so apt's download sandbox can write there (else it warns and runs as root).
apt_download() {
    local spec=$1 dest=$2
    if [[ $(id -u) == 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$dest"; fi
    (cd "$dest" && apt-get -q download "$spec" >"$dest/.apt.log" 2>&1) || {
        cat "$dest/.apt.log" >&2
        return 1
    }
}

# apt-get update, when a download failed: on a machine whose lists are old,
# the version they name may be gone from the mirror (a kernel security
# update replaces the ABI package).  Retried, since another apt may hold the
# lists lock for a while.  Root only; returns 1 if it could not be done.
apt_refresh() {
    [[ $(id -u) == 0 ]] || return 1
    local try
    for try in 1 2 3 4 5; do
        note "apt-get update (stale package lists?), try $try"
        if apt-get -q -o DPkg::Lock::Timeout=600 update >/dev/null 2>&1; then
            rm -f "$CACHE/resolved"   # ask apt again, even if no list changed
            return 0
        fi
        sleep $((try * 5))
    done
    return 1
}

# Fill $KVER and $BBVER.  apt-cache is slow (no binary cache in
# Debian's container apt config), so its answer is kept in $CACHE/resolved
# together with a signature of the arm64 package lists it came from.
KVER='' BBVER=''
resolve_versions() {
    local sig line lists
    mapfile -t lists < <(arm64_lists)
    sig=$( ((${#lists[@]})) && stat -c '%n %s %Y' "${lists[@]}" | md5sum | cut -c1-16)
    if [[ -f $CACHE/resolved ]] && [[ $(sed -n 1p "$CACHE/resolved") == "lists=$sig" ]]; then
        # shellcheck disable=SC1090  # written by this function, below
        source <(sed -n '2,$p' "$CACHE/resolved")
    else
        # "linux-image-arm64:arm64\n  Depends: linux-image-6.1.0-57-arm64:arm64"
        KVER=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null |
            sed -n 's/^ *Depends: linux-image-\([^:]*\):arm64$/\1/p' | head -n1)
        BBVER=$(apt-cache policy busybox-static:arm64 2>/dev/null |
            awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }')
        if [[ -n $KVER && -n $BBVER ]]; then
            {
                echo "lists=$sig"
                echo "KVER=$(shquote "$KVER")"
                echo "BBVER=$(shquote "$BBVER")"
            } >"$CACHE/.tmp.resolved.$$"
            mv -f "$CACHE/.tmp.resolved.$$" "$CACHE/resolved" || true
        fi
    fi
    KVER=${IBCR_VM_KVER_ARM64:-$KVER}
    # Offline, or apt lists without arm64: fall back to what is cached.
    if [[ -z $KVER ]]; then
        line=$(compgen -G "$CACHE/kernel-*/vmlinuz" | sort -V | tail -n1)
        [[ -n $line ]] || die "cannot resolve the arm64 kernel ABI (apt-cache depends linux-image-arm64:arm64)"
        KVER=$(basename "$(dirname "$line")"); KVER=${KVER#kernel-}
        note "apt gave no kernel; using cached $KVER"
    fi
    if [[ -z $BBVER ]]; then
        line=$(compgen -G "$CACHE/busybox-*/busybox" | sort -V | tail -n1)
        [[ -n $line ]] || die "cannot resolve busybox-static:arm64's version"
        BBVER=$(basename "$(dirname "$line")"); BBVER=${BBVER#busybox-}; BBVER=${BBVER/_/:}
        note "apt gave no busybox; using cached $BBVER"
    fi
    verbose "kernel ABI $KVER, busybox $BBVER"
}

kernel_dir() { echo "$CACHE/kernel-$KVER"; }

kernel_cached() {
    [[ -f $(kernel_dir)/vmlinuz && $(cat "$(kernel_dir)/format" 2>/dev/null) == "$KERNEL_FORMAT" ]]
}

# Download linux-image-<abi>:arm64 and keep only what the guest needs.
# Only the wanted members are pulled out of the .deb (it is 60 MB, 300 MB
# unpacked), which is equivalent to dpkg-deb -x of those files.
fetch_kernel() {
    kernel_cached && return 0
    local t=$CACHE/.tmp.kernel.$$ deb m
    rm -rf "$t"; mkdir -p "$t/dl" "$t/x" "$t/k/modules"
    note "downloading linux-image-$KVER:arm64 (once per kernel ABI) into $CACHE"
    if ! apt_download "linux-image-$KVER:arm64" "$t/dl"; then
        if [[ -n ${IBCR_VM_KVER_ARM64:-} ]] || ! apt_refresh; then
            die "apt-get download linux-image-$KVER:arm64 failed" \
                "${IBCR_VM_KVER_ARM64:+(IBCR_VM_KVER_ARM64 pins an ABI apt must know)}"
        fi
        resolve_versions
        kernel_cached && { rm -rf "$t"; return 0; }
        rm -rf "$t/dl"; mkdir -p "$t/dl"
        apt_download "linux-image-$KVER:arm64" "$t/dl" ||
            die "apt-get download linux-image-$KVER:arm64 failed"
    fi
    deb=$(compgen -G "$t/dl/*.deb" | head -n1)
    dpkg-deb -f "$deb" Version >"$t/k/version"
    dpkg-deb --fsys-tarfile "$deb" |
        tar -x -C "$t/x" --wildcards --no-wildcards-match-slash \
            "./boot/vmlinuz-$KVER" "./boot/config-$KVER" \
            "${NINEP_MODULES[@]/#/./lib/modules/$KVER/}" 2>"$t/tar.log" || true
    [[ -f $t/x/boot/vmlinuz-$KVER ]] || { cat "$t/tar.log" >&2; die "no vmlinuz in $deb"; }
    cp "$t/x/boot/config-$KVER" "$t/k/config"
    for m in "${NINEP_MODULES[@]}"; do
        [[ -f $t/x/lib/modules/$KVER/$m ]] && cp "$t/x/lib/modules/$KVER/$m" "$t/k/modules/"
    done
    echo "$KERNEL_FORMAT" >"$t/k/format"
    cp "$t/x/boot/vmlinuz-$KVER" "$t/k/vmlinuz"
    rm -rf "$(kernel_dir)"
    mv "$t/k" "$(kernel_dir)"
    rm -rf "$t"
}

busybox_path() { echo "$CACHE/busybox-${BBVER//:/_}/busybox"; }

fetch_busybox() {
    [[ -f $(busybox_path) ]] && return 0
    local t=$CACHE/.tmp.busybox.$$
    rm -rf "$t"; mkdir -p "$t/dl" "$t/x" "$t/bb"
    note "downloading busybox-static:arm64 $BBVER into $CACHE"
    if ! apt_download "busybox-static:arm64=$BBVER" "$t/dl"; then
        apt_refresh || die "apt-get download busybox-static:arm64 failed"
        resolve_versions
        [[ -f $(busybox_path) ]] && { rm -rf "$t"; return 0; }
        rm -rf "$t/dl"; mkdir -p "$t/dl"
        apt_download "busybox-static:arm64=$BBVER" "$t/dl" ||
            die "apt-get download busybox-static:arm64 failed"
    fi
    dpkg-deb -x "$t"/dl/*.deb "$t/x"
    cp "$t/x/bin/busybox" "$t/bb/busybox"
    rm -rf "$(dirname "$(busybox_path)")"
    mv "$t/bb" "$(dirname "$(busybox_path)")"
    rm -rf "$t"
}

# ------------------------------------------------------------- guest init ----
# The guest's /init.  Per-run settings come from /ibcr/ (the per-run cpio):
#   /ibcr/cmd   the command, one POSIX-quoted line ("exec 'a' 'b'")
#   /ibcr/env   export lines (from --env)
#   /ibcr/out   present when -o was given: mount the 9p share at /t/out
guest_init() {
    cat <<'INIT'
#!/bin/busybox sh
# ibcr arm64 test VM /init (generated by tools/vm/arm64-vm.sh)
/bin/busybox --install -s
export PATH=/t:/usr/sbin:/usr/bin:/sbin:/bin HOME=/t TMPDIR=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
hostname ibcr-arm64
ip link set lo up 2>/dev/null

# -o: /t/out is the host directory, over 9p (virtio-mmio).
if [ -e /ibcr/out ]; then
    for m in virtio_mmio netfs fscache 9pnet 9pnet_virtio 9p; do
        [ -f /lib/ibcr-modules/$m.ko ] && insmod /lib/ibcr-modules/$m.ko
    done
    mkdir -p /t/out
    if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,access=any ibcrout /t/out; then
        echo "arm64-vm: cannot mount the 9p share for /t/out" >&2
        echo "@@IBCR-A64-STATUS=125@@"
        poweroff -f
    fi
else
    mkdir -p /t/out
fi

[ -f /ibcr/env ] && . /ibcr/env
cd /t
echo "@@IBCR-A64-BEGIN uptime=$(cut -d' ' -f1 /proc/uptime)@@"
sh /ibcr/cmd </dev/null 2>&1
status=$?
cd /
sync
[ -e /ibcr/out ] && umount /t/out
echo "@@IBCR-A64-STATUS=$status uptime=$(cut -d' ' -f1 /proc/uptime)@@"
poweroff -f
INIT
}

base_cpio_path() {
    local h
    h=$(guest_init | cat - <(printf '%s\n' "${NINEP_MODULES[@]}") | md5sum | cut -c1-12)
    echo "$CACHE/base-$KVER-bb${BBVER//:/_}-$h.cpio"
}

# Base initramfs: busybox, /init, the 9p modules and the mount points.
# Uncompressed: the guest unpacks it faster than it could gunzip it.
build_base_cpio() {
    local out t
    out=$(base_cpio_path)
    [[ -f $out ]] && return 0
    t=$CACHE/.tmp.base.$$
    rm -rf "$t"; mkdir -p "$t/root"
    (
        cd "$t/root"
        mkdir -p bin sbin usr/bin usr/sbin proc sys dev tmp t lib/ibcr-modules ibcr root
        cp "$(busybox_path)" bin/busybox
        chmod 755 bin/busybox
        guest_init >init
        chmod 755 init
        cp "$(kernel_dir)"/modules/*.ko lib/ibcr-modules/ 2>/dev/null || true
        find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet >"$t/base.cpio"
    )
    mv "$t/base.cpio" "$out"
    rm -rf "$t"
}

ensure_cache() {
    kernel_cached && [[ -f $(busybox_path) && -f $(base_cpio_path) ]] && return 0
    local t0
    t0=$(now)
    with_cache_lock fetch_kernel
    with_cache_lock fetch_busybox
    with_cache_lock build_base_cpio
    note "cache ready in $(elapsed "$t0") s"
}

# ------------------------------------------------------------------- run ----
RUN=

# Per-run cpio: DIR at /t, the command and settings at /ibcr.
build_run_cpio() {
    local a line
    mkdir -p "$RUN/root/t" "$RUN/root/ibcr"
    cp -a "$dir/." "$RUN/root/t/"
    line='exec'
    for a in "${cmd[@]}"; do line+=" $(shquote "$a")"; done
    echo "$line" >"$RUN/root/ibcr/cmd"
    : >"$RUN/root/ibcr/env"
    for a in "${opt_env[@]}"; do
        echo "export ${a%%=*}=$(shquote "${a#*=}")" >>"$RUN/root/ibcr/env"
    done
    [[ -n $opt_out ]] && : >"$RUN/root/ibcr/out"
    (cd "$RUN/root" && find t ibcr | cpio -o -H newc -R 0:0 --quiet >"$RUN/run.cpio")
    cat "$(base_cpio_path)" "$RUN/run.cpio" >"$RUN/initrd.cpio"
}

# Console filter (awk): prints COMMAND's output between the markers as it
# arrives, drops kernel messages ("[    1.234] ...") and CRs, and writes the
# status to $RUN/status.  With -v, everything else goes to stderr.
console_filter() {
    awk -v verbose="$opt_verbose" -v statusfile="$RUN/status" \
        -v mb="$M_BEGIN" -v ms="$M_STATUS" '
        function vlog(s) { if (verbose) { print s > "/dev/stderr"; fflush("/dev/stderr") } }
        { sub(/\r+$/, "") }
        state == 0 {
            i = index($0, mb)
            if (i) {
                state = 1
                if (match($0, /uptime=[0-9.]+/))
                    vlog("arm64-vm.sh: guest reached /t at uptime " substr($0, RSTART + 7, RLENGTH - 7) " s")
            } else vlog($0)
            next
        }
        state == 1 {
            i = index($0, ms)
            if (i) {
                if (i > 1) { print substr($0, 1, i - 1); fflush() }
                rest = substr($0, i + length(ms))
                match(rest, /^[0-9]+/)
                print substr(rest, RSTART, RLENGTH) > statusfile
                close(statusfile)
                if (match(rest, /uptime=[0-9.]+/))
                    vlog("arm64-vm.sh: command done at uptime " substr(rest, RSTART + 7, RLENGTH - 7) " s")
                state = 2
                next
            }
            if ($0 ~ /^\[ *[0-9]+\.[0-9]+\] /) { vlog($0); next }
            print; fflush()
            next
        }
        { vlog($0) }
    '
}

run_qemu() {
    local append=(console=ttyAMA0 rdinit=/init panic=-1)
    if ((opt_verbose)); then append+=(loglevel=7); else append+=(quiet loglevel=1); fi
    local qemu=(
        qemu-system-aarch64 -M virt -cpu "$opt_cpu" -smp "$opt_smp" -m "$opt_mem"
        -nodefaults -display none -monitor none -serial stdio -nic none -no-reboot
        -kernel "$(kernel_dir)/vmlinuz" -initrd "$RUN/initrd.cpio"
        -append "${append[*]}"
    )
    if [[ -n $opt_out ]]; then
        # shellcheck disable=SC2054  # qemu's own comma syntax
        qemu+=(-fsdev "local,id=ibcrout,path=$opt_out,security_model=none"
               -device virtio-9p-device,fsdev=ibcrout,mount_tag=ibcrout)
    fi
    verbose "running: ${qemu[*]}"
    local rc t0
    t0=$(now)
    set +e
    timeout -k 10 "$opt_timeout" "${qemu[@]}" </dev/null 2>"$RUN/qemu.err" |
        tee "$RUN/console.log" | console_filter
    rc=${PIPESTATUS[0]}
    set -e
    verbose "qemu exited with $rc after $(elapsed "$t0") s"
    QEMU_RC=$rc
}

main() {
    parse_args "$@"
    ensure_host
    setup_cache
    resolve_versions
    ensure_cache

    RUN=$(mktemp -d "${TMPDIR:-/tmp}/ibcr-arm64-vm.XXXXXX")
    trap 'rm -rf "$RUN"' EXIT
    if [[ -n $opt_out ]]; then
        mkdir -p "$opt_out"
        opt_out=$(cd "$opt_out" && pwd)
    fi
    build_run_cpio
    QEMU_RC=0
    run_qemu

    if [[ $QEMU_RC == 124 || $QEMU_RC == 137 ]]; then
        note "timeout: the guest did not finish within $opt_timeout s"
        exit 124
    fi
    if [[ ! -s $RUN/status ]]; then
        note "no status from the guest (qemu exit $QEMU_RC); last console lines:"
        tail -n 25 "$RUN/console.log" | tr -d '\r' | sed 's/^/  | /' >&2
        [[ -s $RUN/qemu.err ]] && sed 's/^/  qemu: /' "$RUN/qemu.err" >&2
        exit 125
    fi
    exit "$(cat "$RUN/status")"
}

main "$@"
