#!/usr/bin/env bash
# A container with nothing but the loader and a self-contained image:
# Debian's python3 (dynamically linked) is checkpointed with
# --self-contained --kill, ckpt-oci makes an OCI image layout of it,
# umoci unpacks it into a bundle whose root holds only restart-loader and
# image.ckpt, and runc runs it: the program goes on from where it was,
# with its original PID inside the container's PID namespace, and its
# output reaches the container's stdout. Run again detached, `runc kill
# ID TERM` stops it (the loader, the container's init, passes the signal
# on) and `runc delete` removes it. The bundle's runtime config gets the
# program's own capabilities (root's here, CAP_CHECKPOINT_RESTORE among
# them, which gives the original PID back) and no no_new_privs: a restore
# may not widen them, and one in a narrower container is refused. No
# rlimits of its own (the process's come back), terminal off (stdout is
# a pipe). The loader keeps the container's cgroup (--cgroup=here, in
# ckpt-oci's entrypoint). The program in the container, checkpointed
# from outside, is refused: it knows itself by the container's pids.
. "$(dirname "$0")/lib.sh"
is_root || fail "runc needs root here"
for t in umoci runc python3; do
	command -v $t >/dev/null || fail "$t missing (tools/deps.sh check installs it)"
done
ID=ibcr-t-oci-$$
cleanup_oci() { runc kill "$ID" KILL 2>/dev/null || true; runc delete -f "$ID" 2>/dev/null || true; }
trap 'cleanup_oci; cleanup' EXIT

cat >"$T/prog.py" <<'EOS'
import os, sys, time
for i in range(int(sys.argv[1])):
    print("tick", i, "pid", os.getpid(), flush=True)
    time.sleep(0.03)
print("DONE pid", os.getpid(), flush=True)
EOS
# stdout a pipe to the outside: restored, it is the loader's (the container's)
( "$PROGS/clean-exec" /usr/bin/python3 "$T/prog.py" 400 </dev/null 2>&1 | cat >"$T/prog.out" ) &
STARTED+=($!)
wait_line "$T/prog.out" '^tick 5 '
pid=$(sed -n 's/^tick 5 pid \([0-9]*\)$/\1/p' "$T/prog.out")
grep '^Cap' "/proc/$pid/status" >"$T/caps"
checkpoint "$pid" "$T/app.ckpt" --self-contained --compress --kill
before=$(last_tick "$T/prog.out")
"$B/ckpt-oci" "$T/app.ckpt" -o "$T/layout" || fail "ckpt-oci failed"

# bundle NAME: the layout unpacked, its runtime config adjusted
bundle() {
	umoci unpack --image "$T/layout:latest" "$T/$1" >"$T/umoci.out" 2>&1 ||
		fail "umoci unpack: $(cat "$T/umoci.out")"
	[ "$(cd "$T/$1/rootfs" && find . -mindepth 1 | sort | tr '\n' ' ')" = "./image.ckpt ./restart-loader " ] ||
		fail "the container's root holds more: $(cd "$T/$1/rootfs" && find . | head)"
	grep -q '"--cgroup=here"' "$T/$1/config.json" ||
		fail "the entrypoint does not keep the container's cgroup: $(cat "$T/$1/config.json")"
	python3 - "$T/$1/config.json" "$T/caps" <<'EOS'
import json, sys
NAMES = ("CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP "
         "LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER "
         "SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE "
         "SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP "
         "MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF "
         "CHECKPOINT_RESTORE").split()
caps = dict(l.split(":") for l in open(sys.argv[2]))
def names(key):
    v = int(caps[key], 16)
    return ["CAP_" + n for i, n in enumerate(NAMES) if v >> i & 1]
c = json.load(open(sys.argv[1]))
p = c["process"]
p["terminal"] = False
p["noNewPrivileges"] = False
p.pop("rlimits", None)
p["capabilities"] = {"bounding": names("CapBnd"), "effective": names("CapEff"),
                     "permitted": names("CapPrm"), "inheritable": names("CapInh"),
                     "ambient": names("CapAmb")}
json.dump(c, open(sys.argv[1], "w"))
EOS
}

bundle run1
st=0
timeout 120 runc run -b "$T/run1" "$ID" >"$T/run1.out" 2>"$T/run1.err" </dev/null || st=$?
[ "$st" = 0 ] || fail "runc run exited with $st: $(cat "$T/run1.err")"
first=$(ticks "$T/run1.out" | head -n 1)
[ "$first" = $((before + 1)) ] || fail "the container's output starts at tick ${first:-none}, not $((before + 1))"
grep -q "^DONE pid $pid\$" "$T/run1.out" || fail "no DONE with the original pid $pid: $(tail -n 2 "$T/run1.out")"
[ "$(pids_in "$T/run1.out")" = "$pid" ] || fail "pids in the container: $(pids_in "$T/run1.out")"
runc state "$ID" >/dev/null 2>&1 && fail "the container is still there after it ended"

bundle run2
runc run -d -b "$T/run2" "$ID" >"$T/run2.out" 2>"$T/run2.err" </dev/null ||
	fail "runc run -d: $(cat "$T/run2.err")"
wait_line "$T/run2.out" "^tick $((before + 5)) pid $pid\$"
runc state "$ID" | holds '"status": "running"' || fail "runc state: $(runc state "$ID")"
# the program in the container, saved from outside: it knows itself by
# the container's pids (and its files are the container's): refused,
# naming both pids, and it runs on
inside=$(runc ps "$ID" | awk '/python3/ { print $2 }')
[ -n "$inside" ] || fail "runc ps shows no python3: $(runc ps "$ID")"
"$SAVER" -o "$T/inside.ckpt" "$inside" >"$T/inside.err" 2>&1 &&
	fail "saver took a process whose files it cannot name"
grep -q "^saver: pid $inside: is pid $pid of a PID namespace below this saver's" \
	"$T/inside.err" || fail "the refusal said: $(cat "$T/inside.err")"
[ -e "$T/inside.ckpt" ] && fail "the refused checkpoint left an image"
n=$(last_tick "$T/run2.out")
wait_line "$T/run2.out" "^tick $((n + 3)) pid $pid\$"
runc kill "$ID" TERM || fail "runc kill TERM failed"
for ((i = 0; i < 200; i++)); do
	runc state "$ID" | holds '"status": "stopped"' && break
	sleep 0.05
done
runc state "$ID" | holds '"status": "stopped"' || fail "TERM did not stop the container: $(runc state "$ID")"
grep -q '^DONE' "$T/run2.out" && fail "the program ran to its end despite TERM"
runc delete "$ID" || fail "runc delete failed"
runc state "$ID" >/dev/null 2>&1 && fail "the container is still there after runc delete"
exit 0
