/*
 * A fake libcuda.so.1 for testing libcarve.so without a GPU. It offers what
 * the shim and the frameworks it sits under use:
 *
 *   - the launch-tools export table (subscribe, enable), with one subscriber
 *     at a time as the real driver allows (a second gets
 *     CUDA_ERROR_ALREADY_ACQUIRED);
 *   - cuGetProcAddress (v1 and v2, with the per-thread default stream
 *     flavour) answering with the functions below by name and version
 *     ("cuMemAlloc" is cuMemAlloc_v2 from 3020, the 32-bit one below);
 *   - kernel launches through every entry point, each calling the launch
 *     callback with a synthetic descriptor the way the driver does, and
 *     taking FAKECUDA_KERNEL_US microseconds on its stream;
 *   - streams, events, stream capture and synchronization on that clock;
 *   - cuDeviceGetAttribute (132 SMs);
 *   - two devices with UUIDs of their own, a primary context on each, and
 *     contexts made and destroyed (cuCtxCreate, cuCtxDestroy), current
 *     per thread, each with a default stream of its own; CUDA_VISIBLE_DEVICES
 *     ("1,0", "1") orders and hides the devices, as the driver's does;
 *   - device memory (FAKECUDA_MEM_MB MiB, default 81079 as an H100's, or
 *     what fakecuda_mem_mb sets): plain, pitched and managed allocations
 *     and their 32-bit flavours of CUDA before 3.2, stream-ordered pools
 *     that grow by 2 MiB and keep what is freed up to their release
 *     threshold (given back at a synchronization, or by a trim), graphs
 *     with memory allocation nodes (added, or captured from
 *     cuMemAllocAsync) whose memory the device's graph memory reserves at
 *     launch, arrays, the virtual memory API, the device malloc heap, IPC
 *     handles (opening one takes nothing), cuMemGetInfo and
 *     cuDeviceTotalMem; an allocation past the memory fails with
 *     CUDA_ERROR_OUT_OF_MEMORY, and fakecuda_mem says what is taken and
 *     the most that ever was; a destroyed context's memory is freed;
 *   - kernels with blocks (slicing, slice.c): functions 1..FAKE_FNS have
 *     code at program_of(f), which the descriptor names, and a launch of
 *     one runs blocks [S, GRID_WIDTH) of its grid as the callback left the
 *     descriptor, S read from the prologue of the copy PROGRAM_ADDRESS
 *     points at (made by the shim's copy kernel, which, with its scan
 *     kernel, this fake runs on the host from a module of the shim's PTX);
 *     each block run is counted (fakecuda_runs), and a launch takes its
 *     share of FAKECUDA_KERNEL_US by the blocks it ran, its time on the GPU
 *     kept (fakecuda_kernels); one block of each is resident an SM
 *     (cuOccupancyMaxActiveBlocksPerMultiprocessor). Function 5 has
 *     compile-time cluster dimensions, and function 6's code has no end
 *     marker;
 *   - FAKECUDA_FAULT_AT=N: the N-th launch faults; every call after it
 *     returns CUDA_ERROR_ILLEGAL_ADDRESS, as a real context does;
 *   - FAKECUDA_INJECT=1: cuInit loads a profiler's injection, as Nsight
 *     Compute's does, which subscribes to the launch callback through the
 *     cuGetExportTable the program would find (dlsym RTLD_DEFAULT); =2: it
 *     subscribes through the driver's own table, bypassing any shim.
 *
 * It also has every call carve's own Go code binds (internal/cuda), so that
 * carve itself runs on it (CARVE_LIBCUDA): the devices, their names and
 * UUIDs, and the rest refusing with CUDA_ERROR_NOT_SUPPORTED.
 *
 * Test entry points (fakecuda_*) let a test see what the shim did.
 * FAKECUDA_NO_TABLE=1 makes cuGetExportTable fail (a driver without the
 * interface); FAKECUDA_NEED_INIT=1 makes it fail until cuInit was called.
 * With CARVE_TEST_CLOCK, its kernels and synchronizations run on the test's
 * virtual clock (../test/vclock.h) instead of CLOCK_MONOTONIC.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../carve_tmd.h"
#include "../cuda_api.h"
#include "../test/vclock.h"

typedef void (*launch_cb)(void *user, int domain, int cbid, const void *params);

static const unsigned char tools_uuid[16] = {
	0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
	0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b,
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static launch_cb cb;
static void *cb_user;
static int enabled[16][64]; /* [domain][cbid], of the one subscriber */
static int initialized;
static int launches, faulted;
static uint32_t last_mask[5];
static int last_called;
static int bare; /* launches no callback saw */

/* --- the launch-tools table ---------------------------------------------- */

static int fake_subscribe(uint32_t *handle, launch_cb f, void *user)
{
	pthread_mutex_lock(&mu);
	if (cb) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_ALREADY_ACQUIRED;
	}
	cb = f;
	cb_user = user;
	*handle = 7;
	pthread_mutex_unlock(&mu);
	return 0;
}

static int fake_unsubscribe(uint32_t handle)
{
	if (handle != 7)
		return 1;
	pthread_mutex_lock(&mu);
	__atomic_store_n(&cb, NULL, __ATOMIC_RELEASE);
	memset(enabled, 0, sizeof enabled);
	pthread_mutex_unlock(&mu);
	return 0;
}

static int fake_subscribe_ex(uint32_t *handle, launch_cb f, void *user, void *more)
{
	(void)more;
	return fake_subscribe(handle, f, user);
}

static int fake_enable(uint32_t on, uint32_t handle, int domain, int cbid)
{
	if (handle != 7 || domain < 0 || domain >= 16 || cbid < 0 || cbid >= 64)
		return 1;
	enabled[domain][cbid] = on != 0;
	return 0;
}

static int fake_enable_domain(uint32_t on, uint32_t handle, int domain)
{
	if (handle != 7 || domain < 0 || domain >= 16)
		return 1;
	for (int i = 0; i < 64; i++)
		enabled[domain][i] = on != 0;
	return 0;
}

/* entry 7, as Nsight Compute calls it: a domain on or off */
static int fake_enable_domain_ex(uint32_t on, uint32_t handle, int domain, uintptr_t more)
{
	(void)more;
	return fake_enable_domain(on, handle, domain);
}

static uintptr_t table[12] = {sizeof table};

/* the injection's callback: counts launches */
static int injected;
static void inject_cb(void *user, int domain, int cbid, const void *params)
{
	(void)user, (void)params;
	if (domain == 0xb && cbid == 1)
		__atomic_add_fetch(&injected, 1, __ATOMIC_RELAXED);
}

int fakecuda_injected(void)
{
	return __atomic_load_n(&injected, __ATOMIC_RELAXED);
}

static int get_table(const void **out, const void *uuid);

static void inject(int how)
{
	int (*get)(const void **, const void *) = get_table; /* the driver's own, not interposable */
	if (how == 1)
		get = (int (*)(const void **, const void *))dlsym(RTLD_DEFAULT, "cuGetExportTable");
	const uintptr_t *t;
	uint32_t h;
	if (get((const void **)&t, tools_uuid) == 0 &&
	    ((int (*)(uint32_t *, launch_cb, void *, void *))t[11])(&h, inject_cb, NULL, NULL) == 0)
		((int (*)(uint32_t, uint32_t, int, int))t[6])(1, h, 0xb, 1);
}

int cuInit(unsigned int flags)
{
	(void)flags;
	if (!initialized) {
		initialized = 1;
		const char *e = getenv("FAKECUDA_INJECT");
		if (e && (*e == '1' || *e == '2'))
			inject(*e - '0');
	}
	return 0;
}

int cuGetExportTable(const void **out, const void *uuid)
{
	return get_table(out, uuid);
}

static int get_table(const void **out, const void *uuid)
{
	const char *e = getenv("FAKECUDA_NO_TABLE");
	if (e && *e == '1')
		return CUDA_ERROR_NOT_FOUND;
	e = getenv("FAKECUDA_NEED_INIT");
	if (e && *e == '1' && !initialized)
		return 3; /* CUDA_ERROR_NOT_INITIALIZED */
	if (memcmp(uuid, tools_uuid, sizeof tools_uuid) != 0)
		return 1;
	table[3] = (uintptr_t)fake_subscribe;
	table[4] = (uintptr_t)fake_unsubscribe;
	table[6] = (uintptr_t)fake_enable;
	table[7] = (uintptr_t)fake_enable_domain_ex;
	table[9] = (uintptr_t)fake_enable_domain;
	table[10] = (uintptr_t)fake_enable; /* an entry the shim passes through, as profilers use some */
	table[11] = (uintptr_t)fake_subscribe_ex;
	*out = table;
	return 0;
}

/* --- driver calls counted, for tests (fakecuda_calls) ----------------------- */

/* The calls a shim may make beside a launch (slicing's, shim/slice.c:
 * timing events, queries, occupancy, its own kernels' module and memory;
 * tide's events among them) count themselves by name, each at its top
 * (COUNTED), so that a test can see which a run of launches made.
 * Launches are counted apart (fakecuda_fn_launches). */
struct counted_call {
	const char *name;
	unsigned n;
	int listed;
	struct counted_call *next;
};
static struct counted_call *counted_calls; /* those called at least once */
static pthread_mutex_t counted_mu = PTHREAD_MUTEX_INITIALIZER;

static void count_call(struct counted_call *c)
{
	if (!__atomic_load_n(&c->listed, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&counted_mu);
		if (!c->listed) {
			c->next = counted_calls;
			counted_calls = c;
			__atomic_store_n(&c->listed, 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&counted_mu);
	}
	__atomic_add_fetch(&c->n, 1, __ATOMIC_RELAXED);
}

#define COUNTED()                                                              \
	do {                                                                   \
		static struct counted_call this_call = {__func__, 0, 0, NULL}; \
		count_call(&this_call);                                        \
	} while (0)

/* fakecuda_calls writes "NAME=N" for each counted call made so far,
 * space-separated, into out (size bytes), and returns their total. */
unsigned fakecuda_calls(char *out, size_t size)
{
	unsigned total = 0;
	size_t at = 0;
	if (size)
		out[0] = 0;
	pthread_mutex_lock(&counted_mu);
	for (struct counted_call *c = counted_calls; c; c = c->next) {
		unsigned n = __atomic_load_n(&c->n, __ATOMIC_RELAXED);
		total += n;
		int w = at < size ? snprintf(out + at, size - at, "%s%s=%u", at ? " " : "", c->name, n) : 0;
		at += w > 0 ? (size_t)w : 0;
	}
	pthread_mutex_unlock(&counted_mu);
	return total;
}

/* --- time, streams and events --------------------------------------------- */

static uint64_t now_ns(void)
{
	struct carve_vclock *c = vclock();
	if (c)
		return vclock_now(c);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct carve_vclock *c = vclock();
	if (c) {
		vclock_wait(c, t);
		return;
	}
	for (uint64_t n = now_ns(); n < t; n = now_ns()) {
		struct timespec ts = {0, (long)(t - n)};
		nanosleep(&ts, NULL);
	}
}

struct fgraph;
struct fstream {
	uint64_t done_at; /* when the last work submitted finishes */
	int capturing;
	int global;         /* in global capture mode */
	CUcontext ctx;      /* the context current at its creation */
	/* a copy to the host (cuMemcpyDtoHAsync) of the scan's result words,
	 * made when the stream is synchronized, as its work is then done */
	void *to_host;
	uint64_t from;
	size_t bytes;
	struct fgraph *cap; /* the graph being captured */
};
static void mem_synced(void);
static void to_host(struct fstream *f);
static CUcontext ctx_of(CUstream s);
static void mem_context_gone(int slot);
static struct fgraph *graph_new(void);
static int graph_memory(CUgraphExec g);
#define CTX_BASE 0xc0
#define CTX_SLOTS 8
static struct fstream default_streams[CTX_SLOTS]; /* each context's */
static struct fstream *default_stream(void);
#define MAX_STREAMS 256
static struct fstream *streams[MAX_STREAMS];
static int nstreams;

static struct fstream *stream_of(CUstream s)
{
	if (s == 0 || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return default_stream();
	return (struct fstream *)s;
}

static struct fstream *freed_stream; /* the last destroyed (under mu) */

int cuStreamCreate(CUstream *s, unsigned flags)
{
	COUNTED();
	(void)flags;
	pthread_mutex_lock(&mu);
	struct fstream *f = freed_stream ? freed_stream : calloc(1, sizeof *f);
	freed_stream = NULL;
	memset(f, 0, sizeof *f);
	f->ctx = ctx_of(0);
	if (nstreams < MAX_STREAMS)
		streams[nstreams++] = f;
	pthread_mutex_unlock(&mu);
	*s = f;
	return 0;
}

/* cuStreamDestroy: the stream is gone at once (its work still runs),
 * and the next stream created gets its handle, as the driver may give it */
int cuStreamDestroy_v2(CUstream s)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nstreams; i++)
		if (streams[i] == (struct fstream *)s) {
			streams[i] = streams[--nstreams];
			free(freed_stream);
			freed_stream = s;
			break;
		}
	pthread_mutex_unlock(&mu);
	return 0;
}

static long long kernel_us = -1; /* set by a test; -1: FAKECUDA_KERNEL_US */

static uint64_t kernel_ns(void)
{
	if (kernel_us >= 0)
		return (uint64_t)kernel_us * 1000;
	const char *e = getenv("FAKECUDA_KERNEL_US");
	return e ? (uint64_t)(atof(e) * 1000) : 0;
}

/* fakecuda_kernel_us sets how long each later kernel takes. */
void fakecuda_kernel_us(long long us)
{
	__atomic_store_n(&kernel_us, us, __ATOMIC_RELAXED);
}

/* --- devices and contexts -------------------------------------------------- */

/* Two GPUs with UUIDs of their own (the first is that of the topology in
 * internal/topo/testdata, the second that of topotest's second one). A
 * context is a slot, named (CUcontext)(0xc0 + slot): 0xc0 and 0xc1 are the
 * primary contexts of devices 0 and 1, the rest made by cuCtxCreate, the
 * lowest free slot first (so a handle destroyed comes back). Each thread
 * starts with 0xc0 current. Devices are ordinals as the program sees them:
 * with CUDA_VISIBLE_DEVICES, ordinal i is the GPU it names i-th. */
static const unsigned char dev_uuid[2][16] = {
	{0x72, 0x60, 0x2e, 0xc6, 0x31, 0x0b, 0x1a, 0xda, 0xb0, 0x2f, 0x5c, 0x7e, 0xc6, 0x0e, 0x17, 0xef},
	{0x5d, 0x1e, 0x2b, 0x7a, 0x0c, 0x44, 0x4f, 0x0e, 0x9a, 0x31, 0x7b, 0xe0, 0xc2, 0xf4, 0xd6, 0xa1},
};
static int ctx_dev[CTX_SLOTS] = {0, 1, -1, -1, -1, -1, -1, -1}; /* -1: free */

/* visible is the GPU (index of dev_uuid) of ordinal dev, -1 if none. */
static int visible(CUdevice dev)
{
	int order[2] = {0, 1}, n = 2;
	const char *e = getenv("CUDA_VISIBLE_DEVICES");
	if (e) {
		n = 0;
		for (const char *p = e; *p && n < 2; p++)
			if (*p == '0' || *p == '1')
				order[n++] = *p - '0';
	}
	return dev >= 0 && dev < n ? order[dev] : -1;
}
static __thread CUcontext current_ctx = (CUcontext)CTX_BASE;

/* ctx_of: stream s's context (a default stream is the current context's) */
static CUcontext ctx_of(CUstream s)
{
	return s == 0 || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ? current_ctx : ((struct fstream *)s)->ctx;
}

static int uuid_lookups;

static int ctx_slot(CUcontext c)
{
	uintptr_t v = (uintptr_t)c;
	if (v < CTX_BASE || v >= CTX_BASE + CTX_SLOTS)
		return -1;
	int s = (int)(v - CTX_BASE);
	return __atomic_load_n(&ctx_dev[s], __ATOMIC_ACQUIRE) >= 0 ? s : -1;
}

/* driver calls made from inside a launch callback (on its thread): a
 * profiler counts them as calls nested in the launch (CUPTI lost its
 * kernel records), so the shim must make none */
static __thread int in_callback;
static int called_in_callback;

static void asked(void)
{
	if (in_callback)
		__atomic_add_fetch(&called_in_callback, 1, __ATOMIC_RELAXED);
}

/* fakecuda_called_in_callback is how many driver calls were made from
 * inside launch callbacks. */
int fakecuda_called_in_callback(void)
{
	return __atomic_load_n(&called_in_callback, __ATOMIC_RELAXED);
}

int cuCtxGetCurrent(CUcontext *c)
{
	asked();
	*c = current_ctx;
	return 0;
}

int cuCtxSetCurrent(CUcontext c)
{
	if (c && ctx_slot(c) < 0)
		return 201; /* CUDA_ERROR_INVALID_CONTEXT */
	current_ctx = c;
	return 0;
}

int cuCtxGetDevice(CUdevice *d)
{
	COUNTED();
	asked();
	int s = ctx_slot(current_ctx);
	if (s < 0)
		return 201;
	*d = ctx_dev[s];
	return 0;
}

/* cuCtxCreate makes a context on dev and makes it current. */
int cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice dev)
{
	(void)flags;
	if (visible(dev) < 0)
		return 101; /* CUDA_ERROR_INVALID_DEVICE */
	pthread_mutex_lock(&mu);
	int s = 2;
	while (s < CTX_SLOTS && ctx_dev[s] >= 0)
		s++;
	if (s < CTX_SLOTS)
		__atomic_store_n(&ctx_dev[s], dev, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mu);
	if (s == CTX_SLOTS)
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	*c = current_ctx = (CUcontext)(uintptr_t)(CTX_BASE + s);
	return 0;
}

int cuCtxDestroy_v2(CUcontext c)
{
	int s = ctx_slot(c);
	if (s < 2)
		return 201; /* not made by cuCtxCreate */
	mem_context_gone(s);
	__atomic_store_n(&ctx_dev[s], -1, __ATOMIC_RELEASE);
	if (current_ctx == c)
		current_ctx = NULL;
	return 0;
}

int cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice dev)
{
	asked();
	int g = visible(dev);
	if (g < 0)
		return 101;
	__atomic_add_fetch(&uuid_lookups, 1, __ATOMIC_RELAXED);
	memcpy(uuid, dev_uuid[g], 16);
	return 0;
}

int cuDeviceGetUuid(unsigned char *uuid, CUdevice dev)
{
	asked();
	return cuDeviceGetUuid_v2(uuid, dev);
}

/* fakecuda_uuid_lookups is how many times a device's UUID was asked for. */
int fakecuda_uuid_lookups(void)
{
	return __atomic_load_n(&uuid_lookups, __ATOMIC_RELAXED);
}

/* Capture modes as the driver keeps them: each thread's (global, 0, at
 * first), and the captures under way in global mode. While one is, a
 * call that may not be made during a capture (a query, a synchronization,
 * an allocation, a module load) from a thread not in relaxed mode is
 * refused, as CUDA refuses it (and would end the capture); the fake
 * counts them. Thread-local mode's captures are not modelled. */
static __thread int cap_mode;
static int global_captures, unsafe_calls;

int cuThreadExchangeStreamCaptureMode(int *mode)
{
	COUNTED();
	int old = cap_mode;
	cap_mode = *mode;
	*mode = old;
	return 0;
}

/* unsafe: a call that a global-mode capture forbids: 0, or its error */
static int unsafe(void)
{
	if (!__atomic_load_n(&global_captures, __ATOMIC_ACQUIRE) || cap_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return 0;
	__atomic_add_fetch(&unsafe_calls, 1, __ATOMIC_RELAXED);
	return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* fakecuda_unsafe_calls: calls refused for a global-mode capture */
int fakecuda_unsafe_calls(void)
{
	return __atomic_load_n(&unsafe_calls, __ATOMIC_RELAXED);
}

static int error(void)
{
	return __atomic_load_n(&faulted, __ATOMIC_ACQUIRE) ? 700 : 0;
}

struct fevent {
	uint64_t at;
	CUcontext ctx; /* the context current at its creation: only its streams record it */
};

int cuEventCreate(CUevent *e, unsigned flags)
{
	COUNTED();
	(void)flags;
	struct fevent *f = calloc(1, sizeof *f);
	f->ctx = current_ctx;
	*e = f;
	return 0;
}

int cuEventDestroy_v2(CUevent e)
{
	free(e);
	return 0;
}

static int captured_events; /* recorded into a capturing stream */

/* fakecuda_captured_events: events recorded into a stream being captured
 * (they become nodes of the program's graph) */
int fakecuda_captured_events(void)
{
	return __atomic_load_n(&captured_events, __ATOMIC_RELAXED);
}

int cuEventRecord(CUevent e, CUstream s)
{
	COUNTED();
	if (((struct fevent *)e)->ctx != ctx_of(s))
		return CUDA_ERROR_INVALID_HANDLE;
	uint64_t t = now_ns();
	pthread_mutex_lock(&mu);
	captured_events += stream_of(s)->capturing;
	uint64_t d = stream_of(s)->done_at;
	((struct fevent *)e)->at = d > t ? d : t; /* reached when the work before it is done, or now */
	pthread_mutex_unlock(&mu);
	return error();
}

int cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	COUNTED();
	uint64_t t = now_ns(), x = ((struct fevent *)a)->at, y = ((struct fevent *)b)->at;
	if (t < x || t < y)
		return CUDA_ERROR_NOT_READY;
	*ms = (float)((double)((int64_t)(y - x)) / 1e6);
	return error();
}

int cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
	COUNTED();
	(void)flags;
	pthread_mutex_lock(&mu);
	struct fstream *f = stream_of(s);
	if (f->done_at < ((struct fevent *)e)->at)
		f->done_at = ((struct fevent *)e)->at;
	pthread_mutex_unlock(&mu);
	return error();
}

int cuStreamIsCapturing(CUstream s, int *capturing)
{
	COUNTED();
	*capturing = stream_of(s)->capturing;
	return error();
}

int cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags)
{
	(void)flags;
	return cuEventRecord(e, s);
}

int cuEventQuery(CUevent e)
{
	COUNTED();
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (error())
		return error();
	return now_ns() >= ((struct fevent *)e)->at ? 0 : CUDA_ERROR_NOT_READY;
}

int cuEventSynchronize(CUevent e)
{
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	sleep_until(((struct fevent *)e)->at);
	mem_synced();
	return error();
}

int cuStreamQuery(CUstream s)
{
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (error())
		return error();
	return now_ns() >= stream_of(s)->done_at ? 0 : CUDA_ERROR_NOT_READY;
}

int cuStreamSynchronize(CUstream s)
{
	COUNTED();
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	sleep_until(stream_of(s)->done_at);
	to_host(stream_of(s));
	mem_synced();
	if (cb && enabled[6][0x13]) /* a callback of another domain, as the driver makes */
		cb(cb_user, 6, 0x13, NULL);
	if (cb && enabled[7][2]) /* one enabled through entry 10 */
		cb(cb_user, 7, 2, NULL);
	return error();
}

static struct fstream *default_stream(void)
{
	int s = ctx_slot(current_ctx);
	return &default_streams[s < 0 ? 0 : s];
}

int cuCtxSynchronize(void)
{
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	uint64_t t = default_stream()->done_at;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nstreams; i++)
		if (streams[i]->done_at > t)
			t = streams[i]->done_at;
	pthread_mutex_unlock(&mu);
	sleep_until(t);
	mem_synced();
	return error();
}

int cuStreamBeginCapture_v2(CUstream s, int mode)
{
	stream_of(s)->cap = graph_new();
	stream_of(s)->capturing = 1;
	stream_of(s)->global = mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
	if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
		__atomic_add_fetch(&global_captures, 1, __ATOMIC_RELEASE);
	return 0;
}

int cuStreamEndCapture(CUstream s, CUgraph *g)
{
	struct fstream *f = stream_of(s);
	if (f->capturing && f->global)
		__atomic_sub_fetch(&global_captures, 1, __ATOMIC_RELEASE);
	f->capturing = f->global = 0;
	*g = f->cap ? (CUgraph)f->cap : (CUgraph)0x1;
	f->cap = NULL;
	return 0;
}

int cuDeviceGetAttribute(int *v, int attr, CUdevice dev)
{
	COUNTED();
	if (visible(dev) < 0)
		return 101;
	*v = attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 132 : 1;
	return 0;
}

/* --- what carve's own Go code binds (internal/cuda) -------------------------- */

int cuDriverGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

int cuDeviceGetCount(int *n)
{
	*n = 0;
	while (*n < 2 && visible(*n) >= 0)
		++*n;
	return 0;
}

int cuDeviceGet(CUdevice *d, int ordinal)
{
	if (visible(ordinal) < 0)
		return 101;
	*d = ordinal;
	return 0;
}

int cuDeviceGetName(char *name, int len, CUdevice dev)
{
	if (visible(dev) < 0)
		return 101;
	snprintf(name, (size_t)len, "NVIDIA H100 80GB HBM3");
	return 0;
}

int cuGetErrorName(int r, const char **s)
{
	(void)r;
	*s = "CUDA_ERROR_FAKE";
	return 0;
}

#define NOT_SUPPORTED(name) \
	int name(void)      \
	{                   \
		return 801; \
	}
NOT_SUPPORTED(cuDevicePrimaryCtxRetain)
NOT_SUPPORTED(cuDevicePrimaryCtxRelease_v2)
NOT_SUPPORTED(cuModuleLoadData)
NOT_SUPPORTED(cuFuncSetAttribute)
NOT_SUPPORTED(cuMemcpyDtoH_v2)
NOT_SUPPORTED(cuMemcpyHtoD_v2)
NOT_SUPPORTED(cuMemsetD32_v2)
NOT_SUPPORTED(cuMemHostAlloc)
NOT_SUPPORTED(cuMemHostGetDevicePointer_v2)
NOT_SUPPORTED(cuMemFreeHost)
NOT_SUPPORTED(cuMemGetAllocationGranularity)
NOT_SUPPORTED(cuStreamSetAttribute)
NOT_SUPPORTED(cuCtxResetPersistingL2Cache)

/* --- launches --------------------------------------------------------------- */

/* --- kernels with blocks, for slicing --------------------------------------- */

#define FAKE_FNS 16
#define FAKE_GRID 4096
#define FAKE_CLUSTER_FN 5 /* has compile-time cluster dimensions */
#define FAKE_NO_MARK_FN 6 /* its code has no end marker */
#define FAKE_CODE_BYTES 4096
#define FAKE_SCAN ((CUfunction)(uintptr_t)0x5ca0)
#define FAKE_COPY ((CUfunction)(uintptr_t)0xc0b0)
#define FAKE_MODULE ((CUmodule)(uintptr_t)0x30d0)
#define FAKE_SCAN_NS 10000 /* the scan's GPU time */
#define FAKE_COPY_NS 10000 /* a copy's */
#define PRO_BYTES 128
#define PRO_IMM_BIT 160
#define KERNEL_RING 64

static unsigned runs[FAKE_FNS + 1][FAKE_GRID]; /* under mu */
static unsigned fn_launches[FAKE_FNS + 1], bad;
static struct {
	uint64_t at[KERNEL_RING][2];
	unsigned n;
} kernels[FAKE_FNS + 1];
/* what the shim's kernels wrote: scan results by address, copies by slot */
#define WORDS 64
static struct {
	uint64_t addr;
	uint32_t w[2];
	int unread; /* a scan wrote them, not read back yet */
} words[WORDS];
static unsigned nwords;
#define FAKE_COPIES 4096
static struct {
	uint64_t at, whose;
	uint32_t s;
	uint64_t ready; /* written when its stream reached it: a piece that uses it earlier is wrong */
} fcopies[FAKE_COPIES];
static unsigned nfcopies;

/* test function f's code, in a MiB of its own; moved (fakecuda_move) as
 * after its module was unloaded and loaded again under the same handle */
static unsigned moved[FAKE_FNS + 1];
static uint64_t program_of(unsigned f) { return 0x7f0000000000ull + (uint64_t)f * 0x100000 + moved[f] * 0x10000ull; }

/* fakecuda_move moves test function fn's code: its old place is freed */
void fakecuda_move(unsigned fn)
{
	pthread_mutex_lock(&mu);
	if (fn >= 1 && fn <= FAKE_FNS && moved[fn] < 15)
		moved[fn]++;
	pthread_mutex_unlock(&mu);
}

static unsigned test_fn(CUfunction f)
{
	uintptr_t n = (uintptr_t)f;
	return n >= 1 && n <= FAKE_FNS ? (unsigned)n : 0;
}

/* one block of any function is resident on an SM at a time: a wave of
 * a launch is as many blocks as its partition has SMs */
int cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int threads, size_t smem)
{
	COUNTED();
	(void)f, (void)smem;
	if (threads <= 0 || threads > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	*n = 1;
	return error();
}

int cuModuleLoadDataEx(CUmodule *m, const void *img, unsigned n, int *o, void **v)
{
	COUNTED();
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	(void)n, (void)o, (void)v;
	*m = FAKE_MODULE;
	return strstr(img, "carve_slice_scan") && strstr(img, "carve_slice_copy") ? error() : CUDA_ERROR_INVALID_VALUE;
}

int cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	COUNTED();
	*f = m != FAKE_MODULE ? NULL : !strcmp(name, "carve_slice_scan") ? FAKE_SCAN : !strcmp(name, "carve_slice_copy") ? FAKE_COPY : NULL;
	return *f ? error() : CUDA_ERROR_NOT_FOUND;
}

int cuFuncGetAttribute(int *v, int a, CUfunction f)
{
	COUNTED();
	*v = (a == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH || a == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT ||
	      a == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH) && test_fn(f) == FAKE_CLUSTER_FN ? 2 : 0;
	return error();
}

int cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s)
{
	COUNTED();
	pthread_mutex_lock(&mu);
	int found = 0;
	for (unsigned i = 0; i < nwords && !found; i++)
		found = words[i].addr == d && n <= sizeof words[i].w;
	struct fstream *f = stream_of(s);
	if (found)
		f->to_host = h, f->from = d, f->bytes = n;
	pthread_mutex_unlock(&mu);
	return found ? error() : CUDA_ERROR_INVALID_VALUE;
}

/* to_host makes stream f's copy to the host, its work done */
static void to_host(struct fstream *f)
{
	pthread_mutex_lock(&mu);
	for (unsigned i = 0; i < nwords && f->to_host; i++)
		if (words[i].addr == f->from) {
			memcpy(f->to_host, words[i].w, f->bytes);
			words[i].unread = 0;
			f->to_host = NULL;
		}
	pthread_mutex_unlock(&mu);
}

/* shim_kernel runs the shim's scan or copy kernel at once (mu held):
 * the scan finds FAKE_CODE_BYTES of code (none in FAKE_NO_MARK_FN's); the
 * copy keeps its slot's S and whose code it copied, checking its length. */
static void shim_kernel(CUfunction f, unsigned gx, void **p, uint64_t ready)
{
	uint64_t src = *(uint64_t *)p[0];
	unsigned fn = (unsigned)((src - program_of(0)) / 0x100000);
	if (fn > FAKE_FNS || src != program_of(fn)) /* it read code freed, or none */
		bad++;
	if (f == FAKE_SCAN) {
		uint64_t out = *(uint64_t *)p[1];
		unsigned i = 0;
		while (i < nwords && words[i].addr != out)
			i++;
		if (i == WORDS) {
			bad++;
			return;
		}
		nwords += i == nwords;
		bad += words[i].unread; /* another scan's result, not read yet, overwritten */
		words[i].unread = 1;
		words[i].addr = out;
		words[i].w[0] = fn == FAKE_NO_MARK_FN ? 0 : FAKE_CODE_BYTES;
		words[i].w[1] = 0;
		return;
	}
	uint64_t dst = *(uint64_t *)p[1];
	unsigned n = *(unsigned *)p[2];
	uint8_t pro[PRO_BYTES];
	for (int i = 0; i < PRO_BYTES / 8; i++)
		memcpy(pro + 8 * i, p[3 + i], 8);
	if (!gx || n * 8 != FAKE_CODE_BYTES || nfcopies == FAKE_COPIES || dst % 4096) {
		bad++;
		return;
	}
	fcopies[nfcopies].at = dst;
	fcopies[nfcopies].whose = src;
	fcopies[nfcopies].ready = ready;
	memcpy(&fcopies[nfcopies].s, pro + PRO_IMM_BIT / 8, 4);
	nfcopies++;
}

/* blocks_of says which blocks of test function fn a launch runs by its
 * descriptor, [*s, *e), (mu held); 0 if the descriptor is wrong. */
static int blocks_of(unsigned fn, unsigned gx, const uint8_t *tmd, uint64_t start, unsigned *s, unsigned *e)
{
	uint64_t prog = carve_tmd_program(tmd);
	uint32_t w = carve_tmd_grid_width(tmd);
	*s = 0;
	*e = w < gx ? w : gx;
	if (prog == program_of(fn))
		return 1;
	uint64_t pf = carve_tmd_get64(tmd, CARVE_TMD_PREFETCH_OFFSET, CARVE_TMD_PREFETCH_HI_BITS);
	for (unsigned i = 0; i < nfcopies; i++)
		if (fcopies[i].at == prog) {
			*s = fcopies[i].s;
			return fcopies[i].whose == program_of(fn) && pf == prog >> 8 && start >= fcopies[i].ready;
		}
	return 0;
}

/* fakecuda_runs: how many times block b of test function fn ran */
unsigned fakecuda_runs(unsigned fn, unsigned b)
{
	pthread_mutex_lock(&mu);
	unsigned n = fn <= FAKE_FNS && b < FAKE_GRID ? runs[fn][b] : 0;
	pthread_mutex_unlock(&mu);
	return n;
}

/* fakecuda_fn_launches: the driver's launches of test function fn */
unsigned fakecuda_fn_launches(unsigned fn)
{
	return fn <= FAKE_FNS ? __atomic_load_n(&fn_launches[fn], __ATOMIC_RELAXED) : 0;
}

/* fakecuda_bad: launches whose descriptor or copy was wrong, and copies
 * or scans made wrong */
unsigned fakecuda_bad(void)
{
	return __atomic_load_n(&bad, __ATOMIC_RELAXED);
}

/* fakecuda_kernels copies the GPU times (start, end, ns) of test function
 * fn's last launches, oldest first, at most max; returns how many. */
unsigned fakecuda_kernels(unsigned fn, uint64_t (*out)[2], unsigned max)
{
	pthread_mutex_lock(&mu);
	unsigned n = fn <= FAKE_FNS ? kernels[fn].n : 0, k = n < KERNEL_RING ? n : KERNEL_RING;
	if (k > max)
		k = max;
	for (unsigned i = 0; i < k; i++)
		memcpy(out[i], kernels[fn].at[(n - k + i) % KERNEL_RING], sizeof out[i]);
	pthread_mutex_unlock(&mu);
	return k;
}

/* fake_launch runs one launch of function fn with grid width gx and
 * parameters p: the callback with a descriptor of the given version (what
 * the driver does just before uploading it), then the kernel's time on the
 * stream (for test functions, the blocks it ran). */
static int fake_launch(int version, CUstream s, CUfunction fn, unsigned gx, void **p)
{
	if (error())
		return error();
	unsigned tf = test_fn(fn);
	if (tf && gx > FAKE_GRID)
		return CUDA_ERROR_INVALID_VALUE;
	uint8_t tmd[512];
	memset(tmd, 0, sizeof tmd);
	tmd[CARVE_TMD_VERSION_OFFSET] = (uint8_t)version;
	if (tf) {
		carve_tmd_set_grid_width(tmd, gx);
		carve_tmd_set64(tmd, CARVE_TMD_PROGRAM_OFFSET, CARVE_TMD_PROGRAM_HI_BITS, program_of(tf));
		carve_tmd_set64(tmd, CARVE_TMD_PREFETCH_OFFSET, CARVE_TMD_PREFETCH_HI_BITS, program_of(tf) >> 8);
	}
	struct {
		uint32_t size;
		uint8_t pad[CARVE_PARAMS_CTX_OFFSET - 4];
		CUcontext ctx; /* as the driver's: the launch's context */
		uint8_t pad2[CARVE_PARAMS_TMD_OFFSET - CARVE_PARAMS_CTX_OFFSET - sizeof(CUcontext)];
		void *tmd;
		uint64_t more;
	} params = {.size = sizeof params, .ctx = current_ctx, .tmd = tmd};
	_Static_assert(__builtin_offsetof(__typeof__(params), tmd) == CARVE_PARAMS_TMD_OFFSET, "params' descriptor");
	int called = 0;
	launch_cb now_cb = __atomic_load_n(&cb, __ATOMIC_ACQUIRE);
	if (now_cb && enabled[0xb][1]) {
		in_callback = 1;
		now_cb(cb_user, 0xb, 1, &params);
		in_callback = 0;
		called = 1;
	} else {
		__atomic_add_fetch(&bare, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&mu);
	if (version >= CARVE_TMD_V_HOPPER) {
		memcpy(last_mask, tmd + CARVE_TMD_HOPPER_MASK_OFFSET, 16);
	} else {
		memcpy(last_mask, tmd + CARVE_TMD_VOLTA_MASK_OFFSET, 8);
		last_mask[2] = last_mask[3] = 0;
	}
	uint32_t w0;
	memcpy(&w0, tmd + CARVE_TMD_HOPPER_ENABLE_OFFSET, 4);
	last_mask[4] = w0 >> CARVE_TMD_HOPPER_ENABLE_BIT;
	last_called = called;
	struct fstream *f = stream_of(s);
	if (!f->capturing) {
		uint64_t t = now_ns(), d = kernel_ns();
		uint64_t start = f->done_at > t ? f->done_at : t;
		unsigned b0 = 0, b1 = 0;
		if (fn == FAKE_SCAN || fn == FAKE_COPY) {
			d = fn == FAKE_SCAN ? FAKE_SCAN_NS : FAKE_COPY_NS;
			shim_kernel(fn, gx, p, start + d);
		} else if (tf && !blocks_of(tf, gx, tmd, start, &b0, &b1)) {
			bad++;
			d = 0;
		} else if (tf) {
			for (unsigned b = b0; b < b1; b++)
				runs[tf][b]++;
			fn_launches[tf]++;
			d = b1 > b0 ? d * (b1 - b0) / gx : 0;
		}
		f->done_at = start + d;
		if (tf) {
			kernels[tf].at[kernels[tf].n % KERNEL_RING][0] = start;
			kernels[tf].at[kernels[tf].n % KERNEL_RING][1] = start + d;
			kernels[tf].n++;
		}
	}
	const char *at = getenv("FAKECUDA_FAULT_AT");
	if (++launches == (at ? atoi(at) : -1))
		__atomic_store_n(&faulted, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mu);
	return 0;
}

int cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned sh, CUstream s, void **p, void **e)
{
	(void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sh, (void)e;
	return fake_launch(CARVE_TMD_V_HOPPER, s, f, gx, p);
}

int cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned sh, CUstream s, void **p, void **e)
{
	(void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sh, (void)e;
	return fake_launch(CARVE_TMD_V_HOPPER, s, f, gx, p); /* not through cuLaunchKernel: a shim would see it twice */
}

static int launch_ex(const CUlaunchConfig *c, CUfunction f, void **p)
{
	if (!c) /* as the driver: no launch, no callback */
		return CUDA_ERROR_INVALID_VALUE;
	return fake_launch(CARVE_TMD_V_HOPPER, c->hStream, f, c->gridDimX, p);
}

int cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
	(void)e;
	return launch_ex(c, f, p);
}

int cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
	(void)e;
	return launch_ex(c, f, p); /* not through cuLaunchKernelEx: a shim would see it twice */
}

int cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			      unsigned bz, unsigned sh, CUstream s, void **p)
{
	(void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sh;
	return fake_launch(CARVE_TMD_V_HOPPER, s, f, gx, p); /* not through cuLaunchKernel: a shim would see it twice */
}

int cuGraphLaunch(CUgraphExec g, CUstream s)
{
	int r = graph_memory(g);
	return r ? r : fake_launch(CARVE_TMD_V_HOPPER, s, NULL, 1, NULL);
}

/* --- device memory ------------------------------------------------------------ */

#define MIB (1ull << 20)
#define GRAIN (2 * MIB) /* pools and graph memory grow by this */
#define HEAP_DEFAULT (8 * MIB)

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t mem_size; /* 0: not read yet */
static uint64_t mem_taken, mem_high;
static int calls_v1, calls_v2; /* calls of the 32-bit and the later flavours */
static uint64_t next_va = 0x200000000000ull;
static uint64_t next_va32 = 0x10000000ull;

static uint64_t round_up(uint64_t n, uint64_t to)
{
	return (n + to - 1) / to * to;
}

static uint64_t gpu_bytes(void) /* mem_mu held */
{
	if (!mem_size) {
		const char *e = getenv("FAKECUDA_MEM_MB");
		mem_size = (e ? strtoull(e, NULL, 10) : 81079) * MIB;
	}
	return mem_size;
}

/* fakecuda_mem_mb sets the GPU's memory. */
void fakecuda_mem_mb(long long mb)
{
	pthread_mutex_lock(&mem_mu);
	mem_size = (uint64_t)mb * MIB;
	pthread_mutex_unlock(&mem_mu);
}

/* fakecuda_mem: out[0] the bytes taken now, out[1] the most ever taken. */
void fakecuda_mem(uint64_t out[2])
{
	pthread_mutex_lock(&mem_mu);
	out[0] = mem_taken, out[1] = mem_high;
	pthread_mutex_unlock(&mem_mu);
}

/* fakecuda_flavours: calls of the memory functions' 32-bit flavours
 * (out[0]) and of the later ones (out[1]). */
void fakecuda_flavours(int out[2])
{
	out[0] = __atomic_load_n(&calls_v1, __ATOMIC_RELAXED);
	out[1] = __atomic_load_n(&calls_v2, __ATOMIC_RELAXED);
}

static int take(uint64_t n) /* mem_mu held */
{
	if (mem_taken + n > gpu_bytes())
		return 0;
	mem_taken += n;
	if (mem_taken > mem_high)
		mem_high = mem_taken;
	return 1;
}

static void give(uint64_t n) /* mem_mu held */
{
	mem_taken -= n < mem_taken ? n : mem_taken;
}

static uint64_t new_va(uint64_t n, int v1) /* mem_mu held */
{
	uint64_t *next = v1 ? &next_va32 : &next_va, va = *next;
	*next += round_up(n ? n : 1, 4096) + 4096;
	return va;
}

/* What is allocated, by address (or handle): a table under mem_mu. */
enum { F_PLAIN = 1, F_POOLED, F_MAPPING, F_ARRAY };
struct fentry {
	uint64_t key, size;
	void *owner; /* F_POOLED: the pool; F_MAPPING: the handle */
	int kind, ctx;
};
static struct fentry *fmap;
static size_t fcap, fcount;

static size_t fhash(uint64_t k)
{
	k ^= k >> 33, k *= 0xff51afd7ed558ccdull, k ^= k >> 33;
	return (size_t)k & (fcap - 1);
}

static struct fentry *fmap_find(uint64_t key)
{
	if (!fcap)
		return NULL;
	for (size_t i = fhash(key);; i = (i + 1) & (fcap - 1)) {
		if (!fmap[i].kind)
			return NULL;
		if (fmap[i].key == key)
			return &fmap[i];
	}
}

static void fmap_put(struct fentry e)
{
	if ((fcount + 1) * 2 > fcap) {
		struct fentry *old = fmap;
		size_t oldcap = fcap;
		fcap = fcap ? fcap * 2 : 64;
		fmap = calloc(fcap, sizeof *fmap);
		fcount = 0;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].kind)
				fmap_put(old[i]);
		free(old);
	}
	size_t i = fhash(e.key);
	while (fmap[i].kind && fmap[i].key != e.key)
		i = (i + 1) & (fcap - 1);
	if (!fmap[i].kind)
		fcount++;
	fmap[i] = e;
}

static void fmap_erase(struct fentry *e)
{
	size_t i = (size_t)(e - fmap), j = i;
	fmap[i].kind = 0;
	fcount--;
	for (;;) {
		j = (j + 1) & (fcap - 1);
		if (!fmap[j].kind)
			return;
		size_t h = fhash(fmap[j].key);
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			fmap[i] = fmap[j];
			fmap[j].kind = 0;
			i = j;
		}
	}
}

static int current_slot(void)
{
	int s = ctx_slot(current_ctx);
	return s < 0 ? 0 : s;
}

static int current_device(void)
{
	return ctx_dev[current_slot()];
}

static int alloc_plain(uint64_t *out, uint64_t n, int v1, int kind)
{
	if (error())
		return error();
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_mu);
	if (!take(n)) {
		pthread_mutex_unlock(&mem_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = new_va(n, v1);
	fmap_put((struct fentry){.key = *out, .size = n, .kind = kind, .ctx = current_slot()});
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

static int free_plain(uint64_t p, int kind)
{
	pthread_mutex_lock(&mem_mu);
	struct fentry *e = fmap_find(p);
	if (!e || e->kind != kind) {
		pthread_mutex_unlock(&mem_mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	give(e->size);
	fmap_erase(e);
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	COUNTED();
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	uint64_t v;
	int r = alloc_plain(&v, n, 0, F_PLAIN);
	if (!r)
		*p = v;
	return r;
}

int cuMemAlloc(unsigned *p, unsigned n)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	uint64_t v;
	int r = alloc_plain(&v, n, 1, F_PLAIN);
	if (!r)
		*p = (unsigned)v;
	return r;
}

int cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags)
{
	(void)flags;
	uint64_t v;
	int r = alloc_plain(&v, n, 0, F_PLAIN);
	if (!r)
		*p = v;
	return r;
}

/* A pitch is the width rounded up to 512 bytes. */
int cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem)
{
	(void)elem;
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	uint64_t v, pw = round_up(w, 512);
	int r = alloc_plain(&v, pw * h, 0, F_PLAIN);
	if (!r)
		*p = v, *pitch = pw;
	return r;
}

int cuMemAllocPitch(unsigned *p, unsigned *pitch, unsigned w, unsigned h, unsigned elem)
{
	(void)elem;
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	uint64_t v, pw = round_up(w, 512);
	int r = alloc_plain(&v, pw * h, 1, F_PLAIN);
	if (!r)
		*p = (unsigned)v, *pitch = (unsigned)pw;
	return r;
}

int cuMemFree_v2(CUdeviceptr p)
{
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	return free_plain(p, F_PLAIN);
}

int cuMemFree(unsigned p)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	return free_plain(p, F_PLAIN);
}

int cuMemGetInfo_v2(size_t *free, size_t *total)
{
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mem_mu);
	*free = gpu_bytes() - mem_taken, *total = gpu_bytes();
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

static unsigned clamp32(uint64_t v)
{
	return v > 0xffffffffull ? 0xffffffffu : (unsigned)v;
}

int cuMemGetInfo(unsigned *free, unsigned *total)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mem_mu);
	*free = clamp32(gpu_bytes() - mem_taken), *total = clamp32(gpu_bytes());
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	(void)dev;
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mem_mu);
	*bytes = gpu_bytes();
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuDeviceTotalMem(unsigned *bytes, CUdevice dev)
{
	(void)dev;
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mem_mu);
	*bytes = clamp32(gpu_bytes());
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

/* --- pools --------------------------------------------------------------------- */

struct fpool {
	uint64_t reserved, used, threshold;
	int host; /* a pool of host memory: takes none of the GPU's */
};
#define FPOOLS 64
static struct fpool default_pool[2];
static struct fpool *device_pool[2] = {&default_pool[0], &default_pool[1]};
static struct fpool *fpools[FPOOLS] = {&default_pool[0], &default_pool[1]};

static int pool_alloc(struct fpool *p, uint64_t n, uint64_t *out) /* mem_mu held */
{
	uint64_t slack = p->reserved - p->used;
	if (slack < n) {
		uint64_t grow = round_up(n - slack, GRAIN);
		if (!p->host && !take(grow))
			return CUDA_ERROR_OUT_OF_MEMORY;
		p->reserved += grow;
	}
	p->used += n;
	*out = new_va(n, 0);
	fmap_put((struct fentry){.key = *out, .size = n, .owner = p, .kind = F_POOLED});
	return 0;
}

/* pool_keep gives back what p reserves beyond keep and what is in use. */
static void pool_keep(struct fpool *p, uint64_t keep) /* mem_mu held */
{
	uint64_t target = round_up(keep > p->used ? keep : p->used, GRAIN);
	if (p->reserved > target) {
		if (!p->host)
			give(p->reserved - target);
		p->reserved = target;
	}
}

/* At a synchronization each pool gives back what it holds beyond its
 * release threshold. */
static void mem_synced(void)
{
	pthread_mutex_lock(&mem_mu);
	for (int i = 0; i < FPOOLS; i++)
		if (fpools[i] && fpools[i]->reserved > fpools[i]->threshold)
			pool_keep(fpools[i], fpools[i]->threshold);
	pthread_mutex_unlock(&mem_mu);
}

struct fnode {
	int type;
	uint64_t bytes, dptr;
	struct fgraph *child;
};
#define GRAPH_MAGIC 0x46475248u
#define EXEC_MAGIC 0x46455845u
struct fgraph {
	uint32_t magic;
	int n;
	struct fnode nodes[64];
};
struct fexec {
	uint32_t magic;
	uint64_t footprint;
};

static struct fgraph *graph_new(void)
{
	struct fgraph *g = calloc(1, sizeof *g);
	g->magic = GRAPH_MAGIC;
	return g;
}

static struct fnode *graph_add(struct fgraph *g, int type, uint64_t bytes, uint64_t dptr)
{
	if (g->n == 64)
		return NULL;
	struct fnode *n = &g->nodes[g->n++];
	n->type = type, n->bytes = bytes, n->dptr = dptr;
	return n;
}

static int async_alloc(struct fpool *p, CUdeviceptr *d, size_t n, CUstream s)
{
	if (error())
		return error();
	pthread_mutex_lock(&mem_mu);
	struct fstream *f = stream_of(s);
	int r = 0;
	uint64_t v = 0;
	if (f->capturing && f->cap) { /* a node of the graph, not memory now */
		v = new_va(n, 0);
		if (!graph_add(f->cap, CU_GRAPH_NODE_TYPE_MEM_ALLOC, n, v))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		r = pool_alloc(p, n, &v);
	}
	pthread_mutex_unlock(&mem_mu);
	if (!r)
		*d = v;
	return r;
}

int cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream s)
{
	return async_alloc(device_pool[current_device()], d, n, s);
}

int cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool pool, CUstream s)
{
	return async_alloc((struct fpool *)pool, d, n, s);
}

int cuMemFreeAsync(CUdeviceptr d, CUstream s)
{
	pthread_mutex_lock(&mem_mu);
	struct fstream *f = stream_of(s);
	int r = 0;
	struct fentry *e;
	if (f->capturing && f->cap) {
		graph_add(f->cap, 11, 0, d); /* CU_GRAPH_NODE_TYPE_MEM_FREE */
	} else if ((e = fmap_find(d)) && e->kind == F_POOLED) {
		((struct fpool *)e->owner)->used -= e->size;
		fmap_erase(e);
	} else if (e && e->kind == F_PLAIN) {
		give(e->size);
		fmap_erase(e);
	} else {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&mem_mu);
	return r;
}

int cuMemPoolCreate(CUmemoryPool *pool, const void *props)
{
	int type;
	memcpy(&type, (const char *)props + CU_MEM_PROPS_LOCATION_TYPE_OFFSET, sizeof type);
	struct fpool *p = calloc(1, sizeof *p);
	p->host = type != CU_MEM_LOCATION_TYPE_DEVICE;
	pthread_mutex_lock(&mem_mu);
	int i = 2;
	while (i < FPOOLS && fpools[i])
		i++;
	if (i < FPOOLS)
		fpools[i] = p;
	pthread_mutex_unlock(&mem_mu);
	if (i == FPOOLS) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pool = p;
	return 0;
}

int cuMemPoolDestroy(CUmemoryPool pool)
{
	struct fpool *p = pool;
	pthread_mutex_lock(&mem_mu);
	for (int i = 2; i < FPOOLS; i++)
		if (fpools[i] == p)
			fpools[i] = NULL;
	for (int d = 0; d < 2; d++)
		if (device_pool[d] == p)
			device_pool[d] = &default_pool[d];
	if (!p->host)
		give(p->reserved);
	pthread_mutex_unlock(&mem_mu);
	free(p);
	return 0;
}

int cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
	pthread_mutex_lock(&mem_mu);
	pool_keep(pool, keep);
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value)
{
	if (attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
		return 0;
	pthread_mutex_lock(&mem_mu);
	((struct fpool *)pool)->threshold = *(uint64_t *)value;
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value)
{
	struct fpool *p = pool;
	pthread_mutex_lock(&mem_mu);
	uint64_t v = attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD ? p->threshold
		     : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? p->reserved
		     : attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT ? p->used
								  : 0;
	pthread_mutex_unlock(&mem_mu);
	*(uint64_t *)value = v;
	return 0;
}

int cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
	if (dev < 0 || dev > 1)
		return 101;
	*pool = &default_pool[dev];
	return 0;
}

int cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	if (dev < 0 || dev > 1)
		return 101;
	pthread_mutex_lock(&mem_mu);
	*pool = device_pool[dev];
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	if (dev < 0 || dev > 1)
		return 101;
	pthread_mutex_lock(&mem_mu);
	device_pool[dev] = pool;
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

/* --- graphs: allocation nodes, and the memory the device keeps for them ------------ */

/* Each device's graph memory: what it reserves, and what graphs' allocations
 * hold past a launch (none here: every graph frees what it allocates). */
static uint64_t graph_reserved[2], graph_used[2];

int cuGraphCreate(CUgraph *g, unsigned flags)
{
	(void)flags;
	*g = graph_new();
	return 0;
}

int cuGraphDestroy(CUgraph g)
{
	free(g);
	return 0;
}

int cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *params)
{
	(void)deps, (void)n;
	uint64_t bytes;
	memcpy(&bytes, (char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, sizeof bytes);
	pthread_mutex_lock(&mem_mu);
	uint64_t v = new_va(bytes, 0);
	struct fnode *x = graph_add(g, CU_GRAPH_NODE_TYPE_MEM_ALLOC, bytes, v);
	pthread_mutex_unlock(&mem_mu);
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy((char *)params + CU_MEM_ALLOC_NODE_DPTR_OFFSET, &v, sizeof v);
	*node = x;
	return 0;
}

int cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, CUdeviceptr d)
{
	(void)deps, (void)n;
	struct fnode *x = graph_add(g, 11, 0, d);
	*node = x;
	return x ? 0 : CUDA_ERROR_OUT_OF_MEMORY;
}

int cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, CUgraph child)
{
	(void)deps, (void)n;
	struct fnode *x = graph_add(g, CU_GRAPH_NODE_TYPE_GRAPH, 0, 0);
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->child = child;
	*node = x;
	return 0;
}

int cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *n)
{
	struct fgraph *g = graph;
	if (nodes) {
		size_t k = *n < (size_t)g->n ? *n : (size_t)g->n;
		for (size_t i = 0; i < k; i++)
			nodes[i] = &g->nodes[i];
		*n = k;
	} else {
		*n = (size_t)g->n;
	}
	return 0;
}

int cuGraphNodeGetType(CUgraphNode node, int *type)
{
	*type = ((struct fnode *)node)->type;
	return 0;
}

int cuGraphMemAllocNodeGetParams(CUgraphNode node, void *params)
{
	struct fnode *x = node;
	memset(params, 0, CU_MEM_ALLOC_NODE_PARAMS_SIZE);
	memcpy((char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, &x->bytes, sizeof x->bytes);
	memcpy((char *)params + CU_MEM_ALLOC_NODE_DPTR_OFFSET, &x->dptr, sizeof x->dptr);
	return 0;
}

int cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *g)
{
	*g = ((struct fnode *)node)->child;
	return 0;
}

static uint64_t graph_bytes(const struct fgraph *g)
{
	uint64_t b = 0;
	for (int i = 0; i < g->n; i++)
		b += g->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ? g->nodes[i].bytes
		     : g->nodes[i].child                          ? graph_bytes(g->nodes[i].child)
								  : 0;
	return b;
}

int cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
	(void)flags;
	struct fexec *x = calloc(1, sizeof *x);
	x->magic = EXEC_MAGIC;
	x->footprint = graph_bytes(g);
	*e = x;
	return 0;
}

int cuGraphExecDestroy(CUgraphExec e)
{
	free(e);
	return 0;
}

static int is_exec(CUgraphExec g)
{
	return (uintptr_t)g > 0x10000 && ((struct fexec *)g)->magic == EXEC_MAGIC;
}

/* graph_memory: the device's graph memory grows to hold the graph's. */
static int graph_memory(CUgraphExec g)
{
	if (!is_exec(g) || error())
		return error();
	int d = current_device(), r = 0;
	uint64_t need = ((struct fexec *)g)->footprint;
	pthread_mutex_lock(&mem_mu);
	uint64_t slack = graph_reserved[d] - graph_used[d];
	if (need > slack) {
		uint64_t grow = round_up(need - slack, GRAIN);
		if (take(grow))
			graph_reserved[d] += grow;
		else
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&mem_mu);
	return r;
}

int cuGraphUpload(CUgraphExec g, CUstream s)
{
	(void)s;
	return graph_memory(g);
}

int cuDeviceGetGraphMemAttribute(CUdevice d, int attr, void *value)
{
	if (d < 0 || d > 1)
		return 101;
	pthread_mutex_lock(&mem_mu);
	*(uint64_t *)value = attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT ? graph_reserved[d]
			     : attr == CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT   ? graph_used[d]
									    : 0;
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuDeviceGraphMemTrim(CUdevice d)
{
	if (d < 0 || d > 1)
		return 101;
	pthread_mutex_lock(&mem_mu);
	uint64_t keep = round_up(graph_used[d], GRAIN);
	if (graph_reserved[d] > keep) {
		give(graph_reserved[d] - keep);
		graph_reserved[d] = keep;
	}
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

/* --- arrays ---------------------------------------------------------------------- */

static uint64_t channel_bytes(int f)
{
	switch (f) {
	case 0x01: case 0x08:
		return 1;
	case 0x02: case 0x09: case 0x10:
		return 2;
	}
	return 4;
}

static uint64_t dim(uint64_t v, unsigned level)
{
	return v ? ((v >> level) ? (v >> level) : 1) : 1;
}

static uint64_t array_key(void *a) /* apart from addresses */
{
	return (uint64_t)(uintptr_t)a | 1ull << 63;
}

static int array_new(void **a, uint64_t bytes)
{
	if (error())
		return error();
	pthread_mutex_lock(&mem_mu);
	if (!take(bytes)) {
		pthread_mutex_unlock(&mem_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	void *h = malloc(1);
	fmap_put((struct fentry){.key = array_key(h), .size = bytes, .kind = F_ARRAY, .ctx = current_slot()});
	pthread_mutex_unlock(&mem_mu);
	*a = h;
	return 0;
}

static int array_free(void *a)
{
	int r = free_plain(array_key(a), F_ARRAY);
	if (!r)
		free(a);
	return r;
}

int cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	return array_new(a, d->Width * dim(d->Height, 0) * channel_bytes(d->Format) * d->NumChannels);
}

/* the 32-bit descriptors of CUDA before 3.2 */
struct desc_v1 {
	unsigned Width, Height;
	int Format;
	unsigned NumChannels;
};
struct desc3d_v1 {
	unsigned Width, Height, Depth;
	int Format;
	unsigned NumChannels, Flags;
};

int cuArrayCreate(CUarray *a, const struct desc_v1 *d)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	return array_new(a, (uint64_t)d->Width * dim(d->Height, 0) * channel_bytes(d->Format) * d->NumChannels);
}

static uint64_t array3d_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
		return 0;
	int layered = d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
	uint64_t b = 0;
	for (unsigned l = 0; l < (levels ? levels : 1); l++)
		b += dim(d->Width, l) * dim(d->Height, d->Height ? l : 0) * dim(d->Depth, layered ? 0 : l) *
		     channel_bytes(d->Format) * d->NumChannels;
	return b;
}

int cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	__atomic_add_fetch(&calls_v2, 1, __ATOMIC_RELAXED);
	return array_new(a, array3d_bytes(d, 1));
}

int cuArray3DCreate(CUarray *a, const struct desc3d_v1 *d)
{
	__atomic_add_fetch(&calls_v1, 1, __ATOMIC_RELAXED);
	CUDA_ARRAY3D_DESCRIPTOR d2 = {d->Width, d->Height, d->Depth, d->Format, d->NumChannels, d->Flags};
	return array_new(a, array3d_bytes(&d2, 1));
}

int cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	return array_new(a, array3d_bytes(d, levels));
}

int cuArrayDestroy(CUarray a)
{
	return array_free(a);
}

int cuMipmappedArrayDestroy(CUmipmappedArray a)
{
	return array_free(a);
}

/* --- the virtual memory API ------------------------------------------------------ */

struct fvmm {
	uint64_t size;
	int refs, maps, host;
};

static void vmm_maybe_free(struct fvmm *v) /* mem_mu held */
{
	if (v->refs > 0 || v->maps > 0)
		return;
	if (!v->host)
		give(v->size);
	free(v);
}

int cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const void *prop, unsigned long long flags)
{
	(void)flags;
	int type;
	memcpy(&type, (const char *)prop + CU_MEM_PROPS_LOCATION_TYPE_OFFSET, sizeof type);
	struct fvmm *v = calloc(1, sizeof *v);
	v->size = n, v->refs = 1, v->host = type != CU_MEM_LOCATION_TYPE_DEVICE;
	pthread_mutex_lock(&mem_mu);
	if (!v->host && !take(n)) {
		pthread_mutex_unlock(&mem_mu);
		free(v);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&mem_mu);
	*h = (CUmemGenericAllocationHandle)(uintptr_t)v;
	return 0;
}

int cuMemRelease(CUmemGenericAllocationHandle h)
{
	struct fvmm *v = (struct fvmm *)(uintptr_t)h;
	pthread_mutex_lock(&mem_mu);
	v->refs--;
	vmm_maybe_free(v);
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemAddressReserve(CUdeviceptr *p, size_t n, size_t align, CUdeviceptr addr, unsigned long long flags)
{
	(void)align, (void)addr, (void)flags;
	pthread_mutex_lock(&mem_mu);
	*p = new_va(n, 0);
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemAddressFree(CUdeviceptr p, size_t n)
{
	(void)p, (void)n;
	return 0;
}

int cuMemMap(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags)
{
	(void)off, (void)flags;
	struct fvmm *v = (struct fvmm *)(uintptr_t)h;
	pthread_mutex_lock(&mem_mu);
	v->maps++;
	fmap_put((struct fentry){.key = p, .size = n, .owner = v, .kind = F_MAPPING});
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemUnmap(CUdeviceptr p, size_t n)
{
	pthread_mutex_lock(&mem_mu);
	for (CUdeviceptr at = p; at < p + n;) {
		struct fentry *e = fmap_find(at);
		if (!e || e->kind != F_MAPPING)
			break;
		struct fvmm *v = e->owner;
		at += e->size;
		fmap_erase(e);
		v->maps--;
		vmm_maybe_free(v);
	}
	pthread_mutex_unlock(&mem_mu);
	return 0;
}

int cuMemSetAccess(CUdeviceptr p, size_t n, const void *desc, size_t count)
{
	(void)p, (void)n, (void)desc, (void)count;
	return 0;
}

int cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr)
{
	pthread_mutex_lock(&mem_mu);
	struct fentry *e = fmap_find((uint64_t)(uintptr_t)addr);
	int r = CUDA_ERROR_INVALID_VALUE;
	if (e && e->kind == F_MAPPING) {
		((struct fvmm *)e->owner)->refs++;
		*h = (CUmemGenericAllocationHandle)(uintptr_t)e->owner;
		r = 0;
	}
	pthread_mutex_unlock(&mem_mu);
	return r;
}

/* --- the device malloc heap, IPC, and contexts that go ------------------------------- */

static uint64_t heap[CTX_SLOTS]; /* 0: the default */

static uint64_t heap_of(int slot)
{
	return heap[slot] ? heap[slot] : HEAP_DEFAULT;
}

int cuCtxSetLimit(int what, size_t value)
{
	if (what != CU_LIMIT_MALLOC_HEAP_SIZE)
		return 0;
	int s = current_slot(), r = 0;
	pthread_mutex_lock(&mem_mu);
	uint64_t had = heap_of(s) > HEAP_DEFAULT ? heap_of(s) - HEAP_DEFAULT : 0;
	uint64_t want = value > HEAP_DEFAULT ? value - HEAP_DEFAULT : 0;
	if (want > had && !take(want - had))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else if (want < had)
		give(had - want);
	if (!r)
		heap[s] = value;
	pthread_mutex_unlock(&mem_mu);
	return r;
}

int cuCtxGetLimit(size_t *value, int what)
{
	*value = what == CU_LIMIT_MALLOC_HEAP_SIZE ? heap_of(current_slot()) : 0;
	return 0;
}

int cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr d)
{
	memset(h, 0, sizeof *h);
	memcpy(h->reserved, &d, sizeof d);
	return 0;
}

/* Opening another process's allocation takes none of this GPU's memory. */
int cuIpcOpenMemHandle_v2(CUdeviceptr *d, CUipcMemHandle h, unsigned flags)
{
	(void)flags;
	memcpy(d, h.reserved, sizeof *d);
	return 0;
}

int cuIpcCloseMemHandle(CUdeviceptr d)
{
	(void)d;
	return 0;
}

/* A destroyed context's allocations and heap go with it. */
static void mem_context_gone(int slot)
{
	pthread_mutex_lock(&mem_mu);
	for (size_t i = 0; i < fcap;) {
		struct fentry *e = &fmap[i];
		if (e->kind && e->ctx == slot && (e->kind == F_PLAIN || e->kind == F_ARRAY)) {
			give(e->size);
			fmap_erase(e); /* another entry may have moved into i */
			continue;
		}
		i++;
	}
	uint64_t had = heap_of(slot) > HEAP_DEFAULT ? heap_of(slot) - HEAP_DEFAULT : 0;
	give(had);
	heap[slot] = 0;
	pthread_mutex_unlock(&mem_mu);
}

/* --- cuGetProcAddress ------------------------------------------------------- */

/* Each call by its base name, from the CUDA version that means the flavour
 * given (a later entry of the same name takes over from its version). */
#define P(name, fn) {name, 0, (void *)fn, (void *)fn}
static const struct {
	const char *name;
	int since;
	void *fn, *ptsz;
} procs[] = {
	{"cuLaunchKernel", 0, (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz},
	{"cuLaunchKernelEx", 0, (void *)cuLaunchKernelEx, (void *)cuLaunchKernelEx_ptsz},
	P("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel),
	P("cuGraphLaunch", cuGraphLaunch),
	P("cuStreamCreate", cuStreamCreate),
	P("cuStreamDestroy", cuStreamDestroy_v2),
	P("cuStreamSynchronize", cuStreamSynchronize),
	P("cuStreamQuery", cuStreamQuery),
	P("cuCtxSynchronize", cuCtxSynchronize),
	P("cuEventCreate", cuEventCreate),
	P("cuEventDestroy", cuEventDestroy_v2),
	P("cuEventRecord", cuEventRecord),
	P("cuEventRecordWithFlags", cuEventRecordWithFlags),
	P("cuEventQuery", cuEventQuery),
	P("cuEventSynchronize", cuEventSynchronize),
	P("cuStreamBeginCapture", cuStreamBeginCapture_v2),
	P("cuStreamEndCapture", cuStreamEndCapture),
	P("cuDeviceGetAttribute", cuDeviceGetAttribute),
	P("cuOccupancyMaxActiveBlocksPerMultiprocessor", cuOccupancyMaxActiveBlocksPerMultiprocessor),
	P("cuGetExportTable", cuGetExportTable),
	P("cuInit", cuInit),
	P("cuCtxGetCurrent", cuCtxGetCurrent),
	P("cuCtxSetCurrent", cuCtxSetCurrent),
	P("cuCtxGetDevice", cuCtxGetDevice),
	P("cuCtxCreate", cuCtxCreate_v2),
	P("cuCtxDestroy", cuCtxDestroy_v2),
	P("cuDeviceGetUuid", cuDeviceGetUuid_v2),
	/* device memory */
	P("cuMemAlloc", cuMemAlloc), {"cuMemAlloc", 3020, (void *)cuMemAlloc_v2, (void *)cuMemAlloc_v2},
	P("cuMemAllocPitch", cuMemAllocPitch),
	{"cuMemAllocPitch", 3020, (void *)cuMemAllocPitch_v2, (void *)cuMemAllocPitch_v2},
	P("cuMemFree", cuMemFree), {"cuMemFree", 3020, (void *)cuMemFree_v2, (void *)cuMemFree_v2},
	P("cuMemGetInfo", cuMemGetInfo), {"cuMemGetInfo", 3020, (void *)cuMemGetInfo_v2, (void *)cuMemGetInfo_v2},
	P("cuDeviceTotalMem", cuDeviceTotalMem),
	{"cuDeviceTotalMem", 3020, (void *)cuDeviceTotalMem_v2, (void *)cuDeviceTotalMem_v2},
	P("cuMemAllocManaged", cuMemAllocManaged),
	P("cuMemAllocAsync", cuMemAllocAsync),
	P("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync),
	P("cuMemFreeAsync", cuMemFreeAsync),
	P("cuMemPoolCreate", cuMemPoolCreate),
	P("cuMemPoolDestroy", cuMemPoolDestroy),
	P("cuMemPoolTrimTo", cuMemPoolTrimTo),
	P("cuMemPoolSetAttribute", cuMemPoolSetAttribute),
	P("cuMemPoolGetAttribute", cuMemPoolGetAttribute),
	P("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool),
	P("cuDeviceGetMemPool", cuDeviceGetMemPool),
	P("cuDeviceSetMemPool", cuDeviceSetMemPool),
	P("cuGraphCreate", cuGraphCreate),
	P("cuGraphDestroy", cuGraphDestroy),
	P("cuGraphAddMemAllocNode", cuGraphAddMemAllocNode),
	P("cuGraphAddMemFreeNode", cuGraphAddMemFreeNode),
	P("cuGraphAddChildGraphNode", cuGraphAddChildGraphNode),
	{"cuGraphInstantiate", 12000, (void *)cuGraphInstantiateWithFlags, (void *)cuGraphInstantiateWithFlags},
	P("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
	P("cuGraphExecDestroy", cuGraphExecDestroy),
	P("cuGraphUpload", cuGraphUpload),
	P("cuDeviceGraphMemTrim", cuDeviceGraphMemTrim),
	P("cuDeviceGetGraphMemAttribute", cuDeviceGetGraphMemAttribute),
	P("cuArrayCreate", cuArrayCreate), {"cuArrayCreate", 3020, (void *)cuArrayCreate_v2, (void *)cuArrayCreate_v2},
	P("cuArray3DCreate", cuArray3DCreate),
	{"cuArray3DCreate", 3020, (void *)cuArray3DCreate_v2, (void *)cuArray3DCreate_v2},
	P("cuArrayDestroy", cuArrayDestroy),
	P("cuMipmappedArrayCreate", cuMipmappedArrayCreate),
	P("cuMipmappedArrayDestroy", cuMipmappedArrayDestroy),
	P("cuMemCreate", cuMemCreate),
	P("cuMemRelease", cuMemRelease),
	P("cuMemAddressReserve", cuMemAddressReserve),
	P("cuMemAddressFree", cuMemAddressFree),
	P("cuMemMap", cuMemMap),
	P("cuMemUnmap", cuMemUnmap),
	P("cuMemSetAccess", cuMemSetAccess),
	P("cuMemRetainAllocationHandle", cuMemRetainAllocationHandle),
	P("cuCtxSetLimit", cuCtxSetLimit),
	P("cuCtxGetLimit", cuCtxGetLimit),
	P("cuIpcGetMemHandle", cuIpcGetMemHandle),
	{"cuIpcOpenMemHandle", 11000, (void *)cuIpcOpenMemHandle_v2, (void *)cuIpcOpenMemHandle_v2},
	P("cuIpcCloseMemHandle", cuIpcCloseMemHandle),
};

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, void *status);

int cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, void *status)
{
	(void)status;
	if (strcmp(symbol, "cuGetProcAddress") == 0) {
		*pfn = version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
		return 0;
	}
	int found = -1;
	for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
		if (procs[i].since <= version && strcmp(procs[i].name, symbol) == 0 &&
		    (found < 0 || procs[i].since > procs[found].since))
			found = (int)i;
	if (found < 0) {
		*pfn = NULL;
		return CUDA_ERROR_NOT_FOUND;
	}
	*pfn = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM ? procs[found].ptsz : procs[found].fn;
	return 0;
}

/* --- what tests read ---------------------------------------------------------- */

int fakecuda_last(uint32_t out[5]);

/* fakecuda_launch runs one launch with a descriptor of the given version
 * on the default stream, as the launch entry points do. out[0..3] receive
 * the four Hopper mask words (or the two Volta words in out[0..1]), out[4]
 * the enable bit. Returns 1 if the callback ran. */
int fakecuda_launch(int version, uint32_t out[5])
{
	fake_launch(version, 0, NULL, 1, NULL);
	return fakecuda_last(out);
}

/* fakecuda_bare is the number of launches no callback saw. */
int fakecuda_bare(void)
{
	return __atomic_load_n(&bare, __ATOMIC_RELAXED);
}

/* fakecuda_last copies what the last launch's callback left in its
 * descriptor; returns 1 if a callback ran for it. */
int fakecuda_last(uint32_t out[5])
{
	pthread_mutex_lock(&mu);
	memcpy(out, last_mask, sizeof last_mask);
	int called = last_called;
	pthread_mutex_unlock(&mu);
	return called;
}
