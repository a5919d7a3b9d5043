/*
 * slice_code.c: what slicing (slice.c, which says how it works) knows of
 * each function and context, and what it does with a function's code:
 * the tables of functions, contexts and copies; each context's module of
 * slice_ptx.h's kernels, its stream and the copies' memory; a function's
 * code scanned for its length, and copied behind the prologue; the
 * driver's functions slicing calls itself, found at load.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"
#include "slice_ptx.h"

#define SCAN_BYTES (1u << 20) /* no end marker within this: never cut */

/* The prologue, sm_90 (descriptor version 0x40 is Hopper's): `if
 * (blockIdx.x < S) return;` as nvcc compiles it, S2R R0, SR_CTAID.X;
 * ISETP.GE.U32.AND P0, PT, R0, S, PT; @!P0 EXIT; then NOPs to 128 bytes,
 * with S at bit PRO_IMM_BIT (experiments/slicing/prologue.py's output on
 * the H100, results/h100-580.159.04-2026-11-24/slicing/prologue.txt). */
#define PRO_IMM_BIT 160
static const char prologue_hex[] =
	"19790000000000000025000000240e00" /* S2R R0, SR_CTAID.X */
	"0c780000a5a505007060f00300da1f00" /* ISETP.GE.U32.AND P0, PT, R0, S, PT */
	"4d890000000000000000800300ea0f00" /* @!P0 EXIT */
	"18790000000000000000000000c00f00" "18790000000000000000000000c00f00" "18790000000000000000000000c00f00"
	"18790000000000000000000000c00f00" "18790000000000000000000000c00f00";
static uint8_t pro_bytes[PRO_BYTES];

#define SLOT_ALIGN 4096
#define CHUNK_BYTES (4u << 20)
#define ARENA_BYTES (256u << 20) /* copies' memory per context at most */

/* the driver's functions slicing calls itself (all of them found, or
 * nothing is cut) */
struct carve_slice_drv carve_slice_drv;
int carve_slice_usable; /* the driver has them all */

/* Slicing's own driver calls (a query, a synchronization, a module load,
 * an allocation) would end a capture in global mode, as PyTorch's are,
 * begun on any thread meanwhile: no slicing work is begun while a capture
 * is under way (carve_tide_capturing), and the calls are made in relaxed
 * mode, for a capture begun after that check. carve_slice_own() puts this thread in
 * relaxed mode before the first of them in a launch, carve_slice_own_end() puts its
 * mode back at the launch's end. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	int on, mode;
} relaxed;

void carve_slice_own(void)
{
	int m = CU_STREAM_CAPTURE_MODE_RELAXED;
	if (!relaxed.on && carve_slice_drv.exchange_mode && carve_slice_drv.exchange_mode(&m) == CUDA_SUCCESS)
		relaxed.on = 1, relaxed.mode = m;
}

void carve_slice_own_end(void)
{
	if (relaxed.on) {
		carve_slice_drv.exchange_mode(&relaxed.mode);
		relaxed.on = 0;
	}
}

/* --- the tables: functions, contexts, copies (under carve_slice_mu) ---------- */

pthread_mutex_t carve_slice_mu = PTHREAD_MUTEX_INITIALIZER;

struct carve_slice_fn carve_slice_fns[CARVE_SLICE_FNS];
static unsigned nfns;

struct carve_slice_ctx carve_slice_ctxs[CARVE_SLICE_CTXS];
int carve_slice_pending;          /* timing pairs recorded, not read (changed under tmu) */
uint64_t carve_slice_harvested;   /* the coarse clock when pairs were last read */
pthread_mutex_t carve_slice_tmu = PTHREAD_MUTEX_INITIALIZER; /* the timing pairs; taken before mu */

static struct carve_slice_copy copies[CARVE_SLICE_COPIES];
unsigned carve_slice_ncopies;

static unsigned hash2(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
	return (unsigned)(h ^ h >> 29);
}

/* carve_slice_fn_find finds or makes (under mu) the entry of f in ctx; -1 if full */
int carve_slice_fn_find(CUcontext ctx, CUfunction f)
{
	unsigned i = hash2((uintptr_t)ctx, (uintptr_t)f) % CARVE_SLICE_FNS;
	for (unsigned n = 0; n < CARVE_SLICE_FNS; n++, i = (i + 1) % CARVE_SLICE_FNS) {
		if (carve_slice_fns[i].f == f && carve_slice_fns[i].ctx == ctx)
			return (int)i;
		if (!carve_slice_fns[i].f) {
			if (nfns >= CARVE_SLICE_FNS * 3 / 4)
				return -1;
			nfns++;
			carve_slice_fns[i] = (struct carve_slice_fn){.ctx = ctx, .f = f, .state = SLICE_EMPTY};
			return (int)i;
		}
	}
	return -1;
}

struct carve_slice_copy *carve_slice_copy_find(unsigned fn, unsigned s)
{
	unsigned i = hash2(fn, s) % CARVE_SLICE_COPIES;
	for (unsigned n = 0; n < CARVE_SLICE_COPIES; n++, i = (i + 1) % CARVE_SLICE_COPIES)
		if (!copies[i].fn || (copies[i].fn == fn + 1 && copies[i].s == s))
			return &copies[i];
	return NULL;
}

void carve_slice_set_state(int i, int state)
{
	pthread_mutex_lock(&carve_slice_mu);
	carve_slice_fns[i].state = state;
	pthread_mutex_unlock(&carve_slice_mu);
}

void carve_slice_never(int i, const char *why)
{
	carve_slice_set_state(i, SLICE_NEVER);
	CARVE_DEBUG("slice: function %p never cut: %s", carve_slice_fns[i].f, why);
}

void carve_slice_context_gone(CUcontext c)
{
	if (!c)
		return;
	pthread_mutex_lock(&carve_slice_tmu);
	pthread_mutex_lock(&carve_slice_mu);
	for (unsigned i = 0; i < CARVE_SLICE_FNS; i++)
		if (carve_slice_fns[i].ctx == c && carve_slice_fns[i].f)
			carve_slice_fns[i].state = SLICE_NEVER; /* kept: the table is probed past it */
	for (int i = 0; i < CARVE_SLICE_CTXS; i++) {
		if (carve_slice_ctxs[i].ctx != c)
			continue;
		carve_slice_ctxs[i].state = -1;
		for (int k = 0; k < CARVE_SLICE_TIMES; k++) { /* its events went with it */
			__atomic_sub_fetch(&carve_slice_pending, carve_slice_ctxs[i].times[k].busy == 2, __ATOMIC_RELAXED);
			carve_slice_ctxs[i].times[k] = (struct carve_slice_timing){0};
		}
	}
	pthread_mutex_unlock(&carve_slice_mu);
	pthread_mutex_unlock(&carve_slice_tmu);
}

/* --- per context: the module (slice_ptx.h's kernels), stream and memory ----- */

static char ptx[8192];

/* carve_slice_ctx_entry finds or makes (under mu) context c's entry; NULL if full */
struct carve_slice_ctx *carve_slice_ctx_entry(CUcontext c)
{
	for (int i = 0; i < CARVE_SLICE_CTXS; i++) {
		if (carve_slice_ctxs[i].ctx == c)
			return &carve_slice_ctxs[i];
		if (!carve_slice_ctxs[i].ctx) {
			carve_slice_ctxs[i].ctx = c;
			return &carve_slice_ctxs[i];
		}
	}
	return NULL;
}

/* carve_slice_ctx_ready returns the context's entry, set up on first use; NULL if it
 * cannot be. No lock across the driver's calls: the entry is marked
 * "being set up" meanwhile, and launches find it so and go whole. */
struct carve_slice_ctx *carve_slice_ctx_ready(CUcontext c)
{
	pthread_mutex_lock(&carve_slice_mu);
	struct carve_slice_ctx *e = carve_slice_ctx_entry(c);
	int go = e && e->state == 0;
	if (go)
		e->state = 1;
	int state = e ? e->state : -1;
	pthread_mutex_unlock(&carve_slice_mu);
	if (!go)
		return state == 2 ? e : NULL;
	carve_slice_own();
	CUmodule m;
	CUfunction scan = NULL, copy = NULL;
	CUstream own = NULL;
	CUdeviceptr result = 0;
	const char *what = "loading its PTX";
	CUresult r = carve_slice_drv.module_load(&m, ptx, 0, NULL, NULL);
	if (r == CUDA_SUCCESS && (what = "its scan kernel", r = carve_slice_drv.module_function(&scan, m, "carve_slice_scan")) == CUDA_SUCCESS &&
	    (what = "its copy kernel", r = carve_slice_drv.module_function(&copy, m, "carve_slice_copy")) == CUDA_SUCCESS &&
	    (what = "its stream", r = carve_slice_drv.stream_create(&own, CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS)
		what = "its scan buffer", r = carve_mem_alloc_own(carve_slice_drv.mem_alloc, &result, 8);
	pthread_mutex_lock(&carve_slice_mu);
	if (r == CUDA_SUCCESS)
		e->scan = scan, e->copy = copy, e->own = own, e->result = result, e->state = 2;
	else
		e->state = -1;
	pthread_mutex_unlock(&carve_slice_mu);
	if (r != CUDA_SUCCESS) {
		carve_say("slicing in context %p: %s failed (%d); its kernels go whole", c, what, r);
		return NULL;
	}
	return e;
}

/* carve_slice_slot reserves a copy's place in the context's memory, with a 4 KiB gap
 * after it (code fetched ahead of a copy is no later copy's): a new chunk
 * when the current one is full, allocated outside the lock. 0 if over
 * ARENA_BYTES or the memory limit: a chunk's room that a launch reserved
 * before then stays unused, so no more is lost than the chunk, already
 * charged. */
CUdeviceptr carve_slice_slot(struct carve_slice_ctx *e, size_t len)
{
	size_t need = (len + 2 * SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
	if (need > CHUNK_BYTES)
		return 0;
	for (;;) {
		pthread_mutex_lock(&carve_slice_mu);
		if (e->chunk && e->used + need <= CHUNK_BYTES) {
			CUdeviceptr at = e->chunk + e->used;
			e->used += need;
			pthread_mutex_unlock(&carve_slice_mu);
			return at;
		}
		int over = e->total + CHUNK_BYTES > ARENA_BYTES;
		pthread_mutex_unlock(&carve_slice_mu);
		CUdeviceptr c = 0;
		carve_slice_own();
		if (over || carve_mem_alloc_own(carve_slice_drv.mem_alloc, &c, CHUNK_BYTES) != CUDA_SUCCESS)
			return 0;
		pthread_mutex_lock(&carve_slice_mu);
		e->chunk = c; /* the rest of the old chunk is left unused */
		e->used = 0;
		e->total += CHUNK_BYTES;
		pthread_mutex_unlock(&carve_slice_mu);
	}
}

/* --- a function's code: its address, its length, its copies -------------------- */

/* attr reads attribute a of function f, or of the CUkernel f may be */
static CUresult attr(int *v, int a, CUfunction f)
{
	CUresult r = carve_slice_drv.func_attr(v, a, f);
	CUdevice d;
	if (r != CUDA_SUCCESS && carve_slice_drv.kernel_attr && carve_slice_drv.ctx_device && carve_slice_drv.ctx_device(&d) == CUDA_SUCCESS)
		r = carve_slice_drv.kernel_attr(v, a, f, d);
	return r;
}

/* carve_slice_compile_time_cluster: does f carry cluster dimensions of its own? -1:
 * unknown */
int carve_slice_compile_time_cluster(CUfunction f)
{
	int w = 0, h = 0, d = 0, must = 0;
	if (attr(&w, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f) != CUDA_SUCCESS ||
	    attr(&h, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f) != CUDA_SUCCESS ||
	    attr(&d, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f) != CUDA_SUCCESS)
		return -1;
	attr(&must, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, f);
	return must || w > 1 || h > 1 || d > 1;
}

/* shim_launch launches one of slicing's own kernels, holding the
 * callbacks (tools.c) as a tenant's launch is held (drive): its mask is
 * written as any kernel's */
static CUresult shim_launch(CUfunction f, unsigned blocks, unsigned threads, CUstream s, void **args)
{
	carve_tools_hold(1);
	CUresult r = carve_slice_drv.launch(f, blocks, 1, 1, threads, 1, 1, 0, s, args, NULL);
	carve_tools_hold(0);
	return r;
}

/* carve_slice_scan measures function i's code on slicing's own stream and waits;
 * the caller set e->scanning, which it clears */
void carve_slice_scan(int i, struct carve_slice_ctx *e)
{
	CUdeviceptr src = carve_slice_fns[i].program;
	unsigned bound = SCAN_BYTES;
	unsigned long long mlo = END_MARK_LO, mhi = END_MARK_HI, mask = CONTROL_MASK, nlo = NOP_LO, nhi = NOP_HI;
	void *args[] = {&src, &e->result, &bound, &mlo, &mhi, &mask, &nlo, &nhi};
	uint32_t out[2] = {0, 0};
	carve_slice_own();
	CUresult r = shim_launch(e->scan, 1, 32, e->own, args);
	if (r == CUDA_SUCCESS)
		r = carve_slice_drv.dtoh(out, e->result, sizeof out, e->own);
	if (r == CUDA_SUCCESS)
		r = carve_slice_drv.stream_sync(e->own);
	pthread_mutex_lock(&carve_slice_mu);
	e->scanning = 0;
	pthread_mutex_unlock(&carve_slice_mu);
	if (r != CUDA_SUCCESS)
		carve_slice_never(i, "the scan of its code failed");
	else if (!out[0])
		carve_slice_never(i, "no end marker in its code");
	else if (out[1])
		carve_slice_never(i, "the end marker is not followed by NOPs to a 128-byte boundary");
	else if (out[0] % 16)
		carve_slice_never(i, "its code's length is not whole instructions");
	else {
		pthread_mutex_lock(&carve_slice_mu);
		carve_slice_fns[i].len = out[0];
		carve_slice_fns[i].state = SLICE_READY;
		pthread_mutex_unlock(&carve_slice_mu);
		__atomic_add_fetch(&carve_block->slice_fns, 1, __ATOMIC_RELAXED);
	}
}

/* carve_slice_make_copy writes prologue(s) + function i's code into slot at (slot)
 * on stream, after what is on it, and records an event after it, into
 * *out; it keeps the copy for later launches if the table has room. A
 * CUresult: CUDA_SUCCESS, or why it could not. */
CUresult carve_slice_make_copy(int i, struct carve_slice_ctx *e, unsigned s, CUdeviceptr at, CUstream stream, struct carve_slice_copy *out)
{
	uint32_t len = carve_slice_fns[i].len;
	uint8_t pro[PRO_BYTES];
	memcpy(pro, pro_bytes, sizeof pro);
	memcpy(pro + PRO_IMM_BIT / 8, &s, sizeof s); /* a byte-aligned 32-bit immediate */
	unsigned long long w[PRO_WORDS];
	memcpy(w, pro, sizeof w);
	CUdeviceptr src = carve_slice_fns[i].program;
	unsigned words = len / 8;
	void *args[3 + PRO_WORDS] = {&src, &at, &words};
	for (int k = 0; k < PRO_WORDS; k++)
		args[3 + k] = &w[k];
	unsigned blocks = (words + 255) / 256;
	CUevent ev = NULL;
	carve_slice_own();
	CUresult r = shim_launch(e->copy, blocks > 64 ? 64 : blocks ? blocks : 1, 256, stream, args);
	if (r == CUDA_SUCCESS)
		r = carve_slice_drv.event_create(&ev, CU_EVENT_DISABLE_TIMING);
	if (r == CUDA_SUCCESS)
		r = carve_slice_drv.event_record(ev, stream);
	if (r != CUDA_SUCCESS)
		return r;
	*out = (struct carve_slice_copy){(unsigned)i + 1, s, at, ev, 0};
	pthread_mutex_lock(&carve_slice_mu);
	struct carve_slice_copy *c = carve_slice_copy_find((unsigned)i, s);
	if (c && !c->fn && carve_slice_ncopies < CARVE_SLICE_COPIES * 3 / 4) {
		carve_slice_ncopies++;
		*c = *out;
	}
	pthread_mutex_unlock(&carve_slice_mu);
	return CUDA_SUCCESS;
}

/* carve_slice_ready_on makes stream s wait for copy c of function i, unless it was
 * seen written (a stream's handle may name another stream by now, so
 * being made on the same one proves nothing) */
CUresult carve_slice_ready_on(int i, struct carve_slice_copy *c, CUstream s)
{
	if (c->seen)
		return CUDA_SUCCESS;
	carve_slice_own();
	CUresult r = carve_slice_drv.event_query(c->done);
	if (r == CUDA_SUCCESS) {
		pthread_mutex_lock(&carve_slice_mu);
		struct carve_slice_copy *t = carve_slice_copy_find((unsigned)i, c->s);
		if (t && t->fn == (unsigned)i + 1)
			t->seen = 1;
		pthread_mutex_unlock(&carve_slice_mu);
		return r;
	}
	return carve_slice_drv.stream_wait(s, c->done, 0);
}

/* --- at load -------------------------------------------------------------------- */

void carve_slice_init(void *cuda)
{
	for (int k = 0; k < PRO_BYTES; k++)
		sscanf(prologue_hex + 2 * k, "%2hhx", &pro_bytes[k]);
	slice_ptx(ptx, sizeof ptx, "carve_slice");
	void **need[] = {(void **)&carve_slice_drv.module_load, (void **)&carve_slice_drv.module_function, (void **)&carve_slice_drv.mem_alloc,
			 (void **)&carve_slice_drv.stream_create, (void **)&carve_slice_drv.stream_sync, (void **)&carve_slice_drv.dtoh, (void **)&carve_slice_drv.func_attr,
			 (void **)&carve_slice_drv.event_create, (void **)&carve_slice_drv.event_record, (void **)&carve_slice_drv.event_query, (void **)&carve_slice_drv.elapsed,
			 (void **)&carve_slice_drv.stream_wait, (void **)&carve_slice_drv.capturing, (void **)&carve_slice_drv.occupancy, (void **)&carve_slice_drv.ctx_device,
			 (void **)&carve_slice_drv.dev_attr, (void **)&carve_slice_drv.launch};
	static const char *const names[] = {"cuModuleLoadDataEx", "cuModuleGetFunction", "cuMemAlloc_v2",
					    "cuStreamCreate", "cuStreamSynchronize", "cuMemcpyDtoHAsync_v2",
					    "cuFuncGetAttribute", "cuEventCreate", "cuEventRecord", "cuEventQuery",
					    "cuEventElapsedTime", "cuStreamWaitEvent", "cuStreamIsCapturing",
					    "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuCtxGetDevice",
					    "cuDeviceGetAttribute", "cuLaunchKernel"};
	carve_slice_usable = 1;
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
		if (!(*need[k] = carve_real_dlsym(cuda, names[k])))
			carve_slice_usable = 0;
	carve_slice_drv.kernel_attr = carve_real_dlsym(cuda, "cuKernelGetAttribute");
	carve_slice_drv.kernel_function = carve_real_dlsym(cuda, "cuKernelGetFunction");
	carve_slice_drv.exchange_mode = carve_real_dlsym(cuda, "cuThreadExchangeStreamCaptureMode");
	if (!carve_slice_usable && carve_block && carve_block->slice_us)
		carve_say("the driver lacks what slicing needs: kernels go whole");
}

