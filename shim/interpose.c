/*
 * interpose.c: the driver calls libcarve.so sees, named in one table.
 *
 * Frameworks reach the driver by dlopen("libcuda.so.1") and dlsym, then
 * cuGetProcAddress for everything else, which bypasses symbol interposition
 * (HARDWARE.md 8). So the shim defines dlsym, and answers a lookup of a name
 * in syms[] (through dlsym or cuGetProcAddress, of either flavour of the
 * default stream) with its own wrapper, keeping the driver's function for
 * it. Programs linked against libcuda directly (Triton's launcher) reach
 * the same wrappers by their exported names, which resolve the driver's
 * function from the next library on first use.
 *
 * The wrappers add what carve needs around each call: the SM count of the
 * partition (cuDeviceGetAttribute), the first fault a call returns
 * (fault.c), carve's place beside other subscribers of the launch callback
 * (tools.c), the LS/BE control of launches (tide.c), and the contexts that
 * go, whose GPUs gpu.c remembers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "cuda_api.h"
#include "shim.h"

#define EXPORT __attribute__((visibility("default")))

/* resolve returns the driver's function kept in *slot, looking it up in
 * the libraries after this one the first time (a direct call of an
 * exported wrapper). */
static void *resolve(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!f) {
		f = carve_glibc_dlsym()(RTLD_NEXT, name);
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

#define REAL(name, type) ((type)resolve(&real_##name, #name))

/* --- the wrappers --------------------------------------------------------- */

/* Launches: the stream is where tide.c tracks and holds work. */
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*launch_coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				   unsigned, CUstream, void **);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*stream_fn)(CUstream);
typedef CUresult (*event_fn)(CUevent);
typedef CUresult (*void_fn)(void);
typedef CUresult (*attr_fn)(int *, int, CUdevice);
typedef CUresult (*export_table_fn)(const void **, const void *);
typedef CUresult (*capture_fn)(CUstream, int);
typedef CUresult (*capture_graph_fn)(CUstream, CUgraph, const void *, const void *, size_t, int);
typedef CUresult (*end_capture_fn)(CUstream, CUgraph *);

static inline CUresult after(CUresult r, const char *call)
{
	if (__builtin_expect(r != CUDA_SUCCESS, 0))
		carve_fault(r, call);
	return r;
}

#define LAUNCH(name)                                                                                \
	static void *real_##name;                                                                   \
	EXPORT CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,      \
			     unsigned by, unsigned bz, unsigned sh, CUstream s, void **p, void **e) \
	{                                                                                           \
		carve_launch_before(s);                                                             \
		carve_tools_hold(1);                                                                \
		CUresult r = REAL(name, launch_fn)(f, gx, gy, gz, bx, by, bz, sh, s, p, e);         \
		carve_tools_hold(0);                                                                \
		carve_launch_after(s, r);                                                           \
		return after(r, #name);                                                             \
	}
LAUNCH(cuLaunchKernel)
LAUNCH(cuLaunchKernel_ptsz)

#define LAUNCH_EX(name)                                                                             \
	static void *real_##name;                                                                   \
	EXPORT CUresult name(const CUlaunchConfig *c, CUfunction f, void **p, void **e)             \
	{                                                                                           \
		CUstream s = c ? c->hStream : 0;                                                    \
		carve_launch_before(s);                                                             \
		carve_tools_hold(1);                                                                \
		CUresult r = REAL(name, launch_ex_fn)(c, f, p, e);                                  \
		carve_tools_hold(0);                                                                \
		carve_launch_after(s, r);                                                           \
		return after(r, #name);                                                             \
	}
LAUNCH_EX(cuLaunchKernelEx)
LAUNCH_EX(cuLaunchKernelEx_ptsz)

#define LAUNCH_COOP(name)                                                                           \
	static void *real_##name;                                                                   \
	EXPORT CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,      \
			     unsigned by, unsigned bz, unsigned sh, CUstream s, void **p)           \
	{                                                                                           \
		carve_launch_before(s);                                                             \
		carve_tools_hold(1);                                                                \
		CUresult r = REAL(name, launch_coop_fn)(f, gx, gy, gz, bx, by, bz, sh, s, p);       \
		carve_tools_hold(0);                                                                \
		carve_launch_after(s, r);                                                           \
		return after(r, #name);                                                             \
	}
LAUNCH_COOP(cuLaunchCooperativeKernel)
LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz)

#define GRAPH_LAUNCH(name)                                            \
	static void *real_##name;                                     \
	EXPORT CUresult name(CUgraphExec g, CUstream s)               \
	{                                                             \
		carve_launch_before(s);                               \
		carve_tools_hold(1);                                  \
		CUresult r = REAL(name, graph_launch_fn)(g, s);       \
		carve_tools_hold(0);                                  \
		carve_launch_after(s, r);                             \
		return after(r, #name);                               \
	}
GRAPH_LAUNCH(cuGraphLaunch)
GRAPH_LAUNCH(cuGraphLaunch_ptsz)

/* Calls that report a fault of work already submitted. */
#define CHECKED(name, type, argtype)                                  \
	static void *real_##name;                                     \
	EXPORT CUresult name(argtype a)                               \
	{                                                             \
		return after(REAL(name, type)(a), #name);             \
	}
CHECKED(cuStreamSynchronize, stream_fn, CUstream)
CHECKED(cuStreamSynchronize_ptsz, stream_fn, CUstream)
CHECKED(cuStreamQuery, stream_fn, CUstream)
CHECKED(cuStreamQuery_ptsz, stream_fn, CUstream)
CHECKED(cuEventSynchronize, event_fn, CUevent)
CHECKED(cuEventQuery, event_fn, CUevent)

static void *real_cuCtxSynchronize;
EXPORT CUresult cuCtxSynchronize(void)
{
	return after(REAL(cuCtxSynchronize, void_fn)(), "cuCtxSynchronize");
}

/* The SM count a program sees is its partition's, as under MPS percentages,
 * unless carve run was given --all-sms. */
static void *real_cuDeviceGetAttribute;
EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev)
{
	CUresult r = REAL(cuDeviceGetAttribute, attr_fn)(v, attr, dev);
	if (r == CUDA_SUCCESS && attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT && v)
		*v = carve_visible_sms(*v);
	return r;
}

/* Calls after which a context's handle may come back for another GPU:
 * gpu.c forgets the contexts it knows. */
typedef CUresult (*ctx_fn)(CUcontext);
typedef CUresult (*dev_fn)(CUdevice);
#define CONTEXT_GOES(name, type, argtype)                             \
	static void *real_##name;                                     \
	EXPORT CUresult name(argtype a)                               \
	{                                                             \
		CUresult r = REAL(name, type)(a);                     \
		carve_contexts_changed();                             \
		return r;                                             \
	}
CONTEXT_GOES(cuCtxDestroy, ctx_fn, CUcontext)
CONTEXT_GOES(cuCtxDestroy_v2, ctx_fn, CUcontext)
CONTEXT_GOES(cuDevicePrimaryCtxRelease, dev_fn, CUdevice)
CONTEXT_GOES(cuDevicePrimaryCtxRelease_v2, dev_fn, CUdevice)
CONTEXT_GOES(cuDevicePrimaryCtxReset, dev_fn, CUdevice)
CONTEXT_GOES(cuDevicePrimaryCtxReset_v2, dev_fn, CUdevice)

static void *real_cuGetExportTable;
EXPORT CUresult cuGetExportTable(const void **table, const void *uuid)
{
	CUresult r = REAL(cuGetExportTable, export_table_fn)(table, uuid);
	if (r == CUDA_SUCCESS && table && *table)
		*table = carve_tools_table(uuid, *table);
	return r;
}

/* Stream capture: launches into a capturing stream are recorded into a
 * graph, not run; tide.c must know. Not exported: the names of these calls
 * changed with their versions, and only the runtime captures. */
#define CAPTURE(name)                                                   \
	static void *real_##name;                                       \
	static CUresult name(CUstream s, int mode)                      \
	{                                                               \
		CUresult r = REAL(name, capture_fn)(s, mode);           \
		if (r == CUDA_SUCCESS)                                  \
			carve_capture(s, 1);                            \
		return r;                                               \
	}
CAPTURE(cuStreamBeginCapture)
CAPTURE(cuStreamBeginCapture_v2)
CAPTURE(cuStreamBeginCapture_ptsz)
CAPTURE(cuStreamBeginCapture_v2_ptsz)

#define CAPTURE_TO_GRAPH(name)                                                                  \
	static void *real_##name;                                                               \
	static CUresult name(CUstream s, CUgraph g, const void *d, const void *dd, size_t n, int m) \
	{                                                                                       \
		CUresult r = REAL(name, capture_graph_fn)(s, g, d, dd, n, m);                   \
		if (r == CUDA_SUCCESS)                                                          \
			carve_capture(s, 1);                                                    \
		return r;                                                                       \
	}
CAPTURE_TO_GRAPH(cuStreamBeginCaptureToGraph)
CAPTURE_TO_GRAPH(cuStreamBeginCaptureToGraph_ptsz)

#define END_CAPTURE(name)                                             \
	static void *real_##name;                                     \
	static CUresult name(CUstream s, CUgraph *g)                  \
	{                                                             \
		CUresult r = REAL(name, end_capture_fn)(s, g);        \
		carve_capture(s, 0);                                  \
		return r;                                             \
	}
END_CAPTURE(cuStreamEndCapture)
END_CAPTURE(cuStreamEndCapture_ptsz)

/* --- the table ------------------------------------------------------------ */

struct sym {
	const char *name;
	void *wrapper;
	void **real;
};

#define SYM(name) { #name, (void *)name, &real_##name }
static const struct sym syms[] = {
	SYM(cuLaunchKernel), SYM(cuLaunchKernel_ptsz),
	SYM(cuLaunchKernelEx), SYM(cuLaunchKernelEx_ptsz),
	SYM(cuLaunchCooperativeKernel), SYM(cuLaunchCooperativeKernel_ptsz),
	SYM(cuGraphLaunch), SYM(cuGraphLaunch_ptsz),
	SYM(cuStreamSynchronize), SYM(cuStreamSynchronize_ptsz),
	SYM(cuStreamQuery), SYM(cuStreamQuery_ptsz),
	SYM(cuEventSynchronize), SYM(cuEventQuery), SYM(cuCtxSynchronize),
	SYM(cuDeviceGetAttribute), SYM(cuGetExportTable),
	SYM(cuCtxDestroy), SYM(cuCtxDestroy_v2),
	SYM(cuDevicePrimaryCtxRelease), SYM(cuDevicePrimaryCtxRelease_v2),
	SYM(cuDevicePrimaryCtxReset), SYM(cuDevicePrimaryCtxReset_v2),
	SYM(cuStreamBeginCapture), SYM(cuStreamBeginCapture_v2),
	SYM(cuStreamBeginCapture_ptsz), SYM(cuStreamBeginCapture_v2_ptsz),
	SYM(cuStreamBeginCaptureToGraph), SYM(cuStreamBeginCaptureToGraph_ptsz),
	SYM(cuStreamEndCapture), SYM(cuStreamEndCapture_ptsz),
};

static const struct sym *find(const char *name)
{
	if (!name || name[0] != 'c' || name[1] != 'u')
		return NULL;
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
		if (strcmp(syms[i].name, name) == 0)
			return &syms[i];
	return NULL;
}

/* swap keeps the driver's function f for s and returns the wrapper. */
static void *swap(const struct sym *s, void *f)
{
	if (!f || f == s->wrapper)
		return f;
	__atomic_store_n(s->real, f, __ATOMIC_RELEASE);
	return s->wrapper;
}

/* --- how programs find the driver's functions ------------------------------ */

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

/* get_proc answers cuGetProcAddress: the runtime fetches the lookup
 * function through itself first, then everything else through what it
 * got. A per-thread-default-stream lookup of a call returns its _ptsz
 * flavour, which has a wrapper of its own. */
static CUresult get_proc(void *real, const char *symbol, void **pfn, int version, uint64_t flags, void *status)
{
	if (!real)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = ((get_proc_fn)real)(symbol, pfn, version, flags, status);
	if (r != CUDA_SUCCESS || !pfn || !*pfn || !symbol)
		return r;
	if (strcmp(symbol, "cuGetProcAddress") == 0) {
		/* the flavour the driver returned: v2 for CUDA 12 and later */
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
	const struct sym *s = NULL;
	if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
		char name[96];
		size_t n = strlen(symbol);
		if (n + sizeof "_ptsz" <= sizeof name) {
			memcpy(name, symbol, n);
			memcpy(name + n, "_ptsz", sizeof "_ptsz");
			s = find(name);
		}
	}
	if (!s)
		s = find(symbol);
	if (s)
		*pfn = swap(s, *pfn);
	return r;
}

/* dlsym answers a program's lookups. A lookup relative to the caller
 * (RTLD_NEXT) is passed on as a sibling call, so that glibc still sees the
 * caller's return address. */
__attribute__((optimize("optimize-sibling-calls"))) EXPORT void *dlsym(void *handle, const char *name)
{
	if (handle == RTLD_NEXT)
		return carve_glibc_dlsym()(handle, name);
	void *f = carve_glibc_dlsym()(handle, name);
	if (!f || name[0] != 'c' || name[1] != 'u')
		return f;
	if (strcmp(name, "cuGetProcAddress_v2") == 0) {
		__atomic_store_n(&real_get_proc_v2, f, __ATOMIC_RELEASE);
		return (void *)wrap_get_proc_v2;
	}
	if (strcmp(name, "cuGetProcAddress") == 0) {
		__atomic_store_n(&real_get_proc_v1, f, __ATOMIC_RELEASE);
		return (void *)wrap_get_proc_v1;
	}
	const struct sym *s = find(name);
	return s ? swap(s, f) : f;
}
