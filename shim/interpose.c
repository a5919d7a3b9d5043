/*
 * interpose.c: the driver calls libcarve.so sees, named in one table.
 *
 * Frameworks reach the driver by dlopen("libcuda.so.1") and dlsym, then
 * cuGetProcAddress for everything else, which bypasses symbol interposition
 * (HARDWARE.md 8). So the shim defines dlsym, and answers a lookup of a
 * call in syms[] (through dlsym or cuGetProcAddress) with its own wrapper,
 * keeping the driver's function for it. Programs linked against libcuda
 * directly (Triton's launcher) reach the same wrappers by their exported
 * names, which resolve the driver's function from the next library on
 * first use.
 *
 * cuGetProcAddress is asked for a call's base name and a CUDA version, and
 * answers with the flavour of the call that version means: "cuMemAlloc"
 * is cuMemAlloc_v2 from CUDA 3.2 (3020) and the 32-bit cuMemAlloc below;
 * with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, a call's _ptsz
 * flavour where it has one. So each entry of syms[] is one flavour, with
 * the base name and the version from which the base means it, and a
 * lookup swaps in the wrapper of exactly the flavour the driver returned:
 * a wrapper never holds another flavour's function, whose arguments differ.
 * A flavour the shim does not count (the 32-bit arrays of CUDA before 3.2)
 * has a wrapper that refuses it, so that no allocation escapes the memory
 * account. CARVE_TRACE_PROCS=1 logs each lookup of a call that takes,
 * frees or reports device memory, and what the shim made of it (trace.c).
 *
 * The wrappers add what carve needs around each call: the SM count of the
 * partition (cuDeviceGetAttribute), the first fault a call returns
 * (fault.c), carve's place beside other subscribers of the launch callback
 * (tools.c), the LS/BE control of launches (tide.c), the contexts that
 * go, whose GPUs gpu.c remembers, the tenant's device memory (mem.c), and
 * graphs launched on the current mask (graph.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
#define DRIVER(name) resolve(&real_##name, #name)

/* --- the wrappers --------------------------------------------------------- */

/* Launches: the stream is where tide.c tracks and holds work. */
/* launch_fn, launch_ex_fn: shim.h */
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

/* PTSZ_OF: is the call named name the per-thread default stream's flavour? */
#define PTSZ_OF(name) (sizeof(#name) > 5 && __builtin_memcmp(#name + sizeof(#name) - 6, "_ptsz", 5) == 0)

/* cuLaunchKernel and cuLaunchKernelEx go through slice.c, which makes the
 * launch through tide's gate, whole or (a BE's, while an LS tenant is
 * active) in pieces. */
#define LAUNCH(name)                                                                                \
	static void *real_##name;                                                                   \
	EXPORT CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,      \
			     unsigned by, unsigned bz, unsigned sh, CUstream s, void **p, void **e) \
	{                                                                                           \
		struct carve_launch l = {DRIVER(name), NULL, PTSZ_OF(name), f, gx, gy, gz, bx, by, bz, sh, s, p, e}; \
		return after(carve_slice_launch(&l), #name);                                        \
	}
LAUNCH(cuLaunchKernel)
LAUNCH(cuLaunchKernel_ptsz)

/* launch_ex_none makes a cuLaunchKernelEx call with no config, whose
 * error the driver returns, as any launch goes: through tide's gate (on
 * the legacy stream) and under the tools hold; slicing has no grid to
 * cut. */
static CUresult launch_ex_none(void *real, CUfunction f, void **p, void **e)
{
	carve_launch_before(0, f, 1);
	carve_tools_hold(1);
	CUresult r = ((launch_ex_fn)real)(NULL, f, p, e);
	carve_tools_hold(0);
	carve_launch_after(0, r);
	return r;
}

#define LAUNCH_EX(name)                                                                             \
	static void *real_##name;                                                                   \
	EXPORT CUresult name(const CUlaunchConfig *c, CUfunction f, void **p, void **e)             \
	{                                                                                           \
		if (!c)                                                                             \
			return after(launch_ex_none(DRIVER(name), f, p, e), #name);                 \
		struct carve_launch l = {DRIVER(name), c, PTSZ_OF(name), f, c->gridDimX, c->gridDimY, \
					 c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,     \
					 c->sharedMemBytes, c->hStream, p, e};                      \
		return after(carve_slice_launch(&l), #name);                                        \
	}
LAUNCH_EX(cuLaunchKernelEx)
LAUNCH_EX(cuLaunchKernelEx_ptsz)

#define LAUNCH_COOP(name)                                                                           \
	static void *real_##name;                                                                   \
	EXPORT CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,      \
			     unsigned by, unsigned bz, unsigned sh, CUstream s, void **p)           \
	{                                                                                           \
		carve_launch_before(s, f, 1);                                                       \
		carve_tools_hold(1);                                                                \
		CUresult r = REAL(name, launch_coop_fn)(f, gx, gy, gz, bx, by, bz, sh, s, p);       \
		carve_tools_hold(0);                                                                \
		carve_launch_after(s, r);                                                           \
		return after(r, #name);                                                             \
	}
LAUNCH_COOP(cuLaunchCooperativeKernel)
LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz)

/* A graph's launch may take graph memory (mem.c); it launches the graph
 * instantiated anew on the current mask, if it moved (graph.c), made
 * before tide's gate, whose narrowing is a launch's, not the graph's. */
#define GRAPH_LAUNCH(name)                                            \
	static void *real_##name;                                     \
	EXPORT CUresult name(CUgraphExec g, CUstream s)               \
	{                                                             \
		struct carve_graph_launch m;                          \
		if (!carve_mem_graph_before(g, &m))                   \
			return CUDA_ERROR_OUT_OF_MEMORY;              \
		CUgraphExec x = carve_graph_target(g);                \
		carve_launch_before(s, NULL, 1);                      \
		carve_tools_hold(1);                                  \
		CUresult r = REAL(name, graph_launch_fn)(x, s);       \
		carve_tools_hold(0);                                  \
		carve_launch_after(s, r);                             \
		carve_mem_graph_after(&m);                            \
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
CHECKED(cuStreamQuery, stream_fn, CUstream)
CHECKED(cuStreamQuery_ptsz, stream_fn, CUstream)
CHECKED(cuEventQuery, event_fn, CUevent)

/* At a synchronization pools give back what they hold beyond their
 * release threshold (mem.c reads them again). */
#define SYNCED(name, type, argtype)                                   \
	static void *real_##name;                                     \
	EXPORT CUresult name(argtype a)                               \
	{                                                             \
		CUresult r = REAL(name, type)(a);                     \
		if (r == CUDA_SUCCESS)                                \
			carve_mem_synced();                           \
		return after(r, #name);                               \
	}
SYNCED(cuStreamSynchronize, stream_fn, CUstream)
SYNCED(cuStreamSynchronize_ptsz, stream_fn, CUstream)
SYNCED(cuEventSynchronize, event_fn, CUevent)

static void *real_cuCtxSynchronize;
EXPORT CUresult cuCtxSynchronize(void)
{
	CUresult r = REAL(cuCtxSynchronize, void_fn)();
	if (r == CUDA_SUCCESS)
		carve_mem_synced();
	return after(r, "cuCtxSynchronize");
}

/* The SM count a program sees of a device is its partition's there (the
 * device's UUID finds it), as under MPS percentages, unless carve run was
 * given --all-sms; of a device it has no partition on, the whole GPU's. */
static void *real_cuDeviceGetAttribute;
EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev)
{
	CUresult r = REAL(cuDeviceGetAttribute, attr_fn)(v, attr, dev);
	if (r == CUDA_SUCCESS && attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT && v && carve_block)
		*v = carve_visible_sms(carve_device_gpu(dev), *v);
	return r;
}

/* Calls after which a context's handle may come back for another GPU:
 * gpu.c forgets the contexts it knows. The memory of a context that goes
 * goes with it (mem.c), and slicing cuts no more of its functions
 * (slice.c). */
typedef CUresult (*ctx_fn)(CUcontext);
typedef CUresult (*dev_fn)(CUdevice);
#define CONTEXT_GOES(name)                                            \
	static void *real_##name;                                     \
	EXPORT CUresult name(CUcontext c)                             \
	{                                                             \
		CUresult r = REAL(name, ctx_fn)(c);                   \
		carve_contexts_changed();                             \
		if (r == CUDA_SUCCESS) {                              \
			carve_mem_context_gone(c);                    \
			carve_slice_context_gone(c);                  \
		}                                                     \
		return r;                                             \
	}
CONTEXT_GOES(cuCtxDestroy)
CONTEXT_GOES(cuCtxDestroy_v2)

#define PRIMARY_GOES(name, reset)                                     \
	static void *real_##name;                                     \
	EXPORT CUresult name(CUdevice d)                              \
	{                                                             \
		CUcontext c = carve_mem_primary(d);                   \
		CUresult r = REAL(name, dev_fn)(d);                   \
		carve_contexts_changed();                             \
		if (r == CUDA_SUCCESS) {                              \
			carve_mem_primary_after(d, c, reset);         \
			carve_slice_context_gone(c);                  \
		}                                                     \
		return r;                                             \
	}
PRIMARY_GOES(cuDevicePrimaryCtxRelease, 0)
PRIMARY_GOES(cuDevicePrimaryCtxRelease_v2, 0)
PRIMARY_GOES(cuDevicePrimaryCtxReset, 1)
PRIMARY_GOES(cuDevicePrimaryCtxReset_v2, 1)

static void *real_cuGetExportTable;
EXPORT CUresult cuGetExportTable(const void **table, const void *uuid)
{
	CUresult r = REAL(cuGetExportTable, export_table_fn)(table, uuid);
	if (r == CUDA_SUCCESS && table && *table)
		*table = carve_tools_table(uuid, *table);
	return r;
}

/* An LS tenant's events made for timing (timing.c). */
typedef CUresult (*event_create_fn)(CUevent *, unsigned);
typedef CUresult (*event_record_fn)(CUevent, CUstream);
typedef CUresult (*event_record_flags_fn)(CUevent, CUstream, unsigned);
static void *real_cuEventCreate;
EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags)
{
	CUresult r = REAL(cuEventCreate, event_create_fn)(e, flags);
	if (r == CUDA_SUCCESS && e)
		carve_event_created(*e, flags);
	return r;
}

#define EVENT_DESTROY(name)                                           \
	static void *real_##name;                                     \
	EXPORT CUresult name(CUevent e)                               \
	{                                                             \
		carve_event_destroyed(e);                             \
		return REAL(name, event_fn)(e);                       \
	}
EVENT_DESTROY(cuEventDestroy)
EVENT_DESTROY(cuEventDestroy_v2)

#define EVENT_RECORD(name)                                            \
	static void *real_##name;                                     \
	EXPORT CUresult name(CUevent e, CUstream s)                   \
	{                                                             \
		carve_event_recorded(e);                              \
		return REAL(name, event_record_fn)(e, s);             \
	}
EVENT_RECORD(cuEventRecord)
EVENT_RECORD(cuEventRecord_ptsz)

#define EVENT_RECORD_FLAGS(name)                                      \
	static void *real_##name;                                     \
	EXPORT CUresult name(CUevent e, CUstream s, unsigned f)       \
	{                                                             \
		carve_event_recorded(e);                              \
		return REAL(name, event_record_flags_fn)(e, s, f);    \
	}
EVENT_RECORD_FLAGS(cuEventRecordWithFlags)
EVENT_RECORD_FLAGS(cuEventRecordWithFlags_ptsz)

/* Stream capture: launches into a capturing stream are recorded into a
 * graph, not run; tide.c must know. A capture counts from before the
 * driver's begin (carve_capture, which waits out a poll of the LS poller
 * under way), and no longer if the begin fails: a query of the stream
 * between the driver's begin and the count would spoil the capture. Not
 * exported: the names of these calls changed with their versions, and
 * only the runtime captures. */
#define CAPTURE(name)                                                   \
	static void *real_##name;                                       \
	static CUresult name(CUstream s, int mode)                      \
	{                                                               \
		carve_capture(s, 1);                                    \
		CUresult r = REAL(name, capture_fn)(s, mode);           \
		if (r != CUDA_SUCCESS)                                  \
			carve_capture(s, 0);                            \
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
		carve_capture(s, 1);                                                            \
		CUresult r = REAL(name, capture_graph_fn)(s, g, d, dd, n, m);                   \
		if (r != CUDA_SUCCESS)                                                          \
			carve_capture(s, 0);                                                    \
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

/* --- device memory (mem.c) ------------------------------------------------- */

/* Each wrapper hands mem.c the driver's function of its own flavour. */
#define MEM(name, params, ...)                                              \
	static void *real_##name;                                           \
	EXPORT CUresult name params                                         \
	{                                                                   \
		return __VA_ARGS__;                                         \
	}
MEM(cuMemAlloc_v2, (CUdeviceptr *p, size_t n), carve_mem_alloc(DRIVER(cuMemAlloc_v2), p, n))
MEM(cuMemAlloc, (unsigned *p, unsigned n), carve_mem_alloc_v1(DRIVER(cuMemAlloc), p, n))
MEM(cuMemAllocManaged, (CUdeviceptr *p, size_t n, unsigned f), carve_mem_alloc_managed(DRIVER(cuMemAllocManaged), p, n, f))
MEM(cuMemAllocPitch_v2, (CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned e),
    carve_mem_alloc_pitch(DRIVER(cuMemAllocPitch_v2), p, pitch, w, h, e))
MEM(cuMemAllocPitch, (unsigned *p, unsigned *pitch, unsigned w, unsigned h, unsigned e),
    carve_mem_alloc_pitch_v1(DRIVER(cuMemAllocPitch), p, pitch, w, h, e))
MEM(cuMemFree_v2, (CUdeviceptr p), carve_mem_free(DRIVER(cuMemFree_v2), p))
MEM(cuMemFree, (unsigned p), carve_mem_free_v1(DRIVER(cuMemFree), p))
MEM(cuMemGetInfo_v2, (size_t *free, size_t *total), carve_mem_info(DRIVER(cuMemGetInfo_v2), free, total))
MEM(cuMemGetInfo, (unsigned *free, unsigned *total), carve_mem_info_v1(DRIVER(cuMemGetInfo), free, total))
MEM(cuDeviceTotalMem_v2, (size_t *n, CUdevice d), carve_mem_total(DRIVER(cuDeviceTotalMem_v2), n, d))
MEM(cuDeviceTotalMem, (unsigned *n, CUdevice d), carve_mem_total_v1(DRIVER(cuDeviceTotalMem), n, d))

MEM(cuMemAllocAsync, (CUdeviceptr *p, size_t n, CUstream s), carve_mem_alloc_async(DRIVER(cuMemAllocAsync), p, n, s))
MEM(cuMemAllocAsync_ptsz, (CUdeviceptr *p, size_t n, CUstream s),
    carve_mem_alloc_async(DRIVER(cuMemAllocAsync_ptsz), p, n, s))
MEM(cuMemAllocFromPoolAsync, (CUdeviceptr *p, size_t n, CUmemoryPool m, CUstream s),
    carve_mem_alloc_pool(DRIVER(cuMemAllocFromPoolAsync), p, n, m, s))
MEM(cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr *p, size_t n, CUmemoryPool m, CUstream s),
    carve_mem_alloc_pool(DRIVER(cuMemAllocFromPoolAsync_ptsz), p, n, m, s))
MEM(cuMemFreeAsync, (CUdeviceptr p, CUstream s), carve_mem_free_async(DRIVER(cuMemFreeAsync), p, s))
MEM(cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), carve_mem_free_async(DRIVER(cuMemFreeAsync_ptsz), p, s))
MEM(cuMemPoolCreate, (CUmemoryPool *m, const void *props), carve_mem_pool_create(DRIVER(cuMemPoolCreate), m, props))
MEM(cuMemPoolDestroy, (CUmemoryPool m), carve_mem_pool_destroy(DRIVER(cuMemPoolDestroy), m))
MEM(cuMemPoolTrimTo, (CUmemoryPool m, size_t keep), carve_mem_pool_trim(DRIVER(cuMemPoolTrimTo), m, keep))
MEM(cuMemPoolSetAttribute, (CUmemoryPool m, int attr, void *v),
    carve_mem_pool_set(DRIVER(cuMemPoolSetAttribute), m, attr, v))
MEM(cuDeviceSetMemPool, (CUdevice d, CUmemoryPool m), carve_mem_device_pool(DRIVER(cuDeviceSetMemPool), d, m))

/* Every flavour of cuGraphInstantiate takes the executable graph and the
 * graph first, then at most three integer or pointer arguments (an error
 * node, a log and its size; flags; the parameters), which go through in
 * the registers they came in (x86-64 and arm64 pass six such arguments in
 * registers). */
#define INSTANTIATE(name, flavour)                                                                  \
	MEM(name, (CUgraphExec * e, CUgraph g, void *a, void *b, size_t c),                         \
	    carve_graph_instantiate(DRIVER(name), CARVE_INSTANTIATE_##flavour, e, g, a, b, c))
INSTANTIATE(cuGraphInstantiate, PLAIN)
INSTANTIATE(cuGraphInstantiate_v2, PLAIN)
INSTANTIATE(cuGraphInstantiateWithFlags, FLAGS)
INSTANTIATE(cuGraphInstantiateWithParams, PARAMS)
INSTANTIATE(cuGraphInstantiateWithParams_ptsz, PARAMS)
MEM(cuGraphExecDestroy, (CUgraphExec e), carve_graph_exec_destroy(DRIVER(cuGraphExecDestroy), e))
/* The tenant's changes of an executable graph, which graph.c follows in
 * the graph it instantiates anew; each flavour takes the graph and a node
 * first, then at most two integer or pointer arguments. */
#define GRAPH_EDIT(name, how)                                                                       \
	MEM(name, (CUgraphExec e, CUgraphNode n, void *p, void *q),                                 \
	    carve_graph_edit(DRIVER(name), CARVE_EDIT_##how, e, n, p, q))
GRAPH_EDIT(cuGraphExecKernelNodeSetParams, KERNEL)
GRAPH_EDIT(cuGraphExecKernelNodeSetParams_v2, KERNEL_V2)
GRAPH_EDIT(cuGraphExecNodeSetParams, NODE)
GRAPH_EDIT(cuGraphExecMemcpyNodeSetParams, OTHER)
GRAPH_EDIT(cuGraphExecMemsetNodeSetParams, OTHER)
GRAPH_EDIT(cuGraphExecHostNodeSetParams, OTHER)
GRAPH_EDIT(cuGraphExecChildGraphNodeSetParams, OTHER)
GRAPH_EDIT(cuGraphExecEventRecordNodeSetEvent, OTHER)
GRAPH_EDIT(cuGraphExecEventWaitNodeSetEvent, OTHER)
GRAPH_EDIT(cuGraphExecExternalSemaphoresSignalNodeSetParams, OTHER)
GRAPH_EDIT(cuGraphExecExternalSemaphoresWaitNodeSetParams, OTHER)
GRAPH_EDIT(cuGraphExecBatchMemOpNodeSetParams, OTHER)
GRAPH_EDIT(cuGraphNodeSetEnabled, OTHER)
#define GRAPH_UPDATE(name)                                                                          \
	MEM(name, (CUgraphExec e, CUgraph g, void *a, void *b), carve_graph_update(DRIVER(name), e, g, a, b))
GRAPH_UPDATE(cuGraphExecUpdate)
GRAPH_UPDATE(cuGraphExecUpdate_v2)
MEM(cuGraphAddMemAllocNode, (CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t nd, void *params),
    carve_mem_alloc_node(DRIVER(cuGraphAddMemAllocNode), n, g, deps, nd, params))
MEM(cuDeviceGraphMemTrim, (CUdevice d), carve_mem_graph_trim(DRIVER(cuDeviceGraphMemTrim), d))

/* An upload takes a graph's memory as its launch would, of the graph a
 * launch would launch. */
#define GRAPH_UPLOAD(name)                                            \
	static void *real_##name;                                     \
	EXPORT CUresult name(CUgraphExec g, CUstream s)               \
	{                                                             \
		struct carve_graph_launch m;                          \
		if (!carve_mem_graph_before(g, &m))                   \
			return CUDA_ERROR_OUT_OF_MEMORY;              \
		CUresult r = REAL(name, graph_launch_fn)(carve_graph_target(g), s); \
		carve_mem_graph_after(&m);                            \
		return r;                                             \
	}
GRAPH_UPLOAD(cuGraphUpload)
GRAPH_UPLOAD(cuGraphUpload_ptsz)

MEM(cuArrayCreate_v2, (CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d), carve_mem_array(DRIVER(cuArrayCreate_v2), a, d))
MEM(cuArray3DCreate_v2, (CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d),
    carve_mem_array3d(DRIVER(cuArray3DCreate_v2), a, d))
MEM(cuMipmappedArrayCreate, (CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels),
    carve_mem_mipmap(DRIVER(cuMipmappedArrayCreate), a, d, levels))
MEM(cuArrayDestroy, (CUarray a), carve_mem_array_destroy(DRIVER(cuArrayDestroy), a))
MEM(cuMipmappedArrayDestroy, (CUmipmappedArray a), carve_mem_mipmap_destroy(DRIVER(cuMipmappedArrayDestroy), a))

MEM(cuMemCreate, (CUmemGenericAllocationHandle *h, size_t n, const void *prop, unsigned long long f),
    carve_mem_create(DRIVER(cuMemCreate), h, n, prop, f))
MEM(cuMemRelease, (CUmemGenericAllocationHandle h), carve_mem_release(DRIVER(cuMemRelease), h))
MEM(cuMemMap, (CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long f),
    carve_mem_map(DRIVER(cuMemMap), p, n, off, h, f))
MEM(cuMemUnmap, (CUdeviceptr p, size_t n), carve_mem_unmap(DRIVER(cuMemUnmap), p, n))
MEM(cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle *h, void *addr),
    carve_mem_retain(DRIVER(cuMemRetainAllocationHandle), h, addr))
MEM(cuCtxSetLimit, (int what, size_t value), carve_mem_set_limit(DRIVER(cuCtxSetLimit), what, value))

/* The arrays of CUDA before 3.2, with 32-bit sizes, are not counted: under
 * carve they are refused. */
static int refused_said;
#define REFUSED(name, params, ...)                                                                   \
	static void *real_##name;                                                                    \
	EXPORT CUresult name params                                                                  \
	{                                                                                            \
		if (!carve_block)                                                                    \
			return ((CUresult(*) params)DRIVER(name))(__VA_ARGS__);                     \
		if (!__atomic_exchange_n(&refused_said, 1, __ATOMIC_RELAXED))                        \
			carve_say("%s of CUDA before 3.2 (32-bit sizes) is not counted against the " \
				  "tenant's memory: refused (CUDA_ERROR_NOT_SUPPORTED)", #name);     \
		return CUDA_ERROR_NOT_SUPPORTED;                                                     \
	}
REFUSED(cuArrayCreate, (CUarray * a, const void *d), a, d)
REFUSED(cuArray3DCreate, (CUarray * a, const void *d), a, d)

/* --- the table ------------------------------------------------------------ */

struct sym {
	const char *name; /* the flavour: its exported name, and the wrapper's */
	const char *base; /* the name cuGetProcAddress is asked for */
	int since;        /* the CUDA version from which base means this flavour */
	int ptsz;         /* the flavour of the per-thread default stream */
	int refuse;       /* the wrapper refuses it under carve */
	void *wrapper;
	void **real;
};

#define SYM(name, base, since) {#name, #base, since, 0, 0, (void *)name, &real_##name}
#define PTSZ(name, base, since) {#name, #base, since, 1, 0, (void *)name, &real_##name}
#define REFUSE(name, base, since) {#name, #base, since, 0, 1, (void *)name, &real_##name}
#define ONE(name) SYM(name, name, 0)
static const struct sym syms[] = {
	ONE(cuLaunchKernel), PTSZ(cuLaunchKernel_ptsz, cuLaunchKernel, 7000),
	ONE(cuLaunchKernelEx), PTSZ(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060),
	ONE(cuLaunchCooperativeKernel), PTSZ(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000),
	ONE(cuGraphLaunch), PTSZ(cuGraphLaunch_ptsz, cuGraphLaunch, 10000),
	ONE(cuStreamSynchronize), PTSZ(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000),
	ONE(cuStreamQuery), PTSZ(cuStreamQuery_ptsz, cuStreamQuery, 7000),
	ONE(cuEventSynchronize), ONE(cuEventQuery), ONE(cuCtxSynchronize),
	ONE(cuDeviceGetAttribute), ONE(cuGetExportTable),
	ONE(cuCtxDestroy), SYM(cuCtxDestroy_v2, cuCtxDestroy, 4000),
	ONE(cuDevicePrimaryCtxRelease), SYM(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000),
	ONE(cuDevicePrimaryCtxReset), SYM(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000),
	ONE(cuStreamBeginCapture), SYM(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010),
	PTSZ(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000),
	PTSZ(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010),
	ONE(cuStreamBeginCaptureToGraph), PTSZ(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 12030),
	ONE(cuStreamEndCapture), PTSZ(cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000),
	ONE(cuEventCreate), ONE(cuEventDestroy), SYM(cuEventDestroy_v2, cuEventDestroy, 4000),
	ONE(cuEventRecord), PTSZ(cuEventRecord_ptsz, cuEventRecord, 7000),
	ONE(cuEventRecordWithFlags), PTSZ(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags, 11010),

	/* device memory */
	ONE(cuMemAlloc), SYM(cuMemAlloc_v2, cuMemAlloc, 3020),
	ONE(cuMemAllocPitch), SYM(cuMemAllocPitch_v2, cuMemAllocPitch, 3020),
	ONE(cuMemFree), SYM(cuMemFree_v2, cuMemFree, 3020),
	ONE(cuMemGetInfo), SYM(cuMemGetInfo_v2, cuMemGetInfo, 3020),
	ONE(cuDeviceTotalMem), SYM(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020),
	ONE(cuMemAllocManaged),
	ONE(cuMemAllocAsync), PTSZ(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020),
	ONE(cuMemAllocFromPoolAsync), PTSZ(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020),
	ONE(cuMemFreeAsync), PTSZ(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020),
	ONE(cuMemPoolCreate), ONE(cuMemPoolDestroy), ONE(cuMemPoolTrimTo), ONE(cuMemPoolSetAttribute),
	ONE(cuDeviceSetMemPool),
	ONE(cuGraphInstantiate), SYM(cuGraphInstantiate_v2, cuGraphInstantiate, 11000),
	SYM(cuGraphInstantiateWithFlags, cuGraphInstantiate, 12000), ONE(cuGraphInstantiateWithFlags),
	ONE(cuGraphInstantiateWithParams), PTSZ(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams, 12000),
	ONE(cuGraphExecDestroy), ONE(cuGraphAddMemAllocNode), ONE(cuDeviceGraphMemTrim),
	ONE(cuGraphUpload), PTSZ(cuGraphUpload_ptsz, cuGraphUpload, 11010),
	ONE(cuGraphExecKernelNodeSetParams),
	SYM(cuGraphExecKernelNodeSetParams_v2, cuGraphExecKernelNodeSetParams, 12000),
	ONE(cuGraphExecNodeSetParams), ONE(cuGraphExecMemcpyNodeSetParams), ONE(cuGraphExecMemsetNodeSetParams),
	ONE(cuGraphExecHostNodeSetParams), ONE(cuGraphExecChildGraphNodeSetParams),
	ONE(cuGraphExecEventRecordNodeSetEvent), ONE(cuGraphExecEventWaitNodeSetEvent),
	ONE(cuGraphExecExternalSemaphoresSignalNodeSetParams), ONE(cuGraphExecExternalSemaphoresWaitNodeSetParams),
	ONE(cuGraphExecBatchMemOpNodeSetParams), ONE(cuGraphNodeSetEnabled),
	ONE(cuGraphExecUpdate), SYM(cuGraphExecUpdate_v2, cuGraphExecUpdate, 12000),
	REFUSE(cuArrayCreate, cuArrayCreate, 0), SYM(cuArrayCreate_v2, cuArrayCreate, 3020),
	REFUSE(cuArray3DCreate, cuArray3DCreate, 0), SYM(cuArray3DCreate_v2, cuArray3DCreate, 3020),
	ONE(cuArrayDestroy), ONE(cuMipmappedArrayCreate), ONE(cuMipmappedArrayDestroy),
	ONE(cuMemCreate), ONE(cuMemRelease), ONE(cuMemMap), ONE(cuMemUnmap), ONE(cuMemRetainAllocationHandle),
	ONE(cuCtxSetLimit),
};

#define NSYMS (sizeof syms / sizeof syms[0])

/* exported finds the flavour of that exported name (dlsym's lookups). */
static const struct sym *exported(const char *name)
{
	if (!name || name[0] != 'c' || name[1] != 'u')
		return NULL;
	for (size_t i = 0; i < NSYMS; i++)
		if (strcmp(syms[i].name, name) == 0)
			return &syms[i];
	return NULL;
}

/* flavour finds what cuGetProcAddress(base, version) returns: the entry of
 * base, of the stream flavour asked, with the latest since not after
 * version. */
static const struct sym *flavour(const char *base, int version, int ptsz)
{
	const struct sym *best = NULL;
	for (size_t i = 0; i < NSYMS; i++) {
		const struct sym *s = &syms[i];
		if (s->ptsz == ptsz && s->since <= version && (!best || s->since > best->since) &&
		    strcmp(s->base, base) == 0)
			best = s;
	}
	return best;
}

/* versioned: the entry for a lookup of base at version; a per-thread
 * default stream lookup of a call without a _ptsz flavour (then, or ever)
 * gets the plain one, as the driver answers. */
static const struct sym *versioned(const char *base, int version, uint64_t flags)
{
	if (!base || base[0] != 'c' || base[1] != 'u')
		return NULL;
	const struct sym *s = NULL;
	if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
		s = flavour(base, version, 1);
	return s ? s : flavour(base, version, 0);
}

/* swap keeps the driver's function f for s and returns the wrapper. */
static void *swap(const struct sym *s, void *f)
{
	if (!f || f == s->wrapper)
		return f;
	__atomic_store_n(s->real, f, __ATOMIC_RELEASE);
	return s->wrapper;
}

/* trace logs a lookup for CARVE_TRACE_PROCS (trace.c). */
static void trace(const char *name, int version, uint64_t flags, const struct sym *s, int found)
{
	carve_trace_proc(name, version, flags, s ? s->name : NULL, s && s->refuse, found);
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
 * got, each call by its base name and the runtime's version. */
static CUresult get_proc(void *real, const char *symbol, void **pfn, int version, uint64_t flags, void *status)
{
	if (!real)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = ((get_proc_fn)real)(symbol, pfn, version, flags, status);
	if (r != CUDA_SUCCESS || !pfn || !*pfn || !symbol) {
		trace(symbol, version, flags, NULL, 0);
		return r;
	}
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
	const struct sym *s = versioned(symbol, version, flags);
	if (s)
		*pfn = swap(s, *pfn);
	trace(symbol, version, flags, s, 1);
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
	const struct sym *s = exported(name);
	trace(name, -1, 0, s, 1);
	return s ? swap(s, f) : f;
}
