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

/* carve_mask_enables_live: does the disable mask leave a live TPC enabled? */
static inline int carve_mask_enables_live(const uint32_t mask[4], const uint32_t live[4])
{
	for (int i = 0; i < 4; i++)
		if (~mask[i] & live[i])
			return 1;
	return 0;
}

#endif
