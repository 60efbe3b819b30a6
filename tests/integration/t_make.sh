#!/usr/bin/env bash
# An unmodified `make -j2` of a small C project (make, its jobserver
# pipe, the compiler processes it runs), saved with --tree mid-build,
# killed and restarted: it finishes, and the program it built is
# byte-identical to the one an uninterrupted build makes.
. "$(dirname "$0")/lib.sh"

# project DIR: 24 files and a Makefile whose recipes take a little time
project() {
	mkdir -p "$1"
	for i in $(seq 1 24); do
		printf 'static double w(int n) { double s = 0; for (int i = 1; i < n; i++) s += 1.0 / i; return s; }\nint f%d(void) { return (int)(w(1000 + %d) * 1000); }\n' "$i" "$i" >"$1/f$i.c"
	done
	{
		echo '#include <stdio.h>'
		for i in $(seq 1 24); do echo "int f$i(void);"; done
		echo 'int main(void) { long s = 0;'
		for i in $(seq 1 24); do echo "s += f$i();"; done
		echo 'printf("%ld\n", s); return 0; }'
	} >"$1/main.c"
	printf 'OBJS := $(patsubst %%.c,%%.o,$(wildcard *.c))\nprog: $(OBJS)\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n\t@sleep 0.3\n' >"$1/Makefile"
}

project "$T/ref"
make -s -C "$T/ref" -j2 >/dev/null 2>&1 || fail "the uninterrupted build failed"
project "$T/p"
cd "$T/p"
start "$T/prog.out" make -j2
pid=$PID
wait_line "$T/prog.out" '^cc .* -o f1[0-9].o '	# well into the build
checkpoint "$pid" "$T/img.ckpt" --tree --kill
wait "$pid" 2>/dev/null || true
# every pid of the image must be free again for make to find its children
all=$(sed -n 's/^process [0-9]*: pid \([0-9]*\) .*/\1/p' "$T/info.out")
[ "$(echo "$all" | wc -l)" -ge 3 ] || fail "make ran no compiler at the checkpoint: $all"
for p in $all; do while [ -e "/proc/$p" ]; do sleep 0.05; done; done
[ -e prog ] && fail "the build was over before the checkpoint"
timeout 300 "$LOADER" "$T/img.ckpt" >"$T/loader.out" 2>&1 || fail "make exited with $?: $(tail -n 3 "$T/prog.out")"
cmp -s prog "$T/ref/prog" || fail "the program differs from an uninterrupted build's"
[ "$(./prog)" = "$("$T/ref/prog")" ] || fail "the program prints something else"
exit 0
