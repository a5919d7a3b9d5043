/*
 * bw.c: a tenant's memory bandwidth share (carve_ctl.h's bw_* fields), any
 * class. Placement gives each tenant of a GPU with a share a slot of each
 * epoch (bw_off_ns, bw_len_ns of bw_epoch_ns, on CLOCK_MONOTONIC, which
 * every process of the node reads alike), apart from the slots of the
 * GPU's other such tenants. Before each launch on the GPU the gate lets it
 * go if now is in the slot and the launch's kernel, after the work the
 * tenant has in flight there, is predicted to end before the slot does;
 * else it waits for its slot's next start. A kernel longer than the whole
 * slot goes early in the slot (in its first quarter) with nothing in
 * flight. So the tenant's kernels run in its slot, and its DRAM traffic
 * is bounded by its share of the time (results/h100-580.159.04-2026-11-27,
 * bandwidth/: time gating holds a tenant's bandwidth to its share).
 *
 * Not strict (no CARVE_BW_STRICT), a tenant that finds no other with a
 * share on the GPU (looking once a PEEK_NS) runs ungated, at no cost; with
 * one, it also runs outside its slot while none wants its own: each says
 * until when it wants its slot in its own block (bw_want_ns: its latest
 * launch or wait, or the predicted end of its work in flight), and a stamp
 * younger than an epoch is a want. There it keeps at most an epoch of
 * predicted work in flight, so a neighbour that starts launching has its
 * slot back within about an epoch. The peers are the blocks of the
 * runtime directory with a share on one of our GPUs, read with pread (a
 * block cut short harms no one; one that cannot be read once opened
 * wants; one that cannot be opened is none), found anew when the
 * directory changes and every RESCAN_NS; past PEERS of them, every peer
 * wants. A tenant can write only its own block:
 * a stamp, forged or not, can cost others only the time outside their own
 * slots, never their slots, which depend on no one's stamp.
 *
 * Kernels are timed with events: each launch the gate lets through
 * reserves an entry of a ring, with an event recorded before it where
 * nothing was in flight, and one after it where it is marked: a launch
 * into an empty queue, every MARK-th of a run of launches queued behind
 * each other, and each until a kernel is timed (recording an event costs
 * about 2.5 us, too much on every one of many small kernels). A mark's elapsed time from the event
 * its run of launches is timed from (the before event of the run's first,
 * or the mark before) over the launches between is a kernel's time (an
 * EWMA). Launches with no mark are done when a mark after them is, or,
 * with none after them, once their predicted end has passed. Until
 * a kernel is timed, a launch goes only with nothing in flight. Waits are
 * carve_wait_until's, towards the slot's start. Launches into a
 * stream capture (any thread's) are not gated: they run when the graph does.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

static CUresult (*ev_create)(CUevent *, unsigned);
static CUresult (*ev_record)(CUevent, CUstream);
static CUresult (*ev_query)(CUevent);
static CUresult (*ev_elapsed)(float *, CUevent, CUevent);
static CUresult (*ev_destroy)(CUevent);

#define RING 64
#define PEERS 64
/* a mark every MARK-th launch of a run */
#define MARK 8
/* the entries are looked at REAP_NS after they last were, after a wait,
 * and where the ring is nearly full (asking the driver on every launch
 * costs more than the rest of the gate); the ring keeps MARK entries
 * spare, so that the event a run is timed from is not made anew before
 * the run's mark is seen done */
#define REAP_NS 20000
#define ROOM (RING - MARK - 1)
/* how often the peers' stamps are read at most, and the stamps written */
#define LOOK_NS 20000
/* how often a tenant that is not strict looks whether it has peers: with
 * none it runs ungated (no event, no wait) */
#define PEEK_NS 1000000
/* how often the peers are listed anew even where the directory's mtime
 * did not move (a coarse timestamp can miss a block renamed into place
 * within one tick of the last listing) */
#define RESCAN_NS 100000000

enum { FREE_ENTRY, RESERVED, RECORDED, DONE, UNMARKED, FAILED };
struct bw_entry {
	CUevent before, after;
	CUcontext before_ctx, after_ctx; /* the contexts they were made in */
	int state;
	int queued;       /* launched with work in flight */
	int mark;         /* an event is to be recorded after it */
	/* a mark's run: timed from entry from's before event (from_before) or
	 * after event, over the launches between (untimed: not at all) */
	unsigned from;
	int from_before, untimed;
};

/* the gate on one of the tenant's GPUs, under mu */
struct bw_gpu {
	pthread_mutex_t mu;
	uint64_t off, len, epoch; /* its slot */
	struct bw_entry ring[RING];
	unsigned head, tail; /* entries reserved; entries seen done */
	uint64_t kernel_ns;  /* a kernel's time (EWMA), once measured */
	int measured;
	uint64_t end_ns;     /* the predicted end of its work in flight */
	uint64_t looked_at;  /* when the peers' stamps were last read */
	int others;          /* and whether one wanted */
	uint64_t peeked_at;  /* when it last looked for peers (not strict) */
	int peeked, alone;   /* it has, and found none */
	uint64_t stamped;    /* the stamp last written */
	uint64_t reaped_at;  /* when the entries were last looked at */
	/* the current run of queued launches: timed from entry run_from's
	 * before event (run_before) or after event; none (run_none) where its
	 * first had no event */
	unsigned run_from;
	int run_before, run_none;
};
static struct bw_gpu gpus[CARVE_GPUS];
static int ngpus;
int carve_bw_on;
static int strict;

/* the peers: blocks of the runtime directory with a share, on our GPUs */
static pthread_mutex_t peers_mu = PTHREAD_MUTEX_INITIALIZER;
static char dir_path[4096];
static struct timespec dir_mtime;
static uint64_t scanned_at;
static int npeers, peers_full; /* more blocks with a share than PEERS: each of ours has peers that want */
static struct {
	int fd;
	uint32_t gpus; /* bit g: it has a slot on our GPU g */
} peers[PEERS];

/* this thread's launch: the GPU the gate let it through on and its entry */
static __thread __attribute__((tls_model("initial-exec"))) int t_gpu = CARVE_GPU_NONE;
static __thread __attribute__((tls_model("initial-exec"))) unsigned t_entry;

/* --- the peers -------------------------------------------------------------- */

/* peer_gpus: which of our GPUs block c (a peer's, as read) has a part on */
static uint32_t peer_gpus(const struct carve_ctl *c)
{
	uint32_t out = 0;
	static const uint8_t none[16];
	for (int g = 0; g < ngpus; g++) {
		const uint8_t *ours = (const uint8_t *)CARVE_PART(carve_block, g, gpu);
		for (int i = 0; i < CARVE_GPUS; i++) {
			const uint8_t *theirs = (const uint8_t *)CARVE_PART(c, i, gpu);
			if (i > 0 && !memcmp(theirs, none, 16)) /* the table's entries are used in order */
				break;
			if (!memcmp(ours, theirs, 16))
				out |= 1u << g;
		}
	}
	return out;
}

/* rescan finds the peers anew, where the directory changed or RESCAN_NS
 * passed (under peers_mu) */
static void rescan(void)
{
	struct stat st;
	uint64_t now = carve_mono_ns();
	if (stat(dir_path, &st) != 0 || (st.st_mtim.tv_sec == dir_mtime.tv_sec && st.st_mtim.tv_nsec == dir_mtime.tv_nsec &&
					  now - scanned_at < RESCAN_NS && now >= scanned_at))
		return;
	dir_mtime = st.st_mtim;
	scanned_at = now;
	for (int i = 0; i < npeers; i++)
		close(peers[i].fd);
	npeers = peers_full = 0;
	DIR *d = opendir(dir_path);
	if (!d)
		return;
	static struct carve_ctl c; /* under peers_mu */
	uint32_t self = __atomic_load_n(&carve_block->tenant, __ATOMIC_RELAXED);
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || strspn(e->d_name, "0123456789") != strlen(e->d_name))
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		uint32_t on = 0;
		if (pread(fd, &c, sizeof c, 0) == (ssize_t)sizeof c && c.magic == CARVE_CTL_MAGIC && c.bw_len_ns &&
		    c.tenant != self && (uint32_t)c.pid != (uint32_t)getpid())
			on = peer_gpus(&c);
		if (!on || npeers == PEERS) {
			peers_full |= on != 0;
			close(fd);
			continue;
		}
		peers[npeers].fd = fd;
		peers[npeers++].gpus = on;
	}
	closedir(d);
}

/* others: does another tenant of the runtime directory with a share on
 * our GPU g want its slot at now (its stamp younger than an epoch, or
 * ahead; a block that cannot be read wants), or, with any, is there one? */
static int others(int g, uint64_t now, uint64_t epoch, int any)
{
	pthread_mutex_lock(&peers_mu);
	rescan();
	int yes = peers_full;
	for (int i = 0; i < npeers && !yes; i++) {
		if (!(peers[i].gpus & (1u << g)))
			continue;
		uint64_t w = 0;
		yes = any || pread(peers[i].fd, &w, sizeof w, offsetof(struct carve_ctl, bw_want_ns)) != (ssize_t)sizeof w ||
		      (w && (int64_t)(now - w) < (int64_t)epoch);
	}
	pthread_mutex_unlock(&peers_mu);
	return yes;
}

/* --- timing ------------------------------------------------------------------ */

/* event makes *ev in the current context ctx where it is of another
 * (*made_in) */
static int event(CUevent *ev, CUcontext *made_in, CUcontext ctx)
{
	if (*ev && *made_in != ctx) {
		ev_destroy(*ev);
		*ev = NULL;
	}
	if (!*ev && ev_create(ev, 0) != CUDA_SUCCESS)
		*ev = NULL;
	*made_in = ctx;
	return *ev != NULL;
}

/* timed takes the time of the run a mark e (entry i, done) ends into the
 * kernels' time (under b->mu) */
static void timed(struct bw_gpu *b, struct bw_entry *e, unsigned i)
{
	unsigned n = i - e->from + (e->from_before ? 1 : 0);
	struct bw_entry *f = &b->ring[e->from % RING];
	CUevent ev = e->from_before ? f->before : f->after;
	CUcontext in = e->from_before ? f->before_ctx : f->after_ctx;
	float ms = -1;
	if (e->untimed || !n || n > RING || b->head - e->from >= RING || in != e->after_ctx || !ev ||
	    ev_elapsed(&ms, ev, e->after) != CUDA_SUCCESS || ms < 0)
		return;
	uint64_t m = (uint64_t)(ms * 1e6 / n + 0.5);
	b->kernel_ns = b->measured ? (3 * b->kernel_ns + m) / 4 : m;
	b->measured = 1;
}

/* reap counts the entries done (under b->mu), times their kernels and
 * adds a kernel's time for each launch done to the block's bw_busy_ns */
static void reap(struct bw_gpu *b, uint64_t now)
{
	unsigned from = b->tail, failed = 0;
	while (b->tail != b->head) {
		struct bw_entry *e = &b->ring[b->tail % RING];
		if (e->state == UNMARKED) { /* done with the next mark, or with none once predicted to be */
			unsigned j = b->tail;
			while (j != b->head && b->ring[j % RING].state == UNMARKED)
				j++;
			struct bw_entry *m = &b->ring[j % RING];
			if (j != b->head && m->state == RECORDED && ev_query(m->after) != CUDA_ERROR_NOT_READY)
				m->state = DONE;
			if (j == b->head ? now < b->end_ns : m->state != DONE && m->state != FAILED)
				break;
			while (b->tail != j)
				b->ring[b->tail++ % RING].state = FREE_ENTRY;
			continue;
		}
		failed += e->state == FAILED;
		if (e->state == RESERVED || (e->state == RECORDED && ev_query(e->after) == CUDA_ERROR_NOT_READY))
			break;
		if (e->state == RECORDED || e->state == DONE)
			timed(b, e, b->tail);
		e->state = FREE_ENTRY;
		b->tail++;
	}
	if (b->measured && b->tail - from > failed)
		__atomic_add_fetch(&carve_block->bw_busy_ns, (b->tail - from - failed) * b->kernel_ns, __ATOMIC_RELAXED);
}

/* --- the gate ---------------------------------------------------------------- */

/* stamp says in our block until when we want our slot (b->mu held) */
static void stamp(struct bw_gpu *b, uint64_t now)
{
	uint64_t w = b->end_ns > now ? b->end_ns : now;
	if (w - b->stamped >= LOOK_NS || w < b->stamped) {
		b->stamped = w;
		__atomic_store_n(&carve_block->bw_want_ns, w, __ATOMIC_RELAXED);
	}
}

void carve_bw_launch_before(int g, CUstream s, CUcontext ctx)
{
	t_gpu = CARVE_GPU_NONE;
	if (g < 0 || g >= ngpus || !gpus[g].len || carve_tide_capturing())
		return;
	struct bw_gpu *b = &gpus[g];
	uint64_t start = carve_mono_ns(), now = start;
	int held = 0;
	pthread_mutex_lock(&b->mu);
	if (!strict) { /* alone among the GPU's shares: nothing to keep to */
		if (!b->peeked || now - b->peeked_at >= PEEK_NS || now < b->peeked_at) {
			b->peeked = 1;
			b->peeked_at = now;
			b->alone = !others(g, now, b->epoch, 1);
		}
		if (b->alone) {
			pthread_mutex_unlock(&b->mu);
			return;
		}
	}
	for (;;) {
		if (held || b->head - b->tail >= ROOM - 1 || now - b->reaped_at >= REAP_NS || now < b->reaped_at) {
			reap(b, now);
			b->reaped_at = now;
		}
		stamp(b, now);
		int idle = b->head == b->tail;
		uint64_t from = idle || b->end_ns < now ? now : b->end_ns, k = b->measured ? b->kernel_ns : 0;
		/* the predicted end drifts where kernels end sooner than predicted:
		 * no later than the launches in flight (each seen done by its
		 * event) one kernel's time each */
		if (!idle && b->measured && now + (b->head - b->tail) * k < from)
			from = now + (b->head - b->tail) * k;
		uint64_t pos = (now % b->epoch + b->epoch - b->off % b->epoch) % b->epoch; /* since the slot's start */
		uint64_t next = now - pos + b->epoch, until = next;                       /* its next start */
		int room = b->head - b->tail < ROOM, go = 0;
		if (pos < b->len) {
			uint64_t end = now - pos + b->len;
			if (b->measured)
				go = from + k <= end || (idle && k >= b->len && pos <= b->len / 4);
			else
				go = idle;
			if (!go && now + k <= end) /* it fits once the work in flight is done */
				until = now;
		}
		if (!go && !strict) {
			if (now - b->looked_at >= LOOK_NS || now < b->looked_at) {
				b->looked_at = now;
				b->others = others(g, now, b->epoch, 0);
			}
			/* free: at most an epoch of work in flight */
			if (!b->others && (idle || (b->measured && from + k <= now + b->epoch)))
				go = 1;
			else if (!b->others)
				until = now;
		}
		if (go && room) {
			b->end_ns = from + k;
			stamp(b, now);
			break;
		}
		if (go) /* the ring full: wait for a quarter of it to be done, no
			 * longer (its slot's time is not to be napped away) */
			until = now + (b->measured ? ROOM / 4 * b->kernel_ns : 0);
		held = 1;
		pthread_mutex_unlock(&b->mu);
		carve_wait_until(start, until);
		now = carve_mono_ns();
		pthread_mutex_lock(&b->mu);
	}
	/* the launch's entry, and an event before it where nothing is in
	 * flight: a run begins */
	struct bw_entry *e = &b->ring[b->head % RING];
	e->state = RESERVED;
	e->queued = b->head != b->tail;
	if (!e->queued) {
		b->run_from = b->head;
		b->run_none = !(event(&e->before, &e->before_ctx, ctx) && ev_record(e->before, s) == CUDA_SUCCESS);
		b->run_before = !b->run_none;
	}
	e->mark = !b->measured || !e->queued || b->head - b->run_from + 1 >= MARK;
	t_entry = b->head++;
	t_gpu = g;
	pthread_mutex_unlock(&b->mu);
	if (held) {
		__atomic_add_fetch(&carve_block->bw_held_ns, carve_mono_ns() - start, __ATOMIC_RELAXED);
		__atomic_add_fetch(&carve_block->bw_held_launches, 1, __ATOMIC_RELAXED);
	}
}

void carve_bw_launch_after(CUstream s, CUcontext ctx, CUresult r)
{
	int g = t_gpu;
	if (g < 0)
		return;
	t_gpu = CARVE_GPU_NONE;
	struct bw_gpu *b = &gpus[g];
	pthread_mutex_lock(&b->mu);
	struct bw_entry *e = &b->ring[t_entry % RING];
	if (r != CUDA_SUCCESS) {
		e->state = FAILED;
	} else if (!e->mark) {
		e->state = UNMARKED;
	} else {
		e->state = event(&e->after, &e->after_ctx, ctx) && ev_record(e->after, s) == CUDA_SUCCESS ? RECORDED : FAILED;
		/* this mark ends its run, and the next run is timed from it */
		e->from = b->run_from;
		e->from_before = b->run_before;
		e->untimed = b->run_none;
		b->run_from = t_entry;
		b->run_before = 0;
		b->run_none = e->state != RECORDED;
	}
	pthread_mutex_unlock(&b->mu);
}

/* --- at load ----------------------------------------------------------------- */

void carve_bw_init(void *cuda, const char *dir)
{
	struct carve_ctl *c = carve_block;
	uint64_t len = c->bw_len_ns, epoch = c->bw_epoch_ns;
	if (!len || !dir)
		return;
	ev_create = carve_real_dlsym(cuda, "cuEventCreate");
	ev_record = carve_real_dlsym(cuda, "cuEventRecord");
	ev_query = carve_real_dlsym(cuda, "cuEventQuery");
	ev_elapsed = carve_real_dlsym(cuda, "cuEventElapsedTime");
	ev_destroy = carve_real_dlsym(cuda, "cuEventDestroy_v2");
	if (!ev_create || !ev_record || !ev_query || !ev_elapsed || !ev_destroy) {
		carve_say("the driver lacks events: the bandwidth share is not kept");
		return;
	}
	if (!epoch)
		epoch = CARVE_BW_EPOCH_NS;
	if (len > epoch)
		len = epoch;
	strict = (c->bw_flags & CARVE_BW_STRICT) != 0;
	snprintf(dir_path, sizeof dir_path, "%s", dir);
	ngpus = carve_gpus();
	for (int g = 0; g < ngpus; g++) {
		pthread_mutex_init(&gpus[g].mu, NULL);
		gpus[g].off = CARVE_PART(c, g, bw_off_ns);
		gpus[g].len = len;
		gpus[g].epoch = epoch;
	}
	CARVE_DEBUG("bandwidth: a slot of %llu us at %llu us of each %llu us%s", (unsigned long long)len / 1000,
		    (unsigned long long)gpus[0].off / 1000, (unsigned long long)epoch / 1000, strict ? ", strict" : "");
	carve_bw_on = 1;
}
