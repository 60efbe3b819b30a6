#!/usr/bin/env bash
# What an open file description carries besides its file comes back
# (tests/progs/fdattrs checks from inside after the restore): O_PATH
# descriptors of a file, of a symlink itself and of a directory; the
# owner and signal of a pipe's I/O signals (SIGIO stopped arriving
# before); a read lease, whose break still signals the process; an epoll
# whose targets were closed or renumbered since they were added (refused
# before); pidfds of the process itself, of a child (which holds one of
# its parent) and of a zombie child, by their restored pids (refused
# before); one of a process outside the image is refused (t_bad_input);
# inotify watches on a directory and a file moved far since. Saved
# with --kill and live. An I/O signal owner outside the image is refused,
# in one line, and the process runs on.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/gate.sh"

for mode in opath owner lease epoll; do
	gate_mode fdattrs $mode
	gate_mode fdattrs $mode live
done
gate_mode fdattrs pidfd --tree
gate_mode fdattrs pidfd live --tree
gate_mode fdattrs inotify-moved
for mode in opath owner lease epoll; do
	gate_mode_nobody fdattrs $mode
done
grep -qE "^ *fd 3 +o_path " "$T/fdattrs.opath/info" || fail "fd 3 is not saved as O_PATH: $(grep ' fd ' "$T/fdattrs.opath/info")"

# F_SETOWN to the test shell, outside the image
mkdir "$T/outside" && cd "$T/outside"
start "$T/outside/out" python3 -c '
import fcntl, os, sys, time
r, w = os.pipe()
fcntl.fcntl(r, fcntl.F_SETOWN, int(sys.argv[1]))
print("ready fd", r, flush=True)
while not os.path.exists("go"):
    time.sleep(0.01)
print("DONE", flush=True)' $$
wait_line "$T/outside/out" '^ready fd'
fd=$(sed -n 's/^ready fd //p' "$T/outside/out")
saver_refuses "$T/outside/img" "pid $PID fd $fd: its I/O signals \\(F_SETOWN\\) go to process $$, outside the checkpoint" --kill "$PID"
touch go
wait "$PID" || fail "the refused process did not run on"
grep -q '^DONE' "$T/outside/out" || fail "the refused process did not finish"
exit 0
