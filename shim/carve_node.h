/*
 * carve_node.h: what the shims of one GPU's latency-sensitive (LS) and
 * best-effort (BE) tenants share, in three kinds of file. This header is
 * their one definition; internal/ctl mirrors it and a test compares the two.
 *
 * The node block (struct carve_node), CARVE_NODE_SIZE bytes in carve's
 * runtime directory, named by the control block's node field: carve's
 * alone to write. carve makes it (under the placement lock) when the first
 * LS or BE tenant of the GPU is placed, and after each placement, move or
 * release (and each second of carve daemon) writes its slot table: one
 * slot (a seat) for each LS tenant of the GPU, carve run's (pid and
 * start_ticks, in carve's namespace) or a claim's, with its reserved TPCs;
 * and fixed: the TPCs of the GPU's partitions that are neither LS nor BE,
 * which tide never takes, and the BE tenants' floors (carve_ctl.h's
 * floor). Shims open it read-only (O_RDONLY, PROT_READ); a claim's pod
 * sees it as root's, mode 0644. carve bumps gen after each change to fixed
 * or a slot.
 *
 * Each seat's LS file (struct carve_ls), CARVE_LS_SIZE bytes, made by carve
 * when it gives the seat, named CARVE_NODE_LS_FILE in the GPU's directory
 * (the node block's name with CARVE_NODE_DIR_SUFFIX) for the seat and a
 * random serial: writable by the tenant alone, readable by the BE tenants
 * of the GPU. A tenant of carve run finds its seat in the table by its pid
 * (its control block's tenant field); a claim's file is linked into the
 * claim's directory as the node block's name and ".ls-0" (its pod gets the
 * GPU's directory read-only). Each
 * process of the tenant takes one of its entries (procs) by taking the
 * entry's lock: a POSIX record lock (fcntl F_SETLK, F_WRLCK) on the byte
 * at CARVE_LS_PROC_LOCK(i) of the file, held for the process's life; the
 * kernel lets go of it when the process ends, however it ends, and it names
 * no pid, so tenants in other PID namespaces never take each other's
 * entries. An entry whose lock no one holds is free, whatever it says; a
 * process that finds all CARVE_LS_PROCS taken runs untided (said). In
 * its entry a process keeps whether it has work in flight on the GPU
 * (busy, and the file's busy bits) and a heartbeat (beat_ns) while it has.
 *
 * The GPU's BE files (struct carve_be), CARVE_BE_SIZE bytes each in the
 * GPU's directory, one for each writer, made by carve: in a user's own
 * runtime directory one, CARVE_NODE_BE_FILE, its tenants' (one
 * principal); in the node directory one for each user with a BE tenant
 * there, CARVE_NODE_BE_USER for its uid, that user's (mode 0644); in
 * carve-dra's one for each BE claim, named CARVE_NODE_BE_PREFIX, "c-" and
 * the claim's UID, mode 0666 (its pod runs under any uid), linked into
 * the claim's directory as the node block's name with ".be". A BE tenant
 * stamps its launches in its own (a claim's through its link, a tenant of
 * carve run's in the GPU's directory, its user's or else the one); an LS
 * tenant reads every BE file of the GPU's directory, up to
 * CARVE_NODE_BE_FILES of them, and takes the latest stamp. So a BE tenant
 * can hide or fake only its own writer's launches.
 *
 * An LS tenant's launches spread over every live TPC but those in fixed and
 * those other seats reserve. A BE tenant's shim reads, before each launch,
 * the table's used seats and their LS files' busy bits: it counts a
 * process as busy only while its heartbeat is younger than the node
 * block's lease_ns, so a process that dies mid-request holds no one back
 * for longer than that; it honours no lease longer than
 * CARVE_NODE_LEASE_NS and no heartbeat more than a lease ahead of its
 * clock. A live LS tenant can hold BE tenants back only to their share.
 */
#ifndef CARVE_NODE_H
#define CARVE_NODE_H

#include <stdint.h>

#define CARVE_NODE_MAGIC 0x45444f4eu /* "NODE" little-endian */
#define CARVE_NODE_VERSION 5u
#define CARVE_NODE_SIZE 4096u
#define CARVE_NODE_SLOTS 32
#define CARVE_NODE_LEASE_NS 100000000ull /* 100 ms */
/* a BE tenant bounds its queue only while some LS tenant was busy in the
 * last CARVE_NODE_QUIET_NS: with no LS request for that long it runs as it
 * would alone, and the first request after such a pause may wait behind the
 * BE work already queued */
#define CARVE_NODE_QUIET_NS 1000000000ull /* 1 s */
/* a BE tenant's launches are narrowed (onto its floor, or off the busy LS
 * tenants' TPCs) only onto at least this many TPCs, and a floor has at
 * least this many: kernels sized for the whole GPU (cuBLAS's and cuDNN's
 * persistent and split-K kernels, a block per SM) never finished on 4 or 6
 * TPCs of an H100 and ran on a GPC of 8 */
#define CARVE_NODE_NARROW_MIN 8
/* an LS tenant that records an event made for timing (created without
 * CU_EVENT_DISABLE_TIMING: cuDNN's benchmark mode, autotuners) stamps its
 * entry's timing_ns (and its LS file's); for CARVE_NODE_TIMING_NS after, busy or idle, BE
 * tenants are held as while it is busy, with no share, so that what it
 * times is its own work: a BE kernel beside it made cuDNN choose slower
 * kernels, and the LS then served slower for good
 * (results/h100-580.159.04-2026-11-24/order/), and one launched while an
 * autotuner was idle between candidates ran beside the next candidate
 * (results/h100-580.159.04-2026-11-27/order-cause/). A stamp ahead of the
 * reader's clock holds no one back. */
#define CARVE_NODE_TIMING_NS 50000000ull /* 50 ms */

/* the GPU's directory (beside the node block, its name with this) and
 * the files in it: seat i's LS file, given for the serial, and the BE
 * files: the one of a user's own directory, and those named with the
 * prefix and no dot (a name with one is a file being made), a user's by
 * its uid */
#define CARVE_NODE_DIR_SUFFIX ".d"
#define CARVE_NODE_LS_FILE "ls-%u-%u" /* slot, serial */
#define CARVE_NODE_BE_FILE "be"
#define CARVE_NODE_BE_PREFIX "be-"
#define CARVE_NODE_BE_USER "be-u%u" /* uid */
/* an LS tenant reads this many BE files at most: with more it counts no
 * busy period alone; it lists them again when the directory's mtime
 * moves, or this long after it last did */
#define CARVE_NODE_BE_FILES 64
#define CARVE_NODE_BE_LIST_NS 100000000ull /* 100 ms */
/* the links in a claim's directory: the node block's name with these
 * (".ls-0", the LS file of an LS claim; ".be", a BE claim's BE file) */
#define CARVE_NODE_LS_LINK ".ls-"
#define CARVE_NODE_BE_LINK ".be"

/* a seat's kind */
#define CARVE_SEAT_FREE 0u
#define CARVE_SEAT_TENANT 1u /* a tenant of carve run: pid, start_ticks */
#define CARVE_SEAT_CLAIM 2u  /* a Kubernetes claim: claim */

struct carve_node_slot {
	uint32_t pid;            /*  0: the LS tenant's pid in carve's namespace (0: a claim's) */
	uint32_t kind;           /*  4: CARVE_SEAT_* */
	uint64_t start_ticks;    /*  8: of pid, against pid reuse */
	uint32_t serial;         /* 16: names its LS file; new each time the slot is given */
	uint32_t pad;            /* 20 */
	uint32_t reserved[4];    /* 24: its reserved TPCs, as enable bits */
	char claim[24];          /* 40: a claim's UID, cut to 23 bytes */
};

struct carve_node {
	uint32_t magic;          /*   0 */
	uint16_t version;        /*   4 */
	uint16_t size;           /*   6 */
	uint32_t live[4];        /*   8: live TPC bits of the GPU */
	uint64_t lease_ns;       /*  24 */
	uint64_t created_ns;     /*  32 */
	uint32_t fixed[4];       /*  40: TPCs of partitions neither LS nor BE and of BE floors, as enable bits */
	uint32_t gen;            /*  56: bumped after a change to fixed or to a slot */
	uint32_t used;           /*  60: bit i set while slot i is given */
	uint8_t pad[64];         /*  64 .. 128 */
	struct carve_node_slot slots[CARVE_NODE_SLOTS]; /* 128 .. 2176 */
	uint8_t rest[1920];      /* 2176 .. 4096 */
};

/* an LS file: one LS tenant's processes on the GPU, each in an entry */
#define CARVE_LS_MAGIC 0x5a42534cu /* "LSBZ" little-endian */
#define CARVE_LS_SIZE 4096u
#define CARVE_LS_PROCS 32

struct carve_ls_proc {
	uint32_t pid;            /*  0: the process's pid in its namespace, 0 = free */
	uint32_t busy;           /*  4: it has work in flight on the GPU */
	uint64_t beat_ns;        /*  8: CLOCK_MONOTONIC, renewed while busy */
	uint64_t busy_ns;        /* 16: time it has been busy, all told */
	uint64_t busy_since_ns;  /* 24: when it last became busy */
	uint64_t requests;       /* 32: times it went from idle to busy */
	/* its latest record of a timing event (CLOCK_MONOTONIC; 0: none),
	 * zeroed by whoever takes the entry */
	uint64_t timing_ns;      /* 40 */
	uint8_t pad[16];         /* 48 .. 64 */
};

struct carve_ls {
	uint32_t magic;          /*  0 */
	uint16_t version;        /*  4: CARVE_NODE_VERSION */
	uint16_t size;           /*  6 */
	uint32_t slot;           /*  8: the node block's slot it is the file of (carve's) */
	uint32_t busy;           /* 12: bit i set while procs[i]'s busy is */
	uint64_t beat_ns;        /* 16: the latest heartbeat of any entry */
	uint64_t timing_ns;      /* 24: the latest timing stamp of any entry */
	uint8_t pad[32];         /* 32 .. 64 */
	struct carve_ls_proc procs[CARVE_LS_PROCS]; /* 64 .. 2112 */
	uint8_t rest[1984];      /* 2112 .. 4096 */
};

/* the byte of an LS file whose lock is entry i's */
#define CARVE_LS_PROC_LOCK(i) (64 + (i) * 64)

/* the BE file */
#define CARVE_BE_MAGIC 0x46454542u /* "BEEF" little-endian */
#define CARVE_BE_SIZE 4096u

struct carve_be {
	uint32_t magic;          /*  0 */
	uint16_t version;        /*  4: CARVE_NODE_VERSION */
	uint16_t size;           /*  6 */
	uint8_t pad[56];         /*  8 .. 64 */
	/* CLOCK_MONOTONIC_COARSE of the latest launch of the file's writer's
	 * BE tenants on the GPU (0: none yet), written by their shims once a
	 * clock tick at most, read by LS shims when a busy period ends, the
	 * latest of every BE file, to tell the periods that were alone
	 * (carve_ctl.h's alone_hist) */
	uint64_t be_launch_ns;   /* 64 */
	uint8_t rest[4024];      /* 72 .. 4096 */
};

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct carve_node_slot) == 64, "node slot size");
_Static_assert(sizeof(struct carve_node) == CARVE_NODE_SIZE, "node block size");
_Static_assert(sizeof(struct carve_ls_proc) == 64, "LS entry size");
_Static_assert(sizeof(struct carve_ls) == CARVE_LS_SIZE, "LS file size");
_Static_assert(CARVE_LS_PROC_LOCK(1) == __builtin_offsetof(struct carve_ls, procs[1]), "LS entry lock byte");
_Static_assert(sizeof(struct carve_be) == CARVE_BE_SIZE, "BE file size");
#endif

#endif
