/*
 * cuda_api.h: the few CUDA driver types, constants and signatures libcarve.so
 * and the fake driver use, written out so that neither needs CUDA headers.
 * Values are from cuda.h of CUDA 13.0; they are part of the driver's ABI.
 */
#ifndef CARVE_CUDA_API_H
#define CARVE_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUfunction;
typedef void *CUgraph;
typedef void *CUgraphExec;
typedef void *CUgraphNode;
typedef void *CUmemoryPool;
typedef void *CUarray;
typedef void *CUmipmappedArray;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct {
	char reserved[64];
} CUipcMemHandle;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_SUPPORTED 801
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define CUDA_ERROR_ALREADY_ACQUIRED 210

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 0x2
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define CU_STREAM_CAPTURE_MODE_RELAXED 2

/* Memory: pools' attributes (CUmemPool_attribute), graphs' memory
 * (CUgraphMem_attribute), where an allocation lives (CUmemLocationType, at
 * offset 8 of CUmemPoolProps and CUmemAllocationProp), the device malloc
 * heap (CUlimit), the bytes of a memory allocation node (offset 104 of
 * CUDA_MEM_ALLOC_NODE_PARAMS, after the 88-byte CUmemPoolProps, the access
 * descriptors and their count; dptr at 112), and the arrays' flags and
 * formats (CUDA_ARRAY3D_*, CUarray_format). */
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT 5
#define CU_MEMPOOL_ATTR_USED_MEM_CURRENT 7
#define CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT 0
#define CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT 2
#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_MEM_PROPS_LOCATION_TYPE_OFFSET 8
#define CU_LIMIT_MALLOC_HEAP_SIZE 2
#define CU_MEM_ALLOC_NODE_PARAMS_SIZE 120
#define CU_MEM_ALLOC_NODE_BYTESIZE_OFFSET 104
#define CU_MEM_ALLOC_NODE_DPTR_OFFSET 112
#define CUDA_ARRAY3D_LAYERED 0x01
#define CUDA_ARRAY3D_CUBEMAP 0x04
#define CUDA_ARRAY3D_SPARSE 0x40
#define CUDA_ARRAY3D_DEFERRED_MAPPING 0x80
#define CU_AD_FORMAT_FLOAT 0x20

/* Graphs: node types (CUgraphNodeType) and instantiation flags
 * (CUgraphInstantiate_flags). */
#define CU_GRAPH_NODE_TYPE_KERNEL 0
#define CU_GRAPH_NODE_TYPE_GRAPH 4
#define CU_GRAPH_NODE_TYPE_MEM_ALLOC 10
#define CU_GRAPH_NODE_TYPE_MEM_FREE 11
#define CU_GRAPH_NODE_TYPE_CONDITIONAL 13
#define CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD 2ull        /* uploaded at instantiation */
#define CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH 4ull /* launchable from the device */

/* CUDA_ARRAY_DESCRIPTOR and CUDA_ARRAY3D_DESCRIPTOR (the _v2 flavours: of
 * CUDA 3.2 and later). */
typedef struct {
	size_t Width, Height;
	int Format;
	unsigned NumChannels;
} CUDA_ARRAY_DESCRIPTOR;
typedef struct {
	size_t Width, Height, Depth;
	int Format;
	unsigned NumChannels;
	unsigned Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

/* The legacy and per-thread default streams as handles. */
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

/* CUlaunchConfig: the stream of a cuLaunchKernelEx launch is at offset 32. */
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

/* Slicing (slice.c): modules, a non-blocking stream, the functions'
 * cluster attributes (CUfunction_attribute), and launch attributes
 * (CUlaunchAttribute: an id, 4 bytes of padding, a 64-byte value). */
typedef void *CUmodule;
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET 10
#define CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH 11
#define CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT 12
#define CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH 13
#define CU_LAUNCH_ATTRIBUTE_BYTES 72
#define CU_LAUNCH_ATTRIBUTE_VALUE_OFFSET 8
#define CU_LAUNCH_ATTRIBUTE_COOPERATIVE 2
#define CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION 4
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT 7
#define CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION 11
#define CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT 12

#endif
