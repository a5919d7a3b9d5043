// What the driver's launch callback is given besides the descriptor: it
// prints each callback's params words beside the context, stream and
// function of the launch, for launches on two contexts and two streams and
// for a memset (which the driver may run as a kernel of its own), so that
// the context of a launch can be read in the callback instead of asked of
// the driver there. Usage: cbparams (nvcc -arch=sm_90 -lcuda).
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CK(x) do { CUresult r_ = (x); if (r_) { printf("%s: %d\n", #x, r_); return 1; } } while (0)

static const unsigned char uuid[16] = {0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
				       0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b};
typedef void (*cb_fn)(void *, int, int, const void *);

static void cb(void *user, int domain, int cbid, const void *params)
{
	(void)user;
	uint32_t size;
	memcpy(&size, params, 4);
	printf("  callback %#x/%d size %u:", domain, cbid, size);
	for (uint32_t o = 0; o + 8 <= size && o < 128; o += 8) {
		uint64_t w;
		memcpy(&w, (const char *)params + o, 8);
		printf(" [%u]=%#llx", o, (unsigned long long)w);
	}
	printf("\n");
}

__global__ void k(int *p) { p[threadIdx.x] = threadIdx.x; }

int main()
{
	CK(cuInit(0));
	CUdevice d;
	CK(cuDeviceGet(&d, 0));
	CUcontext a, b;
	CK(cuDevicePrimaryCtxRetain(&a, d));
	CK(cuCtxSetCurrent(a));
	const void *t;
	CUuuid u;
	memcpy(u.bytes, uuid, 16);
	CK(cuGetExportTable(&t, &u));
	uint32_t h;
	((int (*)(uint32_t *, cb_fn, void *))((uintptr_t *)t)[3])(&h, cb, NULL);
	((int (*)(uint32_t, uint32_t, int, int))((uintptr_t *)t)[6])(1, h, 0xb, 1);
	int *p;
	CUstream s1, s2;
	CK(cuStreamCreate(&s1, 0));
	CK(cuStreamCreate(&s2, 0));
	cudaMalloc(&p, 4096);
	printf("context A %p, streams %p %p, pointer %p\n", (void *)a, (void *)s1, (void *)s2, (void *)p);
	k<<<1, 32, 0, s1>>>(p);
	k<<<1, 32, 0, s2>>>(p);
	k<<<1, 32>>>(p);
	printf("memset on s1:\n");
	CK(cuMemsetD8Async((CUdeviceptr)p, 1, 4096, s1));
	CK(cuMemsetD32Async((CUdeviceptr)p, 7, 1024, s2));
	CK(cuCtxSynchronize());
	CK(cuCtxCreate(&b, NULL, 0, d));
	printf("context B %p (current)\n", (void *)b);
	CUdeviceptr q;
	CK(cuMemAlloc(&q, 4096));
	CUmodule m;
	CUfunction f;
	if (cuModuleLoad(&m, "cbparams.cubin") == CUDA_SUCCESS && cuModuleGetFunction(&f, m, "_Z1kPi") == CUDA_SUCCESS) {
		printf("function %p\n", (void *)f);
		void *args[] = {&q};
		CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, args, NULL));
	}
	CK(cuMemsetD8Async(q, 1, 4096, 0));
	CK(cuCtxSynchronize());
	return 0;
}
