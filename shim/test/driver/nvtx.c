/*
 * nvtx.c: the program's NVTX ranges, made as a library built with NVTX's
 * headers makes them: at the first command it loads the tool
 * NVTX_INJECTION64_PATH names and hands its InitializeInjectionNvtx2 the
 * lookup of its tables of slots (NVTX's injection interface); each command
 * then calls through its slot, a no-op where the tool wrote none.
 *
 *   nvtx state                 -> "nvtx attached|none|refused|unloadable"
 *   nvtx push MSG              nvtxRangePushA     -> "level N"
 *   nvtx pushw MSG             nvtxRangePushW     -> "level N"
 *   nvtx pushex MSG            nvtxRangePushEx    -> "level N"
 *   nvtx pop                   nvtxRangePop       -> "level N"
 *   nvtx start MSG             nvtxRangeStartA    -> "id N"
 *   nvtx startex MSG           nvtxRangeStartEx   -> "id N"
 *   nvtx end ID                nvtxRangeEnd       -> "ok"
 *   nvtx domain NAME           nvtxDomainCreateA: the domain of dpush and dpop from then on -> "ok"
 *   nvtx dpush MSG             nvtxDomainRangePushEx, MSG a registered string -> "level N"
 *   nvtx dpop                  nvtxDomainRangePop -> "level N"
 *
 * A slot left empty answers as NVTX's no-op does: level 0, id 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "driver.h"

typedef void (*fn)(void);
struct attrs { /* nvtxEventAttributes_t */
	uint16_t version, size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type, reserved;
	uint64_t payload;
	int32_t message_type;
	const void *message;
};

/* the slots of the modules CORE (1) and CORE2 (5), indexed by callback id,
 * and the table of pointers to them NVTX hands out: its size is the
 * module's callback count, with a NULL after */
#define CORE_IDS 16
#define CORE2_IDS 16
static fn core[CORE_IDS], core2[CORE2_IDS];
static fn *core_table[CORE_IDS + 1], *core2_table[CORE2_IDS + 1];

static int module_table(int module, fn ***table, unsigned *size)
{
	switch (module) {
	case 1:
		*table = core_table, *size = CORE_IDS;
		return 1;
	case 5:
		*table = core2_table, *size = CORE2_IDS;
		return 1;
	}
	return 0;
}

static struct {
	size_t size;
	int (*module_table)(int, fn ***, unsigned *);
} callbacks = {sizeof callbacks, module_table};

static const void *export_table(uint32_t id)
{
	return id == 1 ? &callbacks : NULL;
}

static const char *state; /* NULL until the first command */

static void attach(void)
{
	for (int i = 1; i < CORE_IDS; i++)
		core_table[i] = &core[i];
	for (int i = 1; i < CORE2_IDS; i++)
		core2_table[i] = &core2[i];
	const char *path = getenv("NVTX_INJECTION64_PATH");
	if (!path || !*path) {
		state = "none";
		return;
	}
	void *lib = dlopen(path, RTLD_LAZY);
	int (*init)(const void *(*)(uint32_t)) = lib ? (int (*)(const void *(*)(uint32_t)))dlsym(lib, "InitializeInjectionNvtx2") : NULL;
	if (!init) {
		state = "unloadable";
		return;
	}
	if (!init(export_table)) {
		memset(core, 0, sizeof core), memset(core2, 0, sizeof core2);
		state = "refused";
		return;
	}
	state = "attached";
}

static const void *domain;
static wchar_t wide[128];

static int level(int r)
{
	printf("level %d\n", r);
	return 1;
}

int nvtx_command(char *line)
{
	if (strncmp(line, "nvtx ", 5) != 0)
		return 0;
	if (!state)
		attach();
	line[strcspn(line, "\n")] = 0;
	char *cmd = line + 5, *arg = strchr(cmd, ' ');
	if (arg)
		*arg++ = 0;
	else
		arg = cmd + strlen(cmd);
	struct attrs a = {3, sizeof a, 0, 0, 0, 0, 0, 0, 1, arg};
	if (strcmp(cmd, "state") == 0) {
		printf("nvtx %s\n", state);
	} else if (strcmp(cmd, "push") == 0) {
		return level(core[9] ? ((int (*)(const char *))core[9])(arg) : 0);
	} else if (strcmp(cmd, "pushw") == 0) {
		mbstowcs(wide, arg, sizeof wide / sizeof wide[0] - 1);
		return level(core[10] ? ((int (*)(const wchar_t *))core[10])(wide) : 0);
	} else if (strcmp(cmd, "pushex") == 0) {
		return level(core[8] ? ((int (*)(const struct attrs *))core[8])(&a) : 0);
	} else if (strcmp(cmd, "pop") == 0) {
		return level(core[11] ? ((int (*)(void))core[11])() : 0);
	} else if (strcmp(cmd, "start") == 0) {
		printf("id %llu\n", core[5] ? (unsigned long long)((uint64_t (*)(const char *))core[5])(arg) : 0ull);
	} else if (strcmp(cmd, "startex") == 0) {
		printf("id %llu\n", core[4] ? (unsigned long long)((uint64_t (*)(const struct attrs *))core[4])(&a) : 0ull);
	} else if (strcmp(cmd, "end") == 0) {
		if (core[7])
			((void (*)(uint64_t))core[7])(strtoull(arg, NULL, 10));
		printf("ok\n");
	} else if (strcmp(cmd, "domain") == 0) {
		domain = core2[12] ? ((const void *(*)(const char *))core2[12])(arg) : NULL;
		printf("ok\n");
	} else if (strcmp(cmd, "dpush") == 0) {
		a.message_type = 3; /* registered */
		a.message = core2[10] ? ((const void *(*)(const void *, const char *))core2[10])(domain, arg) : NULL;
		return level(core2[4] ? ((int (*)(const void *, const struct attrs *))core2[4])(domain, &a) : 0);
	} else if (strcmp(cmd, "dpop") == 0) {
		return level(core2[5] ? ((int (*)(const void *))core2[5])(domain) : 0);
	} else {
		printf("error unknown nvtx command\n");
	}
	return 1;
}
