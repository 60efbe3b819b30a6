#!/usr/bin/env bash
# Runs the integration suite on aarch64: the binaries cross-built by
# `make ARCH=aarch64 all progs unit-bins` and the tests of
# tests/integration/aarch64.list go into one boot of the arm64 guest
# (tools/vm/arm64-vm.sh), with a static bash from Debian (bash-static:arm64,
# downloaded once, never installed) since the guest has only busybox.
# Also checks that each architecture's loader refuses the other's image.
#
#   tests/vm/aarch64-suite.sh        (after the build; `make check` calls it)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=$TOP/build/aarch64
HB=$TOP/build
CACHE=${IBCR_VM_CACHE:-/var/cache/ibcr-vm}/arm64
G=$B/guest
OUT=$B/guest-out

bash_static() {
	local deb dir=$CACHE/bash-static
	[ -x "$dir/bash" ] && return 0
	mkdir -p "$dir"
	(
		cd "$dir"
		flock 9
		[ -x bash ] && exit 0
		apt-get download -q bash-static:arm64 >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null && apt-get download -q bash-static:arm64 >/dev/null; }
		deb=$(ls bash-static_*_arm64.deb | head -n 1)
		rm -rf x && dpkg-deb -x "$deb" x && cp x/bin/bash-static bash.tmp && mv bash.tmp bash
		rm -rf x "$deb"
	) 9>"$dir/.lock"
}

# An x86_64 image for the aarch64 loader to refuse (made here, on the host).
x86_image() {
	local pid
	(
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			[ "$fd" -gt 2 ] && eval "exec $fd>&-"
		done
		exec "$HB/tests/progs/counter" 1000 50 </dev/null >/dev/null 2>&1
	) &
	pid=$!
	sleep 0.3
	# bash says "Killed" as it reaps the counter, while the saver runs
	{ "$HB/saver" --kill -o "$G/x86.ckpt" "$pid" && wait "$pid"; } 2>/dev/null || true
	[ -s "$G/x86.ckpt" ] || { echo "aarch64-suite: could not make an x86_64 image" >&2; exit 1; }
}

bash_static
rm -rf "$G" "$OUT"
mkdir -p "$G/bin" "$G/build/tests" "$G/tests/integration" "$OUT"
cp "$CACHE/bash-static/bash" "$G/bin/bash"
cp "$B/saver" "$B/restart-loader" "$B/ckpt-info" "$G/build/"
cp -r "$B/tests/progs" "$B/tests/unit" "$G/build/tests/"
cp "$TOP"/tests/integration/{lib.sh,run.sh,*_body.sh} "$G/tests/integration/"
# IBCR_A64_TESTS="t_a t_b": run those instead of the list (while working on them)
tests=${IBCR_A64_TESTS:-$(sed 's/#.*//' "$TOP/tests/integration/aarch64.list")}
tests=$(echo $tests)
for t in $tests; do cp "$TOP/tests/integration/$t.sh" "$G/tests/integration/"; done
x86_image
cat >"$G/run-suite.sh" <<'EOS'
#!/bin/sh
# In the guest: unit tests, the cross-architecture refusal, the integration list.
export PATH=/t/bin:$PATH IBCR_BUILD=/t/build
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
fail=0
for u in /t/build/tests/unit/*; do
	"$u" >/tmp/unit.log 2>&1 && echo "PASS unit $(basename "$u")" ||
		{ echo "FAIL unit $(basename "$u")"; cat /tmp/unit.log; fail=1; }
done
msg=$(/t/build/restart-loader /t/x86.ckpt 2>&1); rc=$?
if [ $rc = 1 ] && echo "$msg" | grep -q "is for x86_64; this is aarch64"; then
	echo "PASS x86_64 image refused by the aarch64 loader"
else
	echo "FAIL x86_64 image given to the aarch64 loader: rc $rc: $msg"; fail=1
fi
# an aarch64 image for the host's loader to refuse
/t/build/tests/progs/counter 1000 50 </dev/null >/dev/null 2>&1 &
pid=$!
sleep 1
/t/build/saver --kill -o /t/out/aarch64.ckpt $pid || fail=1
wait $pid 2>/dev/null
cd /t/tests/integration && bash run.sh $(cat /t/tests.list) || fail=1
exit $fail
EOS
echo "$tests" >"$G/tests.list"
chmod +x "$G/run-suite.sh"
rc=0
"$TOP/tools/vm/arm64-vm.sh" --timeout "${IBCR_A64_TIMEOUT:-1200}" -o "$OUT" "$G" -- ./run-suite.sh || rc=$?
# the reverse: the host's loader refuses the image made in the guest
msg=$("$HB/restart-loader" "$OUT/aarch64.ckpt" 2>&1) && r=0 || r=$?
if [ "$r" = 1 ] && grep -q "is for aarch64; this is x86_64" <<<"$msg"; then
	echo "PASS aarch64 image refused by the x86_64 loader"
else
	echo "FAIL aarch64 image given to the x86_64 loader: rc $r: $msg"
	rc=1
fi
echo "aarch64-suite: ${SECONDS} s in all"
exit "$rc"
