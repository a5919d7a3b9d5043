/*
 * tide.c: latency-sensitive (LS) and best-effort (BE) tenants sharing the
 * GPU through the node block (carve_node.h).
 *
 * LS: a launch marks the tenant busy in its slot before it goes out, and
 * the stream it went to as having work. A thread of the shim (the poller)
 * asks the driver whether those streams are done, every ~10 us while the
 * tenant is busy, renewing the slot's heartbeat; when all are, it marks the
 * tenant idle. Launches into a stream being captured into a graph run
 * nothing and are not counted; while a capture is under way the poller asks
 * nothing (a query could spoil the capture). The LS tenant's kernels run on
 * its partition and on every TPC that no other LS tenant reserved and no
 * partition outside tide holds (the node block's fixed TPCs).
 *
 * BE: before each launch the shim reads the slots. While an LS tenant is
 * busy (with a heartbeat younger than the lease) the launch waits, except
 * for the BE's share of the time while LS work is in flight (a token
 * bucket over the epoch, spent at the BE's measured kernel time, so its
 * DRAM traffic then is about share x its rate), and it runs off the LS
 * tenants' reserved TPCs. While some LS tenant has been busy in the last
 * CARVE_NODE_QUIET_NS, the BE keeps at most inflight_max launches in flight
 * (counted by events recorded after some of them) and at most queue_us of
 * GPU time by its kernels' measured time, so that holding it back takes
 * effect within about one kernel. With no share, it still gets a launch after waiting an
 * epoch: it is never starved for good. Its waits yield the CPU for the
 * first 100 us and then nap 20 us at a time (the thread's timer slack set
 * to 1 us, or naps would last 50 us more), so that it follows the GPU
 * closely enough to keep it fed.
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
#include <sched.h>
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

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap_ns(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

/* --- LS: streams with work, and the poller -------------------------------- */

#define STREAMS 128
struct tracked {
	CUstream s;
	CUcontext ctx;
	/* launches into it: begun (before the call), submitted (it returned),
	 * and known done on the GPU */
	uint64_t launched, submitted, done;
	int capturing;
};
static struct tracked streams[STREAMS];
static int nstreams;
static pthread_mutex_t track_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t track_cv = PTHREAD_COND_INITIALIZER;
static uint64_t busy_since;

static struct tracked *track(CUstream s)
{
	for (int i = 0; i < nstreams; i++)
		if (streams[i].s == s)
			return &streams[i];
	if (nstreams == STREAMS)
		return NULL;
	struct tracked *t = &streams[nstreams++];
	memset(t, 0, sizeof *t);
	t->s = s;
	if (ctx_get)
		ctx_get(&t->ctx);
	return t;
}

/* the stream this thread's launch was counted in, until it returns */
static __thread __attribute__((tls_model("initial-exec"))) struct tracked *counted;

static void ls_launch(CUstream s)
{
	if (s == CU_STREAM_PER_THREAD)
		s = 0; /* counted with the legacy stream, which waits for it */
	counted = NULL;
	pthread_mutex_lock(&track_mu);
	if (__atomic_load_n(&capturing, __ATOMIC_RELAXED) == 0) {
		struct tracked *t = track(s);
		if (t && !t->capturing) {
			t->launched++;
			counted = t;
			if (!__atomic_load_n(&slot->busy, __ATOMIC_RELAXED)) {
				busy_since = mono_ns();
				__atomic_store_n(&slot->busy_since_ns, busy_since, __ATOMIC_RELAXED);
				__atomic_store_n(&slot->beat_ns, busy_since, __ATOMIC_RELAXED);
				__atomic_add_fetch(&slot->requests, 1, __ATOMIC_RELAXED);
				__atomic_add_fetch(&carve_block->requests, 1, __ATOMIC_RELAXED);
				__atomic_store_n(&slot->busy, 1, __ATOMIC_RELEASE);
				__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_BUSY, __ATOMIC_RELAXED);
				pthread_cond_signal(&track_cv);
			}
		}
	}
	pthread_mutex_unlock(&track_mu);
}

static void ls_submitted(void)
{
	if (!counted)
		return;
	pthread_mutex_lock(&track_mu);
	counted->submitted++;
	pthread_mutex_unlock(&track_mu);
	counted = NULL;
}

/* poll asks the driver about each stream with work (under track_mu) and
 * returns whether all of it is done. A launch not yet submitted is not. */
static int poll_streams(void)
{
	int all = 1;
	CUcontext cur = NULL;
	for (int i = 0; i < nstreams; i++) {
		struct tracked *t = &streams[i];
		if (t->launched == t->done)
			continue;
		if (t->submitted != t->launched) {
			all = 0;
			continue;
		}
		if (t->ctx != cur) {
			ctx_set(t->ctx);
			cur = t->ctx;
		}
		CUresult r = stream_query(t->s);
		if (r == CUDA_SUCCESS || (r != CUDA_ERROR_NOT_READY && r != 0)) /* done, or ended by a fault */
			t->done = t->submitted;
		else
			all = 0;
	}
	return all;
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
		while (!__atomic_load_n(&slot->busy, __ATOMIC_RELAXED))
			pthread_cond_wait(&track_cv, &track_mu);
		uint64_t now = mono_ns();
		__atomic_store_n(&slot->beat_ns, now, __ATOMIC_RELEASE);
		if (__atomic_load_n(&capturing, __ATOMIC_RELAXED) == 0 && poll_streams()) {
			uint64_t d = now - busy_since;
			__atomic_add_fetch(&slot->busy_ns, d, __ATOMIC_RELAXED);
			__atomic_add_fetch(&carve_block->busy_ns, d, __ATOMIC_RELAXED);
			__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
			continue;
		}
		pthread_mutex_unlock(&track_mu);
		nap_ns(10000);
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
		t->capturing = begin;
	pthread_mutex_unlock(&track_mu);
}

/* --- BE: the gate, the share, the launches in flight ---------------------- */

/* An event is recorded after every MARK-th BE launch (and after the first
 * launch into an empty queue): recording one costs about 2.5 us, too much
 * on every kernel of a framework that launches many small ones. The
 * launches in flight are counted by launch number, to within MARK. */
#define RING 64
#define MARK 4
static struct {
	CUevent ev;
	uint64_t at;    /* when it was recorded */
	uint64_t count; /* launches made when it was */
} ring[RING];
static unsigned head, tail;       /* events recorded; events seen done */
static uint64_t launched, done_n; /* BE launches made; known done */
static CUstream last_stream;      /* of the last BE launch */

/* mark records an event after the launches made so far (under be_mu). */
static void mark(CUstream s)
{
	if (head - tail >= RING)
		return;
	CUevent *ev = &ring[head % RING].ev;
	if (!*ev && event_create(ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
		*ev = NULL;
	if (*ev && event_record(*ev, s) == CUDA_SUCCESS) {
		ring[head % RING].at = mono_ns();
		ring[head % RING].count = launched;
		head++;
	}
}
static pthread_mutex_t be_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t tokens_ns;                    /* the share's bucket; below 0 after a long kernel */
/* when the bucket was last filled; a kernel's time (EWMA), until measured a
 * cautious 1 ms, so that a first burst does not fill the queue unseen */
static uint64_t tokens_at, kernel_ns = 1000000;
static uint64_t held_since, last_done;

/* be_wait is one step of a BE wait that began at since. */
static __thread __attribute__((tls_model("initial-exec"))) int slack_set;
static void be_wait(uint64_t since)
{
	if (mono_ns() - since < 100000) {
		sched_yield();
		return;
	}
	if (!slack_set) {
		prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
		slack_set = 1;
	}
	nap_ns(20000);
}

/* the mask this thread's launch is to have, set by the wrapper for the
 * callback the driver makes inside the launch */
static __thread __attribute__((tls_model("initial-exec"))) int tide_narrow;

/* ls_reserved ORs into out the reserved TPCs (enable bits) of LS tenants
 * other than ours; busy_only: of those with work in flight now. Returns how
 * many are busy; newest, if given, gets the latest heartbeat of any (0:
 * none has been busy). */
static int ls_reserved(uint32_t out[4], int busy_only, uint64_t *newest)
{
	uint64_t now = mono_ns(), lease = node->lease_ns ? node->lease_ns : CARVE_NODE_LEASE_NS;
	int busy = 0;
	for (int i = 0; i < CARVE_NODE_SLOTS; i++) {
		struct carve_node_slot *s = &node->slots[i];
		uint32_t p = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);
		if (!p || s == slot)
			continue;
		uint64_t beat = __atomic_load_n(&s->beat_ns, __ATOMIC_ACQUIRE);
		if (newest && beat > *newest)
			*newest = beat;
		/* signed: a beat written after now was read is fresh, not 584 years old */
		int b = __atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) && (int64_t)(now - beat) < (int64_t)lease;
		busy += b;
		if (b || !busy_only)
			for (int w = 0; w < 4; w++)
				out[w] |= __atomic_load_n(&s->reserved[w], __ATOMIC_RELAXED);
	}
	return busy;
}

/* reap counts the BE's launches known done (under be_mu). A kernel's time
 * is the time between two completions seen back to back with the queue
 * not empty between them (or from its launch, if that was later). */
static void reap(void)
{
	while (tail != head && event_query(ring[tail % RING].ev) != CUDA_ERROR_NOT_READY) {
		uint64_t now = mono_ns(), from = ring[tail % RING].at > last_done ? ring[tail % RING].at : last_done;
		uint64_t kernels = ring[tail % RING].count - done_n;
		if (now > from && kernels > 0)
			kernel_ns = (3 * kernel_ns + (now - from) / kernels) / 4;
		last_done = now;
		done_n = ring[tail % RING].count;
		tail++;
	}
	__atomic_store_n(&carve_block->inflight, (uint32_t)(launched - done_n), __ATOMIC_RELAXED);
	__atomic_store_n(&carve_block->kernel_us, (uint32_t)(kernel_ns / 1000), __ATOMIC_RELAXED);
}

/* queue_full says whether one more launch would exceed the bounds. */
static int queue_full(uint32_t k, uint32_t queue_us)
{
	uint64_t n = launched - done_n;
	if (head - tail >= RING || (k && n >= k))
		return 1;
	return queue_us && n > 0 && n * kernel_ns > (uint64_t)queue_us * 1000;
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
	uint64_t start = mono_ns(), now = start;
	int waited = 0;
	tide_narrow = 0;
	uint64_t newest = 0; /* the latest LS heartbeat */
	pthread_mutex_lock(&be_mu);
	for (;;) {
		uint32_t lsmask[4] = {0, 0, 0, 0};
		newest = 0;
		if (!ls_reserved(lsmask, 1, &newest)) {
			held_since = 0;
			break;
		}
		if (may_run_narrow(now, share, epoch)) {
			tide_narrow = 1;
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
		now = mono_ns();
		pthread_mutex_lock(&be_mu);
	}
	/* a bounded queue: wait for the oldest (while no LS tenant has been
	 * busy for CARVE_NODE_QUIET_NS, only for room in the ring of events) */
	if (event_query) {
		uint64_t since = mono_ns();
		int quiet = !newest || (int64_t)(since - newest) >= (int64_t)CARVE_NODE_QUIET_NS;
		for (reap(); quiet ? head - tail >= RING : queue_full(k, queue_us); reap()) {
			if (head == tail || ring[(head - 1) % RING].count != launched)
				mark(last_stream); /* the launches waited on have no event yet */
			pthread_mutex_unlock(&be_mu);
			be_wait(since);
			pthread_mutex_lock(&be_mu);
		}
	}
	pthread_mutex_unlock(&be_mu);
	if (waited) {
		__atomic_add_fetch(&carve_block->held_ns, mono_ns() - start, __ATOMIC_RELAXED);
		__atomic_add_fetch(&carve_block->held_launches, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&carve_block->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
}

static void be_launch_after(CUstream s)
{
	if (!event_record || __atomic_load_n(&capturing, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&be_mu);
	int empty = launched == done_n;
	launched++;
	last_stream = s;
	if (empty || launched % MARK == 0)
		mark(s);
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

void carve_tide_mask(uint32_t mask[CARVE_MASK_WORDS], const uint32_t live[CARVE_MASK_WORDS])
{
	if (!cls)
		return;
	uint32_t off[4] = {0, 0, 0, 0}, m[4];
	if (cls == CARVE_CLASS_LS) {
		/* its own TPCs and every live one that no other LS tenant
		 * reserved and no partition outside tide holds */
		ls_reserved(off, 0, NULL);
		for (int w = 0; w < 4; w++) {
			uint32_t own = ~mask[w] & live[w];
			off[w] |= __atomic_load_n(&node->fixed[w], __ATOMIC_RELAXED);
			m[w] = (off[w] & ~own) | ~live[w];
		}
	} else if (tide_narrow) {
		ls_reserved(off, 1, NULL); /* off the reserved TPCs of busy LS tenants */
		for (int w = 0; w < 4; w++)
			m[w] = mask[w] | off[w];
	} else {
		return;
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
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, poller, NULL) != 0) {
			carve_say("the LS poller thread could not start: running as an ordinary partitioned tenant");
			__atomic_store_n(&slot->pid, 0, __ATOMIC_RELEASE);
			struct flock l = {.l_type = F_UNLCK, .l_whence = SEEK_SET,
			    .l_start = CARVE_NODE_SLOT_LOCK(slot - node->slots), .l_len = 1};
			fcntl(node_fd, F_SETLK, &l);
			slot = NULL;
			return;
		}
	} else {
		tokens_at = mono_ns();
	}
	__atomic_store_n(&c->tide_state, CARVE_TIDE_IDLE, __ATOMIC_RELAXED);
	cls = (int)k;
	CARVE_DEBUG("tide: %s tenant on node %s", k == CARVE_CLASS_LS ? "LS" : "BE", name);
}

__attribute__((destructor)) static void carve_tide_fini(void)
{
	if (slot) { /* leave the slot: no BE waits on a tenant that has gone */
		__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&slot->pid, 0, __ATOMIC_RELEASE);
	}
}
