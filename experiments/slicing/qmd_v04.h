/*
 * qmd_v04.h: fields of launch descriptor QMD V04_00 (version byte 0x40 at
 * byte 72, carve_tmd.h), from NVIDIA open-gpu-doc
 * classes/compute/clcbc0qmd.h (NVCBC0_QMDV04_00_*, bit ranges MW(hi:lo)),
 * and the bit helpers to read and write them. Two users: suffix.cu reads
 * and sets the fields that carve_tmd.h has not (versions, register count,
 * the prefetch's size and type, the instruction cache's invalidate bit),
 * and internal/tmd's test checks carve_tmd.h's slicing offsets against the
 * ranges of GRID_WIDTH and the program and prefetch addresses here.
 * PROGRAM_ADDRESS is the code's full virtual address, not shifted (QMD V05
 * moves every field: never edited here). Plain C, also valid C++.
 */
#ifndef SLICING_QMD_V04_H
#define SLICING_QMD_V04_H

#include <stdint.h>

typedef struct {
	unsigned lo, hi;
} qmd_field;

#define QMD_BYTES 384 /* V04: 3072 bits */

static const qmd_field QMD_SASS_VERSION = {536, 543};
static const qmd_field QMD_MINOR_VERSION = {576, 579};
static const qmd_field QMD_MAJOR_VERSION = {580, 583};
static const qmd_field QMD_INVALIDATE_INSTRUCTION_CACHE = {606, 606};
static const qmd_field QMD_GRID_WIDTH = {1024, 1055}; /* byte 128 */
static const qmd_field QMD_REGISTER_COUNT = {1200, 1208};
static const qmd_field QMD_PROGRAM_ADDRESS_LOWER = {1216, 1247}; /* byte 152 */
static const qmd_field QMD_PROGRAM_ADDRESS_UPPER = {1248, 1272}; /* byte 156, 25 bits */
static const qmd_field QMD_PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED = {1344, 1375};
static const qmd_field QMD_PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED = {1376, 1392};
static const qmd_field QMD_PROGRAM_PREFETCH_SIZE = {1393, 1401};
static const qmd_field QMD_PROGRAM_PREFETCH_TYPE = {1402, 1403};

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

#endif
