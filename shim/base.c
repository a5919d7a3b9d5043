/*
 * base.c: what every other file of libcarve.so uses, and nothing else:
 * this process's control block and settings, messages, the clocks, and
 * glibc's own dlsym. It calls no other file of the shim, so the files form
 * no circle (a test over the objects' symbols checks it). Every clock read,
 * nap and yield of the shim is here, so that its test build (-DCARVE_TEST)
 * can run them on a test's virtual clock (shim.h, test/vclock.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"
#ifdef CARVE_TEST
#include "test/vclock.h"
#endif

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

/* --- clocks --------------------------------------------------------------- */

static uint64_t read_clock(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t carve_now_ns(void)
{
	return read_clock(CLOCK_REALTIME_COARSE);
}

uint64_t carve_mono_ns(void)
{
#ifdef CARVE_TEST
	struct carve_vclock *c = vclock();
	if (c)
		return vclock_now(c);
#endif
	return read_clock(CLOCK_MONOTONIC);
}

uint64_t carve_coarse_ns(void)
{
#ifdef CARVE_TEST
	struct carve_vclock *c = vclock();
	if (c)
		return vclock_now(c);
#endif
	return read_clock(CLOCK_MONOTONIC_COARSE);
}

/* the thread's timer slack is set to 1 us at its first nap: naps last as
 * long as asked, not 50 us more */
static __thread __attribute__((tls_model("initial-exec"))) int slack_set;

void carve_nap_ns(long ns)
{
#ifdef CARVE_TEST
	struct carve_vclock *c = vclock();
	if (c) {
		vclock_wait(c, vclock_now(c) + (uint64_t)ns);
		return;
	}
#endif
	if (!slack_set) {
		prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
		slack_set = 1;
	}
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

void carve_wait_until(uint64_t since, uint64_t until)
{
	uint64_t now = carve_mono_ns();
	if (until > now + 200000) {
		uint64_t nap = until - now - 100000;
		carve_nap_ns(nap < 1000000 ? (long)nap : 1000000);
	} else if (now - since < 100000) {
		carve_yield();
	} else {
		carve_nap_ns(20000);
	}
}

/* On the virtual clock a yield waits for the clock to move: a spin that
 * yields until something changes would otherwise never let the test see
 * every thread still. */
void carve_yield(void)
{
#ifdef CARVE_TEST
	struct carve_vclock *c = vclock();
	if (c) {
		vclock_wait(c, vclock_now(c) + 1);
		return;
	}
#endif
	sched_yield();
}

#ifdef CARVE_TEST
void carve_thread_parks(void)
{
	vclock_park(vclock());
}

void carve_thread_wakes(void)
{
	vclock_wake(vclock());
}
#endif

/* --- glibc's dlsym ---------------------------------------------------------- */

static carve_dlsym_fn glibc_dlsym_fn;

carve_dlsym_fn carve_glibc_dlsym(void)
{
	carve_dlsym_fn f = __atomic_load_n(&glibc_dlsym_fn, __ATOMIC_ACQUIRE);
	if (!f) {
		f = (carve_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!f)
			f = (carve_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
		__atomic_store_n(&glibc_dlsym_fn, f, __ATOMIC_RELEASE);
	}
	return f;
}

void *carve_real_dlsym(void *handle, const char *name)
{
	return carve_glibc_dlsym()(handle, name);
}
