/*
 * slice.c: a BE tenant's kernel launch cut into pieces (issue 22, part 3),
 * so that while an LS tenant is active on the GPU, an LS request waits
 * behind one piece of a long BE kernel (beyond the BE's queue bound)
 * instead of the whole of it.
 *
 * When: the tenant is BE in tide with a slice_us (carve run --be --slice),
 * an LS tenant is active on the launch's GPU (tide.c's notion: busy now,
 * or it served a request in the last CARVE_NODE_QUIET_NS, the same that
 * bounds the BE's queue), and the function's measured time is over
 * slice_us. The launch then goes in pieces of whole waves of its blocks
 * (those resident at once on the partition's SMs, by the driver's
 * occupancy), each about slice_us long by the function's time a wave (at
 * most one piece a wave, and SLICE_MAX_PIECES), piece i running blocks
 * blockIdx.x in [S_i, E_i) of every row; each piece passes the BE's gate
 * (tide.c) on its own, so that a request that arrives mid-kernel holds
 * back the pieces not yet launched. A grid of one wave goes whole.
 *
 * How a piece runs only its blocks (experiments/slicing, proven on an
 * H100 with whole PyTorch steps bit-identical): the launch callback
 * (hook.c, after the mask) lowers the descriptor's GRID_WIDTH to E_i and,
 * for i > 0, points its PROGRAM_ADDRESS at a copy of the function's code
 * behind a prologue that ends every block with blockIdx.x < S_i. The copy
 * is made on the GPU by the shim's copy kernel (a kernel can read the code
 * at PROGRAM_ADDRESS; cuMemcpy cannot), its length found by the shim's
 * scan kernel (ptxas ends every function with a branch to itself and NOPs
 * to a 128-byte boundary). One copy per (function, S), in 4 KiB-aligned
 * slots never rewritten, made on the launch's stream after piece 0 (whose
 * callback checked the code is still where it was recorded) and before
 * piece 1; an event recorded after it orders a later launch's use of it
 * until the event is seen complete.
 *
 * All of it happens only while an LS tenant is active: beside an idle
 * one a BE's launch goes as with slicing off. Per function, in order:
 * its first launch goes whole and the callback records its code's
 * address and descriptor version (not 0x40, or compile-time cluster
 * dimensions: never cut); the first launch that would be cut scans the
 * code (on the shim's own stream, waited for). Its time a wave is
 * measured by an event pair around some of its launches (until it has a
 * few times, then one in SLICE_TIME_EVERY), or around the first piece of
 * a cut one, divided by the waves it ran, read without waiting at a
 * later launch (once a tick of the coarse clock at most):
 * tide's own measure (tide.c's reap) is of all the BE's kernels together,
 * by events every few launches, and cannot say which function took what.
 *
 * Always whole: cooperative launches (they never reach here),
 * launches with cluster dimensions or a cooperative, programmatic or
 * completion-event attribute, launches into a capturing stream (neither
 * timed nor recorded: an event would join the graph, and the launch runs
 * nothing then), any launch while a capture is under way in the process
 * (slicing's own calls would end a global-mode capture: none is made),
 * grids of one wave, and functions whose occupancy cannot be read or
 * whose code has no end marker.
 *
 * The callback only reads the thread's plan that the wrapper armed and
 * edits the descriptor: no driver call, no lock. The tables' lock is never
 * held across a driver call. The copies' memory is the tenant's, charged
 * to its account (mem.c); where its limit leaves no room, or the copy
 * table is full, a launch that needs a new copy goes whole.
 *
 * This file holds the launch (carve_slice_launch), the plan it arms for
 * the callback (carve_slice_edit), each function's time and the waves a
 * piece can be; slice_code.c the tables of functions, contexts and copies,
 * each context's kernels, stream and memory, and a function's code: its
 * scan and its copies.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "carve_tmd.h"
#include "shim.h"
#include "slice_ptx.h"

#define SLICE_MAX_PIECES 64
#define SLICE_TIME_FIRST 3  /* launches of a function timed first */
#define SLICE_TIME_EVERY 32 /* then one in this many */

/* --- what the wrapper tells the callback, per thread ------------------------ */

static __thread __attribute__((tls_model("initial-exec"))) struct plan {
	int armed;        /* the next callback on this thread is this launch's */
	int seen;         /* the callback saw it */
	int version;      /* its descriptor's version */
	uint64_t program; /* and code address, as the driver made them */
	int edit;         /* edit the descriptor, only if its code is at expect: */
	uint64_t expect;
	uint64_t to;    /* new PROGRAM_ADDRESS (0: unchanged) */
	uint32_t width; /* new GRID_WIDTH (0: unchanged) */
	int applied;    /* the callback made the edit */
} plan;
static __thread __attribute__((tls_model("initial-exec"))) int inside; /* slicing's own launches */

void carve_slice_edit(uint8_t *tmd)
{
	if (__builtin_expect(!plan.armed, 1))
		return;
	plan.armed = 0;
	plan.seen = 1;
	plan.version = carve_tmd_version(tmd);
	if (plan.version != CARVE_TMD_V_SLICE)
		return;
	plan.program = carve_tmd_program(tmd);
	if (!plan.edit || plan.program != plan.expect)
		return;
	if (plan.width)
		carve_tmd_set_grid_width(tmd, plan.width);
	if (plan.to)
		carve_tmd_move_program(tmd, plan.to);
	plan.applied = 1;
}

/* --- each function's time --------------------------------------------------- */


/* harvest reads the pairs whose end is done into their functions' time */
static void harvest(void)
{
	if (!__atomic_load_n(&carve_slice_pending, __ATOMIC_RELAXED))
		return;
	carve_slice_own();
	pthread_mutex_lock(&carve_slice_tmu);
	for (int k = 0; k < CARVE_SLICE_CTXS * CARVE_SLICE_TIMES; k++) {
		struct carve_slice_timing *t = &carve_slice_ctxs[k / CARVE_SLICE_TIMES].times[k % CARVE_SLICE_TIMES];
		float ms = 0;
		if (t->busy != 2 || carve_slice_drv.event_query(t->b) == CUDA_ERROR_NOT_READY)
			continue;
		int read = carve_slice_drv.elapsed(&ms, t->a, t->b) == CUDA_SUCCESS && ms > 0;
		uint64_t ns = read ? (uint64_t)((double)ms * 1e6 / t->waves) : 0;
		pthread_mutex_lock(&carve_slice_mu);
		struct carve_slice_fn *f = &carve_slice_fns[t->fn];
		if (read) {
			f->wave_ns = f->timed ? (3 * f->wave_ns + ns) / 4 : ns;
			f->timed++;
		}
		f->outstanding -= f->outstanding > 0;
		pthread_mutex_unlock(&carve_slice_mu);
		t->busy = 0;
		__atomic_sub_fetch(&carve_slice_pending, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&carve_slice_tmu);
}

/* this thread's launch is due to be timed: its function has fewer than
 * SLICE_TIME_FIRST times read, or it is one in SLICE_TIME_EVERY of its
 * launches (carve_slice_launch) */
static __thread __attribute__((tls_model("initial-exec"))) int time_due;

/* time_begin records a pair's start on s, of function i's context,
 * before this thread's launch; NULL if not due or no room */
static struct carve_slice_timing *time_begin(int i, CUstream s)
{
	int capturing = 0;
	if (!time_due || carve_slice_drv.capturing(s, &capturing) != CUDA_SUCCESS || capturing)
		return NULL;
	carve_slice_own();
	pthread_mutex_lock(&carve_slice_tmu);
	pthread_mutex_lock(&carve_slice_mu);
	struct carve_slice_ctx *e = carve_slice_ctx_entry(carve_slice_fns[i].ctx);
	pthread_mutex_unlock(&carve_slice_mu);
	struct carve_slice_timing *t = NULL;
	for (int k = 0; e && e->state >= 0 && k < CARVE_SLICE_TIMES && !t; k++)
		if (!e->times[k].busy)
			t = &e->times[k];
	if (t && (t->a || carve_slice_drv.event_create(&t->a, 0) == CUDA_SUCCESS) && (t->b || carve_slice_drv.event_create(&t->b, 0) == CUDA_SUCCESS) &&
	    carve_slice_drv.event_record(t->a, s) == CUDA_SUCCESS)
		t->busy = 1;
	else
		t = NULL;
	pthread_mutex_unlock(&carve_slice_tmu);
	return t;
}

/* time_end records the pair's end after the launch, which ran nw waves
 * of blocks (0: unknown, the pair is dropped) */
static void time_end(struct carve_slice_timing *t, int i, CUstream s, uint32_t nw, CUresult r)
{
	if (!t)
		return;
	pthread_mutex_lock(&carve_slice_tmu);
	t->fn = i, t->waves = nw;
	if (r == CUDA_SUCCESS && nw && carve_slice_drv.event_record(t->b, s) == CUDA_SUCCESS) {
		t->busy = 2;
		__atomic_add_fetch(&carve_slice_pending, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&carve_slice_mu);
		carve_slice_fns[i].outstanding++;
		pthread_mutex_unlock(&carve_slice_mu);
	} else {
		t->busy = 0;
	}
	pthread_mutex_unlock(&carve_slice_tmu);
}

/* --- waves: what a piece can be ------------------------------------------------ */

/* A piece shorter than a wave of blocks (those resident on the SMs at
 * once) takes as long as the wave: cutting a grid of one wave in five
 * makes five launches of the wave's time. So pieces are whole waves, a
 * function's time is kept a wave, and a grid of one wave goes whole. */

/* wave: the blocks of launch l of function i resident at once on the
 * tenant's SMs of its GPU: the driver's occupancy at its block size and
 * dynamic shared memory times the partition's SMs there (tide may
 * narrow a launch to fewer: pieces then take longer, never run fewer
 * blocks at once than planned). 0 if unknown: the function is never
 * cut. Called in l's context. */
static unsigned wave(int i, const struct carve_launch *l)
{
	unsigned threads = l->bx * l->by * l->bz, smem = l->sh;
	pthread_mutex_lock(&carve_slice_mu);
	struct carve_slice_fn *f = &carve_slice_fns[i];
	int occ = f->occ && f->occ_threads == threads && f->occ_smem == smem ? (int)f->occ : 0;
	struct carve_slice_ctx *e = carve_slice_ctx_entry(f->ctx);
	int gpu = e ? e->gpu : -1, sms = e ? e->sms : 0;
	pthread_mutex_unlock(&carve_slice_mu);
	if (!e)
		return 0;
	if (sms && occ) /* known: no driver call */
		return (unsigned)occ * (unsigned)carve_visible_sms(gpu, sms);
	carve_slice_own();
	CUdevice d = 0;
	if (!sms && (carve_slice_drv.ctx_device(&d) != CUDA_SUCCESS ||
		     carve_slice_drv.dev_attr(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) != CUDA_SUCCESS || sms <= 0))
		return 0;
	if (!occ) {
		CUfunction k = l->f; /* or the CUkernel's function in this context */
		CUresult r = carve_slice_drv.occupancy(&occ, k, (int)threads, smem);
		if (r != CUDA_SUCCESS && carve_slice_drv.kernel_function && carve_slice_drv.kernel_function(&k, l->f) == CUDA_SUCCESS)
			r = carve_slice_drv.occupancy(&occ, k, (int)threads, smem);
		if (r != CUDA_SUCCESS || occ <= 0) {
			carve_slice_never(i, "its occupancy cannot be read");
			return 0;
		}
	}
	pthread_mutex_lock(&carve_slice_mu);
	if (!e->sms)
		e->gpu = carve_device_gpu(d), e->sms = sms;
	gpu = e->gpu;
	f->occ_threads = threads, f->occ_smem = smem, f->occ = (unsigned)occ;
	pthread_mutex_unlock(&carve_slice_mu);
	return (unsigned)occ * (unsigned)carve_visible_sms(gpu, sms);
}

/* waves: how many waves of per blocks cols columns of l's grid run in
 * (at most 2^32 - 1); 0 if per is */
static uint32_t waves(uint64_t cols, const struct carve_launch *l, unsigned per)
{
	uint64_t w = per ? (cols * l->gy * l->gz + per - 1) / per : 0; /* below 2^64: 2^32 x 2^16 x 2^16 */
	return w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
}

/* cuts plans launch l of function i as pieces of about bound_ns by the
 * function's time a wave (per blocks), each as many columns as fit its
 * share of the grid's waves: their first columns in c[0..n], c[n] = gx;
 * returns n, below 2: whole. Where a column's rows do not divide a wave,
 * pieces end in part of one: whole if their waves together pass the
 * grid's by more than an eighth. */
static unsigned cuts(int i, const struct carve_launch *l, unsigned per, uint64_t bound_ns, unsigned c[SLICE_MAX_PIECES + 1])
{
	uint64_t rows = (uint64_t)l->gy * l->gz;
	pthread_mutex_lock(&carve_slice_mu);
	uint64_t wave_ns = carve_slice_fns[i].wave_ns;
	pthread_mutex_unlock(&carve_slice_mu);
	uint64_t all = waves(l->gx, l, per);
	if (!wave_ns || !all || !rows)
		return 1;
	uint64_t want = all > UINT64_MAX / wave_ns ? SLICE_MAX_PIECES : (all * wave_ns + bound_ns - 1) / bound_ns;
	if (want > all)
		want = all;
	if (want > SLICE_MAX_PIECES)
		want = SLICE_MAX_PIECES;
	if (want < 2)
		return 1;
	uint64_t q = (all + want - 1) / want;          /* waves a piece */
	uint64_t cols = q * per / rows ? q * per / rows : 1; /* columns a piece: no more blocks than q waves */
	if ((l->gx + cols - 1) / cols > SLICE_MAX_PIECES)
		cols = (l->gx + SLICE_MAX_PIECES - 1) / SLICE_MAX_PIECES;
	unsigned n = (unsigned)((l->gx + cols - 1) / cols);
	if (n < 2)
		return 1;
	uint64_t cost = 0;
	for (unsigned k = 0; k <= n; k++) {
		c[k] = k * cols < l->gx ? (unsigned)(k * cols) : l->gx;
		if (k)
			cost += waves(c[k] - c[k - 1], l, per);
	}
	return cost > all + all / 8 ? 1 : n;
}

/* --- the launch --------------------------------------------------------------- */

/* drive makes one driver call of l, holding the callbacks (tools.c) */
static CUresult drive(const struct carve_launch *l)
{
	carve_tools_hold(1);
	CUresult r = l->c ? ((launch_ex_fn)l->real)(l->c, l->f, l->p, l->e)
			  : ((launch_fn)l->real)(l->f, l->gx, l->gy, l->gz, l->bx, l->by, l->bz, l->sh, l->s, l->p, l->e);
	carve_tools_hold(0);
	return r;
}

/* whole launches l through tide as it is, already past its gate: timed
 * as function i's (if i >= 0 and due), its code recorded if record */
static CUresult whole(const struct carve_launch *l, CUstream s, int i, int record)
{
	unsigned per = i >= 0 && time_due ? wave(i, l) : 0; /* before the pair: it may ask the driver */
	struct carve_slice_timing *t = per ? time_begin(i, s) : NULL;
	memset(&plan, 0, sizeof plan);
	plan.armed = record;
	CUresult r = drive(l);
	plan.armed = 0;
	time_end(t, i, s, waves(l->gx, l, per), r);
	carve_launch_after(l->s, r);
	return r;
}

/* attrs_whole: do l's launch attributes keep it whole? */
static int attrs_whole(const CUlaunchConfig *c)
{
	if (!c || !c->attrs)
		return 0;
	for (unsigned i = 0; i < c->numAttrs; i++) {
		const uint8_t *a = (const uint8_t *)c->attrs + (size_t)i * CU_LAUNCH_ATTRIBUTE_BYTES;
		int id;
		unsigned v[3];
		memcpy(&id, a, sizeof id);
		memcpy(v, a + CU_LAUNCH_ATTRIBUTE_VALUE_OFFSET, sizeof v);
		switch (id) {
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			if (v[0])
				return 1;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
			if (v[0] > 1 || v[1] > 1 || v[2] > 1)
				return 1;
			break;
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
		case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
			return 1;
		}
	}
	return 0;
}

/* first: function i's first launch, whole; the callback records its
 * code's address and descriptor version */
static CUresult first(const struct carve_launch *l, CUstream s, int i)
{
	int cl = carve_slice_compile_time_cluster(l->f);
	CUresult r = whole(l, s, i, 1);
	struct plan p = plan;
	if (cl != 0)
		carve_slice_never(i, cl < 0 ? "its cluster dimensions cannot be read" : "it has compile-time cluster dimensions");
	else if (!p.seen)
		carve_slice_never(i, "the launch callback did not see its first launch");
	else if (p.version != CARVE_TMD_V_SLICE)
		carve_slice_never(i, "its descriptor version is not 0x40");
	else {
		pthread_mutex_lock(&carve_slice_mu);
		carve_slice_fns[i].program = p.program;
		if (carve_slice_fns[i].state == SLICE_RECORDING) /* not made never meanwhile (its occupancy, its context gone) */
			carve_slice_fns[i].state = SLICE_KNOWN;
		pthread_mutex_unlock(&carve_slice_mu);
	}
	return r;
}

/* cut launches l as the n pieces whose first columns c gives (cuts), the
 * first already past its gate, each later one through it; function i is
 * ready, per blocks make a wave. 0 with *r unset if it went nowhere (the
 * caller launches it whole); else 1, the result in *r.
 *
 * The copies' places are taken first; piece 0 goes next, and its callback
 * checks that the function's code is still where it was recorded (a
 * handle may name new code after an unload); only then are the copies
 * made from that code, on the launch's stream, before piece 1. */
static int cut(const struct carve_launch *l, CUstream s, CUcontext ctx, int i, unsigned n, const unsigned *c, unsigned per,
	       CUresult *r)
{
	struct carve_slice_ctx *e = carve_slice_ctx_ready(ctx);
	if (!e)
		return 0;
	struct carve_slice_copy use[SLICE_MAX_PIECES];
	int have[SLICE_MAX_PIECES];
	unsigned missing = 0;
	pthread_mutex_lock(&carve_slice_mu);
	for (unsigned k = 1; k < n; k++) {
		struct carve_slice_copy *t = carve_slice_copy_find((unsigned)i, c[k]);
		have[k] = t && t->fn;
		if (have[k])
			use[k] = *t;
		missing += !have[k];
	}
	int room = carve_slice_ncopies + missing <= CARVE_SLICE_COPIES * 3 / 4; /* else copies would be made and not kept */
	pthread_mutex_unlock(&carve_slice_mu);
	if (missing && !room)
		return 0;
	for (unsigned k = 1; k < n; k++)
		if (!have[k] && !(use[k].at = carve_slice_slot(e, PRO_BYTES + carve_slice_fns[i].len)))
			return 0;
	uint64_t program;
	pthread_mutex_lock(&carve_slice_mu);
	program = carve_slice_fns[i].program;
	pthread_mutex_unlock(&carve_slice_mu);
	for (unsigned k = 0; k < n; k++) {
		if (k)
			carve_launch_before(l->s, l->f, 0); /* each piece through the gate, counted with the first */
		struct carve_slice_timing *t = k == 0 ? time_begin(i, s) : NULL;
		memset(&plan, 0, sizeof plan);
		plan = (struct plan){.armed = 1, .edit = 1, .expect = program, .to = k ? use[k].at : 0,
				     .width = c[k + 1] < l->gx ? c[k + 1] : 0};
		*r = drive(l);
		struct plan p = plan;
		plan.armed = 0;
		time_end(t, i, s, waves(c[1], l, per), *r);
		carve_launch_after(l->s, *r);
		if (*r != CUDA_SUCCESS)
			return 1;
		if (!p.applied) {
			/* piece 0 unedited ran the whole grid; a later one ran its
			 * blocks twice, which nothing can undo: say so loudly */
			if (k)
				carve_say("slicing: piece %u of %u of function %p ran unedited: blocks ran twice", k, n, l->f);
			carve_slice_never(i, "the callback could not edit a piece");
			return 1;
		}
		__atomic_add_fetch(&carve_block->slice_pieces, 1, __ATOMIC_RELAXED);
		for (unsigned j = 1; k == 0 && j < n; j++) {
			/* piece 0 ran the code at program: the copies now */
			CUresult cr = have[j] ? carve_slice_ready_on(i, &use[j], s) : carve_slice_make_copy(i, e, c[j], use[j].at, s, &use[j]);
			if (cr != CUDA_SUCCESS) {
				carve_say("slicing: the copy of function %p's code failed (%d): blocks %u to %u of its launch did not run",
					  l->f, cr, c[1], l->gx);
				carve_slice_never(i, "a copy of its code failed");
				*r = cr;
				return 1;
			}
		}
	}
	__atomic_add_fetch(&carve_block->sliced, 1, __ATOMIC_RELAXED);
	return 1;
}

CUresult carve_slice_launch(const struct carve_launch *l)
{
	uint32_t us = carve_slice_usable && carve_block ? __atomic_load_n(&carve_block->slice_us, __ATOMIC_RELAXED) : 0;
	if (!us || inside || carve_tide_capturing()) { /* a capture under way: no work of slicing's */
		carve_launch_before(l->s, l->f, 1);
		CUresult r = drive(l);
		carve_launch_after(l->s, r);
		return r;
	}
	inside = 1;
	carve_launch_before(l->s, l->f, 1); /* the whole launch's gate, or its first piece's */
	CUcontext ctx = NULL;
	if (carve_tide_ls_active(&ctx) <= 0) {
		/* no BE in tide on this GPU, or no LS tenant active: nothing
		 * is cut, nor recorded, timed or read (a BE beside an idle LS
		 * pays one load and tide's LS check a launch) */
		CUresult r = drive(l);
		carve_launch_after(l->s, r);
		inside = 0;
		return r;
	}
	CUstream s = l->ptsz && !l->s ? CU_STREAM_PER_THREAD : l->s;
	int capturing = 0;
	uint64_t tick = carve_coarse_ns(); /* pairs read once a tick of the coarse clock at most */
	if (__atomic_load_n(&carve_slice_pending, __ATOMIC_RELAXED) && __atomic_exchange_n(&carve_slice_harvested, tick, __ATOMIC_RELAXED) != tick &&
	    carve_slice_drv.capturing(s, &capturing) == CUDA_SUCCESS && !capturing)
		harvest();
	int i = -1, state = SLICE_NEVER;
	if (ctx && l->f) {
		pthread_mutex_lock(&carve_slice_mu);
		if ((i = carve_slice_fn_find(ctx, l->f)) >= 0) {
			state = carve_slice_fns[i].state;
			if (state == SLICE_EMPTY)
				carve_slice_fns[i].state = SLICE_RECORDING; /* this thread launches it first */
			carve_slice_fns[i].launches++;
			time_due = carve_slice_fns[i].timed + carve_slice_fns[i].outstanding < SLICE_TIME_FIRST || carve_slice_fns[i].launches % SLICE_TIME_EVERY == 0;
		}
		pthread_mutex_unlock(&carve_slice_mu);
	}
	CUresult r;
	if (state == SLICE_EMPTY && (carve_slice_drv.capturing(s, &capturing) != CUDA_SUCCESS || capturing)) {
		carve_slice_set_state(i, SLICE_EMPTY); /* captured, it runs nothing: a later launch records it */
		r = whole(l, s, -1, 0);
	} else if (state == SLICE_EMPTY) {
		r = first(l, s, i);
	} else if (state == SLICE_NEVER || state == SLICE_RECORDING || state == SLICE_SCANNING || attrs_whole(l->c)) {
		r = whole(l, s, -1, 0);
	} else {
		/* the pieces it would go as, once its code is known; the code
		 * is scanned only then, at the first launch that would be cut */
		unsigned c[SLICE_MAX_PIECES + 1], per = wave(i, l);
		unsigned n = per ? cuts(i, l, per, (uint64_t)us * 1000, c) : 1;
		if (state == SLICE_KNOWN && n >= 2) {
			/* one thread scans, one scan in a context at a time (they
			 * share its result words); other launches go whole meanwhile */
			struct carve_slice_ctx *e = carve_slice_ctx_ready(ctx);
			pthread_mutex_lock(&carve_slice_mu);
			int mine = e && carve_slice_fns[i].state == SLICE_KNOWN && !e->scanning;
			if (mine)
				carve_slice_fns[i].state = SLICE_SCANNING, e->scanning = 1;
			pthread_mutex_unlock(&carve_slice_mu);
			if (mine)
				carve_slice_scan(i, e);
		}
		pthread_mutex_lock(&carve_slice_mu);
		state = carve_slice_fns[i].state;
		pthread_mutex_unlock(&carve_slice_mu);
		if (state != SLICE_READY)
			n = 1;
		if (n >= 2 && (carve_slice_drv.capturing(s, &capturing) != CUDA_SUCCESS || capturing))
			n = 1;
		if (n < 2 || !cut(l, s, ctx, i, n, c, per, &r))
			r = whole(l, s, state == SLICE_READY || state == SLICE_KNOWN ? i : -1, 0);
	}
	carve_slice_own_end();
	inside = 0;
	return r;
}

/* with CARVE_DEBUG, what was cut, at exit (the block says it too, while
 * the process runs) */
__attribute__((destructor)) static void carve_slice_fini(void)
{
	if (carve_block && carve_block->slice_us)
		CARVE_DEBUG("slice: %llu launches cut into %llu pieces of about %u us; %u functions sliceable",
			    (unsigned long long)carve_block->sliced, (unsigned long long)carve_block->slice_pieces,
			    carve_block->slice_us, carve_block->slice_fns);
}
