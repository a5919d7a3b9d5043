/*
 * vclock.h: a virtual clock that a test drives, for the test build of
 * libcarve.so (base.c compiled with -DCARVE_TEST), the fake driver and the
 * driver program. The shim that make builds never includes it; a test
 * checks that it has none of it (internal/shimtest).
 *
 * The clock is a file of CARVE_VCLOCK_SIZE bytes that the test makes, maps
 * and names in CARVE_TEST_CLOCK. Where that is set, the shim's clocks read
 * its time, the shim's naps and yields wait for it to reach their end, and
 * the fake driver runs its kernels on it: nothing moves until the test
 * advances it. internal/shimtest's Clock is the test's side.
 *
 * A step is deterministic because the test advances the clock only when
 * every thread that takes part is still: waiting for the clock, or parked
 * outside it (a thread blocked on a condition variable, a driver reading
 * its next command). Each process keeps, in its slot (by pid):
 *
 *   running  its threads that run: neither waiting for the clock nor parked
 *   waiting  its threads waiting for the clock
 *
 * A thread that waits adds itself to waiting, then takes itself off
 * running, then sleeps until the clock's seq moves. The test waits until
 * every slot's running is 0, then, for each slot, moves waiting into
 * running (every waiter counts as running again, woken), sets the time,
 * bumps seq and wakes them all: each looks at the time and either goes on
 * (it already counts as running) or waits again. Since a thread is off
 * running only after it is on waiting, and the test moves the clock only
 * when running is 0 everywhere, no waiter is ever missed, and no thread
 * ever sees two times in one step. A thread that wakes another one outside
 * the clock (a signal of a condition variable, a thread it starts) counts
 * it as running first (vclock_wake); a thread that blocks outside the
 * clock takes itself off first (vclock_park). The test counts a driver
 * process's main thread as running from when it sends a command until it
 * has read the answer.
 *
 * Cross-process wakes happen only through the test (commands, the clock),
 * so the test may read the slots one after another.
 */
#ifndef CARVE_VCLOCK_H
#define CARVE_VCLOCK_H

#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CARVE_VCLOCK_ENV "CARVE_TEST_CLOCK"
#define CARVE_VCLOCK_MAGIC 0x4b4c4356u /* "VCLK" little-endian */
#define CARVE_VCLOCK_SIZE 4096u
#define CARVE_VCLOCK_PROCS 64

struct carve_vclock_proc {
	int32_t pid;     /*  0: 0 = free; claimed by the process's first use */
	int32_t running; /*  4 */
	int32_t waiting; /*  8 */
	uint32_t pad;    /* 12 */
	uint64_t waits;  /* 16: waits begun, all told (for messages) */
	uint64_t pad2;   /* 24 */
};

struct carve_vclock {
	uint32_t magic;  /*  0: written by the test */
	uint32_t seq;    /*  4: futex: bumped by the test after each move of now */
	uint64_t now;    /*  8: the time, ns */
	uint32_t quiet;  /* 16: futex: bumped when a slot's running drops to 0 */
	uint32_t pad;    /* 20 */
	uint64_t pad2[5]; /* 24 .. 64 */
	struct carve_vclock_proc procs[CARVE_VCLOCK_PROCS]; /* 64 .. 2112 */
};

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct carve_vclock_proc) == 32, "vclock slot size");
_Static_assert(__builtin_offsetof(struct carve_vclock, procs) == 64, "vclock slots offset");
_Static_assert(sizeof(struct carve_vclock) <= CARVE_VCLOCK_SIZE, "vclock size");
#endif

static inline long vclock_futex(uint32_t *addr, int op, uint32_t val)
{
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

/* vclock maps the clock CARVE_TEST_CLOCK names, once; NULL if none. */
static inline struct carve_vclock *vclock(void)
{
	static struct carve_vclock *mapped; /* NULL: not looked yet; none: no clock */
	struct carve_vclock *const none = (struct carve_vclock *)1;
	struct carve_vclock *c = __atomic_load_n(&mapped, __ATOMIC_ACQUIRE);
	if (c)
		return c == none ? NULL : c;
	const char *path = getenv(CARVE_VCLOCK_ENV);
	int fd = path && *path ? open(path, O_RDWR | O_CLOEXEC) : -1;
	if (fd >= 0) {
		void *m = mmap(NULL, CARVE_VCLOCK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (m != MAP_FAILED && ((struct carve_vclock *)m)->magic == CARVE_VCLOCK_MAGIC)
			c = m;
		else if (m != MAP_FAILED)
			munmap(m, CARVE_VCLOCK_SIZE);
	}
	struct carve_vclock *was = NULL;
	if (!__atomic_compare_exchange_n(&mapped, &was, c ? c : none, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (c) /* another thread mapped it first */
			munmap(c, CARVE_VCLOCK_SIZE);
		return was == none ? NULL : was;
	}
	return c;
}

/* vclock_self is this process's slot, claimed by its first use with its
 * main thread counted as running: the first use must be on the main
 * thread (the shim's constructor, or the driver's main), before it starts
 * another. A slot is free (pid 0) with running and waiting 0: the test
 * frees the slots of processes that ended. */
static inline struct carve_vclock_proc *vclock_self(struct carve_vclock *c)
{
	static struct carve_vclock_proc *self;
	struct carve_vclock_proc *p = __atomic_load_n(&self, __ATOMIC_ACQUIRE);
	if (p)
		return p;
	int32_t pid = (int32_t)getpid();
	for (int i = 0; i < CARVE_VCLOCK_PROCS && !p; i++)
		if (__atomic_load_n(&c->procs[i].pid, __ATOMIC_ACQUIRE) == pid)
			p = &c->procs[i];
	for (int i = 0; i < CARVE_VCLOCK_PROCS && !p; i++) {
		int32_t zero = 0;
		if (__atomic_compare_exchange_n(&c->procs[i].pid, &zero, pid, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			p = &c->procs[i];
			__atomic_add_fetch(&p->running, 1, __ATOMIC_ACQ_REL);
		}
	}
	if (!p)
		abort(); /* more processes than slots: the test's mistake */
	__atomic_store_n(&self, p, __ATOMIC_RELEASE);
	return p;
}

static inline uint64_t vclock_now(struct carve_vclock *c)
{
	return __atomic_load_n(&c->now, __ATOMIC_ACQUIRE);
}

/* vclock_off takes one thread of p off running, and tells the test if it
 * was the last. */
static inline void vclock_off(struct carve_vclock *c, struct carve_vclock_proc *p)
{
	if (__atomic_sub_fetch(&p->running, 1, __ATOMIC_ACQ_REL) == 0) {
		__atomic_add_fetch(&c->quiet, 1, __ATOMIC_RELEASE);
		vclock_futex(&c->quiet, FUTEX_WAKE, INT_MAX);
	}
}

/* vclock_wait returns once the clock has reached t. */
static inline void vclock_wait(struct carve_vclock *c, uint64_t t)
{
	struct carve_vclock_proc *p = vclock_self(c);
	for (;;) {
		uint32_t s = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		if (vclock_now(c) >= t)
			return;
		__atomic_add_fetch(&p->waits, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&p->waiting, 1, __ATOMIC_ACQ_REL);
		vclock_off(c, p);
		while (__atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) == s)
			vclock_futex(&c->seq, FUTEX_WAIT, s);
		/* the test counted us as running when it moved the clock */
	}
}

/* vclock_park: this thread blocks outside the clock until another wakes it. */
static inline void vclock_park(struct carve_vclock *c)
{
	if (c)
		vclock_off(c, vclock_self(c));
}

/* vclock_wake: this thread is about to wake another (or start one), which
 * counts as running from now. */
static inline void vclock_wake(struct carve_vclock *c)
{
	if (c)
		__atomic_add_fetch(&vclock_self(c)->running, 1, __ATOMIC_ACQ_REL);
}

#endif
