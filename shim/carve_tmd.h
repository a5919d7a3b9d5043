/*
 * carve_tmd.h: where the TPC-disable mask lives in a kernel launch descriptor
 * (TMD/QMD), as seen from the driver's launch callback. Verified on an H100
 * (descriptor version 0x40, driver 580). internal/tmd mirrors these numbers
 * and a test checks them against this file.
 */
#ifndef CARVE_TMD_H
#define CARVE_TMD_H

#include <stdint.h>
#include <string.h>

#define CARVE_PARAMS_MIN_SIZE 40   /* callback params: uint32 size first */
#define CARVE_PARAMS_TMD_OFFSET 32 /* pointer to the descriptor */
#define CARVE_PARAMS_CTX_OFFSET 8  /* the launch's context (seen on driver 580: experiments/fit/cbparams.cu) */
#define CARVE_TMD_VERSION_OFFSET 72
#define CARVE_TMD_V_HOPPER 0x40     /* >= : four mask words, enable bit */
#define CARVE_TMD_V_VOLTA 0x16      /* >= : two mask words (Volta to Ada) */
#define CARVE_TMD_HOPPER_MASK_OFFSET 304 /* 4 x uint32: TPC bits 0-127 */
#define CARVE_TMD_HOPPER_ENABLE_OFFSET 0 /* bit 31 turns masking on */
#define CARVE_TMD_HOPPER_ENABLE_BIT 31
#define CARVE_TMD_VOLTA_MASK_OFFSET 84 /* 2 x uint32: TPC bits 0-63 */

/* What slicing (slice.c) edits, in descriptor version 0x40 alone (QMD
 * V04_00, NVIDIA open-gpu-doc clcbc0qmd.h; V05 moves every field): the
 * grid's width, which ends the grid early when lowered, and the code's
 * address, with the program prefetch address (that address shifted right
 * by some k: 8 on driver 580) moved with it. Each is a 32-bit word and the
 * low bits of the next (verified on an H100, experiments/slicing). */
#define CARVE_PARAMS_FUNC_OFFSET 24 /* the launch's function (driver 580: experiments/fit/cbparams.cu) */
#define CARVE_TMD_V_SLICE 0x40      /* == : the version slicing edits */
#define CARVE_TMD_GRID_WIDTH_OFFSET 128
#define CARVE_TMD_PROGRAM_OFFSET 152  /* 32 bits, then 25 in the next word */
#define CARVE_TMD_PROGRAM_HI_BITS 25
#define CARVE_TMD_PREFETCH_OFFSET 168 /* 32 bits, then 17 in the next word */
#define CARVE_TMD_PREFETCH_HI_BITS 17
#define CARVE_TMD_PREFETCH_SHIFT_MAX 12 /* the shifts k tried */

/* carve_params_ptr: the pointer at offset of the callback's params, NULL
 * if they are too short to hold the descriptor's. */
static inline void *carve_params_ptr(const void *params, unsigned offset)
{
	uint32_t size;
	memcpy(&size, params, sizeof size);
	if (size < CARVE_PARAMS_MIN_SIZE)
		return 0;
	void *p;
	memcpy(&p, (const uint8_t *)params + offset, sizeof p);
	return p;
}

static inline uint8_t *carve_params_tmd(const void *params)
{
	return (uint8_t *)carve_params_ptr(params, CARVE_PARAMS_TMD_OFFSET);
}

/* carve_params_ctx: the launch's context, as the callback's params give it;
 * trust it only as a key to contexts known otherwise. */
static inline void *carve_params_ctx(const void *params)
{
	return carve_params_ptr(params, CARVE_PARAMS_CTX_OFFSET);
}

static inline int carve_tmd_version(const uint8_t *tmd)
{
	return tmd[CARVE_TMD_VERSION_OFFSET];
}

/* carve_tmd_write_mask writes a 128-bit disable mask; 0 if the version is unknown. */
static inline int carve_tmd_write_mask(uint8_t *tmd, const uint32_t mask[4])
{
	int v = carve_tmd_version(tmd);
	if (v >= CARVE_TMD_V_HOPPER) {
		uint32_t w;
		memcpy(tmd + CARVE_TMD_HOPPER_MASK_OFFSET, mask, 4 * sizeof(uint32_t));
		memcpy(&w, tmd + CARVE_TMD_HOPPER_ENABLE_OFFSET, sizeof w);
		w |= 1u << CARVE_TMD_HOPPER_ENABLE_BIT;
		memcpy(tmd + CARVE_TMD_HOPPER_ENABLE_OFFSET, &w, sizeof w);
		return 1;
	}
	if (v >= CARVE_TMD_V_VOLTA) {
		memcpy(tmd + CARVE_TMD_VOLTA_MASK_OFFSET, mask, 2 * sizeof(uint32_t));
		return 1;
	}
	return 0;
}

/* carve_tmd_get64/set64: a field of a 32-bit word at offset and hi_bits
 * of the next, the rest of whose bits are kept. */
static inline uint64_t carve_tmd_get64(const uint8_t *tmd, unsigned offset, unsigned hi_bits)
{
	uint32_t lo, hi;
	memcpy(&lo, tmd + offset, 4);
	memcpy(&hi, tmd + offset + 4, 4);
	return (uint64_t)lo | (uint64_t)(hi & ((1u << hi_bits) - 1)) << 32;
}

static inline void carve_tmd_set64(uint8_t *tmd, unsigned offset, unsigned hi_bits, uint64_t v)
{
	uint32_t lo = (uint32_t)v, hi, keep = ~((1u << hi_bits) - 1);
	memcpy(&hi, tmd + offset + 4, 4);
	hi = (hi & keep) | ((uint32_t)(v >> 32) & ~keep);
	memcpy(tmd + offset, &lo, 4);
	memcpy(tmd + offset + 4, &hi, 4);
}

static inline uint64_t carve_tmd_program(const uint8_t *tmd)
{
	return carve_tmd_get64(tmd, CARVE_TMD_PROGRAM_OFFSET, CARVE_TMD_PROGRAM_HI_BITS);
}

static inline uint32_t carve_tmd_grid_width(const uint8_t *tmd)
{
	uint32_t w;
	memcpy(&w, tmd + CARVE_TMD_GRID_WIDTH_OFFSET, 4);
	return w;
}

static inline void carve_tmd_set_grid_width(uint8_t *tmd, uint32_t w)
{
	memcpy(tmd + CARVE_TMD_GRID_WIDTH_OFFSET, &w, 4);
}

/* carve_tmd_move_program points a version 0x40 descriptor at code at to,
 * and its program prefetch with it where that is the old address shifted
 * right by some k; 1 if the prefetch moved. */
static inline int carve_tmd_move_program(uint8_t *tmd, uint64_t to)
{
	uint64_t old = carve_tmd_program(tmd);
	uint64_t pf = carve_tmd_get64(tmd, CARVE_TMD_PREFETCH_OFFSET, CARVE_TMD_PREFETCH_HI_BITS);
	carve_tmd_set64(tmd, CARVE_TMD_PROGRAM_OFFSET, CARVE_TMD_PROGRAM_HI_BITS, to);
	for (int k = 0; k <= CARVE_TMD_PREFETCH_SHIFT_MAX; k++) {
		if (pf && pf == old >> k) {
			carve_tmd_set64(tmd, CARVE_TMD_PREFETCH_OFFSET, CARVE_TMD_PREFETCH_HI_BITS, to >> k);
			return 1;
		}
	}
	return 0;
}

/* carve_mask_enables_live: does the disable mask leave a live TPC enabled? */
static inline int carve_mask_enables_live(const uint32_t mask[4], const uint32_t live[4])
{
	for (int i = 0; i < 4; i++)
		if (~mask[i] & live[i])
			return 1;
	return 0;
}

#endif
