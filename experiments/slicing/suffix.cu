// suffix: can a launch run only blocks [S, N) of its grid, blockIdx and
// gridDim unchanged, on an unmodified kernel? In the driver's launch
// callback the descriptor's PROGRAM_ADDRESS is pointed at a copy of the
// kernel's code in ordinary device memory, with a prologue in front that
// ends blocks whose blockIdx.x < S (the prologue comes from prologue.py);
// GRID_WIDTH, lowered, ends the grid early (HARDWARE.md 9). One experiment
// per process, one JSON line on stdout; the caller runs each under timeout,
// since a bad descriptor can hang the GPU queue.
//
// Build: nvcc -cubin -arch=sm_90 -o suffix.cubin suffix.cu   (the kernels)
//        nvcc -arch=sm_90 -I shim -o suffix suffix.cu -lcuda  (the program)
// Run in the folder holding suffix.cubin and prologue.txt:
//   suffix info | copy | copy-managed | copy-vmm | copy-vmm-ro | copy-devsrc
//          | suffix S | pieces K [REPS]
// Environment: SLICE_MEM=alloc|managed|vmm (the code arena of suffix and
// pieces, default alloc), SLICE_SRC=cubin|device (their code from the cubin,
// default, or copied on the GPU from the driver's), SLICE_INVALIDATE=1 (set the descriptor's
// INVALIDATE_INSTRUCTION_CACHE on edited launches), SLICE_PREFETCH=move|keep|
// zero (the descriptor's program prefetch on edited launches, default move),
// SLICE_SEED (pieces' split points, default 1).
#include <cuda.h>
#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "carve_tmd.h"

// ---- the kernels (also compiled alone into suffix.cubin) ------------------

#define GRID 264   // 2 blocks per SM of an H100
#define BLOCK 128  // threads; red's tree needs a power of two

__host__ __device__ __forceinline__ unsigned mix(unsigned b, unsigned t, unsigned g)
{
	unsigned x = b * 0x9E3779B1u ^ (t + 0x7F4A7C15u) * 0x85EBCA6Bu ^ g * 0xC2B2AE35u;
	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return x | 1; // odd: 0 means "not written"
}

// k: each thread a value of its block, thread and the grid's width; each
// block counted.
extern "C" __global__ void k(unsigned *out, unsigned *n)
{
	unsigned b = blockIdx.x, t = threadIdx.x;
	out[b * blockDim.x + t] = mix(b, t, gridDim.x);
	if (t == 0)
		atomicAdd(n, 1u);
}

// red: loops and data-dependent branches (relative branches inside the
// copied code), then a shared-memory tree reduction with barriers; one word
// per block. No calls: a __noinline__ function is code outside the copy.
extern "C" __global__ void red(unsigned *out, unsigned *n)
{
	__shared__ unsigned s[BLOCK];
	unsigned b = blockIdx.x, t = threadIdx.x;
	unsigned x = mix(b, t, gridDim.x);
	unsigned rounds = 8 + (x >> 4 & 15) + b % 5;
	for (unsigned i = 0; i < rounds; i++) {
		if (x & 2)
			x = x * 2654435761u + i;
		else
			x = (x >> 3) ^ (x << 7) ^ b;
		if ((x & 0xff) == (b & 0xff))
			break;
	}
	s[t] = x;
	__syncthreads();
	for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
		if (t < w)
			s[t] += s[t + w] ^ (w * (b + 1));
		__syncthreads();
	}
	if (t == 0) {
		out[b] = (s[0] ^ gridDim.x) | 1;
		atomicAdd(n, 1u);
	}
}

// peek: copies n words from src, read as ordinary global memory (can a
// kernel load from where the code is?).
extern "C" __global__ void peek(const unsigned long long *src, unsigned long long *dst, int n)
{
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		dst[i] = src[i];
}

// ---- the launch descriptor -------------------------------------------------

// Fields of QMD V04_00, the version byte 0x40 (QMD_MAJOR_VERSION 4, minor 0)
// at byte 72 (carve_tmd.h): NVCBC0_QMDV04_00_* in NVIDIA open-gpu-doc
// classes/compute/clcbc0qmd.h, bit ranges MW(hi:lo). PROGRAM_ADDRESS is the
// code's full virtual address, not shifted (QMD V05 has
// PROGRAM_ADDRESS_*_SHIFTED4 elsewhere; this probe edits V04 only).
struct Field {
	unsigned lo, hi;
};
static const Field QMD_MINOR_VERSION = {576, 579};
static const Field QMD_MAJOR_VERSION = {580, 583};
static const Field SASS_VERSION = {536, 543};
static const Field INVALIDATE_INSTRUCTION_CACHE = {606, 606};
static const Field GRID_WIDTH = {1024, 1055}; // byte 128
static const Field REGISTER_COUNT = {1200, 1208};
static const Field PROGRAM_ADDRESS_LOWER = {1216, 1247}; // byte 152
static const Field PROGRAM_ADDRESS_UPPER = {1248, 1272}; // byte 156, 25 bits
static const Field PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED = {1344, 1375};
static const Field PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED = {1376, 1392};
static const Field PROGRAM_PREFETCH_SIZE = {1393, 1401};
static const Field PROGRAM_PREFETCH_TYPE = {1402, 1403};
#define QMD_BYTES 384 // V04: 3072 bits
#define QMD_V04 0x40

static uint64_t bits_get(const uint8_t *p, Field f)
{
	uint64_t v = 0;
	for (unsigned b = f.hi + 1; b-- > f.lo;)
		v = v << 1 | (p[b / 8] >> (b % 8) & 1);
	return v;
}

static void bits_set(uint8_t *p, Field f, uint64_t v)
{
	for (unsigned b = f.lo; b <= f.hi; b++) {
		uint8_t m = (uint8_t)(1u << (b % 8));
		if (v >> (b - f.lo) & 1)
			p[b / 8] |= m;
		else
			p[b / 8] &= (uint8_t)~m;
	}
}

static uint64_t program_address(const uint8_t *q)
{
	return bits_get(q, PROGRAM_ADDRESS_LOWER) | bits_get(q, PROGRAM_ADDRESS_UPPER) << 32;
}

static uint64_t prefetch_address(const uint8_t *q)
{
	return bits_get(q, PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED) | bits_get(q, PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED) << 32;
}

// ---- the launch callback ---------------------------------------------------

// The driver's launch-tools export table: the uuid carve_tools_uuid in
// shim/tools.c, the entries and the launch callback's domain and id as in
// shim/hook.c (HARDWARE.md 1).
static const unsigned char tools_uuid[16] = {0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
					     0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b};
enum { E_SUBSCRIBE = 3, E_ENABLE = 6, LAUNCH_DOMAIN = 0xb, LAUNCH_CBID = 0x1 };
typedef void (*tools_cb)(void *, int, int, const void *);
typedef int (*subscribe_fn)(uint32_t *, tools_cb, void *);
typedef int (*enable_fn)(uint32_t, uint32_t, int, int);

// Plan: what the callback does to the next launch, then forgets.
struct Plan {
	int armed;
	uint64_t expect;   // the descriptor's program address must be this (0: any)
	uint64_t program;  // new PROGRAM_ADDRESS (0: unchanged)
	uint32_t width;    // new GRID_WIDTH (0: unchanged)
	int invalidate;    // set INVALIDATE_INSTRUCTION_CACHE
	int prefetch;      // 0 move with the program, 1 keep, 2 zero the size
};

// Seen: what the callback saw and did at the last launch.
struct Seen {
	int hits;
	int version;
	uint8_t qmd[QMD_BYTES]; // as the driver made it, before any edit
	uint64_t program;
	int edited;
	const char *skipped; // why an armed plan was not applied
	const char *prefetch_done;
};

static Plan plan;
static Seen seen;

// the shift k with prefetch == program >> k, or -1
static int prefetch_shift(uint64_t program, uint64_t prefetch)
{
	for (int k = 0; k <= 12; k++)
		if (prefetch && prefetch == program >> k)
			return k;
	return -1;
}

static void on_launch(void *, int domain, int cbid, const void *params)
{
	if (domain != LAUNCH_DOMAIN || cbid != LAUNCH_CBID || !params)
		return;
	uint8_t *q = carve_params_tmd(params);
	if (!q)
		return;
	seen.hits++;
	seen.version = carve_tmd_version(q);
	memcpy(seen.qmd, q, QMD_BYTES);
	seen.program = program_address(q);
	seen.edited = 0;
	seen.skipped = nullptr;
	seen.prefetch_done = "none";
	if (!plan.armed)
		return;
	plan.armed = 0;
	if (seen.version != QMD_V04) {
		seen.skipped = "descriptor version is not 0x40 (QMD V04)";
		return;
	}
	if (plan.expect && seen.program != plan.expect) {
		seen.skipped = "the launch's program address is not the kernel's";
		return;
	}
	if (plan.width)
		bits_set(q, GRID_WIDTH, plan.width);
	if (plan.program) {
		uint64_t old = seen.program, pf = prefetch_address(q);
		bits_set(q, PROGRAM_ADDRESS_LOWER, plan.program & 0xffffffffu);
		bits_set(q, PROGRAM_ADDRESS_UPPER, plan.program >> 32);
		int k = prefetch_shift(old, pf);
		if (plan.prefetch == 2) {
			bits_set(q, PROGRAM_PREFETCH_SIZE, 0);
			seen.prefetch_done = "size zeroed";
		} else if (plan.prefetch == 0 && k >= 0) {
			uint64_t np = plan.program >> k;
			bits_set(q, PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED, np & 0xffffffffu);
			bits_set(q, PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED, np >> 32);
			seen.prefetch_done = "moved";
		} else {
			seen.prefetch_done = pf ? "kept (old code)" : "none set";
		}
	}
	if (plan.invalidate)
		bits_set(q, INVALIDATE_INSTRUCTION_CACHE, 1);
	seen.edited = 1;
}

// ---- output ----------------------------------------------------------------

static std::string J; // the JSON line

static void jraw(const char *k, const std::string &v)
{
	J += J.empty() ? "{" : ",";
	J += "\"";
	J += k;
	J += "\":";
	J += v;
}
static std::string qs(const std::string &s)
{
	std::string r = "\"";
	for (char c : s)
		r += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
	return r + "\"";
}
static void jstr(const char *k, const std::string &v) { jraw(k, qs(v)); }
static void jnum(const char *k, long long v) { jraw(k, std::to_string(v)); }
static void jhex(const char *k, uint64_t v)
{
	char b[32];
	snprintf(b, sizeof b, "\"0x%llx\"", (unsigned long long)v);
	jraw(k, b);
}
static std::string hex(const uint8_t *p, size_t n)
{
	std::string s;
	char b[3];
	for (size_t i = 0; i < n; i++) {
		snprintf(b, sizeof b, "%02x", p[i]);
		s += b;
	}
	return s;
}
static std::string err(CUresult r)
{
	const char *name = nullptr;
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
		return "CUresult " + std::to_string((int)r);
	return name;
}

// finish prints the JSON line and ends the process; a hung GPU queue may
// keep a normal exit from returning, so none is tried then.
[[noreturn]] static void finish(int code, bool hung = false)
{
	J += "}";
	printf("%s\n", J.c_str());
	fflush(stdout);
	if (hung)
		_exit(code);
	exit(code);
}

static void fail(const char *what, CUresult r)
{
	jstr("error", std::string(what) + ": " + err(r));
	finish(1);
}

#define CK(call)                                   \
	do {                                       \
		CUresult r_ = (call);              \
		if (r_ != CUDA_SUCCESS)            \
			fail(#call, r_);           \
	} while (0)

// ---- the kernels' code from the cubin ---------------------------------------

struct Code {
	std::vector<uint8_t> bytes;
	int relocs = 0; // entries of .rel/.rela.text.NAME: patched when loaded
};

static std::vector<uint8_t> read_file(const char *path)
{
	std::vector<uint8_t> v;
	FILE *f = fopen(path, "rb");
	if (!f)
		return v;
	uint8_t buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		v.insert(v.end(), buf, buf + n);
	fclose(f);
	return v;
}

// cubin_text finds section .text.NAME of an ELF64 cubin.
static bool cubin_text(const std::vector<uint8_t> &f, const char *name, Code *c)
{
	if (f.size() < sizeof(Elf64_Ehdr))
		return false;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f.data();
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > f.size() || eh->e_shstrndx >= eh->e_shnum)
		return false;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(f.data() + eh->e_shoff);
	const Elf64_Shdr &strs = sh[eh->e_shstrndx];
	std::string text = std::string(".text.") + name, rel = ".rel" + text, rela = ".rela" + text;
	bool found = false;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_name >= strs.sh_size)
			continue;
		const char *s = (const char *)f.data() + strs.sh_offset + sh[i].sh_name;
		if (text == s && sh[i].sh_offset + sh[i].sh_size <= f.size()) {
			c->bytes.assign(f.begin() + sh[i].sh_offset, f.begin() + sh[i].sh_offset + sh[i].sh_size);
			found = true;
		} else if ((rel == s || rela == s) && sh[i].sh_entsize) {
			c->relocs += (int)(sh[i].sh_size / sh[i].sh_entsize);
		}
	}
	return found;
}

// ---- the prologue from prologue.py ----------------------------------------

struct Prologue {
	std::vector<uint8_t> bytes;
	Field imm{0, 0}; // the 32-bit immediate compared with blockIdx.x
	long delta = 0;  // immediate = S + delta
};

static bool load_prologue(const char *path, Prologue *p)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char line[8192];
	long bit = -1;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, "bytes=", 6)) {
			for (const char *c = line + 6; c[0] && c[1] && c[0] != '\n'; c += 2) {
				unsigned v;
				if (sscanf(c, "%2x", &v) != 1)
					break;
				p->bytes.push_back((uint8_t)v);
			}
		} else if (!strncmp(line, "imm_bit=", 8)) {
			bit = strtol(line + 8, nullptr, 10);
		} else if (!strncmp(line, "imm_delta=", 10)) {
			p->delta = strtol(line + 10, nullptr, 10);
		}
	}
	fclose(f);
	if (bit < 0 || p->bytes.empty() || p->bytes.size() % 16 || (size_t)bit + 32 > p->bytes.size() * 8)
		return false;
	p->imm = Field{(unsigned)bit, (unsigned)bit + 31};
	return true;
}

// prologue_for: the prologue with its constant set for S
static std::vector<uint8_t> prologue_for(const Prologue &p, unsigned s)
{
	std::vector<uint8_t> v = p.bytes;
	bits_set(v.data(), p.imm, (uint64_t)((long)s + p.delta) & 0xffffffffu);
	return v;
}

// ---- where copies of code go -------------------------------------------------

// Arena: device memory for copies of code, each at a new address never
// written again (no stale instruction cache), 4 KiB apart so that nothing
// fetched ahead of one copy is the next copy's space before it is written.
struct Arena {
	const char *kind;
	CUdeviceptr base = 0;
	size_t size = 0, used = 0;
	CUmemGenericAllocationHandle handle = 0;
	CUmemAccessDesc access{};
	std::string note;
};

#define ARENA_BYTES (64u << 20)
#define SLOT_ALIGN 4096

static CUdevice dev;

static void arena_make(Arena *a, const char *kind)
{
	a->kind = kind;
	a->size = ARENA_BYTES;
	if (!strcmp(kind, "alloc")) {
		CK(cuMemAlloc(&a->base, a->size));
	} else if (!strcmp(kind, "managed")) {
		CK(cuMemAllocManaged(&a->base, a->size, CU_MEM_ATTACH_GLOBAL));
	} else if (!strcmp(kind, "vmm") || !strcmp(kind, "vmm-ro")) {
		CUmemAllocationProp prop{};
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = dev;
		size_t gran = 0;
		CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
		a->size = (a->size + gran - 1) / gran * gran;
		CK(cuMemCreate(&a->handle, a->size, &prop, 0));
		CK(cuMemAddressReserve(&a->base, a->size, 0, 0, 0));
		CK(cuMemMap(a->base, a->size, 0, a->handle, 0));
		a->access.location = prop.location;
		a->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		CK(cuMemSetAccess(a->base, a->size, &a->access, 1));
	} else {
		jstr("error", std::string("unknown memory kind ") + kind + " (alloc, managed, vmm)");
		finish(2);
	}
}

// arena_put writes code to a new slot, the bytes of head from the host and
// after them n bytes from device address src (the driver's copy of the
// kernel's code), and returns the slot's address, the code ready to run.
static CUdeviceptr arena_put(Arena *a, const std::vector<uint8_t> &head, CUdeviceptr src, size_t n)
{
	size_t len = head.size() + (src ? n : 0);
	size_t off = (a->used + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
	if (off + len + SLOT_ALIGN > a->size) {
		jstr("error", "the code arena is full: fewer repetitions");
		finish(1);
	}
	a->used = off + len + SLOT_ALIGN;
	CUdeviceptr at = a->base + off;
	if (!strcmp(a->kind, "vmm-ro")) {
		a->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		CK(cuMemSetAccess(a->base, a->size, &a->access, 1));
	}
	if (!head.empty())
		CK(cuMemcpyHtoD(at, head.data(), head.size()));
	if (src)
		CK(cuMemcpyDtoD(at + head.size(), src, n));
	if (!strcmp(a->kind, "managed")) {
#if CUDA_VERSION >= 13000
		CUmemLocation loc{};
		loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
		loc.id = dev;
		CUresult r = cuMemPrefetchAsync(at & ~(CUdeviceptr)4095, (len + 8191) & ~(size_t)4095, loc, 0, 0);
#else
		CUresult r = cuMemPrefetchAsync(at & ~(CUdeviceptr)4095, (len + 8191) & ~(size_t)4095, dev, 0);
#endif
		if (r != CUDA_SUCCESS)
			a->note = "prefetch to the GPU: " + err(r);
	}
	CK(cuCtxSynchronize());
	if (!strcmp(a->kind, "vmm-ro")) {
		a->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
		CUresult r = cuMemSetAccess(a->base, a->size, &a->access, 1);
		a->note = r == CUDA_SUCCESS ? "read-only while it runs" : "read-only refused: " + err(r) + ", ran read-write";
	}
	return at;
}

// ---- launching and checking ---------------------------------------------------

struct Kernel {
	const char *name;
	CUfunction f;
	Code code;
	unsigned words; // per block in out
	uint64_t program = 0;        // where the driver put its code
	std::vector<unsigned> ref;   // out of an unsliced launch
};

static unsigned *out_host; // host-mapped: readable while a kernel hangs
static CUdeviceptr out_dev, n_dev;
#define OUT_WORDS (GRID * BLOCK)
#define WAIT_S 5.0

static void clear_out()
{
	memset(out_host, 0, OUT_WORDS * sizeof(unsigned));
	unsigned z = 0;
	CK(cuMemcpyHtoD(n_dev, &z, sizeof z));
}

static unsigned read_n()
{
	unsigned n = 0;
	CK(cuMemcpyDtoH(&n, n_dev, sizeof n));
	return n;
}

static CUresult launch(Kernel *k, unsigned grid, const Plan &p)
{
	void *args[] = {&out_dev, &n_dev};
	seen.edited = 0;
	seen.skipped = nullptr;
	seen.prefetch_done = "none";
	plan = p;
	CUresult r = cuLaunchKernel(k->f, grid, 1, 1, BLOCK, 1, 1, 0, 0, args, nullptr);
	plan.armed = 0;
	return r;
}

// wait_all: the stream's end, or false after WAIT_S
static bool wait_all(CUresult *r)
{
	auto t0 = std::chrono::steady_clock::now();
	for (;;) {
		*r = cuStreamQuery(0);
		if (*r != CUDA_ERROR_NOT_READY)
			return true;
		if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > WAIT_S)
			return false;
		usleep(1000);
	}
}

// Blocks: each block's output against the reference.
struct Blocks {
	int ok = 0, missing = 0, wrong = 0, missing_below = 0, ok_below = 0, wrong_below = 0;
	long first_wrong = -1;
};

// check counts blocks; below: the first blocks, expected not to have run
static Blocks check(const Kernel &k, unsigned below)
{
	Blocks b;
	for (unsigned i = 0; i < GRID; i++) {
		bool all_zero = true, same = true;
		for (unsigned w = 0; w < k.words; w++) {
			unsigned v = out_host[i * k.words + w];
			all_zero &= v == 0;
			same &= !k.ref.empty() && v == k.ref[i * k.words + w];
		}
		int *o = same ? &b.ok : all_zero ? &b.missing : &b.wrong;
		if (i < below)
			o = same ? &b.ok_below : all_zero ? &b.missing_below : &b.wrong_below;
		(*o)++;
		if (!same && !all_zero && b.first_wrong < 0)
			b.first_wrong = i;
	}
	return b;
}

static std::string blocks_json(const Blocks &b)
{
	char s[256];
	snprintf(s, sizeof s,
		 "{\"ok\":%d,\"missing\":%d,\"wrong\":%d,\"below_S_missing\":%d,\"below_S_ok\":%d,\"below_S_wrong\":%d,\"first_wrong\":%ld}",
		 b.ok, b.missing, b.wrong, b.missing_below, b.ok_below, b.wrong_below, b.first_wrong);
	return s;
}

// hung reports a launch that did not end within WAIT_S and ends the process.
[[noreturn]] static void hung(const Kernel &k, unsigned below, const char *what)
{
	jstr("kernel", k.name);
	jraw("hung", "true");
	jstr("while", what);
	jraw("blocks_so_far", blocks_json(check(k, below)));
	finish(3, true);
}

static void reference(Kernel *k)
{
	clear_out();
	CUresult r = launch(k, GRID, Plan{});
	if (r != CUDA_SUCCESS)
		fail("the unsliced launch", r);
	if (!wait_all(&r))
		hung(*k, 0, "the unsliced launch");
	if (r != CUDA_SUCCESS)
		fail("the unsliced launch", r);
	unsigned n = read_n();
	if (n != GRID || !seen.hits) {
		jstr("error", std::string(k->name) + ": the unsliced launch ran " + std::to_string(n) + " blocks, the hook saw " +
				      std::to_string(seen.hits) + " launches");
		finish(1);
	}
	k->program = seen.program;
	k->ref.assign(out_host, out_host + OUT_WORDS);
}

// Run: one sliced launch's outcome, as JSON.
static std::string run_json(const Kernel &k, CUresult launch_rc, CUresult end_rc, unsigned n, unsigned expect_n,
			    const Blocks &b, bool pass)
{
	std::string s = "{\"kernel\":" + qs(k.name) + ",\"pass\":" + (pass ? "true" : "false") +
			",\"launch\":" + qs(err(launch_rc)) + ",\"end\":" + qs(err(end_rc)) +
			",\"blocks_counted\":" + std::to_string(n) + ",\"expected\":" + std::to_string(expect_n) +
			",\"edited\":" + (seen.edited ? "true" : "false") + ",\"prefetch\":" + qs(seen.prefetch_done);
	if (seen.skipped)
		s += ",\"skipped\":" + qs(seen.skipped);
	return s + ",\"blocks\":" + blocks_json(b) + "}";
}

static Plan edit_plan(const Kernel &k, CUdeviceptr program, uint32_t width)
{
	Plan p{};
	p.armed = 1;
	p.expect = k.program;
	p.program = program;
	p.width = width;
	const char *inv = getenv("SLICE_INVALIDATE"), *pf = getenv("SLICE_PREFETCH");
	p.invalidate = inv && *inv == '1';
	p.prefetch = !pf || !strcmp(pf, "move") ? 0 : !strcmp(pf, "keep") ? 1 : 2;
	return p;
}

// one_sliced: a single launch of a copy of k's code at program, the first
// `below` blocks expected to exit at once; false if it did not pass.
static bool one_sliced(Kernel *k, CUdeviceptr program, unsigned below, std::string *res)
{
	clear_out();
	CUresult lr = launch(k, GRID, edit_plan(*k, program, 0)), er = CUDA_SUCCESS;
	if (lr == CUDA_SUCCESS && !wait_all(&er))
		hung(*k, below, "the sliced launch");
	if (lr != CUDA_SUCCESS || er != CUDA_SUCCESS) {
		Blocks b = check(*k, below);
		*res = run_json(*k, lr, er, 0, GRID - below, b, false);
		return false;
	}
	unsigned n = read_n();
	Blocks b = check(*k, below);
	bool pass = seen.edited && n == GRID - below && b.ok == (int)(GRID - below) && b.missing_below == (int)below;
	*res = run_json(*k, lr, er, n, GRID - below, b, pass);
	return pass;
}

// ---- modes ------------------------------------------------------------------

static Kernel K[2] = {{"k", nullptr, {}, BLOCK}, {"red", nullptr, {}, 1}};
static CUfunction peek_fn;

// safe_read copies n bytes of this process's memory at p, false where they
// cannot be read (through a pipe: a bad address fails the write, no crash)
static bool safe_read(const void *p, void *buf, size_t n)
{
	int fd[2];
	if (pipe(fd) != 0)
		return false;
	bool ok = write(fd[1], p, n) == (ssize_t)n && read(fd[0], buf, n) == (ssize_t)n;
	close(fd[0]);
	close(fd[1]);
	return ok;
}

static void mode_info()
{
	jstr("mode", "info");
	std::string ks = "[";
	for (Kernel &k : K) {
		reference(&k);
		const uint8_t *q = seen.qmd;
		uint64_t pf = prefetch_address(q);
		std::string s = "{\"kernel\":" + qs(k.name);
		char b[512];
		snprintf(b, sizeof b,
			 ",\"version\":\"0x%02x\",\"qmd_major\":%llu,\"qmd_minor\":%llu,\"sass_version\":%llu,"
			 "\"program_address\":\"0x%llx\",\"grid_width\":%llu,\"register_count\":%llu,"
			 "\"prefetch_address_shifted\":\"0x%llx\",\"prefetch_shift\":%d,\"prefetch_size\":%llu,"
			 "\"prefetch_type\":%llu,\"invalidate_icache\":%llu",
			 seen.version, (unsigned long long)bits_get(q, QMD_MAJOR_VERSION),
			 (unsigned long long)bits_get(q, QMD_MINOR_VERSION), (unsigned long long)bits_get(q, SASS_VERSION),
			 (unsigned long long)k.program, (unsigned long long)bits_get(q, GRID_WIDTH),
			 (unsigned long long)bits_get(q, REGISTER_COUNT), (unsigned long long)pf, prefetch_shift(k.program, pf),
			 (unsigned long long)bits_get(q, PROGRAM_PREFETCH_SIZE), (unsigned long long)bits_get(q, PROGRAM_PREFETCH_TYPE),
			 (unsigned long long)bits_get(q, INVALIDATE_INSTRUCTION_CACHE));
		s += b;
		int regs = 0;
		cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k.f);
		s += ",\"num_regs_attribute\":" + std::to_string(regs);
		s += ",\"cubin_text_bytes\":" + std::to_string(k.code.bytes.size()) +
		     ",\"cubin_relocations\":" + std::to_string(k.code.relocs);
		// no API names a function's code address: look for it in the
		// CUfunction's own (opaque, host) memory
		std::string offs = "[";
		uint64_t fw[32];
		if (safe_read(k.f, fw, sizeof fw))
			for (int i = 0; i < 32; i++)
				if (fw[i] == k.program)
					offs += (offs.size() > 1 ? "," : "") + std::to_string(i * 8);
		s += ",\"address_in_CUfunction_at\":" + offs + "]";
		// does the driver know the code's address as an allocation?
		CUdeviceptr base = 0;
		size_t size = 0;
		CUresult ar = cuMemGetAddressRange(&base, &size, k.program);
		s += ",\"address_range\":" + qs(err(ar));
		if (ar == CUDA_SUCCESS) {
			char r[96];
			snprintf(r, sizeof r, ",\"range_base\":\"0x%llx\",\"range_size\":%zu", (unsigned long long)base, size);
			s += r;
		}
		uint8_t code[256] = {0};
		size_t len = std::min<size_t>(sizeof code, k.code.bytes.size());
		CUresult r = cuMemcpyDtoH(code, k.program, sizeof code);
		s += ",\"dtoh_256\":" + qs(err(r));
		if (r == CUDA_SUCCESS) {
			s += ",\"dtoh_bytes\":" + qs(hex(code, sizeof code));
			s += std::string(",\"dtoh_equals_cubin\":") + (memcmp(code, k.code.bytes.data(), len) ? "false" : "true");
		}
		s += ",\"cubin_first_256\":" + qs(hex(k.code.bytes.data(), len));
		s += ",\"qmd\":" + qs(hex(q, QMD_BYTES)) + "}";
		ks += (ks.size() > 1 ? "," : "") + s;
	}
	jraw("kernels", ks + "]");
	// last, since a fault here ends the context: can a kernel load its
	// own code as data?
	std::string pk = "[";
	for (Kernel &k : K) {
		CUdeviceptr dst;
		CK(cuMemAlloc(&dst, 256));
		CUdeviceptr src = k.program;
		int n = 32;
		void *args[] = {&src, &dst, &n};
		CUresult lr = cuLaunchKernel(peek_fn, 1, 1, 1, 32, 1, 1, 0, 0, args, nullptr), er = CUDA_SUCCESS;
		std::string s = "{\"kernel\":" + qs(k.name) + ",\"launch\":" + qs(err(lr));
		if (lr == CUDA_SUCCESS && !wait_all(&er)) {
			s += ",\"hung\":true}";
			jraw("peek", pk + (pk.size() > 1 ? "," : "") + s + "]");
			finish(3, true);
		}
		s += ",\"end\":" + qs(err(er));
		uint8_t code[256];
		if (lr == CUDA_SUCCESS && er == CUDA_SUCCESS && cuMemcpyDtoH(code, dst, sizeof code) == CUDA_SUCCESS) {
			size_t len = std::min<size_t>(sizeof code, k.code.bytes.size());
			s += ",\"bytes\":" + qs(hex(code, sizeof code));
			s += std::string(",\"equals_cubin\":") + (memcmp(code, k.code.bytes.data(), len) ? "false" : "true");
		}
		pk += (pk.size() > 1 ? "," : "") + s + "}";
		if (er != CUDA_SUCCESS)
			break;
	}
	jraw("peek", pk + "]");
	finish(0);
}

// put_sliced: a new copy of k's code behind the prologue for S, the code
// from the cubin, or with SLICE_SRC=device from the driver's own copy
static CUdeviceptr put_sliced(Arena *a, const Prologue &p, const Kernel &k, unsigned s, bool device)
{
	std::vector<uint8_t> v = prologue_for(p, s);
	if (device)
		return arena_put(a, v, k.program, k.code.bytes.size());
	v.insert(v.end(), k.code.bytes.begin(), k.code.bytes.end());
	return arena_put(a, v, 0, 0);
}

static const char *src_kind()
{
	const char *s = getenv("SLICE_SRC");
	return s && !strcmp(s, "device") ? "device" : "cubin";
}

static const char *mem_kind()
{
	const char *m = getenv("SLICE_MEM");
	return m && *m ? m : "alloc";
}

static bool find_prologue(Prologue *p)
{
	const char *path = getenv("SLICE_PROLOGUE");
	return load_prologue(path && *path ? path : "prologue.txt", p);
}

static void need_prologue(Prologue *p)
{
	if (!find_prologue(p)) {
		jstr("error", "no usable prologue.txt (bytes=, imm_bit=, imm_delta=): run prologue.py first");
		finish(2);
	}
}

// copy: the kernel's exact code, no prologue, run from a copy
static void mode_copy(const char *kind, bool devsrc)
{
	jstr("mode", devsrc ? std::string("copy-devsrc") : std::string("copy-") + kind);
	Arena a;
	arena_make(&a, kind);
	jstr("memory", kind);
	std::string runs = "[";
	bool all = true;
	for (Kernel &k : K) {
		reference(&k);
		CUdeviceptr at = devsrc ? arena_put(&a, {}, k.program, k.code.bytes.size()) : arena_put(&a, k.code.bytes, 0, 0);
		std::string res;
		all &= one_sliced(&k, at, 0, &res);
		runs += (runs.size() > 1 ? "," : "") + res;
		if (!all)
			break;
	}
	// a copy that passes proves nothing if the driver ignored the edit and
	// ran its own code: a copy behind the prologue for S = N must run no block
	// (without a prologue that cannot be told: then the copies alone count)
	Prologue p;
	if (all && find_prologue(&p)) {
		Kernel &k = K[0];
		std::string res;
		bool none = one_sliced(&k, put_sliced(&a, p, k, GRID, devsrc), GRID, &res);
		jraw("address_honored", none ? "true" : "false");
		jraw("exit_all_run", res);
		all &= none;
	} else {
		jraw("address_honored", "null");
	}
	if (!a.note.empty())
		jstr("memory_note", a.note);
	jraw("runs", runs + "]");
	jraw("pass", all ? "true" : "false");
	finish(all ? 0 : 1);
}

// suffix S: blocks [S, N) through a copy with the prologue
static void mode_suffix(unsigned s)
{
	jstr("mode", "suffix");
	jnum("S", s);
	if (s < 1 || s >= GRID) {
		jstr("error", "S must be in [1, " + std::to_string(GRID - 1) + "]");
		finish(2);
	}
	Prologue p;
	need_prologue(&p);
	Arena a;
	arena_make(&a, mem_kind());
	jstr("memory", a.kind);
	jstr("code_from", src_kind());
	std::string runs = "[";
	bool all = true;
	for (Kernel &k : K) {
		reference(&k);
		CUdeviceptr at = put_sliced(&a, p, k, s, !strcmp(src_kind(), "device"));
		std::string res;
		all &= one_sliced(&k, at, s, &res);
		runs += (runs.size() > 1 ? "," : "") + res;
		if (!all)
			break;
	}
	jraw("runs", runs + "]");
	jraw("pass", all ? "true" : "false");
	finish(all ? 0 : 1);
}

// pieces K REPS: the grid as K pieces at random split points: [0, c1) a
// plain prefix (GRID_WIDTH = c1), [ci, ci+1) a copy with prologue S = ci and
// GRID_WIDTH = ci+1, the last to N; all queued, then checked bit for bit.
static void mode_pieces(unsigned npieces, unsigned reps)
{
	jstr("mode", "pieces");
	jnum("K", npieces);
	jnum("reps", reps);
	if (npieces < 2 || npieces > 32) {
		jstr("error", "K must be in [2, 32]");
		finish(2);
	}
	Prologue p;
	need_prologue(&p);
	Arena a;
	arena_make(&a, mem_kind());
	jstr("memory", a.kind);
	jstr("code_from", src_kind());
	const char *seed = getenv("SLICE_SEED");
	std::mt19937 rng(seed ? (unsigned)strtoul(seed, nullptr, 10) : 1u);
	jnum("seed", seed ? (long long)strtoul(seed, nullptr, 10) : 1);
	std::string per = "[";
	bool all = true;
	for (Kernel &k : K) {
		reference(&k);
		unsigned passed = 0;
		std::string first_fail;
		double secs = 0;
		for (unsigned rep = 0; rep < reps && first_fail.empty(); rep++) {
			std::vector<unsigned> cut;
			while (cut.size() < npieces - 1) {
				unsigned c = 1 + rng() % (GRID - 1);
				bool dup = false;
				for (unsigned x : cut)
					dup |= x == c;
				if (!dup)
					cut.push_back(c);
			}
			std::sort(cut.begin(), cut.end());
			cut.insert(cut.begin(), 0);
			cut.push_back(GRID);
			// the copies first: each a new address, written before any launch
			std::vector<CUdeviceptr> at(npieces, 0);
			for (unsigned i = 1; i < npieces; i++) {
				at[i] = put_sliced(&a, p, k, cut[i], !strcmp(src_kind(), "device"));
			}
			clear_out();
			auto t0 = std::chrono::steady_clock::now();
			CUresult lr = CUDA_SUCCESS, er = CUDA_SUCCESS;
			int edited = 0;
			std::string why;
			for (unsigned i = 0; i < npieces && lr == CUDA_SUCCESS; i++) {
				uint32_t width = cut[i + 1] == GRID ? 0 : cut[i + 1];
				Plan pl = edit_plan(k, at[i], width);
				if (i == 0)
					pl.invalidate = 0; // the driver's own code, unchanged
				lr = launch(&k, GRID, pl);
				edited += seen.edited;
				if (seen.skipped)
					why = seen.skipped;
			}
			if (lr == CUDA_SUCCESS && !wait_all(&er)) {
				jraw("per_kernel", per + (per.size() > 1 ? "," : "") + "{\"kernel\":" + qs(k.name) +
							   ",\"passed\":" + std::to_string(passed) + "}]");
				hung(k, 0, "pieces");
			}
			secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
			unsigned n = lr == CUDA_SUCCESS && er == CUDA_SUCCESS ? read_n() : 0;
			Blocks b = check(k, 0);
			if (lr == CUDA_SUCCESS && er == CUDA_SUCCESS && edited == (int)npieces && n == GRID && b.ok == GRID) {
				passed++;
				continue;
			}
			std::string cuts = "[";
			for (unsigned i = 1; i < npieces; i++)
				cuts += (i > 1 ? "," : "") + std::to_string(cut[i]);
			first_fail = "{\"rep\":" + std::to_string(rep) + ",\"cuts\":" + cuts + "],\"launch\":" + qs(err(lr)) +
				     ",\"end\":" + qs(err(er)) + ",\"edited\":" + std::to_string(edited) +
				     ",\"blocks_counted\":" + std::to_string(n) + ",\"blocks\":" + blocks_json(b) +
				     (why.empty() ? "" : ",\"skipped\":" + qs(why)) + "}";
		}
		char t[64];
		snprintf(t, sizeof t, "%.1f", passed ? secs / passed * 1e6 : 0.0);
		per += (per.size() > 1 ? "," : "") + std::string("{\"kernel\":") + qs(k.name) +
		       ",\"passed\":" + std::to_string(passed) + ",\"us_per_rep\":" + t +
		       (first_fail.empty() ? "" : ",\"first_failure\":" + first_fail) + "}";
		all &= first_fail.empty();
		if (!all)
			break;
	}
	jraw("per_kernel", per + "]");
	if (!a.note.empty())
		jstr("memory_note", a.note);
	jraw("pass", all ? "true" : "false");
	finish(all ? 0 : 1);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr,
			"usage: suffix info | copy | copy-managed | copy-vmm | copy-vmm-ro | copy-devsrc | suffix S | pieces K [REPS]\n"
			"  run in the folder holding suffix.cubin and prologue.txt (run.sh builds both)\n");
		return 2;
	}
	std::string mode = argv[1];
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CUcontext ctx;
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));

	const char *cubin = getenv("SLICE_CUBIN");
	cubin = cubin && *cubin ? cubin : "suffix.cubin";
	std::vector<uint8_t> elf = read_file(cubin);
	CUmodule mod;
	CK(cuModuleLoad(&mod, cubin));
	for (Kernel &k : K) {
		CK(cuModuleGetFunction(&k.f, mod, k.name));
		if (!cubin_text(elf, k.name, &k.code)) {
			jstr("error", std::string("no section .text.") + k.name + " in " + cubin);
			finish(2);
		}
	}
	CK(cuModuleGetFunction(&peek_fn, mod, "peek"));

	const void *table = nullptr;
	CUuuid u;
	memcpy(u.bytes, tools_uuid, sizeof u.bytes);
	CK(cuGetExportTable(&table, &u));
	const uintptr_t *t = (const uintptr_t *)table;
	uint32_t handle = 0;
	int rc = ((subscribe_fn)t[E_SUBSCRIBE])(&handle, on_launch, nullptr);
	if (rc == 0)
		rc = ((enable_fn)t[E_ENABLE])(1, handle, LAUNCH_DOMAIN, LAUNCH_CBID);
	if (rc != 0)
		fail("subscribing to the launch callback (another tool holds it?)", (CUresult)rc);

	CK(cuMemHostAlloc((void **)&out_host, OUT_WORDS * sizeof(unsigned), CU_MEMHOSTALLOC_DEVICEMAP));
	CK(cuMemHostGetDevicePointer(&out_dev, out_host, 0));
	CK(cuMemAlloc(&n_dev, sizeof(unsigned)));

	if (mode == "info")
		mode_info();
	if (mode == "copy" || mode == "copy-alloc")
		mode_copy("alloc", false);
	if (mode == "copy-managed")
		mode_copy("managed", false);
	if (mode == "copy-vmm")
		mode_copy("vmm", false);
	if (mode == "copy-vmm-ro")
		mode_copy("vmm-ro", false);
	if (mode == "copy-devsrc")
		mode_copy("alloc", true);
	if (mode == "suffix" && argc >= 3)
		mode_suffix((unsigned)strtoul(argv[2], nullptr, 10));
	if (mode == "pieces" && argc >= 3)
		mode_pieces((unsigned)strtoul(argv[2], nullptr, 10), argc >= 4 ? (unsigned)strtoul(argv[3], nullptr, 10) : 100);
	jstr("error", "unknown mode or missing argument: " + mode);
	finish(2);
}
