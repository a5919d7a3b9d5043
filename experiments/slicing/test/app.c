/*
 * app.c: a program for slicer.so on fakedrv.c (test/run.sh): it finds the
 * driver's launches as frameworks do (dlopen, dlsym, cuGetProcAddress),
 * launches six functions, and checks through the fake that every block of
 * every launch ran exactly once, and how many launches the driver got.
 * Prints "N passed, N failed"; exits 1 on a failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../shim/cuda_api.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef int (*proc_fn)(const char *, void **, int, uint64_t, int *);

static int passed, failed;

static void check(int ok, const char *what, unsigned fn, unsigned got, unsigned want)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL: function %u: %s: %u, want %u\n", fn, what, got, want);
}

int main(void)
{
	unsigned k = getenv("SLICE_PIECES") ? (unsigned)atoi(getenv("SLICE_PIECES")) : 2;
	if (getenv("SLICE_DRY") && atoi(getenv("SLICE_DRY")) == 1)
		k = 1; /* a dry run launches everything whole */
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) {
		printf("no fake driver: %s\n", dlerror());
		return 2;
	}
	proc_fn proc = (proc_fn)dlsym(h, "cuGetProcAddress_v2");
	launch_fn launch = NULL;
	launch_ex_fn launch_ex = NULL;
	if (proc("cuGetProcAddress", (void **)&proc, 12000, 0, NULL) ||
	    proc("cuLaunchKernel", (void **)&launch, 12000, 0, NULL) ||
	    proc("cuLaunchKernelEx", (void **)&launch_ex, 12000, 0, NULL)) {
		printf("cuGetProcAddress failed\n");
		return 2;
	}
	launch_fn direct = (launch_fn)dlsym(h, "cuLaunchKernel");
	unsigned (*runs)(unsigned, unsigned) = (unsigned (*)(unsigned, unsigned))dlsym(h, "fake_runs");
	unsigned (*launches)(unsigned) = (unsigned (*)(unsigned))dlsym(h, "fake_launches");
	unsigned (*bad)(void) = (unsigned (*)(void))dlsym(h, "fake_bad");

	/* function, grid, launches, through Ex (2: with a cluster attribute),
	 * sliced after the first launch */
	struct {
		unsigned fn, grid, n, ex, sliced;
	} t[] = {
		{1, 100, 10, 0, 1}, {2, 3, 10, 0, k <= 3}, {3, 64, 5, 2, 0}, {4, 257, 5, 1, 1}, {5, 80, 4, 0, 0},
		{6, 80, 4, 0, 0},   {7, 1000, 3, 0, 1}, {8, 90, 6, 0, 1},
	};
	int arg = 0;
	void *args[] = {&arg};
	for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
		for (unsigned n = 0; n < t[i].n; n++) {
			CUfunction f = (CUfunction)(uintptr_t)t[i].fn;
			uint8_t attr[72] = {0};
			unsigned dims[3] = {2, 1, 1};
			int id = 4;
			memcpy(attr, &id, 4);
			memcpy(attr + 8, dims, sizeof dims);
			CUlaunchConfig c = {t[i].grid, 1, 1, 128, 1, 1, 0, NULL, t[i].ex == 2 ? attr : NULL, t[i].ex == 2};
			/* function 8 alternates between two streams: a copy made on
			 * one is waited for through its event on the other */
			CUstream s = t[i].fn == 8 ? (CUstream)(uintptr_t)(0x10 + 0x10 * (n % 2)) : NULL;
			CUresult r = t[i].ex ? launch_ex(&c, f, args, NULL)
					     : (n % 2 ? direct : launch)(f, t[i].grid, 1, 1, 128, 1, 1, 0, s, args, NULL);
			check(r == CUDA_SUCCESS, "launch result", t[i].fn, (unsigned)r, 0);
		}
		unsigned wrong = 0;
		for (unsigned b = 0; b < t[i].grid; b++)
			wrong += runs(t[i].fn, b) != t[i].n;
		check(!wrong, "blocks not run exactly once per launch", t[i].fn, wrong, 0);
		unsigned want = t[i].sliced ? 1 + (t[i].n - 1) * k : t[i].n;
		check(launches(t[i].fn) == want, "driver launches", t[i].fn, launches(t[i].fn), want);
	}
	check(bad() == 0, "copies or descriptors the fake found wrong", 0, bad(), 0);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
