/*
 * calltime.c: the time a process spends inside each CUDA driver call,
 * between two marks. Loaded by the driver as a CUPTI injection
 * (CUDA_INJECTION64_PATH=calltime.so), it subscribes to the driver API's
 * callbacks and adds up, per call name, how many calls entered and the
 * nanoseconds from entry to exit. The program marks a window by calling
 * calltime_mark(label) (Python: ctypes.CDLL(path).calltime_mark(b"...")),
 * and each mark prints, as one JSON line on stderr, what the calls since
 * the last mark took, the longest first. Calls the driver makes inside
 * another call do not reach callbacks; a shim's own calls around a
 * program's do, under their own names.
 *   cc -O2 -shared -fPIC -o calltime.so calltime.c -I$CUPTI/include -L$CUPTI/lib64 -lcupti
 */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 4096

static struct call {
	const char *name;
	uint64_t n, ns;
} calls[SLOTS];

static uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void CUPTIAPI on_call(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *data)
{
	(void)user;
	const CUpti_CallbackData *d = data;
	if (domain != CUPTI_CB_DOMAIN_DRIVER_API || id >= SLOTS)
		return;
	if (d->callbackSite == CUPTI_API_ENTER) {
		*d->correlationData = now();
		return;
	}
	uint64_t took = now() - *d->correlationData;
	calls[id].name = d->functionName;
	__atomic_add_fetch(&calls[id].n, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&calls[id].ns, took, __ATOMIC_RELAXED);
}

static int by_time(const void *a, const void *b)
{
	const struct call *x = a, *y = b;
	return (x->ns < y->ns) - (x->ns > y->ns);
}

void calltime_mark(const char *label)
{
	static struct call window[SLOTS];
	for (int i = 0; i < SLOTS; i++) {
		uint64_t n = __atomic_exchange_n(&calls[i].n, 0, __ATOMIC_RELAXED);
		uint64_t ns = __atomic_exchange_n(&calls[i].ns, 0, __ATOMIC_RELAXED);
		window[i] = (struct call){calls[i].name, n, ns};
	}
	qsort(window, SLOTS, sizeof window[0], by_time);
	uint64_t total = 0, n = 0;
	for (int i = 0; i < SLOTS; i++)
		total += window[i].ns, n += window[i].n;
	fprintf(stderr, "{\"calltime\":\"%s\",\"calls\":%llu,\"ms\":%.3f,\"by_call\":[", label ? label : "",
		(unsigned long long)n, total / 1e6);
	for (int i = 0; i < SLOTS && window[i].n; i++)
		fprintf(stderr, "%s{\"name\":\"%s\",\"n\":%llu,\"ms\":%.3f}", i ? "," : "",
			window[i].name ? window[i].name : "?", (unsigned long long)window[i].n, window[i].ns / 1e6);
	fprintf(stderr, "]}\n");
}

int InitializeInjection(void)
{
	CUpti_SubscriberHandle s;
	if (cuptiSubscribe(&s, (CUpti_CallbackFunc)on_call, NULL) != CUPTI_SUCCESS ||
	    cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
		fprintf(stderr, "calltime: CUPTI's driver callbacks could not be had\n");
		return 0;
	}
	return 1;
}
