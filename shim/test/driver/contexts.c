/*
 * contexts.c: the driver program's devices, contexts, events and
 * synchronization. Its commands:
 *
 *   sms [DEV]          cuDeviceGetAttribute(multiprocessor count) of device
 *                      DEV (default 0) -> "sms N rc R"
 *   sync               cuStreamSynchronize(0) -> "rc N"
 *   ctx N              make context N current (cuCtxSetCurrent): 0 and 1 are
 *                      the fake's primary contexts of its two GPUs -> "rc N"
 *   ctxnew DEV         cuCtxCreate on device DEV, made current -> "ctx N"
 *   ctxdel             cuCtxDestroy of the current context -> "rc N"
 *   lookups            -> "lookups N": device UUIDs the fake was asked for
 *   evnew FLAGS        cuEventCreate with FLAGS (2: CU_EVENT_DISABLE_TIMING)
 *                      -> "ev N": the event's number here, or "rc N"
 *   evrecord N [ptds|flags]
 *                      cuEventRecord of event N on the default stream (its
 *                      per-thread flavour; or cuEventRecordWithFlags)
 *                      -> "rc N"
 *   evdel N            cuEventDestroy of event N -> "rc N"
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* events made by evnew */
#define EVENTS_MAX 64
static CUevent events[EVENTS_MAX];
static int nevents;

/* context_command answers the commands of this file; 0 if line is none
 * of them. */
int context_command(char *line)
{
	int v;
	char flavour[16] = "";
	if (strncmp(line, "sms", 3) == 0) {
		CUresult (*f)(int *, int, CUdevice) = proc("cuDeviceGetAttribute", 0);
		int n = 0, dev = 0;
		sscanf(line, "sms %i", &dev);
		CUresult r = f(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
		printf("sms %d rc %d\n", n, r);
	} else if (strncmp(line, "sync", 4) == 0) {
		CUresult (*f)(CUstream) = proc("cuStreamSynchronize", 0);
		printf("rc %d\n", f(0));
	} else if (sscanf(line, "ctx %i", &v) == 1) {
		CUresult (*f)(CUcontext) = proc("cuCtxSetCurrent", 0);
		printf("rc %d\n", f((CUcontext)(uintptr_t)(0xc0 + v)));
	} else if (sscanf(line, "ctxnew %i", &v) == 1) {
		CUresult (*f)(CUcontext *, unsigned, CUdevice) = proc("cuCtxCreate", 0);
		CUcontext c = NULL;
		CUresult r = f(&c, 0, v);
		if (r != 0)
			printf("rc %d\n", r);
		else
			printf("ctx %d\n", (int)((uintptr_t)c - 0xc0));
	} else if (strncmp(line, "ctxdel", 6) == 0) {
		CUresult (*get)(CUcontext *) = proc("cuCtxGetCurrent", 0);
		CUresult (*f)(CUcontext) = proc("cuCtxDestroy", 0);
		CUcontext c = NULL;
		get(&c);
		printf("rc %d\n", f(c));
	} else if (sscanf(line, "evnew %i", &v) == 1) {
		CUevent e = NULL;
		int r = ((int (*)(CUevent *, unsigned))proc("cuEventCreate", 0))(&e, (unsigned)v);
		if (r != 0 || nevents == EVENTS_MAX)
			printf("rc %d\n", r ? r : 1);
		else
			printf("ev %d\n", nevents), events[nevents++] = e;
	} else if (sscanf(line, "evrecord %i %15s", &v, flavour) >= 1) {
		int r = 1;
		if (v >= 0 && v < nevents && strcmp(flavour, "flags") == 0)
			r = ((int (*)(CUevent, CUstream, unsigned))proc("cuEventRecordWithFlags", 0))(events[v], 0, 0);
		else if (v >= 0 && v < nevents)
			r = ((int (*)(CUevent, CUstream))proc("cuEventRecord", strcmp(flavour, "ptds") == 0))(events[v], 0);
		printf("rc %d\n", r);
	} else if (sscanf(line, "evdel %i", &v) == 1) {
		int r = v >= 0 && v < nevents ? ((int (*)(CUevent))proc("cuEventDestroy", 0))(events[v]) : 1;
		printf("rc %d\n", r);
	} else if (strncmp(line, "lookups", 7) == 0) {
		printf("lookups %d\n", ((int (*)(void))dlsym(h, "fakecuda_uuid_lookups"))());
	} else {
		return 0;
	}
	return 1;
}
