/*
 * fault.c: the first fault a driver call returns. After an illegal address,
 * a failed launch or the loss of its MPS server, every later call of the
 * process fails too; the first one says what happened and when. It goes
 * into the control block (fault, fault_ns, fault_call), where carve ls
 * finds it, also after the process has ended.
 */
#define _GNU_SOURCE
#include <string.h>

#include "cuda_api.h"
#include "shim.h"

static int is_fault(CUresult r)
{
	switch (r) {
#define CASE(code, name) case code:
		CARVE_FAULTS(CASE)
		return 1;
	}
	return 0;
}

void carve_fault(CUresult r, const char *call)
{
	struct carve_ctl *c = carve_block;
	if (!c || !is_fault(r))
		return;
	uint32_t unclaimed = 0;
	if (!__atomic_compare_exchange_n(&c->fault_claim, &unclaimed, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return; /* another thread recorded the first */
	c->fault_ns = carve_now_ns();
	strncpy(c->fault_call, call, sizeof c->fault_call - 1);
	__atomic_store_n(&c->fault, (uint32_t)r, __ATOMIC_RELEASE);
	carve_say("%s returned %d: the GPU context's work has ended (carve ls shows it)", call, r);
}
