/*
 * gpu.c: which GPU a launch is on. The block names the GPU its mask is of
 * (gpu, a UUID; carve_ctl.h); a launch is on the device of the launching
 * thread's current context, the one the driver launches in. A mask made
 * for one GPU may enable only dead TPCs of another, and a kernel launched
 * so never runs (HARDWARE.md 2), so hook.c writes no mask into a launch
 * elsewhere.
 *
 * A context is looked up once (cuCtxGetDevice, cuDeviceGetUuid_v2) and
 * remembered, in a table for the process and by each thread for its last
 * one: a launch costs one cuCtxGetCurrent and a compare. A context that
 * goes (cuCtxDestroy, a primary context released or reset; interpose.c)
 * empties the table, since its handle may come back for another GPU. A
 * block that names no GPU (made by an older carve, or by a test) costs
 * nothing: every launch is taken to be on its GPU, as before.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

typedef CUresult (*ctx_current_fn)(CUcontext *);
typedef CUresult (*ctx_device_fn)(CUdevice *);
typedef CUresult (*device_uuid_fn)(unsigned char *, CUdevice);

static ctx_current_fn ctx_current;
static ctx_device_fn ctx_device;
static device_uuid_fn device_uuid;
static unsigned char ours[16];
static int checking; /* the block names its GPU and the driver can say a context's */

#define CONTEXTS 64
static struct known {
	CUcontext ctx;
	int other;
	unsigned char uuid[16];
} known[CONTEXTS];
static int nknown;
static pthread_mutex_t known_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t known_gen = 1; /* moves when a context goes */

/* this thread's last context, while known_gen stays t_gen */
static __thread __attribute__((tls_model("initial-exec"))) CUcontext t_ctx;
static __thread __attribute__((tls_model("initial-exec"))) uint64_t t_gen;
static __thread __attribute__((tls_model("initial-exec"))) int t_other;
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
	memcpy(ours, (const void *)carve_block->gpu, sizeof ours);
	if (memcmp(ours, none, sizeof ours) == 0)
		return; /* not known: masks go into launches on any GPU, as before */
	ctx_current = (ctx_current_fn)carve_real_dlsym(cuda, "cuCtxGetCurrent");
	ctx_device = (ctx_device_fn)carve_real_dlsym(cuda, "cuCtxGetDevice");
	/* _v2 gives a MIG instance's own UUID, as carve's topology has it */
	device_uuid = (device_uuid_fn)carve_real_dlsym(cuda, "cuDeviceGetUuid_v2");
	if (!device_uuid)
		device_uuid = (device_uuid_fn)carve_real_dlsym(cuda, "cuDeviceGetUuid");
	if (!ctx_current || !ctx_device || !device_uuid) {
		carve_say("the driver cannot say which GPU a context is on: the partition's mask goes into launches on any GPU");
		return;
	}
	checking = 1;
}

/* lookup says whether the current context, ctx, is on another GPU (1, its
 * UUID in uuid) or ours (0); -1 when the driver cannot say. Under known_mu. */
static int lookup(CUcontext ctx, unsigned char uuid[16])
{
	for (int i = 0; i < nknown; i++) {
		if (known[i].ctx == ctx) {
			memcpy(uuid, known[i].uuid, 16);
			return known[i].other;
		}
	}
	CUdevice dev;
	if (ctx_device(&dev) != CUDA_SUCCESS || device_uuid(uuid, dev) != CUDA_SUCCESS)
		return -1;
	int other = memcmp(uuid, ours, sizeof ours) != 0;
	if (nknown < CONTEXTS) {
		known[nknown].ctx = ctx;
		known[nknown].other = other;
		memcpy(known[nknown].uuid, uuid, 16);
		nknown++;
	}
	return other;
}

int carve_launch_elsewhere(unsigned char uuid[16])
{
	if (!checking)
		return 0;
	CUcontext ctx = NULL;
	if (ctx_current(&ctx) != CUDA_SUCCESS || !ctx)
		return 0; /* no context: the driver launches nothing */
	uint64_t g = __atomic_load_n(&known_gen, __ATOMIC_ACQUIRE);
	if (ctx != t_ctx || g != t_gen) {
		pthread_mutex_lock(&known_mu);
		int other = lookup(ctx, t_uuid);
		g = known_gen;
		pthread_mutex_unlock(&known_mu);
		if (other < 0) {
			t_ctx = NULL; /* asked again at the next launch */
			return 0;
		}
		t_ctx = ctx, t_gen = g, t_other = other;
	}
	if (t_other)
		memcpy(uuid, t_uuid, 16);
	return t_other;
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
