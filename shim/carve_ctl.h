/*
 * carve_ctl.h: the control block shared between carve (Go) and libcarve.so.
 *
 * One block per partitioned process, a file of CARVE_CTL_SIZE bytes named by
 * the process id in carve's runtime directory (mode 0700, files 0600), mapped
 * MAP_SHARED by both sides. This header is the single definition of the
 * layout; internal/ctl mirrors it and a test compares the two offset by offset.
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
#define CARVE_CTL_VERSION 1u
#define CARVE_CTL_SIZE 512u
#define CARVE_MASK_WORDS 4 /* 128 TPC bits, as the Hopper descriptor holds */

/* state: what the shim last knew about its hook. */
#define CARVE_STATE_NEW 0u        /* block created, shim not loaded yet */
#define CARVE_STATE_HOOKED 1u     /* hook registered, masks applied */
#define CARVE_STATE_UNHOOKED 2u   /* running unpartitioned (allowed by flag) */
#define CARVE_STATE_NO_DRIVER 3u  /* libcuda could not be loaded: no kernels */

/* flags, set by carve run. */
#define CARVE_FLAG_ALLOW_UNPARTITIONED 1u

/* tenant class, room for the dynamic controller. */
#define CARVE_CLASS_NONE 0u
#define CARVE_CLASS_LS 1u /* latency-sensitive */
#define CARVE_CLASS_BE 2u /* best-effort */

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

	/* room for memory-side and LS/BE control (not acted on yet) */
	uint32_t tenant_class;   /* 112: CARVE_CLASS_* */
	uint32_t gate;           /* 116: launch gate, 0 = open */
	uint64_t budget_bytes;   /* 120: bandwidth budget per epoch, 0 = none */
	uint64_t reserved[14];   /* 128 .. 240 */

	char comm[256];          /* 240: command line, NUL-separated args, truncated */
	uint8_t pad[16];         /* 496 .. 512 */
};

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct carve_ctl) == CARVE_CTL_SIZE, "control block size");
#endif

#endif
