/*
 * carve_node.h: the node block, one per GPU, shared by every shim of a
 * latency-sensitive (LS) or best-effort (BE) tenant on it. This header is
 * its one definition; internal/ctl mirrors it and a test compares the two.
 *
 * A file of CARVE_NODE_SIZE bytes in carve's runtime directory, named by
 * the control block's node field, mapped MAP_SHARED. carve run makes it
 * (under the placement lock) when the first LS or BE tenant of the GPU
 * starts; nothing else writes its header.
 *
 * Each LS tenant's shim takes a slot by taking the slot's lock: a POSIX
 * record lock (fcntl F_SETLK, F_WRLCK) on the one byte at
 * CARVE_NODE_SLOT_LOCK(i) of the file, held for the process's life. The
 * kernel lets go of it when the process ends, however it ends, and it
 * names no pid, so tenants in other PID namespaces (containers) never take
 * each other's slots; pid is the tenant's pid in its own namespace, for
 * people to read. A slot whose lock no one holds is free, whatever its pid
 * says. In its slot the tenant keeps whether it has work in flight on the
 * GPU (busy) and a heartbeat (beat_ns) while it has.
 * An LS tenant's launches spread over every live TPC but those other LS
 * tenants reserved and those in fixed: the TPCs of the GPU's partitions
 * that are neither LS nor BE, which tide never takes, and the BE tenants'
 * floors (carve_ctl.h's floor). carve writes fixed under the placement
 * lock after each placement, move or release, and carve daemon every
 * second, so a partition that ended leaves it then.
 * A BE tenant's shim reads busy before each launch, and the slots it names:
 * it counts an LS tenant as busy only while its heartbeat is younger than
 * lease_ns, so a tenant that dies mid-request holds no one back for longer
 * than that; it honours no lease longer than CARVE_NODE_LEASE_NS, which
 * carve writes there when it makes or opens the block and when it frees
 * the slots of tenants that ended (every tenant may write the block), and
 * no heartbeat more than a lease ahead of its clock. Whoever changes a slot's pid or reserved TPCs, or fixed, bumps
 * gen after, so that shims may keep what they computed from them until gen
 * moves.
 */
#ifndef CARVE_NODE_H
#define CARVE_NODE_H

#include <stdint.h>

#define CARVE_NODE_MAGIC 0x45444f4eu /* "NODE" little-endian */
#define CARVE_NODE_VERSION 4u
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
 * slot's timing_ns; for CARVE_NODE_TIMING_NS after, busy or idle, BE
 * tenants are held as while it is busy, with no share, so that what it
 * times is its own work: a BE kernel beside it made cuDNN choose slower
 * kernels, and the LS then served slower for good
 * (results/h100-580.159.04-2026-11-24/order/), and one launched while an
 * autotuner was idle between candidates ran beside the next candidate
 * (results/h100-580.159.04-2026-11-27/order-cause/). A stamp ahead of the
 * reader's clock holds no one back. */
#define CARVE_NODE_TIMING_NS 50000000ull /* 50 ms */

struct carve_node_slot {
	uint32_t pid;            /*  0: the LS tenant's pid in its namespace, 0 = free */
	uint32_t busy;           /*  4: it has work in flight on the GPU */
	uint64_t start_ticks;    /*  8: of pid, against pid reuse */
	uint64_t beat_ns;        /* 16: CLOCK_MONOTONIC, renewed while busy */
	uint64_t busy_ns;        /* 24: time it has been busy, all told */
	uint64_t busy_since_ns;  /* 32: when it last became busy */
	uint32_t reserved[4];    /* 40: its reserved TPCs, as an enable mask */
	uint64_t requests;       /* 56: times it went from idle to busy */
};

struct carve_node {
	uint32_t magic;          /*   0 */
	uint16_t version;        /*   4 */
	uint16_t size;           /*   6 */
	uint32_t live[4];        /*   8: live TPC bits of the GPU */
	uint64_t lease_ns;       /*  24 */
	uint64_t created_ns;     /*  32 */
	uint32_t fixed[4];       /*  40: TPCs of partitions neither LS nor BE and of BE floors, as enable bits */
	uint32_t gen;            /*  56: bumped after a change to fixed or to a slot's pid or reserved */
	uint32_t busy;           /*  60: bit i set while slot i's busy is */
	/* on a line of its own: written every heartbeat, read by BE tenants
	 * only while no LS tenant is busy */
	uint64_t beat_ns;        /*  64: the latest heartbeat of any LS tenant */
	uint8_t pad[56];         /*  72 .. 128 */
	struct carve_node_slot slots[CARVE_NODE_SLOTS]; /* 128 .. 2176 */
	/* slot i's tenant's latest record of a timing event (CLOCK_MONOTONIC;
	 * 0: none), written by it, zeroed by whoever takes the slot */
	uint64_t timing_ns[CARVE_NODE_SLOTS]; /* 2176 .. 2432 */
	/* on a line of its own: CLOCK_MONOTONIC_COARSE of the latest launch
	 * of any BE tenant on the GPU (0: none yet), written by BE shims once
	 * a clock tick at most, read by LS shims when a busy period ends, to
	 * tell the periods that were alone (carve_ctl.h's alone_hist) */
	uint64_t be_launch_ns;   /* 2432 */
	uint8_t pad2[56];        /* 2440 .. 2496 */
	uint8_t rest[1600];      /* 2496 .. 4096 */
};

/* the byte of the file whose lock is slot i's */
#define CARVE_NODE_SLOT_LOCK(i) (128 + (i) * 64)

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct carve_node_slot) == 64, "node slot size");
_Static_assert(sizeof(struct carve_node) == CARVE_NODE_SIZE, "node block size");
_Static_assert(CARVE_NODE_SLOT_LOCK(1) == __builtin_offsetof(struct carve_node, slots[1]), "slot lock byte");
#endif

#endif
