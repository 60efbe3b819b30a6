# verbs/verbs.mk - the verbs shim (libibcr-verbs.so), ibcr-launch and the
# verbs test programs. Included by the top GNUmakefile; see docs/verbs.md.

VERBS_SRC := core verbs data helper quiesce rebuild rendezvous udtarget addr qprec testhooks rdmacm epoll extended wr
VERBS_TESTS := rc_pp selftest extra_objs microbench mtstress ext_verbs epollcm efdmodes
VERBS_CFLAGS := $(OPT) $(WARN) -D_GNU_SOURCE -fPIC -fvisibility=hidden $(INC_verbs)
VERBS_HDRS := verbs/shim.h verbs/ckpt.h lib/verbs_abi.h

ifneq ($(ARCH),x86_64)
VERBS_ALL :=	# the verbs stage is built and tested on x86_64 only
else ifneq ($(wildcard /usr/include/infiniband/verbs.h),)
VERBS_ALL := $(B)/libibcr-verbs.so $(B)/ibcr-launch $(B)/ibcr-job $(VERBS_TESTS:%=$(B)/tests/verbs/%)
else
VERBS_ALL :=
$(info verbs: /usr/include/infiniband/verbs.h missing (apt-get install libibverbs-dev): shim not built)
endif

all: $(VERBS_ALL)

$(B)/verbs/%.o: verbs/%.c $(VERBS_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(VERBS_CFLAGS) -MMD -MP -c -o $@ $<

# DT_NEEDED on libibverbs even though the shim calls nothing of it
# directly (--no-as-needed): programs such as UCX dlopen() libibverbs
# privately, long after the preload, and the shim's dlvsym(RTLD_NEXT)
# lookups of the real functions find them only in the global scope.
$(B)/libibcr-verbs.so: $(VERBS_SRC:%=$(B)/verbs/%.o)
	$(CC) -shared -Wl,-z,defs -Wl,-soname,libibcr-verbs.so -o $@ $^ \
		-Wl,--no-as-needed -libverbs -Wl,--as-needed -lpthread -ldl

$(B)/ibcr-launch $(B)/ibcr-job: $(B)/%: tools/%
	@mkdir -p $(dir $@)
	cp $< $@
	chmod +x $@

$(B)/tests/verbs/%: tests/verbs/%.c tests/verbs/common.h lib/verbs_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(OPT) $(WARN) -D_GNU_SOURCE -pthread -Ilib -o $@ $< -libverbs -ldl $(VERBS_LIBS_$*)

# librdmacm1 has no -dev package here: the test declares what it calls
VERBS_LIBS_epollcm := -l:librdmacm.so.1

verbs-check: $(VERBS_ALL)
	tests/verbs/run-guest.sh

# verbs across two guests (one checkpoint over both, images swapped)
verbs-pair: $(VERBS_ALL)
	tests/verbs/run-pair.sh

verbs-bench: $(VERBS_ALL)
	tests/verbs/bench-shim.sh

.PHONY: verbs-check verbs-pair verbs-bench

# ibcr-pmix: the PMIx engine of ibcr-job's barriers (libpmix-dev is a
# build package: pkg-config runs in the recipe, after tools/deps.sh)
ifeq ($(ARCH),x86_64)
all: $(B)/ibcr-pmix
$(B)/ibcr-pmix: tools/ibcr-pmix.c tools/pmix_bundle.c tools/pmix_bundle.h | deps-build
	@mkdir -p $(dir $@)
	$(CC) $(OPT) $(WARN) -D_GNU_SOURCE $(INC_tools) $$(pkg-config --cflags pmix) -o $@ \
		tools/ibcr-pmix.c tools/pmix_bundle.c $$(pkg-config --libs pmix)
endif
