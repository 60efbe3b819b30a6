#!/usr/bin/env bash
# Two processes sharing one descriptor table (CLONE_FILES) still share
# it after a restore (tests/progs/fdtable checks: a descriptor one opens
# is the other's, one closed is gone for both, kcmp KCMP_FILES); the
# child once came back with a table of its own, missing its descriptors.
# Saved with --tree --kill and live. A process sharing a table with
# another but not with its parent is refused, in one line, and runs on.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gate.sh"

gate_mode fdtable "" --tree
gate_mode fdtable "" live --tree

# two siblings sharing a table that their parent does not share: X
# clones Y with CLONE_PARENT|CLONE_FILES (a restore could only share a
# table by cloning it from a parent that has it)
mkdir "$T/siblings" && cd "$T/siblings"
cat >sib.py <<'EOP'
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
CLONE_FILES, CLONE_PARENT, SIGCHLD = 0x400, 0x8000, 17
x = os.fork()
if x == 0:
    # a sibling sharing our table: raw clone without a new stack (fork-like)
    y = libc.syscall(56, CLONE_FILES | CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
    if y == 0:
        while not os.path.exists("go"):
            time.sleep(0.01)
        os._exit(0)
    open("pids", "w").write("%d %d\n" % (os.getpid(), y))
    while not os.path.exists("go"):
        time.sleep(0.01)
    os._exit(0)
while not os.path.exists("go"):
    time.sleep(0.01)
for _ in range(2):
    os.wait()
print("DONE", flush=True)
EOP
start "$T/siblings/out" python3 sib.py
while [ ! -s pids ]; do sleep 0.05; done
read -r x y <pids
saver_refuses "$T/siblings/img" "pid ($x|$y) shares its descriptor table \\(CLONE_FILES\\) with pid ($x|$y) but not with its parent" --kill --tree "$PID"
touch go
wait "$PID" || fail "the refused processes did not run on"
grep -q DONE "$T/siblings/out" || fail "the refused processes did not finish"
exit 0
