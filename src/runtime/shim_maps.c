/* SPDX-License-Identifier: MIT */
/*
 * The shim's view of the process's mappings: /proc/self/maps read at
 * start-up (the snapshot of what is never registered) and at every scan,
 * and the records of the ranges registered with the process's uffd.
 * docs/RUNTIME.md, "What is registered".
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/proto.h"
#include "runtime/shim_internal.h"
#include "runtime/uffd_ops.h"

#define SHIM_MAX_RANGES	4096
#define SHIM_ARENA_HEAP	(64UL << 20)	/* glibc's HEAP_MAX_SIZE on 64-bit */

struct shim_range { uint64_t start, end; };

/* A record is a range a scan registered, until the program maps over,
 * unmaps or moves it or the supervisor says so. reg_lock serializes scans. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_range reg[SHIM_MAX_RANGES];	/* the records; reg_lock */
static unsigned int nr_reg;			/* entries of reg[]; reg_lock */
static struct shim_range snap[SHIM_MAX_RANGES];	/* anon VMAs at start-up: the constructor's */
static unsigned int nr_snap;			/* entries of snap[] */
static char maps_buf[1 << 20];			/* /proc/self/maps; reg_lock */
static unsigned long last_vm;			/* vm_sig() at the last rescan: the agent's */

/* Whether [@s, @e) meets one of the @n ranges of @r. */
static bool overlaps(const struct shim_range *r, unsigned int n, uint64_t s, uint64_t e)
{
	for (unsigned int i = 0; i < n; i++)
		if (r[i].start < e && s < r[i].end)
			return true;
	return false;
}

/* One line of /proc/self/maps. */
struct shim_vma {
	uint64_t start, end;
	char perms[5];
	unsigned long inode;
	const char *path;		/* "" for anonymous */
};

/* Parse one maps line, "start-end perms offset major:minor inode   path",
 * into @v (@v->path points into @line). Return: false if malformed. */
static bool parse_vma(const char *line, struct shim_vma *v)
{
	unsigned long long s, e, x;
	const char *p = line;
	size_t n;

	if (!shim_parse_num(&p, 16, &s) || *p++ != '-' || !shim_parse_num(&p, 16, &e) ||
	    *p++ != ' ')
		return false;
	n = strcspn(p, " ");
	if (n != 4)
		return false;
	memcpy(v->perms, p, 4);
	v->perms[4] = 0;
	p += 4;
	if (!shim_parse_num(&p, 16, &x) || !shim_parse_num(&p, 16, &x) || *p++ != ':' ||
	    !shim_parse_num(&p, 16, &x) || !shim_parse_num(&p, 10, &x))
		return false;
	while (*p == ' ')
		p++;
	v->start = s;
	v->end = e;
	v->inode = (unsigned long)x;
	v->path = p;
	return true;
}

/* Parse the line of maps_buf at *@at into @v (@v->path points into it),
 * moving *@at past it. Return: false at the end. */
static bool next_vma(char **at, struct shim_vma *v)
{
	while (**at) {
		char *line = *at;

		*at += strcspn(line, "\n");
		if (**at)
			*(*at)++ = 0;
		if (parse_vma(line, v))
			return true;
	}
	return false;
}

/* Whether @v is anonymous memory (the heap included). */
static bool is_anon(const struct shim_vma *v)
{
	return v->inode == 0 && (!v->path[0] || !strcmp(v->path, "[heap]"));
}

/* Read /proc/self/maps into maps_buf (reg_lock held). Return: length, -1. */
static ssize_t read_maps(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t r;

	if (fd < 0)
		return -1;
	while ((r = read(fd, maps_buf + len, sizeof(maps_buf) - 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	maps_buf[len] = 0;
	return (ssize_t)len;
}

/**
 * shim_snapshot() - remember the anonymous VMAs that exist before the
 * program runs: they are never registered, [heap] aside.
 * Context: the constructor; takes reg_lock. Return: shim_cpu_id_word() if
 * it lies in memory never registered (the agent reads it, and must never
 * fault on a page it would have to evict itself), else 0.
 */
uint64_t shim_snapshot(void)
{
	uint64_t lead = shim_cpu_id_word(), safe = 0;
	struct shim_vma v;
	char *at = maps_buf;

	pthread_mutex_lock(&reg_lock);
	if (read_maps() >= 0)
		while (next_vma(&at, &v)) {
			if (lead && v.start <= lead && lead + 4 <= v.end && strcmp(v.path, "[heap]"))
				safe = lead;
			if (is_anon(&v) && strcmp(v.path, "[heap]") && nr_snap < SHIM_MAX_RANGES)
				snap[nr_snap++] = (struct shim_range){ v.start, v.end };
		}
	pthread_mutex_unlock(&reg_lock);
	return safe;
}

/* Whether [@s, @e) lies in one registered range. Context: reg_lock held. */
static bool registered(uint64_t s, uint64_t e)
{
	for (unsigned int i = 0; i < nr_reg; i++)
		if (reg[i].start <= s && e <= reg[i].end)
			return true;
	return false;
}

/* End the records of [@s, @e), keeping their parts outside it. Takes reg_lock. */
static void forget(uint64_t s, uint64_t e)
{
	pthread_mutex_lock(&reg_lock);
	for (unsigned int i = 0; i < nr_reg;) {
		if (reg[i].start < e && s < reg[i].end) {
			if (reg[i].start < s && nr_reg < SHIM_MAX_RANGES)
				reg[nr_reg++] = (struct shim_range){ reg[i].start, s };
			if (e < reg[i].end && nr_reg < SHIM_MAX_RANGES)
				reg[nr_reg++] = (struct shim_range){ e, reg[i].end };
			reg[i] = reg[--nr_reg];
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&reg_lock);
}

/**
 * shim_scan() - register every candidate VMA not registered yet (RT_REG).
 * Context: any thread; takes reg_lock.
 */
void shim_scan(void)
{
	struct shim_vma v, prev = { 0 };
	char *at = maps_buf;
	bool have_prev = false;

	pthread_mutex_lock(&reg_lock);
	if (!shim_active() || !shim_sock_ours() || read_maps() < 0) {
		pthread_mutex_unlock(&reg_lock);
		return;
	}
	const struct shim_range own[3] = {	/* the shim's memory, never registered */
		{ (uint64_t)shim.staging, (uint64_t)shim.staging + RT_BATCH * RT_PAGE },
		{ (uint64_t)shim.agent_stack, (uint64_t)shim.agent_stack + SHIM_STACK },
		{ (uint64_t)shim.watch_stack, (uint64_t)shim.watch_stack + SHIM_STACK },
	};
	while (next_vma(&at, &v)) {
		bool guard_below = have_prev && prev.end == v.start && is_anon(&prev) &&
				   !strcmp(prev.perms, "---p");
		bool heap = !strcmp(v.path, "[heap]");

		/* The reserve of a glibc arena heap (64 MiB, aligned, read-write
		 * at its start), grown by glibc's own mprotect(): registered, it
		 * passes its registration on to each piece made read-write. */
		bool arena_reserve = have_prev && prev.end == v.start && is_anon(&v) &&
				     !strcmp(v.perms, "---p") && !strcmp(prev.perms, "rw-p") &&
				     !(prev.start & (SHIM_ARENA_HEAP - 1)) &&
				     v.end - prev.start == SHIM_ARENA_HEAP &&
				     registered(prev.start, prev.end);

		prev = v;
		have_prev = true;
		if ((strcmp(v.perms, "rw-p") && !arena_reserve) || !is_anon(&v) || guard_below ||
		    v.end - v.start < SHIM_MIN_VMA || overlaps(own, 3, v.start, v.end) ||
		    (!heap && overlaps(snap, nr_snap, v.start, v.end)) ||
		    registered(v.start, v.end) || nr_reg >= SHIM_MAX_RANGES)
			continue;
		if (rt_uffd_register(shim.uffd, v.start, v.end - v.start))
			continue;
		reg[nr_reg++] = (struct shim_range){ v.start, v.end };
		struct rt_range_msg m = { .type = RT_REG, .start = v.start, .end = v.end };
		shim_send(&m, sizeof(m));
	}
	pthread_mutex_unlock(&reg_lock);
}

/**
 * shim_forget_range() - the program mapped over, unmapped or moved [@s, @e):
 * end its records now, not at RT_FORGET (after the batch in flight), lest
 * a new mapping there look registered.
 * Context: a program thread; takes reg_lock.
 */
void shim_forget_range(uint64_t s, uint64_t e)
{
	if (shim_active() && s < e)
		forget(s, e);
}

/**
 * shim_free_pages() - MADV_FREE of the program's memory. Its REMOVE event
 * looks like MADV_DONTNEED's, but the kernel leaves the pages mapped until
 * reclaim: the supervisor would forget pages that stay resident. On
 * registered memory MADV_DONTNEED is a correct MADV_FREE, which the
 * supervisor follows exactly (docs/RUNTIME.md, "Outside programs"). A
 * range all registered gets MADV_DONTNEED alone; any other the real
 * MADV_FREE (whose result is the call's) and, if that succeeds,
 * MADV_DONTNEED on its registered parts.
 * Context: a program thread, fenced (shim_libc.c); takes reg_lock.
 * Return: 0, or -1 and errno.
 */
int shim_free_pages(void *addr, size_t len)
{
	struct shim_range cut[16];
	uint64_t s = (uint64_t)addr, e = s + ((len + RT_PAGE - 1) & ~(RT_PAGE - 1)), at = s;
	unsigned int n;

	if ((s & (RT_PAGE - 1)) || e < s || !len)
		return shim_raw_madvise(addr, len, MADV_FREE);
	do {
		/* The (at most 16) lowest registered pieces of [at, e), sorted:
		 * records do not overlap, so the rest start after them. */
		n = 0;
		pthread_mutex_lock(&reg_lock);
		for (unsigned int i = 0; i < nr_reg; i++) {
			struct shim_range c = { reg[i].start > at ? reg[i].start : at,
						reg[i].end < e ? reg[i].end : e };
			unsigned int j;

			if (c.start >= c.end || (n == 16 && c.start > cut[15].start))
				continue;
			for (j = n < 16 ? n++ : 15; j && cut[j - 1].start > c.start; j--)
				cut[j] = cut[j - 1];
			cut[j] = c;
		}
		pthread_mutex_unlock(&reg_lock);
		uint64_t end = at;

		for (unsigned int i = 0; i < n && cut[i].start <= end; i++)
			if (cut[i].end > end)
				end = cut[i].end;
		if (at == s && end >= e)	/* all registered */
			return shim_raw_madvise(addr, len, MADV_DONTNEED);
		if (at == s && shim_raw_madvise(addr, len, MADV_FREE))
			return -1;
		for (unsigned int i = 0; i < n; i++)
			shim_raw_madvise((void *)cut[i].start, cut[i].end - cut[i].start, MADV_DONTNEED);
		at = n == 16 ? cut[15].end : e;	/* more than 16 pieces: go on after them */
	} while (at < e);
	return 0;
}

/* The process's virtual size and private writable size (statm's first and
 * sixth fields: mprotect() changes the second), in one word; 0 on error. */
static unsigned long vm_sig(void)
{
	char buf[128];
	const char *p = buf;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	unsigned long long size, data = 0;
	ssize_t r;

	if (fd < 0)
		return 0;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return 0;
	buf[r] = 0;
	if (!shim_parse_num(&p, 10, &size))
		return 0;
	for (int i = 0; i < 5 && shim_parse_num(&p, 10, &data); i++)	/* to the sixth field */
		;
	return (unsigned long)(size ^ (data << 32));
}

/**
 * shim_scan_mark() - note the mappings as they are, for shim_rescan().
 * Context: the session's start, before the agent runs.
 */
void shim_scan_mark(void)
{
	last_vm = vm_sig();
}

/**
 * shim_rescan() - scan if the mappings changed, or shim_maps_forget() asks.
 * Context: the agent thread. Return: true if it scanned.
 */
bool shim_rescan(void)
{
	unsigned long vs = vm_sig();

	if (vs == last_vm)
		return false;
	last_vm = vs;
	shim_scan();
	return true;
}

/**
 * shim_maps_forget() - RT_FORGET of [@s, @e): end its records, rescan next.
 * Context: the agent thread; takes reg_lock.
 */
void shim_maps_forget(uint64_t s, uint64_t e)
{
	forget(s, e);
	last_vm = 0;
}

/**
 * shim_maps_fork_child() - make the lock anew; @drop: end every record.
 * Context: a child of fork(), in its atfork handler.
 */
void shim_maps_fork_child(bool drop)
{
	pthread_mutex_init(&reg_lock, NULL);
	if (drop)
		nr_reg = 0;
}
