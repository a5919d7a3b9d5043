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
 * rate), and it runs off the LS tenants' reserved TPCs, or on its floor if
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

static struct carve_node *node;
static int node_fd = -1;             /* kept open: it carries our slot's lock */
static int cls;                      /* CARVE_CLASS_LS or _BE while tide is on */
static struct carve_node_slot *slot; /* LS: ours */
static int capturing;                /* captures under way in the process */

/* the driver's functions the shim calls itself */
static CUresult (*ctx_get)(CUcontext *);
static CUresult (*ctx_set)(CUcontext);
static CUresult (*stream_query)(CUstream);
static CUresult (*event_create)(CUevent *, unsigned);
static CUresult (*event_record)(CUevent, CUstream);
static CUresult (*event_query)(CUevent);
static CUresult (*exchange_mode)(int *);

/* --- LS: streams with work, and the poller -------------------------------- */

#define STREAMS 128
struct tracked {
	CUstream s;   /* set before the entry is published, never changed */
	CUcontext ctx;
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
static uint64_t busy_since;
static int poller_parked; /* the poller waits on track_cv for the tenant to be busy */

static struct tracked *find(CUstream s)
{
	int n = __atomic_load_n(&nstreams, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (streams[i].s == s)
			return &streams[i];
	return NULL;
}

/* track finds or adds s (under track_mu). */
static struct tracked *track(CUstream s)
{
	struct tracked *t = find(s);
	if (t || nstreams == STREAMS)
		return t;
	t = &streams[nstreams];
	memset(t, 0, sizeof *t);
	t->s = s;
	if (ctx_get)
		ctx_get(&t->ctx);
	__atomic_store_n(&nstreams, nstreams + 1, __ATOMIC_RELEASE);
	return t;
}

/* set_busy says in our slot and in the node's busy bits whether we are. */
static void set_busy(int b)
{
	uint32_t bit = 1u << (slot - node->slots);
	__atomic_store_n(&slot->busy, (uint32_t)b, __ATOMIC_SEQ_CST);
	if (b)
		__atomic_or_fetch(&node->busy, bit, __ATOMIC_RELEASE);
	else
		__atomic_and_fetch(&node->busy, ~bit, __ATOMIC_RELEASE);
}

/* beat renews our heartbeat, and the node's latest. */
static void beat(uint64_t now)
{
	__atomic_store_n(&slot->beat_ns, now, __ATOMIC_RELEASE);
	__atomic_store_n(&node->beat_ns, now, __ATOMIC_RELAXED);
}

/* become_busy marks the tenant busy, unless it is (a request's first
 * launch; the poller may have found it idle just before). */
static void become_busy(void)
{
	pthread_mutex_lock(&track_mu);
	if (!__atomic_load_n(&slot->busy, __ATOMIC_SEQ_CST)) {
		busy_since = carve_mono_ns();
		__atomic_store_n(&slot->busy_since_ns, busy_since, __ATOMIC_RELAXED);
		beat(busy_since);
		__atomic_add_fetch(&slot->requests, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&carve_block->requests, 1, __ATOMIC_RELAXED);
		set_busy(1);
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

/* ls_launch counts a launch in its stream, then makes sure the tenant is
 * busy. The count comes first: a poller that finds the tenant idle looks
 * at the counts again after saying so (poller), so one of the two sees the
 * other. */
static void ls_launch(CUstream s)
{
	if (s == CU_STREAM_PER_THREAD)
		s = 0; /* counted with the legacy stream, which waits for it */
	counted = NULL;
	if (__atomic_load_n(&capturing, __ATOMIC_RELAXED))
		return;
	struct tracked *t = find(s);
	if (!t) {
		pthread_mutex_lock(&track_mu);
		t = track(s);
		pthread_mutex_unlock(&track_mu);
		if (!t)
			return;
	}
	if (__atomic_load_n(&t->capturing, __ATOMIC_RELAXED))
		return;
	__atomic_add_fetch(&t->launched, 1, __ATOMIC_SEQ_CST);
	counted = t;
	if (!__atomic_load_n(&slot->busy, __ATOMIC_SEQ_CST))
		become_busy();
}

static void ls_submitted(void)
{
	if (counted)
		__atomic_add_fetch(&counted->submitted, 1, __ATOMIC_RELEASE);
	counted = NULL;
}

/* poll asks the driver about each stream with work (under track_mu) and
 * returns whether all of it is done. A launch not yet submitted is not,
 * and a stream launched into since the last poll is not asked about: the
 * tenant is still submitting, and a query in the driver beside its launches
 * would slow them. Submitted is read before launched: if they are equal,
 * every launch begun by then had been submitted, and the query covers
 * them. */
static CUcontext poller_ctx; /* the poller thread's current context */
static int poll_streams(void)
{
	int all = 1;
	for (int i = 0; i < nstreams; i++) {
		struct tracked *t = &streams[i];
		uint64_t sub = __atomic_load_n(&t->submitted, __ATOMIC_ACQUIRE);
		uint64_t n = __atomic_load_n(&t->launched, __ATOMIC_ACQUIRE);
		if (n == t->done)
			continue;
		if (sub != n || n != t->seen) {
			t->seen = n;
			all = 0;
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
			all = 0;
	}
	return all;
}

/* launched_since says whether a launch was counted after the last poll. */
static int launched_since(void)
{
	for (int i = 0; i < nstreams; i++)
		if (__atomic_load_n(&streams[i].launched, __ATOMIC_SEQ_CST) != streams[i].done)
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
		if (!__atomic_load_n(&slot->busy, __ATOMIC_RELAXED)) {
			poller_parked = 1; /* become_busy wakes it */
			carve_thread_parks();
			while (!__atomic_load_n(&slot->busy, __ATOMIC_RELAXED))
				pthread_cond_wait(&track_cv, &track_mu);
		}
		uint64_t now = carve_mono_ns();
		beat(now);
		if (__atomic_load_n(&capturing, __ATOMIC_RELAXED) == 0 && poll_streams()) {
			set_busy(0);
			if (launched_since()) { /* it went on: still busy */
				set_busy(1);
			} else {
				uint64_t d = now - busy_since;
				__atomic_add_fetch(&slot->busy_ns, d, __ATOMIC_RELAXED);
				__atomic_add_fetch(&carve_block->busy_ns, d, __ATOMIC_RELAXED);
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
	pthread_mutex_lock(&track_mu);
	if (begin) {
		capturing++;
	} else if (capturing > 0) {
		capturing--;
	}
	struct tracked *t = cls == CARVE_CLASS_LS ? track(s) : NULL;
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
static struct {
	CUevent ev;
	uint64_t count; /* launches made when it was */
	/* after one launch into an empty queue while it was bounded: its
	 * kernel began between these (0: not so) */
	uint64_t began, began_by;
	int queued; /* recorded before a look found the one before it not done */
} ring[RING];
static unsigned head, tail;       /* events recorded; events seen done */
static uint64_t launched, done_n; /* BE launches made; known done */
static CUstream last_stream;      /* of the last BE launch */
/* While the queue is bounded, the events are looked at before a launch
 * that would fill it, or REAP_NS after they last were; while it is not, an
 * event every QUIET_NS keeps the counts roughly current (asking the driver
 * on every launch costs more than the rest of the shim). */
#define REAP_NS 20000
#define QUIET_NS 1000000
static int bounded;                 /* the queue is bounded now */
static uint64_t every = MARK;       /* launches between events while it is */
static uint64_t reaped_at, marked_n;
static uint64_t quiet_at;           /* the last look while not bounded (coarse clock) */
static int mark_due;                /* an event is due with the next launch while not */
/* while the queue is bounded, a time before this thread's launch began,
 * until it is counted (0: not read) */
static __thread __attribute__((tls_model("initial-exec"))) uint64_t launch_at;
/* the events below this one that a look found recorded behind one not
 * done are marked queued: their kernels ran from its completion on */
static unsigned queued_to;

/* mark records an event after the launches made so far (under be_mu),
 * after one launch into an empty queue whose kernel began between began
 * and began_by if they are not 0. */
static void mark(CUstream s, uint64_t began, uint64_t began_by)
{
	if (head - tail >= RING)
		return;
	CUevent *ev = &ring[head % RING].ev;
	if (!*ev && event_create(ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
		*ev = NULL;
	if (*ev && event_record(*ev, s) == CUDA_SUCCESS) {
		ring[head % RING].count = marked_n = launched;
		ring[head % RING].began = began;
		ring[head % RING].began_by = began_by;
		ring[head % RING].queued = 0;
		head++;
	}
}
static pthread_mutex_t be_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t tokens_ns;                    /* the share's bucket; below 0 after a long kernel */
/* when the bucket was last filled; a kernel's time (EWMA), until measured a
 * cautious 1 ms, so that a first burst does not fill the queue unseen */
static uint64_t tokens_at, kernel_ns = 1000000;
static int measured; /* kernel_ns has been measured (to within an eighth) */
/* until it is: the least and the most a kernel can take by every run timed
 * so far (or since they disagreed) */
static uint64_t least_ns, most_ns = UINT64_MAX;
static uint64_t held_since;
/* the point the kernels run since are timed from: a completion, or the
 * beginning of a kernel launched into an empty queue, known to have
 * happened between anchor_lo and anchor_hi, after anchor_n launches */
static uint64_t anchor_lo, anchor_hi, anchor_n;
static int anchored;

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

/* lease_ok says whether a heartbeat at beat is younger than the lease
 * (signed: a beat written after now was read is fresh, not 584 years old). */
static int lease_ok(uint64_t beat, uint64_t now)
{
	uint64_t lease = node->lease_ns ? node->lease_ns : CARVE_NODE_LEASE_NS;
	return (int64_t)(now - beat) < (int64_t)lease;
}

/* ls_busy returns how many LS tenants have work in flight now (with a
 * fresh heartbeat), ORing their reserved TPCs (enable bits) into out if
 * given. With none, *newest (if given) gets the latest heartbeat of any
 * (0: none has been busy); it is read only then. */
static int ls_busy(uint32_t out[4], uint64_t *newest)
{
	uint32_t bits = __atomic_load_n(&node->busy, __ATOMIC_ACQUIRE);
	int busy = 0;
	if (bits) {
		uint64_t now = carve_mono_ns();
		for (; bits; bits &= bits - 1) {
			struct carve_node_slot *s = &node->slots[__builtin_ctz(bits)];
			if (s == slot || !__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) ||
			    !lease_ok(__atomic_load_n(&s->beat_ns, __ATOMIC_ACQUIRE), now))
				continue;
			busy++;
			if (out)
				for (int w = 0; w < 4; w++)
					out[w] |= __atomic_load_n(&s->reserved[w], __ATOMIC_RELAXED);
		}
	}
	if (!busy && newest)
		*newest = __atomic_load_n(&node->beat_ns, __ATOMIC_RELAXED);
	return busy;
}

/* ls_off is what an LS tenant's launches keep off: the TPCs other LS
 * tenants reserved and the fixed ones, as enable bits. It is worked out
 * again only when the node's gen has moved (per thread: launches of many
 * threads share nothing here). */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	uint32_t gen, valid;
	uint32_t off[4];
} ls_off_cache;

static void ls_off(uint32_t off[4])
{
	uint32_t gen = __atomic_load_n(&node->gen, __ATOMIC_ACQUIRE);
	if (!ls_off_cache.valid || ls_off_cache.gen != gen) {
		uint32_t m[4];
		for (int w = 0; w < 4; w++)
			m[w] = __atomic_load_n(&node->fixed[w], __ATOMIC_RELAXED);
		for (int i = 0; i < CARVE_NODE_SLOTS; i++) {
			struct carve_node_slot *s = &node->slots[i];
			if (s == slot || !__atomic_load_n(&s->pid, __ATOMIC_ACQUIRE))
				continue;
			for (int w = 0; w < 4; w++)
				m[w] |= __atomic_load_n(&s->reserved[w], __ATOMIC_RELAXED);
		}
		memcpy(ls_off_cache.off, m, sizeof m);
		ls_off_cache.gen = gen;
		ls_off_cache.valid = 1;
	}
	memcpy(off, ls_off_cache.off, sizeof ls_off_cache.off);
}

/* reap counts the BE's launches known done (under be_mu), and times its
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
static void reap(int timed)
{
	uint64_t prev = reaped_at;
	reaped_at = carve_mono_ns();
	while (tail != head && event_query(ring[tail % RING].ev) != CUDA_ERROR_NOT_READY) {
		uint64_t now = carve_mono_ns(), count = ring[tail % RING].count;
		if (!ring[tail % RING].queued) { /* not behind the last: a new run */
			anchored = ring[tail % RING].began != 0;
			anchor_lo = ring[tail % RING].began;
			anchor_hi = ring[tail % RING].began_by;
			anchor_n = done_n;
		}
		if (anchored && timed && count > anchor_n && now > anchor_hi) {
			uint64_t n = count - anchor_n, m = (now - anchor_hi) / n;
			uint64_t doubt = now - prev > anchor_hi - anchor_lo ? now - prev : anchor_hi - anchor_lo;
			/* between the earliest end after the latest start, and the latest after the earliest */
			uint64_t least = (prev > anchor_hi ? prev - anchor_hi : 0) / n, most = (now - anchor_lo) / n;
			if (m > 0 && 8 * (doubt / n) <= m) {
				/* the first replaces the guess */
				kernel_ns = measured ? (3 * kernel_ns + m) / 4 : m;
				measured = 1;
			} else if (!measured) {
				if (least > most_ns || most < least_ns) /* they disagree: the kernels changed */
					least_ns = 0, most_ns = UINT64_MAX;
				least_ns = least > least_ns ? least : least_ns;
				most_ns = most < most_ns ? most : most_ns;
				if (2 * (most_ns - least_ns) <= most_ns + least_ns) /* within a third */
					kernel_ns = (least_ns + most_ns) / 2;
			}
		}
		if (!anchored || now - prev <= anchor_hi - anchor_lo || 8 * (now - prev) <= kernel_ns) {
			anchored = 1;
			anchor_lo = prev;
			anchor_hi = now;
			anchor_n = count;
		}
		done_n = count;
		tail++;
	}
	if (tail != head) /* those recorded behind the first not done queue behind it */
		for (unsigned i = (int)(queued_to - tail) > 0 ? queued_to : tail + 1; i != head; i++)
			ring[i % RING].queued = 1;
	queued_to = head;
	__atomic_store_n(&carve_block->inflight, (uint32_t)(launched - done_n), __ATOMIC_RELAXED);
	__atomic_store_n(&carve_block->kernel_us, (uint32_t)(kernel_ns / 1000), __ATOMIC_RELAXED);
}

/* bound is the bounds in launches, by the kernels' measured time (0: none). */
static uint64_t bound(uint32_t k, uint32_t queue_us)
{
	uint64_t b = k, q = (uint64_t)queue_us * 1000 / (kernel_ns ? kernel_ns : 1);
	if (queue_us && (!b || q < b))
		b = q ? q : 1;
	return b;
}

/* queue_full says whether one more launch would exceed the bounds. */
static int queue_full(uint32_t k, uint32_t queue_us)
{
	uint64_t n = launched - done_n;
	if (head - tail >= RING || (k && n >= k))
		return 1;
	return queue_us && n > 0 && n * kernel_ns > (uint64_t)queue_us * 1000;
}

/* narrow computes into m the mask of a BE launch made while LS work is in
 * flight, from its partition's mask: its floor, if it has one, within the
 * partition; else the partition off the busy LS tenants' reserved TPCs.
 * Returns how many live TPCs m enables: a launch is narrowed only onto
 * CARVE_NODE_NARROW_MIN or more, or kernels sized for the whole GPU may
 * never finish. */
static int narrow(const uint32_t mask[4], const uint32_t live[4], uint32_t m[4])
{
	uint32_t floor[4], off[4] = {0, 0, 0, 0}, any = 0;
	for (int w = 0; w < 4; w++)
		any |= floor[w] = __atomic_load_n(&carve_block->floor[w], __ATOMIC_RELAXED);
	if (any)
		for (int w = 0; w < 4; w++)
			off[w] = ~floor[w];
	else
		ls_busy(off, NULL);
	int n = 0;
	for (int w = 0; w < 4; w++) {
		m[w] = mask[w] | off[w];
		n += __builtin_popcount(~m[w] & live[w]);
	}
	return n;
}

/* narrow_ok says whether a launch narrowed now keeps enough TPCs. */
static int narrow_ok(void)
{
	uint32_t mask[4], live[4], m[4];
	uint64_t gen;
	if (!carve_current_mask(0, mask, &gen))
		return 0;
	for (int w = 0; w < 4; w++)
		live[w] = __atomic_load_n(&carve_block->live[w], __ATOMIC_RELAXED);
	return narrow(mask, live, m) >= CARVE_NODE_NARROW_MIN;
}

/* may_run_narrow spends the share's tokens on a launch while LS work is in
 * flight (under be_mu): the bucket fills at share_ppm of the time, up to
 * share x epoch, and a launch costs the BE's kernel time, going into debt
 * for a kernel longer than a full bucket, so that over time the BE runs for
 * about its share while LS work is in flight. */
static int may_run_narrow(uint64_t now, uint32_t share_ppm, uint64_t epoch)
{
	int64_t cap = (int64_t)(epoch * share_ppm / 1000000);
	tokens_ns += (int64_t)((now - tokens_at) * share_ppm / 1000000);
	tokens_at = now;
	if (tokens_ns > cap)
		tokens_ns = cap;
	if (share_ppm == 0) /* no share: a launch after an epoch held */
		return held_since && now - held_since >= epoch;
	if (share_ppm >= 1000000) /* all the time: never held */
		return 1;
	int64_t cost = (int64_t)kernel_ns;
	if (tokens_ns < (cost < cap ? cost : cap))
		return 0;
	tokens_ns -= cost;
	return 1;
}

static void be_launch_before(void)
{
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
	int busy;
	pthread_mutex_lock(&be_mu);
	for (;;) {
		if (!(busy = ls_busy(NULL, &newest))) {
			held_since = 0;
			break;
		}
		if (!start)
			start = now = carve_mono_ns();
		/* too few TPCs to narrow onto: no share, and the launch that
		 * keeps it from starving runs on its whole partition */
		int ok = narrow_ok();
		if (may_run_narrow(now, ok ? share : 0, epoch)) {
			tide_narrow = ok;
			held_since = 0;
			__atomic_add_fetch(&carve_block->narrow_launches, 1, __ATOMIC_RELAXED);
			break;
		}
		if (!held_since)
			held_since = now;
		if (!waited) {
			waited = 1;
			__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_HELD, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&be_mu);
		be_wait(start);
		now = carve_mono_ns();
		pthread_mutex_lock(&be_mu);
	}
	/* a bounded queue (unless no LS tenant has been busy for
	 * CARVE_NODE_QUIET_NS): wait for the oldest. The quiet case, the
	 * common one, reads only the coarse clock. */
	if (event_query) {
		uint64_t t = start ? carve_mono_ns() : carve_coarse_ns();
		bounded = (k || queue_us) && (busy || (newest && (int64_t)(t - newest) < (int64_t)CARVE_NODE_QUIET_NS));
		if (!bounded) {
			if ((int64_t)(t - quiet_at) >= (int64_t)QUIET_NS) {
				quiet_at = t;
				reap(0);
				mark_due = 1;
			}
		} else {
			uint64_t since = start ? t : carve_mono_ns();
			launch_at = since; /* the launch begins no sooner */
			uint64_t b = bound(k, queue_us);
			every = !b || b / 2 >= MARK ? MARK : b / 2 ? b / 2 : 1;
			if (queue_full(k, queue_us) || since - reaped_at >= REAP_NS) {
				for (reap(1); queue_full(k, queue_us); reap(1)) {
					/* an event for the launches waited on, unless those
					 * recorded will leave room when done */
					if (head == tail ? launched != done_n : launched - ring[(head - 1) % RING].count >= b)
						mark(last_stream, 0, 0);
					pthread_mutex_unlock(&be_mu);
					be_wait(since);
					pthread_mutex_lock(&be_mu);
				}
			}
		}
	}
	if (!bounded)
		launch_at = 0;
	pthread_mutex_unlock(&be_mu);
	if (waited) {
		__atomic_add_fetch(&carve_block->held_ns, carve_mono_ns() - start, __ATOMIC_RELAXED);
		__atomic_add_fetch(&carve_block->held_launches, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
	}
}

static void be_launch_after(CUstream s)
{
	if (!event_record || __atomic_load_n(&capturing, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&be_mu);
	int empty = launched == done_n;
	launched++;
	last_stream = s;
	if (bounded ? empty || launched - marked_n >= every : mark_due) {
		/* a kernel launched into an empty queue began during its launch */
		int began = bounded && empty && launch_at;
		mark(s, began ? launch_at : 0, began ? carve_mono_ns() : 0);
		mark_due = 0;
	}
	__atomic_store_n(&carve_block->inflight, (uint32_t)(launched - done_n), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&be_mu);
}

/* --- what the wrappers and the callback call ------------------------------ */

void carve_launch_before(CUstream s)
{
	switch (cls) {
	case CARVE_CLASS_LS:
		ls_launch(s);
		break;
	case CARVE_CLASS_BE:
		be_launch_before();
		break;
	}
}

void carve_launch_after(CUstream s, CUresult r)
{
	if (cls == CARVE_CLASS_LS)
		ls_submitted();
	else if (cls == CARVE_CLASS_BE && r == CUDA_SUCCESS)
		be_launch_after(s);
}

void carve_tide_mask(int gpu, uint32_t mask[CARVE_MASK_WORDS], const uint32_t live[CARVE_MASK_WORDS])
{
	if (!cls || gpu != 0)
		return;
	uint32_t off[4] = {0, 0, 0, 0}, m[4];
	if (cls == CARVE_CLASS_LS) {
		if (carve_block->flags & CARVE_FLAG_LS_OWN)
			return;
		/* its own TPCs and every live one that no other LS tenant
		 * reserved and no partition outside tide holds */
		ls_off(off);
		for (int w = 0; w < 4; w++) {
			uint32_t own = ~mask[w] & live[w];
			m[w] = (off[w] & ~own) | ~live[w];
		}
	} else if (!tide_narrow || narrow(mask, live, m) < CARVE_NODE_NARROW_MIN) {
		return; /* BE, not narrowed (or too few TPCs left: the busy LS
			 * tenants may have changed since be_launch_before looked) */
	}
	if (carve_mask_enables_live(m, live))
		memcpy(mask, m, sizeof m);
}

/* --- joining the node ------------------------------------------------------ */

static struct carve_node *map_node(const char *dir, const char *name)
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
	node_fd = fd;
	return n;
}

/* lock_slot takes slot i's lock (see carve_node.h) without waiting:
 * 1 if we now hold it, 0 if a live process does. */
static int lock_slot(int i)
{
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = CARVE_NODE_SLOT_LOCK(i), .l_len = 1};
	return fcntl(node_fd, F_SETLK, &l) == 0;
}

/* take_slot claims a slot whose lock no live process holds, preferring
 * free ones; the pid is written only once the lock is ours. */
static struct carve_node_slot *take_slot(void)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < CARVE_NODE_SLOTS; i++) {
			struct carve_node_slot *s = &node->slots[i];
			uint32_t p = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);
			if ((pass == 0) != (p == 0) || !lock_slot(i))
				continue;
			__atomic_store_n(&s->busy, 0, __ATOMIC_RELAXED);
			__atomic_and_fetch(&node->busy, ~(1u << i), __ATOMIC_RELEASE);
			s->start_ticks = carve_block->start_ticks;
			s->busy_ns = s->requests = 0;
			__atomic_store_n(&s->pid, (uint32_t)getpid(), __ATOMIC_RELEASE);
			return s;
		}
	}
	return NULL;
}

void carve_tide_init(void *cuda, const char *dir)
{
	struct carve_ctl *c = carve_block;
	uint32_t k = c->tenant_class;
	if ((k != CARVE_CLASS_LS && k != CARVE_CLASS_BE) || !c->node[0])
		return;
	char name[sizeof c->node];
	memcpy(name, c->node, sizeof name);
	name[sizeof name - 1] = 0;
	if (!(node = map_node(dir, name))) {
		carve_say("node block %s/%s cannot be mapped: running as an ordinary partitioned tenant", dir, name);
		return;
	}
	ctx_get = carve_real_dlsym(cuda, "cuCtxGetCurrent");
	ctx_set = carve_real_dlsym(cuda, "cuCtxSetCurrent");
	stream_query = carve_real_dlsym(cuda, "cuStreamQuery");
	event_create = carve_real_dlsym(cuda, "cuEventCreate");
	event_record = carve_real_dlsym(cuda, "cuEventRecord");
	event_query = carve_real_dlsym(cuda, "cuEventQuery");
	exchange_mode = carve_real_dlsym(cuda, "cuThreadExchangeStreamCaptureMode");
	if (k == CARVE_CLASS_LS) {
		if (!ctx_get || !ctx_set || !stream_query || !(slot = take_slot())) {
			carve_say("no LS slot in the node block (or the driver lacks stream queries): running as an ordinary partitioned tenant");
			return;
		}
		for (int w = 0; w < 4; w++)
			__atomic_store_n(&slot->reserved[w], ~c->mask[w] & c->live[w], __ATOMIC_RELAXED);
		__atomic_add_fetch(&node->gen, 1, __ATOMIC_RELEASE);
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		carve_thread_wakes(); /* the poller runs until it first waits */
		if (pthread_create(&t, &a, poller, NULL) != 0) {
			carve_thread_parks();
			carve_say("the LS poller thread could not start: running as an ordinary partitioned tenant");
			__atomic_store_n(&slot->pid, 0, __ATOMIC_RELEASE);
			__atomic_add_fetch(&node->gen, 1, __ATOMIC_RELEASE);
			struct flock l = {.l_type = F_UNLCK, .l_whence = SEEK_SET,
			    .l_start = CARVE_NODE_SLOT_LOCK(slot - node->slots), .l_len = 1};
			fcntl(node_fd, F_SETLK, &l);
			slot = NULL;
			return;
		}
	} else {
		tokens_at = carve_mono_ns();
	}
	__atomic_store_n(&c->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
	cls = (int)k;
	CARVE_DEBUG("tide: %s tenant on node %s", k == CARVE_CLASS_LS ? "LS" : "BE", name);
}

__attribute__((destructor)) static void carve_tide_fini(void)
{
	if (slot) { /* leave the slot: no BE waits on a tenant that has gone */
		set_busy(0);
		__atomic_store_n(&slot->pid, 0, __ATOMIC_RELEASE);
		__atomic_add_fetch(&node->gen, 1, __ATOMIC_RELEASE);
	}
}
