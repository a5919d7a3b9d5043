/*
 * tide_be.c: a BE tenant's gate in tide (tide.c says how tide works), on
 * each of its GPUs: held while LS work is in flight but for its share,
 * narrowed off the busy LS tenants' TPCs, its queue bounded, its kernels
 * timed.
 *
 * BE: before each launch the shim reads the node block's seats and the
 * busy bits of their LS files (tide_node.c). While an LS tenant is busy (with a heartbeat younger
 * than the lease) the launch waits, except for the BE's share of the time
 * while LS work is in flight (a token bucket over the epoch, spent at the
 * BE's measured kernel time, so its DRAM traffic then is about share x its
 * rate; no share while the LS tenant times its own work, timing.c), and it
 * runs off the LS tenants' reserved TPCs, or on its floor if
 * it has one (TPCs that LS tenants keep off: its traffic then is what that
 * many TPCs draw, and it never holds an SM the LS tenants use); steered by
 * the SLO controller below a share of 1, it keeps off them between their
 * busy periods too, while they are active. While some LS
 * tenant has been busy in the last CARVE_NODE_QUIET_NS, the BE keeps at
 * most inflight_max launches in flight (counted by events recorded after
 * some of them) and at most queue_us of GPU time by its kernels' measured
 * time, so that holding it back takes effect within about one kernel;
 * otherwise it asks the driver about its queue once a millisecond and reads
 * only the coarse clock. With no share, it still gets a launch after
 * waiting an epoch: it is never starved for good. A kernel that its kernel
 * table (kern.c) calls compute-bound is not held for the share, nor spends
 * it: its DRAM traffic is what LS work would feel, and it has little; it
 * runs narrowed as any BE launch beside LS work, within the same bounds. Its waits are
 * carve_wait_until's steps (a yield for the first 100 us, then naps of
 * 20 us), so that it follows the GPU closely enough to keep it fed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "carve_node.h"
#include "shim.h"

/* the driver's functions the BE gate calls itself */
static CUresult (*event_create)(CUevent *, unsigned);
static CUresult (*event_record)(CUevent, CUstream);
static CUresult (*event_query)(CUevent);

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
struct carve_tide_be {
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
static struct carve_tide_be bes[CARVE_GPUS];

/* while the queue is bounded, a time before this thread's launch began,
 * until it is counted (0: not read) */
static __thread __attribute__((tls_model("initial-exec"))) uint64_t launch_at;

/* mark records an event after the launches made so far (under b->mu),
 * after one launch into an empty queue whose kernel began between began
 * and began_by if they are not 0. */
static void mark(struct carve_tide_be *b, CUstream s, uint64_t began, uint64_t began_by)
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

/* the mask this thread's launch is to have, set by the wrapper for the
 * callback the driver makes inside the launch; confined, the TPCs it keeps
 * off (the gate's walk of the LS files found them) */
static __thread __attribute__((tls_model("initial-exec"))) int tide_narrow;
static __thread __attribute__((tls_model("initial-exec"))) uint32_t tide_near[4];

/* inflight_all is what the block says is in flight: the BE's launches on
 * all its GPUs. */
static uint32_t inflight_all(void)
{
	uint64_t n = 0;
	for (int g = 0; g < carve_tide_ngpus; g++)
		if (carve_tide_gpus[g].be)
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
static void reap(struct carve_tide_be *b, int timed)
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
static uint64_t bound(const struct carve_tide_be *b, uint32_t k, uint32_t queue_us)
{
	uint64_t n = k, q = (uint64_t)queue_us * 1000 / (b->kernel_ns ? b->kernel_ns : 1);
	if (queue_us && (!n || q < n))
		n = q ? q : 1;
	return n;
}

/* queue_full says whether one more launch would exceed the bounds. */
static int queue_full(const struct carve_tide_be *b, uint32_t k, uint32_t queue_us)
{
	uint64_t n = b->launched - b->done_n;
	if (b->head - b->tail >= RING || (k && n >= k))
		return 1;
	return queue_us && n > 0 && n * b->kernel_ns > (uint64_t)queue_us * 1000;
}

/* How a launch is narrowed (tide_narrow): not; off the busy LS tenants'
 * reserved TPCs (or onto its floor) while LS work is in flight; or, steered
 * by the SLO controller below a share of 1, off those of every LS tenant
 * busy in the last CARVE_NODE_QUIET_NS while none is, so that a request
 * arriving between busy periods starts on its reserved TPCs at once, not
 * behind a BE kernel that holds them. */
enum { WHOLE, BESIDE, CONFINED };

/* narrow computes into m the mask of a BE launch on GPU g narrowed how
 * (BESIDE or CONFINED), from its partition's mask: its floor there, if it
 * has one, within the partition; else the partition off the busy LS
 * tenants' reserved TPCs (BESIDE) or the active ones' (CONFINED).
 * Returns how many live TPCs m enables: a launch is narrowed only onto
 * CARVE_NODE_NARROW_MIN or more, or kernels sized for the whole GPU may
 * never finish. */
static int narrow(int g, int how, const uint32_t mask[4], const uint32_t live[4], uint32_t m[4])
{
	uint32_t floor[4], off[4] = {0, 0, 0, 0}, any = 0;
	for (int w = 0; w < 4; w++)
		any |= floor[w] = __atomic_load_n(&CARVE_PART(carve_block, g, floor)[w], __ATOMIC_RELAXED);
	if (any)
		for (int w = 0; w < 4; w++)
			off[w] = ~floor[w];
	else if (how == CONFINED)
		memcpy(off, tide_near, sizeof off);
	else
		carve_tide_ls_busy(g, off, NULL, NULL, NULL);
	int n = 0;
	for (int w = 0; w < 4; w++) {
		m[w] = mask[w] | off[w];
		n += __builtin_popcount(~m[w] & live[w]);
	}
	return n;
}

/* narrow_ok says whether a launch on GPU g narrowed beside busy LS work
 * now keeps enough TPCs. */
static int narrow_ok(int g)
{
	uint32_t mask[4], live[4], m[4];
	uint64_t gen;
	if (!carve_current_mask(g, mask, &gen))
		return 0;
	for (int w = 0; w < 4; w++)
		live[w] = __atomic_load_n(&CARVE_PART(carve_block, g, live)[w], __ATOMIC_RELAXED);
	return narrow(g, BESIDE, mask, live, m) >= CARVE_NODE_NARROW_MIN;
}

/* may_run_narrow spends the share's tokens on a launch while LS work is in
 * flight (under b->mu): the bucket fills at share_ppm of the time, up to
 * share x epoch, and a launch costs the BE's kernel time, going into debt
 * for a kernel longer than a full bucket, so that over time the BE runs for
 * about its share while LS work is in flight. While an LS tenant times its
 * work (timing), the bucket is not spent. */
static int may_run_narrow(struct carve_tide_be *b, uint64_t now, uint32_t share_ppm, uint64_t epoch, int timing)
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

/* be_pause holds a launch while the block's pause_until_ns is ahead of the
 * clock (the SLO controller calibrating an LS tenant's periods alone: it
 * renews the pause each step), CARVE_PAUSE_MAX_NS at most whatever the
 * block says, and counts the hold as tide's. */
static void be_pause(void)
{
	uint64_t until = __atomic_load_n(&carve_block->pause_until_ns, __ATOMIC_RELAXED);
	if (!until)
		return;
	uint64_t start = carve_mono_ns(), now = start;
	if (until <= start)
		return;
	__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_HELD, __ATOMIC_RELAXED);
	while (now < until && now - start < CARVE_PAUSE_MAX_NS) {
		uint64_t left = until - now < CARVE_PAUSE_MAX_NS - (now - start) ? until - now : CARVE_PAUSE_MAX_NS - (now - start);
		carve_wait_until(start, now + left);
		now = carve_mono_ns();
		until = __atomic_load_n(&carve_block->pause_until_ns, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&carve_block->held_ns, now - start, __ATOMIC_RELAXED);
	__atomic_add_fetch(&carve_block->held_launches, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
}

/* carve_tide_be_launch_before holds a BE launch on GPU g while its block
 * pauses it (be_pause), while LS work is in flight there (but for its share,
 * or a kernel its table calls compute-bound, compute, which goes narrowed
 * beside it unless the LS tenant times its work), and while its queue there
 * is full. */
void carve_tide_be_launch_before(int g, int compute)
{
	be_pause();
	struct carve_tide_be *b = carve_tide_gpus[g].be;
	uint32_t k = __atomic_load_n(&carve_block->inflight_max, __ATOMIC_RELAXED);
	uint32_t queue_us = __atomic_load_n(&carve_block->queue_us, __ATOMIC_RELAXED);
	uint32_t share = __atomic_load_n(&carve_block->share_ppm, __ATOMIC_RELAXED);
	uint64_t epoch = __atomic_load_n(&carve_block->epoch_ns, __ATOMIC_RELAXED);
	if (!epoch)
		epoch = CARVE_EPOCH_NS;
	uint64_t start = 0, now = 0; /* read once an LS tenant is found busy */
	int waited = 0;
	tide_narrow = WHOLE;
	uint64_t newest = 0; /* the latest LS heartbeat, while none is busy */
	/* steered below a share of 1: the TPCs a launch confined keeps off */
	int steered = share < 1000000 && __atomic_load_n(&carve_block->slo_steered, __ATOMIC_RELAXED);
	uint32_t near[4];
	int busy, timing, queued;
	pthread_mutex_lock(&b->mu);
gate:
	queued = 0;
	for (;;) {
		timing = 0;
		memset(near, 0, sizeof near);
		if (!(busy = carve_tide_ls_busy(g, NULL, &newest, &timing, steered ? near : NULL))) {
			b->held_since = 0;
			break;
		}
		if (!start)
			start = now = carve_mono_ns();
		/* too few TPCs to narrow onto: no share, and the launch that
		 * keeps it from starving runs on its whole partition */
		int ok = narrow_ok(g);
		if (compute && ok && !timing) { /* compute-bound: beside it, spending no share */
			tide_narrow = BESIDE;
			b->held_since = 0;
			__atomic_add_fetch(&carve_block->narrow_launches, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&carve_block->kernel_beside, 1, __ATOMIC_RELAXED);
			break;
		}
		if (may_run_narrow(b, now, ok ? share : 0, epoch, timing)) {
			tide_narrow = ok ? BESIDE : WHOLE;
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
		carve_wait_until(start, 0);
		now = carve_mono_ns();
		pthread_mutex_lock(&b->mu);
	}
	/* a bounded queue (unless no LS tenant has been busy for
	 * CARVE_NODE_QUIET_NS): wait for the oldest. The quiet case, the
	 * common one, reads only the coarse clock. */
	if (event_query) {
		uint64_t t = start ? carve_mono_ns() : carve_coarse_ns();
		b->bounded = (k || queue_us) && carve_tide_active(busy, newest, t);
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
					carve_wait_until(since, 0);
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
	if (queued && !busy && carve_tide_ls_busy(g, NULL, NULL, NULL, NULL)) {
		if (start) {
			if (!b->held_since || (int64_t)(b->held_since - start) > 0)
				b->held_since = start;
			now = carve_mono_ns(); /* last read before the queue's wait */
		}
		goto gate;
	}
	if (!b->bounded)
		launch_at = 0;
	if (!busy && steered && (near[0] | near[1] | near[2] | near[3])) { /* an LS tenant active: the walk's near */
		tide_narrow = CONFINED; /* if enough TPCs are left then (carve_tide_be_narrowed) */
		memcpy(tide_near, near, sizeof near);
	}
	pthread_mutex_unlock(&b->mu);
	if (waited) {
		__atomic_add_fetch(&carve_block->held_ns, carve_mono_ns() - start, __ATOMIC_RELAXED);
		__atomic_add_fetch(&carve_block->held_launches, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
	}
}

/* stamp writes the coarse clock into our BE file on GPU g as its latest
 * BE launch (tide_ls.c tells an LS tenant's busy periods alone by the
 * latest of the GPU's BE files), once a tick at most, so that the line is
 * seldom written; with no BE file yet (carve has not made it) it looks for
 * one now and then. */
static void stamp(int g)
{
	uint64_t now = carve_coarse_ns();
	struct carve_be *bef = carve_tide_be_own(g, now);
	if (bef && __atomic_load_n(&bef->be_launch_ns, __ATOMIC_RELAXED) != now)
		__atomic_store_n(&bef->be_launch_ns, now, __ATOMIC_RELEASE);
}

void carve_tide_be_launch_after(int g, CUstream s)
{
	struct carve_tide_be *b = carve_tide_gpus[g].be;
	if (!__atomic_load_n(&carve_tide_captures, __ATOMIC_RELAXED))
		stamp(g);
	if (!event_record || __atomic_load_n(&carve_tide_captures, __ATOMIC_RELAXED))
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

/* carve_tide_be_narrowed: is this thread's launch, on GPU g, one the gate
 * narrowed (carve_tide_be_launch_before), onto enough TPCs still? Its mask into m. */
int carve_tide_be_narrowed(int g, const uint32_t mask[4], const uint32_t live[4], uint32_t m[4])
{
	return tide_narrow != WHOLE && narrow(g, tide_narrow, mask, live, m) >= CARVE_NODE_NARROW_MIN;
}

/* --- at load ------------------------------------------------------------------ */

/* carve_tide_be_init finds the driver's functions of the BE gate. */
void carve_tide_be_init(void *cuda)
{
	event_create = carve_real_dlsym(cuda, "cuEventCreate");
	event_record = carve_real_dlsym(cuda, "cuEventRecord");
	event_query = carve_real_dlsym(cuda, "cuEventQuery");
}

/* carve_tide_be_join sets up the BE tenant's gate on its GPU g, and maps
 * its own BE file there if carve made one. */
void carve_tide_be_join(int g)
{
	struct carve_tide_be *b = carve_tide_gpus[g].be = &bes[g];
	pthread_mutex_init(&b->mu, NULL);
	b->every = MARK;
	b->kernel_ns = 1000000;
	b->most_ns = UINT64_MAX;
	b->tokens_at = carve_mono_ns();
	carve_tide_be_own(g, carve_coarse_ns());
}
