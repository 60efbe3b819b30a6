/* SPDX-License-Identifier: MIT */
#ifndef IBCR_PROC_STAT_H
#define IBCR_PROC_STAT_H

#include <sys/types.h>

/* What /proc/PID/stat says of a process: the fields the tools look at. */
struct proc_stat {
	char state;		/* R, S, D, T, t, Z, X... */
	int ppid;
	unsigned long flags;	/* the kernel's PF_* (field 9) */
	unsigned long long start;	/* start time, clock ticks since boot */
	int exit_signal;	/* sent to the parent at its death (0: none) */
	int exit_code;		/* as wait(2) reports it, for a zombie */
	char comm[64];
};

#define PROC_PF_EXITING 0x00000004
#define PROC_PF_KTHREAD 0x00200000

/* 1 with *st filled, 0 when there is no such process (or thread). */
int proc_stat_of(pid_t pid, struct proc_stat *st);
/* The same from the file's line, which it cuts up (proc_stat_of's part). */
int proc_stat_parse(char *line, struct proc_stat *st);

/*
 * The number after "key" (e.g. "TracerPid:") on its line of the file at
 * path, in base (10, or 16 for capability masks); -1 when there is none.
 */
long long proc_key_num(const char *path, const char *key, int base);
/* The same in /proc/PID/status (pid 0: this process). */
long long proc_status_num(pid_t pid, const char *key, int base);

#endif
