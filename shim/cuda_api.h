/*
 * cuda_api.h: the few CUDA driver types, constants and signatures libcarve.so
 * and the fake driver use, written out so that neither needs CUDA headers.
 * Values are from cuda.h of CUDA 13.0; they are part of the driver's ABI.
 */
#ifndef CARVE_CUDA_API_H
#define CARVE_CUDA_API_H

#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUfunction;
typedef void *CUgraph;
typedef void *CUgraphExec;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_ALREADY_ACQUIRED 210

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 0x2
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_STREAM_CAPTURE_MODE_RELAXED 2

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

#endif
