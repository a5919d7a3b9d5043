/*
 * slice.c: a BE tenant's kernel launch cut into pieces (issue 22, part 3),
 * so that while an LS tenant is active on the GPU, an LS request waits
 * behind one piece of a long BE kernel (beyond the BE's queue bound)
 * instead of the whole of it.
 *
 * When: the tenant is BE in tide with a slice_us (carve run --be --slice),
 * an LS tenant is active on the launch's GPU (tide.c's notion: busy now,
 * or it served a request in the last CARVE_NODE_QUIET_NS, the same that
 * bounds the BE's queue), and the function's measured time is over
 * slice_us. The launch then goes in pieces of whole waves of its blocks
 * (those resident at once on the partition's SMs, by the driver's
 * occupancy), each about slice_us long by the function's time a wave (at
 * most one piece a wave, and SLICE_MAX_PIECES), piece i running blocks
 * blockIdx.x in [S_i, E_i) of every row; each piece passes the BE's gate
 * (tide.c) on its own, so that a request that arrives mid-kernel holds
 * back the pieces not yet launched. A grid of one wave goes whole.
 *
 * How a piece runs only its blocks (experiments/slicing, proven on an
 * H100 with whole PyTorch steps bit-identical): the launch callback
 * (hook.c, after the mask) lowers the descriptor's GRID_WIDTH to E_i and,
 * for i > 0, points its PROGRAM_ADDRESS at a copy of the function's code
 * behind a prologue that ends every block with blockIdx.x < S_i. The copy
 * is made on the GPU by the shim's copy kernel (a kernel can read the code
 * at PROGRAM_ADDRESS; cuMemcpy cannot), its length found by the shim's
 * scan kernel (ptxas ends every function with a branch to itself and NOPs
 * to a 128-byte boundary). One copy per (function, S), in 4 KiB-aligned
 * slots never rewritten, made on the launch's stream after piece 0 (whose
 * callback checked the code is still where it was recorded) and before
 * piece 1; an event recorded after it orders a later launch's use of it
 * until the event is seen complete.
 *
 * All of it happens only while an LS tenant is active: beside an idle
 * one a BE's launch goes as with slicing off. Per function, in order:
 * its first launch goes whole and the callback records its code's
 * address and descriptor version (not 0x40, or compile-time cluster
 * dimensions: never cut); the first launch that would be cut scans the
 * code (on the shim's own stream, waited for). Its time a wave is
 * measured by an event pair around some of its launches (until it has a
 * few times, then one in SLICE_TIME_EVERY), or around the first piece of
 * a cut one, divided by the waves it ran, read without waiting at a
 * later launch (once a tick of the coarse clock at most):
 * tide's own measure (tide.c's reap) is of all the BE's kernels together,
 * by events every few launches, and cannot say which function took what.
 *
 * Always whole: cooperative launches (they never reach here),
 * launches with cluster dimensions or a cooperative, programmatic or
 * completion-event attribute, launches into a capturing stream (neither
 * timed nor recorded: an event would join the graph, and the launch runs
 * nothing then), any launch while a capture is under way in the process
 * (slicing's own calls would end a global-mode capture: none is made),
 * grids of one wave, and functions whose occupancy cannot be read or
 * whose code has no end marker.
 *
 * The callback only reads the thread's plan that the wrapper armed and
 * edits the descriptor: no driver call, no lock. The tables' lock is never
 * held across a driver call. The copies' memory is the tenant's, charged
 * to its account (mem.c); where its limit leaves no room, or the copy
 * table is full, a launch that needs a new copy goes whole.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "carve_tmd.h"
#include "shim.h"
#include "slice_ptx.h"

#define SLICE_MAX_PIECES 64
#define SLICE_TIME_FIRST 3  /* launches of a function timed first */
#define SLICE_TIME_EVERY 32 /* then one in this many */

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
static struct {
	CUresult (*module_load)(CUmodule *, const void *, unsigned, int *, void **);
	CUresult (*module_function)(CUfunction *, CUmodule, const char *);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_sync)(CUstream);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*func_attr)(int *, int, CUfunction);
	CUresult (*event_create)(CUevent *, unsigned);
	CUresult (*event_record)(CUevent, CUstream);
	CUresult (*event_query)(CUevent);
	CUresult (*elapsed)(float *, CUevent, CUevent);
	CUresult (*stream_wait)(CUstream, CUevent, unsigned);
	CUresult (*capturing)(CUstream, int *);
	CUresult (*occupancy)(int *, CUfunction, int, size_t); /* cuOccupancyMaxActiveBlocksPerMultiprocessor */
	CUresult (*ctx_device)(CUdevice *);
	CUresult (*dev_attr)(int *, int, CUdevice); /* the driver's, not the shim's (its SM count is the partition's) */
	launch_fn launch;
	/* CUDA 12 runtimes may launch a CUkernel in place of a CUfunction:
	 * its attributes are the kernel's on the context's device (optional) */
	CUresult (*kernel_attr)(int *, int, CUfunction, CUdevice);
	CUresult (*kernel_function)(CUfunction *, CUfunction); /* cuKernelGetFunction */
	CUresult (*exchange_mode)(int *); /* cuThreadExchangeStreamCaptureMode */
} D;
static int usable; /* the driver has them all */

/* --- what the wrapper tells the callback, per thread ------------------------ */

static __thread __attribute__((tls_model("initial-exec"))) struct plan {
	int armed;        /* the next callback on this thread is this launch's */
	int seen;         /* the callback saw it */
	int version;      /* its descriptor's version */
	uint64_t program; /* and code address, as the driver made them */
	int edit;         /* edit the descriptor, only if its code is at expect: */
	uint64_t expect;
	uint64_t to;    /* new PROGRAM_ADDRESS (0: unchanged) */
	uint32_t width; /* new GRID_WIDTH (0: unchanged) */
	int applied;    /* the callback made the edit */
} plan;
static __thread __attribute__((tls_model("initial-exec"))) int inside; /* slicing's own launches */

/* Slicing's own driver calls (a query, a synchronization, a module load,
 * an allocation) would end a capture in global mode, as PyTorch's are,
 * begun on any thread meanwhile: no slicing work is begun while a capture
 * is under way (carve_tide_capturing), and the calls are made in relaxed
 * mode, for a capture begun after that check. own() puts this thread in
 * relaxed mode before the first of them in a launch, own_end() puts its
 * mode back at the launch's end. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	int on, mode;
} relaxed;

static void own(void)
{
	int m = CU_STREAM_CAPTURE_MODE_RELAXED;
	if (!relaxed.on && D.exchange_mode && D.exchange_mode(&m) == CUDA_SUCCESS)
		relaxed.on = 1, relaxed.mode = m;
}

static void own_end(void)
{
	if (relaxed.on) {
		D.exchange_mode(&relaxed.mode);
		relaxed.on = 0;
	}
}

void carve_slice_edit(uint8_t *tmd)
{
	if (__builtin_expect(!plan.armed, 1))
		return;
	plan.armed = 0;
	plan.seen = 1;
	plan.version = carve_tmd_version(tmd);
	if (plan.version != CARVE_TMD_V_SLICE)
		return;
	plan.program = carve_tmd_program(tmd);
	if (!plan.edit || plan.program != plan.expect)
		return;
	if (plan.width)
		carve_tmd_set_grid_width(tmd, plan.width);
	if (plan.to)
		carve_tmd_move_program(tmd, plan.to);
	plan.applied = 1;
}

/* --- the tables: functions, contexts, copies (under mu) ---------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

enum fstate { F_EMPTY, F_RECORDING, F_KNOWN, F_SCANNING, F_READY, F_NEVER };

struct fn {
	CUcontext ctx;
	CUfunction f;
	int state;
	uint64_t program; /* where the driver put the code */
	uint32_t len;     /* the code's bytes, up to its end marker */
	uint64_t wave_ns; /* its measured time a wave (EWMA), 0: not yet */
	uint64_t launches, timed;
	unsigned outstanding; /* its timing pairs recorded, not read */
	unsigned occ_threads, occ_smem, occ; /* blocks resident an SM, at that block size and shared memory */
};
#define FNS 4096
static struct fn fns[FNS];
static unsigned nfns;

/* A launch timed gets a pair of events around it on its stream, from its
 * context's pool (an event is recorded only on its own context's
 * streams); the pair is read, without waiting, at a later launch. */
#define TIMES 64
struct timing {
	CUevent a, b;
	int fn, busy;   /* busy: its pair is recorded, not read yet */
	uint32_t waves; /* the waves of blocks the launch or piece timed ran */
};

struct ctx {
	CUcontext ctx;
	int state; /* 0 none, 1 being set up, 2 ready, -1 failed */
	int gpu, sms; /* its device: which of the tenant's GPUs, and its SMs */
	CUfunction scan, copy;
	CUstream own;       /* slicing's stream in this context */
	CUdeviceptr result; /* the scan's two words, */
	int scanning;       /* which one scan at a time uses */
	struct timing times[TIMES]; /* under tmu */
	CUdeviceptr chunk;  /* copies' memory */
	size_t used, total;
};
#define CTXS 16
static struct ctx ctxs[CTXS];
static int pending;          /* timing pairs recorded, not read (changed under tmu) */
static uint64_t harvested;   /* the coarse clock when pairs were last read */
static pthread_mutex_t tmu = PTHREAD_MUTEX_INITIALIZER; /* the timing pairs; taken before mu */

struct copy {
	unsigned fn; /* index in fns, +1: 0 is empty */
	unsigned s;
	CUdeviceptr at;
	CUevent done; /* recorded after it was written */
	int seen;     /* done was seen complete: no launch waits for it again */
};
#define COPIES 8192
static struct copy copies[COPIES];
static unsigned ncopies;

static unsigned hash2(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
	return (unsigned)(h ^ h >> 29);
}

/* fn_find finds or makes (under mu) the entry of f in ctx; -1 if full */
static int fn_find(CUcontext ctx, CUfunction f)
{
	unsigned i = hash2((uintptr_t)ctx, (uintptr_t)f) % FNS;
	for (unsigned n = 0; n < FNS; n++, i = (i + 1) % FNS) {
		if (fns[i].f == f && fns[i].ctx == ctx)
			return (int)i;
		if (!fns[i].f) {
			if (nfns >= FNS * 3 / 4)
				return -1;
			nfns++;
			fns[i] = (struct fn){.ctx = ctx, .f = f, .state = F_EMPTY};
			return (int)i;
		}
	}
	return -1;
}

static struct copy *copy_find(unsigned fn, unsigned s)
{
	unsigned i = hash2(fn, s) % COPIES;
	for (unsigned n = 0; n < COPIES; n++, i = (i + 1) % COPIES)
		if (!copies[i].fn || (copies[i].fn == fn + 1 && copies[i].s == s))
			return &copies[i];
	return NULL;
}

static void set_state(int i, int state)
{
	pthread_mutex_lock(&mu);
	fns[i].state = state;
	pthread_mutex_unlock(&mu);
}

static void never(int i, const char *why)
{
	set_state(i, F_NEVER);
	CARVE_DEBUG("slice: function %p never cut: %s", fns[i].f, why);
}

void carve_slice_context_gone(CUcontext c)
{
	if (!c)
		return;
	pthread_mutex_lock(&tmu);
	pthread_mutex_lock(&mu);
	for (unsigned i = 0; i < FNS; i++)
		if (fns[i].ctx == c && fns[i].f)
			fns[i].state = F_NEVER; /* kept: the table is probed past it */
	for (int i = 0; i < CTXS; i++) {
		if (ctxs[i].ctx != c)
			continue;
		ctxs[i].state = -1;
		for (int k = 0; k < TIMES; k++) { /* its events went with it */
			__atomic_sub_fetch(&pending, ctxs[i].times[k].busy == 2, __ATOMIC_RELAXED);
			ctxs[i].times[k] = (struct timing){0};
		}
	}
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&tmu);
}

/* --- per context: the module (slice_ptx.h's kernels), stream and memory ----- */

static char ptx[8192];

/* ctx_entry finds or makes (under mu) context c's entry; NULL if full */
static struct ctx *ctx_entry(CUcontext c)
{
	for (int i = 0; i < CTXS; i++) {
		if (ctxs[i].ctx == c)
			return &ctxs[i];
		if (!ctxs[i].ctx) {
			ctxs[i].ctx = c;
			return &ctxs[i];
		}
	}
	return NULL;
}

/* ctx_ready returns the context's entry, set up on first use; NULL if it
 * cannot be. No lock across the driver's calls: the entry is marked
 * "being set up" meanwhile, and launches find it so and go whole. */
static struct ctx *ctx_ready(CUcontext c)
{
	pthread_mutex_lock(&mu);
	struct ctx *e = ctx_entry(c);
	int go = e && e->state == 0;
	if (go)
		e->state = 1;
	int state = e ? e->state : -1;
	pthread_mutex_unlock(&mu);
	if (!go)
		return state == 2 ? e : NULL;
	own();
	CUmodule m;
	CUfunction scan = NULL, copy = NULL;
	CUstream own = NULL;
	CUdeviceptr result = 0;
	const char *what = "loading its PTX";
	CUresult r = D.module_load(&m, ptx, 0, NULL, NULL);
	if (r == CUDA_SUCCESS && (what = "its scan kernel", r = D.module_function(&scan, m, "carve_slice_scan")) == CUDA_SUCCESS &&
	    (what = "its copy kernel", r = D.module_function(&copy, m, "carve_slice_copy")) == CUDA_SUCCESS &&
	    (what = "its stream", r = D.stream_create(&own, CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS)
		what = "its scan buffer", r = carve_mem_alloc_own(D.mem_alloc, &result, 8);
	pthread_mutex_lock(&mu);
	if (r == CUDA_SUCCESS)
		e->scan = scan, e->copy = copy, e->own = own, e->result = result, e->state = 2;
	else
		e->state = -1;
	pthread_mutex_unlock(&mu);
	if (r != CUDA_SUCCESS) {
		carve_say("slicing in context %p: %s failed (%d); its kernels go whole", c, what, r);
		return NULL;
	}
	return e;
}

/* slot reserves a copy's place in the context's memory, with a 4 KiB gap
 * after it (code fetched ahead of a copy is no later copy's): a new chunk
 * when the current one is full, allocated outside the lock. 0 if over
 * ARENA_BYTES or the memory limit: a chunk's room that a launch reserved
 * before then stays unused, so no more is lost than the chunk, already
 * charged. */
static CUdeviceptr slot(struct ctx *e, size_t len)
{
	size_t need = (len + 2 * SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
	if (need > CHUNK_BYTES)
		return 0;
	for (;;) {
		pthread_mutex_lock(&mu);
		if (e->chunk && e->used + need <= CHUNK_BYTES) {
			CUdeviceptr at = e->chunk + e->used;
			e->used += need;
			pthread_mutex_unlock(&mu);
			return at;
		}
		int over = e->total + CHUNK_BYTES > ARENA_BYTES;
		pthread_mutex_unlock(&mu);
		CUdeviceptr c = 0;
		own();
		if (over || carve_mem_alloc_own(D.mem_alloc, &c, CHUNK_BYTES) != CUDA_SUCCESS)
			return 0;
		pthread_mutex_lock(&mu);
		e->chunk = c; /* the rest of the old chunk is left unused */
		e->used = 0;
		e->total += CHUNK_BYTES;
		pthread_mutex_unlock(&mu);
	}
}

/* --- a function's code: its address, its length, its copies -------------------- */

/* attr reads attribute a of function f, or of the CUkernel f may be */
static CUresult attr(int *v, int a, CUfunction f)
{
	CUresult r = D.func_attr(v, a, f);
	CUdevice d;
	if (r != CUDA_SUCCESS && D.kernel_attr && D.ctx_device && D.ctx_device(&d) == CUDA_SUCCESS)
		r = D.kernel_attr(v, a, f, d);
	return r;
}

/* compile_time_cluster: does f carry cluster dimensions of its own? -1:
 * unknown */
static int compile_time_cluster(CUfunction f)
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
	CUresult r = D.launch(f, blocks, 1, 1, threads, 1, 1, 0, s, args, NULL);
	carve_tools_hold(0);
	return r;
}

/* scan measures function i's code on slicing's own stream and waits;
 * the caller set e->scanning, which it clears */
static void scan(int i, struct ctx *e)
{
	CUdeviceptr src = fns[i].program;
	unsigned bound = SCAN_BYTES;
	unsigned long long mlo = END_MARK_LO, mhi = END_MARK_HI, mask = CONTROL_MASK, nlo = NOP_LO, nhi = NOP_HI;
	void *args[] = {&src, &e->result, &bound, &mlo, &mhi, &mask, &nlo, &nhi};
	uint32_t out[2] = {0, 0};
	own();
	CUresult r = shim_launch(e->scan, 1, 32, e->own, args);
	if (r == CUDA_SUCCESS)
		r = D.dtoh(out, e->result, sizeof out, e->own);
	if (r == CUDA_SUCCESS)
		r = D.stream_sync(e->own);
	pthread_mutex_lock(&mu);
	e->scanning = 0;
	pthread_mutex_unlock(&mu);
	if (r != CUDA_SUCCESS)
		never(i, "the scan of its code failed");
	else if (!out[0])
		never(i, "no end marker in its code");
	else if (out[1])
		never(i, "the end marker is not followed by NOPs to a 128-byte boundary");
	else if (out[0] % 16)
		never(i, "its code's length is not whole instructions");
	else {
		pthread_mutex_lock(&mu);
		fns[i].len = out[0];
		fns[i].state = F_READY;
		pthread_mutex_unlock(&mu);
		__atomic_add_fetch(&carve_block->slice_fns, 1, __ATOMIC_RELAXED);
	}
}

/* make_copy writes prologue(s) + function i's code into slot at (slot)
 * on stream, after what is on it, and records an event after it, into
 * *out; it keeps the copy for later launches if the table has room. A
 * CUresult: CUDA_SUCCESS, or why it could not. */
static CUresult make_copy(int i, struct ctx *e, unsigned s, CUdeviceptr at, CUstream stream, struct copy *out)
{
	uint32_t len = fns[i].len;
	uint8_t pro[PRO_BYTES];
	memcpy(pro, pro_bytes, sizeof pro);
	memcpy(pro + PRO_IMM_BIT / 8, &s, sizeof s); /* a byte-aligned 32-bit immediate */
	unsigned long long w[PRO_WORDS];
	memcpy(w, pro, sizeof w);
	CUdeviceptr src = fns[i].program;
	unsigned words = len / 8;
	void *args[3 + PRO_WORDS] = {&src, &at, &words};
	for (int k = 0; k < PRO_WORDS; k++)
		args[3 + k] = &w[k];
	unsigned blocks = (words + 255) / 256;
	CUevent ev = NULL;
	own();
	CUresult r = shim_launch(e->copy, blocks > 64 ? 64 : blocks ? blocks : 1, 256, stream, args);
	if (r == CUDA_SUCCESS)
		r = D.event_create(&ev, CU_EVENT_DISABLE_TIMING);
	if (r == CUDA_SUCCESS)
		r = D.event_record(ev, stream);
	if (r != CUDA_SUCCESS)
		return r;
	*out = (struct copy){(unsigned)i + 1, s, at, ev, 0};
	pthread_mutex_lock(&mu);
	struct copy *c = copy_find((unsigned)i, s);
	if (c && !c->fn && ncopies < COPIES * 3 / 4) {
		ncopies++;
		*c = *out;
	}
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

/* ready_on makes stream s wait for copy c of function i, unless it was
 * seen written (a stream's handle may name another stream by now, so
 * being made on the same one proves nothing) */
static CUresult ready_on(int i, struct copy *c, CUstream s)
{
	if (c->seen)
		return CUDA_SUCCESS;
	own();
	CUresult r = D.event_query(c->done);
	if (r == CUDA_SUCCESS) {
		pthread_mutex_lock(&mu);
		struct copy *t = copy_find((unsigned)i, c->s);
		if (t && t->fn == (unsigned)i + 1)
			t->seen = 1;
		pthread_mutex_unlock(&mu);
		return r;
	}
	return D.stream_wait(s, c->done, 0);
}

/* --- each function's time --------------------------------------------------- */


/* harvest reads the pairs whose end is done into their functions' time */
static void harvest(void)
{
	if (!__atomic_load_n(&pending, __ATOMIC_RELAXED))
		return;
	own();
	pthread_mutex_lock(&tmu);
	for (int k = 0; k < CTXS * TIMES; k++) {
		struct timing *t = &ctxs[k / TIMES].times[k % TIMES];
		float ms = 0;
		if (t->busy != 2 || D.event_query(t->b) == CUDA_ERROR_NOT_READY)
			continue;
		int read = D.elapsed(&ms, t->a, t->b) == CUDA_SUCCESS && ms > 0;
		uint64_t ns = read ? (uint64_t)((double)ms * 1e6 / t->waves) : 0;
		pthread_mutex_lock(&mu);
		struct fn *f = &fns[t->fn];
		if (read) {
			f->wave_ns = f->timed ? (3 * f->wave_ns + ns) / 4 : ns;
			f->timed++;
		}
		f->outstanding -= f->outstanding > 0;
		pthread_mutex_unlock(&mu);
		t->busy = 0;
		__atomic_sub_fetch(&pending, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&tmu);
}

/* this thread's launch is due to be timed: its function has fewer than
 * SLICE_TIME_FIRST times read, or it is one in SLICE_TIME_EVERY of its
 * launches (carve_slice_launch) */
static __thread __attribute__((tls_model("initial-exec"))) int time_due;

/* time_begin records a pair's start on s, of function i's context,
 * before this thread's launch; NULL if not due or no room */
static struct timing *time_begin(int i, CUstream s)
{
	int capturing = 0;
	if (!time_due || D.capturing(s, &capturing) != CUDA_SUCCESS || capturing)
		return NULL;
	own();
	pthread_mutex_lock(&tmu);
	pthread_mutex_lock(&mu);
	struct ctx *e = ctx_entry(fns[i].ctx);
	pthread_mutex_unlock(&mu);
	struct timing *t = NULL;
	for (int k = 0; e && e->state >= 0 && k < TIMES && !t; k++)
		if (!e->times[k].busy)
			t = &e->times[k];
	if (t && (t->a || D.event_create(&t->a, 0) == CUDA_SUCCESS) && (t->b || D.event_create(&t->b, 0) == CUDA_SUCCESS) &&
	    D.event_record(t->a, s) == CUDA_SUCCESS)
		t->busy = 1;
	else
		t = NULL;
	pthread_mutex_unlock(&tmu);
	return t;
}

/* time_end records the pair's end after the launch, which ran nw waves
 * of blocks (0: unknown, the pair is dropped) */
static void time_end(struct timing *t, int i, CUstream s, uint32_t nw, CUresult r)
{
	if (!t)
		return;
	pthread_mutex_lock(&tmu);
	t->fn = i, t->waves = nw;
	if (r == CUDA_SUCCESS && nw && D.event_record(t->b, s) == CUDA_SUCCESS) {
		t->busy = 2;
		__atomic_add_fetch(&pending, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&mu);
		fns[i].outstanding++;
		pthread_mutex_unlock(&mu);
	} else {
		t->busy = 0;
	}
	pthread_mutex_unlock(&tmu);
}

/* --- waves: what a piece can be ------------------------------------------------ */

/* A piece shorter than a wave of blocks (those resident on the SMs at
 * once) takes as long as the wave: cutting a grid of one wave in five
 * makes five launches of the wave's time. So pieces are whole waves, a
 * function's time is kept a wave, and a grid of one wave goes whole. */

/* wave: the blocks of launch l of function i resident at once on the
 * tenant's SMs of its GPU: the driver's occupancy at its block size and
 * dynamic shared memory times the partition's SMs there (tide may
 * narrow a launch to fewer: pieces then take longer, never run fewer
 * blocks at once than planned). 0 if unknown: the function is never
 * cut. Called in l's context. */
static unsigned wave(int i, const struct carve_launch *l)
{
	unsigned threads = l->bx * l->by * l->bz, smem = l->sh;
	pthread_mutex_lock(&mu);
	struct fn *f = &fns[i];
	int occ = f->occ && f->occ_threads == threads && f->occ_smem == smem ? (int)f->occ : 0;
	struct ctx *e = ctx_entry(f->ctx);
	int gpu = e ? e->gpu : -1, sms = e ? e->sms : 0;
	pthread_mutex_unlock(&mu);
	if (!e)
		return 0;
	if (sms && occ) /* known: no driver call */
		return (unsigned)occ * (unsigned)carve_visible_sms(gpu, sms);
	own();
	CUdevice d = 0;
	if (!sms && (D.ctx_device(&d) != CUDA_SUCCESS ||
		     D.dev_attr(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) != CUDA_SUCCESS || sms <= 0))
		return 0;
	if (!occ) {
		CUfunction k = l->f; /* or the CUkernel's function in this context */
		CUresult r = D.occupancy(&occ, k, (int)threads, smem);
		if (r != CUDA_SUCCESS && D.kernel_function && D.kernel_function(&k, l->f) == CUDA_SUCCESS)
			r = D.occupancy(&occ, k, (int)threads, smem);
		if (r != CUDA_SUCCESS || occ <= 0) {
			never(i, "its occupancy cannot be read");
			return 0;
		}
	}
	pthread_mutex_lock(&mu);
	if (!e->sms)
		e->gpu = carve_device_gpu(d), e->sms = sms;
	gpu = e->gpu;
	f->occ_threads = threads, f->occ_smem = smem, f->occ = (unsigned)occ;
	pthread_mutex_unlock(&mu);
	return (unsigned)occ * (unsigned)carve_visible_sms(gpu, sms);
}

/* waves: how many waves of per blocks cols columns of l's grid run in
 * (at most 2^32 - 1); 0 if per is */
static uint32_t waves(uint64_t cols, const struct carve_launch *l, unsigned per)
{
	uint64_t w = per ? (cols * l->gy * l->gz + per - 1) / per : 0; /* below 2^64: 2^32 x 2^16 x 2^16 */
	return w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
}

/* cuts plans launch l of function i as pieces of about bound_ns by the
 * function's time a wave (per blocks), each as many columns as fit its
 * share of the grid's waves: their first columns in c[0..n], c[n] = gx;
 * returns n, below 2: whole. Where a column's rows do not divide a wave,
 * pieces end in part of one: whole if their waves together pass the
 * grid's by more than an eighth. */
static unsigned cuts(int i, const struct carve_launch *l, unsigned per, uint64_t bound_ns, unsigned c[SLICE_MAX_PIECES + 1])
{
	uint64_t rows = (uint64_t)l->gy * l->gz;
	pthread_mutex_lock(&mu);
	uint64_t wave_ns = fns[i].wave_ns;
	pthread_mutex_unlock(&mu);
	uint64_t all = waves(l->gx, l, per);
	if (!wave_ns || !all || !rows)
		return 1;
	uint64_t want = all > UINT64_MAX / wave_ns ? SLICE_MAX_PIECES : (all * wave_ns + bound_ns - 1) / bound_ns;
	if (want > all)
		want = all;
	if (want > SLICE_MAX_PIECES)
		want = SLICE_MAX_PIECES;
	if (want < 2)
		return 1;
	uint64_t q = (all + want - 1) / want;          /* waves a piece */
	uint64_t cols = q * per / rows ? q * per / rows : 1; /* columns a piece: no more blocks than q waves */
	if ((l->gx + cols - 1) / cols > SLICE_MAX_PIECES)
		cols = (l->gx + SLICE_MAX_PIECES - 1) / SLICE_MAX_PIECES;
	unsigned n = (unsigned)((l->gx + cols - 1) / cols);
	if (n < 2)
		return 1;
	uint64_t cost = 0;
	for (unsigned k = 0; k <= n; k++) {
		c[k] = k * cols < l->gx ? (unsigned)(k * cols) : l->gx;
		if (k)
			cost += waves(c[k] - c[k - 1], l, per);
	}
	return cost > all + all / 8 ? 1 : n;
}

/* --- the launch --------------------------------------------------------------- */

/* drive makes one driver call of l, holding the callbacks (tools.c) */
static CUresult drive(const struct carve_launch *l)
{
	carve_tools_hold(1);
	CUresult r = l->c ? ((launch_ex_fn)l->real)(l->c, l->f, l->p, l->e)
			  : ((launch_fn)l->real)(l->f, l->gx, l->gy, l->gz, l->bx, l->by, l->bz, l->sh, l->s, l->p, l->e);
	carve_tools_hold(0);
	return r;
}

/* whole launches l through tide as it is, already past its gate: timed
 * as function i's (if i >= 0 and due), its code recorded if record */
static CUresult whole(const struct carve_launch *l, CUstream s, int i, int record)
{
	unsigned per = i >= 0 && time_due ? wave(i, l) : 0; /* before the pair: it may ask the driver */
	struct timing *t = per ? time_begin(i, s) : NULL;
	memset(&plan, 0, sizeof plan);
	plan.armed = record;
	CUresult r = drive(l);
	plan.armed = 0;
	time_end(t, i, s, waves(l->gx, l, per), r);
	carve_launch_after(l->s, r);
	return r;
}

/* attrs_whole: do l's launch attributes keep it whole? */
static int attrs_whole(const CUlaunchConfig *c)
{
	if (!c || !c->attrs)
		return 0;
	for (unsigned i = 0; i < c->numAttrs; i++) {
		const uint8_t *a = (const uint8_t *)c->attrs + (size_t)i * CU_LAUNCH_ATTRIBUTE_BYTES;
		int id;
		unsigned v[3];
		memcpy(&id, a, sizeof id);
		memcpy(v, a + CU_LAUNCH_ATTRIBUTE_VALUE_OFFSET, sizeof v);
		switch (id) {
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			if (v[0])
				return 1;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
			if (v[0] > 1 || v[1] > 1 || v[2] > 1)
				return 1;
			break;
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
		case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
			return 1;
		}
	}
	return 0;
}

/* first: function i's first launch, whole; the callback records its
 * code's address and descriptor version */
static CUresult first(const struct carve_launch *l, CUstream s, int i)
{
	int cl = compile_time_cluster(l->f);
	CUresult r = whole(l, s, i, 1);
	struct plan p = plan;
	if (cl != 0)
		never(i, cl < 0 ? "its cluster dimensions cannot be read" : "it has compile-time cluster dimensions");
	else if (!p.seen)
		never(i, "the launch callback did not see its first launch");
	else if (p.version != CARVE_TMD_V_SLICE)
		never(i, "its descriptor version is not 0x40");
	else {
		pthread_mutex_lock(&mu);
		fns[i].program = p.program;
		if (fns[i].state == F_RECORDING) /* not made never meanwhile (its occupancy, its context gone) */
			fns[i].state = F_KNOWN;
		pthread_mutex_unlock(&mu);
	}
	return r;
}

/* cut launches l as the n pieces whose first columns c gives (cuts), the
 * first already past its gate, each later one through it; function i is
 * ready, per blocks make a wave. 0 with *r unset if it went nowhere (the
 * caller launches it whole); else 1, the result in *r.
 *
 * The copies' places are taken first; piece 0 goes next, and its callback
 * checks that the function's code is still where it was recorded (a
 * handle may name new code after an unload); only then are the copies
 * made from that code, on the launch's stream, before piece 1. */
static int cut(const struct carve_launch *l, CUstream s, CUcontext ctx, int i, unsigned n, const unsigned *c, unsigned per,
	       CUresult *r)
{
	struct ctx *e = ctx_ready(ctx);
	if (!e)
		return 0;
	struct copy use[SLICE_MAX_PIECES];
	int have[SLICE_MAX_PIECES];
	unsigned missing = 0;
	pthread_mutex_lock(&mu);
	for (unsigned k = 1; k < n; k++) {
		struct copy *t = copy_find((unsigned)i, c[k]);
		have[k] = t && t->fn;
		if (have[k])
			use[k] = *t;
		missing += !have[k];
	}
	int room = ncopies + missing <= COPIES * 3 / 4; /* else copies would be made and not kept */
	pthread_mutex_unlock(&mu);
	if (missing && !room)
		return 0;
	for (unsigned k = 1; k < n; k++)
		if (!have[k] && !(use[k].at = slot(e, PRO_BYTES + fns[i].len)))
			return 0;
	uint64_t program;
	pthread_mutex_lock(&mu);
	program = fns[i].program;
	pthread_mutex_unlock(&mu);
	for (unsigned k = 0; k < n; k++) {
		if (k)
			carve_launch_before(l->s); /* each piece through the gate */
		struct timing *t = k == 0 ? time_begin(i, s) : NULL;
		memset(&plan, 0, sizeof plan);
		plan = (struct plan){.armed = 1, .edit = 1, .expect = program, .to = k ? use[k].at : 0,
				     .width = c[k + 1] < l->gx ? c[k + 1] : 0};
		*r = drive(l);
		struct plan p = plan;
		plan.armed = 0;
		time_end(t, i, s, waves(c[1], l, per), *r);
		carve_launch_after(l->s, *r);
		if (*r != CUDA_SUCCESS)
			return 1;
		if (!p.applied) {
			/* piece 0 unedited ran the whole grid; a later one ran its
			 * blocks twice, which nothing can undo: say so loudly */
			if (k)
				carve_say("slicing: piece %u of %u of function %p ran unedited: blocks ran twice", k, n, l->f);
			never(i, "the callback could not edit a piece");
			return 1;
		}
		__atomic_add_fetch(&carve_block->slice_pieces, 1, __ATOMIC_RELAXED);
		for (unsigned j = 1; k == 0 && j < n; j++) {
			/* piece 0 ran the code at program: the copies now */
			CUresult cr = have[j] ? ready_on(i, &use[j], s) : make_copy(i, e, c[j], use[j].at, s, &use[j]);
			if (cr != CUDA_SUCCESS) {
				carve_say("slicing: the copy of function %p's code failed (%d): blocks %u to %u of its launch did not run",
					  l->f, cr, c[1], l->gx);
				never(i, "a copy of its code failed");
				*r = cr;
				return 1;
			}
		}
	}
	__atomic_add_fetch(&carve_block->sliced, 1, __ATOMIC_RELAXED);
	return 1;
}

CUresult carve_slice_launch(const struct carve_launch *l)
{
	uint32_t us = usable && carve_block ? __atomic_load_n(&carve_block->slice_us, __ATOMIC_RELAXED) : 0;
	if (!us || inside || carve_tide_capturing()) { /* a capture under way: no work of slicing's */
		carve_launch_before(l->s);
		CUresult r = drive(l);
		carve_launch_after(l->s, r);
		return r;
	}
	inside = 1;
	carve_launch_before(l->s); /* the whole launch's gate, or its first piece's */
	CUcontext ctx = NULL;
	if (carve_tide_ls_active(&ctx) <= 0) {
		/* no BE in tide on this GPU, or no LS tenant active: nothing
		 * is cut, nor recorded, timed or read (a BE beside an idle LS
		 * pays one load and tide's LS check a launch) */
		CUresult r = drive(l);
		carve_launch_after(l->s, r);
		inside = 0;
		return r;
	}
	CUstream s = l->ptsz && !l->s ? CU_STREAM_PER_THREAD : l->s;
	int capturing = 0;
	uint64_t tick = carve_coarse_ns(); /* pairs read once a tick of the coarse clock at most */
	if (__atomic_load_n(&pending, __ATOMIC_RELAXED) && __atomic_exchange_n(&harvested, tick, __ATOMIC_RELAXED) != tick &&
	    D.capturing(s, &capturing) == CUDA_SUCCESS && !capturing)
		harvest();
	int i = -1, state = F_NEVER;
	if (ctx && l->f) {
		pthread_mutex_lock(&mu);
		if ((i = fn_find(ctx, l->f)) >= 0) {
			state = fns[i].state;
			if (state == F_EMPTY)
				fns[i].state = F_RECORDING; /* this thread launches it first */
			fns[i].launches++;
			time_due = fns[i].timed + fns[i].outstanding < SLICE_TIME_FIRST || fns[i].launches % SLICE_TIME_EVERY == 0;
		}
		pthread_mutex_unlock(&mu);
	}
	CUresult r;
	if (state == F_EMPTY && (D.capturing(s, &capturing) != CUDA_SUCCESS || capturing)) {
		set_state(i, F_EMPTY); /* captured, it runs nothing: a later launch records it */
		r = whole(l, s, -1, 0);
	} else if (state == F_EMPTY) {
		r = first(l, s, i);
	} else if (state == F_NEVER || state == F_RECORDING || state == F_SCANNING || attrs_whole(l->c)) {
		r = whole(l, s, -1, 0);
	} else {
		/* the pieces it would go as, once its code is known; the code
		 * is scanned only then, at the first launch that would be cut */
		unsigned c[SLICE_MAX_PIECES + 1], per = wave(i, l);
		unsigned n = per ? cuts(i, l, per, (uint64_t)us * 1000, c) : 1;
		if (state == F_KNOWN && n >= 2) {
			/* one thread scans, one scan in a context at a time (they
			 * share its result words); other launches go whole meanwhile */
			struct ctx *e = ctx_ready(ctx);
			pthread_mutex_lock(&mu);
			int mine = e && fns[i].state == F_KNOWN && !e->scanning;
			if (mine)
				fns[i].state = F_SCANNING, e->scanning = 1;
			pthread_mutex_unlock(&mu);
			if (mine)
				scan(i, e);
		}
		pthread_mutex_lock(&mu);
		state = fns[i].state;
		pthread_mutex_unlock(&mu);
		if (state != F_READY)
			n = 1;
		if (n >= 2 && (D.capturing(s, &capturing) != CUDA_SUCCESS || capturing))
			n = 1;
		if (n < 2 || !cut(l, s, ctx, i, n, c, per, &r))
			r = whole(l, s, state == F_READY || state == F_KNOWN ? i : -1, 0);
	}
	own_end();
	inside = 0;
	return r;
}

/* --- at load -------------------------------------------------------------------- */

void carve_slice_init(void *cuda)
{
	for (int k = 0; k < PRO_BYTES; k++)
		sscanf(prologue_hex + 2 * k, "%2hhx", &pro_bytes[k]);
	slice_ptx(ptx, sizeof ptx, "carve_slice");
	void **need[] = {(void **)&D.module_load, (void **)&D.module_function, (void **)&D.mem_alloc,
			 (void **)&D.stream_create, (void **)&D.stream_sync, (void **)&D.dtoh, (void **)&D.func_attr,
			 (void **)&D.event_create, (void **)&D.event_record, (void **)&D.event_query, (void **)&D.elapsed,
			 (void **)&D.stream_wait, (void **)&D.capturing, (void **)&D.occupancy, (void **)&D.ctx_device,
			 (void **)&D.dev_attr, (void **)&D.launch};
	static const char *const names[] = {"cuModuleLoadDataEx", "cuModuleGetFunction", "cuMemAlloc_v2",
					    "cuStreamCreate", "cuStreamSynchronize", "cuMemcpyDtoHAsync_v2",
					    "cuFuncGetAttribute", "cuEventCreate", "cuEventRecord", "cuEventQuery",
					    "cuEventElapsedTime", "cuStreamWaitEvent", "cuStreamIsCapturing",
					    "cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuCtxGetDevice",
					    "cuDeviceGetAttribute", "cuLaunchKernel"};
	usable = 1;
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
		if (!(*need[k] = carve_real_dlsym(cuda, names[k])))
			usable = 0;
	D.kernel_attr = carve_real_dlsym(cuda, "cuKernelGetAttribute");
	D.kernel_function = carve_real_dlsym(cuda, "cuKernelGetFunction");
	D.exchange_mode = carve_real_dlsym(cuda, "cuThreadExchangeStreamCaptureMode");
	if (!usable && carve_block && carve_block->slice_us)
		carve_say("the driver lacks what slicing needs: kernels go whole");
}

/* with CARVE_DEBUG, what was cut, at exit (the block says it too, while
 * the process runs) */
__attribute__((destructor)) static void carve_slice_fini(void)
{
	if (carve_block && carve_block->slice_us)
		CARVE_DEBUG("slice: %llu launches cut into %llu pieces of about %u us; %u functions sliceable",
			    (unsigned long long)carve_block->sliced, (unsigned long long)carve_block->slice_pieces,
			    carve_block->slice_us, carve_block->slice_fns);
}
