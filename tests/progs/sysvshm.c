// SPDX-License-Identifier: MIT
/*
 * A SysV shared memory segment (a private key and, if asked, a named
 * one), attached by a parent and two forked workers; each worker counts
 * in its slot, the parent sees the counts move only if the segment is
 * really shared, and checks that its id is the one it was given at the
 * start (the id is part of the program's state: it may pass it on).
 * Prints "tick N pid P id I counts A B"; "FAIL ..." on any mismatch.
 *
 *   sysvshm [TICKS [MS]]
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIZE (256u << 10)
#define STALL 20

struct seg {
	atomic_ulong count[2];
	atomic_int stop;
	int id;
	uint32_t pattern[];
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? atol(argv[1]) : 40, ms = argc > 2 ? atol(argv[2]) : 100;
	int id = shmget(IPC_PRIVATE, SIZE, IPC_CREAT | 0600), st, still[2] = { 0, 0 };
	size_t words = (SIZE - sizeof(struct seg)) / 4;
	unsigned long last[2] = { 0, 0 };
	struct seg *s;
	struct shmid_ds ds;
	pid_t w[2];

	if (id < 0 || (s = shmat(id, NULL, 0)) == (void *)-1)
		return 2;
	s->id = id;
	for (size_t i = 0; i < words; i++)
		s->pattern[i] = (uint32_t)(i * 2654435761u);
	for (int k = 0; k < 2; k++)
		if ((w[k] = fork()) == 0) {
			while (!atomic_load(&s->stop)) {
				atomic_fetch_add(&s->count[k], 1);
				sleep_ms(5);
			}
			return 0;
		}
	for (long n = 0; n < ticks; n++) {
		if (shmctl(id, IPC_STAT, &ds) || ds.shm_segsz != SIZE || s->id != id) {
			printf("FAIL segment %d is not what it was\n", id);
			return 1;
		}
		for (int k = 0; k < 2; k++) {
			unsigned long c = atomic_load(&s->count[k]);

			still[k] = c == last[k] ? still[k] + 1 : 0;
			last[k] = c;
			if (still[k] >= STALL) {
				printf("FAIL worker %d's count stood still: segment not shared\n", k);
				return 1;
			}
		}
		for (size_t i = 0; i < words; i += 61)
			if (s->pattern[i] != (uint32_t)(i * 2654435761u)) {
				printf("FAIL pattern word %zu changed\n", i);
				return 1;
			}
		printf("tick %ld pid %d id %d counts %lu %lu nattch %lu\n", n, (int)getpid(), id,
		       last[0], last[1], (unsigned long)ds.shm_nattch);
		fflush(stdout);
		sleep_ms(ms);
	}
	atomic_store(&s->stop, 1);
	for (int k = 0; k < 2; k++)
		if (waitpid(w[k], &st, 0) != w[k] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("FAIL worker %d status %#x\n", k, st);
			return 1;
		}
	shmdt(s);
	shmctl(id, IPC_RMID, NULL);
	printf("DONE pid %d\n", (int)getpid());
	return 0;
}
