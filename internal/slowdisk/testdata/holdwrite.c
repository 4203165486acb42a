/* holdwrite: the test program of slowdisk_test.go. One thread syncs a
 * file while the main thread, 50 ms later, writes to the same file and
 * then to a pipe; it prints how long each took, in milliseconds:
 * "sync=N write=N pipe=N". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int fd;
static double sync_ms;

static double now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *syncer(void *arg) {
	(void)arg;
	double begin = now_ms();
	if (fdatasync(fd) != 0) {
		perror("fdatasync");
	}
	sync_ms = now_ms() - begin;
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: holdwrite FILE\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int pipefd[2];
	if (fd < 0 || pipe(pipefd) != 0 || write(fd, "a", 1) != 1) {
		perror("setup");
		return 1;
	}
	pthread_t thread;
	pthread_create(&thread, NULL, syncer, NULL);
	struct timespec pause = {.tv_nsec = 50 * 1000 * 1000};
	nanosleep(&pause, NULL);
	double begin = now_ms();
	if (write(pipefd[1], "b", 1) != 1) {
		perror("write pipe");
		return 1;
	}
	double pipe_ms = now_ms() - begin;
	begin = now_ms();
	if (write(fd, "c", 1) != 1) {
		perror("write");
		return 1;
	}
	double write_ms = now_ms() - begin;
	pthread_join(thread, NULL);
	printf("sync=%.0f write=%.0f pipe=%.0f\n", sync_ms, write_ms, pipe_ms);
	return 0;
}
