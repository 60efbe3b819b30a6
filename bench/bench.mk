# bench/bench.mk: `make bench` (issue 5), included by GNUmakefile.
# Builds the benchmark programs and runs bench/run.sh; docs/benchmarks.md
# explains the method and shows the latest table.

BENCH_PROGS := $(B)/bench/workload $(B)/bench/baseline $(B)/bench/benchexec $(B)/bench/treeload

$(B)/bench/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -pthread -o $@ $<

bench-progs: $(BENCH_PROGS)

bench: all bench-progs
	bench/run.sh

.PHONY: bench bench-progs
