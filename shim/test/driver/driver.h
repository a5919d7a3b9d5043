/*
 * driver.h: what the files of the driver program share (shim/test/driver/,
 * main.c says what the program is): the driver's lookup, as the CUDA
 * runtime makes it, the test clock's count of this process's threads, and
 * each file's commands.
 */
#ifndef CARVE_TEST_DRIVER_H
#define CARVE_TEST_DRIVER_H

#include <pthread.h>
#include <stdint.h>

#include "../../cuda_api.h"

/* --- main.c ---------------------------------------------------------------- */

typedef CUresult (*get_proc_fn)(const char *, void **, int, uint64_t, void *);
extern get_proc_fn get_proc; /* cuGetProcAddress, as it returned itself */
extern void *h;              /* the driver library (CARVE_LIBCUDA) */
extern int (*fake_launch)(int, uint32_t *); /* the fake's fakecuda_launch */

/* proc is the driver call name for CUDA 12.8, NULL if none; procv for the
 * given version. ptds: the per-thread default stream's flavour. */
void *proc(const char *name, int ptds);
void *procv(const char *name, int version, int ptds);

/* On a virtual clock (CARVE_TEST_CLOCK), a thread about to start another
 * counts it as running (clock_wake); one that blocks outside the clock
 * takes itself off (clock_park). Neither does anything without one. */
void clock_wake(void);
void clock_park(void);

/* --- each file's commands: 1 if line is one of them, answered ------------------ */

int launch_command(char *line);   /* launch.c */
int profiler_command(char *line); /* profiler.c */
int context_command(char *line);  /* contexts.c */
int memory_command(char *line);   /* memory.c */
int child_command(char *line);    /* children.c */
int graph_command(char *line);    /* graphs.c */
int nvtx_command(char *line);     /* nvtx.c */

/* --- graphs.c -------------------------------------------------------------------- */

CUresult one_kernel_graph(int ptds); /* a graph of one kernel node made, launched and destroyed */

/* --- launch.c: launchers on 4 threads ------------------------------------------ */

extern volatile int storming; /* the launchers still launching */
void start_launchers(pthread_t t[4], int *n);
void join_launchers(pthread_t t[4]);

#endif
