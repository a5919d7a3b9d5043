/*
 * kern.c: the tenant's kernel table (carve_ctl.h's struct carve_kern_head),
 * read once at load, and each launch's function found in it: its DRAM
 * bytes counted into the block, and whether it is compute-bound (tide_be.c
 * lets a BE tenant's run beside busy LS work).
 *
 * A function is found by its mangled name, which the driver gives
 * (cuFuncGetName; for a CUkernel, of its function in the launch's
 * context), hashed as carve hashed the table's names, once per handle:
 * a small table of handles keeps what each was found to be, read without
 * a lock. A handle that names other code after its module was unloaded
 * keeps what its first name found. With no table named, none of this runs.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

int carve_kern_on;

static struct carve_kern_entry *entries; /* sorted by name, count of them */
static uint32_t count;

static CUresult (*func_name)(const char **, CUfunction);  /* cuFuncGetName */
static CUresult (*kernel_fn)(CUfunction *, CUfunction);   /* cuKernelGetFunction */

/* The handles seen: each slot's handle is written last, with release, so
 * that a reader that finds it finds its entry (its index, or -1: none);
 * slots are taken under mu. A handle whose neighbourhood is full is found
 * anew at each launch. */
#define SEEN 4096
#define PROBES 16
static struct {
	CUfunction f;
	int32_t i;
} seen[SEEN];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* fnv is FNV-1a of 64 bits of n bytes at p, as ctl.KernelHash: of a
 * function's name, and of a table's entries (its id). */
static uint64_t fnv(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t k = 0; k < n; k++)
		h = (h ^ b[k]) * 0x100000001b3ull;
	return h;
}

/* valid checks a table of n entries with its head's id: its names in
 * increasing order, no flag unknown, id the hash of its bytes. */
static int valid(const struct carve_kern_entry *e, uint32_t n, uint64_t id)
{
	uint64_t h = fnv(e, (size_t)n * sizeof *e);
	if ((h ? h : 1) != id)
		return 0;
	for (uint32_t k = 0; k < n; k++)
		if ((e[k].flags & ~CARVE_KERN_COMPUTE) || (k && e[k].name <= e[k - 1].name))
			return 0;
	return 1;
}

/* load reads the table file of id in dir; NULL, and why into *why, if it
 * is not one: a regular file, this user's or root's (another user of a
 * shared directory could make one of the name), the head and entries
 * checked whole. */
static struct carve_kern_entry *load(const char *dir, uint64_t id, uint32_t *n, const char **why)
{
	char path[4200];
	int len = snprintf(path, sizeof path, "%s/" CARVE_KERN_NAME, dir, (unsigned long long)id);
	*why = "its path is too long";
	if (len < 0 || (size_t)len >= sizeof path)
		return NULL;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	*why = "it cannot be opened";
	if (fd < 0)
		return NULL;
	struct stat st;
	struct carve_kern_head h;
	struct carve_kern_entry *e = NULL;
	*why = "it is no kernel table of this block's";
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_uid == geteuid() || st.st_uid == 0) && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
	    h.magic == CARVE_KERN_MAGIC && h.id == id && h.count <= CARVE_KERN_MAX &&
	    (uint64_t)st.st_size == sizeof h + (uint64_t)h.count * sizeof *e &&
	    (e = malloc((size_t)h.count * sizeof *e + 1)) != NULL) {
		size_t want = (size_t)h.count * sizeof *e;
		if ((size_t)pread(fd, e, want, sizeof h) != want || !valid(e, h.count, id)) {
			free(e);
			e = NULL;
		}
		*n = h.count;
	}
	close(fd);
	return e;
}

void carve_kern_init(void *cuda, const char *dir)
{
	uint64_t id = carve_block->kernels_id;
	if (!id)
		return;
	func_name = carve_real_dlsym(cuda, "cuFuncGetName");
	kernel_fn = carve_real_dlsym(cuda, "cuKernelGetFunction");
	const char *why = "the driver lacks cuFuncGetName";
	if (func_name && (entries = load(dir, id, &count, &why)) != NULL) {
		carve_kern_on = 1;
		CARVE_DEBUG("kernel table: %u functions", count);
		return;
	}
	carve_say("the kernel table (%.128s) is not used: %s", carve_block->kernels, why);
}

/* find: the entry of the function named name, -1 if none */
static int32_t find(const char *name)
{
	uint64_t h = fnv(name, strlen(name));
	uint32_t lo = 0, hi = count;
	while (lo < hi) {
		uint32_t m = lo + (hi - lo) / 2;
		if (entries[m].name == h)
			return (int32_t)m;
		if (entries[m].name < h)
			lo = m + 1;
		else
			hi = m;
	}
	return -1;
}

/* named: the entry of function f by the driver's name of it, -1 if none */
static int32_t named(CUfunction f)
{
	const char *name = NULL;
	CUfunction k;
	if (func_name(&name, f) != CUDA_SUCCESS || !name) {
		name = NULL;
		if (kernel_fn && kernel_fn(&k, f) == CUDA_SUCCESS && func_name(&name, k) != CUDA_SUCCESS)
			name = NULL;
	}
	return name ? find(name) : -1;
}

const struct carve_kern_entry *carve_kern_find(CUfunction f)
{
	if (!f)
		return NULL;
	uint64_t x = (uint64_t)(uintptr_t)f * 0x9e3779b97f4a7c15ull;
	unsigned at = (unsigned)(x >> 52) % SEEN;
	for (unsigned p = 0; p < PROBES; p++) {
		unsigned s = (at + p) % SEEN;
		CUfunction g = __atomic_load_n(&seen[s].f, __ATOMIC_ACQUIRE);
		if (g == f) {
			int32_t i = seen[s].i;
			return i < 0 ? NULL : &entries[i];
		}
		if (!g)
			break;
	}
	int32_t i = named(f);
	pthread_mutex_lock(&mu);
	for (unsigned p = 0; p < PROBES; p++) {
		unsigned s = (at + p) % SEEN;
		if (seen[s].f == f)
			break;
		if (!seen[s].f) {
			seen[s].i = i;
			__atomic_store_n(&seen[s].f, f, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	return i < 0 ? NULL : &entries[i];
}

void carve_kern_count(const struct carve_kern_entry *e)
{
	if (e)
		__atomic_add_fetch(&carve_block->kernel_bytes, e->bytes, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&carve_block->kernel_unknown, 1, __ATOMIC_RELAXED);
}
