/*
 * libcarve.so: confines every kernel of an unmodified CUDA process to the TPCs
 * of its partition.
 *
 * Loaded with LD_PRELOAD by `carve run`. At load it maps the process's control
 * block (CARVE_CTL_DIR/<pid>, created by carve run, or copied from the parent's
 * block for child processes), loads libcuda, and registers a callback with the
 * driver's launch-tools interface. The driver calls it just before each launch
 * descriptor (TMD) is uploaded; the callback writes the partition's TPC-disable
 * mask into the descriptor, and the hardware schedules the kernel's blocks only
 * on the enabled TPCs. It also counts the process's device memory into its
 * tenant's account and holds it to the tenant's limit (mem.c).
 *
 * Environment:
 *   CARVE_CTL_DIR              runtime directory holding the control blocks
 *   CARVE_CTL_ROOT             block to copy when neither ours nor the parent's exists
 *   CARVE_LIBCUDA              driver library to load (default libcuda.so.1)
 *   CARVE_ALLOW_UNPARTITIONED  1: run on all TPCs when the hook cannot work
 *   CARVE_DEBUG                1: say what the shim does on stderr
 *   CARVE_TRACE_TOOLS          1: log other libraries' calls into the launch-tools table
 *   CARVE_TRACE_PROCS          1: log each lookup of a call that takes, frees or reports device
 *                              memory, with its version and flags, and what the shim does with it
 *
 * Builds with a plain C compiler; needs no CUDA headers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "shim.h"

/* The control block's version, exported (the library's one visible variable;
 * its visible functions are the driver's and libc's it wraps, and NVTX's
 * entry point, nvtx.c) so that carve can tell its own library from any other
 * file before it preloads one (internal/preload's Verify). */
__attribute__((visibility("default"))) const unsigned carve_abi_version = CARVE_CTL_VERSION;

static int env_is_1(const char *name)
{
	const char *e = getenv(name);
	return e && *e == '1';
}

__attribute__((constructor)) static void carve_init(void)
{
	carve_debug = env_is_1("CARVE_DEBUG");
	carve_trace_tools = env_is_1("CARVE_TRACE_TOOLS");
	const char *dir = getenv("CARVE_CTL_DIR");
	if (!dir || !*dir)
		return; /* loaded without carve run: nothing to enforce */
	carve_block = carve_attach(dir);
	if (!carve_block) {
		carve_allow_unpartitioned = env_is_1("CARVE_ALLOW_UNPARTITIONED");
		if (!carve_allow_unpartitioned)
			carve_refuse("no control block for this process");
		return;
	}
	carve_allow_unpartitioned = (carve_block->flags & CARVE_FLAG_ALLOW_UNPARTITIONED) ||
				    env_is_1("CARVE_ALLOW_UNPARTITIONED");
	carve_nvtx_init();
	const char *lib = getenv("CARVE_LIBCUDA");
	void *cuda = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!cuda) {
		/* without a driver this process can launch no kernel at all */
		CARVE_DEBUG("no driver: %s", dlerror());
		__atomic_store_n(&carve_block->state, CARVE_STATE_NO_DRIVER, __ATOMIC_RELAXED);
		return;
	}
	carve_mem_init(cuda, dir);
	const char *why = carve_register_hook(cuda);
	if (why) {
		__atomic_store_n(&carve_block->state, CARVE_STATE_UNHOOKED, __ATOMIC_RELAXED);
		if (!carve_allow_unpartitioned)
			carve_refuse(why);
		carve_say("%s; running on all TPCs", why);
		return;
	}
	__atomic_store_n(&carve_block->state, CARVE_STATE_HOOKED, __ATOMIC_RELAXED);
	carve_kern_init(cuda, dir);
	carve_tide_init(cuda, dir);
	carve_bw_init(cuda, dir);
	carve_slice_init(cuda);
	carve_graph_init(cuda);
}
