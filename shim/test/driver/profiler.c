/*
 * profiler.c: the driver program as a profiler: it subscribes to the
 * fake's launch callback the way CUPTI and Nsight Compute do, through the
 * launch-tools table, and counts what it is called for. Its commands:
 *
 *   profiler           subscribe the way CUPTI does (entry 11), to launches,
 *                      to the whole of another domain, and to one more
 *                      callback through entry 10 -> "rc N"
 *   profiled           -> "profiled L S": launches and other-domain
 *                      callbacks the profiler saw
 *   quiet              the profiler turns the launch domain off the way
 *                      Nsight Compute does (entry 7) -> "rc N"
 *   unprofile          the profiler unsubscribes (entry 4) -> "rc N"
 *   storm N            4 threads launch N kernels each while the profiler
 *                      subscribes and unsubscribes -> "bare B": launches
 *                      that went out while no callback was subscribed
 *   injected           -> "injected N": launches an injection loaded at
 *                      cuInit saw (FAKECUDA_INJECT)
 *   incb               -> "incb N": driver calls made from inside launch
 *                      callbacks
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

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

/* profiler_command answers the commands of this file; 0 if line is none
 * of them. */
int profiler_command(char *line)
{
	int v;
	if (strncmp(line, "profiler", 8) == 0) {
		printf("rc %d\n", profile());
	} else if (strncmp(line, "profiled", 8) == 0) {
		printf("profiled %d %d\n", profiled, profiled_other);
	} else if (sscanf(line, "storm %i", &v) == 1) {
		printf("bare %d\n", storm(v));
	} else if (strncmp(line, "quiet", 5) == 0) {
		printf("rc %d\n", tools ? ((int (*)(uint32_t, uint32_t, int, uintptr_t))tools[7])(0, profiler_handle, 0xb, 0) : -1);
	} else if (strncmp(line, "unprofile", 9) == 0) {
		printf("rc %d\n", tools ? ((int (*)(uint32_t))tools[4])(profiler_handle) : -1);
	} else if (strncmp(line, "injected", 8) == 0) {
		printf("injected %d\n", ((int (*)(void))dlsym(h, "fakecuda_injected"))());
	} else if (strncmp(line, "incb", 4) == 0) {
		printf("incb %d\n", ((int (*)(void))dlsym(h, "fakecuda_called_in_callback"))());
	} else {
		return 0;
	}
	return 1;
}
