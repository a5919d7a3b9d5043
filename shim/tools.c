/*
 * tools.c: the driver's launch-tools export table, shared with profilers.
 *
 * The driver takes one subscriber to its callbacks per process (a second
 * subscribe returns CUDA_ERROR_ALREADY_ACQUIRED). The shim needs it to write
 * masks; CUPTI-based profilers (torch.profiler) need it too, and CUPTI gets
 * its kernel records only from a subscription made with its own arguments.
 * So others get the table through here, and the one real subscription is
 * either the shim's own, or, once a profiler subscribes, the profiler's: the
 * shim lets its own go and makes the real one with the profiler's arguments
 * and relay() as the callback, which calls the profiler's callback for what
 * the profiler enabled and the shim's for the launch callback, the shim's
 * last so that its mask is what the descriptor keeps. The launch callback
 * stays enabled whatever the profiler turns off. When the profiler
 * unsubscribes, the shim subscribes again. Launches through the shim's
 * wrappers wait while the subscription changes hands (carve_tools_hold),
 * so none goes out without its mask.
 *
 * What the table's entries are was read from CUPTI's calls on driver 580
 * (CARVE_TRACE_TOOLS=1 logs them): word 0 is the table's size in bytes;
 *   3  subscribe(uint32_t *handle, callback, user)
 *   4  unsubscribe(handle)
 *   6  enable(on, handle, domain, cbid)
 *   7  enable a domain(on, handle, domain, ...)            (Nsight Compute's)
 *   9  enable a domain(on, handle, domain)
 *   11 subscribe(uint32_t *handle, callback, user, more)   (CUPTI's)
 * Other entries take no handle and pass through.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

const unsigned char carve_tools_uuid[16] = {
	0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
	0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b,
};

enum { E_SUBSCRIBE = 3, E_UNSUBSCRIBE = 4, E_ENABLE = 6, E_ENABLE_DOMAIN_EX = 7, E_ENABLE_DOMAIN = 9, E_SUBSCRIBE_EX = 11 };
#define ENTRIES 16
#define DOMAINS 32
#define CBIDS 2048

typedef int (*subscribe_fn)(uint32_t *, carve_tools_cb, void *);
typedef int (*subscribe_ex_fn)(uint32_t *, carve_tools_cb, void *, void *);
typedef int (*unsubscribe_fn)(uint32_t);
typedef int (*enable_fn)(uint32_t, uint32_t, int, int);
typedef int (*enable_domain_fn)(uint32_t, uint32_t, int);
typedef int (*enable_domain_ex_fn)(uint32_t, uint32_t, int, uintptr_t);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;      /* the state below */
/* launches hold it shared while the subscription changes hands; a writer
 * goes first, so launches from many threads cannot keep a handover waiting */
static pthread_rwlock_t hold = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static const uintptr_t *real;  /* the driver's table */
static uintptr_t mux[ENTRIES]; /* what others are given */
static size_t entries;

/* the shim's own callback and what it enabled */
static carve_tools_cb own_cb;
static int own_domain = -1, own_cbid = -1;
static uint32_t own_handle;
static int own_subscribed;

/* the profiler holding the real subscription, when one does */
static carve_tools_cb prof_cb;
static uint32_t prof_handle;
static uint8_t prof_domain[DOMAINS];
static uint64_t prof_cbid[DOMAINS][CBIDS / 64];

static int is_own(int domain, int cbid) { return domain == own_domain && cbid == own_cbid; }

static int prof_wants(int domain, int cbid)
{
	if (domain < 0 || domain >= DOMAINS || cbid < 0 || cbid >= CBIDS)
		return 1; /* beyond what is tracked: whatever comes is the profiler's */
	return __atomic_load_n(&prof_domain[domain], __ATOMIC_RELAXED) ||
	       (__atomic_load_n(&prof_cbid[domain][cbid / 64], __ATOMIC_RELAXED) >> (cbid % 64) & 1);
}

/* relay is the callback of the real subscription while a profiler holds
 * it: the profiler's callback, then the shim's. The driver calls it for
 * what the profiler enabled, by whichever entry, and for the shim's launch
 * callback, which reaches the profiler only if it enabled that too. */
static void relay(void *user, int domain, int cbid, const void *params)
{
	carve_tools_cb p = __atomic_load_n(&prof_cb, __ATOMIC_ACQUIRE);
	if (p && (!is_own(domain, cbid) || prof_wants(domain, cbid)))
		p(user, domain, cbid, params);
	if (is_own(domain, cbid) && own_cb)
		own_cb(NULL, domain, cbid, params);
}

/* own_subscribe makes the shim's own real subscription (under mu). */
static int own_subscribe(void)
{
	int rc = ((subscribe_fn)real[E_SUBSCRIBE])(&own_handle, own_cb, NULL);
	if (rc == 0)
		rc = ((enable_fn)real[E_ENABLE])(1, own_handle, own_domain, own_cbid);
	own_subscribed = rc == 0;
	return rc;
}

/* hand_over gives the real subscription to a profiler subscribing with
 * sub (its entry) and its arguments; it keeps the shim's callback on. */
static int hand_over(int entry, uint32_t *handle, carve_tools_cb cb, void *user, void *more)
{
	pthread_mutex_lock(&mu);
	if (prof_cb) {
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_ALREADY_ACQUIRED; /* one profiler, as the driver allows */
	}
	pthread_rwlock_wrlock(&hold);
	int rc = 0;
	if (own_subscribed && (rc = ((unsubscribe_fn)real[E_UNSUBSCRIBE])(own_handle)) != 0) {
		carve_say("the driver would not let go of carve's launch callback (%d): a profiler cannot subscribe", rc);
		pthread_rwlock_unlock(&hold);
		pthread_mutex_unlock(&mu);
		return CUDA_ERROR_ALREADY_ACQUIRED;
	}
	own_subscribed = 0;
	rc = entry == E_SUBSCRIBE_EX ? ((subscribe_ex_fn)real[entry])(handle, relay, user, more)
				     : ((subscribe_fn)real[entry])(handle, relay, user);
	if (rc == 0) {
		memset(prof_domain, 0, sizeof prof_domain);
		memset(prof_cbid, 0, sizeof prof_cbid);
		prof_handle = *handle;
		__atomic_store_n(&prof_cb, cb, __ATOMIC_RELEASE);
		if (own_cb) /* else the shim rides along when it subscribes */
			rc = ((enable_fn)real[E_ENABLE])(1, prof_handle, own_domain, own_cbid);
		CARVE_DEBUG("a profiler holds the launch callbacks now (handle %u, enable %d)", prof_handle, rc);
		if (rc != 0) {
			carve_say("cannot keep carve's launch callback beside the profiler (%d)", rc);
			carve_refuse("the partition cannot be enforced beside the profiler");
		}
	} else if (own_cb && own_subscribe() != 0) {
		carve_refuse("carve's launch callback was lost while a profiler failed to subscribe");
	}
	pthread_rwlock_unlock(&hold);
	pthread_mutex_unlock(&mu);
	return rc;
}

static int mux_subscribe(uint32_t *handle, carve_tools_cb cb, void *user)
{
	return hand_over(E_SUBSCRIBE, handle, cb, user, NULL);
}

static int mux_subscribe_ex(uint32_t *handle, carve_tools_cb cb, void *user, void *more)
{
	return hand_over(E_SUBSCRIBE_EX, handle, cb, user, more);
}

static int mux_unsubscribe(uint32_t handle)
{
	pthread_mutex_lock(&mu);
	if (!prof_cb || handle != prof_handle) {
		pthread_mutex_unlock(&mu);
		return ((unsubscribe_fn)real[E_UNSUBSCRIBE])(handle);
	}
	pthread_rwlock_wrlock(&hold);
	int rc = ((unsubscribe_fn)real[E_UNSUBSCRIBE])(handle);
	__atomic_store_n(&prof_cb, NULL, __ATOMIC_RELEASE);
	if (own_cb && own_subscribe() != 0)
		carve_refuse("carve's launch callback could not be taken back after the profiler left");
	pthread_rwlock_unlock(&hold);
	pthread_mutex_unlock(&mu);
	return rc;
}

static void put_cbid(int domain, int cbid, int on)
{
	uint64_t bit = 1ull << (cbid % 64), *w = &prof_cbid[domain][cbid / 64];
	__atomic_store_n(w, on ? *w | bit : *w & ~bit, __ATOMIC_RELAXED);
}

static int mux_enable(uint32_t on, uint32_t handle, int domain, int cbid)
{
	pthread_mutex_lock(&mu);
	int mine = prof_cb && handle == prof_handle;
	if (mine && domain >= 0 && domain < DOMAINS && cbid >= 0 && cbid < CBIDS)
		put_cbid(domain, cbid, on != 0);
	if (mine && !on && is_own(domain, cbid))
		on = 1; /* the shim's stays on; relay no longer passes it to the profiler */
	int rc = ((enable_fn)real[E_ENABLE])(on, handle, domain, cbid);
	pthread_mutex_unlock(&mu);
	return rc;
}

/* domain_switched notes a profiler turning a whole domain on or off, and
 * keeps the shim's launch callback on (under mu, after the driver's call). */
static void domain_switched(uint32_t on, uint32_t handle, int domain)
{
	if (!prof_cb || handle != prof_handle)
		return;
	if (domain >= 0 && domain < DOMAINS) {
		__atomic_store_n(&prof_domain[domain], on != 0, __ATOMIC_RELAXED);
		if (!on)
			memset(prof_cbid[domain], 0, sizeof prof_cbid[domain]);
	}
	if (!on && domain == own_domain)
		((enable_fn)real[E_ENABLE])(1, handle, own_domain, own_cbid);
}

static int mux_enable_domain(uint32_t on, uint32_t handle, int domain)
{
	pthread_mutex_lock(&mu);
	int rc = ((enable_domain_fn)real[E_ENABLE_DOMAIN])(on, handle, domain);
	domain_switched(on, handle, domain);
	pthread_mutex_unlock(&mu);
	return rc;
}

/* Nsight Compute's way of switching a domain, with one more argument */
static int mux_enable_domain_ex(uint32_t on, uint32_t handle, int domain, uintptr_t more)
{
	pthread_mutex_lock(&mu);
	int rc = ((enable_domain_ex_fn)real[E_ENABLE_DOMAIN_EX])(on, handle, domain, more);
	domain_switched(on, handle, domain);
	pthread_mutex_unlock(&mu);
	return rc;
}

/* mux_of sets the shared table over the driver's, once. */
static void mux_of(const void *table)
{
	pthread_mutex_lock(&mu);
	if (!real) {
		const uintptr_t *t = table;
		size_t n = t[0] % sizeof(uintptr_t) == 0 ? t[0] / sizeof(uintptr_t) : 0;
		entries = n > E_ENABLE && n <= ENTRIES ? n : E_ENABLE + 1;
		memcpy(mux, t, entries * sizeof *t);
		mux[E_SUBSCRIBE] = (uintptr_t)mux_subscribe;
		mux[E_UNSUBSCRIBE] = (uintptr_t)mux_unsubscribe;
		mux[E_ENABLE] = (uintptr_t)mux_enable;
		if (entries > E_ENABLE_DOMAIN_EX)
			mux[E_ENABLE_DOMAIN_EX] = (uintptr_t)mux_enable_domain_ex;
		if (entries > E_ENABLE_DOMAIN)
			mux[E_ENABLE_DOMAIN] = (uintptr_t)mux_enable_domain;
		if (entries > E_SUBSCRIBE_EX)
			mux[E_SUBSCRIBE_EX] = (uintptr_t)mux_subscribe_ex;
		real = t;
	}
	pthread_mutex_unlock(&mu);
}

int carve_tools_subscribe(const void *table, carve_tools_cb cb, int domain, int cbid)
{
	mux_of(table);
	pthread_mutex_lock(&mu);
	own_cb = cb;
	own_domain = domain;
	own_cbid = cbid;
	int rc;
	if (prof_cb) /* a profiler subscribed first (an injection at cuInit): ride along */
		rc = ((enable_fn)real[E_ENABLE])(1, prof_handle, domain, cbid);
	else
		rc = own_subscribe();
	pthread_mutex_unlock(&mu);
	return rc;
}

void carve_tools_hold(int on)
{
	if (on)
		pthread_rwlock_rdlock(&hold);
	else
		pthread_rwlock_unlock(&hold);
}

/* --- tracing others' calls ------------------------------------------------ */

#define TRACED 12
typedef uintptr_t (*entry_fn)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);
static uintptr_t traced[ENTRIES];

#define TRAMP(i)                                                                                     \
	static uintptr_t tramp##i(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d, uintptr_t e,    \
				  uintptr_t f)                                                       \
	{                                                                                            \
		uintptr_t r = ((entry_fn)mux[i])(a, b, c, d, e, f);                                  \
		carve_say("tools[%d](%#lx, %#lx, %#lx, %#lx) = %ld", i, (unsigned long)a,            \
			  (unsigned long)b, (unsigned long)c, (unsigned long)d, (long)r);            \
		return r;                                                                            \
	}
TRAMP(1) TRAMP(2) TRAMP(3) TRAMP(4) TRAMP(5) TRAMP(6) TRAMP(7) TRAMP(8) TRAMP(9) TRAMP(10) TRAMP(11)

static const void *trace(void)
{
	static void *t[TRACED] = {0, tramp1, tramp2, tramp3, tramp4, tramp5, tramp6, tramp7, tramp8,
				  tramp9, tramp10, tramp11};
	traced[0] = mux[0];
	for (size_t i = 1; i < entries; i++)
		traced[i] = i < TRACED ? (uintptr_t)t[i] : mux[i];
	return traced;
}

const void *carve_tools_table(const void *uuid, const void *table)
{
	if (memcmp(uuid, carve_tools_uuid, sizeof carve_tools_uuid) != 0) {
		if (carve_trace_tools) {
			const unsigned char *u = uuid;
			carve_say("export table %02x%02x%02x%02x-... asked for", u[0], u[1], u[2], u[3]);
		}
		return table;
	}
	/* the environment, not the block: a profiler's preloaded library can
	 * ask before the shim's constructor has run */
	const char *dir = getenv("CARVE_CTL_DIR"), *tr = getenv("CARVE_TRACE_TOOLS");
	int tracing = tr && *tr == '1';
	if ((!dir || !*dir) && !tracing)
		return table; /* nothing to enforce: others have the driver's own */
	mux_of(table);
	if (tracing) {
		carve_say("tools table %p: %zu entries, shared", table, entries);
		return trace();
	}
	return mux;
}
