/*
 * tools.c: the fake driver's launch-tools export table (subscribe, enable),
 * with one subscriber at a time as the real driver allows, that a launch
 * calls back (launch.c); cuGetExportTable (FAKECUDA_NO_TABLE,
 * FAKECUDA_NEED_INIT); and cuInit, which loads a profiler's injection
 * where FAKECUDA_INJECT says (fakecuda_injected).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

static const unsigned char tools_uuid[16] = {
	0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
	0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b,
};

launch_cb cb;
void *cb_user;
int enabled[16][64];
static int initialized;

/* --- the launch-tools table ---------------------------------------------- */

static int fake_subscribe(uint32_t *handle, launch_cb f, void *user)
{
	pthread_mutex_lock(&mu);
	if (cb) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_ALREADY_ACQUIRED;
	}
	cb = f;
	cb_user = user;
	*handle = 7;
	pthread_mutex_unlock(&mu);
	return 0;
}

static int fake_unsubscribe(uint32_t handle)
{
	if (handle != 7)
		return 1;
	pthread_mutex_lock(&mu);
	__atomic_store_n(&cb, NULL, __ATOMIC_RELEASE);
	memset(enabled, 0, sizeof enabled);
	pthread_mutex_unlock(&mu);
	return 0;
}

static int fake_subscribe_ex(uint32_t *handle, launch_cb f, void *user, void *more)
{
	(void)more;
	return fake_subscribe(handle, f, user);
}

static int fake_enable(uint32_t on, uint32_t handle, int domain, int cbid)
{
	if (handle != 7 || domain < 0 || domain >= 16 || cbid < 0 || cbid >= 64)
		return 1;
	enabled[domain][cbid] = on != 0;
	return 0;
}

static int fake_enable_domain(uint32_t on, uint32_t handle, int domain)
{
	if (handle != 7 || domain < 0 || domain >= 16)
		return 1;
	for (int i = 0; i < 64; i++)
		enabled[domain][i] = on != 0;
	return 0;
}

/* entry 7, as Nsight Compute calls it: a domain on or off */
static int fake_enable_domain_ex(uint32_t on, uint32_t handle, int domain, uintptr_t more)
{
	(void)more;
	return fake_enable_domain(on, handle, domain);
}

static uintptr_t table[12] = {sizeof table};

/* the injection's callback: counts launches */
static int injected;
static void inject_cb(void *user, int domain, int cbid, const void *params)
{
	(void)user, (void)params;
	if (domain == 0xb && cbid == 1)
		__atomic_add_fetch(&injected, 1, __ATOMIC_RELAXED);
}

int fakecuda_injected(void)
{
	return __atomic_load_n(&injected, __ATOMIC_RELAXED);
}

static int get_table(const void **out, const void *uuid);

static void inject(int how)
{
	int (*get)(const void **, const void *) = get_table; /* the driver's own, not interposable */
	if (how == 1)
		get = (int (*)(const void **, const void *))dlsym(RTLD_DEFAULT, "cuGetExportTable");
	const uintptr_t *t;
	uint32_t h;
	if (get((const void **)&t, tools_uuid) == 0 &&
	    ((int (*)(uint32_t *, launch_cb, void *, void *))t[11])(&h, inject_cb, NULL, NULL) == 0)
		((int (*)(uint32_t, uint32_t, int, int))t[6])(1, h, 0xb, 1);
}

int cuInit(unsigned int flags)
{
	(void)flags;
	if (!initialized) {
		initialized = 1;
		const char *e = getenv("FAKECUDA_INJECT");
		if (e && (*e == '1' || *e == '2'))
			inject(*e - '0');
	}
	return 0;
}

int cuGetExportTable(const void **out, const void *uuid)
{
	return get_table(out, uuid);
}

static int get_table(const void **out, const void *uuid)
{
	const char *e = getenv("FAKECUDA_NO_TABLE");
	if (e && *e == '1')
		return CUDA_ERROR_NOT_FOUND;
	e = getenv("FAKECUDA_NEED_INIT");
	if (e && *e == '1' && !initialized)
		return 3; /* CUDA_ERROR_NOT_INITIALIZED */
	if (memcmp(uuid, tools_uuid, sizeof tools_uuid) != 0)
		return 1;
	table[3] = (uintptr_t)fake_subscribe;
	table[4] = (uintptr_t)fake_unsubscribe;
	table[6] = (uintptr_t)fake_enable;
	table[7] = (uintptr_t)fake_enable_domain_ex;
	table[9] = (uintptr_t)fake_enable_domain;
	table[10] = (uintptr_t)fake_enable; /* an entry the shim passes through, as profilers use some */
	table[11] = (uintptr_t)fake_subscribe_ex;
	*out = table;
	return 0;
}
