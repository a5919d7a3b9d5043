// suffix: can a launch run only blocks [S, N) of its grid, blockIdx and
// gridDim unchanged, on an unmodified kernel? In the driver's launch
// callback the descriptor's PROGRAM_ADDRESS is pointed at a copy of the
// kernel's code in ordinary device memory, with a prologue in front that
// ends blocks whose blockIdx.x < S (the prologue comes from prologue.py);
// GRID_WIDTH, lowered, ends the grid early (HARDWARE.md 9). One experiment
// per process, one JSON line on stdout; the caller runs each under timeout,
// since a bad descriptor can hang the GPU queue.
//
// The host side's parts are in suffix.cuh; this file holds the kernels,
// the checked launches and the modes.
//
// Build: nvcc -cubin -arch=sm_90 -I shim -o suffix.cubin suffix.cu   (the kernels)
//        nvcc -arch=sm_90 -I shim -o suffix suffix.cu -lcuda          (the program)
// Run in the folder holding suffix.cubin and prologue.txt:
//   suffix info | copy | copy-managed | copy-vmm | copy-vmm-ro | copy-devsrc
//          | suffix S | pieces K [REPS]
// Environment: SLICE_MEM=alloc|managed|vmm (the code arena of suffix and
// pieces, default alloc), SLICE_SRC=cubin|device (their code from the cubin,
// default, or copied on the GPU from the driver's), SLICE_INVALIDATE=1 (set the descriptor's
// INVALIDATE_INSTRUCTION_CACHE on edited launches), SLICE_PREFETCH=move|keep|
// zero (the descriptor's program prefetch on edited launches, default move),
// SLICE_SEED (pieces' split points, default 1).
#include "suffix.cuh"

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
			 seen.version, (unsigned long long)qmd_get(q, QMD_MAJOR_VERSION),
			 (unsigned long long)qmd_get(q, QMD_MINOR_VERSION), (unsigned long long)qmd_get(q, QMD_SASS_VERSION),
			 (unsigned long long)k.program, (unsigned long long)carve_tmd_grid_width(q),
			 (unsigned long long)qmd_get(q, QMD_REGISTER_COUNT), (unsigned long long)pf, prefetch_shift(k.program, pf),
			 (unsigned long long)qmd_get(q, QMD_PROGRAM_PREFETCH_SIZE), (unsigned long long)qmd_get(q, QMD_PROGRAM_PREFETCH_TYPE),
			 (unsigned long long)qmd_get(q, QMD_INVALIDATE_INSTRUCTION_CACHE));
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

// each_kernel: for each kernel its reference, then one sliced launch of
// the copy put(k) makes, the first `below` blocks expected to exit at once;
// stops at the first that does not pass. The runs as a JSON array in *runs;
// false if one did not pass.
template <class Put> static bool each_kernel(unsigned below, std::string *runs, Put put)
{
	*runs = "[";
	bool all = true;
	for (Kernel &k : K) {
		reference(&k);
		CUdeviceptr at = put(k);
		std::string res;
		all &= one_sliced(&k, at, below, &res);
		*runs += (runs->size() > 1 ? "," : "") + res;
		if (!all)
			break;
	}
	*runs += "]";
	return all;
}

// copy: the kernel's exact code, no prologue, run from a copy
static void mode_copy(const char *kind, bool devsrc)
{
	jstr("mode", devsrc ? std::string("copy-devsrc") : std::string("copy-") + kind);
	Arena a;
	arena_make(&a, kind);
	jstr("memory", kind);
	std::string runs;
	bool all = each_kernel(0, &runs, [&](const Kernel &k) {
		return devsrc ? arena_put(&a, {}, k.program, k.code.bytes.size()) : arena_put(&a, k.code.bytes, 0, 0);
	});
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
	jraw("runs", runs);
	jraw("pass", all ? "true" : "false");
	finish(all ? 0 : 1);
}

// sliced_setup: the prologue and the code arena of suffix and pieces, the
// arena's kind and the code's source said in the JSON line
static void sliced_setup(Prologue *p, Arena *a)
{
	need_prologue(p);
	arena_make(a, mem_kind());
	jstr("memory", a->kind);
	jstr("code_from", src_kind());
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
	Arena a;
	sliced_setup(&p, &a);
	std::string runs;
	bool all = each_kernel(s, &runs, [&](const Kernel &k) { return put_sliced(&a, p, k, s, !strcmp(src_kind(), "device")); });
	jraw("runs", runs);
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
	Arena a;
	sliced_setup(&p, &a);
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
