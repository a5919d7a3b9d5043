/*
 * gpus.c: the fake driver's GPUs, all their data in one place: each one's
 * UUID, name and SM count, and the device memory the fake keeps for them.
 * The files that answer for a device (devices.c, mem.c) read it here.
 */
#include "fake.h"

/* Two GPUs with UUIDs of their own: the first is that of the topology in
 * internal/topo/testdata, the second that of topotest's second one. Both
 * are H100s of 132 SMs. */
const struct fake_gpu fake_gpus[FAKE_GPUS] = {
	{{0x72, 0x60, 0x2e, 0xc6, 0x31, 0x0b, 0x1a, 0xda, 0xb0, 0x2f, 0x5c, 0x7e, 0xc6, 0x0e, 0x17, 0xef},
	 "NVIDIA H100 80GB HBM3", 132},
	{{0x5d, 0x1e, 0x2b, 0x7a, 0x0c, 0x44, 0x4f, 0x0e, 0x9a, 0x31, 0x7b, 0xe0, 0xc2, 0xf4, 0xd6, 0xa1},
	 "NVIDIA H100 80GB HBM3", 132},
};

/* The device memory, in MiB, where FAKECUDA_MEM_MB and fakecuda_mem_mb do
 * not say: an H100's. It is one account, which every allocation draws on,
 * whichever GPU it is on (mem.c). */
const unsigned long long fake_mem_mb = 81079;
