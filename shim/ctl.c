/*
 * ctl.c: this process's control block (carve_ctl.h). carve run makes it
 * before exec; a child process copies its parent's (or CARVE_CTL_ROOT) into
 * one of its own, so that carve ls lists it and carve set can move it. The
 * mask is read under the block's seqlock and cached per thread by generation.
 * The tenant's memory account (mem.c) is a block too: the one carve made
 * for the tenant, which this file finds and maps, and whose ended
 * processes' share it credits back.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "carve_tmd.h"
#include "shim.h"

/* The last mask of each of the tenant's GPUs read from the block that
 * enables a live TPC, shared by all threads; written under mask_mu when
 * the block's generation moves. */
static pthread_mutex_t mask_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seen_gen = UINT64_MAX;
static uint32_t good_mask[CARVE_GPUS][CARVE_MASK_WORDS];
static int good_valid[CARVE_GPUS];
static uint32_t seen_mask[CARVE_GPUS][CARVE_MASK_WORDS]; /* as last read, good or not */

/* Last mask this thread read, of one GPU, keyed by the block's gen. */
static __thread __attribute__((tls_model("initial-exec"))) uint64_t t_gen = UINT64_MAX;
static __thread __attribute__((tls_model("initial-exec"))) int t_gpu;
static __thread __attribute__((tls_model("initial-exec"))) uint32_t t_mask[CARVE_MASK_WORDS];
static __thread __attribute__((tls_model("initial-exec"))) int t_valid;

/* start_ticks returns field 22 of /proc/<pid>/stat, the process start time. */
static uint64_t start_ticks(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p)
		return 0;
	/* after ")": field 3 is state; skip to field 22 */
	int field = 2;
	while (*p && field < 22) {
		if (*p == ' ')
			field++;
		p++;
	}
	return strtoull(p, NULL, 10);
}

static void read_cmdline(char *dst, size_t cap)
{
	memset(dst, 0, cap);
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, dst, cap - 1);
	close(fd);
	(void)n;
}

void carve_hist_add(struct carve_hist *h, uint64_t d)
{
	int i = 0;
	while (i < CARVE_HIST_BUCKETS - 1 && d >= CARVE_HIST_BOUND_NS(i))
		i++;
	__atomic_add_fetch(&h->bucket[i], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->sum_ns, d, __ATOMIC_RELAXED);
}

static struct carve_ctl *map_block(int fd)
{
	void *p = mmap(NULL, CARVE_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : (struct carve_ctl *)p;
}

static int block_ok(const struct carve_ctl *c)
{
	return c && c->magic == CARVE_CTL_MAGIC && c->version == CARVE_CTL_VERSION &&
	       c->size == CARVE_CTL_SIZE;
}

/* open_block maps an existing block, read-write or (a parent's or the
 * root's, which are only copied) read-only; NULL if absent or invalid. */
static struct carve_ctl *open_block(const char *path, int writable)
{
	int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *p = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size == CARVE_CTL_SIZE)
		p = mmap(NULL, CARVE_CTL_SIZE, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	close(fd);
	struct carve_ctl *c = p == MAP_FAILED ? NULL : (struct carve_ctl *)p;
	if (c && !block_ok(c)) {
		munmap(c, CARVE_CTL_SIZE);
		return NULL;
	}
	return c;
}

/* hold_block takes a read lock on the first byte of our block's file and
 * keeps it for the life of the process: carve tells from it that we run,
 * with no pid, so across PID namespaces too. The descriptor stays open (a
 * close of any descriptor of the file would let the lock go). */
static void hold_block(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	if (fcntl(fd, F_SETLK, &l) != 0)
		close(fd);
}

/* read_masks copies the masks of the block's first n GPUs consistently
 * (seqlock read side), and the SM counts written with them where sms is
 * not NULL. Returns 0 if the block stayed mid-write for too long. */
static int read_masks(const struct carve_ctl *c, int n, uint32_t out[][CARVE_MASK_WORDS], uint64_t *gen, uint32_t *sms)
{
	for (int tries = 0; tries < 10000; tries++) {
		uint64_t g1 = __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE);
		if (g1 & 1) {
			if (tries > 100)
				sched_yield();
			continue;
		}
		for (int g = 0; g < n; g++) {
			for (int i = 0; i < CARVE_MASK_WORDS; i++)
				out[g][i] = __atomic_load_n(&CARVE_PART(c, g, mask)[i], __ATOMIC_RELAXED);
			if (sms)
				sms[g] = __atomic_load_n(&CARVE_PART(c, g, sms), __ATOMIC_RELAXED);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		uint64_t g2 = __atomic_load_n(&c->gen, __ATOMIC_RELAXED);
		if (g1 == g2) {
			*gen = g1;
			return 1;
		}
	}
	return 0;
}

/* create_block makes our own block as a copy of src's partition and policy:
 * every field carve_ctl.h's CARVE_CTL_FIELDS marks INHERIT, the mask and
 * SM count read together under the seqlock; the fields of our own identity
 * made afresh, the rest zero. It is written to a temporary name and renamed
 * so that readers never see it half-filled; mode 0644 in a directory with
 * the sticky bit, else 0600. */
static struct carve_ctl *create_block(const char *dir, const struct carve_ctl *src)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	pid_t pid = getpid();
	snprintf(tmp, sizeof tmp, "%s/.%d.new", dir, (int)pid);
	snprintf(path, sizeof path, "%s/%d", dir, (int)pid);
	/* in a directory several users share (sticky: the node directory, a
	 * claim's) others read it, as carve's own blocks there (ctl.BlockPerm) */
	struct stat ds;
	mode_t perm = stat(dir, &ds) == 0 && (ds.st_mode & S_ISVTX) ? 0644 : 0600;
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, perm);
	if (fd < 0)
		return NULL;
	if (fchmod(fd, perm) != 0 || ftruncate(fd, CARVE_CTL_SIZE) != 0) {
		close(fd);
		unlink(tmp);
		return NULL;
	}
	struct carve_ctl *c = map_block(fd);
	close(fd);
	if (!c) {
		unlink(tmp);
		return NULL;
	}
#define INHERIT(name, kind)                                                       \
	if (CARVE_FIELD_##kind == CARVE_FIELD_INHERIT)                            \
		memcpy((void *)&c->name, (const void *)&src->name, sizeof c->name);
	CARVE_CTL_FIELDS(INHERIT)
#undef INHERIT
	/* the masks and SM counts again, as one (a writer that died
	 * mid-write leaves the copies above) */
	uint64_t gen;
	uint32_t masks[CARVE_GPUS][CARVE_MASK_WORDS], sms[CARVE_GPUS];
	if (read_masks(src, CARVE_GPUS, masks, &gen, sms)) {
		for (int g = 0; g < CARVE_GPUS; g++) {
			memcpy(CARVE_PART(c, g, mask), masks[g], sizeof masks[g]);
			CARVE_PART(c, g, sms) = sms[g];
		}
	}
	if (!c->tenant)
		c->tenant = src->pid;
	c->magic = CARVE_CTL_MAGIC;
	c->version = CARVE_CTL_VERSION;
	c->size = CARVE_CTL_SIZE;
	c->pid = (uint32_t)pid;
	c->start_ticks = start_ticks(pid);
	c->created_ns = carve_now_ns();
	c->gen = 2;
	read_cmdline(c->comm, sizeof c->comm);
	if (rename(tmp, path) != 0) {
		munmap(c, CARVE_CTL_SIZE);
		unlink(tmp);
		return NULL;
	}
	return c;
}

/* attach finds this process's block: its own, else a copy of its parent's,
 * else a copy of CARVE_CTL_ROOT. */
struct carve_ctl *carve_attach(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
	struct carve_ctl *c = open_block(path, 1);
	uint64_t ours = start_ticks(getpid());
	if (c && c->start_ticks != 0 && ours != 0 && c->start_ticks != ours) {
		/* the block of an earlier process that had our pid */
		CARVE_DEBUG("block %s is of an earlier process with this pid; not ours", path);
		munmap(c, CARVE_CTL_SIZE);
		c = NULL;
	}
	if (c) {
		/* carve run made it for us before exec: fill in what only we know */
		if (c->start_ticks == 0)
			c->start_ticks = ours;
		hold_block(path);
		return c;
	}
	char parent[PATH_MAX];
	snprintf(parent, sizeof parent, "%s/%d", dir, (int)getppid());
	struct carve_ctl *src = open_block(parent, 0);
	if (!src) {
		const char *root = getenv("CARVE_CTL_ROOT");
		if (root)
			src = open_block(root, 0);
	}
	if (!src)
		return NULL;
	c = create_block(dir, src);
	munmap(src, CARVE_CTL_SIZE);
	if (c)
		hold_block(path);
	return c;
}

/* carve_current_mask returns the mask to apply on the tenant's GPU gpu,
 * reading the block only when its generation moved: the fast path is one
 * atomic load and a compare against this thread's copy, while the thread
 * launches on one GPU. A new generation is read once for the whole
 * process, every GPU's mask, under a lock; a mask enabling no live TPC of
 * its GPU is refused there and the last good one stays. Returns 0 when
 * there is no mask to write. */
int carve_current_mask(int gpu, uint32_t out[CARVE_MASK_WORDS], uint64_t *gen)
{
	uint64_t g = __atomic_load_n(&carve_block->gen, __ATOMIC_ACQUIRE);
	if (g != t_gen || gpu != t_gpu) {
		pthread_mutex_lock(&mask_mu);
		int n = carve_gpus();
		uint32_t m[CARVE_GPUS][CARVE_MASK_WORDS];
		uint64_t rg;
		if (g != seen_gen && read_masks(carve_block, n, m, &rg, NULL)) {
			for (int i = 0; i < n; i++) {
				uint32_t live[CARVE_MASK_WORDS];
				for (int w = 0; w < CARVE_MASK_WORDS; w++)
					live[w] = __atomic_load_n(&CARVE_PART(carve_block, i, live)[w], __ATOMIC_RELAXED);
				if (carve_mask_enables_live(m[i], live)) {
					memcpy(good_mask[i], m[i], sizeof m[i]);
					good_valid[i] = 1;
				} else if (seen_gen == UINT64_MAX || memcmp(m[i], seen_mask[i], sizeof m[i]) != 0) {
					__atomic_add_fetch(&carve_block->refused, 1, __ATOMIC_RELAXED);
					if (n > 1)
						carve_say("mask of generation %llu on the partition's GPU %d enables no live TPC; keeping the previous partition",
						    (unsigned long long)rg, i);
					else
						carve_say("mask of generation %llu enables no live TPC; keeping the previous partition",
						    (unsigned long long)rg);
				}
				memcpy(seen_mask[i], m[i], sizeof m[i]);
			}
			seen_gen = rg;
		}
		memcpy(t_mask, good_mask[gpu], sizeof t_mask);
		t_valid = good_valid[gpu];
		t_gen = seen_gen;
		t_gpu = gpu;
		pthread_mutex_unlock(&mask_mu);
		if (!t_valid && !carve_allow_unpartitioned)
			carve_refuse("the partition enables no live TPC");
	}
	if (!t_valid)
		return 0;
	memcpy(out, t_mask, sizeof t_mask);
	*gen = t_gen;
	return 1;
}

int carve_visible_sms(int gpu, int n)
{
	struct carve_ctl *c = carve_block;
	if (!c || gpu < 0 || (c->flags & CARVE_FLAG_ALL_SMS) ||
	    __atomic_load_n(&c->state, __ATOMIC_RELAXED) != CARVE_STATE_HOOKED)
		return n; /* not partitioned there: the whole GPU */
	int sms = (int)__atomic_load_n(&CARVE_PART(c, gpu, sms), __ATOMIC_RELAXED);
	return sms > 0 && sms < n ? sms : n;
}

/* same_file says whether paths a and b name one file. */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* carve_account maps the block this process counts its device memory in
 * (mem.c): the one carve made for its tenant, which CARVE_CTL_ROOT names
 * (a claim's root, pid 0, or the block carve run made for the tenant's
 * pid), else the block of the tenant's pid in dir. It is the process's own
 * block where that is the tenant's (*shared = 0), or where the tenant's
 * cannot be mapped for writing: then the process is held to the limit on
 * its own. Our own file is never opened again here: closing a descriptor
 * of it would let go of the lock hold_block keeps. */
struct carve_ctl *carve_account(const char *dir, int *shared)
{
	struct carve_ctl *c = carve_block;
	char own[PATH_MAX], path[PATH_MAX];
	snprintf(own, sizeof own, "%s/%d", dir, (int)getpid());
	*shared = 0;
	const char *root = getenv("CARVE_CTL_ROOT");
	if (root && *root) {
		snprintf(path, sizeof path, "%s", root);
	} else if (c->tenant && c->tenant != c->pid) {
		snprintf(path, sizeof path, "%s/%u", dir, c->tenant);
	} else {
		return c;
	}
	if (same_file(path, own))
		return c;
	struct carve_ctl *a = open_block(path, 1);
	if (a && (a->pid == 0 || (a->pid == c->tenant && a->pid != c->pid))) {
		*shared = 1;
		return a;
	}
	if (a)
		munmap(a, CARVE_CTL_SIZE);
	CARVE_DEBUG("no memory account of the tenant's at %s: this process is held to the limit on its own", path);
	return c;
}

/* counts_in says whether the process of block b counted its memory in
 * acct, as carve_account chose for it: a block whose mem_total is zero is
 * no account, and counted in its tenant's (any block of a claim's
 * directory in the claim's root); one whose mem_total is not counted in
 * itself. */
static int counts_in(const struct carve_ctl *b, const struct carve_ctl *acct)
{
	if (__atomic_load_n(&b->mem_total, __ATOMIC_RELAXED) == 0)
		return acct->pid == 0 || b->tenant == acct->pid;
	return acct->pid != 0 && b->pid == acct->pid;
}

static uint64_t sub_sat(uint64_t *v, uint64_t n)
{
	uint64_t old = __atomic_load_n(v, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(v, &old, old - (n < old ? n : old), 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	return old;
}

/* carve_credit_ended gives back to acct what the ended processes that
 * counted in it held: blocks in dir that no shim holds the lock of (their
 * processes died, SIGKILL among the ways) with bytes in mem_used. The
 * bytes are swapped out of mem_used first, so that no other shim, nor
 * carve, credits them again. Returns the bytes credited. */
uint64_t carve_credit_ended(struct carve_ctl *acct, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	uint64_t total = 0;
	int self = (int)getpid();
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || end == de->d_name || pid <= 0 || pid == self)
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		struct stat st;
		struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
		struct carve_ctl *b = NULL;
		if (fstat(fd, &st) == 0 && st.st_size == CARVE_CTL_SIZE && fcntl(fd, F_GETLK, &l) == 0 &&
		    l.l_type == F_UNLCK) {
			void *p = mmap(NULL, CARVE_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			b = p == MAP_FAILED ? NULL : (struct carve_ctl *)p;
		}
		close(fd);
		if (!b)
			continue;
		if (block_ok(b) && __atomic_load_n(&b->mem_used, __ATOMIC_RELAXED) && counts_in(b, acct)) {
			uint64_t n = __atomic_exchange_n(&b->mem_used, 0, __ATOMIC_ACQ_REL);
			if (n) {
				sub_sat(&acct->mem_total, n);
				CARVE_DEBUG("credited %llu bytes of ended process %ld back to the tenant", (unsigned long long)n, pid);
				total += n;
			}
		}
		munmap(b, CARVE_CTL_SIZE);
	}
	closedir(d);
	return total;
}
