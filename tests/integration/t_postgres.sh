#!/usr/bin/env bash
# PostgreSQL 15 (an unmodified postmaster and its children, run as user
# postgres from a cluster of the test's own) with a psql session over
# TCP: the whole tree is saved with --tree --kill and restarted 3 s
# later. The session goes on as if nothing happened: the same backend
# (same pid) answers, its TEMP table is intact, and new statements work.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net.sh"

"$TOP/tools/deps.sh" pkg postgresql-15 nftables
PGB=/usr/lib/postgresql/15/bin
uid=$(id -u postgres) gid=$(id -g postgres)
port=$(net_port 2)
chmod 755 "$T"
mkdir "$T/pg"
chown postgres: "$T/pg"
"$PROGS/runas" "$uid" "$gid" "$PGB/initdb" -D "$T/pg/data" -A trust -U postgres --no-sync \
	>"$T/initdb.out" 2>&1 || fail "initdb failed"
start "$T/pg.out" "$PROGS/runas" "$uid" "$gid" "$PGB/postgres" -D "$T/pg/data" -p "$port" \
	-k "$T/pg" -c listen_addresses=127.0.0.1 -c fsync=off
pid=$PID
wait_line "$T/pg.out" "database system is ready to accept connections"
mkfifo "$T/in"
exec 7<>"$T/in"	# held open: psql reads until the test is done
psql -h 127.0.0.1 -p "$port" -U postgres -X -A -t -v ON_ERROR_STOP=1 -f "$T/in" \
	>"$T/psql.out" 2>&1 7>&- &
cpid=$!
STARTED+=("$cpid")
echo "SELECT 'backend', pg_backend_pid();
CREATE TEMP TABLE t AS SELECT generate_series(1, 1000) AS x;
SELECT 'before', count(*), sum(x) FROM t;" >&7
wait_line "$T/psql.out" '^before\|1000\|500500$'
backend=$(sed -n 's/^backend|//p' "$T/psql.out")
[ -n "$backend" ] || fail "no backend pid: $(cat "$T/psql.out")"
ppid_of "$backend" | holds -x "$pid" || fail "backend $backend is not the postmaster's child"
checkpoint "$pid" "$T/img.ckpt" --tree --kill
wait "$pid" 2>/dev/null || true
grep -q "pid $backend " "$T/info.out" || fail "the backend is not in the image"
grep -q "repair 127.0.0.1:$port ->" "$T/info.out" || fail "psql's connection is not in the image"
sleep 3	# the server is away; psql waits
echo "SELECT 'after', pg_backend_pid(), count(*), sum(x) FROM t;
INSERT INTO t VALUES (1001);
SELECT 'more', count(*) FROM t;" >&7
restart "$T/img.ckpt"
expect_pid "$pid" "$RPID"
wait_line "$T/psql.out" '^more\|'
grep -q "^after|$backend|1000|500500$" "$T/psql.out" ||
	fail "after the restart: $(grep -v '^backend\|^before' "$T/psql.out")"
grep -q '^more|1001$' "$T/psql.out" || fail "the INSERT after the restart: $(tail -2 "$T/psql.out")"
grep -qi 'error\|fatal\|terminat' "$T/psql.out" && fail "psql: $(cat "$T/psql.out")"
exec 7>&-	# psql ends at the end of its input
wait "$cpid" || fail "psql exited with status $?: $(tail -3 "$T/psql.out")"
exit 0
