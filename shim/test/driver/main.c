/*
 * The driver program: a stand-in for an unmodified CUDA program, run under
 * LD_PRELOAD=libcarve.so with CARVE_LIBCUDA pointing at the fake driver
 * (shim/fake). It reaches the driver the way the CUDA runtime does: dlopen,
 * dlsym of cuGetProcAddress_v2, then everything else through it (the lookup
 * function first through itself). It reads commands on stdin and prints
 * one line for each; each file holds its commands and lists them at its
 * top:
 *
 *   launch.c     launches by every entry point, the fake's test functions
 *                (kernels with blocks, for slicing), launches from threads
 *   profiler.c   a profiler's subscription to the launch callback
 *   contexts.c   devices, contexts, events, synchronization
 *   memory.c     device memory, by each path a framework takes
 *   children.c   this program run again as a child process
 *   graphs.c     graphs of kernel nodes, made, changed and launched
 *   nvtx.c       NVTX ranges, through the tool NVTX_INJECTION64_PATH names
 *
 * and this one's:
 *
 *   next               does dlsym(RTLD_NEXT, "dlsym") from here find the
 *                      next library's dlsym? -> "next same|different"
 *   quit
 *
 * It prints "ready" once loaded. With CARVE_TEST_CLOCK (a test's virtual
 * clock, ../vclock.h) it takes part in the clock's count of running
 * threads: it claims its process's slot before "ready", and the threads it
 * starts count as running until they end. This is the one file that reads
 * vclock.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../vclock.h"
#include "driver.h"

get_proc_fn get_proc;
void *h;
int (*fake_launch)(int, uint32_t *);

void *proc(const char *name, int ptds)
{
	void *f = NULL;
	if (get_proc(name, &f, 12080, ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, NULL) != 0)
		return NULL;
	return f;
}

void *procv(const char *name, int version, int ptds)
{
	void *f = NULL;
	if (get_proc(name, &f, version, ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, NULL) != 0)
		return NULL;
	return f;
}

void clock_wake(void)
{
	vclock_wake(vclock());
}

void clock_park(void)
{
	vclock_park(vclock());
}

int main(void)
{
	const char *lib = getenv("CARVE_LIBCUDA");
	h = dlopen(lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		printf("error %s\n", dlerror());
		return 2;
	}
	fake_launch = (int (*)(int, uint32_t *))dlsym(h, "fakecuda_launch");
	get_proc_fn first = (get_proc_fn)dlsym(h, "cuGetProcAddress_v2");
	if (!fake_launch || !first) {
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
		if (strncmp(line, "quit", 4) == 0) {
			break;
		} else if (strncmp(line, "next", 4) == 0) {
			void *next = dlsym(RTLD_NEXT, "dlsym");
			printf("next %s\n", next == (void *)dlsym ? "same" : "different");
		} else if (launch_command(line) || profiler_command(line) || context_command(line) ||
			   memory_command(line) || child_command(line) || graph_command(line) || nvtx_command(line)) {
		} else {
			printf("error unknown command\n");
		}
	}
	return 0;
}
