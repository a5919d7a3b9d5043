/*
 * A stand-in for an unmodified CUDA program, run under LD_PRELOAD=libcarve.so
 * with CARVE_LIBCUDA pointing at the fake driver. It reaches the driver the
 * way the CUDA runtime does: dlopen, dlsym of cuGetProcAddress_v2, then
 * everything else through it (the lookup function first through itself). It
 * reads commands on stdin and prints one line for each:
 *
 *   launch VERSION     a launch through the fake's test entry point
 *                      -> "mask W0 W1 W2 W3 EN CALLED"
 *   klaunch ENTRY [ptds]
 *                      a launch through cuLaunchKernel, cuLaunchKernelEx,
 *                      cuLaunchCooperativeKernel or cuGraphLaunch (ENTRY: kernel,
 *                      ex, coop, graph; exnull: cuLaunchKernelEx with a NULL
 *                      config), looked up for the per-thread default
 *                      stream with ptds -> "mask ..." as above, or "rc N"
 *   direct             cuLaunchKernel called by its exported name, as a
 *                      program linked against libcuda does -> "mask ..."
 *   sms [DEV]          cuDeviceGetAttribute(multiprocessor count) of device
 *                      DEV (default 0) -> "sms N rc R"
 *   sync               cuStreamSynchronize(0) -> "rc N"
 *   next               does dlsym(RTLD_NEXT, "dlsym") from here find the
 *                      next library's dlsym? -> "next same|different"
 *   profiler           subscribe the way CUPTI does (entry 11), to launches,
 *                      to the whole of another domain, and to one more
 *                      callback through entry 10 -> "rc N"
 *   profiled           -> "profiled L S": launches and other-domain
 *                      callbacks the profiler saw
 *   quiet              the profiler turns the launch domain off the way
 *                      Nsight Compute does (entry 7) -> "rc N"
 *   unprofile          the profiler unsubscribes (entry 4) -> "rc N"
 *   threads N          4 threads launch N kernels each -> "threads MS"
 *   storm N            4 threads launch N kernels each while the profiler
 *                      subscribes and unsubscribes -> "bare B": launches
 *                      that went out while no callback was subscribed
 *   injected           -> "injected N": launches an injection loaded at
 *                      cuInit saw (FAKECUDA_INJECT)
 *   dur US             later kernels take US microseconds on the fake GPU
 *   burst N [FN]       N launches through cuLaunchKernel (of the fake's
 *                      test function FN, 100 blocks) -> "burst MS": how
 *                      long the launch calls took, all told
 *   ctx N              make context N current (cuCtxSetCurrent): 0 and 1 are
 *                      the fake's primary contexts of its two GPUs -> "rc N"
 *   ctxnew DEV         cuCtxCreate on device DEV, made current -> "ctx N"
 *   ctxdel             cuCtxDestroy of the current context -> "rc N"
 *   lookups            -> "lookups N": device UUIDs the fake was asked for
 *   incb               -> "incb N": driver calls made from inside launch
 *                      callbacks
 *   evnew FLAGS        cuEventCreate with FLAGS (2: CU_EVENT_DISABLE_TIMING)
 *                      -> "ev N": the event's number here, or "rc N"
 *   evrecord N [ptds|flags]
 *                      cuEventRecord of event N on the default stream (its
 *                      per-thread flavour; or cuEventRecordWithFlags)
 *                      -> "rc N"
 *   evdel N            cuEventDestroy of event N -> "rc N"
 *   fl FN GRID N [ENTRY [ROWS]]
 *                      N launches of the fake's test function FN (1-16:
 *                      kernels with blocks, for slicing) with GRID blocks
 *                      across and ROWS (1) down, through cuLaunchKernel (ENTRY kernel, the
 *                      default), cuLaunchKernelEx (ex; cluster: with a
 *                      cluster dimension attribute) or
 *                      cuLaunchCooperativeKernel (coop) -> "rc N": the
 *                      first launch's result that was not 0, else 0
 *   flt FN GRID N [each]
 *                      4 threads make N such launches each (each: the
 *                      k-th thread of function FN+k) -> "rc N"
 *   flcap FN GRID N    N such launches into a stream being captured into
 *                      a graph (by cuLaunchKernel) -> "rc N capevents E":
 *                      E, the events recorded into captures so far
 *   gcap on|off        begin a global-mode capture (as PyTorch's) on a new
 *                      non-blocking stream, or end it -> "rc N unsafe U":
 *                      U, the calls the fake refused for a global-mode
 *                      capture so far
 *   stream new|del     create a stream that fl's launches by cuLaunchKernel
 *                      go into from now -> "stream HANDLE"; destroy it
 *                      (fl's go into the default stream again) -> "rc N"
 *   fnmove FN          the fake's test function FN's code moves, as after
 *                      its module was unloaded and loaded again under the
 *                      same handle (a kernel reading its old place counts
 *                      as wrong) -> "rc 0"
 *   runs FN GRID       -> "runs MIN MAX LAUNCHES BAD": the fewest and most
 *                      times a block of FN's grid ran, the driver's launches
 *                      of FN, and launches or copies the fake found wrong
 *   kernels FN         -> "kernels N S E S E ...": the GPU times (ns) of
 *                      FN's last N launches, oldest first
 *   calls              -> "calls N NAME=K ...": the driver calls besides
 *                      launches that the fake counts (fakecuda_calls), all
 *                      told and by name, made so far
 *   spawn CMD[;CMD...] run this program again as a child process (fork and
 *                      exec: the shim loads in it as in any child of a
 *                      partitioned program), with the commands on its stdin
 *                      -> "child PID STATUS OUT": its exit status and what it
 *                      printed, lines joined by '|'
 *
 * Device memory, each by the path a framework takes (the calls looked up
 * for CUDA 12.8, but v1: "cuMemAlloc" for CUDA 3.0, the 32-bit flavour):
 *   alloc KIND BYTES   KIND: mem (cuMemAlloc_v2), v1, direct (cuMemAlloc_v2
 *                      by its exported name), pitch (BYTES a row, 4 rows),
 *                      managed, async (cuMemAllocAsync on the default
 *                      stream), pool (cuMemAllocFromPoolAsync from the
 *                      pool below), array (floats, 4 rows), array1 (the
 *                      same by the 32-bit flavour of CUDA 3.0), array3d
 *                      (floats, 4x4 rows), mipmap (a BYTES x BYTES square
 *                      of floats, three levels), vmm (cuMemCreate, an
 *                      address reserved, mapped), graph (an executable
 *                      graph with an allocation node of BYTES, freed in it)
 *                      -> "id N", or "rc N" if refused
 *   free ID            by the path that frees it -> "rc N"
 *   release ID, unmap ID, retain ID
 *                      a vmm allocation's cuMemRelease, cuMemUnmap,
 *                      cuMemRetainAllocationHandle alone -> "rc N"
 *   capture BYTES      a graph captured from cuMemAllocAsync and
 *                      cuMemFreeAsync on a stream -> "id N" or "rc N"
 *   glaunch ID, gupload ID, gtrim
 *                      cuGraphLaunch, cuGraphUpload, cuDeviceGraphMemTrim
 *   pool new|host|default|set|destroy, pool threshold|trim BYTES, pool reserved
 *                      make (on the device or the host) or pick the pool
 *                      "alloc pool" takes from; make it the device's
 *                      current pool; its release threshold; trim it
 *   heap BYTES         cuCtxSetLimit of the device malloc heap -> "rc N"
 *   meminfo [v1]       -> "meminfo FREE TOTAL rc N"
 *   totalmem [v1]      -> "totalmem BYTES rc N"
 *   fakemem            -> "fake TAKEN HIGH": the fake GPU's memory taken,
 *                      now and at most
 *   fakemb MB          the fake GPU's memory size
 *   flavours           -> "flavours V1 V2": calls of the fake's 32-bit
 *                      memory functions and of their later flavours
 *   ipcget ID, ipcopen HANDLE
 *                      cuIpcGetMemHandle of an allocation -> "ipc HANDLE";
 *                      cuIpcOpenMemHandle of one -> "id N"
 *   lookup NAME VERSION [ptds]
 *                      cuGetProcAddress -> "lookup NAME found|none"
 *   stress THREADS OPS SEED
 *                      threads make OPS random allocations and frees each
 *                      over the paths above, with synchronizations, pool
 *                      and graph memory trims and graph launches between,
 *                      and leave what they hold -> "stress OK REFUSED ERRORS"
 *   memcost N          N pairs of cuMemAlloc_v2 and cuMemFree_v2 of 4 KiB
 *                      -> "memcost NS": nanoseconds a pair
 *   hold CMD[;CMD...]  run this program as a child that stays after running
 *                      the commands -> "held PID ready|OUT|..."
 *   tell CMD           a command for that child -> "told OUT"
 *   kill, reap         SIGKILL the child, or close its input; wait for it
 *                      -> "ended PID STATUS"
 *   quit
 * and prints "ready" once loaded. With CARVE_TEST_CLOCK (a test's virtual
 * clock, vclock.h) it takes part in the clock's count of running threads:
 * it claims its process's slot before "ready", and the threads it starts
 * count as running until they end.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cuda_api.h"
#include "vclock.h"

typedef CUresult (*get_proc_fn)(const char *, void **, int, uint64_t, void *);
static get_proc_fn get_proc;
static void *h;

/* events made by evnew */
#define EVENTS_MAX 64
static CUevent events[EVENTS_MAX];
static int nevents;

static void *proc(const char *name, int ptds)
{
	void *f = NULL;
	if (get_proc(name, &f, 12080, ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, NULL) != 0)
		return NULL;
	return f;
}

static void print_mask(void)
{
	int (*last)(uint32_t *) = (int (*)(uint32_t *))dlsym(h, "fakecuda_last");
	uint32_t out[5];
	int called = last(out);
	printf("mask %08x %08x %08x %08x %u %d\n", out[0], out[1], out[2], out[3], out[4], called);
}

static int profiled, profiled_other;
static void profiler_cb(void *user, int domain, int cbid, const void *params)
{
	(void)user, (void)params;
	if (domain == 0xb && cbid == 1)
		profiled++;
	else if (domain == 6 || domain == 7)
		profiled_other++;
}

static const uintptr_t *tools;
static uint32_t profiler_handle;

static int profile(void)
{
	CUresult (*get_table)(const void **, const void *) = proc("cuGetExportTable", 0);
	static const unsigned char uuid[16] = {0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
					       0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b};
	const uintptr_t *t;
	CUresult r = get_table((const void **)&t, uuid);
	if (r != 0)
		return r;
	tools = t;
	uint32_t handle;
	r = ((int (*)(uint32_t *, void *, void *, void *))t[11])(&handle, (void *)profiler_cb, NULL, NULL);
	profiler_handle = handle;
	if (r != 0)
		return r;
	if ((r = ((int (*)(uint32_t, uint32_t, int))t[9])(1, handle, 6)) != 0)
		return r;
	/* and one callback through an entry the shim does not track */
	if ((r = ((int (*)(uint32_t, uint32_t, int, int))t[10])(1, handle, 7, 2)) != 0)
		return r;
	return ((int (*)(uint32_t, uint32_t, int, int))t[6])(1, handle, 0xb, 1);
}

static volatile int storming;
static unsigned launcher_fn = 0, launcher_grid = 1; /* what the launchers launch */
static unsigned launcher_each, launcher_next; /* each: the k-th launcher launches launcher_fn + k */
static int launcher_rc;
static void *launcher(void *arg)
{
	int n = *(int *)arg;
	CUresult (*f)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
		      unsigned, CUstream, void **, void **) = proc("cuLaunchKernel", 0);
	unsigned fn = launcher_fn + (launcher_each ? __atomic_fetch_add(&launcher_next, 1, __ATOMIC_RELAXED) : 0);
	for (int i = 0; i < n; i++) {
		CUresult r = f((CUfunction)(uintptr_t)fn, launcher_grid, 1, 1, 32, 1, 1, 0, 0, NULL, NULL);
		if (r)
			__atomic_store_n(&launcher_rc, r, __ATOMIC_RELAXED);
	}
	/* the last to end hands its count on to the thread that joins them */
	if (__atomic_sub_fetch(&storming, 1, __ATOMIC_ACQ_REL) > 0)
		vclock_park(vclock());
	return NULL;
}

/* start_launchers starts the 4 launchers of n kernels each, counted as
 * running on a virtual clock. */
static void start_launchers(pthread_t t[4], int *n)
{
	storming = 4;
	for (int i = 0; i < 4; i++) {
		vclock_wake(vclock());
		pthread_create(&t[i], NULL, launcher, n);
	}
}

static void join_launchers(pthread_t t[4])
{
	vclock_park(vclock()); /* the last launcher's count comes back */
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

static double threads(int n)
{
	pthread_t t[4];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	start_launchers(t, &n);
	join_launchers(t);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
}

static int storm(int n)
{
	pthread_t t[4];
	start_launchers(t, &n);
	while (__atomic_load_n(&storming, __ATOMIC_ACQUIRE) > 0) {
		if (profile() != 0 || ((int (*)(uint32_t))tools[4])(profiler_handle) != 0)
			return -1;
	}
	join_launchers(t);
	return ((int (*)(void))dlsym(h, "fakecuda_bare"))();
}

/* fl makes n launches of test function fn, of grid blocks across and
 * rows down, by entry; the first result that was not 0, else 0 */
static CUstream fl_stream; /* where fl launches: "stream new" */
static CUresult fl(unsigned fn, unsigned grid, unsigned rows, int n, const char *entry)
{
	CUfunction f = (CUfunction)(uintptr_t)fn;
	uint8_t attr[72] = {0};
	int id = 4; /* CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION */
	unsigned dims[3] = {2, 1, 1};
	memcpy(attr, &id, sizeof id);
	memcpy(attr + 8, dims, sizeof dims);
	int cluster = strcmp(entry, "cluster") == 0;
	CUlaunchConfig c = {grid, rows, 1, 128, 1, 1, 0, 0, cluster ? attr : NULL, cluster};
	CUresult (*k)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **,
		      void **) = proc("cuLaunchKernel", 0);
	CUresult (*ex)(const CUlaunchConfig *, CUfunction, void **, void **) = proc("cuLaunchKernelEx", 0);
	CUresult (*coop)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
			 void **) = proc("cuLaunchCooperativeKernel", 0);
	CUresult first = 0;
	for (int i = 0; i < n; i++) {
		CUresult r = strcmp(entry, "coop") == 0 ? coop(f, grid, rows, 1, 128, 1, 1, 0, 0, NULL)
			     : strcmp(entry, "ex") == 0 || cluster ? ex(&c, f, NULL, NULL)
								 : k(f, grid, rows, 1, 128, 1, 1, 0, fl_stream, NULL, NULL);
		if (r && !first)
			first = r;
	}
	return first;
}

/* start_child runs this program as a child reading the pipe in and
 * writing the pipe out, and keeps the ends the parent uses (in[1], out[0]). */
static pid_t start_child(int in[2], int out[2])
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		execl("/proc/self/exe", "driver", (char *)NULL);
		_exit(127);
	}
	close(in[0]), close(out[1]);
	return pid;
}

/* spawn runs this program as a child with cmds (separated by ';') on its
 * stdin, and says what became of it. */
static void spawn(const char *cmds)
{
	int in[2], out[2];
	if (pipe(in) != 0 || pipe(out) != 0) {
		printf("error pipe\n");
		return;
	}
	pid_t pid = start_child(in, out);
	for (const char *c = cmds; *c; c++) {
		char ch = *c == ';' ? '\n' : *c;
		if (write(in[1], &ch, 1) != 1)
			break;
	}
	if (write(in[1], "\n", 1) != 1) {
		/* the child is gone already: its status says why */
	}
	close(in[1]);
	char buf[4096];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof buf - 1 && (r = read(out[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)r;
	close(out[0]);
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = '|';
	int status = 0;
	waitpid(pid, &status, 0);
	printf("child %d %d %s\n", (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), buf);
}

/* --- device memory ----------------------------------------------------------- */

static void *procv(const char *name, int version, int ptds)
{
	void *f = NULL;
	if (get_proc(name, &f, version, ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, NULL) != 0)
		return NULL;
	return f;
}

enum { K_MEM = 1, K_V1, K_DIRECT, K_PITCH, K_MANAGED, K_ASYNC, K_POOL, K_ARRAY, K_ARRAY1, K_ARRAY3D, K_MIPMAP, K_VMM,
       K_GRAPH, K_IPC };
static const char *const kinds[] = {"", "mem", "v1", "direct", "pitch", "managed", "async", "pool", "array",
				    "array1", "array3d", "mipmap", "vmm", "graph", "ipc"};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

struct obj {
	int kind, released;
	uint64_t ptr, size;
	void *h;
};
#define OBJS 4096
static struct obj objs[OBJS];
static pthread_mutex_t objs_mu = PTHREAD_MUTEX_INITIALIZER;
static CUmemoryPool pool; /* the pool "pool" commands work on */

static int obj_add(const struct obj *o)
{
	pthread_mutex_lock(&objs_mu);
	int i = 1;
	while (i < OBJS && objs[i].kind)
		i++;
	if (i < OBJS)
		objs[i] = *o;
	pthread_mutex_unlock(&objs_mu);
	return i < OBJS ? i : -1;
}

static struct obj *obj_get(int id)
{
	return id > 0 && id < OBJS && objs[id].kind ? &objs[id] : NULL;
}

/* a CUmemAllocationProp: pinned, on device 0 */
static const int device_prop[8] = {1, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0};

/* graph makes an executable graph whose one allocation node takes bytes,
 * freed again within it; capture: the allocation captured from a stream. */
static CUresult graph(uint64_t bytes, int capture, void **exec)
{
	CUgraph g = NULL;
	CUresult r;
	if (capture) {
		CUstream s;
		((CUresult(*)(CUstream *, unsigned))proc("cuStreamCreate", 0))(&s, 0);
		((CUresult(*)(CUstream, int))proc("cuStreamBeginCapture", 0))(s, CU_STREAM_CAPTURE_MODE_RELAXED);
		CUdeviceptr d = 0;
		r = ((CUresult(*)(CUdeviceptr *, size_t, CUstream))proc("cuMemAllocAsync", 0))(&d, bytes, s);
		if (r == 0)
			((CUresult(*)(CUdeviceptr, CUstream))proc("cuMemFreeAsync", 0))(d, s);
		((CUresult(*)(CUstream, CUgraph *))proc("cuStreamEndCapture", 0))(s, &g);
		if (r != 0)
			return r;
	} else {
		((CUresult(*)(CUgraph *, unsigned))proc("cuGraphCreate", 0))(&g, 0);
		uint64_t params[16] = {0};
		memcpy((char *)params + CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET, &bytes, sizeof bytes);
		CUgraphNode a, f;
		r = ((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, void *))proc(
		    "cuGraphAddMemAllocNode", 0))(&a, g, NULL, 0, params);
		if (r != 0)
			return r;
		CUdeviceptr d;
		memcpy(&d, (char *)params + CU_MEM_ALLOC_NODE_DPTR_OFFSET, sizeof d);
		((CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUdeviceptr))proc(
		    "cuGraphAddMemFreeNode", 0))(&f, g, &a, 1, d);
	}
	return ((CUresult(*)(void **, CUgraph, unsigned long long))proc("cuGraphInstantiate", 0))(exec, g, 0);
}

/* alloc takes bytes of device memory by the path kind names. */
static CUresult alloc(int kind, uint64_t bytes, struct obj *o)
{
	memset(o, 0, sizeof *o);
	o->kind = kind, o->size = bytes;
	CUresult r = 1;
	CUdeviceptr d = 0;
	switch (kind) {
	case K_MEM:
		r = ((CUresult(*)(CUdeviceptr *, size_t))proc("cuMemAlloc", 0))(&d, bytes);
		break;
	case K_V1: {
		unsigned d32 = 0;
		r = ((CUresult(*)(unsigned *, unsigned))procv("cuMemAlloc", 3000, 0))(&d32, (unsigned)bytes);
		d = d32;
		break;
	}
	case K_DIRECT:
		r = ((CUresult(*)(CUdeviceptr *, size_t))dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"))(&d, bytes);
		break;
	case K_PITCH: {
		size_t pitch = 0;
		r = ((CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned))proc("cuMemAllocPitch", 0))(
		    &d, &pitch, bytes, 4, 4);
		o->size = pitch * 4;
		break;
	}
	case K_MANAGED:
		r = ((CUresult(*)(CUdeviceptr *, size_t, unsigned))proc("cuMemAllocManaged", 0))(&d, bytes, 1);
		break;
	case K_ASYNC:
		r = ((CUresult(*)(CUdeviceptr *, size_t, CUstream))proc("cuMemAllocAsync", 0))(&d, bytes, 0);
		break;
	case K_POOL:
		r = ((CUresult(*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream))proc("cuMemAllocFromPoolAsync", 0))(
		    &d, bytes, pool, 0);
		break;
	case K_ARRAY: {
		CUDA_ARRAY_DESCRIPTOR a = {bytes / 16, 4, CU_AD_FORMAT_FLOAT, 1};
		r = ((CUresult(*)(void **, const void *))proc("cuArrayCreate", 0))(&o->h, &a);
		break;
	}
	case K_ARRAY1: { /* the 32-bit flavour of CUDA before 3.2 */
		struct {
			unsigned w, h;
			int format;
			unsigned channels;
		} a = {(unsigned)bytes / 16, 4, CU_AD_FORMAT_FLOAT, 1};
		r = ((CUresult(*)(void **, const void *))procv("cuArrayCreate", 3000, 0))(&o->h, &a);
		break;
	}
	case K_ARRAY3D: {
		CUDA_ARRAY3D_DESCRIPTOR a = {bytes / 64, 4, 4, CU_AD_FORMAT_FLOAT, 1, 0};
		r = ((CUresult(*)(void **, const void *))proc("cuArray3DCreate", 0))(&o->h, &a);
		break;
	}
	case K_MIPMAP: { /* bytes: the side of a square of floats, in three levels */
		CUDA_ARRAY3D_DESCRIPTOR a = {bytes, bytes, 0, CU_AD_FORMAT_FLOAT, 1, 0};
		r = ((CUresult(*)(void **, const void *, unsigned))proc("cuMipmappedArrayCreate", 0))(&o->h, &a, 3);
		break;
	}
	case K_VMM: {
		CUmemGenericAllocationHandle h = 0;
		r = ((CUresult(*)(CUmemGenericAllocationHandle *, size_t, const void *, unsigned long long))proc(
		    "cuMemCreate", 0))(&h, bytes, device_prop, 0);
		if (r != 0)
			break;
		((CUresult(*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))proc(
		    "cuMemAddressReserve", 0))(&d, bytes, 0, 0, 0);
		r = ((CUresult(*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))proc(
		    "cuMemMap", 0))(d, bytes, 0, h, 0);
		((CUresult(*)(CUdeviceptr, size_t, const void *, size_t))proc("cuMemSetAccess", 0))(d, bytes, NULL, 0);
		o->h = (void *)(uintptr_t)h;
		break;
	}
	case K_GRAPH:
		r = graph(bytes, 0, &o->h);
		break;
	}
	o->ptr = d;
	return r;
}

static CUresult release(struct obj *o)
{
	o->released = 1;
	return ((CUresult(*)(CUmemGenericAllocationHandle))proc("cuMemRelease", 0))((uintptr_t)o->h);
}

static CUresult unmap(struct obj *o)
{
	CUresult r = ((CUresult(*)(CUdeviceptr, size_t))proc("cuMemUnmap", 0))(o->ptr, o->size);
	((CUresult(*)(CUdeviceptr, size_t))proc("cuMemAddressFree", 0))(o->ptr, o->size);
	o->ptr = 0;
	return r;
}

/* dealloc gives o back by the path that frees its kind. */
static CUresult dealloc(struct obj *o)
{
	CUresult r = 1;
	switch (o->kind) {
	case K_MEM: case K_PITCH: case K_MANAGED:
		r = ((CUresult(*)(CUdeviceptr))proc("cuMemFree", 0))(o->ptr);
		break;
	case K_V1:
		r = ((CUresult(*)(unsigned))procv("cuMemFree", 3000, 0))((unsigned)o->ptr);
		break;
	case K_DIRECT:
		r = ((CUresult(*)(CUdeviceptr))dlsym(RTLD_DEFAULT, "cuMemFree_v2"))(o->ptr);
		break;
	case K_ASYNC: case K_POOL:
		r = ((CUresult(*)(CUdeviceptr, CUstream))proc("cuMemFreeAsync", 0))(o->ptr, 0);
		break;
	case K_ARRAY: case K_ARRAY1: case K_ARRAY3D:
		r = ((CUresult(*)(void *))proc("cuArrayDestroy", 0))(o->h);
		break;
	case K_MIPMAP:
		r = ((CUresult(*)(void *))proc("cuMipmappedArrayDestroy", 0))(o->h);
		break;
	case K_VMM:
		r = o->ptr ? unmap(o) : 0;
		if (r == 0 && !o->released)
			r = release(o);
		break;
	case K_GRAPH:
		r = ((CUresult(*)(void *))proc("cuGraphExecDestroy", 0))(o->h);
		break;
	case K_IPC:
		r = ((CUresult(*)(CUdeviceptr))proc("cuIpcCloseMemHandle", 0))(o->ptr);
		break;
	}
	return r;
}

static int kind_of(const char *name)
{
	for (int k = 1; k < NKINDS; k++)
		if (strcmp(kinds[k], name) == 0)
			return k;
	return 0;
}

static CUresult graph_launch(void *exec, int upload)
{
	return ((CUresult(*)(void *, CUstream))proc(upload ? "cuGraphUpload" : "cuGraphLaunch", 0))(exec, 0);
}

/* --- many threads at once ------------------------------------------------------- */

static void *stress_exec; /* a graph every thread launches */

struct stress {
	int ops, ok, refused, errors;
	unsigned seed;
};

static void *stress_thread(void *arg)
{
	struct stress *st = arg;
	static const int paths[] = {K_MEM, K_PITCH, K_MANAGED, K_ASYNC, K_POOL, K_ARRAY, K_ARRAY3D, K_VMM, K_MIPMAP};
	struct obj live[48];
	int n = 0;
	for (int i = 0; i < st->ops; i++) {
		unsigned r = rand_r(&st->seed) % 100;
		CUresult rc = 0;
		if (r < 50 && n < 48) {
			int kind = paths[rand_r(&st->seed) % (sizeof paths / sizeof paths[0])];
			uint64_t bytes = kind == K_MIPMAP ? 64u << (rand_r(&st->seed) % 5)
							  : (1 + rand_r(&st->seed) % 64) * 65536ull;
			rc = alloc(kind, bytes, &live[n]);
			if (rc == 0)
				n++, st->ok++;
		} else if (r < 90 && n > 0) {
			int k = (int)(rand_r(&st->seed) % (unsigned)n);
			rc = dealloc(&live[k]);
			live[k] = live[--n];
		} else if (r < 94) {
			rc = ((CUresult(*)(CUstream))proc("cuStreamSynchronize", 0))(0);
		} else if (r < 96) {
			rc = ((CUresult(*)(CUmemoryPool, size_t))proc("cuMemPoolTrimTo", 0))(pool, 0);
		} else if (r < 98) {
			rc = graph_launch(stress_exec, 0);
		} else {
			rc = ((CUresult(*)(CUdevice))proc("cuDeviceGraphMemTrim", 0))(0);
		}
		if (rc == CUDA_ERROR_OUT_OF_MEMORY)
			st->refused++;
		else if (rc != 0)
			st->errors++;
	}
	return NULL; /* what is live stays allocated */
}

/* stress: n threads each make ops random allocations and frees over every
 * path, with synchronizations, trims and graph launches between. */
static void stress(int n, int ops, unsigned seed)
{
	pthread_t t[64];
	struct stress st[64];
	if (n > 64)
		n = 64;
	if (!pool) {
		int props[22] = {1, 0, CU_MEM_LOCATION_TYPE_DEVICE, 0};
		((CUresult(*)(CUmemoryPool *, const void *))proc("cuMemPoolCreate", 0))(&pool, props);
	}
	if (!stress_exec && graph(8 << 20, 0, &stress_exec) != 0)
		stress_exec = NULL;
	for (int i = 0; i < n; i++) {
		st[i] = (struct stress){.ops = ops, .seed = seed + (unsigned)i * 7919};
		pthread_create(&t[i], NULL, stress_thread, &st[i]);
	}
	int ok = 0, refused = 0, errors = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		ok += st[i].ok, refused += st[i].refused, errors += st[i].errors;
	}
	printf("stress %d %d %d\n", ok, refused, errors);
}

/* --- a child kept running ---------------------------------------------------------- */

static pid_t held;
static FILE *held_in, *held_out;

static int held_line(char *buf, size_t n)
{
	if (!fgets(buf, (int)n, held_out))
		return 0;
	buf[strcspn(buf, "\n")] = 0;
	return 1;
}

/* hold starts this program as a child that runs cmds and stays, answering
 * later commands (tell) until it is killed (kill) or let go (reap). */
static void hold(const char *cmds)
{
	int in[2], out[2];
	if (held || pipe(in) != 0 || pipe(out) != 0) {
		printf("error hold\n");
		return;
	}
	pid_t pid = start_child(in, out);
	held = pid;
	held_in = fdopen(in[1], "w");
	held_out = fdopen(out[0], "r");
	setvbuf(held_in, NULL, _IOLBF, 0);
	char line[256], all[2048] = "";
	held_line(line, sizeof line); /* ready */
	strcat(all, line);
	for (const char *c = cmds; *c;) {
		size_t k = strcspn(c, ";");
		fprintf(held_in, "%.*s\n", (int)k, c);
		if (!held_line(line, sizeof line))
			break;
		if (strlen(all) + strlen(line) + 2 < sizeof all)
			strcat(strcat(all, "|"), line);
		c += k + (c[k] == ';');
	}
	printf("held %d %s\n", (int)pid, all);
}

static void tell(const char *cmd)
{
	char line[256];
	if (!held) {
		printf("error no child\n");
		return;
	}
	fprintf(held_in, "%s\n", cmd);
	printf("told %s\n", held_line(line, sizeof line) ? line : "nothing");
}

static void end_held(int sig)
{
	int status = 0;
	if (!held) {
		printf("error no child\n");
		return;
	}
	if (sig)
		kill(held, sig);
	fclose(held_in);
	waitpid(held, &status, 0);
	fclose(held_out);
	printf("ended %d %d\n", (int)held, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	held = 0;
}

/* memory answers the memory commands (see the top of this file); 0 if
 * line is none of them. */
static int memory(char *line)
{
	char a[64] = "", b[64] = "";
	unsigned long long n = 0, m = 0;
	int id;
	line[strcspn(line, "\n")] = 0;
	if (sscanf(line, "alloc %63s %llu", a, &n) == 2) {
		struct obj o;
		int kind = kind_of(a);
		CUresult r = kind ? alloc(kind, n, &o) : 1;
		if (r != 0)
			printf("rc %d\n", r);
		else
			printf("id %d\n", obj_add(&o));
	} else if (sscanf(line, "free %d", &id) == 1) {
		struct obj *o = obj_get(id);
		CUresult r = o ? dealloc(o) : 1;
		if (o && r == 0)
			o->kind = 0;
		printf("rc %d\n", r);
	} else if (sscanf(line, "release %d", &id) == 1) {
		struct obj *o = obj_get(id);
		printf("rc %d\n", o && o->kind == K_VMM ? release(o) : 1);
	} else if (sscanf(line, "unmap %d", &id) == 1) {
		struct obj *o = obj_get(id);
		printf("rc %d\n", o && o->kind == K_VMM && o->ptr ? unmap(o) : 1);
	} else if (sscanf(line, "retain %d", &id) == 1) {
		struct obj *o = obj_get(id);
		CUmemGenericAllocationHandle h = 0;
		CUresult r = o && o->kind == K_VMM
				 ? ((CUresult(*)(CUmemGenericAllocationHandle *, void *))proc("cuMemRetainAllocationHandle", 0))(
				       &h, (void *)(uintptr_t)o->ptr)
				 : 1;
		if (o && r == 0)
			o->released = 0; /* one more reference for dealloc to release */
		printf("rc %d\n", r);
	} else if (sscanf(line, "capture %llu", &n) == 1) {
		struct obj o = {.kind = K_GRAPH, .size = n};
		CUresult r = graph(n, 1, &o.h);
		if (r != 0)
			printf("rc %d\n", r);
		else
			printf("id %d\n", obj_add(&o));
	} else if (sscanf(line, "glaunch %d", &id) == 1 || sscanf(line, "gupload %d", &id) == 1) {
		struct obj *o = obj_get(id);
		printf("rc %d\n", o && o->kind == K_GRAPH ? graph_launch(o->h, line[1] == 'u') : 1);
	} else if (strcmp(line, "gtrim") == 0) {
		printf("rc %d\n", ((CUresult(*)(CUdevice))proc("cuDeviceGraphMemTrim", 0))(0));
	} else if (sscanf(line, "pool %63s %llu", a, &n) >= 1) {
		CUresult r = 0;
		if (strcmp(a, "new") == 0 || strcmp(a, "host") == 0) {
			int props[22] = {1, 0, a[0] == 'n' ? CU_MEM_LOCATION_TYPE_DEVICE : 2, 0};
			r = ((CUresult(*)(CUmemoryPool *, const void *))proc("cuMemPoolCreate", 0))(&pool, props);
		} else if (strcmp(a, "default") == 0) {
			r = ((CUresult(*)(CUmemoryPool *, CUdevice))proc("cuDeviceGetDefaultMemPool", 0))(&pool, 0);
		} else if (strcmp(a, "threshold") == 0) {
			uint64_t v = n;
			r = ((CUresult(*)(CUmemoryPool, int, void *))proc("cuMemPoolSetAttribute", 0))(
			    pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
		} else if (strcmp(a, "trim") == 0) {
			r = ((CUresult(*)(CUmemoryPool, size_t))proc("cuMemPoolTrimTo", 0))(pool, n);
		} else if (strcmp(a, "destroy") == 0) {
			r = ((CUresult(*)(CUmemoryPool))proc("cuMemPoolDestroy", 0))(pool);
			pool = NULL;
		} else if (strcmp(a, "set") == 0) {
			r = ((CUresult(*)(CUdevice, CUmemoryPool))proc("cuDeviceSetMemPool", 0))(0, pool);
		} else if (strcmp(a, "reserved") == 0) {
			uint64_t v = 0;
			r = ((CUresult(*)(CUmemoryPool, int, void *))proc("cuMemPoolGetAttribute", 0))(
			    pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v);
			printf("reserved %llu\n", (unsigned long long)v);
			return 1;
		}
		printf("rc %d\n", r);
	} else if (sscanf(line, "heap %llu", &n) == 1) {
		printf("rc %d\n", ((CUresult(*)(int, size_t))proc("cuCtxSetLimit", 0))(CU_LIMIT_MALLOC_HEAP_SIZE, n));
	} else if (strncmp(line, "meminfo", 7) == 0) {
		if (strstr(line, "v1")) {
			unsigned f = 0, t = 0;
			CUresult r = ((CUresult(*)(unsigned *, unsigned *))procv("cuMemGetInfo", 3000, 0))(&f, &t);
			printf("meminfo %u %u rc %d\n", f, t, r);
		} else {
			size_t f = 0, t = 0;
			CUresult r = ((CUresult(*)(size_t *, size_t *))proc("cuMemGetInfo", 0))(&f, &t);
			printf("meminfo %zu %zu rc %d\n", f, t, r);
		}
	} else if (strncmp(line, "totalmem", 8) == 0) {
		if (strstr(line, "v1")) {
			unsigned t = 0;
			CUresult r = ((CUresult(*)(unsigned *, CUdevice))procv("cuDeviceTotalMem", 3000, 0))(&t, 0);
			printf("totalmem %u rc %d\n", t, r);
		} else {
			size_t t = 0;
			CUresult r = ((CUresult(*)(size_t *, CUdevice))proc("cuDeviceTotalMem", 0))(&t, 0);
			printf("totalmem %zu rc %d\n", t, r);
		}
	} else if (strcmp(line, "fakemem") == 0) {
		uint64_t out[2];
		((void (*)(uint64_t *))dlsym(h, "fakecuda_mem"))(out);
		printf("fake %llu %llu\n", (unsigned long long)out[0], (unsigned long long)out[1]);
	} else if (sscanf(line, "fakemb %llu", &n) == 1) {
		((void (*)(long long))dlsym(h, "fakecuda_mem_mb"))((long long)n);
		printf("ok\n");
	} else if (strcmp(line, "flavours") == 0) {
		int out[2];
		((void (*)(int *))dlsym(h, "fakecuda_flavours"))(out);
		printf("flavours %d %d\n", out[0], out[1]);
	} else if (sscanf(line, "ipcget %d", &id) == 1) {
		struct obj *o = obj_get(id);
		CUipcMemHandle ipc;
		CUresult r = o ? ((CUresult(*)(CUipcMemHandle *, CUdeviceptr))proc("cuIpcGetMemHandle", 0))(&ipc, o->ptr) : 1;
		uint64_t v;
		memcpy(&v, ipc.reserved, sizeof v);
		if (r != 0)
			printf("rc %d\n", r);
		else
			printf("ipc %llx\n", (unsigned long long)v);
	} else if (sscanf(line, "ipcopen %llx", &n) == 1) {
		CUipcMemHandle ipc = {{0}};
		memcpy(ipc.reserved, &n, sizeof n);
		struct obj o = {.kind = K_IPC};
		CUdeviceptr d = 0;
		CUresult r = ((CUresult(*)(CUdeviceptr *, CUipcMemHandle, unsigned))proc("cuIpcOpenMemHandle", 0))(&d, ipc, 1);
		o.ptr = d;
		if (r != 0)
			printf("rc %d\n", r);
		else
			printf("id %d\n", obj_add(&o));
	} else if (sscanf(line, "lookup %63s %llu %63s", a, &n, b) >= 2) {
		void *f = procv(a, (int)n, strcmp(b, "ptds") == 0);
		printf("lookup %s %s\n", a, f ? "found" : "none");
	} else if (sscanf(line, "stress %llu %llu %63s", &n, &m, a) == 3) {
		stress((int)n, (int)m, (unsigned)strtoul(a, NULL, 10));
	} else if (sscanf(line, "memcost %llu", &n) == 1) {
		CUresult (*al)(CUdeviceptr *, size_t) = proc("cuMemAlloc", 0);
		CUresult (*fr)(CUdeviceptr) = proc("cuMemFree", 0);
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (unsigned long long i = 0; i < n; i++) {
			CUdeviceptr d;
			al(&d, 4096);
			fr(d);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("memcost %.1f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)(n ? n : 1));
	} else if (strncmp(line, "hold ", 5) == 0) {
		hold(line + 5);
	} else if (strncmp(line, "tell ", 5) == 0) {
		tell(line + 5);
	} else if (strcmp(line, "kill") == 0) {
		end_held(SIGKILL);
	} else if (strcmp(line, "reap") == 0) {
		end_held(0);
	} else {
		return 0;
	}
	return 1;
}

int main(void)
{
	const char *lib = getenv("CARVE_LIBCUDA");
	h = dlopen(lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		printf("error %s\n", dlerror());
		return 2;
	}
	int (*launch)(int, uint32_t *) = (int (*)(int, uint32_t *))dlsym(h, "fakecuda_launch");
	get_proc_fn first = (get_proc_fn)dlsym(h, "cuGetProcAddress_v2");
	if (!launch || !first) {
		printf("error no fakecuda_launch or cuGetProcAddress_v2\n");
		return 2;
	}
	/* the runtime asks for the lookup function through itself */
	if (first("cuGetProcAddress", (void **)&get_proc, 12080, 0, NULL) != 0) {
		printf("error cuGetProcAddress\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (vclock())
		vclock_self(vclock()); /* the slot is there once "ready" is */
	printf("ready\n");
	char line[256];
	while (fgets(line, sizeof line, stdin)) {
		int v;
		char entry[16] = "", flavour[16] = "";
		if (sscanf(line, "launch %i", &v) == 1) {
			uint32_t out[5];
			int called = launch(v, out);
			printf("mask %08x %08x %08x %08x %u %d\n", out[0], out[1], out[2], out[3], out[4], called);
		} else if (sscanf(line, "klaunch %15s %15s", entry, flavour) >= 1) {
			int ptds = strcmp(flavour, "ptds") == 0;
			CUresult r = 1;
			if (strcmp(entry, "kernel") == 0) {
				CUresult (*f)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
					      unsigned, CUstream, void **, void **) = proc("cuLaunchKernel", ptds);
				r = f(0, 1, 1, 1, 32, 1, 1, 0, 0, NULL, NULL);
			} else if (strcmp(entry, "ex") == 0) {
				CUresult (*f)(const CUlaunchConfig *, CUfunction, void **, void **) = proc("cuLaunchKernelEx", ptds);
				CUlaunchConfig c = {1, 1, 1, 32, 1, 1, 0, 0, NULL, 0};
				r = f(&c, 0, NULL, NULL);
			} else if (strcmp(entry, "exnull") == 0) {
				CUresult (*f)(const CUlaunchConfig *, CUfunction, void **, void **) = proc("cuLaunchKernelEx", ptds);
				r = f(NULL, 0, NULL, NULL);
			} else if (strcmp(entry, "coop") == 0) {
				CUresult (*f)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
					      unsigned, CUstream, void **) = proc("cuLaunchCooperativeKernel", ptds);
				r = f(0, 1, 1, 1, 32, 1, 1, 0, 0, NULL);
			} else if (strcmp(entry, "graph") == 0) {
				CUresult (*f)(CUgraphExec, CUstream) = proc("cuGraphLaunch", ptds);
				r = f((CUgraphExec)0x1, 0);
			}
			if (r != 0)
				printf("rc %d\n", r);
			else
				print_mask();
		} else if (strncmp(line, "fl ", 3) == 0) {
			unsigned fn = 0, grid = 0, rows = 1;
			int n = 0;
			char e[16] = "kernel";
			sscanf(line, "fl %u %u %d %15s %u", &fn, &grid, &n, e, &rows);
			printf("rc %d\n", fl(fn, grid, rows, n, e));
		} else if (strncmp(line, "flcap ", 6) == 0) {
			unsigned fn = 0, grid = 0;
			int n = 0;
			sscanf(line, "flcap %u %u %d", &fn, &grid, &n);
			CUstream s = NULL;
			CUgraph g = NULL;
			CUresult (*k)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				      CUstream, void **, void **) = proc("cuLaunchKernel", 0);
			CUresult r = ((CUresult(*)(CUstream *, unsigned))proc("cuStreamCreate", 0))(&s, 0);
			if (!r)
				r = ((CUresult(*)(CUstream, int))proc("cuStreamBeginCapture", 0))(s, CU_STREAM_CAPTURE_MODE_RELAXED);
			for (int i = 0; i < n && !r; i++)
				r = k((CUfunction)(uintptr_t)fn, grid, 1, 1, 128, 1, 1, 0, s, NULL, NULL);
			CUresult e = ((CUresult(*)(CUstream, CUgraph *))proc("cuStreamEndCapture", 0))(s, &g);
			printf("rc %d capevents %d\n", r ? r : e, ((int (*)(void))dlsym(h, "fakecuda_captured_events"))());
		} else if (strncmp(line, "stream new", 10) == 0) {
			CUresult r = ((CUresult(*)(CUstream *, unsigned))proc("cuStreamCreate", 0))(&fl_stream, 0);
			if (r)
				printf("rc %d\n", r);
			else
				printf("stream %p\n", (void *)fl_stream);
		} else if (strncmp(line, "stream del", 10) == 0) {
			printf("rc %d\n", ((CUresult(*)(CUstream))proc("cuStreamDestroy", 0))(fl_stream));
			fl_stream = 0;
		} else if (strncmp(line, "fnmove ", 7) == 0) {
			unsigned fn = 0;
			sscanf(line, "fnmove %u", &fn);
			((void (*)(unsigned))dlsym(h, "fakecuda_move"))(fn);
			printf("rc 0\n");
		} else if (strncmp(line, "gcap ", 5) == 0) {
			static CUstream gs;
			CUgraph g = NULL;
			CUresult r = 0;
			if (strncmp(line + 5, "on", 2) == 0) {
				r = ((CUresult(*)(CUstream *, unsigned))proc("cuStreamCreate", 0))(&gs, CU_STREAM_NON_BLOCKING);
				if (!r)
					r = ((CUresult(*)(CUstream, int))proc("cuStreamBeginCapture", 0))(gs, CU_STREAM_CAPTURE_MODE_GLOBAL);
			} else {
				r = ((CUresult(*)(CUstream, CUgraph *))proc("cuStreamEndCapture", 0))(gs, &g);
			}
			printf("rc %d unsafe %d\n", r, ((int (*)(void))dlsym(h, "fakecuda_unsafe_calls"))());
		} else if (strncmp(line, "flt ", 4) == 0) {
			int n = 0;
			char each[8] = "";
			sscanf(line, "flt %u %u %d %7s", &launcher_fn, &launcher_grid, &n, each);
			launcher_each = strcmp(each, "each") == 0, launcher_next = 0;
			launcher_rc = 0;
			threads(n);
			launcher_fn = 0, launcher_grid = 1;
			printf("rc %d\n", launcher_rc);
		} else if (strncmp(line, "runs ", 5) == 0) {
			unsigned fn = 0, grid = 0, lo = ~0u, hi = 0;
			sscanf(line, "runs %u %u", &fn, &grid);
			unsigned (*runs)(unsigned, unsigned) = (unsigned (*)(unsigned, unsigned))dlsym(h, "fakecuda_runs");
			unsigned (*fl_n)(unsigned) = (unsigned (*)(unsigned))dlsym(h, "fakecuda_fn_launches");
			unsigned (*bad)(void) = (unsigned (*)(void))dlsym(h, "fakecuda_bad");
			for (unsigned b = 0; b < grid; b++) {
				unsigned r = runs(fn, b);
				lo = r < lo ? r : lo;
				hi = r > hi ? r : hi;
			}
			printf("runs %u %u %u %u\n", lo, hi, fl_n(fn), bad());
		} else if (strncmp(line, "kernels ", 8) == 0) {
			unsigned fn = 0;
			sscanf(line, "kernels %u", &fn);
			uint64_t at[64][2];
			unsigned (*kern)(unsigned, uint64_t (*)[2], unsigned) =
				(unsigned (*)(unsigned, uint64_t (*)[2], unsigned))dlsym(h, "fakecuda_kernels");
			unsigned n = kern(fn, at, 64);
			printf("kernels %u", n);
			for (unsigned i = 0; i < n; i++)
				printf(" %llu %llu", (unsigned long long)at[i][0], (unsigned long long)at[i][1]);
			printf("\n");
		} else if (strncmp(line, "calls", 5) == 0) {
			char names[1024];
			unsigned (*calls)(char *, size_t) = (unsigned (*)(char *, size_t))dlsym(h, "fakecuda_calls");
			unsigned n = calls(names, sizeof names);
			printf("calls %u %s\n", n, names);
		} else if (strncmp(line, "direct", 6) == 0) {
			CUresult (*f)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				      unsigned, CUstream, void **, void **) = dlsym(RTLD_DEFAULT, "cuLaunchKernel");
			CUresult r = f(0, 1, 1, 1, 32, 1, 1, 0, 0, NULL, NULL);
			if (r != 0)
				printf("rc %d\n", r);
			else
				print_mask();
		} else if (strncmp(line, "sms", 3) == 0) {
			CUresult (*f)(int *, int, CUdevice) = proc("cuDeviceGetAttribute", 0);
			int n = 0, dev = 0;
			sscanf(line, "sms %i", &dev);
			CUresult r = f(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
			printf("sms %d rc %d\n", n, r);
		} else if (strncmp(line, "sync", 4) == 0) {
			CUresult (*f)(CUstream) = proc("cuStreamSynchronize", 0);
			printf("rc %d\n", f(0));
		} else if (strncmp(line, "next", 4) == 0) {
			void *next = dlsym(RTLD_NEXT, "dlsym");
			printf("next %s\n", next == (void *)dlsym ? "same" : "different");
		} else if (strncmp(line, "profiler", 8) == 0) {
			printf("rc %d\n", profile());
		} else if (strncmp(line, "profiled", 8) == 0) {
			printf("profiled %d %d\n", profiled, profiled_other);
		} else if (sscanf(line, "dur %i", &v) == 1) {
			((void (*)(long long))dlsym(h, "fakecuda_kernel_us"))(v);
			printf("ok\n");
		} else if (sscanf(line, "burst %i", &v) == 1) {
			CUresult (*f)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				      unsigned, CUstream, void **, void **) = proc("cuLaunchKernel", 0);
			unsigned fn = 0;
			sscanf(line, "burst %*i %u", &fn);
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			for (int i = 0; i < v; i++)
				f((CUfunction)(uintptr_t)fn, fn ? 100 : 1, 1, 1, 32, 1, 1, 0, 0, NULL, NULL);
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("burst %.3f\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
		} else if (sscanf(line, "threads %i", &v) == 1) {
			printf("threads %.3f\n", threads(v));
		} else if (sscanf(line, "storm %i", &v) == 1) {
			printf("bare %d\n", storm(v));
		} else if (strncmp(line, "quiet", 5) == 0) {
			printf("rc %d\n", tools ? ((int (*)(uint32_t, uint32_t, int, uintptr_t))tools[7])(0, profiler_handle, 0xb, 0) : -1);
		} else if (strncmp(line, "unprofile", 9) == 0) {
			printf("rc %d\n", tools ? ((int (*)(uint32_t))tools[4])(profiler_handle) : -1);
		} else if (strncmp(line, "injected", 8) == 0) {
			printf("injected %d\n", ((int (*)(void))dlsym(h, "fakecuda_injected"))());
		} else if (sscanf(line, "ctx %i", &v) == 1) {
			CUresult (*f)(CUcontext) = proc("cuCtxSetCurrent", 0);
			printf("rc %d\n", f((CUcontext)(uintptr_t)(0xc0 + v)));
		} else if (sscanf(line, "ctxnew %i", &v) == 1) {
			CUresult (*f)(CUcontext *, unsigned, CUdevice) = proc("cuCtxCreate", 0);
			CUcontext c = NULL;
			CUresult r = f(&c, 0, v);
			if (r != 0)
				printf("rc %d\n", r);
			else
				printf("ctx %d\n", (int)((uintptr_t)c - 0xc0));
		} else if (strncmp(line, "ctxdel", 6) == 0) {
			CUresult (*get)(CUcontext *) = proc("cuCtxGetCurrent", 0);
			CUresult (*f)(CUcontext) = proc("cuCtxDestroy", 0);
			CUcontext c = NULL;
			get(&c);
			printf("rc %d\n", f(c));
		} else if (sscanf(line, "evnew %i", &v) == 1) {
			CUevent e = NULL;
			int r = ((int (*)(CUevent *, unsigned))proc("cuEventCreate", 0))(&e, (unsigned)v);
			if (r != 0 || nevents == EVENTS_MAX)
				printf("rc %d\n", r ? r : 1);
			else
				printf("ev %d\n", nevents), events[nevents++] = e;
		} else if (sscanf(line, "evrecord %i %15s", &v, flavour) >= 1) {
			int r = 1;
			if (v >= 0 && v < nevents && strcmp(flavour, "flags") == 0)
				r = ((int (*)(CUevent, CUstream, unsigned))proc("cuEventRecordWithFlags", 0))(events[v], 0, 0);
			else if (v >= 0 && v < nevents)
				r = ((int (*)(CUevent, CUstream))proc("cuEventRecord", strcmp(flavour, "ptds") == 0))(events[v], 0);
			printf("rc %d\n", r);
		} else if (sscanf(line, "evdel %i", &v) == 1) {
			int r = v >= 0 && v < nevents ? ((int (*)(CUevent))proc("cuEventDestroy", 0))(events[v]) : 1;
			printf("rc %d\n", r);
		} else if (strncmp(line, "incb", 4) == 0) {
			printf("incb %d\n", ((int (*)(void))dlsym(h, "fakecuda_called_in_callback"))());
		} else if (strncmp(line, "lookups", 7) == 0) {
			printf("lookups %d\n", ((int (*)(void))dlsym(h, "fakecuda_uuid_lookups"))());
		} else if (strncmp(line, "spawn ", 6) == 0) {
			line[strcspn(line, "\n")] = 0;
			spawn(line + 6);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		} else if (memory(line)) {
		} else {
			printf("error unknown command\n");
		}
	}
	return 0;
}
