/*
 * fake.h: what the files of the fake libcuda.so.1 share. The fake is a
 * driver for testing libcarve.so without a GPU. It offers what the shim and
 * the frameworks it sits under use, each in its file:
 *
 *   - gpus.c: the GPUs' data, all of it: two devices with UUIDs of their
 *     own, H100s of 132 SMs (cuDeviceGetAttribute), and the device memory
 *     they draw on (FAKECUDA_MEM_MB MiB, default 81079 as an H100's, or
 *     what fakecuda_mem_mb sets);
 *   - core.c: what every file uses: the lock, the fault, the clock, the
 *     calls counted (fakecuda_calls) and those made inside a launch
 *     callback;
 *   - tools.c: the launch-tools export table (subscribe, enable), with one
 *     subscriber at a time as the real driver allows (a second gets
 *     CUDA_ERROR_ALREADY_ACQUIRED); cuInit, and FAKECUDA_INJECT=1: cuInit
 *     loads a profiler's injection, as Nsight Compute's does, which
 *     subscribes to the launch callback through the cuGetExportTable the
 *     program would find (dlsym RTLD_DEFAULT); =2: it subscribes through
 *     the driver's own table, bypassing any shim;
 *   - devices.c: a primary context on each device, and contexts made and
 *     destroyed (cuCtxCreate, cuCtxDestroy), current per thread;
 *     CUDA_VISIBLE_DEVICES ("1,0", "1") orders and hides the devices, as
 *     the driver's does; and every call carve's own Go code binds
 *     (internal/cuda), so that carve itself runs on the fake
 *     (CARVE_LIBCUDA): the devices, their names and UUIDs, and the rest
 *     refusing with CUDA_ERROR_NOT_SUPPORTED;
 *   - streams.c: streams (each context with a default stream of its own),
 *     events, stream capture and synchronization on the clock (a query
 *     of a capturing stream spoils its capture; a test may hold the next
 *     begin of a capture on the clock, fakecuda_begin_capture_wait);
 *   - launch.c: kernel launches through every entry point, each calling
 *     the launch callback with a synthetic descriptor the way the driver
 *     does, and taking FAKECUDA_KERNEL_US microseconds on its stream; and
 *     kernels with blocks (slicing, slice.c): functions 1..FAKE_FNS have
 *     code at program_of(f), which the descriptor names, and a launch of
 *     one runs blocks [S, GRID_WIDTH) of its grid as the callback left the
 *     descriptor, S read from the prologue of the copy PROGRAM_ADDRESS
 *     points at (made by the shim's copy kernel, which, with its scan
 *     kernel, this fake runs on the host from a module of the shim's PTX);
 *     each block run is counted (fakecuda_runs), and a launch takes its
 *     share of FAKECUDA_KERNEL_US by the blocks it ran, its time on the GPU
 *     kept (fakecuda_kernels); one block of each is resident an SM
 *     (cuOccupancyMaxActiveBlocksPerMultiprocessor). Function 5 has
 *     compile-time cluster dimensions, and function 6's code has no end
 *     marker. FAKECUDA_FAULT_AT=N: the N-th launch faults; every call
 *     after it returns CUDA_ERROR_ILLEGAL_ADDRESS, as a real context does;
 *   - mem.c: device memory: plain, pitched and managed allocations and
 *     their 32-bit flavours of CUDA before 3.2, arrays, the device malloc
 *     heap, IPC handles (opening one takes nothing), cuMemGetInfo and
 *     cuDeviceTotalMem; an allocation past the memory fails with
 *     CUDA_ERROR_OUT_OF_MEMORY, and fakecuda_mem says what is taken and
 *     the most that ever was; a destroyed context's memory is freed;
 *   - pools.c: stream-ordered pools that grow by 2 MiB and keep what is
 *     freed up to their release threshold (given back at a
 *     synchronization, or by a trim), and graphs with memory allocation
 *     nodes (added, or captured from cuMemAllocAsync) whose memory the
 *     device's graph memory reserves at launch;
 *   - graphs.c: graphs as the hardware runs them: kernel nodes whose
 *     descriptors are written, and seen by the launch callback, when the
 *     graph is instantiated, and which its launches replay unchanged;
 *     clones and their nodes; an executable graph's kernel nodes set
 *     (cuGraphExecKernelNodeSetParams) or updated from another graph
 *     (cuGraphExecUpdate), their masks kept; the graphs and executable
 *     graphs alive and the instantiations made (fakecuda_graphs), and what
 *     the last replay ran (fakecuda_replay);
 *   - vmm.c: the virtual memory API;
 *   - procs.c: cuGetProcAddress (v1 and v2, with the per-thread default
 *     stream flavour) answering with the functions above by name and
 *     version ("cuMemAlloc" is cuMemAlloc_v2 from 3020, the 32-bit one
 *     before).
 *
 * Test entry points (fakecuda_*) let a test see what the shim did.
 * FAKECUDA_NO_TABLE=1 makes cuGetExportTable fail (a driver without the
 * interface); FAKECUDA_NEED_INIT=1 makes it fail until cuInit was called.
 * With CARVE_TEST_CLOCK, its kernels and synchronizations run on the test's
 * virtual clock (../test/vclock.h) instead of CLOCK_MONOTONIC.
 *
 * The library exports the driver's calls (cu*) and the test entry points
 * (fakecuda_*) alone: what this header declares between its visibility
 * pragmas stays inside it, as it would if the fake were one file.
 */
#ifndef CARVE_FAKE_H
#define CARVE_FAKE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../carve_tmd.h"
#include "../cuda_api.h"

#pragma GCC visibility push(hidden)

/* --- gpus.c ---------------------------------------------------------------- */

#define FAKE_GPUS 2

struct fake_gpu {
	unsigned char uuid[16];
	const char *name;
	int sms; /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
};
extern const struct fake_gpu fake_gpus[FAKE_GPUS];
extern const unsigned long long fake_mem_mb; /* unless FAKECUDA_MEM_MB says */

/* --- core.c ---------------------------------------------------------------- */

extern pthread_mutex_t mu; /* streams, launches, contexts made, the callback */
extern int faulted;        /* a launch faulted (FAKECUDA_FAULT_AT) */
int error(void);           /* 700 once a launch faulted, else 0 */

uint64_t now_ns(void); /* the clock: CLOCK_MONOTONIC, or the test's virtual one */
void sleep_until(uint64_t t);

/* driver calls made from inside a launch callback, counted by asked() */
extern __thread int in_callback;
void asked(void);

/* The calls a shim may make beside a launch count themselves by name, each
 * at its top (COUNTED); fakecuda_calls says what they were. */
struct counted_call {
	const char *name;
	unsigned n;
	int listed;
	struct counted_call *next;
};
void count_call(struct counted_call *c);

#define COUNTED()                                                              \
	do {                                                                   \
		static struct counted_call this_call = {__func__, 0, 0, NULL}; \
		count_call(&this_call);                                        \
	} while (0)

/* --- tools.c --------------------------------------------------------------- */

typedef void (*launch_cb)(void *user, int domain, int cbid, const void *params);
extern launch_cb cb; /* the one subscriber's callback */
extern void *cb_user;
extern int enabled[16][64]; /* [domain][cbid], of the one subscriber */

/* --- devices.c ------------------------------------------------------------- */

/* A context is a slot, named (CUcontext)(CTX_BASE + slot). */
#define CTX_BASE 0xc0
#define CTX_SLOTS 8
extern int ctx_dev[CTX_SLOTS]; /* each slot's device; -1: free */
extern __thread CUcontext current_ctx;
int visible(CUdevice dev);  /* the GPU (index of fake_gpus) of ordinal dev, -1 if none */
int ctx_slot(CUcontext c);  /* c's slot, -1 if none */
CUcontext ctx_of(CUstream s); /* stream s's context */
int current_slot(void);
int current_device(void);

/* --- streams.c ------------------------------------------------------------- */

struct fgraph;
struct fstream {
	uint64_t done_at; /* when the last work submitted finishes */
	int capturing;
	int global;         /* in global capture mode */
	int invalidated;    /* its capture was spoiled (a query of it): its end fails */
	CUcontext ctx;      /* the context current at its creation */
	/* a copy to the host (cuMemcpyDtoHAsync) of the scan's result words,
	 * made when the stream is synchronized, as its work is then done */
	void *to_host;
	uint64_t from;
	size_t bytes;
	struct fgraph *cap; /* the graph being captured */
};
struct fstream *stream_of(CUstream s);
struct fstream *default_stream(void);
int unsafe(void); /* a call that a global-mode capture forbids: 0, or its error */

/* --- launch.c -------------------------------------------------------------- */

void to_host(struct fstream *f);
#define FAKE_TMD 512 /* a descriptor's bytes */
int fake_descriptor(int version, CUfunction fn, unsigned gx, uint8_t *tmd); /* 1: a callback saw it */
int fake_run(CUstream s, CUfunction fn, unsigned gx, void **p, const uint8_t *tmd, int called);

/* --- mem.c ----------------------------------------------------------------- */

#define MIB (1ull << 20)
#define GRAIN (2 * MIB) /* pools and graph memory grow by this */
#define HEAP_DEFAULT (8 * MIB)

extern pthread_mutex_t mem_mu;
extern int calls_v1, calls_v2; /* calls of the 32-bit and the later flavours */
uint64_t round_up(uint64_t n, uint64_t to);
int take(uint64_t n);            /* mem_mu held */
void give(uint64_t n);           /* mem_mu held */
uint64_t new_va(uint64_t n, int v1); /* mem_mu held */
void mem_context_gone(int slot);

/* What is allocated, by address (or handle): a table under mem_mu. */
enum { F_PLAIN = 1, F_POOLED, F_MAPPING, F_ARRAY };
struct fentry {
	uint64_t key, size;
	void *owner; /* F_POOLED: the pool; F_MAPPING: the handle */
	int kind, ctx;
};
struct fentry *fmap_find(uint64_t key);
void fmap_put(struct fentry e);
void fmap_erase(struct fentry *e);

/* the 32-bit descriptors of CUDA before 3.2 */
struct desc_v1 {
	unsigned Width, Height;
	int Format;
	unsigned NumChannels;
};
struct desc3d_v1 {
	unsigned Width, Height, Depth;
	int Format;
	unsigned NumChannels, Flags;
};

/* --- pools.c --------------------------------------------------------------- */

void mem_synced(void);
int graph_memory(CUgraphExec g); /* the device's graph memory grows to hold g's */
uint64_t graph_bytes(const struct fgraph *g);

/* --- graphs.c -------------------------------------------------------------- */

/* CUDA_KERNEL_NODE_PARAMS (the _v2 flavour begins alike): a kernel node's
 * value, what the fake takes as what it computes, is its first parameter's
 * eight bytes, copied when the node is added or set, as the driver copies
 * kernelParams. */
struct fake_kernel_params {
	CUfunction func;
	unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
	void **kernelParams, **extra;
};
#define FAKE_NODES 64
struct fnode {
	int type;              /* CU_GRAPH_NODE_TYPE_* (cuda_api.h) */
	uint64_t bytes, dptr;  /* a memory node's */
	struct fgraph *child;  /* a child graph node's */
	CUfunction fn;         /* a kernel node's function, grid width and value */
	unsigned gx;
	uint64_t value;
	struct fnode *origin;  /* in a clone: the node it was cloned from */
};
struct fgraph {
	uint32_t magic;
	int n;
	struct fnode nodes[FAKE_NODES];
};
struct fgraph *graph_new(void);
struct fnode *graph_add(struct fgraph *g, int type, uint64_t bytes, uint64_t dptr); /* NULL: full */
int exec_footprint(CUgraphExec e, uint64_t *bytes); /* its allocation nodes' bytes; 0: no executable graph */

#pragma GCC visibility pop

/* The driver calls procs.c's table names, by the file that holds them. */

/* tools.c */
int cuInit(unsigned int flags);
int cuGetExportTable(const void **out, const void *uuid);

/* devices.c */
int cuCtxGetCurrent(CUcontext *c);
int cuCtxSetCurrent(CUcontext c);
int cuCtxGetDevice(CUdevice *d);
int cuCtxPushCurrent_v2(CUcontext c);
int cuCtxPopCurrent_v2(CUcontext *c);
int cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice dev);
int cuCtxDestroy_v2(CUcontext c);
int cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice dev);
int cuDeviceGetAttribute(int *v, int attr, CUdevice dev);

/* streams.c */
int cuStreamCreate(CUstream *s, unsigned flags);
int cuStreamDestroy_v2(CUstream s);
int cuEventCreate(CUevent *e, unsigned flags);
int cuEventDestroy_v2(CUevent e);
int cuEventRecord(CUevent e, CUstream s);
int cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags);
int cuEventQuery(CUevent e);
int cuEventSynchronize(CUevent e);
int cuStreamQuery(CUstream s);
int cuStreamSynchronize(CUstream s);
int cuCtxSynchronize(void);
int cuStreamBeginCapture_v2(CUstream s, int mode);
int cuStreamEndCapture(CUstream s, CUgraph *g);

/* launch.c */
int cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int threads, size_t smem);
int cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned sh, CUstream s, void **p, void **e);
int cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned sh, CUstream s, void **p, void **e);
int cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e);
int cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **p, void **e);
int cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			      unsigned bz, unsigned sh, CUstream s, void **p);

/* mem.c */
int cuMemAlloc_v2(CUdeviceptr *p, size_t n);
int cuMemAlloc(unsigned *p, unsigned n);
int cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags);
int cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem);
int cuMemAllocPitch(unsigned *p, unsigned *pitch, unsigned w, unsigned h, unsigned elem);
int cuMemFree_v2(CUdeviceptr p);
int cuMemFree(unsigned p);
int cuMemGetInfo_v2(size_t *free, size_t *total);
int cuMemGetInfo(unsigned *free, unsigned *total);
int cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
int cuDeviceTotalMem(unsigned *bytes, CUdevice dev);
int cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d);
int cuArrayCreate(CUarray *a, const struct desc_v1 *d);
int cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d);
int cuArray3DCreate(CUarray *a, const struct desc3d_v1 *d);
int cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels);
int cuArrayDestroy(CUarray a);
int cuMipmappedArrayDestroy(CUmipmappedArray a);
int cuCtxSetLimit(int what, size_t value);
int cuCtxGetLimit(size_t *value, int what);
int cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr d);
int cuIpcOpenMemHandle_v2(CUdeviceptr *d, CUipcMemHandle h, unsigned flags);
int cuIpcCloseMemHandle(CUdeviceptr d);

/* pools.c */
int cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream s);
int cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool pool, CUstream s);
int cuMemFreeAsync(CUdeviceptr d, CUstream s);
int cuMemPoolCreate(CUmemoryPool *pool, const void *props);
int cuMemPoolDestroy(CUmemoryPool pool);
int cuMemPoolTrimTo(CUmemoryPool pool, size_t keep);
int cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value);
int cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value);
int cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev);
int cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev);
int cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);
int cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *params);
int cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, CUdeviceptr d);
int cuGraphUpload(CUgraphExec g, CUstream s);
int cuDeviceGetGraphMemAttribute(CUdevice d, int attr, void *value);
int cuDeviceGraphMemTrim(CUdevice d);

/* graphs.c */
int cuGraphCreate(CUgraph *g, unsigned flags);
int cuGraphDestroy(CUgraph g);
int cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, CUgraph child);
int cuGraphAddKernelNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
			 const struct fake_kernel_params *p);
int cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
			    const struct fake_kernel_params *p);
int cuGraphKernelNodeSetParams(CUgraphNode node, const struct fake_kernel_params *p);
int cuGraphKernelNodeSetParams_v2(CUgraphNode node, const struct fake_kernel_params *p);
int cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *n);
int cuGraphNodeGetType(CUgraphNode node, int *type);
int cuGraphClone(CUgraph *out, CUgraph g);
int cuGraphNodeFindInClone(CUgraphNode *out, CUgraphNode orig, CUgraph clone);
int cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags);
int cuGraphExecDestroy(CUgraphExec e);
int cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode node, const struct fake_kernel_params *p);
int cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode node, const struct fake_kernel_params *p);
int cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode *err, int *result);
int cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, void *info);
int cuGraphLaunch(CUgraphExec g, CUstream s);

/* vmm.c */
int cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const void *prop, unsigned long long flags);
int cuMemRelease(CUmemGenericAllocationHandle h);
int cuMemAddressReserve(CUdeviceptr *p, size_t n, size_t align, CUdeviceptr addr, unsigned long long flags);
int cuMemAddressFree(CUdeviceptr p, size_t n);
int cuMemMap(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags);
int cuMemUnmap(CUdeviceptr p, size_t n);
int cuMemSetAccess(CUdeviceptr p, size_t n, const void *desc, size_t count);
int cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr);
#endif
