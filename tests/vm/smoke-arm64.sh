#!/usr/bin/env bash
# tests/vm/smoke-arm64.sh - end-to-end check of the aarch64 cross toolchain
# (tools/aarch64/) and of the one-boot VM harness (tools/vm/arm64-vm.sh).
#
#   tests/vm/smoke-arm64.sh [-k] [-v]
#     -k  keep the temporary build directory (its path is printed)
#     -v  pass -v to the harness (kernel log, guest timings on stderr)
#
# What it does:
#  1. tools/aarch64/deps.sh -q (as root; a no-op once done;
#     IBCR_A64_SKIP_DEPS=1 skips it)
#  2. cross-builds six static aarch64 programs with a Makefile that includes
#     tools/aarch64/toolchain.mk:
#       hello   prints and exits 0
#       exit3   exits 3 (must be reported as a failure)
#       ptrace  fork, PTRACE_SEIZE + PTRACE_INTERRUPT, GETREGSET NT_PRSTATUS
#               and NT_PRFPREG (known x19/d8), process_vm_readv of a known value
#       zlib    compress/uncompress round trip + gzprintf (fortify shim)
#       zstd    ZSTD_compress/ZSTD_decompress round trip
#       cmocka  one passing cmocka test
#  3. boots the guest ONCE with a run-suite.sh that runs them all and prints
#     one result line per test, and also writes them to /t/out (copied back
#     with -o), then checks on the host: the result lines, that the suite's
#     failure (exit3) came back as the harness's exit status 1, and the
#     copied-back results file.
# Ends with "smoke-arm64: N passed, N failed"; exits 0 only if all passed.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
readonly HERE TOP
readonly TOOLCHAIN_MK=$TOP/tools/aarch64/toolchain.mk
readonly VM=$TOP/tools/vm/arm64-vm.sh
readonly TESTS=(hello exit3 ptrace zlib zstd cmocka)

keep=0
work=
vm_opts=()
pass=0
fail=0

while (($#)); do
    case $1 in
        -k) keep=1 ;;
        -v) vm_opts+=(-v) ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "smoke-arm64: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

say() { echo "smoke-arm64: $*"; }
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
not_ok() { fail=$((fail + 1)); echo "FAIL - $*"; }
check() { # check DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@"; then ok "$what"; else not_ok "$what"; fi
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ------------------------------------------------------------ sources ----
write_sources() {
    local d=$1

    cat >"$d/hello.c" <<'EOF'
#include <stdio.h>
#include <sys/utsname.h>
int main(void)
{
    struct utsname u;
    if (uname(&u) != 0)
        return 1;
    printf("hello from %s (static musl)\n", u.machine);
    return 0;
}
EOF

    cat >"$d/exit3.c" <<'EOF'
#include <stdio.h>
int main(void)
{
    puts("exit3: exiting with status 3 on purpose");
    return 3;
}
EOF

    # The child parks in a hand-written loop with known values in x19 and
    # d8 and a global it computed after fork(); the tracer reads them back
    # with GETREGSET and process_vm_readv.
    cat >"$d/ptrace.c" <<'EOF'
#define _GNU_SOURCE
#include <elf.h>            /* NT_PRSTATUS, NT_PRFPREG (musl's, not linux/elf.h) */
#include <asm/ptrace.h>     /* struct user_pt_regs, user_fpsimd_state (uapi) */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAGIC_REG 0x1bc4a64d00d1e5ULL
#define MAGIC_MEM 0x5eedf00dcafeULL

static volatile uint64_t secret;
static volatile uint64_t ready;

#define FAILF(...) do { printf("ptrace: " __VA_ARGS__); putchar('\n'); goto out; } while (0)

static void child(void)
{
    secret = MAGIC_MEM ^ (uint64_t)getpid();
    __asm__ volatile(
        "mov x19, %[m]\n\t"
        "fmov d8, x19\n\t"
        "mov x9, #1\n\t"
        "str x9, [%[r]]\n\t"
        "1: b 1b\n\t"
        :: [m] "r"(MAGIC_REG), [r] "r"(&ready) : "x9", "x19", "v8", "memory");
}

static int peek(pid_t pid, volatile uint64_t *addr, uint64_t *val)
{
    struct iovec local = { val, sizeof(*val) };
    struct iovec remote = { (void *)addr, sizeof(*val) };
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == sizeof(*val) ? 0 : -1;
}

int main(void)
{
    int rc = 1, status, i;
    uint64_t v = 0;
    struct user_pt_regs regs;
    struct user_fpsimd_state fp;
    struct iovec iov;
    struct timespec ts = { 0, 10 * 1000 * 1000 };
    pid_t pid = fork();

    if (pid < 0)
        return 1;
    if (pid == 0) {
        child();
        _exit(0);
    }
    if (ptrace(PTRACE_SEIZE, pid, 0, 0) != 0)
        FAILF("PTRACE_SEIZE: %s", strerror(errno));
    /* wait (up to 10 s) until the child has reached its loop */
    for (i = 0; i < 1000; i++) {
        if (peek(pid, &ready, &v) != 0)
            FAILF("process_vm_readv(ready): %s", strerror(errno));
        if (v == 1)
            break;
        nanosleep(&ts, NULL);
    }
    if (v != 1)
        FAILF("child never got ready");
    if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) != 0)
        FAILF("PTRACE_INTERRUPT: %s", strerror(errno));
    if (waitpid(pid, &status, __WALL) != pid)
        FAILF("waitpid: %s", strerror(errno));
    if (!WIFSTOPPED(status) || (status >> 16) != PTRACE_EVENT_STOP)
        FAILF("unexpected wait status %#x", status);

    iov.iov_base = &regs;
    iov.iov_len = sizeof(regs);
    if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &iov) != 0)
        FAILF("GETREGSET NT_PRSTATUS: %s", strerror(errno));
    if (iov.iov_len != sizeof(regs) || regs.regs[19] != MAGIC_REG)
        FAILF("NT_PRSTATUS: len %zu, x19 %#llx", iov.iov_len,
              (unsigned long long)regs.regs[19]);

    iov.iov_base = &fp;
    iov.iov_len = sizeof(fp);
    if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRFPREG, &iov) != 0)
        FAILF("GETREGSET NT_PRFPREG: %s", strerror(errno));
    if ((uint64_t)fp.vregs[8] != MAGIC_REG)
        FAILF("NT_PRFPREG: d8 %#llx", (unsigned long long)(uint64_t)fp.vregs[8]);

    if (peek(pid, &secret, &v) != 0)
        FAILF("process_vm_readv(secret): %s", strerror(errno));
    if (v != (MAGIC_MEM ^ (uint64_t)pid))
        FAILF("process_vm_readv: got %#llx", (unsigned long long)v);

    printf("ptrace: pc %#llx x19 %#llx d8 ok, secret ok\n",
           (unsigned long long)regs.pc, (unsigned long long)regs.regs[19]);
    rc = 0;
out:
    kill(pid, SIGKILL);
    waitpid(pid, &status, __WALL);
    return rc;
}
EOF

    cat >"$d/zlib.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <zlib.h>
int main(void)
{
    static unsigned char src[64 * 1024], comp[80 * 1024], back[64 * 1024];
    uLongf clen = sizeof(comp), blen = sizeof(back);
    char line[64] = "";
    size_t i;
    gzFile gz;

    for (i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i * 7 / 13);
    if (compress(comp, &clen, src, sizeof(src)) != Z_OK ||
        uncompress(back, &blen, comp, clen) != Z_OK ||
        blen != sizeof(src) || memcmp(src, back, blen) != 0) {
        puts("zlib: round trip failed");
        return 1;
    }
    /* gzprintf needs __vsnprintf_chk: the fortify shim */
    if (!(gz = gzopen("/tmp/zlib-test.gz", "wb")) || gzprintf(gz, "n=%d\n", 42) <= 0 ||
        gzclose(gz) != Z_OK || !(gz = gzopen("/tmp/zlib-test.gz", "rb")) ||
        !gzgets(gz, line, sizeof(line)) || gzclose(gz) != Z_OK || strcmp(line, "n=42\n")) {
        puts("zlib: gzprintf/gzgets failed");
        return 1;
    }
    printf("zlib %s: %zu -> %lu bytes and back, gzprintf ok\n", zlibVersion(),
           sizeof(src), (unsigned long)clen);
    return 0;
}
EOF

    cat >"$d/zstd.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <zstd.h>
int main(void)
{
    static unsigned char src[64 * 1024], comp[80 * 1024], back[64 * 1024];
    size_t i, clen, blen;

    for (i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i % 251 < 100 ? 'a' : i);
    clen = ZSTD_compress(comp, sizeof(comp), src, sizeof(src), 3);
    if (ZSTD_isError(clen)) {
        printf("zstd: compress: %s\n", ZSTD_getErrorName(clen));
        return 1;
    }
    blen = ZSTD_decompress(back, sizeof(back), comp, clen);
    if (ZSTD_isError(blen) || blen != sizeof(src) || memcmp(src, back, blen)) {
        puts("zstd: round trip failed");
        return 1;
    }
    printf("zstd %s: %zu -> %zu bytes and back\n", ZSTD_versionString(),
           sizeof(src), clen);
    return 0;
}
EOF

    cat >"$d/cmocka.c" <<'EOF'
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
static void adds_up(void **state)
{
    (void)state;
    assert_int_equal(2 + 2, 4);
}
int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(adds_up) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
EOF

    # The fragment under test supplies CC, CFLAGS, LDFLAGS and the libs.
    cat >"$d/Makefile" <<EOF
include $TOOLCHAIN_MK
CFLAGS += -O2 -g -Wall -Wextra -Werror
PROGS := ${TESTS[*]}
all: \$(PROGS)
zlib: LDLIBS += \$(A64_ZLIB_LIBS)
zstd: LDLIBS += \$(A64_ZSTD_LIBS)
cmocka: LDLIBS += \$(A64_CMOCKA_LIBS)
%: %.c
	\$(CC) \$(CFLAGS) \$(LDFLAGS) -o \$@ \$< \$(LDLIBS)
EOF

    # Runs in the guest with busybox sh, from /t.
    cat >"$d/run-suite.sh" <<EOF
#!/bin/sh
# One result line per test; exit 1 if any test failed.
pass=0
fail=0
mkdir -p /t/out
: >/t/out/results.txt
for t in ${TESTS[*]}; do
    ./\$t
    st=\$?
    if [ \$st -eq 0 ]; then
        r="RESULT \$t PASS"; pass=\$((pass + 1))
    else
        r="RESULT \$t FAIL status=\$st"; fail=\$((fail + 1))
    fi
    echo "\$r"
    echo "\$r" >>/t/out/results.txt
done
echo "suite totals: pass=\$pass fail=\$fail"
[ \$fail -eq 0 ]
EOF
    chmod +x "$d/run-suite.sh"
}

# A static aarch64 executable: AArch64 machine, no PT_INTERP.
is_static_aarch64() {
    local h
    h=$(aarch64-linux-gnu-readelf -lh "$1" 2>/dev/null) || return 1
    grep -q 'Machine: *AArch64' <<<"$h" && ! grep -q 'INTERP' <<<"$h"
}

# True if TEXT has no "[    1.234567] ..." kernel log line.
no_kernel_lines() {
    ! grep -Eq '^\[ *[0-9]+\.[0-9]+\]' <<<"$1"
}

main() {
    local t0 out rc results expected t
    if [[ ${IBCR_A64_SKIP_DEPS:-0} != 1 ]]; then
        if [[ $(id -u) == 0 ]]; then
            t0=$(now)
            "$TOP/tools/aarch64/deps.sh" -q
            say "deps ready in $(since "$t0") s"
        else
            say "not root: assuming tools/aarch64/deps.sh was run"
        fi
    fi

    work=$(mktemp -d "${TMPDIR:-/tmp}/ibcr-smoke-arm64.XXXXXX")
    if ((keep)); then say "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
    mkdir -p "$work/src" "$work/out"
    write_sources "$work/src"

    t0=$(now)
    if make -s -C "$work/src" all >"$work/build.log" 2>&1; then
        ok "cross-build of ${#TESTS[@]} programs with toolchain.mk ($(since "$t0") s)"
    else
        not_ok "cross-build with toolchain.mk"
        sed 's/^/    /' "$work/build.log"
    fi
    for t in "${TESTS[@]}"; do
        check "$t is a static aarch64 executable" is_static_aarch64 "$work/src/$t"
    done
    rm -f "$work/src"/*.c "$work/src/Makefile"

    # One boot runs the whole suite.
    t0=$(now)
    set +e
    "$VM" "${vm_opts[@]}" -o "$work/out" "$work/src" | tee "$work/console.txt"
    rc=${PIPESTATUS[0]}
    set -e
    say "one boot ran the suite in $(since "$t0") s (harness exit $rc)"
    out=$(cat "$work/console.txt")

    check "harness exit status is 1: exit3's failure reached the host" [ "$rc" = 1 ]
    expected=$(printf 'RESULT %s\n' "hello PASS" "exit3 FAIL status=3" "ptrace PASS" \
        "zlib PASS" "zstd PASS" "cmocka PASS")
    for t in "${TESTS[@]}"; do
        check "result line for $t" grep -qx "$(grep " $t " <<<"$expected")" <<<"$out"
    done
    check "hello's own output is on the console" grep -q '^hello from aarch64 (static musl)$' <<<"$out"
    check "cmocka reported its test as passed" grep -q 'PASSED.*1 test' <<<"$out"
    check "suite totals line" grep -qx 'suite totals: pass=5 fail=1' <<<"$out"
    check "no kernel messages leaked into the output" no_kernel_lines "$out"
    results=$(cat "$work/out/results.txt" 2>/dev/null || true)
    check "/t/out/results.txt came back through -o" [ "$results" = "$expected" ]

    echo "smoke-arm64: $pass passed, $fail failed"
    ((fail == 0))
}

main
