/*
 * procs.c: the fake driver's cuGetProcAddress (v1 and v2, with the
 * per-thread default stream flavour), answering with the calls of the
 * other files by name and version, from one table.
 */
#define _GNU_SOURCE
#include <string.h>

#include "fake.h"

/* --- cuGetProcAddress ------------------------------------------------------- */

/* Each call by its base name, from the CUDA version that means the flavour
 * given (a later entry of the same name takes over from its version). */
#define P(name, fn) {name, 0, (void *)fn, (void *)fn}
static const struct {
	const char *name;
	int since;
	void *fn, *ptsz;
} procs[] = {
	{"cuLaunchKernel", 0, (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz},
	{"cuLaunchKernelEx", 0, (void *)cuLaunchKernelEx, (void *)cuLaunchKernelEx_ptsz},
	P("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel),
	P("cuGraphLaunch", cuGraphLaunch),
	P("cuStreamCreate", cuStreamCreate),
	P("cuStreamDestroy", cuStreamDestroy_v2),
	P("cuStreamSynchronize", cuStreamSynchronize),
	P("cuStreamQuery", cuStreamQuery),
	P("cuCtxSynchronize", cuCtxSynchronize),
	P("cuEventCreate", cuEventCreate),
	P("cuEventDestroy", cuEventDestroy_v2),
	P("cuEventRecord", cuEventRecord),
	P("cuEventRecordWithFlags", cuEventRecordWithFlags),
	P("cuEventQuery", cuEventQuery),
	P("cuEventSynchronize", cuEventSynchronize),
	P("cuStreamBeginCapture", cuStreamBeginCapture_v2),
	P("cuStreamEndCapture", cuStreamEndCapture),
	P("cuDeviceGetAttribute", cuDeviceGetAttribute),
	P("cuOccupancyMaxActiveBlocksPerMultiprocessor", cuOccupancyMaxActiveBlocksPerMultiprocessor),
	P("cuGetExportTable", cuGetExportTable),
	P("cuInit", cuInit),
	P("cuCtxGetCurrent", cuCtxGetCurrent),
	P("cuCtxSetCurrent", cuCtxSetCurrent),
	P("cuCtxGetDevice", cuCtxGetDevice),
	P("cuCtxCreate", cuCtxCreate_v2),
	P("cuCtxDestroy", cuCtxDestroy_v2),
	P("cuDeviceGetUuid", cuDeviceGetUuid_v2),
	/* device memory */
	P("cuMemAlloc", cuMemAlloc), {"cuMemAlloc", 3020, (void *)cuMemAlloc_v2, (void *)cuMemAlloc_v2},
	P("cuMemAllocPitch", cuMemAllocPitch),
	{"cuMemAllocPitch", 3020, (void *)cuMemAllocPitch_v2, (void *)cuMemAllocPitch_v2},
	P("cuMemFree", cuMemFree), {"cuMemFree", 3020, (void *)cuMemFree_v2, (void *)cuMemFree_v2},
	P("cuMemGetInfo", cuMemGetInfo), {"cuMemGetInfo", 3020, (void *)cuMemGetInfo_v2, (void *)cuMemGetInfo_v2},
	P("cuDeviceTotalMem", cuDeviceTotalMem),
	{"cuDeviceTotalMem", 3020, (void *)cuDeviceTotalMem_v2, (void *)cuDeviceTotalMem_v2},
	P("cuMemAllocManaged", cuMemAllocManaged),
	P("cuMemAllocAsync", cuMemAllocAsync),
	P("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync),
	P("cuMemFreeAsync", cuMemFreeAsync),
	P("cuMemPoolCreate", cuMemPoolCreate),
	P("cuMemPoolDestroy", cuMemPoolDestroy),
	P("cuMemPoolTrimTo", cuMemPoolTrimTo),
	P("cuMemPoolSetAttribute", cuMemPoolSetAttribute),
	P("cuMemPoolGetAttribute", cuMemPoolGetAttribute),
	P("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool),
	P("cuDeviceGetMemPool", cuDeviceGetMemPool),
	P("cuDeviceSetMemPool", cuDeviceSetMemPool),
	P("cuGraphCreate", cuGraphCreate),
	P("cuGraphDestroy", cuGraphDestroy),
	P("cuGraphAddMemAllocNode", cuGraphAddMemAllocNode),
	P("cuGraphAddMemFreeNode", cuGraphAddMemFreeNode),
	P("cuGraphAddChildGraphNode", cuGraphAddChildGraphNode),
	P("cuGraphAddKernelNode", cuGraphAddKernelNode),
	{"cuGraphAddKernelNode", 12000, (void *)cuGraphAddKernelNode_v2, (void *)cuGraphAddKernelNode_v2},
	P("cuGraphKernelNodeSetParams", cuGraphKernelNodeSetParams),
	{"cuGraphKernelNodeSetParams", 12000, (void *)cuGraphKernelNodeSetParams_v2, (void *)cuGraphKernelNodeSetParams_v2},
	P("cuGraphExecKernelNodeSetParams", cuGraphExecKernelNodeSetParams),
	{"cuGraphExecKernelNodeSetParams", 12000, (void *)cuGraphExecKernelNodeSetParams_v2,
	 (void *)cuGraphExecKernelNodeSetParams_v2},
	P("cuGraphExecUpdate", cuGraphExecUpdate),
	{"cuGraphExecUpdate", 12000, (void *)cuGraphExecUpdate_v2, (void *)cuGraphExecUpdate_v2},
	P("cuGraphClone", cuGraphClone),
	P("cuGraphNodeFindInClone", cuGraphNodeFindInClone),
	P("cuGraphGetNodes", cuGraphGetNodes),
	P("cuGraphNodeGetType", cuGraphNodeGetType),
	{"cuGraphInstantiate", 12000, (void *)cuGraphInstantiateWithFlags, (void *)cuGraphInstantiateWithFlags},
	P("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
	P("cuGraphExecDestroy", cuGraphExecDestroy),
	P("cuGraphUpload", cuGraphUpload),
	P("cuDeviceGraphMemTrim", cuDeviceGraphMemTrim),
	P("cuDeviceGetGraphMemAttribute", cuDeviceGetGraphMemAttribute),
	P("cuArrayCreate", cuArrayCreate), {"cuArrayCreate", 3020, (void *)cuArrayCreate_v2, (void *)cuArrayCreate_v2},
	P("cuArray3DCreate", cuArray3DCreate),
	{"cuArray3DCreate", 3020, (void *)cuArray3DCreate_v2, (void *)cuArray3DCreate_v2},
	P("cuArrayDestroy", cuArrayDestroy),
	P("cuMipmappedArrayCreate", cuMipmappedArrayCreate),
	P("cuMipmappedArrayDestroy", cuMipmappedArrayDestroy),
	P("cuMemCreate", cuMemCreate),
	P("cuMemRelease", cuMemRelease),
	P("cuMemAddressReserve", cuMemAddressReserve),
	P("cuMemAddressFree", cuMemAddressFree),
	P("cuMemMap", cuMemMap),
	P("cuMemUnmap", cuMemUnmap),
	P("cuMemSetAccess", cuMemSetAccess),
	P("cuMemRetainAllocationHandle", cuMemRetainAllocationHandle),
	P("cuCtxSetLimit", cuCtxSetLimit),
	P("cuCtxGetLimit", cuCtxGetLimit),
	P("cuIpcGetMemHandle", cuIpcGetMemHandle),
	{"cuIpcOpenMemHandle", 11000, (void *)cuIpcOpenMemHandle_v2, (void *)cuIpcOpenMemHandle_v2},
	P("cuIpcCloseMemHandle", cuIpcCloseMemHandle),
};

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, void *status);

int cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, void *status)
{
	(void)status;
	if (strcmp(symbol, "cuGetProcAddress") == 0) {
		*pfn = version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
		return 0;
	}
	int found = -1;
	for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
		if (procs[i].since <= version && strcmp(procs[i].name, symbol) == 0 &&
		    (found < 0 || procs[i].since > procs[found].since))
			found = (int)i;
	if (found < 0) {
		*pfn = NULL;
		return CUDA_ERROR_NOT_FOUND;
	}
	*pfn = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM ? procs[found].ptsz : procs[found].fn;
	return 0;
}
