/*
 * timing.c: an LS tenant timing its own work.
 *
 * Libraries that choose among kernels by timing them (cuDNN's benchmark
 * mode, which PyTorch's torch.backends.cudnn.benchmark turns on; Triton's
 * and cuBLASLt's autotuning) record events made for timing around each
 * candidate. With a BE tenant's kernels beside them they choose for a GPU
 * the LS does not have when it serves, and keep the choice: an LS started
 * beside a running BE served slower for good than one started first
 * (results/h100-580.159.04-2026-11-24/order/). So the shim of an LS tenant
 * keeps the events created for timing (without CU_EVENT_DISABLE_TIMING),
 * and a record of one stamps the tenant's LS file (tide.c), which holds
 * BE tenants back, with no share, for CARVE_NODE_TIMING_NS, busy or idle
 * (carve_node.h).
 *
 * The events are kept in an open-addressing set under a mutex, touched
 * only by LS tenants' event calls; an event the set has no room for counts
 * as not timing (said once).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>

#include "shim.h"

#define EVENTS 4096 /* a power of two */
#define GONE ((uintptr_t)1)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t set[EVENTS]; /* 0: never used, GONE: removed */
static unsigned used;          /* entries neither 0 nor GONE... */
static unsigned gone;          /* ...and GONE */

static unsigned home(uintptr_t e)
{
	return (unsigned)((e >> 4) * 0x9E3779B97F4A7C15ull >> 52) & (EVENTS - 1);
}

/* find returns e's index, or -1 (under mu). */
static int find(uintptr_t e)
{
	for (unsigned i = home(e), n = 0; n < EVENTS && set[i]; i = (i + 1) & (EVENTS - 1), n++)
		if (set[i] == e)
			return (int)i;
	return -1;
}

/* compact drops the removed entries (under mu). */
static void compact(void)
{
	static uintptr_t keep[EVENTS];
	unsigned n = 0;
	for (unsigned i = 0; i < EVENTS; i++)
		if (set[i] > GONE)
			keep[n++] = set[i];
	for (unsigned i = 0; i < EVENTS; i++)
		set[i] = 0;
	for (unsigned k = 0; k < n; k++) {
		unsigned i = home(keep[k]);
		while (set[i])
			i = (i + 1) & (EVENTS - 1);
		set[i] = keep[k];
	}
	gone = 0;
}

void carve_event_created(CUevent ev, unsigned flags)
{
	static int said;
	uintptr_t e = (uintptr_t)ev;
	if (!carve_tide_ls() || (flags & CU_EVENT_DISABLE_TIMING) || e <= GONE)
		return;
	pthread_mutex_lock(&mu);
	if (find(e) < 0) {
		if (used + gone >= EVENTS * 3 / 4)
			compact();
		if (used < EVENTS * 3 / 4) {
			unsigned i = home(e);
			while (set[i] > GONE)
				i = (i + 1) & (EVENTS - 1);
			gone -= set[i] == GONE;
			set[i] = e;
			used++;
		} else if (!said) {
			said = 1;
			carve_say("more than %d events made for timing at once: records of the others do not hold BE "
				  "tenants back", EVENTS * 3 / 4);
		}
	}
	pthread_mutex_unlock(&mu);
}

void carve_event_destroyed(CUevent ev)
{
	if (!carve_tide_ls())
		return;
	pthread_mutex_lock(&mu);
	int i = find((uintptr_t)ev);
	if (i >= 0) {
		set[i] = GONE;
		used--;
		gone++;
	}
	pthread_mutex_unlock(&mu);
}

void carve_event_recorded(CUevent ev)
{
	if (!carve_tide_ls())
		return;
	pthread_mutex_lock(&mu);
	int timing = find((uintptr_t)ev) >= 0;
	pthread_mutex_unlock(&mu);
	if (timing)
		carve_tide_timing();
}
