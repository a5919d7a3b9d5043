/*
 * tide_node.c: the tenant's GPUs in tide, each with its node block, LS
 * files and BE files (carve_node.h): mapping them, an LS tenant's entry in
 * its seat's LS file (taken, marked busy, given up at exit), what the
 * node says of the LS tenants, read by the BE gate (tide_be.c) and an LS
 * tenant's mask (tide.c): who is busy with a fresh heartbeat, and the TPCs
 * they reserved. The BE files are tide_befile.c's. The node block is
 * carve's: shims map it read-only. tide.c says how tide works.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "carve_node.h"
#include "shim.h"

/* tide's state, every side's */
struct carve_tide_gpu carve_tide_gpus[CARVE_GPUS];
int carve_tide_ngpus;
int carve_tide_cls;      /* CARVE_CLASS_LS or _BE while tide is on */
int carve_tide_captures; /* captures under way in the process */

/* carve_tide_set_busy says in our entry on GPU g and in its LS file's busy
 * bits whether we are. */
void carve_tide_set_busy(int g, int b)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	uint32_t bit = 1u << (G->proc - G->ls->procs);
	__atomic_store_n(&G->proc->busy, (uint32_t)b, __ATOMIC_SEQ_CST);
	if (b)
		__atomic_or_fetch(&G->ls->busy, bit, __ATOMIC_RELEASE);
	else
		__atomic_and_fetch(&G->ls->busy, ~bit, __ATOMIC_RELEASE);
}

/* lease_ok says whether a heartbeat at beat is younger than the lease of
 * node n: the block's, but never longer than CARVE_NODE_LEASE_NS, the
 * lease carve sets (a block of an older carve's, or of a user's carve in a
 * shared node directory, may say more). A
 * beat written after now was read is fresh (signed: not 584 years old),
 * but one more than a lease ahead of now was never written by a clock
 * that shims share, and is stale: so a slot that no LS tenant renews holds
 * BE tenants back for a lease at most, whatever the block says. */
static int lease_ok(const struct carve_node *n, uint64_t beat, uint64_t now)
{
	uint64_t lease = __atomic_load_n(&n->lease_ns, __ATOMIC_RELAXED);
	if (!lease || lease > CARVE_NODE_LEASE_NS)
		lease = CARVE_NODE_LEASE_NS;
	int64_t age = (int64_t)(now - beat);
	return age < (int64_t)lease && age > -(int64_t)lease;
}

/* timing_fresh: is a timing stamp at timed younger than
 * CARVE_NODE_TIMING_NS at now? One ahead of now was not written by a
 * clock that shims share, and holds no one back. */
static int timing_fresh(uint64_t timed, uint64_t now)
{
	return timed && now - timed < CARVE_NODE_TIMING_NS;
}

/* the distance between two seats' LS files in peers: CARVE_LS_SIZE
 * rounded up to a page (64 KiB on some arm64 kernels), so that each is
 * mapped at a page of its own (set at join) */
size_t carve_peer_stride = CARVE_LS_SIZE;

/* carve_tide_open opens path without following a link, and without waiting on a
 * FIFO someone put there (O_NONBLOCK changes nothing for a regular file). */
int carve_tide_open(const char *path, int rw)
{
	return open(path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
}

/* peers brings GPU g's map of the seats' LS files up to the node's gen
 * (a BE tenant's): each used seat whose serial moved has its LS file mapped
 * over its place, read-only, or zeros where it cannot be (a seat with no
 * LS file holds no one back). A mapping replaces the one before at the same
 * address, so a thread reading it meanwhile reads one or the other. */
static pthread_mutex_t peers_mu = PTHREAD_MUTEX_INITIALIZER;
static void peers(int g)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	uint32_t gen = __atomic_load_n(&G->node->gen, __ATOMIC_ACQUIRE);
	uint64_t retry = __atomic_load_n(&G->peers_retry, __ATOMIC_RELAXED);
	if (__atomic_load_n(&G->peers_valid, __ATOMIC_ACQUIRE) && __atomic_load_n(&G->peers_gen, __ATOMIC_RELAXED) == gen &&
	    (!retry || carve_coarse_ns() == retry))
		return;
	pthread_mutex_lock(&peers_mu);
	uint32_t used = __atomic_load_n(&G->node->used, __ATOMIC_ACQUIRE);
	int failed = 0;
	for (int i = 0; i < CARVE_NODE_SLOTS; i++) {
		uint32_t serial = (used & (1u << i)) ? __atomic_load_n(&G->node->slots[i].serial, __ATOMIC_ACQUIRE) : 0;
		if (serial == G->serial[i])
			continue;
		char *at = G->peers + (size_t)i * carve_peer_stride, path[PATH_MAX];
		int fd = -1, mapped = 0;
		struct stat st;
		if (serial && G->seat != i &&
		    snprintf(path, sizeof path, "%s/" CARVE_NODE_LS_FILE, G->dir, (unsigned)i, (unsigned)serial) < (int)sizeof path)
			fd = carve_tide_open(path, 0);
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == CARVE_LS_SIZE &&
		    mmap(at, CARVE_LS_SIZE, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED)
			mapped = 1;
		else
			mmap(at, CARVE_LS_SIZE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (fd >= 0)
			close(fd);
		/* a seat whose file could not be mapped (gone for a moment, no
		 * descriptor left, not readable yet) is tried again: it is not
		 * taken as mapped until it is */
		G->serial[i] = mapped || !serial ? serial : 0;
		failed |= serial && !mapped;
	}
	__atomic_store_n(&G->peers_retry, failed ? carve_coarse_ns() : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&G->peers_gen, gen, __ATOMIC_RELAXED);
	__atomic_store_n(&G->peers_valid, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&peers_mu);
}

/* carve_tide_ls_busy returns how many LS tenants hold BE tenants back on
 * GPU g now: those with a process with work in flight there (with a fresh
 * heartbeat), and those that recorded a timing event in the last
 * CARVE_NODE_TIMING_NS, busy or not (an autotuner goes idle between its
 * candidates, and a BE kernel launched then would run beside the next
 * one's timing), ORing their reserved TPCs (the node block's, carve's)
 * into out if given, and counting in *timing (if given) those that timed.
 * With none, *newest (if given) gets the latest heartbeat of any (0: none
 * has been busy); it is read only then. Into near (if given) go the
 * reserved TPCs of those with a heartbeat (written while busy) in the last
 * CARVE_NODE_QUIET_NS: those whose next request a BE steered by the SLO
 * controller keeps off between their busy periods (tide_be.c). Only the
 * seats the node block names are read, each in its own LS file. */
int carve_tide_ls_busy(int g, uint32_t out[4], uint64_t *newest, int *timing, uint32_t near[4])
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	struct carve_node *node = G->node;
	if (!G->peers)
		return 0;
	peers(g);
	uint32_t used = __atomic_load_n(&node->used, __ATOMIC_ACQUIRE);
	int busy = 0;
	uint64_t now = 0, latest = 0, coarse = near ? carve_coarse_ns() : 0;
	for (int i = 0; i < CARVE_NODE_SLOTS && used >> i; i++) {
		if (!(used & (1u << i)) || i == G->seat)
			continue;
		const struct carve_ls *ls = (const struct carve_ls *)(G->peers + (size_t)i * carve_peer_stride);
		uint32_t bits = __atomic_load_n(&ls->busy, __ATOMIC_ACQUIRE);
		uint64_t timed = __atomic_load_n(&ls->timing_ns, __ATOMIC_ACQUIRE);
		if (newest || near) {
			uint64_t b = __atomic_load_n(&ls->beat_ns, __ATOMIC_RELAXED);
			latest = b > latest ? b : latest;
			if (near && carve_tide_active(0, b, coarse))
				for (int w = 0; w < 4; w++)
					near[w] |= __atomic_load_n(&node->slots[i].reserved[w], __ATOMIC_RELAXED);
		}
		if (!bits && !timed)
			continue;
		if (!now)
			now = carve_mono_ns();
		int timed_now = timing_fresh(timed, now), on = timed_now;
		for (int j = 0; !on && j < CARVE_LS_PROCS; j++)
			on = (bits & (1u << j)) && __atomic_load_n(&ls->procs[j].busy, __ATOMIC_ACQUIRE) &&
			     lease_ok(node, __atomic_load_n(&ls->procs[j].beat_ns, __ATOMIC_ACQUIRE), now);
		if (!on)
			continue;
		busy++;
		if (timing && timed_now)
			(*timing)++;
		if (out)
			for (int w = 0; w < 4; w++)
				out[w] |= __atomic_load_n(&node->slots[i].reserved[w], __ATOMIC_RELAXED);
	}
	if (!busy && newest)
		*newest = latest;
	return busy;
}

/* carve_tide_active: is LS work on a GPU active at time t, busy LS tenants
 * there, or newest (carve_tide_ls_busy's, while none is) in the last
 * CARVE_NODE_QUIET_NS? What bounds a BE's queue, and what slicing cuts
 * for. A heartbeat more than a lease ahead of t was not written by a
 * clock shims share (a tenant wrote it into its LS file), and says
 * nothing. */
int carve_tide_active(int busy, uint64_t newest, uint64_t t)
{
	int64_t age = (int64_t)(t - newest);
	return busy || (newest && age < (int64_t)CARVE_NODE_QUIET_NS && age > -(int64_t)CARVE_NODE_LEASE_NS);
}

/* carve_tide_ls_off is what an LS tenant's launches on GPU g keep off: the TPCs
 * other LS tenants reserved there and the fixed ones, as enable bits. It
 * is worked out again only when the GPU or its node's gen has moved (per
 * thread: launches of many threads share nothing here). */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	uint32_t gen, valid;
	int gpu;
	uint32_t off[4];
} ls_off_cache;

void carve_tide_ls_off(int g, uint32_t off[4])
{
	struct carve_node *node = carve_tide_gpus[g].node;
	uint32_t gen = __atomic_load_n(&node->gen, __ATOMIC_ACQUIRE);
	if (!ls_off_cache.valid || ls_off_cache.gen != gen || ls_off_cache.gpu != g) {
		uint32_t m[4];
		for (int w = 0; w < 4; w++)
			m[w] = __atomic_load_n(&node->fixed[w], __ATOMIC_RELAXED);
		for (int i = 0; i < CARVE_NODE_SLOTS; i++) {
			struct carve_node_slot *s = &node->slots[i];
			if (i == carve_tide_gpus[g].seat || !(__atomic_load_n(&node->used, __ATOMIC_ACQUIRE) & (1u << i)))
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

/* --- joining the nodes ------------------------------------------------------ */

/* map_file maps the file path of size bytes, read-write (rw) or read-only,
 * shared; its descriptor into *fd if fd is given (else closed). A link, a
 * file of another size, or one that is not regular is not mapped. */
static void *map_file(const char *path, size_t size, int rw, int *fd)
{
	int f = carve_tide_open(path, rw);
	if (f < 0)
		return NULL;
	struct stat st;
	void *p = MAP_FAILED;
	if (fstat(f, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == (off_t)size)
		p = mmap(NULL, size, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, f, 0);
	if (p == MAP_FAILED || !fd)
		close(f);
	else
		*fd = f;
	return p == MAP_FAILED ? NULL : p;
}

/* map_node maps the node block name in dir, read-only: carve's alone. */
static struct carve_node *map_node(const char *dir, const char *name)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return NULL;
	struct carve_node *n = map_file(path, CARVE_NODE_SIZE, 0, NULL);
	if (n && (n->magic != CARVE_NODE_MAGIC || n->version != CARVE_NODE_VERSION || n->size != CARVE_NODE_SIZE)) {
		munmap(n, CARVE_NODE_SIZE);
		return NULL;
	}
	return n;
}

/* unmap_node takes GPU g out of tide. */
static void unmap_node(int g)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	munmap(G->node, CARVE_NODE_SIZE);
	if (G->ls) {
		munmap(G->ls, CARVE_LS_SIZE);
		close(G->ls_fd);
	}
	if (G->bef)
		munmap(G->bef, CARVE_BE_SIZE);
	if (G->peers)
		munmap(G->peers, (size_t)CARVE_NODE_SLOTS * carve_peer_stride);
	if (G->bes)
		munmap(G->bes, (size_t)CARVE_NODE_BE_FILES * carve_peer_stride);
	G->node = NULL;
	G->ls = NULL;
	G->proc = NULL;
	G->bef = NULL;
	G->peers = NULL;
	G->bes = NULL;
}

/* lock_proc takes entry i's lock of GPU g's LS file (see carve_node.h), or
 * lets go of it, without waiting: 1 if done, 0 if a live process holds it. */
static int lock_proc(int g, int i, short type)
{
	struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = CARVE_LS_PROC_LOCK(i), .l_len = 1};
	return fcntl(carve_tide_gpus[g].ls_fd, F_SETLK, &l) == 0;
}

/* take_proc claims an entry of GPU g's LS file whose lock no live process
 * holds, preferring free ones; the pid is written only once the lock is
 * ours. */
static struct carve_ls_proc *take_proc(int g)
{
	struct carve_ls *ls = carve_tide_gpus[g].ls;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < CARVE_LS_PROCS; i++) {
			struct carve_ls_proc *s = &ls->procs[i];
			uint32_t p = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);
			if ((pass == 0) != (p == 0) || !lock_proc(g, i, F_WRLCK))
				continue;
			__atomic_store_n(&s->busy, 0, __ATOMIC_RELAXED);
			__atomic_and_fetch(&ls->busy, ~(1u << i), __ATOMIC_RELEASE);
			__atomic_store_n(&s->timing_ns, 0, __ATOMIC_RELAXED);
			s->busy_ns = s->requests = 0;
			__atomic_store_n(&s->pid, (uint32_t)getpid(), __ATOMIC_RELEASE);
			return s;
		}
	}
	return NULL;
}

/* leave_proc gives our entry of GPU g's LS file up: no BE waits on a
 * process that has gone. */
static void leave_proc(int g, int unlock)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	carve_tide_set_busy(g, 0);
	__atomic_store_n(&G->proc->pid, 0, __ATOMIC_RELEASE);
	if (unlock)
		lock_proc(g, (int)(G->proc - G->ls->procs), F_UNLCK);
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

/* join_ls maps the LS tenant's own LS file on GPU g and takes an entry
 * there: 1 if done, 0 with no such file, -1 with every entry taken. A
 * tenant of carve run finds its seat in the node block (carve's) by its
 * pid (the control block's tenant) and opens the seat's file in the GPU's
 * directory; a claim's (tenant 0) is linked into the claim's directory
 * (dir/NAME.ls-0), its pod's, where the GPU's directory is read-only. */
static int join_ls(int g, const char *dir, const char *name)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	char path[PATH_MAX];
	int n = -1;
	if (carve_block->tenant) {
		uint32_t used = __atomic_load_n(&G->node->used, __ATOMIC_ACQUIRE);
		for (int i = 0; i < CARVE_NODE_SLOTS; i++) {
			const struct carve_node_slot *s = &G->node->slots[i];
			if ((used & (1u << i)) && __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE) == CARVE_SEAT_TENANT &&
			    __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) == carve_block->tenant) {
				n = snprintf(path, sizeof path, "%s/" CARVE_NODE_LS_FILE, G->dir, (unsigned)i,
					     (unsigned)__atomic_load_n(&s->serial, __ATOMIC_ACQUIRE));
				break;
			}
		}
	} else {
		n = snprintf(path, sizeof path, "%s/%s" CARVE_NODE_LS_LINK "0", dir, name);
	}
	if (n < 0 || n >= (int)sizeof path)
		return 0;
	struct carve_ls *ls = map_file(path, CARVE_LS_SIZE, 1, &G->ls_fd);
	if (!ls)
		return 0;
	uint32_t seat = ls->slot;
	if (ls->magic != CARVE_LS_MAGIC || ls->version != CARVE_NODE_VERSION || seat >= CARVE_NODE_SLOTS ||
	    !(__atomic_load_n(&G->node->used, __ATOMIC_ACQUIRE) & (1u << seat))) {
		munmap(ls, CARVE_LS_SIZE);
		close(G->ls_fd);
		return 0;
	}
	G->ls = ls;
	G->seat = (int)seat;
	if (!(G->proc = take_proc(g))) {
		munmap(ls, CARVE_LS_SIZE);
		close(G->ls_fd);
		G->ls = NULL;
		return -1;
	}
	return 1;
}

/* --- files another tenant may cut short ------------------------------------ */

/* A file another tenant may write (a seat's LS file, a BE file)
 * may be cut short under our mapping, and a read or write of it would then
 * end the process with SIGBUS. The handler maps zeros over the file's
 * place instead (it reads as no one busy, no BE launch; writes go
 * nowhere) and passes any other SIGBUS on, to the handler there was before
 * or to the default, which ends the process as it would have. */
static struct sigaction bus_old;

static int in(const char *a, const void *base, size_t len)
{
	return base && a >= (const char *)base && a < (const char *)base + len;
}

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	const char *a = si->si_addr;
	for (int g = 0; si->si_code > 0 && g < carve_tide_ngpus; g++) { /* a fault, not a kill */
		struct carve_tide_gpu *G = &carve_tide_gpus[g];
		void *base = NULL;
		size_t len = 0;
		int prot = PROT_READ;
		if (in(a, G->peers, (size_t)CARVE_NODE_SLOTS * carve_peer_stride)) {
			size_t i = (size_t)(a - G->peers) / carve_peer_stride;
			base = G->peers + i * carve_peer_stride, len = CARVE_LS_SIZE;
			/* mapped again (with its size checked) at the next look,
			 * should the seat's file have been remapped meanwhile */
			__atomic_store_n(&G->serial[i], 0, __ATOMIC_RELAXED);
			__atomic_store_n(&G->peers_valid, 0, __ATOMIC_RELEASE);
		} else if (in(a, G->bes, (size_t)CARVE_NODE_BE_FILES * carve_peer_stride)) {
			size_t i = (size_t)(a - G->bes) / carve_peer_stride;
			base = G->bes + i * carve_peer_stride, len = CARVE_BE_SIZE;
			G->bes_listed = 0; /* listed and mapped again at the next look, its place not counted as mapped */
			G->be_ino[i] = 0;
		} else if (in(a, G->bef, CARVE_BE_SIZE)) {
			base = G->bef, len = CARVE_BE_SIZE, prot |= PROT_WRITE;
			__atomic_store_n(&G->bef_ino, 0, __ATOMIC_RELAXED); /* mapped again at the next look */
		} else if (in(a, G->ls, CARVE_LS_SIZE)) {
			base = G->ls, len = CARVE_LS_SIZE, prot |= PROT_WRITE;
		} else if (in(a, G->node, CARVE_NODE_SIZE)) { /* root's, but one a user made is that user's to cut until taken over */
			base = G->node, len = CARVE_NODE_SIZE;
		}
		if (base && mmap(base, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
			return;
	}
	if (bus_old.sa_flags & SA_SIGINFO) {
		bus_old.sa_sigaction(sig, si, uc);
	} else if (bus_old.sa_handler != SIG_DFL && bus_old.sa_handler != SIG_IGN) {
		bus_old.sa_handler(sig);
	} else {
		/* as without the handler: pending while it runs, the signal ends
		 * the process once it returns (a kill as well as a fault) */
		signal(SIGBUS, SIG_DFL);
		raise(SIGBUS);
	}
}

/* carve_tide_guard sets the handler, once the GPUs have joined. */
void carve_tide_guard(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &bus_old);
}

/* carve_tide_join maps the node block of the tenant's GPU g in dir and,
 * for an LS tenant (ls), takes an entry in its seat's LS file and makes
 * room for the GPU's BE files; for a BE tenant it makes room for the
 * seats' LS files (tide_be.c's join maps its own BE file). The
 * node's name goes into name: 1 if done; 0 if GPU g takes no part (said,
 * where the block names a node for it). */
int carve_tide_join(int g, const char *dir, int ls, char name[64])
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	node_name(g, name);
	if (!name[0])
		return 0;
	G->seat = -1;
	if (!(G->node = map_node(dir, name))) {
		carve_say("node block %s/%s cannot be mapped: running as an ordinary partitioned tenant%s", dir, name,
			  carve_tide_ngpus > 1 ? " on its GPU" : "");
		return 0;
	}
	memset(G->serial, 0, sizeof G->serial);
	memset(G->be_ino, 0, sizeof G->be_ino);
	G->peers_valid = 0;
	G->peers_retry = 0;
	G->bes_n = G->bes_over = 0;
	G->bes_listed = G->bes_checked = G->bef_looked = G->bef_ino = 0;
	long page = sysconf(_SC_PAGESIZE);
	if (page > 0)
		carve_peer_stride = ((size_t)CARVE_LS_SIZE + (size_t)page - 1) / (size_t)page * (size_t)page;
	if (snprintf(G->dir, sizeof G->dir, "%s/%s" CARVE_NODE_DIR_SUFFIX, dir, name) >= (int)sizeof G->dir) {
		unmap_node(g);
		return 0;
	}
	if (ls) {
		int joined = join_ls(g, dir, name);
		if (joined < 1) {
			if (joined < 0)
				carve_say("the tenant's LS file on %s has all its %d entries taken by its processes: "
					  "this one runs as an ordinary partitioned tenant%s",
					  name, CARVE_LS_PROCS, carve_tide_ngpus > 1 ? " on its GPU" : "");
			else
				carve_say("no LS seat of this tenant's (pid %u) in the node block %s, or no LS file of it: "
					  "running as an ordinary partitioned tenant%s",
					  carve_block->tenant, name, carve_tide_ngpus > 1 ? " on its GPU" : "");
			unmap_node(g);
			return 0;
		}
		void *p = mmap(NULL, (size_t)CARVE_NODE_BE_FILES * carve_peer_stride, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			leave_proc(g, 1);
			unmap_node(g);
			return 0;
		}
		G->bes = p;
	} else {
		void *p = mmap(NULL, (size_t)CARVE_NODE_SLOTS * carve_peer_stride, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			unmap_node(g);
			return 0;
		}
		G->peers = p;
	}
	return 1;
}

/* carve_tide_leave gives up the LS tenant's entries and takes its GPUs out
 * of tide. */
void carve_tide_leave(void)
{
	for (int g = 0; g < carve_tide_ngpus; g++) {
		if (carve_tide_gpus[g].proc) {
			leave_proc(g, 1);
			unmap_node(g);
		}
	}
}

__attribute__((destructor)) static void carve_tide_fini(void)
{
	for (int g = 0; g < carve_tide_ngpus; g++)
		if (carve_tide_gpus[g].proc)
			leave_proc(g, 0);
}
