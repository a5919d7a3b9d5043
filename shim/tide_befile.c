/*
 * tide_befile.c: a GPU's BE files (carve_node.h): each BE tenant's own,
 * where it stamps its latest launch (tide_be.c), and every one of its
 * runtime directory mapped read-only, whose latest stamp an LS tenant's
 * poller reads to tell its busy periods alone (tide_ls.c). A file another
 * tenant cuts short reads as zeros (tide_node.c's SIGBUS handler).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "carve_node.h"
#include "shim.h"

_Static_assert(sizeof carve_tide_gpus[0].be_ino / sizeof carve_tide_gpus[0].be_ino[0] == CARVE_NODE_BE_FILES,
	       "a BE file's inode for each place");

/* is_be_file: is name, in a GPU's directory, a BE file's? */
static int is_be_file(const char *name)
{
	return strcmp(name, CARVE_NODE_BE_FILE) == 0 ||
	       (strncmp(name, CARVE_NODE_BE_PREFIX, sizeof CARVE_NODE_BE_PREFIX - 1) == 0 && !strchr(name, '.'));
}

/* zero_be maps zeros over place i of GPU g's BE files. */
static void zero_be(struct carve_tide_gpu *G, int i)
{
	mmap(G->bes + (size_t)i * carve_peer_stride, CARVE_BE_SIZE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	G->be_ino[i] = 0;
}

/* map_be maps the BE file name of the GPU's directory (dfd) over place i
 * of its BE files, read-only, keeping the mapping there where it is of the
 * same inode. One that is not a BE file of this layout reads as zeros
 * there, as one cut short later does: its writer hides its own stamps
 * alone. A mapping replaces the one before at the same address. */
static void map_be(struct carve_tide_gpu *G, int i, int dfd, const char *name)
{
	char *at = G->bes + (size_t)i * carve_peer_stride;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == CARVE_BE_SIZE;
	if (ok && G->be_ino[i] != (uint64_t)st.st_ino) {
		ok = mmap(at, CARVE_BE_SIZE, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED;
		const struct carve_be *b = (const struct carve_be *)at;
		ok = ok && b->magic == CARVE_BE_MAGIC && b->version == CARVE_NODE_VERSION; /* a SIGBUS here reads zeros */
		G->be_ino[i] = ok ? (uint64_t)st.st_ino : 0;
	}
	if (fd >= 0)
		close(fd);
	if (!ok)
		zero_be(G, i);
}

/* list_bes maps the BE files of GPU g's directory, up to
 * CARVE_NODE_BE_FILES (bes_over: there were more), zeros past them. */
static void list_bes(struct carve_tide_gpu *G)
{
	DIR *d = opendir(G->dir);
	int n = 0, over = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		if (!is_be_file(e->d_name))
			continue;
		if (n == CARVE_NODE_BE_FILES) {
			over = 1;
			break;
		}
		map_be(G, n++, dirfd(d), e->d_name);
	}
	if (d)
		closedir(d);
	for (int i = n; i < G->bes_n; i++)
		zero_be(G, i);
	G->bes_n = n;
	G->bes_over = over;
}

/* carve_tide_be_list lists GPU g's BE files again where it is time: once
 * a coarse tick (now) at most it looks at the directory's mtime, and maps
 * them again where it moved, or CARVE_NODE_BE_LIST_NS after the last
 * listing, or after a SIGBUS in one (bes_listed 0). */
void carve_tide_be_list(int g, uint64_t now)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	if (!G->bes || (G->bes_listed && now == G->bes_checked))
		return;
	G->bes_checked = now;
	struct stat st;
	int64_t mtime[2] = {-1, -1};
	if (stat(G->dir, &st) == 0)
		mtime[0] = st.st_mtim.tv_sec, mtime[1] = st.st_mtim.tv_nsec;
	if (!G->bes_listed || now - G->bes_listed >= CARVE_NODE_BE_LIST_NS || mtime[0] != G->bes_mtime[0] ||
	    mtime[1] != G->bes_mtime[1]) {
		list_bes(G);
		G->bes_listed = now ? now : 1;
		memcpy(G->bes_mtime, mtime, sizeof mtime);
	}
}

int carve_tide_be_latest(int g, uint64_t *latest)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	*latest = 0;
	if (!G->bes)
		return 1;
	for (int i = 0; i < G->bes_n; i++) {
		const struct carve_be *b = (const struct carve_be *)(G->bes + (size_t)i * carve_peer_stride);
		uint64_t t = __atomic_load_n(&b->be_launch_ns, __ATOMIC_ACQUIRE);
		*latest = t > *latest ? t : *latest;
	}
	return !G->bes_over;
}

/* own_path puts the i-th place where the BE tenant's own BE file on GPU g
 * is looked for into path (0: no such place): a claim's (tenant 0) link
 * in the claim's directory (the GPU's, less its suffix, with the link's);
 * a tenant of carve run's in the GPU's directory, its user's (the node
 * directory's), else the one (its user's own directory's). No link beside
 * the node block: in the node directory any user could have made one. */
static int own_path(const struct carve_tide_gpu *G, int i, char path[PATH_MAX])
{
	size_t n = strlen(G->dir), suffix = sizeof CARVE_NODE_DIR_SUFFIX - 1;
	if (!carve_block->tenant)
		return i == 0 && n >= suffix &&
		       snprintf(path, PATH_MAX, "%.*s" CARVE_NODE_BE_LINK, (int)(n - suffix), G->dir) < PATH_MAX;
	if (i == 0)
		return snprintf(path, PATH_MAX, "%s/" CARVE_NODE_BE_USER, G->dir, (unsigned)geteuid()) < PATH_MAX;
	return i == 1 && snprintf(path, PATH_MAX, "%s/" CARVE_NODE_BE_FILE, G->dir) < PATH_MAX;
}

/* own_be maps at bef, read-write, the BE file of this layout at the first
 * of the BE tenant's places for it (own_path), unless it is the file
 * mapped there (bef_dev, bef_ino) or there is none: over the mapping
 * there, so that a thread stamping meanwhile writes one or the other. */
static void own_be(struct carve_tide_gpu *G)
{
	char path[PATH_MAX];
	struct stat st;
	for (int i = 0; own_path(G, i, path); i++) {
		if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != CARVE_BE_SIZE)
			continue;
		struct carve_be *b = __atomic_load_n(&G->bef, __ATOMIC_ACQUIRE);
		if (b && (uint64_t)st.st_dev == G->bef_dev && (uint64_t)st.st_ino == __atomic_load_n(&G->bef_ino, __ATOMIC_RELAXED))
			return;
		int fd = carve_tide_open(path, 1);
		/* struct carve_be's first words, read rather than mapped: a file cut short reads short */
		struct { uint32_t magic; uint16_t version, size; } head;
		void *p = MAP_FAILED;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == CARVE_BE_SIZE &&
		    pread(fd, &head, sizeof head, 0) == (ssize_t)sizeof head && head.magic == CARVE_BE_MAGIC &&
		    head.version == CARVE_NODE_VERSION)
			p = mmap(b, CARVE_BE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | (b ? MAP_FIXED : 0), fd, 0);
		if (fd >= 0)
			close(fd);
		if (p == MAP_FAILED && b) /* the old mapping may be gone: stamps go nowhere until a look maps one */
			mmap(b, CARVE_BE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		__atomic_store_n(&G->bef_ino, p == MAP_FAILED ? 0 : (uint64_t)st.st_ino, __ATOMIC_RELAXED);
		if (p == MAP_FAILED)
			continue;
		G->bef_dev = (uint64_t)st.st_dev;
		__atomic_store_n(&G->bef, (struct carve_be *)p, __ATOMIC_RELEASE);
		return;
	}
}

/* carve_tide_be_own looks, every CARVE_NODE_BE_LIST_NS at most and one
 * thread at a time, whether the BE tenant's own BE file is the one it
 * maps: carve may have made another (for a writer it missed once, or in
 * place of an older carve's one file), which the LS tenants read. */
struct carve_be *carve_tide_be_own(int g, uint64_t now)
{
	struct carve_tide_gpu *G = &carve_tide_gpus[g];
	uint64_t looked = __atomic_load_n(&G->bef_looked, __ATOMIC_RELAXED);
	if ((!looked || now - looked >= CARVE_NODE_BE_LIST_NS) &&
	    __atomic_compare_exchange_n(&G->bef_looked, &looked, now ? now : 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		own_be(G);
	return __atomic_load_n(&G->bef, __ATOMIC_ACQUIRE);
}
