// SPDX-License-Identifier: MIT
/*
 * A parent and a forked child share a SysV semaphore set (a named key:
 * semaphore 0 a mutex, semaphore 1 counts the queued messages) and a
 * private message queue. The parent sends numbered messages of varied
 * types and lengths; the child, after an initial sleep (so that several
 * are queued), receives them one by one and checks their order and
 * contents. Both increment a counter in shared memory under the mutex;
 * under it the parent also checks that the counting semaphore matches
 * the queue (one less at most: the child may have counted one down and
 * not taken it yet). At the end the counter must be twice the messages.
 *
 *   sysvipc [MESSAGES [MS [DELAY_MS]]]
 *     prints "tick N pid P sem S msg M key K items I queued Q counter C",
 *     the child "recv N pid P", then "DONE pid P counter C"; "FAIL ..."
 *   sysvipc show SEM MSG     "values V0 V1 messages N bytes B"
 *   sysvipc meddle SEM MSG   queues a stray message, counts 5 more items
 *   sysvipc squat ID KEY     a one-semaphore set with key KEY at id ID
 *   sysvipc rm SEM MSG       removes both (either may be gone already)
 *
 * semop returns EINTR after a ptrace stop (a checkpoint), even without a
 * handler; that is the kernel's, and the program retries as it must.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MUTEX 0
#define ITEMS 1
#define TEXT 512

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

struct msg {
	long mtype;
	char text[TEXT];
};

struct shared {
	long counter;
	long received;
};

static int sem, msq;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void fail(const char *what, long n)
{
	printf("FAIL %s (%ld): %s\n", what, n, strerror(errno));
	fflush(stdout);
	exit(1);
}

static void op(unsigned short num, short delta)
{
	struct sembuf b = { num, delta, 0 };

	while (semop(sem, &b, 1))
		if (errno != EINTR)
			fail("semop", num);
}

/* Message n: its type and bytes, so that every one is different. */
static size_t make(long n, struct msg *m)
{
	size_t len = (size_t)snprintf(m->text, TEXT, "seq %ld ", n);
	size_t extra = (size_t)(n * 37 % 200);

	for (size_t i = 0; i < extra; i++)
		m->text[len + i] = (char)(n + (long)i);	/* zero bytes too */
	m->mtype = 1 + n % 3;
	return len + extra;
}

static void child(long count, long delay, struct shared *sh)
{
	struct msg want, got;

	sleep_ms(delay);
	for (long n = 0; n < count; n++) {
		size_t len = make(n, &want);
		ssize_t k;

		op(ITEMS, -1);
		op(MUTEX, -1);
		k = msgrcv(msq, &got, TEXT, 0, IPC_NOWAIT);
		if (k < 0)
			fail("the semaphore counted a message that is not there", n);
		if ((size_t)k != len || got.mtype != want.mtype || memcmp(got.text, want.text, len)) {
			got.text[k < 20 ? k : 20] = 0;
			printf("FAIL message %ld: got type %ld '%s' (%zd bytes)\n", n, got.mtype,
			       got.text, k);
			exit(1);
		}
		sh->received++;
		sh->counter++;
		op(MUTEX, 1);
		printf("recv %ld pid %d\n", n, (int)getpid());
		fflush(stdout);
	}
	exit(0);
}

static void parent_tick(long n, long key, struct shared *sh)
{
	struct msg m;
	size_t len = make(n, &m);
	struct msqid_ds ds;
	int items;

	op(MUTEX, -1);
	while (msgsnd(msq, &m, len, 0))
		if (errno != EINTR)
			fail("msgsnd", n);
	op(ITEMS, 1);
	sh->counter++;
	items = semctl(sem, ITEMS, GETVAL);
	if (items < 0 || msgctl(msq, IPC_STAT, &ds))
		fail("reading the semaphore or the queue", n);
	if ((long)ds.msg_qnum < items || (long)ds.msg_qnum > items + 1) {
		printf("FAIL %lu messages queued, the semaphore counts %d\n",
		       (unsigned long)ds.msg_qnum, items);
		exit(1);
	}
	if (sh->counter != n + 1 + sh->received) {
		printf("FAIL counter %ld after %ld sent, %ld received\n", sh->counter, n + 1,
		       sh->received);
		exit(1);
	}
	op(MUTEX, 1);
	printf("tick %ld pid %d sem %d msg %d key %#lx items %d queued %lu counter %ld\n", n,
	       (int)getpid(), sem, msq, key, items, (unsigned long)ds.msg_qnum, sh->counter);
	fflush(stdout);
}

static int run(long count, long ms, long delay)
{
	long key = 0x5e000000L | (getpid() & 0xffffff);
	unsigned short init[2] = { 1, 0 };
	union semun arg = { .array = init };
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t c;
	int st;

	sem = semget((key_t)key, 2, IPC_CREAT | IPC_EXCL | 0600);
	msq = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	if (sh == MAP_FAILED || sem < 0 || msq < 0 || semctl(sem, 0, SETALL, arg))
		fail("creating the semaphores, queue and counter", key);
	if ((c = fork()) == 0)
		child(count, delay, sh);
	for (long n = 0; n < count; n++) {
		parent_tick(n, key, sh);
		sleep_ms(ms);
	}
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
		fail("the child failed", st);
	if (sh->counter != 2 * count)
		printf("FAIL counter %ld, expected %ld\n", sh->counter, 2 * count);
	semctl(sem, 0, IPC_RMID);
	msgctl(msq, IPC_RMID, NULL);
	printf("DONE pid %d counter %ld\n", (int)getpid(), sh->counter);
	return 0;
}

static int show(void)
{
	unsigned short v[2];
	union semun arg = { .array = v };
	struct msqid_ds ds;

	if (semctl(sem, 0, GETALL, arg) || msgctl(msq, IPC_STAT, &ds))
		fail("show", sem);
	printf("values %u %u messages %lu bytes %lu\n", v[0], v[1],
	       (unsigned long)ds.msg_qnum, (unsigned long)ds.msg_cbytes);
	return 0;
}

static int meddle(void)
{
	struct msg m = { 7, "stray" };
	struct sembuf more = { ITEMS, 5, 0 };

	if (msgsnd(msq, &m, 5, IPC_NOWAIT) || semop(sem, &more, 1))
		fail("meddle", sem);
	return 0;
}

static int squat(int id, long key)
{
	char num[16];
	int fd = open("/proc/sys/kernel/sem_next_id", O_WRONLY), got;
	int len = snprintf(num, sizeof(num), "%d", id);

	if (fd < 0 || write(fd, num, (size_t)len) != len)
		fail("sem_next_id", id);
	close(fd);
	got = semget((key_t)key, 1, IPC_CREAT | IPC_EXCL | 0600);
	if (got != id)
		fail("squat: the set came back as", got);
	printf("squat %d key %#lx\n", got, key);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (argc == 4) {
		sem = atoi(argv[2]);
		msq = atoi(argv[3]);
		if (!strcmp(cmd, "show"))
			return show();
		if (!strcmp(cmd, "meddle"))
			return meddle();
		if (!strcmp(cmd, "squat"))
			return squat(sem, strtol(argv[3], NULL, 0));
		if (!strcmp(cmd, "rm")) {
			semctl(sem, 0, IPC_RMID);
			msgctl(msq, IPC_RMID, NULL);
			return 0;
		}
	}
	return run(argc > 1 ? atol(argv[1]) : 40, argc > 2 ? atol(argv[2]) : 100,
		   argc > 3 ? atol(argv[3]) : 1500);
}
