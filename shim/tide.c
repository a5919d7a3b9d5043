/*
 * tide.c: latency-sensitive (LS) and best-effort (BE) tenants sharing the
 * GPU through the node block (carve_node.h).
 *
 * Each launch passes through here (carve_launch_before and _after, around
 * the driver's call; carve_tide_mask in the launch callback): an LS
 * tenant's is counted in its stream and marks the tenant busy (tide_ls.c,
 * whose poller finds the streams done), a BE tenant's waits at its gate
 * (tide_be.c: its share, its bounded queue), each in the node block of the
 * launch's GPU, where carve seats the LS tenants (tide_node.c). This file also
 * joins the nodes at load (carve_tide_init).
 *
 * Waiting happens in the launch wrappers, outside the driver, never in its
 * callback.
 *
 * All of it is per GPU: a tenant with partitions on several GPUs takes
 * part in each GPU's node block (the block names one for each of its
 * GPUs), and a launch goes through the node of the GPU its context is on
 * (gpu.c). An LS tenant has a seat in each node and is busy on a GPU while
 * its streams there have work; a BE tenant's gate, share, queue and kernel
 * time are kept for each GPU, so LS work on one GPU holds back its BE
 * launches on that GPU alone.
 */
#define _GNU_SOURCE
#include <string.h>

#include "carve_node.h"
#include "carve_tmd.h"
#include "shim.h"

/* the GPU of this thread's launch, set by the wrapper before it and
 * cleared after it (tide's GPU index, CARVE_GPU_NONE: none in tide, or no
 * launch under way): a callback outside a launch (a graph's instantiation,
 * the tenant's or graph.c's) is no launch the gate narrowed */
static __thread __attribute__((tls_model("initial-exec"))) int launch_gpu = CARVE_GPU_NONE;
static __thread __attribute__((tls_model("initial-exec"))) CUcontext launch_ctx; /* and its context */

int carve_tide_ls_active(CUcontext *ctx)
{
	*ctx = NULL;
	if (carve_tide_cls != CARVE_CLASS_BE || launch_gpu < 0 || !carve_tide_gpus[launch_gpu].be)
		return -1;
	*ctx = launch_ctx;
	uint64_t newest = 0;
	int busy = carve_tide_ls_busy(launch_gpu, NULL, &newest, NULL, NULL);
	return carve_tide_active(busy, newest, busy ? 0 : carve_coarse_ns());
}

/* --- what the wrappers and the callback call ------------------------------ */

static void tide_before(int g, CUstream s, CUcontext ctx, int compute);

/* the context of this thread's launch, where a bandwidth share gates it */
static __thread __attribute__((tls_model("initial-exec"))) CUcontext bw_ctx;
/* this thread's launch in the kernel table (kern.c): its entry (NULL:
 * none), and whether its end counts it (a sliced launch's first piece's) */
static __thread __attribute__((tls_model("initial-exec"))) const struct carve_kern_entry *launch_kern;
static __thread __attribute__((tls_model("initial-exec"))) int launch_counted;

void carve_launch_before(CUstream s, CUfunction f, int whole)
{
	int compute = 0;
	if (carve_kern_on) {
		launch_kern = carve_kern_find(f);
		launch_counted = whole;
		compute = launch_kern && (launch_kern->flags & CARVE_KERN_COMPUTE);
	}
	CUcontext ctx = NULL;
	int g = carve_launch_begin(carve_tide_cls || carve_bw_on ? &ctx : NULL);
	if (carve_tide_cls)
		tide_before(g, s, ctx, compute);
	if (carve_bw_on) { /* after tide's gate, which may hold it long: its slot is kept to the microsecond */
		bw_ctx = ctx;
		carve_bw_launch_before(g, s, ctx);
	}
}

static void tide_before(int g, CUstream s, CUcontext ctx, int compute)
{
	if (g < 0 || !carve_tide_gpus[g].node) {
		launch_gpu = CARVE_GPU_NONE; /* a GPU outside tide */
		return;
	}
	launch_gpu = g;
	launch_ctx = ctx;
	if (carve_tide_cls == CARVE_CLASS_LS)
		carve_tide_ls_launch(g, s, ctx);
	else
		carve_tide_be_launch_before(g, compute);
}

void carve_launch_after(CUstream s, CUresult r)
{
	carve_launch_end();
	if (launch_counted) {
		if (r == CUDA_SUCCESS)
			carve_kern_count(launch_kern);
		launch_counted = 0;
	}
	if (carve_bw_on)
		carve_bw_launch_after(s, bw_ctx, r);
	if (!carve_tide_cls)
		return;
	int g = launch_gpu;
	launch_gpu = CARVE_GPU_NONE;
	if (carve_tide_cls == CARVE_CLASS_LS)
		carve_tide_ls_submitted();
	else if (g >= 0 && r == CUDA_SUCCESS)
		carve_tide_be_launch_after(g, s);
}

void carve_tide_mask(int g, uint32_t mask[CARVE_MASK_WORDS], const uint32_t live[CARVE_MASK_WORDS])
{
	if (!carve_tide_cls || g < 0 || g >= carve_tide_ngpus || !carve_tide_gpus[g].node)
		return;
	uint32_t off[4] = {0, 0, 0, 0}, m[4];
	if (carve_tide_cls == CARVE_CLASS_LS) {
		if ((carve_block->flags & CARVE_FLAG_LS_OWN) || !carve_tide_gpus[g].proc)
			return;
		/* its own TPCs and every live one that no other LS tenant
		 * reserved and no partition outside tide holds */
		carve_tide_ls_off(g, off);
		for (int w = 0; w < 4; w++) {
			uint32_t own = ~mask[w] & live[w];
			m[w] = (off[w] & ~own) | ~live[w];
		}
	} else if (launch_gpu != g || !carve_tide_be_narrowed(g, mask, live, m)) {
		return; /* BE, not narrowed (or too few TPCs left: the busy LS
			 * tenants may have changed since carve_tide_be_launch_before looked) */
	}
	if (carve_mask_enables_live(m, live))
		memcpy(mask, m, sizeof m);
}

/* --- joining the nodes ------------------------------------------------------ */

void carve_tide_init(void *cuda, const char *dir)
{
	struct carve_ctl *c = carve_block;
	uint32_t k = c->tenant_class;
	if ((k != CARVE_CLASS_LS && k != CARVE_CLASS_BE) || !c->node[0])
		return;
	carve_tide_be_init(cuda);
	if (!carve_tide_ls_init(cuda) && k == CARVE_CLASS_LS) {
		carve_say("the driver lacks stream queries: running as an ordinary partitioned tenant");
		return;
	}
	carve_tide_ngpus = carve_gpus();
	int in = 0;
	for (int g = 0; g < carve_tide_ngpus; g++) {
		char name[64];
		if (!carve_tide_join(g, dir, k == CARVE_CLASS_LS, name))
			continue;
		if (k == CARVE_CLASS_BE)
			carve_tide_be_join(g);
		CARVE_DEBUG("tide: %s tenant on node %s", k == CARVE_CLASS_LS ? "LS" : "BE", name);
		in++;
	}
	if (!in)
		return;
	if (k == CARVE_CLASS_LS && !carve_tide_ls_start()) {
		carve_say("the LS poller thread could not start: running as an ordinary partitioned tenant");
		carve_tide_leave();
		return;
	}
	carve_tide_guard();
	__atomic_store_n(&c->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
	carve_tide_cls = (int)k;
}
