/*
 * slice_ptx.h: the two kernels slicing runs on the GPU, as PTX text, and
 * the constants they share with the code that launches them and reads
 * what they found: slice.c and slice_code.c, its only users.
 *
 * PREFIX_scan (one warp): the length of the code at src up to and with
 * its end marker, out[0] (0: none within bound bytes), and out[1], how
 * many instructions between the marker and the next 128-byte boundary are
 * not NOPs. Reads go by 512-byte aligned chunks, so that no read leaves
 * the page of the marker. PREFIX_copy: dst = the prologue (its words are
 * parameters), then `words` 8-byte words of code from src. Made as text
 * at load, so that the constants below are their only home.
 */
#ifndef CARVE_SLICE_PTX_H
#define CARVE_SLICE_PTX_H

#include <stddef.h>
#include <stdio.h>

/* ptxas' last instruction of every function, BRA to itself, and its NOP,
 * as 64-bit words low first; the high word's top 23 bits are scheduling
 * control, which is not compared. */
#define END_MARK_LO 0xfffffffc00fc7947ull
#define END_MARK_HI 0x000fc0000383ffffull
#define NOP_LO 0x0000000000007918ull
#define NOP_HI 0x000fc00000000000ull
#define CONTROL_MASK ((1ull << 41) - 1)
#define CODE_ALIGN 128 /* functions start and end (padded) at this */

/* the prologue in front of a copy: `if (blockIdx.x < S) return;`, three
 * instructions and NOPs to 128 bytes (experiments/slicing/prologue.py) */
#define PRO_BYTES 128
#define PRO_WORDS (PRO_BYTES / 8)

/* slice_ptx writes the two kernels, named prefix_scan and prefix_copy,
 * into buf (8 KiB is enough) */
static inline void slice_ptx(char *buf, size_t n, const char *prefix)
{
	char *p = buf, *end = buf + n;
#define P(...) (p += snprintf(p, (size_t)(end - p), __VA_ARGS__))
	P(".version 7.0\n.target sm_70\n.address_size 64\n\n");
	P(".visible .entry %s_scan(.param .u64 p_src, .param .u64 p_out, .param .u32 p_bound,\n"
	  "  .param .u64 p_mlo, .param .u64 p_mhi, .param .u64 p_mask, .param .u64 p_nlo, .param .u64 p_nhi)\n"
	  "{\n"
	  "  .reg .pred %%p<10>;\n  .reg .b32 %%r<12>;\n  .reg .b64 %%rd<20>;\n"
	  "  ld.param.u64 %%rd1, [p_src];\n  ld.param.u64 %%rd2, [p_out];\n  ld.param.u32 %%r1, [p_bound];\n"
	  "  ld.param.u64 %%rd13, [p_mlo];\n  ld.param.u64 %%rd14, [p_mhi];\n  ld.param.u64 %%rd15, [p_mask];\n"
	  "  ld.param.u64 %%rd16, [p_nlo];\n  ld.param.u64 %%rd17, [p_nhi];\n"
	  "  and.b64 %%rd14, %%rd14, %%rd15;\n  and.b64 %%rd17, %%rd17, %%rd15;\n"
	  "  cvta.to.global.u64 %%rd2, %%rd2;\n"
	  "  mov.u32 %%r2, %%tid.x;\n"
	  "  shr.u64 %%rd3, %%rd1, 9;\n  shl.b64 %%rd3, %%rd3, 9;\n"
	  "  cvt.u64.u32 %%rd4, %%r2;\n  shl.b64 %%rd4, %%rd4, 4;\n  add.u64 %%rd5, %%rd3, %%rd4;\n"
	  "  cvt.u64.u32 %%rd6, %%r1;\n  add.u64 %%rd6, %%rd1, %%rd6;\n"
	  "S_SCAN:\n"
	  "  setp.ge.u64 %%p1, %%rd3, %%rd6;\n  @%%p1 bra S_NONE;\n"
	  "  cvta.to.global.u64 %%rd18, %%rd5;\n"
	  "  ld.global.u64 %%rd7, [%%rd18];\n  ld.global.u64 %%rd8, [%%rd18+8];\n"
	  "  and.b64 %%rd9, %%rd8, %%rd15;\n"
	  "  setp.eq.u64 %%p2, %%rd7, %%rd13;\n  setp.eq.and.u64 %%p2, %%rd9, %%rd14, %%p2;\n"
	  "  setp.ge.and.u64 %%p2, %%rd5, %%rd1, %%p2;\n"
	  "  vote.sync.ballot.b32 %%r3, %%p2, 0xffffffff;\n"
	  "  setp.ne.u32 %%p3, %%r3, 0;\n  @%%p3 bra S_FOUND;\n"
	  "  add.u64 %%rd3, %%rd3, 512;\n  add.u64 %%rd5, %%rd5, 512;\n  bra.uni S_SCAN;\n"
	  "S_FOUND:\n"
	  "  brev.b32 %%r4, %%r3;\n  clz.b32 %%r5, %%r4;\n"
	  "  cvt.u64.u32 %%rd10, %%r5;\n  add.u64 %%rd10, %%rd10, 1;\n  shl.b64 %%rd10, %%rd10, 4;\n"
	  "  add.u64 %%rd10, %%rd3, %%rd10;\n"
	  "  add.u64 %%rd11, %%rd10, %u;\n  shr.u64 %%rd11, %%rd11, 7;\n  shl.b64 %%rd11, %%rd11, 7;\n"
	  "  setp.ge.u64 %%p4, %%rd5, %%rd10;\n  setp.lt.and.u64 %%p4, %%rd5, %%rd11, %%p4;\n"
	  "  setp.ne.u64 %%p5, %%rd7, %%rd16;\n  setp.ne.or.u64 %%p5, %%rd9, %%rd17, %%p5;\n"
	  "  and.pred %%p5, %%p5, %%p4;\n"
	  "  vote.sync.ballot.b32 %%r6, %%p5, 0xffffffff;\n"
	  "  setp.ne.u32 %%p6, %%r2, 0;\n  @%%p6 bra S_DONE;\n"
	  "  sub.u64 %%rd12, %%rd10, %%rd1;\n  cvt.u32.u64 %%r7, %%rd12;\n"
	  "  popc.b32 %%r8, %%r6;\n"
	  "  st.global.u32 [%%rd2], %%r7;\n  st.global.u32 [%%rd2+4], %%r8;\n  bra.uni S_DONE;\n"
	  "S_NONE:\n"
	  "  setp.ne.u32 %%p6, %%r2, 0;\n  @%%p6 bra S_DONE;\n"
	  "  mov.u32 %%r7, 0;\n  st.global.u32 [%%rd2], %%r7;\n  st.global.u32 [%%rd2+4], %%r7;\n"
	  "S_DONE:\n  ret;\n}\n\n",
	  prefix, CODE_ALIGN - 1);
	P(".visible .entry %s_copy(.param .u64 p_src, .param .u64 p_dst, .param .u32 p_words", prefix);
	for (int i = 0; i < PRO_WORDS; i++)
		P(", .param .u64 p_pro%d", i);
	P(")\n{\n"
	  "  .reg .pred %%p<4>;\n  .reg .b32 %%r<12>;\n  .reg .b64 %%rd<12>;\n"
	  "  ld.param.u64 %%rd1, [p_src];\n  ld.param.u64 %%rd2, [p_dst];\n  ld.param.u32 %%r1, [p_words];\n"
	  "  cvta.to.global.u64 %%rd1, %%rd1;\n  cvta.to.global.u64 %%rd2, %%rd2;\n"
	  "  mov.u32 %%r2, %%tid.x;\n  mov.u32 %%r3, %%ctaid.x;\n  mov.u32 %%r4, %%ntid.x;\n  mov.u32 %%r5, %%nctaid.x;\n"
	  "  mad.lo.u32 %%r6, %%r3, %%r4, %%r2;\n  mul.lo.u32 %%r7, %%r4, %%r5;\n"
	  "  setp.ne.u32 %%p1, %%r6, 0;\n  @%%p1 bra C_CODE;\n");
	for (int i = 0; i < PRO_WORDS; i++)
		P("  ld.param.u64 %%rd3, [p_pro%d];\n  st.global.u64 [%%rd2+%d], %%rd3;\n", i, i * 8);
	P("C_CODE:\n"
	  "  add.u64 %%rd4, %%rd2, %d;\n"
	  "C_LOOP:\n"
	  "  setp.ge.u32 %%p2, %%r6, %%r1;\n  @%%p2 bra C_DONE;\n"
	  "  mul.wide.u32 %%rd5, %%r6, 8;\n"
	  "  add.u64 %%rd6, %%rd1, %%rd5;\n  ld.global.u64 %%rd7, [%%rd6];\n"
	  "  add.u64 %%rd8, %%rd4, %%rd5;\n  st.global.u64 [%%rd8], %%rd7;\n"
	  "  add.u32 %%r6, %%r6, %%r7;\n  bra.uni C_LOOP;\n"
	  "C_DONE:\n  ret;\n}\n",
	  PRO_BYTES);
#undef P
}

#endif
