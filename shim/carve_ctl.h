/*
 * carve_ctl.h: the control block shared between carve (Go) and libcarve.so.
 *
 * One block per partitioned process, a file of CARVE_CTL_SIZE bytes named by
 * the process id in carve's runtime directory (a user's, mode 0700, files
 * 0600; or the node directory, sticky, files 0644: internal/ctl/nodedir.go),
 * mapped MAP_SHARED by both sides. This header is the single definition of the
 * layout; internal/ctl mirrors it and a test compares the two offset by offset.
 *
 * The shim holds a POSIX read lock (fcntl F_SETLK) on the first byte of its
 * own block's file for the life of the process, so that carve can tell a
 * running tenant from an ended one without its pid: in a Kubernetes claim's
 * directory (claims/UID/, see internal/ctl/claim.go) the blocks are named
 * by pids of the containers' namespaces. There the root file is the claim's
 * reservation, which the shim of each new process copies (CARVE_CTL_ROOT).
 *
 * Writers (carve set) take an exclusive flock on the file, make gen odd,
 * write the mask words, then make gen even again (a seqlock). The shim keeps
 * the last mask it read with its gen, so a launch whose gen is unchanged costs
 * one atomic load; a changed gen is re-read until two equal even gens bracket
 * the copy, so a torn mask is never applied.
 */
#ifndef CARVE_CTL_H
#define CARVE_CTL_H

#include <stdint.h>

#define CARVE_CTL_MAGIC 0x45565243u /* "CRVE" little-endian */
#define CARVE_CTL_VERSION 8u
#define CARVE_CTL_SIZE 6144u
#define CARVE_MASK_WORDS 4 /* 128 TPC bits, as the Hopper descriptor holds */
#define CARVE_GPUS 16      /* GPUs a block holds partitions on: the header's and CARVE_GPUS - 1 more */

/* state: what the shim last knew about its hook. */
#define CARVE_STATE_NEW 0u        /* block created, shim not loaded yet */
#define CARVE_STATE_HOOKED 1u     /* hook registered, masks applied */
#define CARVE_STATE_UNHOOKED 2u   /* running unpartitioned (allowed by flag) */
#define CARVE_STATE_NO_DRIVER 3u  /* libcuda could not be loaded: no kernels */

/* flags, set by carve run. */
#define CARVE_FLAG_ALLOW_UNPARTITIONED 1u
#define CARVE_FLAG_ALL_SMS 2u /* report the whole GPU's SM count, not the partition's */
#define CARVE_FLAG_MPS 4u     /* a client of carve's MPS daemon: shares its fault domain */
#define CARVE_FLAG_LS_OWN 8u  /* an LS tenant that keeps to its own TPCs, borrowing none */

/* tenant class (tide: see carve_node.h). */
#define CARVE_CLASS_NONE 0u
#define CARVE_CLASS_LS 1u /* latency-sensitive: its work in flight holds BE tenants back */
#define CARVE_CLASS_BE 2u /* best-effort: runs on what LS tenants leave */

/* tide_state, written by the shim of an LS or BE tenant. */
#define CARVE_TIDE_OFF 0u     /* no node block: not taking part */
#define CARVE_TIDE_IDLE 1u    /* LS: no work in flight; BE: launching freely */
#define CARVE_TIDE_BUSY 2u    /* LS: work in flight */
#define CARVE_TIDE_HELD 3u    /* BE: a launch is waiting for LS work to finish */

/* a BE tenant's epoch_ns when the block says 0: carve's default epoch
 * (ctl.DefaultPolicy.Epoch) */
#define CARVE_EPOCH_NS 10000000ull /* 10 ms */
/* the most one BE launch is held by pause_until_ns, whatever it says: a
 * controller that stopped renewing it, or a time far ahead, holds no BE
 * longer than this a launch */
#define CARVE_PAUSE_MAX_NS 500000000ull /* 500 ms */

/* memory bandwidth shares (bw.c): bw_flags, and the epoch that placement
 * divides into the slots of a GPU's tenants with a share (ctl.BWEpoch) */
#define CARVE_BW_STRICT 1u /* never outside its slot, wanted or not */
#define CARVE_BW_EPOCH_NS 2000000ull /* 2 ms */

/* A tenant's kernel table as the shim reads it (kern.c): a file carve
 * writes beside the tenant's block, named CARVE_KERN_NAME of the block's
 * kernels_id: a head, then count entries, each a kernel function by the
 * FNV-1a hash (64 bits) of its mangled name, in increasing order of it,
 * none twice; the head's id is the FNV-1a hash of the entries' bytes, never
 * 0. The shim takes nothing of a file that breaks any of this
 * (internal/ctl/kernels.go writes it from the table's JSON). */
#define CARVE_KERN_MAGIC 0x4e52454bu /* "KERN" little-endian */
#define CARVE_KERN_MAX 16384u        /* entries at most */
#define CARVE_KERN_NAME "kernels-%016llx"
#define CARVE_KERN_COMPUTE 1u        /* flags: compute-bound (ctl.ComputeBoundPct) */
struct carve_kern_head {
	uint32_t magic;          /*  0 */
	uint32_t count;          /*  4 */
	uint64_t id;             /*  8 */
};
struct carve_kern_entry {
	uint64_t name;           /*  0: FNV-1a of the mangled name */
	uint64_t bytes;          /*  8: DRAM bytes read and written by one launch */
	uint32_t flags;          /* 16: CARVE_KERN_* */
	uint32_t pad;            /* 20 */
};

/* Driver errors that end a context's work: after one, every later call of
 * the process fails too. The shim records the first it sees in fault. */
#define CARVE_FAULTS(X) \
	X(214, CUDA_ERROR_ECC_UNCORRECTABLE) \
	X(700, CUDA_ERROR_ILLEGAL_ADDRESS) \
	X(702, CUDA_ERROR_LAUNCH_TIMEOUT) \
	X(710, CUDA_ERROR_ASSERT) \
	X(714, CUDA_ERROR_HARDWARE_STACK_ERROR) \
	X(715, CUDA_ERROR_ILLEGAL_INSTRUCTION) \
	X(716, CUDA_ERROR_MISALIGNED_ADDRESS) \
	X(717, CUDA_ERROR_INVALID_ADDRESS_SPACE) \
	X(718, CUDA_ERROR_INVALID_PC) \
	X(719, CUDA_ERROR_LAUNCH_FAILED) \
	X(805, CUDA_ERROR_MPS_CONNECTION_FAILED) \
	X(806, CUDA_ERROR_MPS_RPC_FAILURE) \
	X(807, CUDA_ERROR_MPS_SERVER_NOT_READY) \
	X(810, CUDA_ERROR_MPS_CLIENT_TERMINATED) \
	X(999, CUDA_ERROR_UNKNOWN)

/* An LS tenant's busy periods (tide_ls.c: from the first launch after it
 * was idle to the poller finding its work done), as a histogram of
 * CARVE_HIST_BUCKETS buckets. Bucket i < CARVE_HIST_BUCKETS - 1 counts the
 * periods shorter than CARVE_HIST_BOUND_NS(i) and no shorter than the bound
 * of bucket i - 1 (bucket 0: shorter than 1 us); the last counts the rest.
 * The bounds go up by octaves from 1 us, each octave cut in four equal
 * steps: 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5 ... us, within 25% of
 * each other, up to 100.7 s (bucket 106's bound). Written by the shim's
 * poller alone, with atomics; the count is the buckets' sum. */
#define CARVE_HIST_BUCKETS 108
#define CARVE_HIST_BOUND_NS(i) ((1000ull << ((i) / 4)) * (4 + (i) % 4) / 4)
struct carve_hist {
	uint64_t sum_ns;                     /* 0: the periods' total time */
	uint64_t bucket[CARVE_HIST_BUCKETS]; /* 8: periods in each bucket */
};

/* mark_state: where an LS tenant with a mark stands with NVTX (nvtx.c). */
#define CARVE_MARK_OFF 0u     /* no mark, or a shim that has not looked yet */
#define CARVE_MARK_WAITING 1u /* NVTX_INJECTION64_PATH names the shim; no NVTX call seen yet */
#define CARVE_MARK_ATTACHED 2u /* NVTX handed the shim its ranges */
#define CARVE_MARK_OTHER 3u   /* NVTX_INJECTION64_PATH names another tool (a profiler): no range is seen */

/* The partition on one more GPU of the tenant (struct carve_ctl's more):
 * what the header holds of its first GPU, written by carve with it. */
struct carve_gpu_part {
	uint8_t gpu[16];         /*   0: the GPU's UUID; all zero: an unused entry (entries are used in order) */
	uint32_t mask[CARVE_MASK_WORDS];  /* 16: TPC-disable mask, under the block's seqlock */
	uint32_t live[CARVE_MASK_WORDS];  /* 32: live TPC bits of this GPU */
	uint32_t floor[CARVE_MASK_WORDS]; /* 48: a BE tenant's floor on this GPU, enable bits */
	uint32_t sms;            /*  64: SMs of the partition on this GPU, under the seqlock */
	uint32_t pad;            /*  68 */
	char node[48];           /*  72: this GPU's node block file name, "" = none */
	uint64_t bw_off_ns;      /* 120: this GPU's bandwidth slot: its start in the epoch (the header's bw_off_ns) */
};

struct carve_ctl {
	/* identity: written once by the creator */
	uint32_t magic;          /*   0 */
	uint16_t version;        /*   4 */
	uint16_t size;           /*   6 */
	uint32_t pid;            /*   8 */
	uint32_t flags;          /*  12 */
	uint64_t start_ticks;    /*  16: /proc/PID/stat field 22, guards against pid reuse */
	uint64_t created_ns;     /*  24: CLOCK_REALTIME */

	/* partition: written by carve under flock, read by the shim */
	uint64_t gen;            /*  32: seqlock generation, odd while being written */
	uint32_t mask[CARVE_MASK_WORDS]; /* 40: TPC-disable mask, bit set = TPC off */
	uint32_t live[CARVE_MASK_WORDS]; /* 56: live TPC bits of this GPU */

	/* status: written by the shim */
	uint32_t state;          /*  72: CARVE_STATE_* */
	uint32_t tmd_version;    /*  76: descriptor version of the last launch */
	uint64_t launches;       /*  80: launches seen by the hook */
	uint64_t last_launch_ns; /*  88: CLOCK_REALTIME_COARSE of the last launch */
	uint64_t refused;        /*  96: launches whose mask was refused (no live TPC) */
	uint64_t applied_gen;    /* 104: gen of the mask applied to the last launch */

	uint32_t tenant_class;   /* 112: CARVE_CLASS_* */
	uint32_t pad0;           /* 116 */
	uint64_t pause_until_ns; /* 120: BE: held, LS work in flight or not, until this CLOCK_MONOTONIC time
	                          * (the SLO controller's calibration of an LS tenant's periods alone, or
	                          * its hold from the bottom of the share; renewed each step); a launch is held
	                          * CARVE_PAUSE_MAX_NS at most */

	/* tenant: written once by the creator */
	uint32_t tenant;         /* 128: pid of the block carve run made; children copy it */
	/* partition, written with mask under the seqlock: */
	uint32_t sms;            /* 132: SMs of the partition, reported to the program */

	/* faults: written once by the shim, the first time a driver call
	 * returns an error that ends the context's work (CARVE_FAULT_*) */
	uint32_t fault;          /* 136: the CUresult, 0 = none */
	uint32_t fault_claim;    /* 140: set by the thread that records the fault */
	uint64_t fault_ns;       /* 144: CLOCK_REALTIME of that call's return */
	char fault_call[32];     /* 152: the driver call that returned it, NUL-terminated */

	/* the GPU, written once by the creator: the UUID of the GPU the mask
	 * is of (cuDeviceGetUuid_v2's bytes); all zero: not known, and the
	 * mask goes into launches on any GPU */
	uint8_t gpu[16];         /* 184 */
	/* written by the shim: launches on another GPU, which ran on all its
	 * TPCs (allowed unpartitioned; else the process ends at the first),
	 * and the UUID of the last such GPU */
	uint64_t other_launches; /* 200 */
	uint8_t other_gpu[16];   /* 208 */
	/* written by the shim (graph.c): executable graphs launched after
	 * their GPU's mask moved, instantiated anew on the new mask, and those
	 * that ran on the mask they were instantiated under (their kind, or a
	 * failure), each counted once a move */
	uint64_t graph_remade;   /* 224 */
	uint64_t graph_kept;     /* 232 */

	char comm[256];          /* 240: command line, NUL-separated args, truncated */

	/* tide policy, written by carve run or carve set, read by the shim */
	uint32_t inflight_max;   /* 496: BE: launches in flight at most, 0 = no bound */
	uint32_t share_ppm;      /* 500: BE: share of the time it may run while LS work is in flight, per million */
	uint64_t epoch_ns;       /* 504: BE: the period the share is counted over, 0 = CARVE_EPOCH_NS */
	char node[64];           /* 512: the GPU's node block file name (from its UUID; LS and BE tenants use the block), "" = none */

	/* tide status, written by the shim */
	uint32_t tide_state;     /* 576: CARVE_TIDE_* */
	uint32_t inflight;       /* 580: BE: launches in flight now */
	uint64_t held_ns;        /* 584: BE: time launches waited for LS work */
	uint64_t held_launches;  /* 592: BE: launches that waited */
	uint64_t narrow_launches;/* 600: BE: launches made while LS work was in flight */
	uint64_t busy_ns;        /* 608: LS: time with work in flight */
	uint64_t requests;       /* 616: LS: times it went from idle to busy */
	uint32_t queue_us;       /* 624: BE policy: predicted GPU time in flight at most, us, 0 = no bound */
	uint32_t kernel_us;      /* 628: BE status: its kernels' time, as measured (EWMA) */
	/* BE policy, written once by carve run: the TPCs (enable bits) its
	 * launches keep to while LS work is in flight, chosen off every LS
	 * tenant's and plain partition's TPCs, which LS tenants keep off in
	 * turn (carve_node.h's fixed); all zero: none, it then runs off the
	 * busy LS tenants' reserved TPCs */
	uint32_t floor[CARVE_MASK_WORDS]; /* 632 */

	/* device memory (shim/mem.c). A tenant's processes share one account:
	 * the block carve made for the tenant (a claim's root, else the block
	 * of the tenant's pid), whose mem_limit is the one enforced and whose
	 * mem_total, mem_peak and mem_refused are the tenant's; every block's
	 * mem_used is what its own process holds, so the mem_used of the
	 * tenant's blocks add up to the account's mem_total. A process that
	 * cannot map the account counts in its own block, which then is an
	 * account too; a block that is no account keeps a mem_total of zero,
	 * an account holding memory has more. A process that ends without
	 * freeing leaves its mem_used to be
	 * credited back to its account (by a shim of the tenant that would
	 * otherwise refuse an allocation, or by carve): whoever swaps it to
	 * zero credits it. */
	uint64_t mem_limit;      /* 648: bytes the tenant may hold, 0 = no limit; written by carve */
	uint64_t mem_used;       /* 656: bytes this process holds */
	uint64_t mem_total;      /* 664: the account's: bytes the tenant's processes hold */
	uint64_t mem_peak;       /* 672: the account's: the most mem_total has been */
	uint64_t mem_refused;    /* 680: allocations refused: the tenant's in the account, else this process's */
	uint64_t mem_refused_ns; /* 688: CLOCK_REALTIME of the last, likewise */
	/* BE slicing (slice.c): while an LS tenant is active on the GPU, a
	 * launch whose function's measured time is over slice_us goes as
	 * pieces of about slice_us, each through the BE's gate */
	uint32_t slice_us;       /* 696: BE policy: the pieces' length, us, 0 = never cut */
	uint32_t slice_fns;      /* 700: BE status: functions found sliceable */
	uint64_t sliced;         /* 704: BE status: launches cut into pieces */
	uint64_t slice_pieces;   /* 712: BE status: the pieces they went as */
	/* SLO (internal/slo, in carve daemon; the shim reads slo_steered alone, tide_be.c): an
	 * LS tenant's, written by carve run, and the target the controller
	 * holds it under, written by the controller; and of a BE tenant, while the
	 * controller holds its share_ppm and queue_us to keep the SLOs of the
	 * LS tenants on its GPUs (slo_steered = 1), what it asked of them,
	 * saved by the controller before its first change and put back when
	 * no SLO binds the tenant any more */
	uint32_t slo_us;         /* 720: LS policy: the bound on its requests' estimated p99, us, 0 = none */
	uint32_t slo_alone_milli;/* 724: LS policy: that bound as a multiple of the estimate alone, in thousandths, 0 = none */
	uint32_t slo_steered;    /* 728: BE: 1 while the controller holds share_ppm and queue_us */
	uint32_t asked_share_ppm;/* 732: BE: share_ppm as asked, while steered */
	uint32_t asked_queue_us; /* 736: BE: queue_us as asked, while steered */
	uint32_t slo_target_us;  /* 740: LS status, the SLO controller's: the target it holds the estimate under now, us (a multiple's, of its calibration), 0 = none yet */
	/* memory bandwidth (bw.c), any class: the share of the GPU's time its
	 * launches may run in, as a slot of each epoch that placement chose
	 * apart from the GPU's other tenants' with a share (on the first GPU
	 * here, on the others in more[i].bw_off_ns), written once by carve;
	 * and the shim's status */
	uint32_t bw_ppm;         /* 744: the share, per million, 0 = none */
	uint32_t bw_flags;       /* 748: CARVE_BW_* */
	uint64_t bw_off_ns;      /* 752: the slot's start within the epoch (CLOCK_MONOTONIC modulo bw_epoch_ns) */
	uint64_t bw_len_ns;      /* 760: the slot's length, 0 = no gate */
	uint64_t bw_epoch_ns;    /* 768: the epoch */
	uint64_t bw_want_ns;     /* 776: status: CLOCK_MONOTONIC until which it wants its slot (its latest launch or wait, or the end of its work in flight) */
	uint64_t bw_held_ns;     /* 784: status: time launches waited for the slot */
	uint64_t bw_held_launches; /* 792: status: launches that waited */
	uint64_t bw_busy_ns;     /* 800: status: its kernels' time on the GPU while it gated: a kernel's measured time (bw.c) for each launch done */
	/* kernel table (kern.c), any class, written once by carve: the
	 * compact file carve wrote beside the block of the table the tenant
	 * named (struct carve_kern_head, named CARVE_KERN_NAME of its id; 0 =
	 * none), and that table's path as named, for people; and the shim's
	 * status */
	uint64_t kernels_id;     /* 808 */
	char kernels[128];       /* 816: NUL-terminated, "" = none */
	uint64_t kernel_bytes;   /* 944: status: the DRAM bytes of its launches by the table */
	uint64_t kernel_unknown; /* 952: status: launches of functions the table has no entry for (a graph's launch is one) */
	uint64_t kernel_beside;  /* 960: BE status: launches of kernels the table calls compute-bound made beside busy LS work, held by no share */
	uint64_t tide_reserved[7]; /* 968 .. 1024 */

	/* the partitions on the tenant's other GPUs, written once by the
	 * creator but their masks and SM counts (under the seqlock) */
	struct carve_gpu_part more[CARVE_GPUS - 1]; /* 1024 .. 2944 */
	uint8_t more_reserved[128];                 /* 2944 .. 3072 */

	/* LS status, written by the shim's poller: every busy period of the
	 * process's (on any of its GPUs), and apart those that were alone:
	 * no BE tenant launched on the GPU from CARVE_NODE_QUIET_NS before the
	 * period began to its end (the latest be_launch_ns of the GPU's BE
	 * files: carve_node.h) */
	struct carve_hist busy_hist;  /* 3072 .. 3944 */
	struct carve_hist alone_hist; /* 3944 .. 4816 */

	/* LS: its requests as its program marks them (nvtx.c): NVTX ranges
	 * whose message is mark (ending in '*': begins with what precedes
	 * it), pushed and popped or started and ended; mark is policy, written
	 * once by carve run ("" = none), the rest the shim's status */
	struct carve_hist mark_hist;  /* 4816 .. 5688: each marked range's length, CLOCK_MONOTONIC */
	uint64_t mark_dropped;        /* 5688: marked ranges not timed: nested deeper than the shim keeps, on more domains of a thread, or more started and not ended than it keeps */
	uint32_t mark_state;          /* 5696: CARVE_MARK_* */
	uint32_t mark_pad;            /* 5700 */
	char mark[64];                /* 5704 .. 5768: NUL-terminated */
	uint64_t mark_reserved[47];   /* 5768 .. 6144 */
};

/* Every field of struct carve_ctl, in order, with what the block of a child
 * process takes of it: the shim makes that block from its parent's (or
 * CARVE_CTL_ROOT's) in ctl.c's create_block, which copies the INHERIT
 * fields by this list.
 *   INHERIT  the parent's value: the partition and its policy
 *   OWN      this process's own: the block's identity, made afresh
 *   STATUS   written by this process's shim as it runs: starts at zero
 *   UNUSED   padding and room for later fields: zero
 * A field of the struct missing here does not compile (the sizes listed
 * must add up to the struct's); TestChildInheritsEveryField reads the list
 * (through shim/test/layout.c) and checks every field of a child's block
 * against its parent's. */
#define CARVE_FIELD_INHERIT 1
#define CARVE_FIELD_OWN 2
#define CARVE_FIELD_STATUS 3
#define CARVE_FIELD_UNUSED 4
#define CARVE_CTL_FIELDS(X) \
	X(magic, OWN) \
	X(version, OWN) \
	X(size, OWN) \
	X(pid, OWN) \
	X(flags, INHERIT) \
	X(start_ticks, OWN) \
	X(created_ns, OWN) \
	X(gen, OWN) \
	X(mask, INHERIT) \
	X(live, INHERIT) \
	X(state, STATUS) \
	X(tmd_version, STATUS) \
	X(launches, STATUS) \
	X(last_launch_ns, STATUS) \
	X(refused, STATUS) \
	X(applied_gen, STATUS) \
	X(tenant_class, INHERIT) \
	X(pad0, UNUSED) \
	X(pause_until_ns, INHERIT) \
	X(tenant, INHERIT) /* or the parent's pid, where the parent's block has no tenant */ \
	X(sms, INHERIT) \
	X(fault, STATUS) \
	X(fault_claim, STATUS) \
	X(fault_ns, STATUS) \
	X(fault_call, STATUS) \
	X(gpu, INHERIT) \
	X(other_launches, STATUS) \
	X(other_gpu, STATUS) \
	X(graph_remade, STATUS) \
	X(graph_kept, STATUS) \
	X(comm, OWN) \
	X(inflight_max, INHERIT) \
	X(share_ppm, INHERIT) \
	X(epoch_ns, INHERIT) \
	X(node, INHERIT) \
	X(tide_state, STATUS) \
	X(inflight, STATUS) \
	X(held_ns, STATUS) \
	X(held_launches, STATUS) \
	X(narrow_launches, STATUS) \
	X(busy_ns, STATUS) \
	X(requests, STATUS) \
	X(queue_us, INHERIT) \
	X(kernel_us, STATUS) \
	X(floor, INHERIT) \
	X(mem_limit, INHERIT) /* the copy a child shows; the account's is enforced */ \
	X(mem_used, STATUS) \
	X(mem_total, STATUS) \
	X(mem_peak, STATUS) \
	X(mem_refused, STATUS) \
	X(mem_refused_ns, STATUS) \
	X(slice_us, INHERIT) \
	X(slice_fns, STATUS) \
	X(sliced, STATUS) \
	X(slice_pieces, STATUS) \
	X(slo_us, INHERIT) \
	X(slo_alone_milli, INHERIT) \
	X(slo_steered, INHERIT) /* a child of a steered BE starts steered, at its parent's share */ \
	X(asked_share_ppm, INHERIT) \
	X(asked_queue_us, INHERIT) \
	X(slo_target_us, STATUS) \
	X(bw_ppm, INHERIT) \
	X(bw_flags, INHERIT) \
	X(bw_off_ns, INHERIT) \
	X(bw_len_ns, INHERIT) \
	X(bw_epoch_ns, INHERIT) \
	X(bw_want_ns, STATUS) \
	X(bw_held_ns, STATUS) \
	X(bw_held_launches, STATUS) \
	X(bw_busy_ns, STATUS) \
	X(kernels_id, INHERIT) \
	X(kernels, INHERIT) \
	X(kernel_bytes, STATUS) \
	X(kernel_unknown, STATUS) \
	X(kernel_beside, STATUS) \
	X(tide_reserved, UNUSED) \
	X(more, INHERIT) \
	X(more_reserved, UNUSED) \
	X(busy_hist, STATUS) \
	X(alone_hist, STATUS) \
	X(mark_hist, STATUS) \
	X(mark_dropped, STATUS) \
	X(mark_state, STATUS) \
	X(mark_pad, UNUSED) \
	X(mark, INHERIT) \
	X(mark_reserved, UNUSED)

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct carve_ctl) == CARVE_CTL_SIZE, "control block size");
_Static_assert(sizeof(struct carve_gpu_part) == 128, "a GPU's partition entry");
_Static_assert(sizeof(struct carve_hist) == 872, "a histogram");
_Static_assert(__builtin_offsetof(struct carve_ctl, busy_hist) == 3072, "the histograms follow the table of more GPUs");
_Static_assert(__builtin_offsetof(struct carve_ctl, more) == 1024, "the table of more GPUs follows the first 1024 bytes");
#define CARVE_FIELD_SIZE(name, kind) +sizeof(((struct carve_ctl *)0)->name)
_Static_assert(0 CARVE_CTL_FIELDS(CARVE_FIELD_SIZE) == sizeof(struct carve_ctl),
	       "CARVE_CTL_FIELDS lists every field of struct carve_ctl, and the struct has no hidden padding");
#undef CARVE_FIELD_SIZE
#endif

#endif
