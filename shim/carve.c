/*
 * libcarve.so: confines every kernel of an unmodified CUDA process to the TPCs
 * of its partition.
 *
 * Loaded with LD_PRELOAD by `carve run`. At load it maps the process's control
 * block (CARVE_CTL_DIR/<pid>, created by carve run, or copied from the parent's
 * block for child processes), loads libcuda, and registers a callback with the
 * driver's launch-tools interface. The driver calls it just before each launch
 * descriptor (TMD) is uploaded; the callback writes the partition's TPC-disable
 * mask into the descriptor, and the hardware schedules the kernel's blocks only
 * on the enabled TPCs.
 *
 * Environment:
 *   CARVE_CTL_DIR              runtime directory holding the control blocks
 *   CARVE_CTL_ROOT             block to copy when neither ours nor the parent's exists
 *   CARVE_LIBCUDA              driver library to load (default libcuda.so.1)
 *   CARVE_ALLOW_UNPARTITIONED  1: run on all TPCs when the hook cannot work
 *   CARVE_DEBUG                1: say what the shim does on stderr
 *
 * Builds with a plain C compiler; needs no CUDA headers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "carve_ctl.h"
#include "carve_tmd.h"

/* Exit status of a process that carve refuses to run unpartitioned. */
#define CARVE_EXIT_REFUSED 86

/* The driver's launch-callback interface (verified on driver 580, H100). */
static const unsigned char tools_uuid[16] = {
	0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
	0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b,
};
#define TOOLS_SUBSCRIBE 3
#define TOOLS_ENABLE 6
#define LAUNCH_DOMAIN 0xb
#define LAUNCH_CBID 0x1

typedef void (*launch_cb)(void *user, int domain, int cbid, const void *params);
typedef int (*subscribe_fn)(uint32_t *handle, launch_cb cb, void *user);
typedef int (*enable_fn)(uint32_t on, uint32_t handle, int domain, int cbid);
typedef int (*get_export_table_fn)(const void **table, const void *uuid);
typedef int (*cu_init_fn)(unsigned int flags);

static struct carve_ctl *ctl;
static int debug;
static int allow_unpartitioned;

/* The last mask read from the block that enables a live TPC, shared by all
 * threads; written under mask_mu when the block's generation moves. */
static pthread_mutex_t mask_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seen_gen = UINT64_MAX;
static uint32_t good_mask[CARVE_MASK_WORDS];
static int good_valid;

/* Last mask this thread read, keyed by the block's gen. */
static __thread __attribute__((tls_model("initial-exec"))) uint64_t t_gen = UINT64_MAX;
static __thread __attribute__((tls_model("initial-exec"))) uint32_t t_mask[CARVE_MASK_WORDS];
static __thread __attribute__((tls_model("initial-exec"))) int t_valid;

static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n = snprintf(buf, sizeof buf, "carve[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof buf - n, fmt, ap);
	va_end(ap);
	size_t len = strlen(buf);
	if (len + 1 < sizeof buf) {
		buf[len++] = '\n';
	}
	ssize_t w = write(2, buf, len);
	(void)w;
}

#define DEBUG(...) do { if (debug) say(__VA_ARGS__); } while (0)

/* refuse ends a process that would otherwise run unpartitioned. */
static void refuse(const char *why)
{
	say("%s; refusing to run unpartitioned (set CARVE_ALLOW_UNPARTITIONED=1 "
	    "or use carve run --allow-unpartitioned to run on all TPCs)", why);
	_exit(CARVE_EXIT_REFUSED);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts); /* vDSO only, even in VMs */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

/* open_block maps an existing block read-write; NULL if absent or invalid. */
static struct carve_ctl *open_block(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	struct stat st;
	struct carve_ctl *c = NULL;
	if (fstat(fd, &st) == 0 && st.st_size == CARVE_CTL_SIZE)
		c = map_block(fd);
	close(fd);
	if (c && !block_ok(c)) {
		munmap(c, CARVE_CTL_SIZE);
		return NULL;
	}
	return c;
}

/* read_mask copies the block's mask consistently (seqlock read side).
 * Returns 0 if the block stayed mid-write for too long. */
static int read_mask(const struct carve_ctl *c, uint32_t out[CARVE_MASK_WORDS], uint64_t *gen)
{
	for (int tries = 0; tries < 10000; tries++) {
		uint64_t g1 = __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE);
		if (g1 & 1) {
			if (tries > 100)
				sched_yield();
			continue;
		}
		for (int i = 0; i < CARVE_MASK_WORDS; i++)
			out[i] = __atomic_load_n(&c->mask[i], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		uint64_t g2 = __atomic_load_n(&c->gen, __ATOMIC_RELAXED);
		if (g1 == g2) {
			*gen = g1;
			return 1;
		}
	}
	return 0;
}

/* create_block makes our own block as a copy of src's partition, written to a
 * temporary name and renamed so that readers never see it half-filled. */
static struct carve_ctl *create_block(const char *dir, const struct carve_ctl *src)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	pid_t pid = getpid();
	snprintf(tmp, sizeof tmp, "%s/.%d.new", dir, (int)pid);
	snprintf(path, sizeof path, "%s/%d", dir, (int)pid);
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, CARVE_CTL_SIZE) != 0) {
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
	uint64_t gen;
	uint32_t mask[CARVE_MASK_WORDS];
	if (!read_mask(src, mask, &gen))
		memcpy(mask, (const void *)src->mask, sizeof mask);
	c->magic = CARVE_CTL_MAGIC;
	c->version = CARVE_CTL_VERSION;
	c->size = CARVE_CTL_SIZE;
	c->pid = (uint32_t)pid;
	c->flags = src->flags;
	c->start_ticks = start_ticks(pid);
	c->created_ns = now_ns();
	c->gen = 2;
	memcpy(c->mask, mask, sizeof mask);
	memcpy(c->live, (const void *)src->live, sizeof c->live);
	c->tenant_class = src->tenant_class;
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
static struct carve_ctl *attach(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
	struct carve_ctl *c = open_block(path);
	if (c) {
		/* carve run made it for us before exec: fill in what only we know */
		if (c->start_ticks == 0)
			c->start_ticks = start_ticks(getpid());
		return c;
	}
	snprintf(path, sizeof path, "%s/%d", dir, (int)getppid());
	struct carve_ctl *src = open_block(path);
	if (!src) {
		const char *root = getenv("CARVE_CTL_ROOT");
		if (root)
			src = open_block(root);
	}
	if (!src)
		return NULL;
	c = create_block(dir, src);
	munmap(src, CARVE_CTL_SIZE);
	return c;
}

/* current_mask returns the mask to apply, reading the block only when its
 * generation moved: the fast path is one atomic load and a compare against
 * this thread's copy. A new generation is read once for the whole process,
 * under a lock; a mask enabling no live TPC is refused there and the last
 * good one stays. Returns 0 when there is no mask to write. */
static int current_mask(uint32_t out[CARVE_MASK_WORDS])
{
	uint64_t g = __atomic_load_n(&ctl->gen, __ATOMIC_ACQUIRE);
	if (g != t_gen) {
		pthread_mutex_lock(&mask_mu);
		uint32_t m[CARVE_MASK_WORDS];
		uint64_t rg;
		if (g != seen_gen && read_mask(ctl, m, &rg)) {
			uint32_t live[CARVE_MASK_WORDS];
			for (int i = 0; i < CARVE_MASK_WORDS; i++)
				live[i] = __atomic_load_n(&ctl->live[i], __ATOMIC_RELAXED);
			if (carve_mask_enables_live(m, live)) {
				memcpy(good_mask, m, sizeof m);
				good_valid = 1;
			} else {
				__atomic_add_fetch(&ctl->refused, 1, __ATOMIC_RELAXED);
				say("mask of generation %llu enables no live TPC; keeping the previous partition",
				    (unsigned long long)rg);
			}
			seen_gen = rg;
		}
		memcpy(t_mask, good_mask, sizeof t_mask);
		t_valid = good_valid;
		t_gen = seen_gen;
		pthread_mutex_unlock(&mask_mu);
		if (!t_valid && !allow_unpartitioned)
			refuse("the partition enables no live TPC");
	}
	if (!t_valid)
		return 0;
	memcpy(out, t_mask, sizeof t_mask);
	return 1;
}

static void on_launch(void *user, int domain, int cbid, const void *params)
{
	(void)user;
	if (domain != LAUNCH_DOMAIN || cbid != LAUNCH_CBID || !params)
		return;
#ifdef CARVE_MEASURE_DISPATCH
	return; /* a build that measures what the driver's callback dispatch alone costs */
#endif
	uint8_t *tmd = carve_params_tmd(params);
	if (!tmd)
		return;
	uint32_t mask[CARVE_MASK_WORDS];
	int have = current_mask(mask);
	int version = carve_tmd_version(tmd);
	__atomic_store_n(&ctl->tmd_version, (uint32_t)version, __ATOMIC_RELAXED);
	if (have) {
		if (!carve_tmd_write_mask(tmd, mask)) {
			if (!allow_unpartitioned) {
				char why[96];
				snprintf(why, sizeof why, "launch descriptor version 0x%x is not supported", version);
				refuse(why);
			}
		} else {
			__atomic_store_n(&ctl->applied_gen, t_gen, __ATOMIC_RELAXED);
		}
	}
	__atomic_add_fetch(&ctl->launches, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->last_launch_ns, now_ns(), __ATOMIC_RELAXED);
}

/* register_hook subscribes on_launch to the driver's launch callbacks. */
static const char *register_hook(void *cuda)
{
	get_export_table_fn get = (get_export_table_fn)dlsym(cuda, "cuGetExportTable");
	if (!get)
		return "the driver has no cuGetExportTable";
	const void *table = NULL;
	int rc = get(&table, tools_uuid);
	if (rc != 0 || !table) {
		/* some drivers want cuInit before handing out export tables */
		cu_init_fn init = (cu_init_fn)dlsym(cuda, "cuInit");
		DEBUG("cuGetExportTable before cuInit returned %d; calling cuInit", rc);
		if (!init || init(0) != 0)
			return "cuInit failed";
		rc = get(&table, tools_uuid);
		if (rc != 0 || !table)
			return "the driver has no launch-tools export table";
	}
	const uintptr_t *fns = (const uintptr_t *)table;
	subscribe_fn sub = (subscribe_fn)fns[TOOLS_SUBSCRIBE];
	enable_fn en = (enable_fn)fns[TOOLS_ENABLE];
	if (!sub || !en)
		return "the launch-tools export table is empty";
	uint32_t handle = 0;
	if ((rc = sub(&handle, on_launch, NULL)) != 0)
		return "subscribing to launch callbacks failed";
	if ((rc = en(1, handle, LAUNCH_DOMAIN, LAUNCH_CBID)) != 0)
		return "enabling the launch callback failed";
	DEBUG("launch hook registered (handle %u)", handle);
	return NULL;
}

__attribute__((constructor)) static void carve_init(void)
{
	const char *e = getenv("CARVE_DEBUG");
	debug = e && *e == '1';
	const char *dir = getenv("CARVE_CTL_DIR");
	if (!dir || !*dir)
		return; /* loaded without carve run: nothing to enforce */
	ctl = attach(dir);
	if (!ctl) {
		allow_unpartitioned = (e = getenv("CARVE_ALLOW_UNPARTITIONED")) && *e == '1';
		if (!allow_unpartitioned)
			refuse("no control block for this process");
		return;
	}
	allow_unpartitioned = (ctl->flags & CARVE_FLAG_ALLOW_UNPARTITIONED) ||
			      ((e = getenv("CARVE_ALLOW_UNPARTITIONED")) && *e == '1');
	const char *lib = getenv("CARVE_LIBCUDA");
	void *cuda = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!cuda) {
		/* without a driver this process can launch no kernel at all */
		DEBUG("no driver: %s", dlerror());
		__atomic_store_n(&ctl->state, CARVE_STATE_NO_DRIVER, __ATOMIC_RELAXED);
		return;
	}
	const char *why = register_hook(cuda);
	if (why) {
		__atomic_store_n(&ctl->state, CARVE_STATE_UNHOOKED, __ATOMIC_RELAXED);
		if (!allow_unpartitioned)
			refuse(why);
		say("%s; running on all TPCs", why);
		return;
	}
	__atomic_store_n(&ctl->state, CARVE_STATE_HOOKED, __ATOMIC_RELAXED);
}
