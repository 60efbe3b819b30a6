/* SPDX-License-Identifier: MIT */
/*
 * struct sched_attr as sched_getattr/sched_setattr take it (the kernel's
 * uapi layout, SCHED_ATTR_SIZE_VER1), for the saver, the loader and the
 * restore core alike: <linux/sched/types.h> clashes with musl's
 * <sched.h>, and the aarch64 saver is built with musl.
 */
#ifndef IBCR_SCHED_ATTR_H
#define IBCR_SCHED_ATTR_H

#include <stdint.h>

struct ibcr_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

#define IBCR_SCHED_ATTR_VER1 56

#endif
