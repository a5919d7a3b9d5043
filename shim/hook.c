/*
 * hook.c: the driver's launch callback. The driver calls it just before each
 * kernel's launch descriptor (TMD) is uploaded; it writes the partition's
 * TPC-disable mask into the descriptor (carve_tmd.h), and the hardware keeps
 * the kernel's blocks on the enabled TPCs. It costs one atomic load per
 * launch while the partition is unchanged, and where the block names its
 * GPU one cuCtxGetCurrent, made by the launch wrapper before the driver's
 * call, never in the callback, to write no mask into a launch on another
 * GPU (gpu.c). The check is here, not in the launch wrappers, because this is
 * where the mask is written: the callback also sees launches that never
 * pass a wrapper.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "carve_tmd.h"
#include "shim.h"

/* The driver's launch-callback interface (verified on driver 580, H100),
 * reached through the export table of carve_tools_uuid. */
#define LAUNCH_DOMAIN 0xb
#define LAUNCH_CBID 0x1

typedef int (*get_export_table_fn)(const void **table, const void *uuid);
typedef int (*cu_init_fn)(unsigned int flags);

/* elsewhere takes a launch on a GPU the block names no partition on: a
 * mask made for another GPU may leave only dead TPCs of this one, and such
 * a kernel never runs (HARDWARE.md 2). It is refused as an unknown
 * descriptor is, or, allowed unpartitioned, runs on all this GPU's TPCs
 * and is counted in the block, with this GPU's UUID, for carve ls. */
static void elsewhere(uint8_t *tmd, const unsigned char uuid[16])
{
	static int said;
	memcpy((void *)carve_block->other_gpu, uuid, 16);
	__atomic_add_fetch(&carve_block->other_launches, 1, __ATOMIC_RELAXED);
	if (!carve_allow_unpartitioned || !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
		char it[CARVE_GPU_NAME], part[CARVE_GPU_NAME], of[CARVE_GPU_NAME + 64];
		carve_gpu_name(uuid, it);
		carve_gpu_name((const unsigned char *)carve_block->gpu, part);
		int n = carve_gpus();
		if (n > 1)
			snprintf(of, sizeof of, "the partitions are of %s and %d more GPU%s", part, n - 1, n > 2 ? "s" : "");
		else
			snprintf(of, sizeof of, "the partition is of %s", part);
		if (!carve_allow_unpartitioned) {
			char why[256];
			snprintf(why, sizeof why, "a kernel was launched on %s, but %s", it, of);
			carve_refuse(why);
		}
		carve_say("kernels launched on %s run on all its TPCs: %s", it, of);
	}
	__atomic_store_n(&carve_block->tmd_version, (uint32_t)carve_tmd_version(tmd), __ATOMIC_RELAXED);
	__atomic_add_fetch(&carve_block->launches, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&carve_block->last_launch_ns, carve_now_ns(), __ATOMIC_RELAXED);
}

static void on_launch(void *user, int domain, int cbid, const void *params)
{
	(void)user;
	if (domain != LAUNCH_DOMAIN || cbid != LAUNCH_CBID || !params)
		return;
#ifdef CARVE_MEASURE_DISPATCH
	return; /* a build that measures what the driver's callback dispatch alone costs */
#endif
	uint8_t *tmd = carve_params_tmd(params);
	if (!tmd)
		return;
	unsigned char other[16];
	int gpu = carve_callback_gpu(params, other);
	if (gpu == CARVE_GPU_NONE) {
		elsewhere(tmd, other);
		return;
	}
	uint32_t mask[CARVE_MASK_WORDS];
	uint64_t gen = 0;
	int have = carve_current_mask(gpu, mask, &gen);
	if (have) {
		uint32_t live[CARVE_MASK_WORDS];
		for (int i = 0; i < CARVE_MASK_WORDS; i++)
			live[i] = __atomic_load_n(&CARVE_PART(carve_block, gpu, live)[i], __ATOMIC_RELAXED);
		carve_tide_mask(gpu, mask, live);
	}
	int version = carve_tmd_version(tmd);
	__atomic_store_n(&carve_block->tmd_version, (uint32_t)version, __ATOMIC_RELAXED);
	if (have) {
		if (!carve_tmd_write_mask(tmd, mask)) {
			if (!carve_allow_unpartitioned) {
				char why[96];
				snprintf(why, sizeof why, "launch descriptor version 0x%x is not supported", version);
				carve_refuse(why);
			}
		} else {
			__atomic_store_n(&carve_block->applied_gen, gen, __ATOMIC_RELAXED);
		}
	}
	carve_slice_edit(tmd); /* a piece of a launch slice.c cuts: its grid and code */
	__atomic_add_fetch(&carve_block->launches, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&carve_block->last_launch_ns, carve_now_ns(), __ATOMIC_RELAXED);
}

/* carve_register_hook subscribes on_launch to the driver's launch callbacks,
 * through the table it shares with profilers (tools.c). cuInit, where the
 * driver wants it first, may load a profiler's injection that subscribes
 * before the shim: the shared table lets both. */
const char *carve_register_hook(void *cuda)
{
	carve_gpu_init(cuda);
	get_export_table_fn get = (get_export_table_fn)carve_real_dlsym(cuda, "cuGetExportTable");
	if (!get)
		return "the driver has no cuGetExportTable";
	const void *table = NULL;
	int rc = get(&table, carve_tools_uuid);
	if (rc != 0 || !table) {
		/* some drivers want cuInit before handing out export tables */
		cu_init_fn init = (cu_init_fn)carve_real_dlsym(cuda, "cuInit");
		CARVE_DEBUG("cuGetExportTable before cuInit returned %d; calling cuInit", rc);
		if (!init || init(0) != 0)
			return "cuInit failed";
		rc = get(&table, carve_tools_uuid);
		if (rc != 0 || !table)
			return "the driver has no launch-tools export table";
	}
	if ((rc = carve_tools_subscribe(table, on_launch, LAUNCH_DOMAIN, LAUNCH_CBID)) != 0) {
		CARVE_DEBUG("subscribing returned %d", rc);
		return rc == CUDA_ERROR_ALREADY_ACQUIRED
			       ? "another tool holds the driver's launch callbacks (it subscribed without going through carve)"
			       : "subscribing to launch callbacks failed";
	}
	CARVE_DEBUG("launch hook registered");
	return NULL;
}

