/*
 * shim.h: what the files of libcarve.so share inside the library. Nothing
 * here is an interface to carve; that is carve_ctl.h (the control block),
 * carve_node.h (the node block) and carve_tmd.h (the launch descriptor).
 *
 * Its declarations are grouped by the file that defines them; ARCHITECTURE.md
 * says what each file holds, in the order in which they call each other.
 */
#ifndef CARVE_SHIM_H
#define CARVE_SHIM_H

#include <stdint.h>

#include "carve_ctl.h"
#include "cuda_api.h"

/* Exit status of a process that carve refuses to run unpartitioned. */
#define CARVE_EXIT_REFUSED 86

/* hook.c */
const char *carve_register_hook(void *cuda); /* NULL, or why it failed */

/* tide.c */
void carve_tide_init(void *cuda, const char *dir); /* LS or BE tenant with a node block: take part */
void carve_capture(CUstream s, int begin);
void carve_launch_before(CUstream s);
void carve_launch_after(CUstream s, CUresult r);
/* carve_tide_mask changes the mask of this launch for tide (within live). */
void carve_tide_mask(uint32_t mask[CARVE_MASK_WORDS], const uint32_t live[CARVE_MASK_WORDS]);

/* ctl.c */
struct carve_ctl *carve_attach(const char *dir);
/* carve_current_mask: the mask to apply now and its generation; 0 when
 * there is none to write (no partition that enables a live TPC). */
int carve_current_mask(uint32_t out[CARVE_MASK_WORDS], uint64_t *gen);

/* carve_visible_sms: the SM count to report where the driver reports n. */
int carve_visible_sms(int n);

/* gpu.c */
void carve_gpu_init(void *cuda); /* at load, before the first launch */
/* carve_launch_elsewhere: 1 if this thread's launch is on another GPU than
 * the block's, whose UUID goes into uuid; 0 if on the block's, or if either
 * is not known. */
int carve_launch_elsewhere(unsigned char uuid[16]);
void carve_contexts_changed(void); /* a context went: its handle may return on another GPU */
#define CARVE_GPU_NAME 41          /* "GPU-" and 36 characters of UUID, NUL-terminated */
void carve_gpu_name(const unsigned char uuid[16], char out[CARVE_GPU_NAME]);

/* fault.c */
void carve_fault(CUresult r, const char *call);

/* tools.c */
typedef void (*carve_tools_cb)(void *user, int domain, int cbid, const void *params);
extern const unsigned char carve_tools_uuid[16];
/* carve_tools_table: what another library asking for the export table of
 * uuid gets: for the launch-tools table, one shared with the shim. */
const void *carve_tools_table(const void *uuid, const void *table);
/* carve_tools_subscribe: the shim's own subscription to (domain, cbid). */
int carve_tools_subscribe(const void *table, carve_tools_cb cb, int domain, int cbid);
/* carve_tools_hold: a launch holds (1) and lets go (0) of the callbacks, so
 * that it never goes out while they change hands. */
void carve_tools_hold(int on);

/* base.c */
extern struct carve_ctl *carve_block; /* this process's control block, or NULL */
extern int carve_debug;               /* CARVE_DEBUG=1: say what the shim does */
extern int carve_allow_unpartitioned; /* run on all TPCs where masks cannot work */
extern int carve_trace_tools;         /* CARVE_TRACE_TOOLS=1: log others' calls into the tools table */
void carve_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void carve_refuse(const char *why) __attribute__((noreturn));
#define CARVE_DEBUG(...) do { if (carve_debug) carve_say(__VA_ARGS__); } while (0)
uint64_t carve_now_ns(void);    /* CLOCK_REALTIME_COARSE: vDSO only, even in VMs; for people */
uint64_t carve_mono_ns(void);   /* CLOCK_MONOTONIC */
uint64_t carve_coarse_ns(void); /* CLOCK_MONOTONIC_COARSE: to within a tick (1-4 ms), and cheap
                                 * where the precise clock is not (no vDSO path) */
void carve_nap_ns(long ns);     /* sleep for ns */
void carve_yield(void);         /* one step of a short spin: let other threads run */
/* A test build (cc -DCARVE_TEST) runs carve_mono_ns, carve_coarse_ns,
 * carve_nap_ns and carve_yield on a virtual clock that a test drives
 * (shim/test/vclock.h) where CARVE_TEST_CLOCK names one; carve_now_ns stays
 * the real time, for people, and decides nothing. There a thread that
 * blocks outside the clock says so first (carve_thread_parks), and a
 * thread that wakes or starts another counts it as running first
 * (carve_thread_wakes), so that the test knows when every thread is still.
 * In the shim make builds they are nothing. */
#ifdef CARVE_TEST
void carve_thread_parks(void);
void carve_thread_wakes(void);
#else
static inline void carve_thread_parks(void) {}
static inline void carve_thread_wakes(void) {}
#endif
typedef void *(*carve_dlsym_fn)(void *, const char *);
carve_dlsym_fn carve_glibc_dlsym(void); /* glibc's dlsym, for a lookup that must be a sibling call */
void *carve_real_dlsym(void *handle, const char *name); /* glibc's, for the shim's own lookups */

#endif
