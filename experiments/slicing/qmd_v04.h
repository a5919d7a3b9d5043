/*
 * qmd_v04.h: the fields of launch descriptor QMD V04_00 (version byte 0x40
 * at byte 72, carve_tmd.h) that slicing edits, from NVIDIA open-gpu-doc
 * classes/compute/clcbc0qmd.h (NVCBC0_QMDV04_00_*, bit ranges MW(hi:lo)),
 * and the bit helpers to read and write them. PROGRAM_ADDRESS is the code's
 * full virtual address, not shifted (QMD V05 moves every field: never
 * edited here). Plain C, also valid C++.
 */
#ifndef SLICING_QMD_V04_H
#define SLICING_QMD_V04_H

#include <stdint.h>

typedef struct {
	unsigned lo, hi;
} qmd_field;

#define QMD_V04 0x40
#define QMD_BYTES 384 /* V04: 3072 bits */

static const qmd_field QMD_INVALIDATE_INSTRUCTION_CACHE = {606, 606};
static const qmd_field QMD_GRID_WIDTH = {1024, 1055}; /* byte 128 */
static const qmd_field QMD_PROGRAM_ADDRESS_LOWER = {1216, 1247}; /* byte 152 */
static const qmd_field QMD_PROGRAM_ADDRESS_UPPER = {1248, 1272}; /* byte 156, 25 bits */
static const qmd_field QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED = {1344, 1375};
static const qmd_field QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED = {1376, 1392};

static inline uint64_t qmd_get(const uint8_t *p, qmd_field f)
{
	uint64_t v = 0;
	for (unsigned b = f.hi + 1; b-- > f.lo;)
		v = v << 1 | (uint64_t)(p[b / 8] >> (b % 8) & 1);
	return v;
}

static inline void qmd_set(uint8_t *p, qmd_field f, uint64_t v)
{
	for (unsigned b = f.lo; b <= f.hi; b++) {
		uint8_t m = (uint8_t)(1u << (b % 8));
		if (v >> (b - f.lo) & 1)
			p[b / 8] |= m;
		else
			p[b / 8] &= (uint8_t)~m;
	}
}

static inline uint64_t qmd_program(const uint8_t *q)
{
	return qmd_get(q, QMD_PROGRAM_ADDRESS_LOWER) | qmd_get(q, QMD_PROGRAM_ADDRESS_UPPER) << 32;
}

static inline uint64_t qmd_prefetch(const uint8_t *q)
{
	return qmd_get(q, QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED) | qmd_get(q, QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED) << 32;
}

/* qmd_move_program points the descriptor at code at `to`, and its program
 * prefetch with it where the prefetch address is the old program address
 * shifted right by some k (on driver 580: k = 8); 1 if the prefetch moved. */
static inline int qmd_move_program(uint8_t *q, uint64_t to)
{
	uint64_t old = qmd_program(q), pf = qmd_prefetch(q);
	qmd_set(q, QMD_PROGRAM_ADDRESS_LOWER, to & 0xffffffffu);
	qmd_set(q, QMD_PROGRAM_ADDRESS_UPPER, to >> 32);
	for (int k = 0; k <= 12; k++) {
		if (pf && pf == old >> k) {
			qmd_set(q, QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED, (to >> k) & 0xffffffffu);
			qmd_set(q, QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED, (to >> k) >> 32);
			return 1;
		}
	}
	return 0;
}

#endif
