// SPDX-License-Identifier: MIT
/*
 * An MPI job with collectives and point-to-point traffic, for checkpoints
 * in mid-run. Each step every rank passes a token around the ring
 * (send to the next, receive from the previous), takes part in an
 * Allreduce, a Bcast from a rotating root and a Barrier, and checks every
 * result it can compute itself; rank 0 prints "tick N pid P" every 10
 * steps, and at the end compares the sum of all Allreduce results with
 * the closed form: "ANSWER ok SUM" or "FAIL ...".
 *
 *   mpiring [STEPS [MS]]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int step(int rank, int size, long i, long *sum)
{
	long mine = rank * 1000 + i, token = -1, all = 0, b = rank == i % size ? i * 7 : -1;
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;

	MPI_Sendrecv(&mine, 1, MPI_LONG, next, (int)(i % 32768), &token, 1, MPI_LONG, prev,
		     (int)(i % 32768), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (token != prev * 1000 + i) {
		printf("FAIL rank %d step %ld: token %ld from rank %d\n", rank, i, token, prev);
		return 1;
	}
	MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (all != 1000L * size * (size - 1) / 2 + size * i) {
		printf("FAIL rank %d step %ld: allreduce %ld\n", rank, i, all);
		return 1;
	}
	MPI_Bcast(&b, 1, MPI_LONG, (int)(i % size), MPI_COMM_WORLD);
	if (b != i * 7) {
		printf("FAIL rank %d step %ld: bcast %ld\n", rank, i, b);
		return 1;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	*sum += all;
	return 0;
}

int main(int argc, char **argv)
{
	long steps = argc > 1 ? atol(argv[1]) : 300, ms = argc > 2 ? atol(argv[2]) : 20, sum = 0;
	int rank, size, bad = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (long i = 0; i < steps && !bad; i++) {
		bad = step(rank, size, i, &sum);
		if (rank == 0 && i % 10 == 0)
			printf("tick %ld pid %d\n", i / 10, (int)getpid());
		sleep_ms(ms);
	}
	if (!bad && rank == 0) {
		long want = steps * (1000L * size * (size - 1) / 2) + size * steps * (steps - 1) / 2;

		if (sum == want)
			printf("ANSWER ok %ld\n", sum);
		else
			printf("FAIL sum %ld, expected %ld\n", sum, want);
	}
	MPI_Finalize();
	return bad;
}
