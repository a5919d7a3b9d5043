/*
 * tide_ls.c: an LS tenant in tide (tide.c says how tide works): its
 * streams with work, the poller that finds them done, captures, and its
 * timing events.
 *
 * LS: a launch counts itself in its stream (without a lock) and marks the
 * tenant busy, in its entry of its LS file and the file's busy bits, if it
 * was not. A
 * thread of the shim (the poller) asks the driver whether those streams are
 * done, every ~10 us while the tenant is busy, renewing the heartbeat; it
 * skips a stream launched into since its last look, so that it stays out of
 * the driver while the tenant launches. When all are done, it marks the
 * tenant idle. Launches into a stream being captured into a graph run
 * nothing and are not counted; while a capture is under way the poller asks
 * nothing (a query of a capturing stream spoils the capture). A capture
 * counts from before the driver's begin, under the lock the poller holds
 * from its look at the count to its last query (carve_capture), so no
 * query falls after a begin, however the threads run. The LS tenant's kernels run on
 * its partition and on every TPC that no other LS tenant reserved and no
 * partition outside tide holds (the node block's fixed TPCs), or on its
 * partition alone with CARVE_FLAG_LS_OWN.
 *
 * Each busy period on a GPU (from the launch that found the tenant idle
 * there to the poll that found its work done) goes into the block's
 * busy_hist, and into alone_hist too if no BE tenant launched on that GPU
 * from CARVE_NODE_QUIET_NS before it began to its end (the latest
 * be_launch_ns of the GPU's BE files, each stamped by its writer's BE
 * shims: carve_tide_be_latest).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "carve_node.h"
#include "shim.h"

/* the driver's functions the LS side calls itself */
static CUresult (*ctx_set)(CUcontext);
static CUresult (*stream_query)(CUstream);
static CUresult (*exchange_mode)(int *);

/* --- LS: streams with work, and the poller -------------------------------- */

#define STREAMS 128
struct tracked {
	CUstream s;   /* with ctx, set before the entry is published, never changed */
	CUcontext ctx; /* the context it was launched into: a default stream is each context's own */
	int gpu;      /* the tenant's GPU of ctx */
	/* launches into it, counted by the launching threads without a lock:
	 * begun (before the call) and submitted (it returned) */
	uint64_t launched, submitted;
	uint64_t done; /* launches known done on the GPU: the poller's */
	uint64_t seen; /* launches counted at the poller's last look: the poller's */
	int capturing;
};
static struct tracked streams[STREAMS];
static int nstreams; /* entries published (release) */
/* taken to add a stream, to mark the tenant busy, by the poller while it
 * polls, and for captures; never on a launch's way otherwise */
static pthread_mutex_t track_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t track_cv = PTHREAD_COND_INITIALIZER;
static int poller_parked; /* the poller waits on track_cv for the tenant to be busy */

static struct tracked *find(CUstream s, CUcontext ctx)
{
	int n = __atomic_load_n(&nstreams, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (streams[i].s == s && streams[i].ctx == ctx)
			return &streams[i];
	return NULL;
}

/* track finds or adds s of ctx, on the tenant's GPU gpu (under track_mu). */
static struct tracked *track(CUstream s, CUcontext ctx, int gpu)
{
	struct tracked *t = find(s, ctx);
	if (t || nstreams == STREAMS)
		return t;
	t = &streams[nstreams];
	memset(t, 0, sizeof *t);
	t->s = s;
	t->ctx = ctx;
	t->gpu = gpu;
	__atomic_store_n(&nstreams, nstreams + 1, __ATOMIC_RELEASE);
	return t;
}

static int is_busy(int g)
{
	return carve_tide_gpus[g].proc && __atomic_load_n(&carve_tide_gpus[g].proc->busy, __ATOMIC_SEQ_CST);
}

static int any_busy(void)
{
	for (int g = 0; g < carve_tide_ngpus; g++)
		if (is_busy(g))
			return 1;
	return 0;
}

/* beat renews our heartbeat on GPU g, and our LS file's latest. */
static void beat(int g, uint64_t now)
{
	__atomic_store_n(&carve_tide_gpus[g].proc->beat_ns, now, __ATOMIC_RELEASE);
	__atomic_store_n(&carve_tide_gpus[g].ls->beat_ns, now, __ATOMIC_RELAXED);
}

/* become_busy marks the tenant busy on GPU g, unless it is (a request's
 * first launch there; the poller may have found it idle just before). */
static void become_busy(int g)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	pthread_mutex_lock(&track_mu);
	if (!__atomic_load_n(&G->proc->busy, __ATOMIC_SEQ_CST)) {
		G->busy_since = carve_mono_ns();
		__atomic_store_n(&G->proc->busy_since_ns, G->busy_since, __ATOMIC_RELAXED);
		beat(g, G->busy_since);
		__atomic_add_fetch(&G->proc->requests, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&carve_block->requests, 1, __ATOMIC_RELAXED);
		carve_tide_set_busy(g, 1);
		__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_BUSY, __ATOMIC_RELAXED);
		if (poller_parked) {
			poller_parked = 0;
			carve_thread_wakes();
		}
		pthread_cond_signal(&track_cv);
	}
	pthread_mutex_unlock(&track_mu);
}

/* the stream this thread's launch was counted in, until it returns */
static __thread __attribute__((tls_model("initial-exec"))) struct tracked *counted;

/* carve_tide_ls_launch counts a launch in its stream on GPU g (of context ctx), then
 * makes sure the tenant is busy there. The count comes first: a poller
 * that finds the tenant idle looks at the counts again after saying so
 * (poller), so one of the two sees the other. */
void carve_tide_ls_launch(int g, CUstream s, CUcontext ctx)
{
	if (s == CU_STREAM_PER_THREAD)
		s = 0; /* counted with the legacy stream, which waits for it */
	counted = NULL;
	if (__atomic_load_n(&carve_tide_captures, __ATOMIC_RELAXED))
		return;
	struct tracked *t = find(s, ctx);
	if (!t) {
		pthread_mutex_lock(&track_mu);
		t = track(s, ctx, g);
		pthread_mutex_unlock(&track_mu);
		if (!t)
			return;
	}
	if (__atomic_load_n(&t->capturing, __ATOMIC_RELAXED))
		return;
	__atomic_add_fetch(&t->launched, 1, __ATOMIC_SEQ_CST);
	counted = t;
	if (!__atomic_load_n(&carve_tide_gpus[g].proc->busy, __ATOMIC_SEQ_CST))
		become_busy(g);
}

void carve_tide_ls_submitted(void)
{
	if (counted)
		__atomic_add_fetch(&counted->submitted, 1, __ATOMIC_RELEASE);
	counted = NULL;
}

/* poll asks the driver about each stream with work (under track_mu) and
 * says of each GPU whether all of its work is done (done[g]). A launch not
 * yet submitted is not, and a stream launched into since the last poll is
 * not asked about: the tenant is still submitting, and a query in the
 * driver beside its launches would slow them. Submitted is read before
 * launched: if they are equal, every launch begun by then had been
 * submitted, and the query covers them. */
static CUcontext poller_ctx; /* the poller thread's current context */
static void poll_streams(int done[CARVE_GPUS])
{
	for (int g = 0; g < carve_tide_ngpus; g++)
		done[g] = 1;
	for (int i = 0; i < nstreams; i++) {
		struct tracked *t = &streams[i];
		uint64_t sub = __atomic_load_n(&t->submitted, __ATOMIC_ACQUIRE);
		uint64_t n = __atomic_load_n(&t->launched, __ATOMIC_ACQUIRE);
		if (n == t->done)
			continue;
		if (sub != n || n != t->seen) {
			t->seen = n;
			done[t->gpu] = 0;
			continue;
		}
		if (t->ctx != poller_ctx) {
			ctx_set(t->ctx);
			poller_ctx = t->ctx;
		}
		CUresult r = stream_query(t->s);
		if (r == CUDA_SUCCESS || (r != CUDA_ERROR_NOT_READY && r != 0)) /* done, or ended by a fault */
			t->done = n;
		else
			done[t->gpu] = 0;
	}
}

/* launched_since says whether a launch on GPU g was counted after the last
 * poll. */
static int launched_since(int g)
{
	for (int i = 0; i < nstreams; i++)
		if (streams[i].gpu == g && __atomic_load_n(&streams[i].launched, __ATOMIC_SEQ_CST) != streams[i].done)
			return 1;
	return 0;
}

/* period_ended records a busy period on GPU g of d ns, begun at since,
 * alone as the BE files the poller listed last say (it lists them outside
 * track_mu). */
static void period_ended(int g, uint64_t since, uint64_t d)
{
	__atomic_add_fetch(&carve_tide_gpus[g].proc->busy_ns, d, __ATOMIC_RELAXED);
	__atomic_add_fetch(&carve_block->busy_ns, d, __ATOMIC_RELAXED);
	carve_hist_add(&carve_block->busy_hist, d);
	uint64_t be;
	if (carve_tide_be_latest(g, &be) && (!be || (int64_t)(since - be) > (int64_t)CARVE_NODE_QUIET_NS))
		carve_hist_add(&carve_block->alone_hist, d);
}

static void *poller(void *arg)
{
	(void)arg;
	int relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
	if (exchange_mode)
		exchange_mode(&relaxed); /* queries of this thread never disturb another's capture */
	pthread_mutex_lock(&track_mu);
	for (;;) {
		if (!any_busy()) {
			poller_parked = 1; /* become_busy wakes it */
			carve_thread_parks();
			while (!any_busy())
				pthread_cond_wait(&track_cv, &track_mu);
		}
		uint64_t now = carve_mono_ns();
		for (int g = 0; g < carve_tide_ngpus; g++)
			if (is_busy(g))
				beat(g, now);
		if (__atomic_load_n(&carve_tide_captures, __ATOMIC_RELAXED) == 0) {
			int done[CARVE_GPUS];
			poll_streams(done);
			for (int g = 0; g < carve_tide_ngpus; g++) {
				if (!done[g] || !is_busy(g))
					continue;
				carve_tide_set_busy(g, 0);
				if (launched_since(g)) { /* it went on: still busy */
					carve_tide_set_busy(g, 1);
					continue;
				}
				period_ended(g, carve_tide_gpus[g].busy_since, now - carve_tide_gpus[g].busy_since);
			}
			if (!any_busy()) {
				__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
				continue;
			}
		}
		pthread_mutex_unlock(&track_mu);
		/* the BE files are listed here, outside track_mu: a launch that
		 * marks the tenant busy never waits on a directory's listing */
		uint64_t coarse = carve_coarse_ns();
		for (int g = 0; g < carve_tide_ngpus; g++)
			carve_tide_be_list(g, coarse);
		carve_nap_ns(10000);
		pthread_mutex_lock(&track_mu);
	}
	return NULL;
}

/* carve_capture counts a capture of s in (begin: before the driver's begin
 * is called) or out (after its end, or after a begin that failed). It
 * takes track_mu, which the poller holds from its look at the count to its
 * last query: a poll under way ends before the driver's begin is called,
 * and a poll after it sees the count. */
void carve_capture(CUstream s, int begin)
{
	CUcontext ctx = NULL;
	int g = carve_tide_cls == CARVE_CLASS_LS ? carve_launch_gpu(NULL, &ctx) : CARVE_GPU_NONE;
	pthread_mutex_lock(&track_mu);
	if (begin) {
		carve_tide_captures++;
	} else if (carve_tide_captures > 0) {
		carve_tide_captures--;
	}
	if (s == CU_STREAM_PER_THREAD)
		s = 0;
	struct tracked *t = g >= 0 && carve_tide_gpus[g].proc ? track(s, ctx, g) : NULL;
	if (t)
		__atomic_store_n(&t->capturing, begin, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&track_mu);
}

int carve_tide_capturing(void)
{
	return __atomic_load_n(&carve_tide_captures, __ATOMIC_RELAXED);
}

/* --- LS: timing its own work --------------------------------------------- */

int carve_tide_ls(void)
{
	return carve_tide_cls == CARVE_CLASS_LS;
}

/* carve_tide_timing stamps our entry, and our LS file, on the GPU of the
 * current context: we just recorded an event made for timing (timing.c). */
void carve_tide_timing(void)
{
	if (carve_tide_cls != CARVE_CLASS_LS)
		return;
	int g = carve_launch_gpu(NULL, NULL);
	if (g < 0 || !carve_tide_gpus[g].proc)
		return;
	uint64_t now = carve_mono_ns();
	__atomic_store_n(&carve_tide_gpus[g].proc->timing_ns, now, __ATOMIC_RELEASE);
	__atomic_store_n(&carve_tide_gpus[g].ls->timing_ns, now, __ATOMIC_RELEASE);
}

/* --- at load ------------------------------------------------------------------ */

/* carve_tide_ls_init finds the driver's functions of the LS side: 0 if it
 * lacks stream queries. */
int carve_tide_ls_init(void *cuda)
{
	ctx_set = carve_real_dlsym(cuda, "cuCtxSetCurrent");
	stream_query = carve_real_dlsym(cuda, "cuStreamQuery");
	exchange_mode = carve_real_dlsym(cuda, "cuThreadExchangeStreamCaptureMode");
	return ctx_set && stream_query;
}

/* carve_tide_ls_start starts the poller: 0 if it could not. */
int carve_tide_ls_start(void)
{
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	carve_thread_wakes(); /* the poller runs until it first waits */
	if (pthread_create(&t, &a, poller, NULL) != 0) {
		carve_thread_parks();
		return 0;
	}
	return 1;
}
