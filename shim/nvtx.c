/*
 * nvtx.c: an LS tenant's requests as its program marks them with NVTX
 * ranges (the block's mark: carve run --mark).
 *
 * NVTX (nvToolsExt; header-only since version 3, in PyTorch, TensorRT and
 * the serving engines) hands a program's ranges to one tool: at its first
 * call in each library that uses it, it dlopens the library
 * NVTX_INJECTION64_PATH names, calls its InitializeInjectionNvtx2 with a
 * lookup of its tables of function slots, and the tool writes its own
 * functions into the slots it wants; every other call stays a no-op. With
 * a mark, the shim names itself there at load, unless another tool (a
 * profiler) is named already, whose ranges they then are (mark_state
 * CARVE_MARK_OTHER), and takes the range calls:
 *   push and pop (nested, per thread and domain): a pushed range whose
 *   message matches the mark is timed from its push to the pop that ends it;
 *   start and end (from any thread): a started range that matches is timed
 *   from its start to the end of its id.
 * Each time goes into the block's mark_hist, on CLOCK_MONOTONIC. Messages
 * are ASCII, wide (compared as ASCII) or registered strings, whose handles
 * the shim hands out: one address for every string that matches, another
 * for the rest; and as NVTX's domains are the tool's to make, each domain
 * made is a byte of its own, so that ranges nest per domain. A matching range it cannot time (nested deeper than DEPTH,
 * on more than DOMAINS domains of one thread at once, or more than OPEN
 * started and not ended) counts in mark_dropped. Without a mark the shim
 * tells NVTX it takes nothing, and every call stays a no-op.
 *
 * The types below are NVTX's injection interface (nvtxDetail/nvtxTypes.h
 * of NVIDIA's NVTX), declared here by their layout, as the shim declares
 * the driver's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <wchar.h>

#include "shim.h"

/* NVTX's export table of callbacks, its modules and their slots */
typedef void (*nvtx_fn)(void);
struct nvtx_callbacks {
	size_t size;
	int (*module_table)(int module, nvtx_fn ***table, unsigned *size);
};
#define NVTX_CALLBACKS 1 /* NVTX_ETID_CALLBACKS */
#define NVTX_CORE 1      /* NVTX_CB_MODULE_CORE */
#define NVTX_CORE2 5     /* NVTX_CB_MODULE_CORE2: domains */

/* nvtxEventAttributes_t (version 2 and 3) */
struct nvtx_attrs {
	uint16_t version;
	uint16_t size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type;
	int32_t reserved;
	uint64_t payload;
	int32_t message_type;
	const void *message;
};
_Static_assert(offsetof(struct nvtx_attrs, message) == 40 && sizeof(struct nvtx_attrs) == 48, "nvtxEventAttributes_t");
#define NVTX_ASCII 1
#define NVTX_UNICODE 2
#define NVTX_REGISTERED 3

/* the mark, as read from the block at load */
static char mark[64];
static size_t mark_len;
static int mark_prefix; /* it ended in '*': a message that begins with mark[:mark_len] matches */

/* the handles of registered strings: one for those that match */
static const char registered_match, registered_other;

static int matches_ascii(const char *s)
{
	if (!s)
		return 0;
	return mark_prefix ? strncmp(s, mark, mark_len) == 0 : strcmp(s, mark) == 0;
}

static int matches_wide(const wchar_t *s)
{
	if (!s)
		return 0;
	size_t i = 0;
	for (; i < mark_len; i++)
		if (s[i] != (wchar_t)(unsigned char)mark[i])
			return 0;
	return mark_prefix || s[i] == 0;
}

static int matches_attrs(const struct nvtx_attrs *a)
{
	if (!a || a->size < sizeof *a)
		return 0;
	switch (a->message_type) {
	case NVTX_ASCII:
		return matches_ascii(a->message);
	case NVTX_UNICODE:
		return matches_wide(a->message);
	case NVTX_REGISTERED:
		return a->message == &registered_match;
	}
	return 0;
}

static void timed(uint64_t since)
{
	carve_hist_add(&carve_block->mark_hist, carve_mono_ns() - since);
}

static void dropped(void)
{
	__atomic_add_fetch(&carve_block->mark_dropped, 1, __ATOMIC_RELAXED);
}

/* --- push and pop: each thread's stacks, one a domain ----------------------- */

#define DEPTH 32
#define DOMAINS 4
struct stack {
	const void *domain; /* NULL: the default domain */
	int depth;          /* ranges pushed and not popped (a stack at 0 is free) */
	uint64_t at[DEPTH]; /* a matching range's push time + 1; 0: not timed */
};
static __thread __attribute__((tls_model("initial-exec"))) struct stack stacks[DOMAINS];

/* stack_of is this thread's stack of domain d; with make, a free one taken
 * for it where it has none. NULL: none (all taken, with make). */
static struct stack *stack_of(const void *d, int make)
{
	struct stack *spare = NULL;
	for (int i = 0; i < DOMAINS; i++) {
		if (stacks[i].depth > 0 && stacks[i].domain == d)
			return &stacks[i];
		if (!spare && stacks[i].depth == 0)
			spare = &stacks[i];
	}
	if (!make || !spare)
		return NULL;
	spare->domain = d;
	return spare;
}

static int push(const void *d, int match)
{
	struct stack *s = stack_of(d, 1);
	if (!s) {
		if (match)
			dropped();
		return -1;
	}
	if (s->depth < DEPTH)
		s->at[s->depth] = match ? carve_mono_ns() + 1 : 0;
	else if (match)
		dropped();
	return s->depth++;
}

static int pop(const void *d)
{
	struct stack *s = stack_of(d, 0);
	if (!s)
		return -1;
	int level = --s->depth;
	if (level < DEPTH && s->at[level])
		timed(s->at[level] - 1);
	return level;
}

static int push_a(const char *m) { return push(NULL, matches_ascii(m)); }
static int push_w(const wchar_t *m) { return push(NULL, matches_wide(m)); }
static int push_ex(const struct nvtx_attrs *a) { return push(NULL, matches_attrs(a)); }
static int pop_default(void) { return pop(NULL); }
static int domain_push(const void *d, const struct nvtx_attrs *a) { return push(d, matches_attrs(a)); }
static int domain_pop(const void *d) { return pop(d); }

/* --- start and end: ranges by id, from any thread ---------------------------- */

/* An id's lowest bit says it was kept in open: a range that matched. */
#define OPEN 256
static struct {
	uint64_t id; /* 0: free */
	uint64_t at;
} open_ranges[OPEN];
static uint64_t ids;

static uint64_t start(int match)
{
	uint64_t id = __atomic_add_fetch(&ids, 1, __ATOMIC_RELAXED) << 1;
	if (!match)
		return id;
	uint64_t at = carve_mono_ns();
	for (unsigned i = 0; i < OPEN; i++) {
		unsigned k = (unsigned)((id >> 1) + i) % OPEN;
		uint64_t none = 0;
		if (__atomic_load_n(&open_ranges[k].id, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&open_ranges[k].id, &none, id | 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_store_n(&open_ranges[k].at, at, __ATOMIC_RELEASE);
			return id | 1;
		}
	}
	dropped();
	return id;
}

static void end(uint64_t id)
{
	if (!(id & 1))
		return;
	for (unsigned i = 0; i < OPEN; i++) {
		unsigned k = (unsigned)((id >> 1) + i) % OPEN;
		if (__atomic_load_n(&open_ranges[k].id, __ATOMIC_ACQUIRE) == id) {
			uint64_t at = __atomic_load_n(&open_ranges[k].at, __ATOMIC_ACQUIRE);
			__atomic_store_n(&open_ranges[k].id, 0, __ATOMIC_RELEASE);
			timed(at);
			return;
		}
	}
}

static uint64_t start_a(const char *m) { return start(matches_ascii(m)); }
static uint64_t start_w(const wchar_t *m) { return start(matches_wide(m)); }
static uint64_t start_ex(const struct nvtx_attrs *a) { return start(matches_attrs(a)); }
static void end_default(uint64_t id) { end(id); }
static uint64_t domain_start(const void *d, const struct nvtx_attrs *a) { (void)d; return start(matches_attrs(a)); }
static void domain_end(const void *d, uint64_t id) { (void)d; end(id); }

static const void *register_a(const void *d, const char *s)
{
	(void)d;
	return matches_ascii(s) ? &registered_match : &registered_other;
}

static const void *register_w(const void *d, const wchar_t *s)
{
	(void)d;
	return matches_wide(s) ? &registered_match : &registered_other;
}

static const void *domain_a(const char *name)
{
	static char overflow;
	(void)name;
	void *d = malloc(1); /* a domain is made once, and never given back before the program ends */
	return d ? d : &overflow;
}

static const void *domain_w(const wchar_t *name)
{
	(void)name;
	return domain_a(NULL);
}

/* --- attaching --------------------------------------------------------------- */

struct slot {
	int id; /* the call's callback id in its module */
	nvtx_fn fn;
};
static const struct slot core[] = {
	{4, (nvtx_fn)start_ex}, {5, (nvtx_fn)start_a}, {6, (nvtx_fn)start_w}, {7, (nvtx_fn)end_default},
	{8, (nvtx_fn)push_ex}, {9, (nvtx_fn)push_a}, {10, (nvtx_fn)push_w}, {11, (nvtx_fn)pop_default},
};
static const struct slot core2[] = {
	{2, (nvtx_fn)domain_start}, {3, (nvtx_fn)domain_end}, {4, (nvtx_fn)domain_push}, {5, (nvtx_fn)domain_pop},
	{10, (nvtx_fn)register_a}, {11, (nvtx_fn)register_w}, {12, (nvtx_fn)domain_a}, {13, (nvtx_fn)domain_w},
};

/* fill writes the slots of module into its table, those it has. */
static void fill(const struct nvtx_callbacks *cb, int module, const struct slot *s, size_t n)
{
	nvtx_fn **table = NULL;
	unsigned size = 0;
	if (!cb->module_table(module, &table, &size) || !table)
		return;
	for (size_t i = 0; i < n; i++)
		if ((unsigned)s[i].id < size && table[s[i].id])
			*table[s[i].id] = s[i].fn;
}

/* NVTX's entry point: called once by each library of the program that
 * uses NVTX, at its first call. 0: the shim takes nothing. */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void *(*get)(uint32_t))
{
	if (!carve_block || !mark[0] || !get)
		return 0;
	const struct nvtx_callbacks *cb = get(NVTX_CALLBACKS);
	if (!cb || cb->size < sizeof *cb || !cb->module_table)
		return 0;
	fill(cb, NVTX_CORE, core, sizeof core / sizeof core[0]);
	fill(cb, NVTX_CORE2, core2, sizeof core2 / sizeof core2[0]);
	__atomic_store_n(&carve_block->mark_state, CARVE_MARK_ATTACHED, __ATOMIC_RELAXED);
	return 1;
}

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return strcmp(a, b) == 0 || (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
}

void carve_nvtx_init(void)
{
	memcpy(mark, carve_block->mark, sizeof mark - 1); /* written once, before the block is published */
	mark[sizeof mark - 1] = 0;
	if (!mark[0])
		return;
	mark_len = strlen(mark);
	if (mark[mark_len - 1] == '*')
		mark_prefix = 1, mark_len--;
	Dl_info self;
	if (!dladdr((void *)InitializeInjectionNvtx2, &self) || !self.dli_fname) {
		mark[0] = 0;
		return;
	}
	const char *named = getenv("NVTX_INJECTION64_PATH");
	if (named && *named && !same_file(named, self.dli_fname)) {
		CARVE_DEBUG("NVTX_INJECTION64_PATH names %s: its ranges are that tool's, none is timed", named);
		__atomic_store_n(&carve_block->mark_state, CARVE_MARK_OTHER, __ATOMIC_RELAXED);
		mark[0] = 0;
		return;
	}
	if (!named || !*named)
		setenv("NVTX_INJECTION64_PATH", self.dli_fname, 1); /* at load: no other thread yet */
	uint32_t off = CARVE_MARK_OFF;
	__atomic_compare_exchange_n(&carve_block->mark_state, &off, CARVE_MARK_WAITING, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
