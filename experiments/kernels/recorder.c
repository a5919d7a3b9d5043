// A kernel recorder for an unchanged CUDA program: the driver loads it by
// CUDA_INJECTION64_PATH and calls InitializeInjection, which turns on CUPTI's
// concurrent-kernel activity records and writes one line per kernel run to
// CARVE_KERNELS_OUT ("%p" in it becomes the process id, so that children
// write files of their own). carve bench kernels reads the lines.
//
// The format, one kernel a line, tab-separated, the name last (demangled; it
// has spaces but no tab); lines starting with # are comments:
//
//   start_ns end_ns gx,gy,gz bx,by,bz cx,cy,cz launch regs static_smem dynamic_smem device stream name
//
// launch is regular, coop-single or coop-multi (cooperative launches on one
// or on several devices), or launch-N for a launch type this file does not
// know; cx,cy,cz are the cluster's dimensions (0 or 1: no cluster).
//
// Built against the toolkit's CUPTI headers, with CARVE_KERNEL_RECORD the
// newest CUpti_ActivityKernelN its cupti_activity.h declares and
// CARVE_CUPTI_LIB the path of its libcupti.so (run.sh finds both):
//   cc -shared -fPIC -O2 -DCARVE_KERNEL_RECORD=CUpti_ActivityKernel9
//      -DCARVE_CUPTI_LIB='"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"'
//      -I$CUPTI/include -I$CUDA/include recorder.c -ldl -lstdc++ -o libkrec.so
// It opens that libcupti itself, privately, and calls it through pointers
// found there: PyTorch loads its own CUPTI (of its CUDA version) into the
// global namespace, and a recorder linked against the toolkit's would bind
// to that one, whose records may be laid out differently.
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio_ext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef CARVE_KERNEL_RECORD
#define CARVE_KERNEL_RECORD CUpti_ActivityKernel9
#endif

#ifndef CARVE_CUPTI_LIB
#define CARVE_CUPTI_LIB "libcupti.so"
#endif

// the CUPTI functions used, each through a pointer p_NAME into CARVE_CUPTI_LIB
#define CUPTI_FUNCTIONS(X)                                                                                             \
	X(cuptiGetResultString)                                                                                        \
	X(cuptiGetTimestamp)                                                                                           \
	X(cuptiActivityRegisterCallbacks)                                                                              \
	X(cuptiActivityEnable)                                                                                         \
	X(cuptiActivityGetNextRecord)                                                                                  \
	X(cuptiActivityFlushAll)                                                                                       \
	X(cuptiActivityFlushPeriod)                                                                                    \
	X(cuptiActivityGetNumDroppedRecords)
#define DECLARE(f) static __typeof__(f) *p_##f;
CUPTI_FUNCTIONS(DECLARE)

// loadCupti opens CARVE_CUPTI_LIB privately and finds the functions in it.
static int loadCupti(void) {
	void *h = dlopen(CARVE_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "carve kernel recorder: %s; recording nothing\n", dlerror());
		return 0;
	}
#define FIND(f)                                                                                                        \
	if (!(p_##f = (__typeof__(f) *)dlsym(h, #f))) {                                                                \
		fprintf(stderr, "carve kernel recorder: %s has no %s; recording nothing\n", CARVE_CUPTI_LIB, #f);      \
		return 0;                                                                                              \
	}
	CUPTI_FUNCTIONS(FIND)
	return 1;
}

// the C++ runtime's demangler (extern "C" in libstdc++)
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

enum { bufferSize = 1 << 20, flushPeriodMs = 1000 };

static FILE *out;
static pthread_mutex_t outLock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long kernels;

static void warn(const char *what, CUptiResult r) {
	const char *s = "";
	p_cuptiGetResultString(r, &s);
	fprintf(stderr, "carve kernel recorder: %s: %s\n", what, s);
}

static const char *launchName(unsigned t, char *buf, size_t n) {
	switch (t) {
	case CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR:
		return "regular";
	case CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE:
		return "coop-single";
	case CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE:
		return "coop-multi";
	}
	snprintf(buf, n, "launch-%u", t);
	return buf;
}

// demangled names by CUPTI's name pointer, which all records of a kernel
// share: a job runs a few hundred kernels many times over
enum { nameSlots = 1 << 14 };
static struct {
	const char *mangled;
	char *shown;
} names[nameSlots];

static char *demangle(const char *mangled) {
	int status = -1;
	char *d = __cxa_demangle(mangled, NULL, NULL, &status);
	if (status == 0 && d)
		return d;
	free(d);
	return strdup(mangled); // a C name, or one the demangler does not know
}

// shownName is a kernel's demangled name (under outLock).
static const char *shownName(const char *mangled) {
	static char *uncached;
	if (!mangled)
		return "?";
	size_t h = ((uintptr_t)mangled >> 3) % nameSlots;
	for (size_t i = 0; i < nameSlots; i++, h = (h + 1) % nameSlots) {
		if (names[h].mangled == mangled)
			return names[h].shown;
		if (!names[h].mangled) {
			names[h].mangled = mangled;
			names[h].shown = demangle(mangled);
			return names[h].shown ? names[h].shown : mangled;
		}
	}
	free(uncached); // the table is full: demangle each time
	uncached = demangle(mangled);
	return uncached ? uncached : mangled;
}

static void writeKernel(const CARVE_KERNEL_RECORD *k) {
	const char *shown = shownName(k->name);
	char lbuf[32];
	fprintf(out, "%llu\t%llu\t%d,%d,%d\t%d,%d,%d\t%u,%u,%u\t%s\t%u\t%d\t%d\t%u\t%u\t",
	        (unsigned long long)k->start, (unsigned long long)k->end, k->gridX, k->gridY, k->gridZ, k->blockX,
	        k->blockY, k->blockZ, (unsigned)k->clusterX, (unsigned)k->clusterY, (unsigned)k->clusterZ,
	        launchName(k->launchType, lbuf, sizeof lbuf), (unsigned)k->registersPerThread, k->staticSharedMemory,
	        k->dynamicSharedMemory, k->deviceId, k->streamId);
	for (const char *c = shown; *c; c++) // one line, one field: no tab or newline in it
		fputc(*c == '\t' || *c == '\n' ? ' ' : *c, out);
	fputc('\n', out);
	kernels++;
}

static void CUPTIAPI bufferRequested(uint8_t **buffer, size_t *size, size_t *maxRecords) {
	*buffer = aligned_alloc(8, bufferSize);
	*size = *buffer ? bufferSize : 0;
	*maxRecords = 0;
}

static void CUPTIAPI bufferCompleted(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
	(void)ctx;
	(void)stream;
	(void)size;
	CUpti_Activity *rec = NULL;
	pthread_mutex_lock(&outLock);
	while (out && p_cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
		if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL)
			writeKernel((const CARVE_KERNEL_RECORD *)rec);
	if (out)
		fflush(out);
	pthread_mutex_unlock(&outLock);
	free(buffer);
}

// owner is the process that opened out: a child forked without exec has
// its FILE too, and must neither write to it nor flush the parent's
// buffered lines again at its exit.
static pid_t owner;

static void inChild(void) {
	if (out)
		__fpurge(out);
	out = NULL;
}

static void atExit(void) {
	if (getpid() != owner)
		return;
	CUptiResult r = p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (r != CUPTI_SUCCESS)
		warn("flushing at exit", r);
	size_t dropped = 0;
	p_cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
	pthread_mutex_lock(&outLock);
	if (out) {
		fprintf(out, "# end: %llu kernels, %zu records dropped by CUPTI\n", kernels, dropped);
		fclose(out);
		out = NULL;
	}
	pthread_mutex_unlock(&outLock);
}

// openOut opens CARVE_KERNELS_OUT, "%p" in it the process id.
static FILE *openOut(void) {
	const char *path = getenv("CARVE_KERNELS_OUT");
	if (!path || !*path) {
		fprintf(stderr, "carve kernel recorder: set CARVE_KERNELS_OUT to the file to write; recording nothing\n");
		return NULL;
	}
	char name[4096];
	size_t n = 0;
	for (const char *c = path; *c && n < sizeof name - 24; c++) {
		if (c[0] == '%' && c[1] == 'p') {
			n += snprintf(name + n, sizeof name - n, "%d", (int)getpid());
			c++;
		} else {
			name[n++] = *c;
		}
	}
	name[n] = 0;
	FILE *f = fopen(name, "w");
	if (!f)
		perror(name);
	return f;
}

int InitializeInjection(void) {
	if (!loadCupti())
		return 0;
	out = openOut();
	if (!out)
		return 0;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t ts = 0;
	p_cuptiGetTimestamp(&ts);
	fprintf(out, "# carve kernel records 1: pid %d, realtime %lld.%09ld s at CUPTI time %llu ns\n", (int)getpid(),
	        (long long)now.tv_sec, now.tv_nsec, (unsigned long long)ts);
	fprintf(out, "# start_ns\tend_ns\tgrid\tblock\tcluster\tlaunch\tregs\tstatic_smem\tdynamic_smem\tdevice\tstream\tname\n");
	fflush(out);
	CUptiResult r = p_cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
	if (r == CUPTI_SUCCESS)
		r = p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (r != CUPTI_SUCCESS) {
		warn("enabling kernel records", r);
		fprintf(out, "# not recording: CUPTI refused (%d)\n", (int)r);
		fclose(out);
		out = NULL;
		return 0;
	}
	if ((r = p_cuptiActivityFlushPeriod(flushPeriodMs)) != CUPTI_SUCCESS)
		warn("periodic flush (records reach the file at exit only)", r);
	owner = getpid();
	pthread_atfork(NULL, NULL, inChild);
	atexit(atExit);
	return 1;
}
