// SPDX-License-Identifier: MIT
/*
 * mpipp: MPI latency and bandwidth between ranks 0 and 1, for the verbs
 * shim's overhead on an MPI job (bench/verbs-guest.sh; Debian has neither
 * the OSU benchmarks nor IMB). Latency: LAT_N ping-pongs of 8 bytes, half
 * the mean round trip. Bandwidth: BW_N messages of 1 MiB from 0 to 1 in
 * windows of 8 (MPI_Isend/Irecv), then one acknowledgement. Each message's
 * first and last words are checked. Rank 0 prints
 * "mpipp lat_us L bw_mb_s B".
 *
 *   mpirun -np 2 mpipp [LAT_N [BW_N]]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (1 << 20)
#define WIN 8

static int check(const uint64_t *b, size_t words, uint64_t tag)
{
	return b[0] == tag && b[words - 1] == ~tag;
}

static void mark(uint64_t *b, size_t words, uint64_t tag)
{
	b[0] = tag;
	b[words - 1] = ~tag;
}

static double latency(int rank, long n)
{
	uint64_t b[1];
	double t0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (long i = 0; i < n; i++) {
		if (rank == 0) {
			b[0] = (uint64_t)i;
			MPI_Send(b, 1, MPI_UINT64_T, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(b, 1, MPI_UINT64_T, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (b[0] != (uint64_t)i + 1)
				return -1;
		} else if (rank == 1) {
			MPI_Recv(b, 1, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			b[0]++;
			MPI_Send(b, 1, MPI_UINT64_T, 0, 2, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / (double)n / 2 * 1e6;
}

static double bandwidth(int rank, long n, uint64_t *buf)
{
	const size_t words = BIG / sizeof(uint64_t);
	MPI_Request rq[WIN];
	double t0;
	int ok = 1;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (long i = 0; i < n; i += WIN) {
		int k = (int)(n - i < WIN ? n - i : WIN);

		for (int j = 0; j < k; j++) {
			uint64_t *b = buf + (size_t)j * words;

			if (rank == 0) {
				mark(b, words, (uint64_t)(i + j));
				MPI_Isend(b, BIG, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &rq[j]);
			} else {
				MPI_Irecv(b, BIG, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &rq[j]);
			}
		}
		MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
		for (int j = 0; rank == 1 && j < k; j++)
			ok &= check(buf + (size_t)j * words, words, (uint64_t)(i + j));
	}
	if (rank == 1)
		MPI_Send(&ok, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
	else
		MPI_Recv(&ok, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return ok ? (double)n * BIG / (MPI_Wtime() - t0) / 1e6 : -1;
}

int main(int argc, char **argv)
{
	long lat_n = argc > 1 ? atol(argv[1]) : 2000, bw_n = argc > 2 ? atol(argv[2]) : 64;
	int rank, size;
	uint64_t *buf;
	double lat, bw;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	buf = malloc((size_t)WIN * BIG);
	if (size != 2 || !buf || lat_n < 1 || bw_n < 1) {
		if (rank == 0)
			fprintf(stderr, "mpipp: 2 ranks, LAT_N and BW_N >= 1\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	memset(buf, 0, (size_t)WIN * BIG);
	lat = latency(rank, lat_n);
	bw = bandwidth(rank, bw_n, buf);
	if (rank == 0) {
		if (lat < 0 || bw < 0) {
			printf("FAIL mpipp: a message arrived wrong\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		printf("mpipp lat_us %.2f bw_mb_s %.1f\n", lat, bw);
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
