#!/usr/bin/env bash
# tools/aarch64/deps.sh - host setup for ibcr's aarch64 cross build and VM tests.
#
# Usage: tools/aarch64/deps.sh [--vm-only] [--force] [-q]
#
#   (no option)  install the cross toolchain and qemu, and build the extra
#                aarch64 files in $IBCR_A64_EXTRA (default /opt/ibcr-aarch64)
#   --vm-only    only what tools/vm/arm64-vm.sh needs: the arm64 dpkg
#                architecture (so apt can download :arm64 packages),
#                qemu-system-arm and cpio
#   --force      rebuild the extra files even if their stamps are current
#   -q           print only errors
#
# Idempotent.  Needs root to install packages; a run that finds everything
# in place does not, installs and downloads nothing and takes about a
# second (apt-cache reading the package lists).
#
# Layout of $IBCR_A64_EXTRA (what tools/aarch64/toolchain.mk expects):
#   include/            only symlinks to the kernel uapi directories (asm,
#                       asm-generic, linux, ...) in /usr/aarch64-linux-gnu/include;
#                       pass it with -idirafter (musl-gcc uses -nostdinc)
#   zlib/include        zlib.h zconf.h              (zlib1g-dev:arm64 .deb)
#   zlib/lib            libz.a libibcr-fortify-shim.a
#   zstd/include        zstd.h zstd_errors.h zdict.h (libzstd-dev:arm64 .deb)
#   zstd/lib            libzstd.a
#   cmocka/include      cmocka.h cmocka_pbc.h        (built from Debian's source)
#   cmocka/lib          libcmocka.a (static, musl, aarch64)
#   <component>/.stamp  the package versions the component was made from
#
# Why not simply `apt-get install zlib1g-dev:arm64 libcmocka-dev:arm64`?
# Both depend on libc6-dev:arm64, which drags in ~30 arm64 libraries and
# force-upgrades their amd64 twins (Multi-Arch: same needs equal versions).
# We only need libz.a/libzstd.a and headers, so the .debs are downloaded and
# unpacked with dpkg-deb -x instead; libcmocka-dev has only a glibc .so, so a
# static musl libcmocka.a is built from Debian's cmocka source package.
set -euo pipefail

A64_EXTRA=${IBCR_A64_EXTRA:-/opt/ibcr-aarch64}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SHIM_SRC=$HERE/fortify-shim.c
CROSS=aarch64-linux-gnu-
MUSL_CC=aarch64-linux-musl-gcc
UAPI_DIR=/usr/aarch64-linux-gnu/include
# Bump when the way a component is made changes, so old stamps are stale.
FORMAT=1

# Host packages.  All are plain amd64/all packages except musl-dev:arm64,
# which has no dependency beyond musl:arm64 and gcc-aarch64-linux-gnu.
VM_PKGS=(qemu-system-arm cpio)
TOOL_PKGS=(gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu
           linux-libc-dev-arm64-cross musl-dev:arm64 dpkg-dev cmake make)
# Never let an install pull these in (see above).
FORBIDDEN_PKGS=(libc6-dev:arm64 zlib1g-dev:arm64 libcmocka-dev:arm64
                libzstd-dev:arm64)

VM_ONLY=0
FORCE=0
QUIET=0
APT_UPDATED=0

export DEBIAN_FRONTEND=noninteractive

log()  { [[ $QUIET == 1 ]] || printf 'aarch64-deps: %s\n' "$*" >&2; }
warn() { printf 'aarch64-deps: warning: %s\n' "$*" >&2; }
die()  { printf 'aarch64-deps: error: %s\n' "$*" >&2; exit 1; }

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
    exit "${1:-0}"
}

# apt-get that waits for a concurrent apt/dpkg (other helpers and CI steps
# install packages at the same time) instead of failing on the lock.
apt_get() {
    apt-get -q -o DPkg::Lock::Timeout=900 "$@"
}

# apt-get update, at most once per run.  The lists lock has no timeout
# option in apt 2.6, so retry a few times if another apt holds it.
apt_update() {
    [[ $APT_UPDATED == 1 ]] && return 0
    need_root "run apt-get update"
    local try
    for try in 1 2 3 4 5; do
        log "apt-get update (try $try)"
        if apt_get update >/dev/null; then
            APT_UPDATED=1
            load_candidates
            return 0
        fi
        sleep $((try * 5))
    done
    die "apt-get update failed"
}

is_installed() {
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]
}

# Candidate versions as apt sees them.  Every apt-cache run re-reads all
# package lists (~1 s here: Debian's docker-style apt config disables the
# binary cache), so ask once for every package this script cares about.
declare -A CAND=()
CAND_LOADED=0
QUERY_PKGS=(musl-dev:arm64 busybox-static:arm64 zlib1g-dev:arm64
            libzstd-dev:arm64 libcmocka-dev:arm64 libcmocka-dev)

load_candidates() {
    local name ver
    CAND=()
    while read -r name ver; do
        CAND[$name]=$ver
    done < <(apt-cache policy "${QUERY_PKGS[@]}" "$@" 2>/dev/null |
             awk '/^[^ ].*:$/ { sub(/:$/, ""); p = $0 }
                  $1 == "Candidate:" && $2 != "(none)" { print p, $2 }')
    CAND_LOADED=1
}

# Candidate version of a package, or empty.
candidate() {
    [[ $CAND_LOADED == 1 ]] || load_candidates
    [[ -v CAND[$1] ]] || load_candidates "$1"
    printf '%s\n' "${CAND[$1]:-}"
}

installed_version() {
    dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true
}

# Only changing the system needs root; a check that finds everything in
# place (and building $A64_EXTRA where the user may write) does not.
need_root() {
    [[ $(id -u) == 0 ]] || die "must run as root to $*"
}

# apt can only see :arm64 packages once arm64 is a foreign architecture and
# the lists have been refreshed for it.
ensure_arm64_arch() {
    load_candidates   # here, in the main shell: $(candidate) runs in a subshell
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        log "dpkg --add-architecture arm64"
        need_root "add the arm64 dpkg architecture"
        dpkg --add-architecture arm64
        apt_update
    fi
    if [[ -z $(candidate musl-dev:arm64) || -z $(candidate busybox-static:arm64) ]]; then
        apt_update
    fi
    [[ -n $(candidate busybox-static:arm64) ]] ||
        die "apt has no arm64 packages even after apt-get update"
}

# Install the given packages that are not installed yet.  A dry run first
# makes sure none of FORBIDDEN_PKGS would come along.
install_missing() {
    local missing=() p f plan
    for p in "$@"; do
        is_installed "$p" || missing+=("$p")
    done
    [[ ${#missing[@]} == 0 ]] && return 0
    for p in "${missing[@]}"; do
        [[ -n $(candidate "$p") ]] || apt_update
    done
    log "installing: ${missing[*]}"
    need_root "install ${missing[*]}"
    plan=$(apt_get -s install --no-install-recommends "${missing[@]}" 2>&1) ||
        { printf '%s\n' "$plan" >&2; die "apt-get cannot install ${missing[*]}"; }
    for f in "${FORBIDDEN_PKGS[@]}"; do
        # apt -s prints e.g. "Inst libc6-dev:arm64 (2.36-9 Debian:12 [arm64])"
        if grep -q "^Inst $f " <<<"$plan"; then
            die "installing ${missing[*]} would pull in $f; refusing (see the header of $0)"
        fi
    done
    local log
    log=$(mktemp /tmp/ibcr-aarch64-apt.XXXXXX)
    if ! apt_get install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
        # Stale lists give 404s for superseded versions: refresh once, retry.
        APT_UPDATED=0
        apt_update
        apt_get install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1 ||
            { cat "$log" >&2; rm -f "$log"; die "apt-get install ${missing[*]} failed"; }
    fi
    rm -f "$log"
}

# As root, apt downloads as user _apt and warns when that user cannot write
# the target directory; so hand download directories to _apt.
give_to_apt() {
    if [[ $(id -u) == 0 ]] && id _apt >/dev/null 2>&1; then
        chown _apt "$1"
    fi
}

# apt-get download PKG=VERSION into a fresh directory and unpack it into DEST.
fetch_deb() {
    local pkg=$1 version=$2 dest=$3 dl
    dl=$(mktemp -d "$WORK/dl.XXXXXX")
    give_to_apt "$dl"
    if ! (cd "$dl" && apt_get download "$pkg=$version" >/dev/null 2>&1); then
        APT_UPDATED=0
        apt_update
        (cd "$dl" && apt_get download "$pkg=$(candidate "$pkg")" >/dev/null) ||
            die "apt-get download $pkg failed"
    fi
    dpkg-deb -x "$dl"/*.deb "$dest"
    rm -rf "$dl"
}

# --- components ----------------------------------------------------------
# Each component is built in a temporary directory under $A64_EXTRA and
# renamed into place, so a half-built one is never visible.  Its .stamp holds
# the key (versions) it was made from; an equal key means nothing to do.

stamp_ok() {
    local name=$1 key=$2
    [[ $FORCE == 0 && -f $A64_EXTRA/$name/.stamp &&
       $(cat "$A64_EXTRA/$name/.stamp") == "$key" ]]
}

publish() {
    local name=$1 tmp=$2 key=$3
    printf '%s\n' "$key" >"$tmp/.stamp"
    chmod 755 "$tmp"   # mktemp -d made it 0700: others must read the extras
    rm -rf "$A64_EXTRA/$name.old"
    [[ -e $A64_EXTRA/$name ]] && mv "$A64_EXTRA/$name" "$A64_EXTRA/$name.old"
    mv "$tmp" "$A64_EXTRA/$name"
    rm -rf "$A64_EXTRA/$name.old"
    log "$name: built ($key)"
}

# include/: one symlink per top-level uapi directory of linux-libc-dev-arm64-cross.
# Symlinks and not the whole /usr/aarch64-linux-gnu/include, because that
# directory also receives glibc's headers if libc6-dev-arm64-cross is ever
# installed, and those must not mix into the musl build.
key_include() {
    echo "format=$FORMAT uapi=$(installed_version linux-libc-dev-arm64-cross)"
}

build_include() {
    local key tmp d
    key=$(key_include)
    stamp_ok include "$key" && return 0
    tmp=$(mktemp -d "$A64_EXTRA/.tmp.include.XXXXXX")
    while read -r d; do
        [[ -d $d ]] && ln -s "$d" "$tmp/$(basename "$d")"
    done < <(dpkg -L linux-libc-dev-arm64-cross | grep -E "^$UAPI_DIR/[^/]+$")
    for d in asm asm-generic linux; do
        [[ -L $tmp/$d ]] || die "uapi directory $UAPI_DIR/$d missing"
    done
    publish include "$tmp" "$key"
}

# Undefined symbols of a static library that musl's libc.a does not define
# and that it does not define itself: these would fail the final link.
missing_syms() {
    local lib=$1
    comm -23 \
        <("${CROSS}nm" -u "$lib" 2>/dev/null | awk '$1 == "U" {print $2}' | sort -u) \
        <({ "${CROSS}nm" --defined-only "$lib" 2>/dev/null
            "${CROSS}nm" --defined-only /usr/lib/aarch64-linux-musl/libc.a 2>/dev/null
            "${CROSS}nm" --defined-only "$(${MUSL_CC} -print-libgcc-file-name)" 2>/dev/null
            [[ -f $WORK/shim.a ]] && "${CROSS}nm" --defined-only "$WORK/shim.a"
          } | awk 'NF >= 3 {print $3}' | sort -u)
}

build_shim() {
    [[ -f $WORK/shim.a ]] && return 0
    "$MUSL_CC" -O2 -g -Wall -c -o "$WORK/fortify-shim.o" "$SHIM_SRC"
    rm -f "$WORK/shim.a"
    "${CROSS}ar" rcs "$WORK/shim.a" "$WORK/fortify-shim.o"
}

key_zlib() {
    local ver
    ver=$(candidate zlib1g-dev:arm64)
    [[ -n $ver ]] || die "no candidate for zlib1g-dev:arm64"
    echo "format=$FORMAT zlib1g-dev:arm64=$ver shim=$(sha256sum <"$SHIM_SRC" | cut -c1-16)"
}

build_zlib() {
    local ver key tmp x miss
    key=$(key_zlib)
    stamp_ok zlib "$key" && return 0
    ver=$(candidate zlib1g-dev:arm64)
    build_shim
    x=$(mktemp -d "$WORK/zlib.XXXXXX")
    fetch_deb zlib1g-dev:arm64 "$ver" "$x"
    tmp=$(mktemp -d "$A64_EXTRA/.tmp.zlib.XXXXXX")
    mkdir -p "$tmp/include" "$tmp/lib"
    cp "$x/usr/include/zlib.h" "$x/usr/include/zconf.h" "$tmp/include/"
    cp "$x/usr/lib/aarch64-linux-gnu/libz.a" "$tmp/lib/"
    cp "$WORK/shim.a" "$tmp/lib/libibcr-fortify-shim.a"
    miss=$(missing_syms "$tmp/lib/libz.a")
    [[ -z $miss ]] || warn "libz.a still needs: ${miss//$'\n'/ }"
    publish zlib "$tmp" "$key"
}

key_zstd() {
    local ver
    ver=$(candidate libzstd-dev:arm64)
    [[ -n $ver ]] || die "no candidate for libzstd-dev:arm64"
    echo "format=$FORMAT libzstd-dev:arm64=$ver"
}

build_zstd() {
    local ver key tmp x miss
    key=$(key_zstd)
    stamp_ok zstd "$key" && return 0
    ver=$(candidate libzstd-dev:arm64)
    build_shim
    x=$(mktemp -d "$WORK/zstd.XXXXXX")
    fetch_deb libzstd-dev:arm64 "$ver" "$x"
    tmp=$(mktemp -d "$A64_EXTRA/.tmp.zstd.XXXXXX")
    mkdir -p "$tmp/include" "$tmp/lib"
    cp "$x"/usr/include/{zstd.h,zstd_errors.h,zdict.h} "$tmp/include/"
    cp "$x/usr/lib/aarch64-linux-gnu/libzstd.a" "$tmp/lib/"
    miss=$(missing_syms "$tmp/lib/libzstd.a")
    [[ -z $miss ]] || warn "libzstd.a still needs: ${miss//$'\n'/ }"
    publish zstd "$tmp" "$key"
}

# The Debian mirror (URI) that serves $codename/main, read from apt's own
# view of the host configuration, so the private deb-src list below points
# at the same mirror (or proxy) the host uses.
debian_mirror() {
    local codename=$1
    apt-cache policy 2>/dev/null |
        awk -v s="$codename/main" '$3 == s && $2 ~ /^https?:/ { print $2; exit }'
}

# cmocka: Debian ships only a glibc libcmocka.so, so build a static musl
# library from Debian's source package.  The source is fetched with a
# private apt configuration (its own sources.list, lists and cache under
# $WORK), so the host's apt configuration and lists stay untouched.
key_cmocka() {
    local ver
    ver=$(candidate libcmocka-dev:arm64)
    [[ -n $ver ]] || ver=$(candidate libcmocka-dev)
    [[ -n $ver ]] || die "apt knows no libcmocka-dev; cannot tell which cmocka to build"
    echo "format=$FORMAT cmocka=$ver"
}

build_cmocka() {
    local key tmp codename mirror apt src b
    key=$(key_cmocka)
    stamp_ok cmocka "$key" && return 0

    # shellcheck disable=SC1091
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [[ -n $codename ]] || die "cannot tell the Debian codename from /etc/os-release"
    mirror=$(debian_mirror "$codename")
    [[ -n $mirror ]] || mirror=http://deb.debian.org/debian
    apt=$WORK/apt
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts"
    {
        echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $codename main"
        echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $codename-updates main"
    } >"$apt/sources.list"
    local -a aptopts=(
        -o "Dir::Etc::SourceList=$apt/sources.list"
        -o "Dir::Etc::SourceParts=$apt/parts"
        -o "Dir::State::Lists=$apt/lists"
        -o "Dir::Cache=$apt/cache"
    )
    log "cmocka: fetching Debian source ($mirror $codename, private apt config)"
    apt-get -q "${aptopts[@]}" update >"$WORK/apt-src-update.log" 2>&1 || true
    if ! compgen -G "$apt/lists/*_${codename}_main_source_Sources*" >/dev/null; then
        cat "$WORK/apt-src-update.log" >&2
        die "no deb-src reachable at $mirror ($codename): cannot build libcmocka.a"
    fi
    src=$WORK/cmocka-src
    mkdir -p "$src"
    give_to_apt "$src"
    (cd "$src" && apt-get -q "${aptopts[@]}" source --download-only cmocka >"$WORK/apt-src.log" 2>&1) || {
        cat "$WORK/apt-src.log" >&2
        die "apt-get source cmocka failed (is a deb-src for $codename reachable at $mirror?)"
    }
    (cd "$src" && dpkg-source -q -x ./*.dsc tree >/dev/null 2>&1) ||
        die "dpkg-source -x failed for cmocka"

    # Upstream's CMake build, static library only.  -D_UINTPTR_T_DEFINED:
    # cmocka.h would otherwise typedef uintptr_t again, which clashes with
    # musl's (recipe pitfall 4); the same flag is needed by every test.
    b=$WORK/cmocka-build
    cmake -S "$src/tree" -B "$b" \
        -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
        -DCMAKE_C_COMPILER="$MUSL_CC" -DCMAKE_AR="$(command -v ${CROSS}ar)" \
        -DCMAKE_RANLIB="$(command -v ${CROSS}ranlib)" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_FLAGS="-D_UINTPTR_T_DEFINED" \
        -DWITH_STATIC_LIB=ON -DWITH_EXAMPLES=OFF -DUNIT_TESTING=OFF \
        >"$WORK/cmocka-cmake.log" 2>&1 ||
        { cat "$WORK/cmocka-cmake.log" >&2; die "cmake configure of cmocka failed"; }
    cmake --build "$b" --target cmocka-static -j2 >"$WORK/cmocka-build.log" 2>&1 ||
        { cat "$WORK/cmocka-build.log" >&2; die "building libcmocka.a failed"; }

    tmp=$(mktemp -d "$A64_EXTRA/.tmp.cmocka.XXXXXX")
    mkdir -p "$tmp/include" "$tmp/lib"
    cp "$src/tree/include/cmocka.h" "$src/tree/include/cmocka_pbc.h" "$tmp/include/"
    # upstream names the static target's file libcmocka-static.a
    cp "$(find "$b" -name 'libcmocka*.a' -print -quit)" "$tmp/lib/libcmocka.a"
    basename "$src"/*.dsc .dsc >"$tmp/.source"
    publish cmocka "$tmp" "$key"
}

main() {
    while [[ $# -gt 0 ]]; do
        case $1 in
            --vm-only) VM_ONLY=1 ;;
            --force) FORCE=1 ;;
            -q) QUIET=1 ;;
            -h|--help) usage 0 ;;
            *) printf 'unknown option: %s\n' "$1" >&2; usage 2 >&2 ;;
        esac
        shift
    done
    ensure_arm64_arch

    if [[ $VM_ONLY == 1 ]]; then
        install_missing "${VM_PKGS[@]}"
        log "ok: qemu-system-aarch64 and cpio are installed"
        return 0
    fi
    install_missing "${VM_PKGS[@]}" "${TOOL_PKGS[@]}"
    command -v "$MUSL_CC" >/dev/null || die "$MUSL_CC missing after install"

    local c current=1
    for c in include zlib zstd cmocka; do
        stamp_ok "$c" "$("key_$c")" || current=0
    done
    if [[ $current == 0 ]]; then
        # One deps.sh at a time builds $A64_EXTRA.
        if ! mkdir -p "$A64_EXTRA" 2>/dev/null || ! touch "$A64_EXTRA/.lock" 2>/dev/null; then
            die "cannot write $A64_EXTRA (run as root, or set IBCR_A64_EXTRA)"
        fi
        exec 9>"$A64_EXTRA/.lock"
        flock 9
        rm -rf "$A64_EXTRA"/.tmp.*
        WORK=$(mktemp -d /tmp/ibcr-aarch64-deps.XXXXXX)
        trap 'rm -rf "$WORK"' EXIT
        for c in include zlib zstd cmocka; do
            "build_$c"
        done
    fi
    [[ $QUIET == 1 ]] || {
        printf 'aarch64 extras in %s:\n' "$A64_EXTRA"
        for c in include zlib zstd cmocka; do
            printf '  %-8s %s\n' "$c" "$(head -n1 "$A64_EXTRA/$c/.stamp")"
        done
    }
}

main "$@"
