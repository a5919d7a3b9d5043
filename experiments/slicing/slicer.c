/*
 * slicer.c: an LD_PRELOAD library that runs the kernel launches of an
 * unmodified program (PyTorch, cuBLAS, cuDNN) as K launches of the same
 * function and arguments, piece i running blocks blockIdx.x in [S_i, E_i)
 * (all y and z), to test whether library kernels give bit-identical results
 * when sliced (issue 22, part 2; part 1 is suffix.cu, README.md).
 *
 * How a piece runs only its blocks (README.md): in the driver's launch
 * callback the descriptor's GRID_WIDTH is lowered to E_i, which ends the
 * grid early, and its PROGRAM_ADDRESS is pointed at a copy of the kernel's
 * code behind a prologue that ends blocks with blockIdx.x < S_i (piece 0
 * keeps the original code). gridDim and blockIdx stay as they were.
 *
 * - Launches: cuLaunchKernel, cuLaunchKernelEx and their _ptsz flavours,
 *   reached through dlsym and cuGetProcAddress (v1 and v2), as carve's shim
 *   does (shim/interpose.c), and by their exported names.
 * - The first launch of a function goes whole; the callback records its
 *   PROGRAM_ADDRESS and descriptor version (not 0x40: never sliced).
 * - A later launch with gridDim.x >= K, no cluster (launch attribute or
 *   compile-time), no cooperative launch, no event attribute and a stream
 *   that is not capturing goes as K pieces.
 * - The code's length: the slicer's own scan kernel reads the code at
 *   PROGRAM_ADDRESS (a kernel can, cuMemcpy cannot) up to ptxas' end marker,
 *   an unconditional branch to itself, followed by NOPs to a 128-byte
 *   boundary; none within SLICE_SCAN_KIB (default 1024): never sliced. Run
 *   once per function on the slicer's own stream, waited for.
 * - Copies: one per (function, S), made by the slicer's copy kernel on the
 *   launch's stream before the first piece that runs it, into a fresh 4 KiB
 *   aligned slot of cuMemAlloc'd memory with a 4 KiB gap after it, never
 *   rewritten; an event recorded after the copy orders a launch on another
 *   stream that reuses it.
 * - The launch callback makes no driver call and takes no lock; the
 *   wrapper holds the slicer's lock only around its tables, never across a
 *   driver call. What the callback is to do it reads from thread-locals
 *   the wrapper sets just before each driver call.
 *
 * Environment: SLICE_PIECES (K, default 2, 1 to 64), SLICE_SEED (random
 * split points from this seed; unset: equal shares), SLICE_PROLOGUE (the
 * prologue.txt of prologue.py; default ./prologue.txt), SLICE_LOG=1 (a line
 * per function decision), SLICE_PDL=0 (launches allowed to overlap their
 * predecessor, programmatic stream serialization, go whole),
 * SLICE_INVALIDATE=1 (set the descriptor's INVALIDATE_INSTRUCTION_CACHE on
 * sliced pieces), SLICE_ARENA_MIB (copy memory per context, default 4096);
 * to find which kernel breaks a result: SLICE_MATCH=TEXT (slice only
 * functions whose name has TEXT in it), SLICE_1D=1 (slice only grids with
 * gridDim.y = gridDim.z = 1).
 * Where the GPU time goes: SLICE_TIME=1 times each launch outside stream
 * capture with an event pair on its stream and adds its GPU time to its
 * class (sliced, or why it went whole) and its function; SLICE_DRY=1 with
 * it launches whole what would be sliced (class "sliceable_dry_run"), to
 * time it unsliced; SLICE_LONG_US (default 200) is the bound the report
 * counts longer launches against.
 * At exit: one JSON line on stderr, starting {"slicer":.
 *
 * Build: gcc -O2 -fPIC -shared -I shim -o slicer.so slicer.c -ldl -pthread
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "carve_tmd.h"
#include "cuda_api.h"
#include "qmd_v04.h" /* the fields carve_tmd.h does not edit: the prologue's immediate, the cache bit */
#include "slice_ptx.h" /* the scan and copy kernels, the end marker, the prologue's size */

#define EXPORT __attribute__((visibility("default")))

/* ---- driver types and constants beyond shim/cuda_api.h (cuda.h, CUDA 13) */

typedef void *CUmodule;
typedef void (*tools_cb)(void *, int, int, const void *);

#define LAUNCH_DOMAIN 0xb /* the launch callback, as shim/hook.c */
#define LAUNCH_CBID 0x1
#define PARAMS_FUNC_OFFSET 24 /* the launch's function (experiments/fit/cbparams.cu) */
enum { E_SUBSCRIBE = 3, E_ENABLE = 6 }; /* the tools table's entries (shim/tools.c) */
static const unsigned char tools_uuid[16] = {0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
					     0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b};

#define CU_STREAM_NON_BLOCKING 0x1
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET 10
#define CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH 11
#define CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT 12
#define CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH 13
/* CUlaunchAttribute: id, 4 bytes of padding, a 64-byte value */
#define LAUNCH_ATTR_BYTES 72
#define LAUNCH_ATTR_VALUE_OFFSET 8
enum {
	ATTR_COOPERATIVE = 2,
	ATTR_CLUSTER_DIMENSION = 4,
	ATTR_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
	ATTR_PROGRAMMATIC_EVENT = 7,
	ATTR_PREFERRED_CLUSTER_DIMENSION = 11,
	ATTR_LAUNCH_COMPLETION_EVENT = 12,
};

#define SLOT_ALIGN 4096
#define CHUNK_BYTES (64u << 20)
#define MAX_PIECES 64

/* ---- the driver's functions ------------------------------------------------ */

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn glibc_dlsym(void)
{
	static dlsym_fn f;
	dlsym_fn g = __atomic_load_n(&f, __ATOMIC_ACQUIRE);
	if (!g) {
		g = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!g)
			g = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
		__atomic_store_n(&f, g, __ATOMIC_RELEASE);
	}
	return g;
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);

/* the slicer's own calls, resolved from libcuda at start */
static struct {
	CUresult (*ctx_get_current)(CUcontext *);
	CUresult (*module_load_data_ex)(CUmodule *, const void *, unsigned, int *, void **);
	CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_synchronize)(CUstream);
	CUresult (*memcpy_dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*func_get_attribute)(int *, int, CUfunction);
	CUresult (*func_get_name)(const char **, CUfunction);
	CUresult (*kernel_get_attribute)(int *, int, CUfunction, CUdevice); /* a CUkernel passed as a CUfunction */
	CUresult (*kernel_get_name)(const char **, CUfunction);
	CUresult (*ctx_get_device)(CUdevice *);
	CUresult (*event_create)(CUevent *, unsigned);
	CUresult (*event_query)(CUevent);
	CUresult (*event_synchronize)(CUevent);
	CUresult (*event_elapsed)(float *, CUevent, CUevent);
	CUresult (*event_record[2])(CUevent, CUstream);
	CUresult (*stream_wait_event[2])(CUstream, CUevent, unsigned);
	CUresult (*stream_is_capturing[2])(CUstream, int *);
	CUresult (*get_error_name)(CUresult, const char **);
	CUresult (*get_export_table)(const void **, const void *);
	launch_fn launch[2];
} D;

/* ---- what the wrapper tells the callback, per thread ------------------------- */

struct plan {
	int armed;       /* the next launch callback on this thread is this launch's */
	int seen;        /* the callback saw it */
	int version;     /* its descriptor's version */
	uint64_t program; /* and program address, as the driver made them */
	void *fn;        /* the function in the callback's params */
	int edit;        /* edit the descriptor: */
	uint64_t expect; /* only if its program address is this */
	uint64_t to;     /* new PROGRAM_ADDRESS (0: unchanged) */
	uint32_t width;  /* new GRID_WIDTH (0: unchanged) */
	int applied;     /* the callback made the edit */
	const char *why; /* or why not */
};
static __thread struct plan tl;
static __thread int busy; /* the slicer's own driver calls: not sliced */

/* ---- counters ------------------------------------------------------------------ */

enum api { API_LAUNCH, API_LAUNCH_PTSZ, API_EX, API_EX_PTSZ, APIS };
static const char *const api_names[APIS] = {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
					    "cuLaunchKernelEx_ptsz"};

enum whole {
	W_DISABLED,
	W_FIRST,
	W_PENDING,
	W_NEVER,
	W_GRID,
	W_COOPERATIVE,
	W_CLUSTER,
	W_EVENT,
	W_PDL,
	W_CAPTURING,
	W_REENTRANT,
	W_NO_CONTEXT,
	W_CONTEXT_SETUP,
	W_ARENA,
	W_COPY_FAILED,
	W_EDIT_REFUSED,
	W_ONE_PIECE,
	W_NOT_MATCHED,
	W_NOT_1D,
	W_DRY,
	WHOLES
};
static const char *const whole_names[WHOLES] = {
	"slicer_disabled", "first_launch", "first_launch_in_flight", "function_never_sliced", "grid_x_below_pieces",
	"cooperative", "cluster", "event_attribute", "pdl", "stream_capturing", "reentrant", "no_context",
	"context_setup_failed", "copy_memory_full", "copy_failed", "edit_refused", "one_piece", "name_not_matched",
	"grid_not_1d", "sliceable_dry_run"};

static struct {
	unsigned long seen, by_api[APIS], sliced, pieces, whole[WHOLES], copies, copy_bytes, scans, callbacks,
		callbacks_outside, fn_mismatch, pdl_sliced, waits, late_edit_failures;
} st;
#define COUNT(x) __atomic_add_fetch(&(x), 1, __ATOMIC_RELAXED)

/* ---- settings --------------------------------------------------------------------- */

static unsigned pieces = 2, scan_bytes = 1u << 20;
static int seeded, log_on, pdl_ok = 1, invalidate;
static int timing, dry;    /* SLICE_TIME, SLICE_DRY */
static unsigned long_us;   /* SLICE_LONG_US */
static unsigned long long seed, rng;
static size_t arena_cap = 4096ull << 20;
static uint8_t prologue[PRO_BYTES];
static qmd_field imm;
static long imm_delta;
static const char *disabled; /* why nothing is sliced, or NULL */
static const char *match;    /* SLICE_MATCH */
static int only_1d;          /* SLICE_1D */

#define say(...) fprintf(stderr, "slicer: " __VA_ARGS__)

static const char *errname(CUresult r)
{
	const char *n = NULL;
	if (D.get_error_name && D.get_error_name(r, &n) == CUDA_SUCCESS && n)
		return n;
	return "CUresult (no name)";
}

/* ---- the tables: functions, contexts, copies (under mu) ----------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

enum fstate { F_EMPTY, F_RECORDING, F_KNOWN, F_SCANNING, F_READY, F_NEVER };

struct fn {
	CUcontext ctx;
	CUfunction f;
	int state;
	uint64_t program; /* where the driver put the code */
	uint32_t len;     /* the code's bytes, up to its end marker */
	const char *why;  /* F_NEVER: why (a static string, counted by pointer) */
	char name[256];
	unsigned long launches, sliced;
	double gpu_ms, sliceable_ms; /* SLICE_TIME: all its timed launches, and those sliced or sliceable */
	unsigned long timed, timed_long;
};
#define FNS 16384
static struct fn fns[FNS];
static unsigned nfns;

struct ctx {
	CUcontext ctx;
	int state; /* 0 none, 1 being set up, 2 ready, -1 failed */
	CUfunction scan, copy;
	CUstream own;       /* the slicer's stream in this context */
	CUdeviceptr result; /* the scan's two words */
	CUdeviceptr chunk;  /* copies' memory */
	size_t used, total;
};
#define CTXS 16
static struct ctx ctxs[CTXS];

struct copy {
	unsigned fn; /* index in fns, +1: 0 is empty */
	unsigned s;
	CUdeviceptr at;
	CUevent done;
	CUstream stream; /* where it was made */
	int ptsz;
};
#define COPIES (1u << 17)
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
			fns[i].f = f;
			fns[i].ctx = ctx;
			fns[i].state = F_EMPTY;
			return (int)i;
		}
	}
	return -1;
}

static struct copy *copy_find(unsigned fn, unsigned s)
{
	unsigned i = hash2(fn, s) % COPIES;
	for (unsigned n = 0; n < COPIES; n++, i = (i + 1) % COPIES) {
		if (!copies[i].fn || (copies[i].fn == fn + 1 && copies[i].s == s))
			return &copies[i];
	}
	return NULL;
}

static void never(int i, const char *why, const char *detail)
{
	pthread_mutex_lock(&mu);
	fns[i].state = F_NEVER;
	fns[i].why = why;
	pthread_mutex_unlock(&mu);
	if (log_on)
		say("%s: never sliced: %s%s%s\n", fns[i].name, why, detail ? ": " : "", detail ? detail : "");
}

/* ---- the launch callback ----------------------------------------------------------- */

static void on_launch(void *user, int domain, int cbid, const void *params)
{
	(void)user;
	if (domain != LAUNCH_DOMAIN || cbid != LAUNCH_CBID || !params)
		return;
	COUNT(st.callbacks);
	if (!busy)
		COUNT(st.callbacks_outside); /* a launch that no wrapper of the slicer's saw */
	if (!tl.armed)
		return;
	tl.armed = 0;
	uint8_t *q = carve_params_tmd(params);
	if (!q) {
		tl.why = "the callback's params hold no descriptor";
		return;
	}
	tl.seen = 1;
	tl.version = carve_tmd_version(q);
	tl.program = carve_tmd_program(q);
	tl.fn = carve_params_ptr(params, PARAMS_FUNC_OFFSET);
	if (!tl.edit)
		return;
	if (tl.version != CARVE_TMD_V_SLICE) {
		tl.why = "descriptor version is not 0x40";
		return;
	}
	if (tl.program != tl.expect) {
		tl.why = "the descriptor's program address is not the function's";
		return;
	}
	if (tl.width)
		carve_tmd_set_grid_width(q, tl.width);
	if (tl.to) {
		carve_tmd_move_program(q, tl.to);
		if (invalidate)
			qmd_set(q, QMD_INVALIDATE_INSTRUCTION_CACHE, 1);
	}
	tl.applied = 1;
	return;
}

/* ---- the slicer's kernels ---------------------------------------------------------- */

static char ptx[8192]; /* slice_ptx.h's kernels, named slicer_scan and slicer_copy */

/* ---- the prologue ---------------------------------------------------------------- */

static const char *load_prologue(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return "cannot open the prologue (SLICE_PROLOGUE, from prologue.py)";
	char line[8192];
	long bit = -1;
	size_t n = 0, over = 0;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, "bytes=", 6)) {
			for (const char *c = line + 6; c[0] && c[1] && c[0] != '\n'; c += 2) {
				unsigned v;
				if (sscanf(c, "%2x", &v) != 1)
					break;
				if (n < PRO_BYTES)
					prologue[n++] = (uint8_t)v;
				else
					over++;
			}
		} else if (!strncmp(line, "imm_bit=", 8)) {
			bit = strtol(line + 8, NULL, 10);
		} else if (!strncmp(line, "imm_delta=", 10)) {
			imm_delta = strtol(line + 10, NULL, 10);
		}
	}
	fclose(f);
	if (over || n != PRO_BYTES)
		return "the prologue is not 128 bytes (what prologue.py writes for 3 instructions)";
	if (bit < 0 || bit + 32 > PRO_BYTES * 8)
		return "the prologue has no imm_bit= inside it";
	imm.lo = (unsigned)bit;
	imm.hi = (unsigned)bit + 31;
	return NULL;
}

/* ---- start: the driver's functions, the callback, the settings ----------------------- */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *cuda; /* the driver's handle */
static int started; /* start ran: the report at exit is printed */

static void *need(void *lib, const char *name)
{
	void *f = glibc_dlsym()(lib, name);
	if (!f && !disabled)
		disabled = "the driver lacks a call the slicer needs";
	if (!f)
		say("the driver has no %s\n", name);
	return f;
}

static unsigned env_uint(const char *name, unsigned dflt)
{
	const char *e = getenv(name);
	return e && *e ? (unsigned)strtoul(e, NULL, 10) : dflt;
}

static void start(void)
{
	started = 1;
	log_on = env_uint("SLICE_LOG", 0) == 1;
	pieces = env_uint("SLICE_PIECES", 2);
	if (pieces < 1 || pieces > MAX_PIECES) {
		say("SLICE_PIECES=%u is not in [1, %d]: using 2\n", pieces, MAX_PIECES);
		pieces = 2;
	}
	const char *s = getenv("SLICE_SEED");
	if (s && *s) {
		seeded = 1;
		seed = strtoull(s, NULL, 10);
		rng = seed * 0x9E3779B97F4A7C15ull + 1;
	}
	pdl_ok = env_uint("SLICE_PDL", 1) != 0;
	match = getenv("SLICE_MATCH");
	if (match && !*match)
		match = NULL;
	only_1d = env_uint("SLICE_1D", 0) == 1;
	timing = env_uint("SLICE_TIME", 0) == 1;
	dry = env_uint("SLICE_DRY", 0) == 1;
	long_us = env_uint("SLICE_LONG_US", 200);
	invalidate = env_uint("SLICE_INVALIDATE", 0) == 1;
	scan_bytes = env_uint("SLICE_SCAN_KIB", 1024) << 10;
	arena_cap = (size_t)env_uint("SLICE_ARENA_MIB", 4096) << 20;
	slice_ptx(ptx, sizeof ptx, "slicer");

	cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!cuda) {
		disabled = "libcuda.so.1 cannot be opened";
		return;
	}
	D.get_error_name = need(cuda, "cuGetErrorName");
	D.ctx_get_current = need(cuda, "cuCtxGetCurrent");
	D.module_load_data_ex = need(cuda, "cuModuleLoadDataEx");
	D.module_get_function = need(cuda, "cuModuleGetFunction");
	D.mem_alloc = need(cuda, "cuMemAlloc_v2");
	D.stream_create = need(cuda, "cuStreamCreate");
	D.stream_synchronize = need(cuda, "cuStreamSynchronize");
	D.memcpy_dtoh_async = need(cuda, "cuMemcpyDtoHAsync_v2");
	D.func_get_attribute = need(cuda, "cuFuncGetAttribute");
	D.func_get_name = glibc_dlsym()(cuda, "cuFuncGetName"); /* CUDA 12.3: names in the log only */
	D.kernel_get_name = glibc_dlsym()(cuda, "cuKernelGetName");
	D.kernel_get_attribute = glibc_dlsym()(cuda, "cuKernelGetAttribute");
	D.ctx_get_device = glibc_dlsym()(cuda, "cuCtxGetDevice");
	D.event_create = need(cuda, "cuEventCreate");
	D.event_query = glibc_dlsym()(cuda, "cuEventQuery"); /* SLICE_TIME's only */
	D.event_synchronize = glibc_dlsym()(cuda, "cuEventSynchronize");
	D.event_elapsed = glibc_dlsym()(cuda, "cuEventElapsedTime");
	if (timing && !(D.event_query && D.event_synchronize && D.event_elapsed)) {
		say("the driver lacks event timing: SLICE_TIME is off\n");
		timing = 0;
	}
	D.event_record[0] = need(cuda, "cuEventRecord");
	D.event_record[1] = need(cuda, "cuEventRecord_ptsz");
	D.stream_wait_event[0] = need(cuda, "cuStreamWaitEvent");
	D.stream_wait_event[1] = need(cuda, "cuStreamWaitEvent_ptsz");
	D.stream_is_capturing[0] = need(cuda, "cuStreamIsCapturing");
	D.stream_is_capturing[1] = need(cuda, "cuStreamIsCapturing_ptsz");
	D.get_export_table = need(cuda, "cuGetExportTable");
	D.launch[0] = need(cuda, "cuLaunchKernel");
	D.launch[1] = need(cuda, "cuLaunchKernel_ptsz");
	if (disabled)
		return;

	const char *pp = getenv("SLICE_PROLOGUE");
	const char *why = load_prologue(pp && *pp ? pp : "prologue.txt");
	if (why) {
		say("%s: %s; nothing is sliced\n", pp && *pp ? pp : "prologue.txt", why);
		disabled = "no usable prologue";
		return;
	}

	const void *table = NULL;
	CUresult r = D.get_export_table(&table, tools_uuid);
	if (r != CUDA_SUCCESS || !table) {
		say("the driver gave no launch-tools table (%s); nothing is sliced\n", errname(r));
		disabled = "no launch-tools table";
		return;
	}
	const uintptr_t *t = table;
	uint32_t handle = 0;
	int rc = ((int (*)(uint32_t *, tools_cb, void *))t[E_SUBSCRIBE])(&handle, on_launch, NULL);
	if (rc == 0)
		rc = ((int (*)(uint32_t, uint32_t, int, int))t[E_ENABLE])(1, handle, LAUNCH_DOMAIN, LAUNCH_CBID);
	if (rc != 0) {
		say("subscribing to the launch callback returned %d (another tool, a profiler or carve's shim, holds it?); "
		    "nothing is sliced\n",
		    rc);
		disabled = "no launch callback";
		return;
	}
	if (log_on)
		say("%u pieces, %s split points%s, prologue immediate at bit %u%+ld\n", pieces,
		    seeded ? "random" : "equal", seeded ? " (seeded)" : "", imm.lo, imm_delta);
}

/* ---- per context: the slicer's module, stream and memory --------------------------- */

/* ctx_ready returns the context's entry, set up (module, stream, scan
 * buffer) on first use; NULL if it cannot be. No lock across the driver's
 * calls: the entry is marked "being set up" meanwhile. */
static struct ctx *ctx_ready(CUcontext c)
{
	struct ctx *e = NULL;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < CTXS; i++) {
		if (ctxs[i].ctx == c) {
			e = &ctxs[i];
			break;
		}
		if (!ctxs[i].ctx) {
			e = &ctxs[i];
			e->ctx = c;
			e->state = 0;
			break;
		}
	}
	int go = e && e->state == 0;
	if (go)
		e->state = 1;
	int state = e ? e->state : -1;
	pthread_mutex_unlock(&mu);
	if (!go)
		return state == 2 ? e : NULL;

	char log[4096] = "";
	int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
	CUmodule m;
	CUfunction scan = NULL, copy = NULL;
	CUstream own = NULL;
	CUdeviceptr result = 0;
	CUresult r = D.module_load_data_ex(&m, ptx, 2, opts, vals);
	const char *what = "loading the slicer's PTX";
	if (r == CUDA_SUCCESS && (what = "its scan kernel", r = D.module_get_function(&scan, m, "slicer_scan")) == CUDA_SUCCESS &&
	    (what = "its copy kernel", r = D.module_get_function(&copy, m, "slicer_copy")) == CUDA_SUCCESS &&
	    (what = "its stream", r = D.stream_create(&own, CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS)
		what = "its scan buffer", r = D.mem_alloc(&result, 8);
	pthread_mutex_lock(&mu);
	if (r == CUDA_SUCCESS) {
		e->scan = scan;
		e->copy = copy;
		e->own = own;
		e->result = result;
		e->state = 2;
	} else {
		e->state = -1;
	}
	pthread_mutex_unlock(&mu);
	if (r != CUDA_SUCCESS) {
		say("context %p: %s failed (%s)%s%s; its launches go whole\n", c, what, errname(r), *log ? ": " : "", log);
		return NULL;
	}
	if (log_on)
		say("context %p: the slicer's kernels loaded\n", c);
	return e;
}

/* slot reserves a copy's place in the context's memory: a new chunk when
 * the current one is full, allocated outside the lock. 0 if over the cap. */
static CUdeviceptr slot(struct ctx *e, size_t len)
{
	size_t need_bytes = (len + 2 * SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN; /* and a 4 KiB gap */
	if (need_bytes > CHUNK_BYTES)
		return 0;
	for (;;) {
		pthread_mutex_lock(&mu);
		if (e->chunk && e->used + need_bytes <= CHUNK_BYTES) {
			CUdeviceptr at = e->chunk + e->used;
			e->used += need_bytes;
			pthread_mutex_unlock(&mu);
			return at;
		}
		int over = e->total + CHUNK_BYTES > arena_cap;
		pthread_mutex_unlock(&mu);
		if (over)
			return 0;
		CUdeviceptr c = 0;
		if (D.mem_alloc(&c, CHUNK_BYTES) != CUDA_SUCCESS)
			return 0;
		pthread_mutex_lock(&mu);
		e->chunk = c; /* the rest of the old chunk is left unused */
		e->used = 0;
		e->total += CHUNK_BYTES;
		pthread_mutex_unlock(&mu);
	}
}

/* ---- the wrapper's steps ----------------------------------------------------------- */

static void name_of(int i, CUfunction f)
{
	const char *n = NULL;
	if ((!D.func_get_name || D.func_get_name(&n, f) != CUDA_SUCCESS || !n) &&
	    (!D.kernel_get_name || D.kernel_get_name(&n, f) != CUDA_SUCCESS || !n))
		n = "?";
	snprintf(fns[i].name, sizeof fns[i].name, "%s (%p)", n, f);
}

/* attr reads a function's attribute, or a CUkernel's (CUDA 12 runtimes may
 * launch with one in place of a CUfunction) */
static CUresult attr(int *v, int a, CUfunction f)
{
	CUresult r = D.func_get_attribute(v, a, f);
	CUdevice d;
	if (r != CUDA_SUCCESS && D.kernel_get_attribute && D.ctx_get_device && D.ctx_get_device(&d) == CUDA_SUCCESS)
		r = D.kernel_get_attribute(v, a, f, d);
	return r;
}

/* compile_time_cluster: does f carry cluster dimensions of its own? -1: unknown */
static int compile_time_cluster(CUfunction f)
{
	int w = 0, h = 0, d = 0, must = 0;
	if (attr(&w, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f) != CUDA_SUCCESS ||
	    attr(&h, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f) != CUDA_SUCCESS ||
	    attr(&d, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f) != CUDA_SUCCESS)
		return -1;
	attr(&must, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, f);
	return must || (w > 1 || h > 1 || d > 1);
}

/* scan measures f's code on the slicer's own stream and waits for it */
static void scan(int i, struct ctx *e)
{
	COUNT(st.scans);
	CUdeviceptr src = fns[i].program;
	unsigned bound = scan_bytes;
	unsigned long long mlo = END_MARK_LO, mhi = END_MARK_HI, mask = CONTROL_MASK, nlo = NOP_LO, nhi = NOP_HI;
	void *args[] = {&src, &e->result, &bound, &mlo, &mhi, &mask, &nlo, &nhi};
	uint32_t out[2] = {0, 0};
	CUresult r = D.launch[0](e->scan, 1, 1, 1, 32, 1, 1, 0, e->own, args, NULL);
	if (r == CUDA_SUCCESS)
		r = D.memcpy_dtoh_async(out, e->result, sizeof out, e->own);
	if (r == CUDA_SUCCESS)
		r = D.stream_synchronize(e->own);
	char d[96];
	if (r != CUDA_SUCCESS) {
		never(i, "the scan of its code failed", errname(r));
	} else if (!out[0]) {
		snprintf(d, sizeof d, "%u KiB", scan_bytes >> 10);
		never(i, "no end marker in its code within the scan's bound", d);
	} else if (out[1]) {
		snprintf(d, sizeof d, "%u non-NOPs after %u bytes", out[1], out[0]);
		never(i, "the end marker is not followed by NOPs to a 128-byte boundary", d);
	} else if (out[0] % 16) {
		never(i, "the code's length is not whole instructions", NULL);
	} else {
		pthread_mutex_lock(&mu);
		fns[i].len = out[0];
		fns[i].state = F_READY;
		pthread_mutex_unlock(&mu);
		if (log_on)
			say("%s: sliceable: program %#llx, %u bytes of code\n", fns[i].name, (unsigned long long)src, out[0]);
	}
}

/* make_copy writes prologue(s) + f's code to a new slot on the launch's
 * stream and records an event after it; NULL if it cannot. */
static struct copy *make_copy(int i, struct ctx *e, unsigned s, CUstream stream, int ptsz, enum whole *why)
{
	uint32_t len = fns[i].len;
	CUdeviceptr at = slot(e, PRO_BYTES + len);
	if (!at) {
		*why = W_ARENA;
		return NULL;
	}
	uint8_t pro[PRO_BYTES];
	memcpy(pro, prologue, sizeof pro);
	qmd_set(pro, imm, (uint64_t)((long)s + imm_delta) & 0xffffffffu);
	unsigned long long w[PRO_WORDS];
	memcpy(w, pro, sizeof w);
	CUdeviceptr src = fns[i].program;
	unsigned words = len / 8;
	void *args[3 + PRO_WORDS] = {&src, &at, &words};
	for (int k = 0; k < PRO_WORDS; k++)
		args[3 + k] = &w[k];
	unsigned blocks = (words + 255) / 256;
	if (blocks > 64)
		blocks = 64;
	CUevent ev = NULL;
	CUresult r = D.launch[ptsz](e->copy, blocks ? blocks : 1, 1, 1, 256, 1, 1, 0, stream, args, NULL);
	if (r == CUDA_SUCCESS)
		r = D.event_create(&ev, CU_EVENT_DISABLE_TIMING);
	if (r == CUDA_SUCCESS)
		r = D.event_record[ptsz](ev, stream);
	if (r != CUDA_SUCCESS) {
		say("%s: the copy for S=%u failed: %s\n", fns[i].name, s, errname(r));
		*why = W_COPY_FAILED;
		return NULL;
	}
	COUNT(st.copies);
	__atomic_add_fetch(&st.copy_bytes, PRO_BYTES + len, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mu);
	struct copy *c = copy_find((unsigned)i, s);
	if (c && !c->fn && ncopies < COPIES * 3 / 4) {
		ncopies++;
		c->fn = (unsigned)i + 1;
		c->s = s;
		c->at = at;
		c->done = ev;
		c->stream = stream;
		c->ptsz = ptsz;
	}
	pthread_mutex_unlock(&mu);
	/* not kept (table full, or another thread made one meanwhile): this
	 * launch still uses its own, made on its stream */
	static __thread struct copy mine;
	mine = (struct copy){(unsigned)i + 1, s, at, ev, stream, ptsz};
	return &mine;
}

static unsigned long long next_rand(void)
{
	/* under mu */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Dull;
}

/* cuts: the split points 0 = c[0] < c[1] < ... < c[k] = n */
static void cuts(unsigned n, unsigned k, unsigned *c)
{
	c[0] = 0;
	c[k] = n;
	if (!seeded) {
		for (unsigned i = 1; i < k; i++)
			c[i] = (unsigned)((unsigned long long)n * i / k);
		return;
	}
	pthread_mutex_lock(&mu);
	for (unsigned i = 1; i < k; i++) {
		unsigned v;
		int dup;
		do {
			v = 1 + (unsigned)(next_rand() % (n - 1));
			dup = 0;
			for (unsigned j = 1; j < i; j++)
				dup |= c[j] == v;
		} while (dup);
		c[i] = v;
	}
	pthread_mutex_unlock(&mu);
	for (unsigned i = 1; i < k; i++) /* sort */
		for (unsigned j = i; j > 1 && c[j - 1] > c[j]; j--) {
			unsigned x = c[j];
			c[j] = c[j - 1];
			c[j - 1] = x;
		}
}

static int per_thread(CUstream s, int ptsz)
{
	return s == CU_STREAM_PER_THREAD || (ptsz && !s);
}

/* ---- the launch ------------------------------------------------------------------- */

struct launch {
	enum api api;
	CUfunction f;
	unsigned gx, gy, gz, bx, by, bz, sh;
	CUstream s;
	void **p, **e;
	const CUlaunchConfig *c;
};

static void *real_launch[APIS];
static const char *const real_names[APIS] = {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
					     "cuLaunchKernelEx_ptsz"};

static CUresult call(const struct launch *l)
{
	void *f = __atomic_load_n(&real_launch[l->api], __ATOMIC_ACQUIRE);
	if (!f) {
		/* an exported wrapper called by name: the next library's, or the
		 * driver's where that was opened locally */
		f = glibc_dlsym()(RTLD_NEXT, real_names[l->api]);
		if (!f && cuda)
			f = glibc_dlsym()(cuda, real_names[l->api]);
		__atomic_store_n(&real_launch[l->api], f, __ATOMIC_RELEASE);
	}
	if (!f)
		return CUDA_ERROR_NOT_FOUND;
	if (l->api == API_EX || l->api == API_EX_PTSZ)
		return ((launch_ex_fn)f)(l->c, l->f, l->p, l->e);
	return ((launch_fn)f)(l->f, l->gx, l->gy, l->gz, l->bx, l->by, l->bz, l->sh, l->s, l->p, l->e);
}

static __thread int t_cls; /* the launch's class for SLICE_TIME: why it went whole, or WHOLES: sliced */

static CUresult whole(const struct launch *l, enum whole why)
{
	t_cls = why;
	COUNT(st.whole[why]);
	return call(l);
}

/* attrs_say: why cuLaunchKernelEx's attributes keep this launch whole, or
 * WHOLES; *pdl set if the launch may overlap its predecessor */
static enum whole attrs_say(const CUlaunchConfig *c, int *pdl)
{
	*pdl = 0;
	if (!c || !c->attrs)
		return WHOLES;
	for (unsigned i = 0; i < c->numAttrs; i++) {
		const uint8_t *a = (const uint8_t *)c->attrs + (size_t)i * LAUNCH_ATTR_BYTES;
		int id;
		unsigned v[3];
		memcpy(&id, a, sizeof id);
		memcpy(v, a + LAUNCH_ATTR_VALUE_OFFSET, sizeof v);
		switch (id) {
		case ATTR_COOPERATIVE:
			if (v[0])
				return W_COOPERATIVE;
			break;
		case ATTR_CLUSTER_DIMENSION:
		case ATTR_PREFERRED_CLUSTER_DIMENSION:
			if (v[0] > 1 || v[1] > 1 || v[2] > 1)
				return W_CLUSTER;
			break;
		case ATTR_PROGRAMMATIC_EVENT:
		case ATTR_LAUNCH_COMPLETION_EVENT:
			return W_EVENT;
		case ATTR_PROGRAMMATIC_STREAM_SERIALIZATION:
			*pdl = v[0] != 0;
			break;
		}
	}
	return WHOLES;
}

/* first: the function's first launch, whole; the callback records its code's
 * address and descriptor version */
static CUresult first(const struct launch *l, int i)
{
	name_of(i, l->f);
	int cl = compile_time_cluster(l->f);
	memset(&tl, 0, sizeof tl);
	tl.armed = 1;
	CUresult r = whole(l, W_FIRST);
	struct plan p = tl;
	memset(&tl, 0, sizeof tl);
	char d[64];
	if (cl != 0) {
		never(i, cl < 0 ? "its cluster dimensions cannot be read" : "it has compile-time cluster dimensions", NULL);
	} else if (!p.seen) {
		never(i, "the launch callback did not see its first launch", r != CUDA_SUCCESS ? errname(r) : NULL);
	} else if (p.version != CARVE_TMD_V_SLICE) {
		snprintf(d, sizeof d, "0x%x", p.version);
		never(i, "its descriptor version is not 0x40", d);
	} else {
		if (p.fn != l->f)
			COUNT(st.fn_mismatch); /* a CUkernel handle: the driver names its CUfunction */
		pthread_mutex_lock(&mu);
		fns[i].program = p.program;
		fns[i].state = F_KNOWN;
		pthread_mutex_unlock(&mu);
		if (log_on)
			say("%s: first launch whole, program %#llx, grid %u %u %u\n", fns[i].name,
			    (unsigned long long)p.program, l->gx, l->gy, l->gz);
	}
	return r;
}

/* ---- SLICE_TIME: each launch's GPU time, by what the slicer made of it -------------- */

/* A launch timed gets a start and an end event on its stream, in a ring;
 * the oldest pairs whose end is complete are read at later launches (in
 * order: a pair still running holds back those after it) and at exit. */
#define TIMED 8192
struct timed {
	CUevent a, b;
	int fn, cls;
	int ready; /* its end event is recorded */
};
static struct timed ring[TIMED];
static unsigned ring_head, ring_tail;
static pthread_mutex_t tmu = PTHREAD_MUTEX_INITIALIZER; /* the ring and the sums below */
static struct {
	unsigned long n, n_long;
	double ms, ms_long;
} by_cls[WHOLES + 1]; /* [WHOLES]: sliced */
static unsigned long timed_dropped, timed_unread;

static int sliceable_cls(int c)
{
	return c == WHOLES || c == W_DRY;
}

/* harvest reads the complete pairs at the ring's tail (tmu held); wait: at
 * exit, wait for each */
static void harvest(int wait)
{
	while (ring_tail != ring_head) {
		struct timed *t = &ring[ring_tail % TIMED];
		if (!__atomic_load_n(&t->ready, __ATOMIC_ACQUIRE))
			break;
		CUresult q = wait ? D.event_synchronize(t->b) : D.event_query(t->b);
		if (q == CUDA_ERROR_NOT_READY)
			break;
		float ms = 0;
		if (q == CUDA_SUCCESS && D.event_elapsed(&ms, t->a, t->b) == CUDA_SUCCESS) {
			int c = t->cls, longer = ms * 1000.0f > (float)long_us;
			by_cls[c].n++;
			by_cls[c].ms += ms;
			by_cls[c].n_long += longer;
			by_cls[c].ms_long += longer ? ms : 0;
			if (t->fn >= 0) {
				struct fn *f = &fns[t->fn];
				f->timed++;
				f->timed_long += longer;
				f->gpu_ms += ms;
				f->sliceable_ms += sliceable_cls(c) ? ms : 0;
			}
		} else {
			timed_unread++;
		}
		t->ready = 0;
		ring_tail++;
	}
}

/* time_begin records a launch's start event, or returns -1 (not timing, a
 * capturing stream, no event, or the ring full) */
static int time_begin(const struct launch *l, int ptsz)
{
	int capturing = 0;
	if (!timing || D.stream_is_capturing[ptsz](l->s, &capturing) != CUDA_SUCCESS || capturing)
		return -1;
	pthread_mutex_lock(&tmu);
	harvest(0);
	int slot = -1;
	if (ring_head - ring_tail < TIMED) {
		struct timed *t = &ring[ring_head % TIMED];
		if ((t->a || D.event_create(&t->a, 0) == CUDA_SUCCESS) && (t->b || D.event_create(&t->b, 0) == CUDA_SUCCESS))
			slot = (int)(ring_head++ % TIMED);
	} else {
		timed_dropped++;
	}
	pthread_mutex_unlock(&tmu);
	if (slot >= 0)
		D.event_record[ptsz](ring[slot].a, l->s);
	return slot;
}

static void time_end(int slot, const struct launch *l, int ptsz, int fn, int cls)
{
	struct timed *t = &ring[slot];
	t->fn = fn;
	t->cls = cls;
	D.event_record[ptsz](t->b, l->s);
	__atomic_store_n(&t->ready, 1, __ATOMIC_RELEASE);
}

static CUresult sliced(const struct launch *l)
{
	COUNT(st.seen);
	COUNT(st.by_api[l->api]);
	pthread_once(&once, start);
	if (busy)
		return whole(l, W_REENTRANT);
	if (disabled)
		return whole(l, W_DISABLED);
	busy = 1;
	CUresult r = CUDA_SUCCESS;
	int ptsz = l->api == API_LAUNCH_PTSZ || l->api == API_EX_PTSZ;
	int pdl = 0;
	enum whole w = attrs_say(l->c, &pdl);
	CUcontext ctx = NULL;
	int slot = -1, i = -1;
	if (D.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx) {
		r = whole(l, W_NO_CONTEXT);
		goto out;
	}
	slot = time_begin(l, ptsz);
	t_cls = WHOLES;
	pthread_mutex_lock(&mu);
	i = fn_find(ctx, l->f);
	int state = i < 0 ? F_NEVER : fns[i].state;
	if (state == F_EMPTY)
		fns[i].state = F_RECORDING; /* this thread launches it first */
	if (i >= 0)
		fns[i].launches++;
	pthread_mutex_unlock(&mu);

	if (state == F_EMPTY) {
		r = first(l, i);
		goto out;
	}
	if (state == F_RECORDING || state == F_SCANNING) {
		r = whole(l, W_PENDING);
		goto out;
	}
	if (state == F_NEVER) {
		r = whole(l, W_NEVER);
		goto out;
	}
	if (w != WHOLES) {
		r = whole(l, w);
		goto out;
	}
	if (pdl && !pdl_ok) {
		r = whole(l, W_PDL);
		goto out;
	}
	if (pieces < 2) {
		r = whole(l, W_ONE_PIECE);
		goto out;
	}
	if (l->gx < pieces) {
		r = whole(l, W_GRID);
		goto out;
	}
	if (only_1d && (l->gy > 1 || l->gz > 1)) {
		r = whole(l, W_NOT_1D);
		goto out;
	}
	if (match && !strstr(fns[i].name, match)) {
		r = whole(l, W_NOT_MATCHED);
		goto out;
	}
	int capturing = 0;
	if (D.stream_is_capturing[ptsz](l->s, &capturing) != CUDA_SUCCESS || capturing) {
		r = whole(l, W_CAPTURING);
		goto out;
	}
	struct ctx *e = ctx_ready(ctx);
	if (!e) {
		r = whole(l, W_CONTEXT_SETUP);
		goto out;
	}
	if (state == F_KNOWN) {
		/* one thread scans; others go whole meanwhile */
		pthread_mutex_lock(&mu);
		int mine = fns[i].state == F_KNOWN;
		if (mine)
			fns[i].state = F_SCANNING;
		pthread_mutex_unlock(&mu);
		if (mine)
			scan(i, e);
		pthread_mutex_lock(&mu);
		state = fns[i].state;
		pthread_mutex_unlock(&mu);
		if (state != F_READY) {
			r = whole(l, state == F_NEVER ? W_NEVER : W_PENDING);
			goto out;
		}
	}
	if (dry) {
		r = whole(l, W_DRY);
		goto out;
	}

	/* the copies, all before the first piece */
	unsigned c[MAX_PIECES + 1];
	struct copy use[MAX_PIECES];
	int fresh[MAX_PIECES] = {0};
	cuts(l->gx, pieces, c);
	for (unsigned k = 1; k < pieces; k++) {
		pthread_mutex_lock(&mu);
		struct copy *have = copy_find((unsigned)i, c[k]);
		int found = have && have->fn;
		if (found)
			use[k] = *have;
		pthread_mutex_unlock(&mu);
		if (found)
			continue;
		enum whole why = W_COPY_FAILED;
		struct copy *m = make_copy(i, e, c[k], l->s, ptsz, &why);
		if (!m) {
			r = whole(l, why);
			goto out;
		}
		use[k] = *m;
		fresh[k] = 1;
	}
	/* a copy made on another stream (or another thread's default stream) is
	 * waited for through its event */
	for (unsigned k = 1; k < pieces; k++) {
		if (fresh[k] || (use[k].stream == l->s && use[k].ptsz == ptsz && !per_thread(l->s, ptsz)))
			continue;
		COUNT(st.waits);
		if ((r = D.stream_wait_event[ptsz](l->s, use[k].done, 0)) != CUDA_SUCCESS) {
			say("%s: waiting for a copy's event failed: %s\n", fns[i].name, errname(r));
			r = whole(l, W_COPY_FAILED);
			goto out;
		}
	}

	/* the pieces */
	for (unsigned k = 0; k < pieces; k++) {
		memset(&tl, 0, sizeof tl);
		tl.armed = 1;
		tl.edit = 1;
		tl.expect = fns[i].program;
		tl.to = k ? use[k].at : 0;
		tl.width = c[k + 1] < l->gx ? c[k + 1] : 0;
		r = call(l);
		struct plan p = tl;
		memset(&tl, 0, sizeof tl);
		if (r != CUDA_SUCCESS)
			break;
		if (!p.applied) {
			const char *why = p.why ? p.why : p.seen ? "not edited" : "the callback did not see the piece";
			if (k == 0) {
				/* it ran whole, unedited: nothing more to launch */
				t_cls = W_EDIT_REFUSED;
				COUNT(st.whole[W_EDIT_REFUSED]);
				never(i, "the callback could not edit a piece", why);
				goto out;
			}
			COUNT(st.late_edit_failures);
			say("%s: piece %u of %u ran unedited (%s): its blocks ran twice\n", fns[i].name, k, pieces, why);
			never(i, "the callback could not edit a later piece", why);
			goto out;
		}
		COUNT(st.pieces);
	}
	if (r == CUDA_SUCCESS) {
		COUNT(st.sliced);
		if (pdl)
			COUNT(st.pdl_sliced);
		pthread_mutex_lock(&mu);
		fns[i].sliced++;
		pthread_mutex_unlock(&mu);
	}
out:
	if (slot >= 0)
		time_end(slot, l, ptsz, i, t_cls);
	busy = 0;
	return r;
}

/* ---- the wrappers and how programs find them -------------------------------------- */

#define LAUNCH(name, api)                                                                                          \
	EXPORT CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,        \
			     unsigned bz, unsigned sh, CUstream s, void **p, void **e)                              \
	{                                                                                                          \
		struct launch l = {api, f, gx, gy, gz, bx, by, bz, sh, s, p, e, NULL};                             \
		return sliced(&l);                                                                                 \
	}
LAUNCH(cuLaunchKernel, API_LAUNCH)
LAUNCH(cuLaunchKernel_ptsz, API_LAUNCH_PTSZ)

#define LAUNCH_EX(name, api)                                                                                       \
	EXPORT CUresult name(const CUlaunchConfig *c, CUfunction f, void **p, void **e)                           \
	{                                                                                                          \
		if (!c)                                                                                            \
			return CUDA_ERROR_INVALID_VALUE;                                                           \
		struct launch l = {api,          f,           c->gridDimX,    c->gridDimY, c->gridDimZ, c->blockDimX, \
				   c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream, p,           e,            \
				   c};                                                                             \
		return sliced(&l);                                                                                 \
	}
LAUNCH_EX(cuLaunchKernelEx, API_EX)
LAUNCH_EX(cuLaunchKernelEx_ptsz, API_EX_PTSZ)

static void *const wrappers[APIS] = {(void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz, (void *)cuLaunchKernelEx,
				     (void *)cuLaunchKernelEx_ptsz};

/* swap keeps the driver's function f for api and returns the wrapper */
static void *swap(enum api a, void *f)
{
	if (!f || f == wrappers[a])
		return f;
	__atomic_store_n(&real_launch[a], f, __ATOMIC_RELEASE);
	return wrappers[a];
}

/* the flavour cuGetProcAddress(base, version, flags) returns, as
 * shim/interpose.c's table says: cuLaunchKernel (CUDA 4.0; _ptsz from 7.0),
 * cuLaunchKernelEx (11.6, _ptsz with it); -1 for any other call */
static int flavour(const char *base, int version, uint64_t flags)
{
	int ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	if (!strcmp(base, "cuLaunchKernel"))
		return ptds && version >= 7000 ? API_LAUNCH_PTSZ : API_LAUNCH;
	if (!strcmp(base, "cuLaunchKernelEx"))
		return version < 11060 ? -1 : ptds ? API_EX_PTSZ : API_EX;
	return -1;
}

typedef CUresult (*get_proc_fn)(const char *, void **, int, uint64_t, void *);
static void *real_get_proc_v1, *real_get_proc_v2;
static CUresult get_proc(void *real, const char *symbol, void **pfn, int version, uint64_t flags, void *status);

static CUresult wrap_get_proc_v1(const char *symbol, void **pfn, int version, uint64_t flags, void *status)
{
	return get_proc(__atomic_load_n(&real_get_proc_v1, __ATOMIC_ACQUIRE), symbol, pfn, version, flags, status);
}

static CUresult wrap_get_proc_v2(const char *symbol, void **pfn, int version, uint64_t flags, void *status)
{
	return get_proc(__atomic_load_n(&real_get_proc_v2, __ATOMIC_ACQUIRE), symbol, pfn, version, flags, status);
}

static CUresult get_proc(void *real, const char *symbol, void **pfn, int version, uint64_t flags, void *status)
{
	if (!real)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = ((get_proc_fn)real)(symbol, pfn, version, flags, status);
	if (r != CUDA_SUCCESS || !pfn || !*pfn || !symbol)
		return r;
	if (!strcmp(symbol, "cuGetProcAddress")) {
		if (*pfn == __atomic_load_n(&real_get_proc_v1, __ATOMIC_ACQUIRE)) {
			*pfn = (void *)wrap_get_proc_v1;
		} else if (*pfn == __atomic_load_n(&real_get_proc_v2, __ATOMIC_ACQUIRE) || version >= 12000) {
			__atomic_store_n(&real_get_proc_v2, *pfn, __ATOMIC_RELEASE);
			*pfn = (void *)wrap_get_proc_v2;
		} else {
			__atomic_store_n(&real_get_proc_v1, *pfn, __ATOMIC_RELEASE);
			*pfn = (void *)wrap_get_proc_v1;
		}
		return r;
	}
	int a = flavour(symbol, version, flags);
	if (a >= 0)
		*pfn = swap((enum api)a, *pfn);
	return r;
}

__attribute__((optimize("optimize-sibling-calls"))) EXPORT void *dlsym(void *handle, const char *name)
{
	if (handle == RTLD_NEXT)
		return glibc_dlsym()(handle, name);
	void *f = glibc_dlsym()(handle, name);
	if (!f || name[0] != 'c' || name[1] != 'u')
		return f;
	if (!strcmp(name, "cuGetProcAddress_v2")) {
		__atomic_store_n(&real_get_proc_v2, f, __ATOMIC_RELEASE);
		return (void *)wrap_get_proc_v2;
	}
	if (!strcmp(name, "cuGetProcAddress")) {
		__atomic_store_n(&real_get_proc_v1, f, __ATOMIC_RELEASE);
		return (void *)wrap_get_proc_v1;
	}
	for (int a = 0; a < APIS; a++)
		if (!strcmp(name, real_names[a]))
			return swap((enum api)a, f);
	return f;
}

/* ---- at exit: one JSON line ---------------------------------------------------------- */

static void jstr(FILE *o, const char *s)
{
	fputc('"', o);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', o);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, o);
	}
	fputc('"', o);
}

/* report_time: SLICE_TIME's sums, per class: launches timed and their GPU
 * ms, and of them those longer than SLICE_LONG_US */
static void report_time(FILE *o)
{
	pthread_mutex_lock(&tmu);
	harvest(1);
	fprintf(o, ",\"time\":{\"dry_run\":%s,\"long_us\":%u,\"dropped\":%lu,\"unread\":%lu,\"pending\":%u,\"by_class\":{",
		dry ? "true" : "false", long_us, timed_dropped, timed_unread, ring_head - ring_tail);
	int first_c = 1;
	for (int c = 0; c <= WHOLES; c++) {
		if (!by_cls[c].n)
			continue;
		fprintf(o, "%s\"%s\":{\"launches\":%lu,\"ms\":%.3f,\"long\":%lu,\"long_ms\":%.3f}", first_c ? "" : ",",
			c == WHOLES ? "sliced" : whole_names[c], by_cls[c].n, by_cls[c].ms, by_cls[c].n_long, by_cls[c].ms_long);
		first_c = 0;
	}
	fputs("}}", o);
	pthread_mutex_unlock(&tmu);
}

__attribute__((destructor)) static void report(void)
{
	if (!started)
		return; /* no launch went through the slicer (a process it was preloaded into on the way) */
	FILE *o = stderr;
	fprintf(o, "{\"slicer\":{\"pid\":%d,\"pieces\":%u,\"split\":\"%s\",\"seed\":%llu,\"disabled\":", (int)getpid(),
		pieces, seeded ? "random" : "equal", seed);
	if (disabled)
		jstr(o, disabled);
	else
		fputs("null", o);
	fprintf(o, ",\"launches_seen\":%lu,\"by_api\":{", st.seen);
	for (int a = 0; a < APIS; a++)
		fprintf(o, "%s\"%s\":%lu", a ? "," : "", api_names[a], st.by_api[a]);
	fprintf(o, "},\"sliced\":%lu,\"pieces_launched\":%lu,\"whole\":{", st.sliced, st.pieces);
	int first_w = 1;
	for (int w = 0; w < WHOLES; w++)
		if (st.whole[w]) {
			fprintf(o, "%s\"%s\":%lu", first_w ? "" : ",", whole_names[w], st.whole[w]);
			first_w = 0;
		}
	unsigned long fsliced = 0, fnever = 0, fseen = 0;
	for (int i = 0; i < FNS; i++) {
		if (!fns[i].f)
			continue;
		fseen++;
		fsliced += fns[i].sliced > 0;
		fnever += fns[i].state == F_NEVER;
	}
	fprintf(o,
		"},\"functions_seen\":%lu,\"functions_sliced\":%lu,\"functions_never\":%lu,\"copies_made\":%lu,"
		"\"copy_bytes\":%lu,\"scans\":%lu,\"callbacks\":%lu,\"callbacks_outside_wrappers\":%lu,"
		"\"event_waits\":%lu,\"pdl_sliced\":%lu,\"late_edit_failures\":%lu,\"cukernel_handles\":%lu",
		fseen, fsliced, fnever, st.copies, st.copy_bytes, st.scans, st.callbacks, st.callbacks_outside, st.waits,
		st.pdl_sliced, st.late_edit_failures, st.fn_mismatch);
	/* why functions are never sliced: the reasons are static strings */
	const char *why[32];
	unsigned long n[32];
	int nw = 0;
	for (int i = 0; i < FNS; i++) {
		if (!fns[i].f || fns[i].state != F_NEVER || !fns[i].why)
			continue;
		int k = 0;
		while (k < nw && why[k] != fns[i].why)
			k++;
		if (k == nw && nw < 32) {
			why[nw] = fns[i].why;
			n[nw++] = 0;
		}
		if (k < nw)
			n[k]++;
	}
	fputs(",\"never_by_reason\":{", o);
	for (int k = 0; k < nw; k++) {
		fputs(k ? "," : "", o);
		jstr(o, why[k]);
		fprintf(o, ":%lu", n[k]);
	}
	fputc('}', o);
	if (timing)
		report_time(o);
	/* the functions, most launched first (with SLICE_TIME: most GPU time first), 40 at most */
	fputs(",\"functions\":[", o);
	static uint8_t shown[FNS];
	for (int m = 0; m < 40; m++) {
		int best = -1;
		for (int i = 0; i < FNS; i++)
			if (fns[i].f && !shown[i] &&
			    (best < 0 || (timing ? fns[i].gpu_ms > fns[best].gpu_ms : fns[i].launches > fns[best].launches)))
				best = i;
		if (best < 0)
			break;
		shown[best] = 1;
		fputs(m ? "," : "", o);
		fputs("{\"name\":", o);
		jstr(o, fns[best].name[0] ? fns[best].name : "?");
		fprintf(o, ",\"launches\":%lu,\"sliced\":%lu,\"code_bytes\":%u,", fns[best].launches, fns[best].sliced,
			fns[best].len);
		if (timing)
			fprintf(o, "\"timed\":%lu,\"gpu_ms\":%.3f,\"sliceable_ms\":%.3f,\"timed_long\":%lu,", fns[best].timed,
				fns[best].gpu_ms, fns[best].sliceable_ms, fns[best].timed_long);
		fputs("\"never\":", o);
		if (fns[best].state == F_NEVER && fns[best].why)
			jstr(o, fns[best].why);
		else
			fputs("null", o);
		fputc('}', o);
	}
	fputs("]}}\n", o);
	fflush(o);
}

#ifdef SLICER_PTX_MAIN
/* gcc -DSLICER_PTX_MAIN -I shim -o slicer-ptx slicer.c -ldl -pthread: prints
 * the slicer's PTX, for ptxas to check before a run (run.sh) */
int main(void)
{
	slice_ptx(ptx, sizeof ptx, "slicer");
	fputs(ptx, stdout);
	return 0;
}
#endif
