/*
 * shim.h: what the files of libcarve.so share inside the library. Nothing
 * here is an interface to carve; that is carve_ctl.h (the control block),
 * carve_node.h (the node block) and carve_tmd.h (the launch descriptor).
 *
 * Its declarations are grouped by the file that defines them; ARCHITECTURE.md
 * says what each file holds, in the order in which they call each other.
 */
#ifndef CARVE_SHIM_H
#define CARVE_SHIM_H

#include <pthread.h>
#include <stdint.h>

#include "carve_ctl.h"
#include "cuda_api.h"

/* Exit status of a process that carve refuses to run unpartitioned. */
#define CARVE_EXIT_REFUSED 86

/* The tenant's GPUs are numbered by where the block holds their partition:
 * 0 is its header's (its first GPU), i > 0 more[i - 1]. CARVE_PART is a
 * field of GPU i's partition that the header and the entries both have. */
#define CARVE_PART(c, i, field) (*((i) == 0 ? &(c)->field : &(c)->more[(i) - 1].field))
#define CARVE_GPU_NONE (-1) /* a GPU the block names no partition on */

/* hook.c */
const char *carve_register_hook(void *cuda); /* NULL, or why it failed */

/* slice.c: a BE launch cut into pieces while an LS tenant is active */
/* the driver's cuLaunchKernel and cuLaunchKernelEx (and their _ptsz) */
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
struct carve_launch { /* a cuLaunchKernel(Ex) call, as the wrapper got it */
	void *real;           /* the driver's function */
	const CUlaunchConfig *c; /* cuLaunchKernelEx's config (its grid, stream), else NULL */
	int ptsz;             /* a per-thread default stream flavour */
	CUfunction f;
	unsigned gx, gy, gz, bx, by, bz, sh;
	CUstream s;
	void **p, **e;
};
/* carve_slice_launch makes the launch through tide's gate (carve_launch_before
 * and _after around each driver call), whole or in pieces. */
CUresult carve_slice_launch(const struct carve_launch *l);
void carve_slice_edit(uint8_t *tmd); /* in the launch callback, after the mask */

/* slice_code.c: slicing's tables, each context's kernels, stream and
 * memory, a function's code and its copies */
void carve_slice_init(void *cuda);
/* carve_slice_context_gone: context c was destroyed, or its primary
 * released (it may have gone): its handle, and its functions', may come
 * back naming others, so none of what slicing knew of it is used again. */
void carve_slice_context_gone(CUcontext c);
struct carve_slice_drv { /* the driver's functions slicing calls itself */
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
};
extern struct carve_slice_drv carve_slice_drv;
extern int carve_slice_usable; /* the driver has them all */
/* Slicing's own driver calls would end a capture in global mode begun on
 * any thread meanwhile: carve_slice_own puts this thread in relaxed mode
 * before the first of them in a launch, carve_slice_own_end puts its mode
 * back at the launch's end. */
void carve_slice_own(void);
void carve_slice_own_end(void);
/* the tables: functions, contexts, copies (under carve_slice_mu) */
extern pthread_mutex_t carve_slice_mu;
enum carve_slice_state { SLICE_EMPTY, SLICE_RECORDING, SLICE_KNOWN, SLICE_SCANNING, SLICE_READY, SLICE_NEVER };
struct carve_slice_fn {
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
#define CARVE_SLICE_FNS 4096
extern struct carve_slice_fn carve_slice_fns[CARVE_SLICE_FNS];
/* A launch timed gets a pair of events around it on its stream, from its
 * context's pool (an event is recorded only on its own context's
 * streams); the pair is read, without waiting, at a later launch. */
#define CARVE_SLICE_TIMES 64
struct carve_slice_timing {
	CUevent a, b;
	int fn, busy;   /* busy: its pair is recorded, not read yet */
	uint32_t waves; /* the waves of blocks the launch or piece timed ran */
};
struct carve_slice_ctx {
	CUcontext ctx;
	int state; /* 0 none, 1 being set up, 2 ready, -1 failed */
	int gpu, sms; /* its device: which of the tenant's GPUs, and its SMs */
	CUfunction scan, copy;
	CUstream own;       /* slicing's stream in this context */
	CUdeviceptr result; /* the scan's two words, */
	int scanning;       /* which one scan at a time uses */
	struct carve_slice_timing times[CARVE_SLICE_TIMES]; /* under carve_slice_tmu */
	CUdeviceptr chunk;  /* copies' memory */
	size_t used, total;
};
#define CARVE_SLICE_CTXS 16
extern struct carve_slice_ctx carve_slice_ctxs[CARVE_SLICE_CTXS];
extern int carve_slice_pending;        /* timing pairs recorded, not read (changed under carve_slice_tmu) */
extern uint64_t carve_slice_harvested; /* the coarse clock when pairs were last read */
extern pthread_mutex_t carve_slice_tmu; /* the timing pairs; taken before carve_slice_mu */
struct carve_slice_copy {
	unsigned fn; /* index in carve_slice_fns, +1: 0 is empty */
	unsigned s;
	CUdeviceptr at;
	CUevent done; /* recorded after it was written */
	int seen;     /* done was seen complete: no launch waits for it again */
};
#define CARVE_SLICE_COPIES 8192
extern unsigned carve_slice_ncopies;
int carve_slice_fn_find(CUcontext ctx, CUfunction f); /* finds or makes (under carve_slice_mu); -1 if full */
struct carve_slice_copy *carve_slice_copy_find(unsigned fn, unsigned s); /* under carve_slice_mu */
void carve_slice_set_state(int i, int state);
void carve_slice_never(int i, const char *why); /* function i is never cut */
/* per context: carve_slice_ctx_entry finds or makes (under carve_slice_mu)
 * context c's entry (NULL if full); carve_slice_ctx_ready returns it set up
 * on first use (NULL if it cannot be); carve_slice_slot reserves a copy's
 * place in its memory (0: none). */
struct carve_slice_ctx *carve_slice_ctx_entry(CUcontext c);
struct carve_slice_ctx *carve_slice_ctx_ready(CUcontext c);
CUdeviceptr carve_slice_slot(struct carve_slice_ctx *e, size_t len);
/* a function's code: carve_slice_compile_time_cluster says whether f
 * carries cluster dimensions of its own (-1: unknown); carve_slice_scan
 * measures function i's code; carve_slice_make_copy writes the prologue
 * for blocks from s and the code at at, on stream, into *out;
 * carve_slice_ready_on makes stream s wait for copy c. */
int carve_slice_compile_time_cluster(CUfunction f);
void carve_slice_scan(int i, struct carve_slice_ctx *e);
CUresult carve_slice_make_copy(int i, struct carve_slice_ctx *e, unsigned s, CUdeviceptr at, CUstream stream,
			       struct carve_slice_copy *out);
CUresult carve_slice_ready_on(int i, struct carve_slice_copy *c, CUstream s);

/* tide.c: each launch through tide, around the driver's call */
void carve_tide_init(void *cuda, const char *dir); /* LS or BE tenant with a node block: take part */
/* carve_launch_before: a launch of function f (NULL: a graph's) on s; a
 * launch in pieces (slice.c) makes each through here, counted (whole) with
 * its first alone */
void carve_launch_before(CUstream s, CUfunction f, int whole);
void carve_launch_after(CUstream s, CUresult r);
/* carve_tide_mask changes the mask of this launch on the tenant's GPU gpu
 * for tide (within live). */
void carve_tide_mask(int gpu, uint32_t mask[CARVE_MASK_WORDS], const uint32_t live[CARVE_MASK_WORDS]);
/* carve_tide_ls_active: for a BE tenant's launch this thread began
 * (carve_launch_before), whether an LS tenant is active on its GPU: busy
 * now, or it served a request in the last CARVE_NODE_QUIET_NS (what bounds
 * the BE's queue); and the launch's context into *ctx. */
int carve_tide_ls_active(CUcontext *ctx);

/* bw.c: a tenant's memory bandwidth share, its slot of each epoch */
extern int carve_bw_on; /* the block gives it a slot */
void carve_bw_init(void *cuda, const char *dir);
void carve_bw_launch_before(int g, CUstream s, CUcontext ctx); /* held until its slot, unless free */
void carve_bw_launch_after(CUstream s, CUcontext ctx, CUresult r);

/* kern.c: the tenant's kernel table */
extern int carve_kern_on; /* a table is read */
void carve_kern_init(void *cuda, const char *dir);
/* carve_kern_find: function f's entry in the table, NULL if it has none
 * (or f is NULL, a graph's launch) */
const struct carve_kern_entry *carve_kern_find(CUfunction f);
void carve_kern_count(const struct carve_kern_entry *e); /* a launch of e (NULL: unknown) done */

/* tide_be.c: a BE tenant's gate on each of its GPUs */
void carve_tide_be_init(void *cuda);
void carve_tide_be_join(int g);
/* held while LS work is in flight there, but for its share; a kernel the
 * table calls compute-bound (compute) goes beside it */
void carve_tide_be_launch_before(int g, int compute);
void carve_tide_be_launch_after(int g, CUstream s);
/* carve_tide_be_narrowed: is this thread's launch on GPU g one the gate
 * narrowed, onto enough TPCs still? its mask into m */
int carve_tide_be_narrowed(int g, const uint32_t mask[4], const uint32_t live[4], uint32_t m[4]);

/* tide_ls.c: an LS tenant's streams with work, and the poller */
int carve_tide_ls_init(void *cuda); /* 0: the driver lacks stream queries */
int carve_tide_ls_start(void);      /* the poller; 0 if it could not start */
void carve_tide_ls_launch(int g, CUstream s, CUcontext ctx); /* counted in its stream; the tenant busy on g */
void carve_tide_ls_submitted(void);
/* carve_capture: a capture of s begins (called before the driver's begin,
 * so that the poller asks nothing of a capturing stream) or ends (after the
 * driver's end, or its begin that failed) */
void carve_capture(CUstream s, int begin);
int carve_tide_ls(void);       /* an LS tenant in tide */
/* carve_tide_capturing: stream captures under way in the process (any
 * thread, any mode) */
int carve_tide_capturing(void);
void carve_tide_timing(void);  /* an LS tenant recorded a timing event */

/* tide_node.c: the tenant's GPUs in tide, their node blocks and slots */
struct carve_tide_be; /* tide_be.c's */
struct carve_tide_gpu { /* a GPU of the tenant's in tide */
	struct carve_node *node;      /* NULL: this GPU takes no part (carve's: read-only) */
	struct carve_ls *ls;          /* LS: our seat's LS file */
	struct carve_ls_proc *proc;   /* LS: our entry in it */
	int ls_fd;                    /* LS: kept open: it carries our entry's lock */
	int seat;                     /* LS: our slot in the node block */
	uint64_t busy_since;          /* LS: when it last became busy here (under tide_ls.c's track_mu) */
	/* BE: its own BE file, read-write (NULL: none found yet), of inode
	 * bef_ino on bef_dev (0: mapped again at the next look), and when it
	 * last looked for one (coarse clock) */
	struct carve_be *bef;
	uint64_t bef_looked, bef_dev, bef_ino;
	struct carve_tide_be *be;     /* BE */
	/* LS: the GPU's BE files, bes_n of them each mapped read-only at bes
	 * + i x carve_peer_stride (zeros past them), of inode be_ino[i], as
	 * listed at bes_listed (coarse clock) with the directory's mtime
	 * bes_mtime, looked at last at bes_checked; bes_over: there were more
	 * than CARVE_NODE_BE_FILES. The poller's alone. */
	char *bes;
	int bes_n, bes_over;
	uint64_t bes_listed, bes_checked;
	int64_t bes_mtime[2];
	uint64_t be_ino[64];
	/* BE: the seats' LS files, each mapped read-only at peers + i x
	 * carve_peer_stride (zeros where none), as of the node's gen
	 * peers_gen; one that could not be mapped is tried again the next
	 * coarse tick after peers_retry (0: none to retry) */
	char *peers;
	uint32_t peers_gen, peers_valid;
	uint64_t peers_retry;
	uint32_t serial[32];
	char dir[4096 - 64];          /* the GPU's directory (CARVE_NODE_DIR_SUFFIX) */
};
extern struct carve_tide_gpu carve_tide_gpus[CARVE_GPUS];
extern int carve_tide_ngpus;
extern int carve_tide_cls;      /* CARVE_CLASS_LS or _BE while tide is on */
extern int carve_tide_captures; /* captures under way in the process */
extern size_t carve_peer_stride; /* the distance between two LS or BE files' maps (tide_node.c) */
int carve_tide_open(const char *path, int rw); /* a tide file, no link followed, no FIFO waited on (tide_node.c) */
/* carve_tide_join maps GPU g's node block and, for an LS tenant, takes a
 * slot there (1; 0: g takes no part); carve_tide_leave gives the slots up. */
int carve_tide_join(int g, const char *dir, int ls, char name[64]);
void carve_tide_leave(void);
void carve_tide_guard(void); /* a SIGBUS in a file another tenant cut short reads zeros */
void carve_tide_set_busy(int g, int b); /* says in our LS entry on GPU g and its busy bits whether we are */
/* carve_tide_ls_busy: how many other LS tenants hold BE tenants back on
 * GPU g: with work in flight (and a fresh heartbeat), or timing their work
 * (busy or not), ORing their reserved TPCs into out (if given), counting
 * in *timing those timing; with none, the latest heartbeat into *newest
 * (if given); the reserved TPCs of those with a heartbeat in the last
 * CARVE_NODE_QUIET_NS ORed into near (if given: read in the same walk). */
int carve_tide_ls_busy(int g, uint32_t out[4], uint64_t *newest, int *timing, uint32_t near[4]);
/* carve_tide_be_list: GPU g's BE files listed again where it is time (now:
 * the coarse clock), by an LS tenant's poller outside track_mu, which its
 * launches take; carve_tide_be_latest: the latest BE launch any BE file
 * of GPU g, as last listed, stamps into *latest (0: none), for the
 * poller; 0 where it cannot tell (too many BE files), else 1. carve_tide_be_own: a BE tenant's own
 * BE file on GPU g, looked for again (now: the coarse clock) at most every
 * CARVE_NODE_BE_LIST_NS, and mapped anew where carve made another (NULL:
 * none yet). */
void carve_tide_be_list(int g, uint64_t now);
int carve_tide_be_latest(int g, uint64_t *latest);
struct carve_be *carve_tide_be_own(int g, uint64_t now);
/* carve_tide_active: is LS work active at t (busy, or newest in the last
 * CARVE_NODE_QUIET_NS)? */
int carve_tide_active(int busy, uint64_t newest, uint64_t t);
void carve_tide_ls_off(int g, uint32_t off[4]); /* what an LS tenant's launches on g keep off */

/* timing.c: an LS tenant's events made for timing */
void carve_event_created(CUevent ev, unsigned flags);
void carve_event_destroyed(CUevent ev);
void carve_event_recorded(CUevent ev);

/* mem_alloc.c: plain and pitched allocations, arrays, what the program is
 * told. Each carve_mem_ call of a path (this file's, mem_pool.c's,
 * mem_graph.c's, mem_vmm.c's, mem_ctx.c's) takes the driver's function
 * (real) and its arguments. */
CUresult carve_mem_alloc(void *real, CUdeviceptr *p, size_t n);
CUresult carve_mem_alloc_own(void *real, CUdeviceptr *p, size_t n); /* the shim's own, charged, never refused aloud */
CUresult carve_mem_alloc_v1(void *real, unsigned *p, unsigned n);
CUresult carve_mem_alloc_managed(void *real, CUdeviceptr *p, size_t n, unsigned flags);
CUresult carve_mem_alloc_pitch(void *real, CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem);
CUresult carve_mem_alloc_pitch_v1(void *real, unsigned *p, unsigned *pitch, unsigned w, unsigned h, unsigned elem);
CUresult carve_mem_free(void *real, CUdeviceptr p);
CUresult carve_mem_free_v1(void *real, unsigned p);
CUresult carve_mem_info(void *real, size_t *free, size_t *total);
CUresult carve_mem_info_v1(void *real, unsigned *free, unsigned *total);
CUresult carve_mem_total(void *real, size_t *bytes, CUdevice dev);
CUresult carve_mem_total_v1(void *real, unsigned *bytes, CUdevice dev);
CUresult carve_mem_array(void *real, CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d);
CUresult carve_mem_array3d(void *real, CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d);
CUresult carve_mem_mipmap(void *real, CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels);
CUresult carve_mem_array_destroy(void *real, CUarray a);
CUresult carve_mem_mipmap_destroy(void *real, CUmipmappedArray a);
/* mem_pool.c */
CUresult carve_mem_alloc_async(void *real, CUdeviceptr *p, size_t n, CUstream s);
CUresult carve_mem_alloc_pool(void *real, CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s);
CUresult carve_mem_free_async(void *real, CUdeviceptr p, CUstream s);
CUresult carve_mem_pool_create(void *real, CUmemoryPool *pool, const void *props);
CUresult carve_mem_pool_destroy(void *real, CUmemoryPool pool);
CUresult carve_mem_pool_trim(void *real, CUmemoryPool pool, size_t keep);
CUresult carve_mem_pool_set(void *real, CUmemoryPool pool, int attr, void *value);
CUresult carve_mem_device_pool(void *real, CUdevice dev, CUmemoryPool pool);
void carve_mem_synced(void); /* after a synchronization: pools may have released memory */
/* mem_graph.c */
CUresult carve_mem_instantiate(void *real, CUgraphExec *e, CUgraph g, void *a, void *b, size_t c);
CUresult carve_mem_exec_destroy(void *real, CUgraphExec e);
CUresult carve_mem_alloc_node(void *real, CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n, void *params);
CUresult carve_mem_graph_trim(void *real, CUdevice dev);
struct carve_graph_launch { /* what a graph's launch or upload charged, for carve_mem_graph_after */
	uint64_t pre;
	CUdevice device;
	int seen, locked;
};
int carve_mem_graph_before(CUgraphExec e, struct carve_graph_launch *l); /* 0: refused */
void carve_mem_graph_after(const struct carve_graph_launch *l);
/* mem_vmm.c */
CUresult carve_mem_create(void *real, CUmemGenericAllocationHandle *h, size_t n, const void *prop, unsigned long long flags);
CUresult carve_mem_release(void *real, CUmemGenericAllocationHandle h);
CUresult carve_mem_map(void *real, CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags);
CUresult carve_mem_unmap(void *real, CUdeviceptr p, size_t n);
CUresult carve_mem_retain(void *real, CUmemGenericAllocationHandle *h, void *addr);
/* mem_ctx.c */
CUresult carve_mem_set_limit(void *real, int what, size_t value);
CUcontext carve_mem_primary(CUdevice dev);     /* before a primary context's release or reset */
void carve_mem_primary_after(CUdevice dev, CUcontext c, int reset);

/* mem.c: the account, the table of what each allocation holds, and what
 * pools and graph memory reserve; what the files of each path share */
void carve_mem_init(void *cuda, const char *dir); /* at load, once the driver is loaded */
void carve_mem_context_gone(CUcontext c);        /* after cuCtxDestroy */
struct carve_mem_drv { /* the driver's functions the memory files call themselves */
	CUresult (*ctx_current)(CUcontext *);
	CUresult (*ctx_device)(CUdevice *);
	CUresult (*ctx_limit)(size_t *, int);
	CUresult (*device_pool)(CUmemoryPool *, CUdevice);
	CUresult (*pool_get)(CUmemoryPool, int, void *);
	CUresult (*pool_trim)(CUmemoryPool, size_t);
	CUresult (*graph_attr)(CUdevice, int, void *);
	CUresult (*graph_trim)(CUdevice);
	CUresult (*graph_nodes)(CUgraph, CUgraphNode *, size_t *);
	CUresult (*node_type)(CUgraphNode, int *);
	CUresult (*alloc_params)(CUgraphNode, void *);
	CUresult (*child_graph)(CUgraphNode, CUgraph *);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*primary_state)(CUdevice, unsigned *, int *);
	CUresult (*primary_retain)(CUcontext *, CUdevice);
	CUresult (*primary_release)(CUdevice);
};
extern struct carve_mem_drv carve_mem_drv;
extern struct carve_ctl *carve_mem_acct; /* the tenant's account */
extern int carve_mem_on;                 /* counting: a block, the driver, not a forked child */
static inline int carve_mem_counting(void)
{
	return __atomic_load_n(&carve_mem_on, __ATOMIC_RELAXED);
}
static inline uint64_t carve_mem_limit(void)
{
	return __atomic_load_n(&carve_mem_acct->mem_limit, __ATOMIC_RELAXED);
}
CUcontext carve_mem_ctx(void);   /* the current context, or NULL */
CUdevice carve_mem_device(void); /* the current context's device, or 0 */
/* the account: carve_mem_charge adds n bytes unless that passes the limit
 * (0 if it would); carve_mem_charge_or_refuse reclaims first where it
 * would (carve_mem_reclaim), and counts and says a refusal (0);
 * carve_mem_refused counts and says one of n bytes; carve_mem_credit takes
 * n bytes back. */
int carve_mem_charge(uint64_t n);
int carve_mem_charge_or_refuse(uint64_t n);
void carve_mem_refused(uint64_t n);
void carve_mem_credit(uint64_t n);
void carve_mem_reclaim(void); /* with no pool's lock held */
/* the table: what each allocation holds, by kind and key */
enum carve_mem_kind { MEM_PTR = 1, MEM_ARRAY, MEM_MIPMAP, MEM_VMM, MEM_MAP, MEM_EXEC, MEM_HEAP };
struct carve_mem_entry {
	uint64_t key;
	uint64_t size;
	uint64_t aux;  /* MEM_MAP: the handle; MEM_HEAP: the size the context had */
	CUcontext ctx; /* MEM_PTR, MEM_ARRAY, MEM_MIPMAP, MEM_HEAP: credited when it goes */
	uint32_t kind; /* 0: empty */
	int32_t refs;  /* MEM_VMM: the handle's references and mappings */
	int32_t maps;
	int32_t pad;
};
void carve_mem_put(const struct carve_mem_entry *e);                            /* replaces one of its kind and key */
int carve_mem_take(uint32_t kind, uint64_t key, struct carve_mem_entry *out); /* 0: none */
int carve_mem_get(uint32_t kind, uint64_t key, struct carve_mem_entry *out);  /* 0: none */
void carve_mem_keep(uint32_t kind, uint64_t key, uint64_t size);             /* in the current context */
/* carve_mem_vmm_count moves a handle's references and mappings: the bytes
 * to credit when both are gone */
uint64_t carve_mem_vmm_count(CUmemGenericAllocationHandle handle, int refs, int maps);
/* carve_mem_freed settles a free the driver answered with r, of the entry
 * taken before the call (if kept): credited, or put back */
CUresult carve_mem_freed(CUresult r, int kept, const struct carve_mem_entry *e);
int carve_mem_on_device(const void *props); /* a pool's or cuMemCreate's properties place memory on a device */
/* what pools reserve: a record for each, which the account follows */
#define CARVE_MEM_GRAIN (2ull << 20) /* a pool, and graph memory, grow by multiples of this */
#define CARVE_MEM_POOLS 64
struct carve_mem_pool {
	CUmemoryPool h; /* NULL: a free slot */
	pthread_mutex_t mu;
	uint64_t charged;   /* the reserved bytes the account holds for it */
	uint64_t threshold; /* its release threshold */
	int counted;        /* 0: a pool of host memory */
};
extern struct carve_mem_pool carve_mem_pools[CARVE_MEM_POOLS];
extern int carve_mem_npools;                /* slots in use or used */
extern pthread_mutex_t carve_mem_pools_mu; /* taken to fill or empty a slot */
extern uint64_t carve_mem_pool_gen;         /* moves when a device's current pool may have */
uint64_t carve_mem_pool_attr(CUmemoryPool h, int attr);
/* carve_mem_find_pool: the record of pool h, made if make (counted as asked) */
struct carve_mem_pool *carve_mem_find_pool(CUmemoryPool h, int make, int counted);
/* carve_mem_pool_commit: the account holds what pool p reserves now, less
 * pre charged for it beforehand (p locked) */
void carve_mem_pool_commit(struct carve_mem_pool *p, uint64_t pre);
/* what each device's graph memory reserves, as a pool's */
struct carve_mem_gdev {
	pthread_mutex_t mu;
	uint64_t charged;
};
extern int carve_mem_graphs_seen; /* a graph allocated memory: graph memory is read after launches */
struct carve_mem_gdev *carve_mem_gdev_of(CUdevice d); /* NULL: past the devices kept */
uint64_t carve_mem_graph_attr(CUdevice d, int attr);
void carve_mem_graph_commit(CUdevice d, struct carve_mem_gdev *g, uint64_t pre); /* g locked */

/* ctl.c */
struct carve_ctl *carve_attach(const char *dir);
void carve_hist_add(struct carve_hist *h, uint64_t d); /* counts a time of d ns into one of the block's histograms */
/* carve_account: the block the tenant's memory is counted in (*shared: not
 * this process's own); carve_credit_ended gives it back what its ended
 * processes held, and returns the bytes. */
struct carve_ctl *carve_account(const char *dir, int *shared);
uint64_t carve_credit_ended(struct carve_ctl *acct, const char *dir);
/* carve_current_mask: the mask to apply now on the tenant's GPU gpu and
 * its generation; 0 when there is none to write (no partition there that
 * enables a live TPC). */
int carve_current_mask(int gpu, uint32_t out[CARVE_MASK_WORDS], uint64_t *gen);

/* carve_visible_sms: the SM count to report of the tenant's GPU gpu
 * (CARVE_GPU_NONE: one it has no partition on) where the driver reports n. */
int carve_visible_sms(int gpu, int n);

/* gpu.c */
void carve_gpu_init(void *cuda); /* at load, before the first launch */
int carve_gpus(void);            /* the GPUs the block holds partitions on (1 where it names none) */
/* carve_launch_gpu: which of the tenant's GPUs this thread's launch is on,
 * by its current context (into *ctx, if not NULL): its index, or
 * CARVE_GPU_NONE where the block names no partition on it (its UUID into
 * uuid, if not NULL); 0 where the block names no GPU or the driver cannot
 * say. */
int carve_launch_gpu(unsigned char uuid[16], CUcontext *ctx);
/* carve_launch_begin: carve_launch_gpu for the launch the thread is about
 * to make, kept until carve_launch_end for carve_callback_gpu, which
 * answers the launch callback without asking the driver (it looks the
 * launch up by the context its params name if no wrapper began one). */
int carve_launch_begin(CUcontext *ctx);
void carve_launch_end(void);
int carve_callback_gpu(const void *params, unsigned char uuid[16]);
/* carve_device_gpu: which of the tenant's GPUs device dev is, as
 * carve_launch_gpu says. */
int carve_device_gpu(CUdevice dev);
void carve_contexts_changed(void); /* a context went: its handle may return on another GPU */
#define CARVE_GPU_NAME 41          /* "GPU-" and 36 characters of UUID, NUL-terminated */
void carve_gpu_name(const unsigned char uuid[16], char out[CARVE_GPU_NAME]);

/* graph.c: executable graphs that follow the current mask. Each wrapper
 * takes the driver's function of its own flavour (real). */
enum carve_graph_flavour { /* what cuGraphInstantiate's flavours take after the graph */
	CARVE_INSTANTIATE_PLAIN,  /* an error node, a log and its size: no flags */
	CARVE_INSTANTIATE_FLAGS,  /* flags */
	CARVE_INSTANTIATE_PARAMS, /* CUDA_GRAPH_INSTANTIATE_PARAMS, its flags first */
};
enum carve_graph_edit { /* the tenant's change of an executable graph's node */
	CARVE_EDIT_KERNEL,    /* cuGraphExecKernelNodeSetParams */
	CARVE_EDIT_KERNEL_V2, /* its _v2 */
	CARVE_EDIT_NODE,      /* cuGraphExecNodeSetParams */
	CARVE_EDIT_OTHER,     /* any other: the graph keeps its mask from then on */
};
void carve_graph_init(void *cuda);
CUresult carve_graph_instantiate(void *real, int flavour, CUgraphExec *e, CUgraph g, void *a, void *b, size_t c);
CUresult carve_graph_exec_destroy(void *real, CUgraphExec e);
/* carve_graph_target: what a launch or upload of e launches: e, or e
 * instantiated anew on the current mask */
CUgraphExec carve_graph_target(CUgraphExec e);
CUresult carve_graph_edit(void *real, int how, CUgraphExec e, CUgraphNode n, void *p, void *q);
CUresult carve_graph_update(void *real, CUgraphExec e, CUgraph g, void *a, void *b);

/* nvtx.c: at load, with the block: where it names a mark, NVTX's ranges
 * are the shim's to time (NVTX_INJECTION64_PATH) */
void carve_nvtx_init(void);

/* fault.c */
void carve_fault(CUresult r, const char *call);

/* tools.c */
typedef void (*carve_tools_cb)(void *user, int domain, int cbid, const void *params);
extern const unsigned char carve_tools_uuid[16];
/* carve_tools_table: what another library asking for the export table of
 * uuid gets: for the launch-tools table, one shared with the shim. */
const void *carve_tools_table(const void *uuid, const void *table);
/* carve_tools_subscribe: the shim's own subscription to (domain, cbid). */
int carve_tools_subscribe(const void *table, carve_tools_cb cb, int domain, int cbid);
/* carve_tools_hold: a launch holds (1) and lets go (0) of the callbacks, so
 * that it never goes out while they change hands. */
void carve_tools_hold(int on);

/* trace.c: CARVE_TRACE_PROCS's log of the lookup of name (version -1:
 * dlsym's): the flavour wrapped (NULL: none), refused by the shim, found
 * by the driver. */
void carve_trace_proc(const char *name, int version, uint64_t flags, const char *wrapper, int refuse, int found);

/* base.c */
extern struct carve_ctl *carve_block; /* this process's control block, or NULL */
extern int carve_debug;               /* CARVE_DEBUG=1: say what the shim does */
extern int carve_allow_unpartitioned; /* run on all TPCs where masks cannot work */
extern int carve_trace_tools;         /* CARVE_TRACE_TOOLS=1: log others' calls into the tools table */
void carve_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void carve_refuse(const char *why) __attribute__((noreturn));
#define CARVE_DEBUG(...) do { if (carve_debug) carve_say(__VA_ARGS__); } while (0)
uint64_t carve_now_ns(void);    /* CLOCK_REALTIME_COARSE: vDSO only, even in VMs; for people */
uint64_t carve_mono_ns(void);   /* CLOCK_MONOTONIC */
uint64_t carve_coarse_ns(void); /* CLOCK_MONOTONIC_COARSE: to within a tick (1-4 ms), and cheap
                                 * where the precise clock is not (no vDSO path) */
void carve_nap_ns(long ns);     /* sleep for ns */
void carve_yield(void);         /* one step of a short spin: let other threads run */
/* one step of a wait begun at since (CLOCK_MONOTONIC) for until (0: none
 * known): a nap towards it (1 ms at most, ending 100 us before it) where
 * it is over 200 us away, else a yield for the wait's first 100 us and a
 * nap of 20 us after, so that the waiter follows the GPU closely */
void carve_wait_until(uint64_t since, uint64_t until);
/* A test build (cc -DCARVE_TEST) runs carve_mono_ns, carve_coarse_ns,
 * carve_nap_ns and carve_yield on a virtual clock that a test drives
 * (shim/test/vclock.h) where CARVE_TEST_CLOCK names one; carve_now_ns stays
 * the real time, for people, and decides nothing. There a thread that
 * blocks outside the clock says so first (carve_thread_parks), and a
 * thread that wakes or starts another counts it as running first
 * (carve_thread_wakes), so that the test knows when every thread is still.
 * In the shim make builds they are nothing. */
#ifdef CARVE_TEST
void carve_thread_parks(void);
void carve_thread_wakes(void);
#else
static inline void carve_thread_parks(void) {}
static inline void carve_thread_wakes(void) {}
#endif
typedef void *(*carve_dlsym_fn)(void *, const char *);
carve_dlsym_fn carve_glibc_dlsym(void); /* glibc's dlsym, for a lookup that must be a sibling call */
void *carve_real_dlsym(void *handle, const char *name); /* glibc's, for the shim's own lookups */

#endif
