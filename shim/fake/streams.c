/*
 * streams.c: the fake driver's streams, events, stream capture and
 * synchronization, on the clock (core.c). Each context has a default
 * stream of its own; a stream's work is done at its done_at, which a
 * launch (launch.c) pushes on. A synchronization gives back what pools
 * hold beyond their thresholds (pools.c). Capture modes are kept as the
 * driver keeps them, and calls a global-mode capture forbids are refused
 * (fakecuda_unsafe_calls). A query or synchronization of a capturing
 * stream spoils its capture, as the driver's does: its end fails. A test
 * may have the next begin of a capture wait on the clock once the stream
 * is capturing (fakecuda_begin_capture_wait), as a thread may be held
 * there on a real driver.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "fake.h"

static struct fstream default_streams[CTX_SLOTS]; /* each context's */
#define MAX_STREAMS 256
static struct fstream *streams[MAX_STREAMS];
static int nstreams;

struct fstream *stream_of(CUstream s)
{
	if (s == 0 || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return default_stream();
	return (struct fstream *)s;
}

static struct fstream *freed_stream; /* the last destroyed (under mu) */

int cuStreamCreate(CUstream *s, unsigned flags)
{
	COUNTED();
	(void)flags;
	pthread_mutex_lock(&mu);
	struct fstream *f = freed_stream ? freed_stream : calloc(1, sizeof *f);
	freed_stream = NULL;
	memset(f, 0, sizeof *f);
	f->ctx = ctx_of(0);
	if (nstreams < MAX_STREAMS)
		streams[nstreams++] = f;
	pthread_mutex_unlock(&mu);
	*s = f;
	return 0;
}

/* cuStreamDestroy: the stream is gone at once (its work still runs),
 * and the next stream created gets its handle, as the driver may give it */
int cuStreamDestroy_v2(CUstream s)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nstreams; i++)
		if (streams[i] == (struct fstream *)s) {
			streams[i] = streams[--nstreams];
			free(freed_stream);
			freed_stream = s;
			break;
		}
	pthread_mutex_unlock(&mu);
	return 0;
}

/* Capture modes as the driver keeps them: each thread's (global, 0, at
 * first), and the captures under way in global mode. While one is, a
 * call that may not be made during a capture (a query, a synchronization,
 * an allocation, a module load) from a thread not in relaxed mode is
 * refused, as CUDA refuses it (and would end the capture); the fake
 * counts them. Thread-local mode's captures are not modelled. */
static __thread int cap_mode;
static int global_captures, unsafe_calls;

int cuThreadExchangeStreamCaptureMode(int *mode)
{
	COUNTED();
	int old = cap_mode;
	cap_mode = *mode;
	*mode = old;
	return 0;
}

/* unsafe: a call that a global-mode capture forbids: 0, or its error */
int unsafe(void)
{
	if (!__atomic_load_n(&global_captures, __ATOMIC_ACQUIRE) || cap_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return 0;
	__atomic_add_fetch(&unsafe_calls, 1, __ATOMIC_RELAXED);
	return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* fakecuda_unsafe_calls: calls refused for a global-mode capture */
int fakecuda_unsafe_calls(void)
{
	return __atomic_load_n(&unsafe_calls, __ATOMIC_RELAXED);
}

struct fevent {
	uint64_t at;
	CUcontext ctx; /* the context current at its creation: only its streams record it */
};

int cuEventCreate(CUevent *e, unsigned flags)
{
	COUNTED();
	(void)flags;
	struct fevent *f = calloc(1, sizeof *f);
	f->ctx = current_ctx;
	*e = f;
	return 0;
}

int cuEventDestroy_v2(CUevent e)
{
	free(e);
	return 0;
}

static int captured_events; /* recorded into a capturing stream */

/* fakecuda_captured_events: events recorded into a stream being captured
 * (they become nodes of the program's graph) */
int fakecuda_captured_events(void)
{
	return __atomic_load_n(&captured_events, __ATOMIC_RELAXED);
}

int cuEventRecord(CUevent e, CUstream s)
{
	COUNTED();
	if (((struct fevent *)e)->ctx != ctx_of(s))
		return CUDA_ERROR_INVALID_HANDLE;
	uint64_t t = now_ns();
	pthread_mutex_lock(&mu);
	captured_events += stream_of(s)->capturing;
	uint64_t d = stream_of(s)->done_at;
	((struct fevent *)e)->at = d > t ? d : t; /* reached when the work before it is done, or now */
	pthread_mutex_unlock(&mu);
	return error();
}

int cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	COUNTED();
	uint64_t t = now_ns(), x = ((struct fevent *)a)->at, y = ((struct fevent *)b)->at;
	if (t < x || t < y)
		return CUDA_ERROR_NOT_READY;
	*ms = (float)((double)((int64_t)(y - x)) / 1e6);
	return error();
}

int cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
	COUNTED();
	(void)flags;
	pthread_mutex_lock(&mu);
	struct fstream *f = stream_of(s);
	if (f->done_at < ((struct fevent *)e)->at)
		f->done_at = ((struct fevent *)e)->at;
	pthread_mutex_unlock(&mu);
	return error();
}

int cuStreamIsCapturing(CUstream s, int *capturing)
{
	COUNTED();
	*capturing = stream_of(s)->capturing;
	return error();
}

int cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags)
{
	(void)flags;
	return cuEventRecord(e, s);
}

int cuEventQuery(CUevent e)
{
	COUNTED();
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (error())
		return error();
	return now_ns() >= ((struct fevent *)e)->at ? 0 : CUDA_ERROR_NOT_READY;
}

int cuEventSynchronize(CUevent e)
{
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	sleep_until(((struct fevent *)e)->at);
	mem_synced();
	return error();
}

/* spoiled: a query or synchronization of s, if it is capturing, spoils
 * its capture (its end fails), as the driver's does in any mode: its error */
static int spoiled(CUstream s)
{
	struct fstream *f = stream_of(s);
	pthread_mutex_lock(&mu);
	int c = f->capturing;
	if (c)
		f->invalidated = 1;
	pthread_mutex_unlock(&mu);
	return c ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : 0;
}

int cuStreamQuery(CUstream s)
{
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (spoiled(s))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (error())
		return error();
	return now_ns() >= stream_of(s)->done_at ? 0 : CUDA_ERROR_NOT_READY;
}

int cuStreamSynchronize(CUstream s)
{
	COUNTED();
	if (unsafe() || spoiled(s))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	sleep_until(stream_of(s)->done_at);
	to_host(stream_of(s));
	mem_synced();
	if (cb && enabled[6][0x13]) /* a callback of another domain, as the driver makes */
		cb(cb_user, 6, 0x13, NULL);
	if (cb && enabled[7][2]) /* one enabled through entry 10 */
		cb(cb_user, 7, 2, NULL);
	return error();
}

struct fstream *default_stream(void)
{
	int s = ctx_slot(current_ctx);
	return &default_streams[s < 0 ? 0 : s];
}

int cuCtxSynchronize(void)
{
	if (unsafe())
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	uint64_t t = default_stream()->done_at;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nstreams; i++)
		if (streams[i]->done_at > t)
			t = streams[i]->done_at;
	pthread_mutex_unlock(&mu);
	sleep_until(t);
	mem_synced();
	return error();
}

static uint64_t begin_wait; /* the next begin's wait on the clock, ns */

/* fakecuda_begin_capture_wait: the next cuStreamBeginCapture waits ns on
 * the clock once its stream is capturing, before it returns */
void fakecuda_begin_capture_wait(uint64_t ns)
{
	__atomic_store_n(&begin_wait, ns, __ATOMIC_RELAXED);
}

int cuStreamBeginCapture_v2(CUstream s, int mode)
{
	struct fstream *f = stream_of(s);
	pthread_mutex_lock(&mu);
	f->cap = graph_new();
	f->capturing = 1;
	f->invalidated = 0;
	f->global = mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
	pthread_mutex_unlock(&mu);
	if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
		__atomic_add_fetch(&global_captures, 1, __ATOMIC_RELEASE);
	uint64_t wait = __atomic_exchange_n(&begin_wait, 0, __ATOMIC_RELAXED);
	if (wait)
		sleep_until(now_ns() + wait);
	return 0;
}

/* cuStreamEndCapture ends the capture; if it was spoiled, it fails and
 * gives no graph, as the driver's does. */
int cuStreamEndCapture(CUstream s, CUgraph *g)
{
	struct fstream *f = stream_of(s);
	if (f->capturing && f->global)
		__atomic_sub_fetch(&global_captures, 1, __ATOMIC_RELEASE);
	int bad = f->invalidated;
	f->capturing = f->global = f->invalidated = 0;
	*g = bad ? NULL : f->cap ? (CUgraph)f->cap : (CUgraph)0x1;
	f->cap = NULL;
	return bad ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : 0;
}
