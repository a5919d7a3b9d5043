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
 * on the enabled TPCs.
 *
 * Environment:
 *   CARVE_CTL_DIR              runtime directory holding the control blocks
 *   CARVE_CTL_ROOT             block to copy when neither ours nor the parent's exists
 *   CARVE_LIBCUDA              driver library to load (default libcuda.so.1)
 *   CARVE_ALLOW_UNPARTITIONED  1: run on all TPCs when the hook cannot work
 *   CARVE_DEBUG                1: say what the shim does on stderr
 *   CARVE_TRACE_TOOLS          1: log other libraries' calls into the launch-tools table
 *
 * Builds with a plain C compiler; needs no CUDA headers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

struct carve_ctl *carve_block;
int carve_debug;
int carve_allow_unpartitioned;
int carve_trace_tools;

void carve_say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n = snprintf(buf, sizeof buf, "carve[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof buf - n, fmt, ap);
	va_end(ap);
	size_t len = strlen(buf);
	if (len + 1 < sizeof buf) {
		buf[len++] = '\n';
	}
	ssize_t w = write(2, buf, len);
	(void)w;
}

void carve_refuse(const char *why)
{
	carve_say("%s; refusing to run unpartitioned (set CARVE_ALLOW_UNPARTITIONED=1 "
		  "or use carve run --allow-unpartitioned to run on all TPCs)", why);
	_exit(CARVE_EXIT_REFUSED);
}

uint64_t carve_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
	const char *lib = getenv("CARVE_LIBCUDA");
	void *cuda = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!cuda) {
		/* without a driver this process can launch no kernel at all */
		CARVE_DEBUG("no driver: %s", dlerror());
		__atomic_store_n(&carve_block->state, CARVE_STATE_NO_DRIVER, __ATOMIC_RELAXED);
		return;
	}
	const char *why = carve_register_hook(cuda);
	if (why) {
		__atomic_store_n(&carve_block->state, CARVE_STATE_UNHOOKED, __ATOMIC_RELAXED);
		if (!carve_allow_unpartitioned)
			carve_refuse(why);
		carve_say("%s; running on all TPCs", why);
		return;
	}
	__atomic_store_n(&carve_block->state, CARVE_STATE_HOOKED, __ATOMIC_RELAXED);
	carve_tide_init(cuda, dir);
}
