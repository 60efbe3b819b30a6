# bench/bench.mk: `make bench` (issue 5), included by GNUmakefile.
# Builds the benchmark programs and runs bench/run.sh; docs/benchmarks.md
# explains the method and shows the latest table.

BENCH_PROGS := $(B)/bench/workload $(B)/bench/baseline $(B)/bench/benchexec $(B)/bench/treeload

$(B)/bench/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -pthread -o $@ $<

# the MPI benchmark of the verbs part, with Open MPI's wrapper
$(B)/bench/mpipp: bench/mpipp.c
	@mkdir -p $(dir $@)
	mpicc -O2 -g -Wall -Wextra -o $@ $<

bench-progs: $(BENCH_PROGS) $(B)/bench/mpipp $(B)/tests/progs/mpiring

bench: all bench-progs
	bench/run.sh

.PHONY: bench bench-progs
