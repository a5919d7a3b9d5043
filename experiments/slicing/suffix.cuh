// suffix.cuh: what suffix.cu's modes are made of, on the host: the
// descriptor's fields (through carve_tmd.h, the shim's home for what
// slicing edits, and qmd_v04.h for the rest), the launch callback that
// edits the next launch's descriptor as planned, the JSON line, the
// kernels' code from the cubin, the prologue from prologue.txt, and the
// memory the copies of code go to. Included once, by suffix.cu.
#ifndef SLICING_SUFFIX_CUH
#define SLICING_SUFFIX_CUH

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
#include "qmd_v04.h"

// ---- the launch descriptor -------------------------------------------------

// QMD V04 (descriptor version CARVE_TMD_V_SLICE): carve_tmd.h has the
// grid's width and the program and prefetch addresses, qmd_v04.h the other
// fields the probe reads or sets.
static uint64_t prefetch_address(const uint8_t *q)
{
	return carve_tmd_get64(q, CARVE_TMD_PREFETCH_OFFSET, CARVE_TMD_PREFETCH_HI_BITS);
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
	for (int k = 0; k <= CARVE_TMD_PREFETCH_SHIFT_MAX; k++)
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
	seen.program = carve_tmd_program(q);
	seen.edited = 0;
	seen.skipped = nullptr;
	seen.prefetch_done = "none";
	if (!plan.armed)
		return;
	plan.armed = 0;
	if (seen.version != CARVE_TMD_V_SLICE) {
		seen.skipped = "descriptor version is not 0x40 (QMD V04)";
		return;
	}
	if (plan.expect && seen.program != plan.expect) {
		seen.skipped = "the launch's program address is not the kernel's";
		return;
	}
	if (plan.width)
		carve_tmd_set_grid_width(q, plan.width);
	if (plan.program) {
		// the prefetch moves with the program where it is the old
		// address shifted right by some k (carve_tmd_move_program)
		uint64_t pf = prefetch_address(q);
		if (plan.prefetch == 0 && carve_tmd_move_program(q, plan.program)) {
			seen.prefetch_done = "moved";
		} else {
			carve_tmd_set64(q, CARVE_TMD_PROGRAM_OFFSET, CARVE_TMD_PROGRAM_HI_BITS, plan.program);
			if (plan.prefetch == 2) {
				qmd_set(q, QMD_PROGRAM_PREFETCH_SIZE, 0);
				seen.prefetch_done = "size zeroed";
			} else {
				seen.prefetch_done = pf ? "kept (old code)" : "none set";
			}
		}
	}
	if (plan.invalidate)
		qmd_set(q, QMD_INVALIDATE_INSTRUCTION_CACHE, 1);
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
	qmd_field imm{0, 0}; // the 32-bit immediate compared with blockIdx.x
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
	p->imm = qmd_field{(unsigned)bit, (unsigned)bit + 31};
	return true;
}

// prologue_for: the prologue with its constant set for S
static std::vector<uint8_t> prologue_for(const Prologue &p, unsigned s)
{
	std::vector<uint8_t> v = p.bytes;
	qmd_set(v.data(), p.imm, (uint64_t)((long)s + p.delta) & 0xffffffffu);
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


#endif
