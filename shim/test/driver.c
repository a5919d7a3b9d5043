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
 *                      ex, coop, graph), looked up for the per-thread default
 *                      stream with ptds -> "mask ..." as above, or "rc N"
 *   direct             cuLaunchKernel called by its exported name, as a
 *                      program linked against libcuda does -> "mask ..."
 *   sms                cuDeviceGetAttribute(multiprocessor count) -> "sms N"
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
 *   burst N            N launches through cuLaunchKernel -> "burst MS": how
 *                      long the launch calls took, all told
 *   ctx N              make context N current (cuCtxSetCurrent): 0 and 1 are
 *                      the fake's primary contexts of its two GPUs -> "rc N"
 *   ctxnew DEV         cuCtxCreate on device DEV, made current -> "ctx N"
 *   ctxdel             cuCtxDestroy of the current context -> "rc N"
 *   lookups            -> "lookups N": device UUIDs the fake was asked for
 *   spawn CMD[;CMD...] run this program again as a child process (fork and
 *                      exec: the shim loads in it as in any child of a
 *                      partitioned program), with the commands on its stdin
 *                      -> "child PID STATUS OUT": its exit status and what it
 *                      printed, lines joined by '|'
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cuda_api.h"
#include "vclock.h"

typedef CUresult (*get_proc_fn)(const char *, void **, int, uint64_t, void *);
static get_proc_fn get_proc;
static void *h;

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
static void *launcher(void *arg)
{
	int n = *(int *)arg;
	CUresult (*f)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
		      unsigned, CUstream, void **, void **) = proc("cuLaunchKernel", 0);
	for (int i = 0; i < n; i++)
		f(0, 1, 1, 1, 32, 1, 1, 0, 0, NULL, NULL);
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

/* spawn runs this program as a child with cmds (separated by ';') on its
 * stdin, and says what became of it. */
static void spawn(const char *cmds)
{
	int in[2], out[2];
	if (pipe(in) != 0 || pipe(out) != 0) {
		printf("error pipe\n");
		return;
	}
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
	char line[128];
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
			int n = 0;
			CUresult r = f(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
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
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			for (int i = 0; i < v; i++)
				f(0, 1, 1, 1, 32, 1, 1, 0, 0, NULL, NULL);
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
		} else if (strncmp(line, "lookups", 7) == 0) {
			printf("lookups %d\n", ((int (*)(void))dlsym(h, "fakecuda_uuid_lookups"))());
		} else if (strncmp(line, "spawn ", 6) == 0) {
			line[strcspn(line, "\n")] = 0;
			spawn(line + 6);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		} else {
			printf("error unknown command\n");
		}
	}
	return 0;
}
