/*
 * core.c: what every file of the fake driver uses: the lock of streams and
 * launches, the fault that ends every later call, the clock (CLOCK_MONOTONIC,
 * or the test's virtual one: the one file that reads ../test/vclock.h), the
 * driver calls counted for tests (fakecuda_calls), and those made from
 * inside a launch callback (fakecuda_called_in_callback).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>

#include "../test/vclock.h"
#include "fake.h"

pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
int faulted;

int error(void)
{
	return __atomic_load_n(&faulted, __ATOMIC_ACQUIRE) ? 700 : 0;
}

/* --- time ------------------------------------------------------------------ */

uint64_t now_ns(void)
{
	struct carve_vclock *c = vclock();
	if (c)
		return vclock_now(c);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sleep_until(uint64_t t)
{
	struct carve_vclock *c = vclock();
	if (c) {
		vclock_wait(c, t);
		return;
	}
	for (uint64_t n = now_ns(); n < t; n = now_ns()) {
		struct timespec ts = {0, (long)(t - n)};
		nanosleep(&ts, NULL);
	}
}

/* --- driver calls counted, for tests (fakecuda_calls) ----------------------- */

/* The calls a shim may make beside a launch (slicing's, shim/slice.c:
 * timing events, queries, occupancy, its own kernels' module and memory;
 * tide's events among them) count themselves by name, each at its top
 * (COUNTED, fake.h), so that a test can see which a run of launches made.
 * Launches are counted apart (fakecuda_fn_launches). */
static struct counted_call *counted_calls; /* those called at least once */
static pthread_mutex_t counted_mu = PTHREAD_MUTEX_INITIALIZER;

void count_call(struct counted_call *c)
{
	if (!__atomic_load_n(&c->listed, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&counted_mu);
		if (!c->listed) {
			c->next = counted_calls;
			counted_calls = c;
			__atomic_store_n(&c->listed, 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&counted_mu);
	}
	__atomic_add_fetch(&c->n, 1, __ATOMIC_RELAXED);
}

/* fakecuda_calls writes "NAME=N" for each counted call made so far,
 * space-separated, into out (size bytes), and returns their total. */
unsigned fakecuda_calls(char *out, size_t size)
{
	unsigned total = 0;
	size_t at = 0;
	if (size)
		out[0] = 0;
	pthread_mutex_lock(&counted_mu);
	for (struct counted_call *c = counted_calls; c; c = c->next) {
		unsigned n = __atomic_load_n(&c->n, __ATOMIC_RELAXED);
		total += n;
		int w = at < size ? snprintf(out + at, size - at, "%s%s=%u", at ? " " : "", c->name, n) : 0;
		at += w > 0 ? (size_t)w : 0;
	}
	pthread_mutex_unlock(&counted_mu);
	return total;
}

/* --- calls inside a launch callback ----------------------------------------- */

/* driver calls made from inside a launch callback (on its thread): a
 * profiler counts them as calls nested in the launch (CUPTI lost its
 * kernel records), so the shim must make none */
__thread int in_callback;
static int called_in_callback;

void asked(void)
{
	if (in_callback)
		__atomic_add_fetch(&called_in_callback, 1, __ATOMIC_RELAXED);
}

/* fakecuda_called_in_callback is how many driver calls were made from
 * inside launch callbacks. */
int fakecuda_called_in_callback(void)
{
	return __atomic_load_n(&called_in_callback, __ATOMIC_RELAXED);
}
