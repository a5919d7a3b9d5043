/*
 * fakedrv.c: a fake libcuda.so.1 for testing slicer.so's host side without
 * a GPU: the calls the slicer makes, with its two kernels run on the host,
 * and launches that call the launch callback with a QMD V04 descriptor and
 * then "run" the blocks the edited descriptor says: [S, GRID_WIDTH), S read
 * from the prologue's immediate when PROGRAM_ADDRESS points at a copy.
 * Device memory is host memory. Each function's blocks run are counted
 * (fake_runs), so a test can check that every block of every launch ran
 * exactly once. Functions are handles 1..FNS; FAKE_CLUSTER_FN=n gives
 * function n compile-time cluster dimensions; FAKE_NO_MARK_FN=n makes the
 * scan find no end marker in n's code; FAKE_CODE_BYTES: every function's
 * code length (4096). The prologue's immediate sits at bit FAKE_IMM_BIT
 * (160, prologue.txt's), S = immediate (imm_delta 0).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../shim/carve_tmd.h"
#include "../../../shim/cuda_api.h"
#include "../qmd_v04.h"

#define FNS 16
#define MAXGRID 4096
#define SCAN ((CUfunction)(uintptr_t)1001)
#define COPY ((CUfunction)(uintptr_t)1002)
#define PRO_BYTES 128

typedef void (*cb_fn)(void *, int, int, const void *);
static cb_fn cb;
static unsigned runs[FNS + 1][MAXGRID];
static unsigned launches[FNS + 1], copies_run, scans_run, bad;

static int env_int(const char *n, int d)
{
	const char *e = getenv(n);
	return e && *e ? atoi(e) : d;
}

static uint64_t program_of(unsigned f) { return 0x7f0000000000ull + (uint64_t)f * 0x100000; }

unsigned fake_runs(unsigned f, unsigned block) { return runs[f][block]; }
unsigned fake_launches(unsigned f) { return launches[f]; }
unsigned fake_copies(void) { return copies_run; }
unsigned fake_scans(void) { return scans_run; }
unsigned fake_bad(void) { return bad; }

static int subscribe(uint32_t *h, cb_fn c, void *u)
{
	(void)u;
	*h = 7;
	cb = c;
	return 0;
}
static int enable(uint32_t on, uint32_t h, int d, int id)
{
	(void)on, (void)h, (void)d, (void)id;
	return 0;
}
static uintptr_t table[16] = {16 * sizeof(uintptr_t), 0, 0, (uintptr_t)subscribe, 0, 0, (uintptr_t)enable};

int cuGetExportTable(const void **t, const void *uuid)
{
	(void)uuid;
	*t = table;
	return 0;
}

/* the slicer's kernels, run at once on the host */
static int run_slicer(CUfunction f, unsigned gx, void **p)
{
	if (f == SCAN) {
		uint64_t src = *(uint64_t *)p[0];
		uint32_t *out = (uint32_t *)(uintptr_t) * (uint64_t *)p[1];
		unsigned fn = (unsigned)((src - 0x7f0000000000ull) / 0x100000);
		out[0] = fn == (unsigned)env_int("FAKE_NO_MARK_FN", 0) ? 0 : (uint32_t)env_int("FAKE_CODE_BYTES", 4096);
		out[1] = 0;
		scans_run++;
		return 0;
	}
	uint64_t src = *(uint64_t *)p[0];
	uint8_t *dst = (uint8_t *)(uintptr_t) * (uint64_t *)p[1];
	unsigned words = *(unsigned *)p[2];
	if (!gx || words * 8 != (unsigned)env_int("FAKE_CODE_BYTES", 4096))
		bad++;
	for (int i = 0; i < PRO_BYTES / 8; i++)
		memcpy(dst + 8 * i, p[3 + i], 8);
	memcpy(dst + PRO_BYTES, &src, 8); /* the code: here, whose it is */
	copies_run++;
	return 0;
}

static int launch(CUfunction f, unsigned gx, unsigned gy, void **p)
{
	if (f == SCAN || f == COPY)
		return run_slicer(f, gx, p);
	unsigned fn = (unsigned)(uintptr_t)f;
	if (fn < 1 || fn > FNS || gx > MAXGRID || gy != 1)
		return CUDA_ERROR_INVALID_VALUE;
	uint8_t q[QMD_BYTES];
	memset(q, 0, sizeof q);
	q[CARVE_TMD_VERSION_OFFSET] = QMD_V04;
	qmd_set(q, QMD_GRID_WIDTH, gx);
	qmd_move_program(q, program_of(fn));
	qmd_set(q, QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED, (program_of(fn) >> 8) & 0xffffffffu);
	qmd_set(q, QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED, program_of(fn) >> 40);
	struct {
		uint32_t size, pad;
		void *ctx, *stream, *func, *tmd;
		uint64_t rest[6];
	} params = {.size = 88, .ctx = (void *)0x1234, .func = f, .tmd = q};
	if (cb)
		cb(NULL, 0xb, 1, &params);
	launches[fn]++;
	uint64_t prog = qmd_program(q), width = qmd_get(q, QMD_GRID_WIDTH);
	unsigned s = 0;
	if (prog != program_of(fn)) {
		const uint8_t *code = (const uint8_t *)(uintptr_t)prog;
		uint64_t whose;
		memcpy(&whose, code + PRO_BYTES, 8);
		qmd_field imm = {(unsigned)env_int("FAKE_IMM_BIT", 160), (unsigned)env_int("FAKE_IMM_BIT", 160) + 31};
		s = (unsigned)qmd_get(code, imm);
		if (whose != program_of(fn) || (qmd_prefetch(q) != prog >> 8)) {
			bad++;
			return 0;
		}
	}
	for (unsigned b = s; b < width && b < gx; b++)
		runs[fn][b]++;
	return 0;
}

int cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		   unsigned sh, CUstream s, void **p, void **e)
{
	(void)gz, (void)bx, (void)by, (void)bz, (void)sh, (void)s, (void)e;
	return launch(f, gx, gy, p);
}
int cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			unsigned sh, CUstream s, void **p, void **e)
{
	return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sh, s, p, e);
}
int cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
	(void)e;
	return launch(f, c->gridDimX, c->gridDimY, p);
}
int cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
	return cuLaunchKernelEx(c, f, p, e);
}

typedef int (*any_fn)(void);
static void *by_name(const char *s, int ptds)
{
	if (!strcmp(s, "cuLaunchKernel"))
		return ptds ? (void *)cuLaunchKernel_ptsz : (void *)cuLaunchKernel;
	if (!strcmp(s, "cuLaunchKernelEx"))
		return ptds ? (void *)cuLaunchKernelEx_ptsz : (void *)cuLaunchKernelEx;
	return NULL;
}
int cuGetProcAddress_v2(const char *s, void **pfn, int version, uint64_t flags, int *status);
int cuGetProcAddress_v2(const char *s, void **pfn, int version, uint64_t flags, int *status)
{
	(void)version, (void)status;
	*pfn = !strcmp(s, "cuGetProcAddress") ? (void *)cuGetProcAddress_v2 : by_name(s, (flags & 2) != 0);
	return *pfn ? 0 : CUDA_ERROR_NOT_FOUND;
}

int cuGetErrorName(int r, const char **n)
{
	static char b[32];
	snprintf(b, sizeof b, "fake error %d", r);
	*n = b;
	return 0;
}
int cuCtxGetCurrent(CUcontext *c)
{
	*c = (CUcontext)0x1234;
	return 0;
}
int cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *o, void **v)
{
	(void)n, (void)o, (void)v;
	*m = (void *)0x99;
	return strstr(img, "slicer_scan") && strstr(img, "slicer_copy") ? 0 : CUDA_ERROR_INVALID_VALUE;
}
int cuModuleGetFunction(CUfunction *f, void *m, const char *name)
{
	(void)m;
	*f = !strcmp(name, "slicer_scan") ? SCAN : !strcmp(name, "slicer_copy") ? COPY : NULL;
	return *f ? 0 : CUDA_ERROR_NOT_FOUND;
}
int cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	void *m = NULL;
	if (posix_memalign(&m, 4096, n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)m;
	return 0;
}
int cuStreamCreate(CUstream *s, unsigned f)
{
	(void)f;
	*s = (CUstream)0x55;
	return 0;
}
int cuStreamSynchronize(CUstream s)
{
	(void)s;
	return 0;
}
int cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
	(void)s;
	memcpy((void *)(uintptr_t)d, h, n);
	return 0;
}
int cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s)
{
	(void)s;
	memcpy(h, (void *)(uintptr_t)d, n);
	return 0;
}
int cuFuncGetAttribute(int *v, int a, CUfunction f)
{
	*v = (a == 11 || a == 12 || a == 13) && (uintptr_t)f == (uintptr_t)env_int("FAKE_CLUSTER_FN", 0) ? 2 : 0;
	return 0;
}
int cuEventCreate(CUevent *e, unsigned f)
{
	(void)f;
	*e = (CUevent)0x66;
	return 0;
}
int cuEventRecord(CUevent e, CUstream s)
{
	(void)e, (void)s;
	return 0;
}
int cuEventRecord_ptsz(CUevent e, CUstream s) { return cuEventRecord(e, s); }
/* every event is complete; a pair took 0.25 ms (SLICE_TIME) */
int cuEventQuery(CUevent e)
{
	(void)e;
	return 0;
}
int cuEventSynchronize(CUevent e) { return cuEventQuery(e); }
int cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	(void)a, (void)b;
	*ms = 0.25f;
	return 0;
}
int cuStreamWaitEvent(CUstream s, CUevent e, unsigned f)
{
	(void)s, (void)e, (void)f;
	return 0;
}
int cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned f) { return cuStreamWaitEvent(s, e, f); }
int cuStreamIsCapturing(CUstream s, int *c)
{
	(void)s;
	*c = 0;
	return 0;
}
int cuStreamIsCapturing_ptsz(CUstream s, int *c) { return cuStreamIsCapturing(s, c); }
