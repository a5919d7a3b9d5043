/*
 * gpu.c: which of the tenant's GPUs a launch is on. The block names the
 * GPU of each of its partitions (gpu, and each entry of more: a UUID;
 * carve_ctl.h); a launch is on the device of the launching thread's
 * current context, the one the driver launches in. A mask made for one
 * GPU may enable only dead TPCs of another, and a kernel launched so never
 * runs (HARDWARE.md 2), so hook.c writes into each launch the mask of its
 * own GPU, and none into a launch on a GPU the block names no partition on.
 *
 * A context is looked up once (cuCtxGetDevice, cuDeviceGetUuid_v2, the
 * UUID found among the block's) and remembered, in a table for the process
 * and by each thread for its last one: a launch costs one cuCtxGetCurrent
 * and a compare. A context that goes (cuCtxDestroy, a primary context
 * released or reset; interpose.c) empties the table, since its handle may
 * come back for another GPU. Devices are matched by UUID, so a program
 * that sees the GPUs in another order (CUDA_VISIBLE_DEVICES) finds each
 * its own partition. A block that names no GPU (made by an older carve, or
 * by a test) costs nothing: every launch is taken to be on its one GPU, as
 * before.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "carve_tmd.h"
#include "shim.h"

typedef CUresult (*ctx_current_fn)(CUcontext *);
typedef CUresult (*ctx_device_fn)(CUdevice *);
typedef CUresult (*device_uuid_fn)(unsigned char *, CUdevice);

static ctx_current_fn ctx_current;
static ctx_device_fn ctx_device;
static device_uuid_fn device_uuid;
static unsigned char ours[CARVE_GPUS][16]; /* the block's GPUs, by index */
static int ngpus = 1;
static int checking; /* the block names its GPUs and the driver can say a context's */

#define CONTEXTS 64
static struct known {
	CUcontext ctx;
	int gpu;
	unsigned char uuid[16];
} known[CONTEXTS];
static int nknown;
static pthread_mutex_t known_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t known_gen = 1; /* moves when a context goes */

/* the block's GPU of each device ordinal, +2 (0: not looked up yet) */
#define DEVICES 64
static int device_gpu[DEVICES];

/* this thread's last context, while known_gen stays t_gen */
static __thread __attribute__((tls_model("initial-exec"))) CUcontext t_ctx;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t t_gen;
static __thread __attribute__((tls_model("initial-exec"))) int t_gpu;
static __thread __attribute__((tls_model("initial-exec"))) unsigned char t_uuid[16];

void carve_gpu_name(const unsigned char uuid[16], char out[CARVE_GPU_NAME])
{
	const unsigned char *u = uuid;
	snprintf(out, CARVE_GPU_NAME,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

void carve_gpu_init(void *cuda)
{
	static const unsigned char none[16];
	ctx_current = (ctx_current_fn)carve_real_dlsym(cuda, "cuCtxGetCurrent");
	memcpy(ours[0], (const void *)carve_block->gpu, 16);
	if (memcmp(ours[0], none, 16) == 0)
		return; /* not known: masks go into launches on any GPU, as before */
	for (int i = 1; i < CARVE_GPUS; i++) {
		const void *u = (const void *)carve_block->more[i - 1].gpu;
		if (memcmp(u, none, 16) == 0)
			break;
		memcpy(ours[ngpus++], u, 16);
	}
	ctx_device = (ctx_device_fn)carve_real_dlsym(cuda, "cuCtxGetDevice");
	/* _v2 gives a MIG instance's own UUID, as carve's topology has it */
	device_uuid = (device_uuid_fn)carve_real_dlsym(cuda, "cuDeviceGetUuid_v2");
	if (!device_uuid)
		device_uuid = (device_uuid_fn)carve_real_dlsym(cuda, "cuDeviceGetUuid");
	if (!ctx_current || !ctx_device || !device_uuid) {
		carve_say("the driver cannot say which GPU a context is on: the partition of %s goes into launches on any GPU",
			  ngpus > 1 ? "the first GPU" : "its GPU");
		ngpus = 1;
		return;
	}
	checking = 1;
}

int carve_gpus(void)
{
	return ngpus;
}

/* gpu_of is the index of the block's GPU of uuid, or CARVE_GPU_NONE. */
static int gpu_of(const unsigned char uuid[16])
{
	for (int i = 0; i < ngpus; i++)
		if (memcmp(uuid, ours[i], 16) == 0)
			return i;
	return CARVE_GPU_NONE;
}

/* lookup says which of the block's GPUs the current context, ctx, is on
 * (CARVE_GPU_NONE: one it names none on, its UUID in uuid); -2 when the
 * driver cannot say. Under known_mu. */
static int lookup(CUcontext ctx, unsigned char uuid[16])
{
	for (int i = 0; i < nknown; i++) {
		if (known[i].ctx == ctx) {
			memcpy(uuid, known[i].uuid, 16);
			return known[i].gpu;
		}
	}
	CUdevice dev;
	if (ctx_device(&dev) != CUDA_SUCCESS || device_uuid(uuid, dev) != CUDA_SUCCESS)
		return -2;
	int gpu = gpu_of(uuid);
	if (nknown < CONTEXTS) {
		known[nknown].ctx = ctx;
		known[nknown].gpu = gpu;
		memcpy(known[nknown].uuid, uuid, 16);
		nknown++;
	}
	return gpu;
}

int carve_launch_gpu(unsigned char uuid[16], CUcontext *current)
{
	CUcontext ctx = NULL;
	if (!checking) {
		if (current) {
			if (!ctx_current || ctx_current(&ctx) != CUDA_SUCCESS)
				ctx = NULL;
			*current = ctx;
		}
		return 0;
	}
	if (ctx_current(&ctx) != CUDA_SUCCESS)
		ctx = NULL;
	if (current)
		*current = ctx;
	if (!ctx)
		return 0; /* no context: the driver launches nothing */
	uint64_t g = __atomic_load_n(&known_gen, __ATOMIC_ACQUIRE);
	if (ctx != t_ctx || g != t_gen) {
		pthread_mutex_lock(&known_mu);
		int gpu = lookup(ctx, t_uuid);
		g = known_gen;
		pthread_mutex_unlock(&known_mu);
		if (gpu == -2) {
			t_ctx = NULL; /* asked again at the next launch */
			return 0;
		}
		t_ctx = ctx, t_gen = g, t_gpu = gpu;
	}
	if (t_gpu == CARVE_GPU_NONE && uuid)
		memcpy(uuid, t_uuid, 16);
	return t_gpu;
}

/* The launch under way on this thread: the wrappers look its GPU up
 * before the driver's call (carve_launch_begin), so that the launch
 * callback asks the driver nothing. A driver call made from inside the
 * callback is, to CUPTI, an API call nested in the launch: under carve run
 * torch.profiler then recorded no kernel. */
static __thread __attribute__((tls_model("initial-exec"))) int t_pending; /* 2 + its GPU; 0: none */
static __thread __attribute__((tls_model("initial-exec"))) unsigned char t_pending_uuid[16];

int carve_launch_begin(CUcontext *ctx)
{
	int g = carve_launch_gpu(t_pending_uuid, ctx);
	t_pending = g + 2;
	return g;
}

void carve_launch_end(void)
{
	t_pending = 0;
}

/* known_gpu: the GPU of a context looked up before (a GPU the block names
 * none on: its UUID into uuid), or -2 if it is not known; no driver call. */
static int known_gpu(CUcontext ctx, unsigned char uuid[16])
{
	int gpu = -2;
	pthread_mutex_lock(&known_mu);
	for (int i = 0; i < nknown; i++) {
		if (known[i].ctx == ctx) {
			gpu = known[i].gpu;
			if (gpu == CARVE_GPU_NONE && uuid)
				memcpy(uuid, known[i].uuid, 16);
			break;
		}
	}
	pthread_mutex_unlock(&known_mu);
	return gpu;
}

/* carve_callback_gpu: the launch the wrapper began; a launch no wrapper
 * began (the driver's own, or through a function a program held from
 * before the shim) is found by the context the callback's params name,
 * among those already looked up; only a context never seen before is asked
 * of the driver there. */
int carve_callback_gpu(const void *params, unsigned char uuid[16])
{
	int p = t_pending;
	if (p) {
		if (p - 2 == CARVE_GPU_NONE && uuid)
			memcpy(uuid, t_pending_uuid, 16);
		return p - 2;
	}
	CUcontext ctx = checking ? (CUcontext)carve_params_ctx(params) : NULL;
	int g = ctx ? known_gpu(ctx, uuid) : -2;
	return g != -2 ? g : carve_launch_gpu(uuid, NULL);
}

int carve_device_gpu(CUdevice dev)
{
	if (!checking)
		return 0;
	int cached = dev >= 0 && dev < DEVICES ? __atomic_load_n(&device_gpu[dev], __ATOMIC_RELAXED) : 0;
	if (cached)
		return cached - 2;
	unsigned char uuid[16];
	if (device_uuid(uuid, dev) != CUDA_SUCCESS)
		return CARVE_GPU_NONE; /* no such device: the driver answers for it */
	int gpu = gpu_of(uuid);
	if (dev >= 0 && dev < DEVICES)
		__atomic_store_n(&device_gpu[dev], gpu + 2, __ATOMIC_RELAXED);
	return gpu;
}

void carve_contexts_changed(void)
{
	if (!checking)
		return;
	pthread_mutex_lock(&known_mu);
	nknown = 0;
	__atomic_add_fetch(&known_gen, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&known_mu);
}
