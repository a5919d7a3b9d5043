/*
 * tide.c: latency-sensitive (LS) and best-effort (BE) tenants sharing the
 * GPU through the node block (carve_node.h).
 *
 * LS: a launch counts itself in its stream (without a lock) and marks the
 * tenant busy, in its slot and the node's busy bits, if it was not. A
 * thread of the shim (the poller) asks the driver whether those streams are
 * done, every ~10 us while the tenant is busy, renewing the heartbeat; it
 * skips a stream launched into since its last look, so that it stays out of
 * the driver while the tenant launches. When all are done, it marks the
 * tenant idle. Launches into a stream being captured into a graph run
 * nothing and are not counted; while a capture is under way the poller asks
 * nothing (a query could spoil the capture). The LS tenant's kernels run on
 * its partition and on every TPC that no other LS tenant reserved and no
 * partition outside tide holds (the node block's fixed TPCs), or on its
 * partition alone with CARVE_FLAG_LS_OWN.
 *
 * BE: before each launch the shim reads the node's busy bits, and the
 * slots they name. While an LS tenant is busy (with a heartbeat younger
 * than the lease) the launch waits, except for the BE's share of the time
 * while LS work is in flight (a token bucket over the epoch, spent at the
 * BE's measured kernel time, so its DRAM traffic then is about share x its
 * rate; no share while the LS tenant times its own work, timing.c), and it
 * runs off the LS tenants' reserved TPCs, or on its floor if
 * it has one (TPCs that LS tenants keep off: its traffic then is what that
 * many TPCs draw, and it never holds an SM the LS tenants use). While some LS
 * tenant has been busy in the last CARVE_NODE_QUIET_NS, the BE keeps at
 * most inflight_max launches in flight (counted by events recorded after
 * some of them) and at most queue_us of GPU time by its kernels' measured
 * time, so that holding it back takes effect within about one kernel;
 * otherwise it asks the driver about its queue once a millisecond and reads
 * only the coarse clock. With no share, it still gets a launch after
 * waiting an epoch: it is never starved for good. Its waits yield the CPU
 * for the first 100 us and then nap 20 us at a time (the thread's timer
 * slack set to 1 us, or naps would last 50 us more), so that it follows the
 * GPU closely enough to keep it fed.
 *
 * Waiting happens in the launch wrappers, outside the driver, never in its
 * callback.
 *
 * All of it is per GPU: a tenant with partitions on several GPUs takes
 * part in each GPU's node block (the block names one for each of its
 * GPUs), and a launch goes through the node of the GPU its context is on
 * (gpu.c). An LS tenant has a slot in each node and is busy on a GPU while
 * its streams there have work; a BE tenant's gate, share, queue and kernel
 * time are kept for each GPU, so LS work on one GPU holds back its BE
 * launches on that GPU alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "carve_node.h"
#include "carve_tmd.h"
#include "shim.h"

/* A GPU of the tenant's in tide: its node block, where an LS tenant holds
 * a slot, and a BE tenant's gate there (struct be, below). */
struct be;
struct tgpu {
	struct carve_node *node; /* NULL: this GPU takes no part */
	int fd;                  /* kept open: it carries our slot's lock */
	struct carve_node_slot *slot; /* LS: ours */
	uint64_t busy_since;     /* LS: when it last became busy here (under track_mu) */
	struct be *be;           /* BE */
};
static struct tgpu gpus[CARVE_GPUS];
static int ngpus;
static int cls;                      /* CARVE_CLASS_LS or _BE while tide is on */
static int capturing;                /* captures under way in the process */

/* the GPU of this thread's launch, set by the wrapper before it (tide's
 * GPU index, CARVE_GPU_NONE: none in tide) */
static __thread __attribute__((tls_model("initial-exec"))) int launch_gpu;
static __thread __attribute__((tls_model("initial-exec"))) CUcontext launch_ctx; /* and its context */

/* the driver's functions the shim calls itself */
static CUresult (*ctx_set)(CUcontext);
static CUresult (*stream_query)(CUstream);
static CUresult (*event_create)(CUevent *, unsigned);
static CUresult (*event_record)(CUevent, CUstream);
static CUresult (*event_query)(CUevent);
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

/* set_busy says in our slot on GPU g and in its node's busy bits whether
 * we are. */
static void set_busy(int g, int b)
{
	struct tgpu *G = &gpus[g];
	uint32_t bit = 1u << (G->slot - G->node->slots);
	__atomic_store_n(&G->slot->busy, (uint32_t)b, __ATOMIC_SEQ_CST);
	if (b)
		__atomic_or_fetch(&G->node->busy, bit, __ATOMIC_RELEASE);
	else
		__atomic_and_fetch(&G->node->busy, ~bit, __ATOMIC_RELEASE);
}

static int is_busy(int g)
{
	return gpus[g].slot && __atomic_load_n(&gpus[g].slot->busy, __ATOMIC_SEQ_CST);
}

static int any_busy(void)
{
	for (int g = 0; g < ngpus; g++)
		if (is_busy(g))
			return 1;
	return 0;
}

/* beat renews our heartbeat on GPU g, and its node's latest. */
static void beat(int g, uint64_t now)
{
	__atomic_store_n(&gpus[g].slot->beat_ns, now, __ATOMIC_RELEASE);
	__atomic_store_n(&gpus[g].node->beat_ns, now, __ATOMIC_RELAXED);
}

/* become_busy marks the tenant busy on GPU g, unless it is (a request's
 * first launch there; the poller may have found it idle just before). */
static void become_busy(int g)
{
	struct tgpu *G = &gpus[g];
	pthread_mutex_lock(&track_mu);
	if (!__atomic_load_n(&G->slot->busy, __ATOMIC_SEQ_CST)) {
		G->busy_since = carve_mono_ns();
		__atomic_store_n(&G->slot->busy_since_ns, G->busy_since, __ATOMIC_RELAXED);
		beat(g, G->busy_since);
		__atomic_add_fetch(&G->slot->requests, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&carve_block->requests, 1, __ATOMIC_RELAXED);
		set_busy(g, 1);
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

/* ls_launch counts a launch in its stream on GPU g (of context ctx), then
 * makes sure the tenant is busy there. The count comes first: a poller
 * that finds the tenant idle looks at the counts again after saying so
 * (poller), so one of the two sees the other. */
static void ls_launch(int g, CUstream s, CUcontext ctx)
{
	if (s == CU_STREAM_PER_THREAD)
		s = 0; /* counted with the legacy stream, which waits for it */
	counted = NULL;
	if (__atomic_load_n(&capturing, __ATOMIC_RELAXED))
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
	if (!__atomic_load_n(&gpus[g].slot->busy, __ATOMIC_SEQ_CST))
		become_busy(g);
}

static void ls_submitted(void)
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
	for (int g = 0; g < ngpus; g++)
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

static void *poller(void *arg)
{
	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0); /* 1 us: naps as short as asked */
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
		for (int g = 0; g < ngpus; g++)
			if (is_busy(g))
				beat(g, now);
		if (__atomic_load_n(&capturing, __ATOMIC_RELAXED) == 0) {
			int done[CARVE_GPUS];
			poll_streams(done);
			for (int g = 0; g < ngpus; g++) {
				if (!done[g] || !is_busy(g))
					continue;
				set_busy(g, 0);
				if (launched_since(g)) { /* it went on: still busy */
					set_busy(g, 1);
					continue;
				}
				uint64_t d = now - gpus[g].busy_since;
				__atomic_add_fetch(&gpus[g].slot->busy_ns, d, __ATOMIC_RELAXED);
				__atomic_add_fetch(&carve_block->busy_ns, d, __ATOMIC_RELAXED);
			}
			if (!any_busy()) {
				__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
				continue;
			}
		}
		pthread_mutex_unlock(&track_mu);
		carve_nap_ns(10000);
		pthread_mutex_lock(&track_mu);
	}
	return NULL;
}

void carve_capture(CUstream s, int begin)
{
	CUcontext ctx = NULL;
	int g = cls == CARVE_CLASS_LS ? carve_launch_gpu(NULL, &ctx) : CARVE_GPU_NONE;
	pthread_mutex_lock(&track_mu);
	if (begin) {
		capturing++;
	} else if (capturing > 0) {
		capturing--;
	}
	if (s == CU_STREAM_PER_THREAD)
		s = 0;
	struct tracked *t = g >= 0 && gpus[g].slot ? track(s, ctx, g) : NULL;
	if (t)
		__atomic_store_n(&t->capturing, begin, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&track_mu);
}

/* --- BE: the gate, the share, the launches in flight ---------------------- */

/* While the queue is bounded, an event is recorded after every MARK-th BE
 * launch, or more often for a bound of fewer than 2 x MARK launches (half
 * the bound: a queue waited on never drains for want of an event), and
 * after the first launch into an empty queue. Recording one costs about
 * 2.5 us, too much on every kernel of a framework that launches many small
 * ones. The launches in flight are counted by launch number, to within
 * the events' spacing. */
#define RING 64
#define MARK 4
/* While the queue is bounded, the events are looked at before a launch
 * that would fill it, or REAP_NS after they last were; while it is not, an
 * event every QUIET_NS keeps the counts roughly current (asking the driver
 * on every launch costs more than the rest of the shim). */
#define REAP_NS 20000
#define QUIET_NS 1000000

/* A BE tenant's gate on one GPU: its launches there, their events and
 * kernels' time, and its share's bucket, under mu. */
struct be {
	pthread_mutex_t mu;
	struct {
		CUevent ev;
		uint64_t count; /* launches made when it was */
		/* after one launch into an empty queue while it was bounded: its
		 * kernel began between these (0: not so) */
		uint64_t began, began_by;
		int queued; /* recorded before a look found the one before it not done */
	} ring[RING];
	unsigned head, tail;       /* events recorded; events seen done */
	uint64_t launched, done_n; /* BE launches made; known done */
	CUstream last_stream;      /* of the last BE launch */
	int bounded;               /* the queue is bounded now */
	uint64_t every;            /* launches between events while it is */
	uint64_t reaped_at, marked_n;
	uint64_t quiet_at;         /* the last look while not bounded (coarse clock) */
	int mark_due;              /* an event is due with the next launch while not */
	/* the events below this one that a look found recorded behind one not
	 * done are marked queued: their kernels ran from its completion on */
	unsigned queued_to;
	int64_t tokens_ns;         /* the share's bucket; below 0 after a long kernel */
	/* when the bucket was last filled; a kernel's time (EWMA), until
	 * measured a cautious 1 ms, so that a first burst does not fill the
	 * queue unseen */
	uint64_t tokens_at, kernel_ns;
	int measured;              /* kernel_ns has been measured (to within an eighth) */
	/* until it is: the least and the most a kernel can take by every run
	 * timed so far (or since they disagreed) */
	uint64_t least_ns, most_ns;
	uint64_t held_since;
	/* the point the kernels run since are timed from: a completion, or the
	 * beginning of a kernel launched into an empty queue, known to have
	 * happened between anchor_lo and anchor_hi, after anchor_n launches */
	uint64_t anchor_lo, anchor_hi, anchor_n;
	int anchored;
};
static struct be bes[CARVE_GPUS];

/* while the queue is bounded, a time before this thread's launch began,
 * until it is counted (0: not read) */
static __thread __attribute__((tls_model("initial-exec"))) uint64_t launch_at;

/* mark records an event after the launches made so far (under b->mu),
 * after one launch into an empty queue whose kernel began between began
 * and began_by if they are not 0. */
static void mark(struct be *b, CUstream s, uint64_t began, uint64_t began_by)
{
	if (b->head - b->tail >= RING)
		return;
	CUevent *ev = &b->ring[b->head % RING].ev;
	if (!*ev && event_create(ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
		*ev = NULL;
	if (*ev && event_record(*ev, s) == CUDA_SUCCESS) {
		b->ring[b->head % RING].count = b->marked_n = b->launched;
		b->ring[b->head % RING].began = began;
		b->ring[b->head % RING].began_by = began_by;
		b->ring[b->head % RING].queued = 0;
		b->head++;
	}
}

/* be_wait is one step of a BE wait that began at since. */
static __thread __attribute__((tls_model("initial-exec"))) int slack_set;
static void be_wait(uint64_t since)
{
	if (carve_mono_ns() - since < 100000) {
		carve_yield();
		return;
	}
	if (!slack_set) {
		prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
		slack_set = 1;
	}
	carve_nap_ns(20000);
}

/* the mask this thread's launch is to have, set by the wrapper for the
 * callback the driver makes inside the launch */
static __thread __attribute__((tls_model("initial-exec"))) int tide_narrow;

/* lease_ok says whether a heartbeat at beat is younger than the lease of
 * node n (signed: a beat written after now was read is fresh, not 584
 * years old). */
static int lease_ok(const struct carve_node *n, uint64_t beat, uint64_t now)
{
	uint64_t lease = n->lease_ns ? n->lease_ns : CARVE_NODE_LEASE_NS;
	return (int64_t)(now - beat) < (int64_t)lease;
}

/* ls_busy returns how many LS tenants have work in flight on GPU g now
 * (with a fresh heartbeat), ORing their reserved TPCs (enable bits) into
 * out if given, and counting in *timing (if given) those that recorded a
 * timing event in the last CARVE_NODE_TIMING_NS. With none, *newest (if
 * given) gets the latest heartbeat of any (0: none has been busy); it is
 * read only then. */
static int ls_busy(int g, uint32_t out[4], uint64_t *newest, int *timing)
{
	struct carve_node *node = gpus[g].node;
	uint32_t bits = __atomic_load_n(&node->busy, __ATOMIC_ACQUIRE);
	int busy = 0;
	if (bits) {
		uint64_t now = carve_mono_ns();
		for (; bits; bits &= bits - 1) {
			struct carve_node_slot *s = &node->slots[__builtin_ctz(bits)];
			if (s == gpus[g].slot || !__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) ||
			    !lease_ok(node, __atomic_load_n(&s->beat_ns, __ATOMIC_ACQUIRE), now))
				continue;
			busy++;
			uint64_t timed = timing ? __atomic_load_n(&node->timing_ns[s - node->slots], __ATOMIC_ACQUIRE) : 0;
			if (timed && (int64_t)(now - timed) < (int64_t)CARVE_NODE_TIMING_NS)
				(*timing)++;
			if (out)
				for (int w = 0; w < 4; w++)
					out[w] |= __atomic_load_n(&s->reserved[w], __ATOMIC_RELAXED);
		}
	}
	if (!busy && newest)
		*newest = __atomic_load_n(&node->beat_ns, __ATOMIC_RELAXED);
	return busy;
}

/* ls_active: is LS work on a GPU active at time t, busy LS tenants
 * there, or newest (ls_busy's, while none is) in the last
 * CARVE_NODE_QUIET_NS? What bounds a BE's queue, and what slicing cuts
 * for. */
static int ls_active(int busy, uint64_t newest, uint64_t t)
{
	return busy || (newest && (int64_t)(t - newest) < (int64_t)CARVE_NODE_QUIET_NS);
}

/* ls_off is what an LS tenant's launches on GPU g keep off: the TPCs
 * other LS tenants reserved there and the fixed ones, as enable bits. It
 * is worked out again only when the GPU or its node's gen has moved (per
 * thread: launches of many threads share nothing here). */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	uint32_t gen, valid;
	int gpu;
	uint32_t off[4];
} ls_off_cache;

static void ls_off(int g, uint32_t off[4])
{
	struct carve_node *node = gpus[g].node;
	uint32_t gen = __atomic_load_n(&node->gen, __ATOMIC_ACQUIRE);
	if (!ls_off_cache.valid || ls_off_cache.gen != gen || ls_off_cache.gpu != g) {
		uint32_t m[4];
		for (int w = 0; w < 4; w++)
			m[w] = __atomic_load_n(&node->fixed[w], __ATOMIC_RELAXED);
		for (int i = 0; i < CARVE_NODE_SLOTS; i++) {
			struct carve_node_slot *s = &node->slots[i];
			if (s == gpus[g].slot || !__atomic_load_n(&s->pid, __ATOMIC_ACQUIRE))
				continue;
			for (int w = 0; w < 4; w++)
				m[w] |= __atomic_load_n(&s->reserved[w], __ATOMIC_RELAXED);
		}
		memcpy(ls_off_cache.off, m, sizeof m);
		ls_off_cache.gen = gen;
		ls_off_cache.gpu = g;
		ls_off_cache.valid = 1;
	}
	memcpy(off, ls_off_cache.off, sizeof ls_off_cache.off);
}

/* inflight_all is what the block says is in flight: the BE's launches on
 * all its GPUs. */
static uint32_t inflight_all(void)
{
	uint64_t n = 0;
	for (int g = 0; g < ngpus; g++)
		if (gpus[g].be)
			n += __atomic_load_n(&bes[g].launched, __ATOMIC_RELAXED) - __atomic_load_n(&bes[g].done_n, __ATOMIC_RELAXED);
	return (uint32_t)n;
}

/* reap counts the BE's launches on a GPU known done (under b->mu), and times its
 * kernels. A completion is known only to have happened since the events
 * were last looked at: by a thread that was held, or not run, that can be
 * long before it was seen. So kernels are timed in runs that ran back to
 * back, from an anchor known closely: a completion seen soon after the look
 * before it, or the beginning of a kernel launched into an empty queue
 * (during its launch). A run goes on while each event was recorded before
 * a look found the one before it not done (its kernels queued behind), and
 * the n kernels since the anchor took from when it was seen (the launch's
 * end) to when the last was: wrong by at most the wider of the two ends'
 * doubt, over n. That is counted (while the queue is bounded) if within an
 * eighth: a late end is spread over a longer run, and a wait, when the
 * queue drained, ends the run. The share is spent at this time: a wait
 * taken for kernel time would shrink it, and a kernel timed from a start
 * seen late would grow it. Until a time is known that closely (a thread
 * seldom run may see every completion late), the middle of what all the
 * runs timed so far allow stands in for the guess, once that is known to
 * within a third. The anchor moves to each completion seen as closely, or
 * within an eighth of a kernel, so that the time follows the kernels of
 * late. */
static void reap(struct be *b, int timed)
{
	uint64_t prev = b->reaped_at;
	b->reaped_at = carve_mono_ns();
	while (b->tail != b->head && event_query(b->ring[b->tail % RING].ev) != CUDA_ERROR_NOT_READY) {
		uint64_t now = carve_mono_ns(), count = b->ring[b->tail % RING].count;
		if (!b->ring[b->tail % RING].queued) { /* not behind the last: a new run */
			b->anchored = b->ring[b->tail % RING].began != 0;
			b->anchor_lo = b->ring[b->tail % RING].began;
			b->anchor_hi = b->ring[b->tail % RING].began_by;
			b->anchor_n = b->done_n;
		}
		if (b->anchored && timed && count > b->anchor_n && now > b->anchor_hi) {
			uint64_t n = count - b->anchor_n, m = (now - b->anchor_hi) / n;
			uint64_t doubt = now - prev > b->anchor_hi - b->anchor_lo ? now - prev : b->anchor_hi - b->anchor_lo;
			/* between the earliest end after the latest start, and the latest after the earliest */
			uint64_t least = (prev > b->anchor_hi ? prev - b->anchor_hi : 0) / n, most = (now - b->anchor_lo) / n;
			if (m > 0 && 8 * (doubt / n) <= m) {
				/* the first replaces the guess */
				b->kernel_ns = b->measured ? (3 * b->kernel_ns + m) / 4 : m;
				b->measured = 1;
			} else if (!b->measured) {
				if (least > b->most_ns || most < b->least_ns) /* they disagree: the kernels changed */
					b->least_ns = 0, b->most_ns = UINT64_MAX;
				b->least_ns = least > b->least_ns ? least : b->least_ns;
				b->most_ns = most < b->most_ns ? most : b->most_ns;
				if (2 * (b->most_ns - b->least_ns) <= b->most_ns + b->least_ns) /* within a third */
					b->kernel_ns = (b->least_ns + b->most_ns) / 2;
			}
		}
		if (!b->anchored || now - prev <= b->anchor_hi - b->anchor_lo || 8 * (now - prev) <= b->kernel_ns) {
			b->anchored = 1;
			b->anchor_lo = prev;
			b->anchor_hi = now;
			b->anchor_n = count;
		}
		b->done_n = count;
		b->tail++;
	}
	if (b->tail != b->head) /* those recorded behind the first not done queue behind it */
		for (unsigned i = (int)(b->queued_to - b->tail) > 0 ? b->queued_to : b->tail + 1; i != b->head; i++)
			b->ring[i % RING].queued = 1;
	b->queued_to = b->head;
	__atomic_store_n(&carve_block->inflight, inflight_all(), __ATOMIC_RELAXED);
	__atomic_store_n(&carve_block->kernel_us, (uint32_t)(b->kernel_ns / 1000), __ATOMIC_RELAXED);
}

/* bound is the bounds in launches, by the kernels' measured time (0: none). */
static uint64_t bound(const struct be *b, uint32_t k, uint32_t queue_us)
{
	uint64_t n = k, q = (uint64_t)queue_us * 1000 / (b->kernel_ns ? b->kernel_ns : 1);
	if (queue_us && (!n || q < n))
		n = q ? q : 1;
	return n;
}

/* queue_full says whether one more launch would exceed the bounds. */
static int queue_full(const struct be *b, uint32_t k, uint32_t queue_us)
{
	uint64_t n = b->launched - b->done_n;
	if (b->head - b->tail >= RING || (k && n >= k))
		return 1;
	return queue_us && n > 0 && n * b->kernel_ns > (uint64_t)queue_us * 1000;
}

/* narrow computes into m the mask of a BE launch on GPU g made while LS
 * work is in flight there, from its partition's mask: its floor there, if
 * it has one, within the partition; else the partition off the busy LS
 * tenants' reserved TPCs.
 * Returns how many live TPCs m enables: a launch is narrowed only onto
 * CARVE_NODE_NARROW_MIN or more, or kernels sized for the whole GPU may
 * never finish. */
static int narrow(int g, const uint32_t mask[4], const uint32_t live[4], uint32_t m[4])
{
	uint32_t floor[4], off[4] = {0, 0, 0, 0}, any = 0;
	for (int w = 0; w < 4; w++)
		any |= floor[w] = __atomic_load_n(&CARVE_PART(carve_block, g, floor)[w], __ATOMIC_RELAXED);
	if (any)
		for (int w = 0; w < 4; w++)
			off[w] = ~floor[w];
	else
		ls_busy(g, off, NULL, NULL);
	int n = 0;
	for (int w = 0; w < 4; w++) {
		m[w] = mask[w] | off[w];
		n += __builtin_popcount(~m[w] & live[w]);
	}
	return n;
}

/* narrow_ok says whether a launch on GPU g narrowed now keeps enough
 * TPCs. */
static int narrow_ok(int g)
{
	uint32_t mask[4], live[4], m[4];
	uint64_t gen;
	if (!carve_current_mask(g, mask, &gen))
		return 0;
	for (int w = 0; w < 4; w++)
		live[w] = __atomic_load_n(&CARVE_PART(carve_block, g, live)[w], __ATOMIC_RELAXED);
	return narrow(g, mask, live, m) >= CARVE_NODE_NARROW_MIN;
}

/* may_run_narrow spends the share's tokens on a launch while LS work is in
 * flight (under b->mu): the bucket fills at share_ppm of the time, up to
 * share x epoch, and a launch costs the BE's kernel time, going into debt
 * for a kernel longer than a full bucket, so that over time the BE runs for
 * about its share while LS work is in flight. While an LS tenant times its
 * work (timing), the bucket is not spent. */
static int may_run_narrow(struct be *b, uint64_t now, uint32_t share_ppm, uint64_t epoch, int timing)
{
	int64_t cap = (int64_t)(epoch * share_ppm / 1000000);
	b->tokens_ns += (int64_t)((now - b->tokens_at) * share_ppm / 1000000);
	b->tokens_at = now;
	if (b->tokens_ns > cap)
		b->tokens_ns = cap;
	if (share_ppm == 0 || timing) /* no share: a launch after an epoch held */
		return b->held_since && now - b->held_since >= epoch;
	if (share_ppm >= 1000000) /* all the time: never held */
		return 1;
	int64_t cost = (int64_t)b->kernel_ns;
	if (b->tokens_ns < (cost < cap ? cost : cap))
		return 0;
	b->tokens_ns -= cost;
	return 1;
}

/* be_launch_before holds a BE launch on GPU g while LS work is in flight
 * there (but for its share), and while its queue there is full. */
static void be_launch_before(int g)
{
	struct be *b = gpus[g].be;
	uint32_t k = __atomic_load_n(&carve_block->inflight_max, __ATOMIC_RELAXED);
	uint32_t queue_us = __atomic_load_n(&carve_block->queue_us, __ATOMIC_RELAXED);
	uint32_t share = __atomic_load_n(&carve_block->share_ppm, __ATOMIC_RELAXED);
	uint64_t epoch = __atomic_load_n(&carve_block->epoch_ns, __ATOMIC_RELAXED);
	if (!epoch)
		epoch = 10000000;
	uint64_t start = 0, now = 0; /* read once an LS tenant is found busy */
	int waited = 0;
	tide_narrow = 0;
	uint64_t newest = 0; /* the latest LS heartbeat, while none is busy */
	int busy, timing, queued;
	pthread_mutex_lock(&b->mu);
gate:
	queued = 0;
	for (;;) {
		timing = 0;
		if (!(busy = ls_busy(g, NULL, &newest, &timing))) {
			b->held_since = 0;
			break;
		}
		if (!start)
			start = now = carve_mono_ns();
		/* too few TPCs to narrow onto: no share, and the launch that
		 * keeps it from starving runs on its whole partition */
		int ok = narrow_ok(g);
		if (may_run_narrow(b, now, ok ? share : 0, epoch, timing)) {
			tide_narrow = ok;
			b->held_since = 0;
			__atomic_add_fetch(&carve_block->narrow_launches, 1, __ATOMIC_RELAXED);
			break;
		}
		if (!b->held_since)
			b->held_since = now;
		if (!waited) {
			waited = 1;
			__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_HELD, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&b->mu);
		be_wait(start);
		now = carve_mono_ns();
		pthread_mutex_lock(&b->mu);
	}
	/* a bounded queue (unless no LS tenant has been busy for
	 * CARVE_NODE_QUIET_NS): wait for the oldest. The quiet case, the
	 * common one, reads only the coarse clock. */
	if (event_query) {
		uint64_t t = start ? carve_mono_ns() : carve_coarse_ns();
		b->bounded = (k || queue_us) && ls_active(busy, newest, t);
		if (!b->bounded) {
			if ((int64_t)(t - b->quiet_at) >= (int64_t)QUIET_NS) {
				b->quiet_at = t;
				reap(b, 0);
				b->mark_due = 1;
			}
		} else {
			uint64_t since = start ? t : carve_mono_ns();
			launch_at = since; /* the launch begins no sooner */
			uint64_t n = bound(b, k, queue_us);
			b->every = !n || n / 2 >= MARK ? MARK : n / 2 ? n / 2 : 1;
			if (queue_full(b, k, queue_us) || since - b->reaped_at >= REAP_NS) {
				for (reap(b, 1); queue_full(b, k, queue_us); reap(b, 1)) {
					/* an event for the launches waited on, unless those
					 * recorded will leave room when done */
					if (b->head == b->tail ? b->launched != b->done_n : b->launched - b->ring[(b->head - 1) % RING].count >= n)
						mark(b, b->last_stream, 0, 0);
					pthread_mutex_unlock(&b->mu);
					be_wait(since);
					pthread_mutex_lock(&b->mu);
					queued = 1;
				}
			}
		}
	}
	/* a launch that found no LS work, then waited for room in its queue,
	 * is held again if LS work came meanwhile: else it would go beside it
	 * (a piece of a sliced kernel, slice.c, would make an LS request wait
	 * for two pieces, not one). One that was held before (the LS work
	 * ended while it waited) is held as from its first hold, from which
	 * its held time counts (start): it goes an epoch after that with no
	 * share, not an epoch after it is held again. */
	if (queued && !busy && ls_busy(g, NULL, NULL, NULL)) {
		if (start) {
			if (!b->held_since || (int64_t)(b->held_since - start) > 0)
				b->held_since = start;
			now = carve_mono_ns(); /* last read before the queue's wait */
		}
		goto gate;
	}
	if (!b->bounded)
		launch_at = 0;
	pthread_mutex_unlock(&b->mu);
	if (waited) {
		__atomic_add_fetch(&carve_block->held_ns, carve_mono_ns() - start, __ATOMIC_RELAXED);
		__atomic_add_fetch(&carve_block->held_launches, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
	}
}

static void be_launch_after(int g, CUstream s)
{
	struct be *b = gpus[g].be;
	if (!event_record || __atomic_load_n(&capturing, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&b->mu);
	int empty = b->launched == b->done_n;
	b->launched++;
	b->last_stream = s;
	if (b->bounded ? empty || b->launched - b->marked_n >= b->every : b->mark_due) {
		/* a kernel launched into an empty queue began during its launch */
		int began = b->bounded && empty && launch_at;
		mark(b, s, began ? launch_at : 0, began ? carve_mono_ns() : 0);
		b->mark_due = 0;
	}
	pthread_mutex_unlock(&b->mu);
	__atomic_store_n(&carve_block->inflight, inflight_all(), __ATOMIC_RELAXED);
}

int carve_tide_capturing(void)
{
	return __atomic_load_n(&capturing, __ATOMIC_RELAXED);
}

int carve_tide_ls_active(CUcontext *ctx)
{
	*ctx = NULL;
	if (cls != CARVE_CLASS_BE || launch_gpu < 0 || !gpus[launch_gpu].be)
		return -1;
	*ctx = launch_ctx;
	uint64_t newest = 0;
	int busy = ls_busy(launch_gpu, NULL, &newest, NULL);
	return ls_active(busy, newest, busy ? 0 : carve_coarse_ns());
}

/* --- LS: timing its own work --------------------------------------------- */

int carve_tide_ls(void)
{
	return cls == CARVE_CLASS_LS;
}

/* carve_tide_timing stamps our slot on the GPU of the current context: we
 * just recorded an event made for timing (timing.c). */
void carve_tide_timing(void)
{
	if (cls != CARVE_CLASS_LS)
		return;
	int g = carve_launch_gpu(NULL, NULL);
	if (g < 0 || !gpus[g].slot)
		return;
	struct carve_node *node = gpus[g].node;
	__atomic_store_n(&node->timing_ns[gpus[g].slot - node->slots], carve_mono_ns(), __ATOMIC_RELEASE);
}

/* --- what the wrappers and the callback call ------------------------------ */

void carve_launch_before(CUstream s)
{
	CUcontext ctx = NULL;
	int g = carve_launch_begin(cls ? &ctx : NULL);
	if (!cls)
		return;
	if (g < 0 || !gpus[g].node) {
		launch_gpu = CARVE_GPU_NONE; /* a GPU outside tide */
		return;
	}
	launch_gpu = g;
	launch_ctx = ctx;
	if (cls == CARVE_CLASS_LS)
		ls_launch(g, s, ctx);
	else
		be_launch_before(g);
}

void carve_launch_after(CUstream s, CUresult r)
{
	carve_launch_end();
	if (!cls)
		return;
	if (cls == CARVE_CLASS_LS)
		ls_submitted();
	else if (launch_gpu >= 0 && r == CUDA_SUCCESS)
		be_launch_after(launch_gpu, s);
}

void carve_tide_mask(int g, uint32_t mask[CARVE_MASK_WORDS], const uint32_t live[CARVE_MASK_WORDS])
{
	if (!cls || g < 0 || g >= ngpus || !gpus[g].node)
		return;
	uint32_t off[4] = {0, 0, 0, 0}, m[4];
	if (cls == CARVE_CLASS_LS) {
		if ((carve_block->flags & CARVE_FLAG_LS_OWN) || !gpus[g].slot)
			return;
		/* its own TPCs and every live one that no other LS tenant
		 * reserved and no partition outside tide holds */
		ls_off(g, off);
		for (int w = 0; w < 4; w++) {
			uint32_t own = ~mask[w] & live[w];
			m[w] = (off[w] & ~own) | ~live[w];
		}
	} else if (!tide_narrow || launch_gpu != g || narrow(g, mask, live, m) < CARVE_NODE_NARROW_MIN) {
		return; /* BE, not narrowed (or too few TPCs left: the busy LS
			 * tenants may have changed since be_launch_before looked) */
	}
	if (carve_mask_enables_live(m, live))
		memcpy(mask, m, sizeof m);
}

/* --- joining the nodes ------------------------------------------------------ */

/* map_node maps the node block name in dir for GPU g. */
static struct carve_node *map_node(int g, const char *dir, const char *name)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return NULL;
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *p = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size == CARVE_NODE_SIZE)
		p = mmap(NULL, CARVE_NODE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	struct carve_node *n = p;
	if (n->magic != CARVE_NODE_MAGIC || n->version != CARVE_NODE_VERSION) {
		munmap(p, CARVE_NODE_SIZE);
		close(fd);
		return NULL;
	}
	gpus[g].fd = fd;
	return n;
}

/* unmap_node takes GPU g out of tide. */
static void unmap_node(int g)
{
	munmap(gpus[g].node, CARVE_NODE_SIZE);
	close(gpus[g].fd);
	gpus[g].node = NULL;
	gpus[g].slot = NULL;
}

/* lock_slot takes slot i's lock of GPU g's node (see carve_node.h), or
 * lets go of it, without waiting: 1 if done, 0 if a live process holds it. */
static int lock_slot(int g, int i, short type)
{
	struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = CARVE_NODE_SLOT_LOCK(i), .l_len = 1};
	return fcntl(gpus[g].fd, F_SETLK, &l) == 0;
}

/* take_slot claims a slot of GPU g's node whose lock no live process
 * holds, preferring free ones; the pid is written only once the lock is
 * ours. */
static struct carve_node_slot *take_slot(int g)
{
	struct carve_node *node = gpus[g].node;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < CARVE_NODE_SLOTS; i++) {
			struct carve_node_slot *s = &node->slots[i];
			uint32_t p = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);
			if ((pass == 0) != (p == 0) || !lock_slot(g, i, F_WRLCK))
				continue;
			__atomic_store_n(&s->busy, 0, __ATOMIC_RELAXED);
			__atomic_and_fetch(&node->busy, ~(1u << i), __ATOMIC_RELEASE);
			__atomic_store_n(&node->timing_ns[i], 0, __ATOMIC_RELAXED);
			s->start_ticks = carve_block->start_ticks;
			s->busy_ns = s->requests = 0;
			__atomic_store_n(&s->pid, (uint32_t)getpid(), __ATOMIC_RELEASE);
			return s;
		}
	}
	return NULL;
}

/* leave_slot gives our slot of GPU g's node up: no BE waits on a tenant
 * that has gone. */
static void leave_slot(int g, int unlock)
{
	struct tgpu *G = &gpus[g];
	set_busy(g, 0);
	__atomic_store_n(&G->slot->pid, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&G->node->gen, 1, __ATOMIC_RELEASE);
	if (unlock)
		lock_slot(g, (int)(G->slot - G->node->slots), F_UNLCK);
}

/* node_name copies the node block name of the tenant's GPU g. */
static void node_name(int g, char out[64])
{
	const char *n = g == 0 ? (const char *)carve_block->node : (const char *)carve_block->more[g - 1].node;
	size_t cap = g == 0 ? sizeof carve_block->node : sizeof carve_block->more[0].node;
	memset(out, 0, 64);
	memcpy(out, n, cap < 64 ? cap : 64);
	out[63] = 0;
}

void carve_tide_init(void *cuda, const char *dir)
{
	struct carve_ctl *c = carve_block;
	uint32_t k = c->tenant_class;
	if ((k != CARVE_CLASS_LS && k != CARVE_CLASS_BE) || !c->node[0])
		return;
	ctx_set = carve_real_dlsym(cuda, "cuCtxSetCurrent");
	stream_query = carve_real_dlsym(cuda, "cuStreamQuery");
	event_create = carve_real_dlsym(cuda, "cuEventCreate");
	event_record = carve_real_dlsym(cuda, "cuEventRecord");
	event_query = carve_real_dlsym(cuda, "cuEventQuery");
	exchange_mode = carve_real_dlsym(cuda, "cuThreadExchangeStreamCaptureMode");
	if (k == CARVE_CLASS_LS && (!ctx_set || !stream_query)) {
		carve_say("the driver lacks stream queries: running as an ordinary partitioned tenant");
		return;
	}
	ngpus = carve_gpus();
	int in = 0;
	for (int g = 0; g < ngpus; g++) {
		char name[64];
		node_name(g, name);
		if (!name[0])
			continue;
		if (!(gpus[g].node = map_node(g, dir, name))) {
			carve_say("node block %s/%s cannot be mapped: running as an ordinary partitioned tenant%s", dir, name,
				  ngpus > 1 ? " on its GPU" : "");
			continue;
		}
		if (k == CARVE_CLASS_LS) {
			if (!(gpus[g].slot = take_slot(g))) {
				carve_say("no LS slot in the node block %s: running as an ordinary partitioned tenant%s", name,
					  ngpus > 1 ? " on its GPU" : "");
				unmap_node(g);
				continue;
			}
			for (int w = 0; w < 4; w++)
				__atomic_store_n(&gpus[g].slot->reserved[w],
						 ~CARVE_PART(c, g, mask)[w] & CARVE_PART(c, g, live)[w], __ATOMIC_RELAXED);
			__atomic_add_fetch(&gpus[g].node->gen, 1, __ATOMIC_RELEASE);
		} else {
			struct be *b = gpus[g].be = &bes[g];
			pthread_mutex_init(&b->mu, NULL);
			b->every = MARK;
			b->kernel_ns = 1000000;
			b->most_ns = UINT64_MAX;
			b->tokens_at = carve_mono_ns();
		}
		CARVE_DEBUG("tide: %s tenant on node %s", k == CARVE_CLASS_LS ? "LS" : "BE", name);
		in++;
	}
	if (!in)
		return;
	if (k == CARVE_CLASS_LS) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		carve_thread_wakes(); /* the poller runs until it first waits */
		if (pthread_create(&t, &a, poller, NULL) != 0) {
			carve_thread_parks();
			carve_say("the LS poller thread could not start: running as an ordinary partitioned tenant");
			for (int g = 0; g < ngpus; g++) {
				if (gpus[g].slot) {
					leave_slot(g, 1);
					unmap_node(g);
				}
			}
			return;
		}
	}
	__atomic_store_n(&c->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
	cls = (int)k;
}

__attribute__((destructor)) static void carve_tide_fini(void)
{
	for (int g = 0; g < ngpus; g++)
		if (gpus[g].slot)
			leave_slot(g, 0);
}
