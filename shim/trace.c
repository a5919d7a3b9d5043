/*
 * trace.c: CARVE_TRACE_PROCS=1's log of the program's lookups of driver
 * calls (interpose.c's dlsym and cuGetProcAddress): each lookup of a call
 * that takes, frees or reports device memory, or of one near them, and
 * what the shim made of it: wrapped (and by which flavour), refused, or
 * passed through, and why.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

static int trace_procs = -1;

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* traced: the calls that take, free or report device memory, and those
 * near them. */
static int traced(const char *name)
{
	static const char *const prefixes[] = {"cuMem", "cuArray", "cuMipmappedArray", "cuDeviceGraphMem", "cuIpc",
					       "cuCtxSetLimit", "cuDeviceTotalMem", "cuDeviceSetMemPool",
					       "cuDeviceGetMemPool", "cuDeviceGetDefaultMemPool", "cuGraphInstantiate",
					       "cuGraphUpload", "cuGraphExec", "cuGraphLaunch",
					       "cuGraphNodeSetEnabled"};
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (starts(name, prefixes[i]))
			return 1;
	return starts(name, "cuGraph") && strstr(name, "Mem");
}

/* passed: why the shim leaves a traced call to the driver. */
static const char *passed(const char *name)
{
	if (starts(name, "cuIpc") || strstr(name, "Import") || strstr(name, "Export"))
		return "memory shared between processes is counted in the process that allocated it";
	if (starts(name, "cuMemHost") || starts(name, "cuMemAllocHost") || starts(name, "cuMemFreeHost"))
		return "host memory";
	if (starts(name, "cuMemAddress"))
		return "address space, no memory";
	if (starts(name, "cuMemMapArray"))
		return "maps memory counted at cuMemCreate";
	if (starts(name, "cuGraphAddMemFreeNode"))
		return "graph memory is read after launches";
	return "takes and frees no device memory";
}

void carve_trace_proc(const char *name, int version, uint64_t flags, const char *wrapper, int refuse, int found)
{
	if (trace_procs < 0) {
		const char *e = getenv("CARVE_TRACE_PROCS");
		trace_procs = e && *e == '1';
	}
	if (!trace_procs || !name || !traced(name))
		return;
	char what[160];
	if (!found)
		snprintf(what, sizeof what, "the driver has none");
	else if (wrapper && refuse && carve_block)
		snprintf(what, sizeof what, "refused: %s, not counted, fails with CUDA_ERROR_NOT_SUPPORTED", wrapper);
	else if (wrapper)
		snprintf(what, sizeof what, "wrapped: %s", wrapper);
	else
		snprintf(what, sizeof what, "passed through: %s", passed(name));
	if (version < 0)
		carve_say("proc %s (dlsym): %s", name, what);
	else
		carve_say("proc %s version %d flags %#llx (cuGetProcAddress): %s", name, version,
			  (unsigned long long)flags, what);
}
