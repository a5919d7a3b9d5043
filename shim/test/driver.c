/*
 * A stand-in for an unmodified CUDA program, run under LD_PRELOAD=libcarve.so
 * with CARVE_LIBCUDA pointing at the fake driver. It reads commands on stdin:
 *   launch VERSION   one fake launch; prints "mask W0 W1 W2 W3 EN CALLED"
 *   quit
 * and prints "ready" once loaded, so a test can change the control block
 * between launches.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	const char *lib = getenv("CARVE_LIBCUDA");
	void *h = dlopen(lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		printf("error %s\n", dlerror());
		return 2;
	}
	int (*launch)(int, uint32_t *) = (int (*)(int, uint32_t *))dlsym(h, "fakecuda_launch");
	if (!launch) {
		printf("error no fakecuda_launch\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	char line[128];
	while (fgets(line, sizeof line, stdin)) {
		int v;
		if (sscanf(line, "launch %i", &v) == 1) {
			uint32_t out[5];
			int called = launch(v, out);
			printf("mask %08x %08x %08x %08x %u %d\n", out[0], out[1], out[2], out[3], out[4], called);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		} else {
			printf("error unknown command\n");
		}
	}
	return 0;
}
