/*
 * launch.c: the fake driver's kernel launches, through every entry point:
 * each calls the launch callback (tools.c) with a synthetic descriptor the
 * way the driver does, and takes FAKECUDA_KERNEL_US microseconds (or what
 * fakecuda_kernel_us sets) on its stream; FAKECUDA_FAULT_AT=N faults the
 * N-th. And the kernels with blocks that slicing (shim/slice.c) cuts: test
 * functions 1..FAKE_FNS, whose blocks each launch runs as its descriptor
 * says, and the shim's own scan and copy kernels, run on the host. The
 * test entry points here say what launches did (fakecuda_last, _runs,
 * _kernels, _bad, ...).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

static int launches;
static uint32_t last_mask[5];
static int last_called;
static int bare; /* launches no callback saw */

/* --- how long a kernel takes ------------------------------------------------ */

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

/* cuFuncGetName: the test functions 0..FAKE_FNS are named "fake_fn_N"
 * (function 0, the plain one, is the NULL handle), the shim's kernels by
 * their own names */
static char fn_names[FAKE_FNS + 1][16];
static void name_fns(void)
{
	for (unsigned i = 0; i <= FAKE_FNS; i++)
		snprintf(fn_names[i], sizeof fn_names[i], "fake_fn_%u", i);
}

int cuFuncGetName(const char **name, CUfunction f)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	COUNTED();
	pthread_once(&once, name_fns);
	uintptr_t n = (uintptr_t)f;
	*name = f == FAKE_SCAN ? "carve_slice_scan" : f == FAKE_COPY ? "carve_slice_copy" : n <= FAKE_FNS ? fn_names[n] : NULL;
	return *name ? error() : CUDA_ERROR_INVALID_HANDLE;
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
void to_host(struct fstream *f)
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

/* --- launches --------------------------------------------------------------- */

/* fake_descriptor writes the descriptor of a launch of function fn with
 * grid width gx, of the given version, into tmd (FAKE_TMD bytes), and
 * calls the launch callback with it, as the driver does just before it
 * uploads one: at a launch, and for a graph's kernel node when the graph
 * is instantiated (graphs.c). Returns 1 if a callback saw it. */
int fake_descriptor(int version, CUfunction fn, unsigned gx, uint8_t *tmd)
{
	unsigned tf = test_fn(fn);
	memset(tmd, 0, FAKE_TMD);
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
	launch_cb now_cb = __atomic_load_n(&cb, __ATOMIC_ACQUIRE);
	if (now_cb && enabled[0xb][1]) {
		in_callback = 1;
		now_cb(cb_user, 0xb, 1, &params);
		in_callback = 0;
		return 1;
	}
	__atomic_add_fetch(&bare, 1, __ATOMIC_RELAXED);
	return 0;
}

/* fake_run runs a launch of function fn with grid width gx and parameters
 * p on stream s as descriptor tmd says (called: a callback saw it): the
 * kernel's time on the stream, for test functions the blocks it ran; its
 * mask is what fakecuda_last reads. */
int fake_run(CUstream s, CUfunction fn, unsigned gx, void **p, const uint8_t *tmd, int called)
{
	unsigned tf = test_fn(fn);
	pthread_mutex_lock(&mu);
	if (tmd[CARVE_TMD_VERSION_OFFSET] >= CARVE_TMD_V_HOPPER) {
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

/* fake_launch runs one launch of function fn with grid width gx and
 * parameters p: the callback with a descriptor of the given version, then
 * the kernel's time on the stream. */
static int fake_launch(int version, CUstream s, CUfunction fn, unsigned gx, void **p)
{
	if (error())
		return error();
	if (test_fn(fn) && gx > FAKE_GRID)
		return CUDA_ERROR_INVALID_VALUE;
	uint8_t tmd[FAKE_TMD];
	int called = fake_descriptor(version, fn, gx, tmd);
	return fake_run(s, fn, gx, p, tmd, called);
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
