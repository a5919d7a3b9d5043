/*
 * launch.c: the driver program's launches: by the fake's test entry point,
 * by each of the driver's launch calls and by its exported name, of the
 * fake's test functions (kernels with blocks, for slicing) on a stream or
 * into a capture, from 4 threads at once; and what the fake says of them.
 * Its commands:
 *
 *   launch VERSION     a launch through the fake's test entry point
 *                      -> "mask W0 W1 W2 W3 EN CALLED"
 *   klaunch ENTRY [ptds]
 *                      a launch through cuLaunchKernel, cuLaunchKernelEx,
 *                      cuLaunchCooperativeKernel or cuGraphLaunch (ENTRY: kernel,
 *                      ex, coop, graph: a graph of one kernel node, made
 *                      and instantiated first; exnull: cuLaunchKernelEx with a NULL
 *                      config), looked up for the per-thread default
 *                      stream with ptds -> "mask ..." as above, or "rc N"
 *   fmask FN           one launch of the fake's test function FN (1 block)
 *                      through cuLaunchKernel -> "mask ..." as above, or "rc N"
 *   direct             cuLaunchKernel called by its exported name, as a
 *                      program linked against libcuda does -> "mask ..."
 *   threads N          4 threads launch N kernels each -> "threads MS"
 *   dur US             later kernels take US microseconds on the fake GPU
 *   burst N [FN]       N launches through cuLaunchKernel (of the fake's
 *                      test function FN, 100 blocks) -> "burst MS": how
 *                      long the launch calls took, all told
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
 *   capwin US          launch into a new stream, then capture it in global
 *                      mode with the fake's begin held US microseconds on
 *                      the clock once the stream is capturing (a query
 *                      then spoils the capture) -> "rc N": the first
 *                      result of the begin, the launch into the capture
 *                      and its end that was not 0, else 0
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
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"

static void print_mask(void)
{
	int (*last)(uint32_t *) = (int (*)(uint32_t *))dlsym(h, "fakecuda_last");
	uint32_t out[5];
	int called = last(out);
	printf("mask %08x %08x %08x %08x %u %d\n", out[0], out[1], out[2], out[3], out[4], called);
}

volatile int storming;
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
		clock_park();
	return NULL;
}

/* start_launchers starts the 4 launchers of n kernels each, counted as
 * running on a virtual clock. */
void start_launchers(pthread_t t[4], int *n)
{
	storming = 4;
	for (int i = 0; i < 4; i++) {
		clock_wake();
		pthread_create(&t[i], NULL, launcher, n);
	}
}

void join_launchers(pthread_t t[4])
{
	clock_park(); /* the last launcher's count comes back */
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

/* capwin launches into a new stream, then captures one launch of it in
 * global mode, the fake's begin held us microseconds on the clock once
 * the stream is capturing: the first result that was not 0, else 0 */
static CUresult capwin(int us)
{
	CUresult (*k)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
		      void **, void **) = proc("cuLaunchKernel", 0);
	CUstream s = NULL;
	CUgraph g = NULL;
	CUresult r = ((CUresult(*)(CUstream *, unsigned))proc("cuStreamCreate", 0))(&s, CU_STREAM_NON_BLOCKING);
	if (!r)
		r = k(0, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
	if (r)
		return r;
	((void (*)(uint64_t))dlsym(h, "fakecuda_begin_capture_wait"))((uint64_t)us * 1000);
	r = ((CUresult(*)(CUstream, int))proc("cuStreamBeginCapture", 0))(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
	if (r)
		return r;
	r = k(0, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
	CUresult e = ((CUresult(*)(CUstream, CUgraph *))proc("cuStreamEndCapture", 0))(s, &g);
	((CUresult(*)(CUstream))proc("cuStreamDestroy", 0))(s);
	return r ? r : e;
}

/* launch_command answers the commands of this file; 0 if line is none of
 * them. */
int launch_command(char *line)
{
	int v;
	char entry[16] = "", flavour[16] = "";
	if (sscanf(line, "launch %i", &v) == 1) {
		uint32_t out[5];
		int called = fake_launch(v, out);
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
			r = one_kernel_graph(ptds);
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
	} else if (strncmp(line, "capwin ", 7) == 0) {
		printf("rc %d\n", capwin(atoi(line + 7)));
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
	} else if (sscanf(line, "fmask %i", &v) == 1) {
		CUresult (*f)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, CUstream, void **, void **) = proc("cuLaunchKernel", 0);
		CUresult r = f((CUfunction)(uintptr_t)v, 1, 1, 1, 32, 1, 1, 0, 0, NULL, NULL);
		if (r != 0)
			printf("rc %d\n", r);
		else
			print_mask();
	} else if (strncmp(line, "direct", 6) == 0) {
		CUresult (*f)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, CUstream, void **, void **) = dlsym(RTLD_DEFAULT, "cuLaunchKernel");
		CUresult r = f(0, 1, 1, 1, 32, 1, 1, 0, 0, NULL, NULL);
		if (r != 0)
			printf("rc %d\n", r);
		else
			print_mask();
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
	} else {
		return 0;
	}
	return 1;
}
