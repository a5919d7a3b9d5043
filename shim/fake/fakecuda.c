/*
 * A fake libcuda.so.1 for testing libcarve.so without a GPU. It offers the
 * launch-tools export table the shim subscribes through, and a test entry
 * point, fakecuda_launch, that builds a synthetic launch descriptor of a
 * given version, calls the registered callback the way the driver does, and
 * hands back what the callback left in the descriptor.
 *
 * FAKECUDA_NO_TABLE=1 makes cuGetExportTable fail (a driver without the
 * interface); FAKECUDA_NEED_INIT=1 makes it fail until cuInit was called.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../carve_tmd.h"

typedef void (*launch_cb)(void *user, int domain, int cbid, const void *params);

static const unsigned char tools_uuid[16] = {
	0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
	0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b,
};

static launch_cb cb;
static void *cb_user;
static int enabled_domain = -1, enabled_cbid = -1;
static int initialized;

static int fake_subscribe(uint32_t *handle, launch_cb f, void *user)
{
	cb = f;
	cb_user = user;
	*handle = 7;
	return 0;
}

static int fake_enable(uint32_t on, uint32_t handle, int domain, int cbid)
{
	if (handle != 7)
		return 1;
	if (on) {
		enabled_domain = domain;
		enabled_cbid = cbid;
	}
	return 0;
}

static uintptr_t table[8];

int cuInit(unsigned int flags)
{
	(void)flags;
	initialized = 1;
	return 0;
}

int cuGetExportTable(const void **out, const void *uuid)
{
	const char *e = getenv("FAKECUDA_NO_TABLE");
	if (e && *e == '1')
		return 500; /* CUDA_ERROR_NOT_FOUND */
	e = getenv("FAKECUDA_NEED_INIT");
	if (e && *e == '1' && !initialized)
		return 3; /* CUDA_ERROR_NOT_INITIALIZED */
	if (memcmp(uuid, tools_uuid, sizeof tools_uuid) != 0)
		return 1;
	table[3] = (uintptr_t)fake_subscribe;
	table[6] = (uintptr_t)fake_enable;
	*out = table;
	return 0;
}

/* fakecuda_launch runs one fake launch with a descriptor of the given
 * version. out[0..3] receive the four Hopper mask words (or the two Volta
 * words in out[0..1]), out[4] the enable bit. Returns 1 if the callback ran. */
int fakecuda_launch(int version, uint32_t out[5])
{
	uint8_t tmd[512];
	memset(tmd, 0, sizeof tmd);
	tmd[CARVE_TMD_VERSION_OFFSET] = (uint8_t)version;
	struct {
		uint32_t size;
		uint8_t pad[CARVE_PARAMS_TMD_OFFSET - 4];
		void *tmd;
		uint64_t more;
	} params = {.size = sizeof params, .tmd = tmd};
	memset(out, 0, 5 * sizeof *out);
	int called = 0;
	if (cb && enabled_domain == 0xb && enabled_cbid == 1) {
		cb(cb_user, 0xb, 1, &params);
		called = 1;
	}
	if (version >= CARVE_TMD_V_HOPPER) {
		memcpy(out, tmd + CARVE_TMD_HOPPER_MASK_OFFSET, 16);
	} else {
		memcpy(out, tmd + CARVE_TMD_VOLTA_MASK_OFFSET, 8);
	}
	uint32_t w0;
	memcpy(&w0, tmd + CARVE_TMD_HOPPER_ENABLE_OFFSET, 4);
	out[4] = w0 >> CARVE_TMD_HOPPER_ENABLE_BIT;
	return called;
}
