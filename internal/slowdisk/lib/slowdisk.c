/*
 * firedrill's slow disk: an LD_PRELOAD library that makes the process it
 * is loaded into see a busy device.
 *
 * While the control file named by FIREDRILL_SLOWDISK_CONTROL holds a line
 * "fsync_delay_us=N" (N > 0), every fsync() and fdatasync() takes N
 * microseconds before it does the real sync, and a write() (or writev,
 * pwrite) to a regular file whose sync is in flight waits until that sync
 * has returned: what Linux does when a file's pages are under writeback on
 * a device whose queue is full of someone else's data (a backup copy,
 * another server's snapshot). Without the control file the calls go
 * straight to libc, at the cost of one atomic load per write.
 *
 * The library is built by firedrill at run time (internal/slowdisk) into
 * the embedded server's temp directory, and removed with it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

typedef int (*sync_fn)(int);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

/* The files whose sync is in flight, by device and inode: a write to one
 * of them waits on in_flight_done. More syncs at once than slots is not a
 * case a server meets (Redis has one AOF sync in flight); the extra ones
 * are slowed but do not hold writes. */
#define MAX_IN_FLIGHT 64
static struct {
	dev_t dev;
	ino_t ino;
	int syncs;
} in_flight[MAX_IN_FLIGHT];
static atomic_int in_flight_total;
static pthread_mutex_t in_flight_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t in_flight_done = PTHREAD_COND_INITIALIZER;

/* next_symbol finds libc's own function; without it the process cannot go
 * on correctly, so it stops at once rather than misbehave. */
static void *next_symbol(const char *name) {
	void *sym = dlsym(RTLD_NEXT, name);
	if (sym == NULL) {
		static const char msg[] = "firedrill slowdisk: dlsym(RTLD_NEXT) found no libc function\n";
		syscall(SYS_write, 2, msg, sizeof msg - 1);
		abort();
	}
	return sym;
}

/* fsync_delay_us reads the control file: 0 when it is absent, unreadable
 * or says nothing above 0. It is read at every sync (once a second for a
 * Redis AOF), so the event switches the slow disk on and off at once. */
static long fsync_delay_us(void) {
	const char *path = getenv("FIREDRILL_SLOWDISK_CONTROL");
	if (path == NULL || path[0] == '\0') {
		return 0;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	char buf[128];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) {
		return 0;
	}
	buf[n] = '\0';
	const char *key = "fsync_delay_us=";
	char *at = strstr(buf, key);
	if (at == NULL) {
		return 0;
	}
	long us = strtol(at + strlen(key), NULL, 10);
	return us > 0 ? us : 0;
}

static void sleep_us(long us) {
	struct timespec left = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
	while (nanosleep(&left, &left) != 0 && errno == EINTR) {
	}
}

/* slot_of is the in_flight slot of a file, or -1; in_flight_lock held. */
static int slot_of(dev_t dev, ino_t ino) {
	for (int i = 0; i < MAX_IN_FLIGHT; i++) {
		if (in_flight[i].syncs > 0 && in_flight[i].dev == dev && in_flight[i].ino == ino) {
			return i;
		}
	}
	return -1;
}

/* slow_sync delays a sync of fd, holding writes to its file meanwhile. */
static int slow_sync(int fd, sync_fn real) {
	long us = fsync_delay_us();
	if (us == 0) {
		return real(fd);
	}
	struct stat st;
	int slot = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		pthread_mutex_lock(&in_flight_lock);
		slot = slot_of(st.st_dev, st.st_ino);
		for (int i = 0; slot < 0 && i < MAX_IN_FLIGHT; i++) {
			if (in_flight[i].syncs == 0) {
				slot = i;
				in_flight[i].dev = st.st_dev;
				in_flight[i].ino = st.st_ino;
			}
		}
		if (slot >= 0) {
			in_flight[slot].syncs++;
			atomic_fetch_add(&in_flight_total, 1);
		}
		pthread_mutex_unlock(&in_flight_lock);
	}
	sleep_us(us);
	int rc = real(fd);
	int saved = errno;
	if (slot >= 0) {
		pthread_mutex_lock(&in_flight_lock);
		in_flight[slot].syncs--;
		atomic_fetch_sub(&in_flight_total, 1);
		pthread_cond_broadcast(&in_flight_done);
		pthread_mutex_unlock(&in_flight_lock);
	}
	errno = saved;
	return rc;
}

/* wait_for_sync holds a write to fd while a sync of its file is in
 * flight. Sockets and pipes (a server's replies) never wait. */
static void wait_for_sync(int fd) {
	if (atomic_load(&in_flight_total) == 0) {
		return;
	}
	int saved = errno;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		pthread_mutex_lock(&in_flight_lock);
		while (slot_of(st.st_dev, st.st_ino) >= 0) {
			pthread_cond_wait(&in_flight_done, &in_flight_lock);
		}
		pthread_mutex_unlock(&in_flight_lock);
	}
	errno = saved;
}

/* The libc functions the wrappers call, found once: at load time, before
 * the server has threads, or at the first call if another library's
 * constructor writes before this one ran. */
static sync_fn real_fsync, real_fdatasync;
static write_fn real_write;
static writev_fn real_writev;
static pwrite_fn real_pwrite, real_pwrite64;
static pthread_once_t resolved = PTHREAD_ONCE_INIT;

static void resolve_all(void) {
	real_fsync = (sync_fn)next_symbol("fsync");
	real_fdatasync = (sync_fn)next_symbol("fdatasync");
	real_write = (write_fn)next_symbol("write");
	real_writev = (writev_fn)next_symbol("writev");
	real_pwrite = (pwrite_fn)next_symbol("pwrite");
	real_pwrite64 = (pwrite_fn)next_symbol("pwrite64");
}

__attribute__((constructor)) static void resolve(void) { pthread_once(&resolved, resolve_all); }

int fsync(int fd) {
	pthread_once(&resolved, resolve_all);
	return slow_sync(fd, real_fsync);
}

int fdatasync(int fd) {
	pthread_once(&resolved, resolve_all);
	return slow_sync(fd, real_fdatasync);
}

ssize_t write(int fd, const void *buf, size_t count) {
	pthread_once(&resolved, resolve_all);
	wait_for_sync(fd);
	return real_write(fd, buf, count);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
	pthread_once(&resolved, resolve_all);
	wait_for_sync(fd);
	return real_writev(fd, iov, iovcnt);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
	pthread_once(&resolved, resolve_all);
	wait_for_sync(fd);
	return real_pwrite(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
	pthread_once(&resolved, resolve_all);
	wait_for_sync(fd);
	return real_pwrite64(fd, buf, count, offset);
}
