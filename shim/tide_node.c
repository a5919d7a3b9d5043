/*
 * tide_node.c: the tenant's GPUs in tide, each with its node block
 * (carve_node.h): mapping it, an LS tenant's slot there (taken, marked
 * busy, given up at exit), and what the node says of the LS tenants, read
 * by the BE gate (tide_be.c) and an LS tenant's mask (tide.c): who is busy
 * with a fresh heartbeat, and the TPCs they reserved. tide.c says how
 * tide works.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
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

/* carve_tide_set_busy says in our slot on GPU g and in its node's busy bits whether
 * we are. */
void carve_tide_set_busy(int g, int b)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	uint32_t bit = 1u << (G->slot - G->node->slots);
	__atomic_store_n(&G->slot->busy, (uint32_t)b, __ATOMIC_SEQ_CST);
	if (b)
		__atomic_or_fetch(&G->node->busy, bit, __ATOMIC_RELEASE);
	else
		__atomic_and_fetch(&G->node->busy, ~bit, __ATOMIC_RELEASE);
}

/* lease_ok says whether a heartbeat at beat is younger than the lease of
 * node n: the block's, but never longer than CARVE_NODE_LEASE_NS, the
 * lease carve sets, since every tenant of the GPU may write the block. A
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

/* carve_tide_ls_busy returns how many LS tenants hold BE tenants back on
 * GPU g now: those with work in flight there (with a fresh heartbeat),
 * and those that recorded a timing event in the last CARVE_NODE_TIMING_NS,
 * busy or not (an autotuner goes idle between its candidates, and a BE
 * kernel launched then would run beside the next one's timing), ORing
 * their reserved TPCs (enable bits) into out if given, and counting in
 * *timing (if given) those that timed. With none, *newest (if given) gets
 * the latest heartbeat of any (0: none has been busy); it is read only
 * then. */
int carve_tide_ls_busy(int g, uint32_t out[4], uint64_t *newest, int *timing)
{
	struct carve_node *node = carve_tide_gpus[g].node;
	const struct carve_node_slot *own = carve_tide_gpus[g].slot;
	uint32_t bits = __atomic_load_n(&node->busy, __ATOMIC_ACQUIRE);
	int busy = 0;
	uint64_t now = 0;
	for (int i = 0; i < CARVE_NODE_SLOTS; i++) {
		struct carve_node_slot *s = &node->slots[i];
		uint64_t timed = __atomic_load_n(&node->timing_ns[i], __ATOMIC_ACQUIRE);
		if (s == own || (!(bits & (1u << i)) && !timed))
			continue;
		if (!now)
			now = carve_mono_ns();
		int timed_now = timing_fresh(timed, now);
		if (!timed_now && !(bits & (1u << i) && __atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) &&
				    lease_ok(node, __atomic_load_n(&s->beat_ns, __ATOMIC_ACQUIRE), now)))
			continue;
		busy++;
		if (timing && timed_now)
			(*timing)++;
		if (out)
			for (int w = 0; w < 4; w++)
				out[w] |= __atomic_load_n(&s->reserved[w], __ATOMIC_RELAXED);
	}
	if (!busy && newest)
		*newest = __atomic_load_n(&node->beat_ns, __ATOMIC_RELAXED);
	return busy;
}

/* carve_tide_active: is LS work on a GPU active at time t, busy LS tenants
 * there, or newest (carve_tide_ls_busy's, while none is) in the last
 * CARVE_NODE_QUIET_NS? What bounds a BE's queue, and what slicing cuts
 * for. */
int carve_tide_active(int busy, uint64_t newest, uint64_t t)
{
	return busy || (newest && (int64_t)(t - newest) < (int64_t)CARVE_NODE_QUIET_NS);
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
			if (s == carve_tide_gpus[g].slot || !__atomic_load_n(&s->pid, __ATOMIC_ACQUIRE))
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
	carve_tide_gpus[g].fd = fd;
	return n;
}

/* unmap_node takes GPU g out of tide. */
static void unmap_node(int g)
{
	munmap(carve_tide_gpus[g].node, CARVE_NODE_SIZE);
	close(carve_tide_gpus[g].fd);
	carve_tide_gpus[g].node = NULL;
	carve_tide_gpus[g].slot = NULL;
}

/* lock_slot takes slot i's lock of GPU g's node (see carve_node.h), or
 * lets go of it, without waiting: 1 if done, 0 if a live process holds it. */
static int lock_slot(int g, int i, short type)
{
	struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = CARVE_NODE_SLOT_LOCK(i), .l_len = 1};
	return fcntl(carve_tide_gpus[g].fd, F_SETLK, &l) == 0;
}

/* take_slot claims a slot of GPU g's node whose lock no live process
 * holds, preferring free ones; the pid is written only once the lock is
 * ours. */
static struct carve_node_slot *take_slot(int g)
{
	struct carve_node *node = carve_tide_gpus[g].node;
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
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	carve_tide_set_busy(g, 0);
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
/* carve_tide_join maps the node block of the tenant's GPU g in dir and,
 * for an LS tenant (ls), takes a slot there and reserves its TPCs in it,
 * the node's name into name: 1 if done; 0 if GPU g takes no part (said,
 * where the block names a node for it). */
int carve_tide_join(int g, const char *dir, int ls, char name[64])
{
	struct carve_ctl *c = carve_block;
	node_name(g, name);
	if (!name[0])
		return 0;
	if (!(carve_tide_gpus[g].node = map_node(g, dir, name))) {
		carve_say("node block %s/%s cannot be mapped: running as an ordinary partitioned tenant%s", dir, name,
			  carve_tide_ngpus > 1 ? " on its GPU" : "");
		return 0;
	}
	if (ls) {
		if (!(carve_tide_gpus[g].slot = take_slot(g))) {
			carve_say("no LS slot in the node block %s: running as an ordinary partitioned tenant%s", name,
				  carve_tide_ngpus > 1 ? " on its GPU" : "");
			unmap_node(g);
			return 0;
		}
		for (int w = 0; w < 4; w++)
			__atomic_store_n(&carve_tide_gpus[g].slot->reserved[w],
					 ~CARVE_PART(c, g, mask)[w] & CARVE_PART(c, g, live)[w], __ATOMIC_RELAXED);
		__atomic_add_fetch(&carve_tide_gpus[g].node->gen, 1, __ATOMIC_RELEASE);
	}
	return 1;
}

/* carve_tide_leave gives up the LS tenant's slots and takes its GPUs out
 * of tide. */
void carve_tide_leave(void)
{
	for (int g = 0; g < carve_tide_ngpus; g++) {
		if (carve_tide_gpus[g].slot) {
			leave_slot(g, 1);
			unmap_node(g);
		}
	}
}

__attribute__((destructor)) static void carve_tide_fini(void)
{
	for (int g = 0; g < carve_tide_ngpus; g++)
		if (carve_tide_gpus[g].slot)
			leave_slot(g, 0);
}
