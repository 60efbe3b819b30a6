#!/usr/bin/env bash
# Installs what the build and the tests need, from Debian's packages, when
# it is missing. Idempotent; quiet when there is nothing to do.
#
#   tools/deps.sh build   compilers and libraries for `make`
#   tools/deps.sh check   the above, plus what `make check` runs
#   tools/deps.sh pkg P...  the Debian packages P (a test's own servers)
set -euo pipefail

BUILD_PKGS=(gcc make musl-tools musl-dev nasm zlib1g-dev libcmocka-dev libzstd-dev
	binutils file libibverbs-dev rdma-core ibverbs-providers librdmacm1
	pkg-config libpmix-dev)
CHECK_PKGS=(python3 procps util-linux coreutils bash sqlite3 openmpi-bin libopenmpi-dev
	cppcheck clang-tidy umoci runc nftables iproute2)

missing() {
	local p out=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			out+=("$p")
	done
	echo "${out[@]}"
}

install() {
	local need
	need=$(missing "$@")
	[ -z "$need" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages: $need (run as root to install them)" >&2
		exit 1
	fi
	echo "deps: installing $need" >&2
	export DEBIAN_FRONTEND=noninteractive
	# another apt or dpkg may run (unattended-upgrades on a fresh machine,
	# another step): the dpkg lock is waited for, the lists lock (which has
	# no timeout) retried
	for try in 1 2 3 4 5 6 7 8 9 10; do
		apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 && break
		echo "deps: apt-get update failed (try $try; apt busy?)" >&2
		sleep 10
	done
	# shellcheck disable=SC2086
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $need >/dev/null
}

case "${1:-build}" in
build) install "${BUILD_PKGS[@]}" ;;
check) install "${BUILD_PKGS[@]}" "${CHECK_PKGS[@]}" ;;
pkg) shift; install "$@" ;;
*) echo "usage: $0 build|check|pkg PACKAGE..." >&2; exit 2 ;;
esac
