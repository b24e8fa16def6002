/* SPDX-License-Identifier: MIT */
/*
 * The shim's view of the process's mappings: /proc/self/maps read at
 * start-up (the snapshot of what is never registered) and at every scan,
 * the records of the ranges registered with the process's uffd, and the
 * program's calls that end records (munmap(), mremap(), mmap() over
 * them) or free pages in them (MADV_FREE). docs/RUNTIME.md, "What is
 * registered".
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
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

struct shim_range {
	uint64_t start, end;
};

/*
 * reg_lock serializes the scans and guards reg[] and maps_buf; snap[] is
 * written once, by the constructor under it, before any other thread of
 * the shim runs. A record is a range registered by a scan: it ends when
 * the program unmaps or moves it (shim_forget_range()) or the supervisor
 * says so (shim_maps_forget()).
 */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_range reg[SHIM_MAX_RANGES];	/* registered by us; reg_lock */
static unsigned int nr_reg;			/* entries of reg[]; reg_lock */
static struct shim_range snap[SHIM_MAX_RANGES];	/* anon VMAs at start-up */
static unsigned int nr_snap;			/* entries of snap[] */
static char maps_buf[1 << 20];			/* /proc/self/maps; reg_lock */
/* vm_sig() at the agent's last rescan: written by the session's start
 * (shim_scan_mark()) before the agent runs, then by the agent alone. */
static unsigned long last_vm;

/* Whether [@s, @e) meets one of the @n ranges of @r. Context: any. */
static bool overlaps(const struct shim_range *r, unsigned int n, uint64_t s, uint64_t e)
{
	for (unsigned int i = 0; i < n; i++)
		if (r[i].start < e && s < r[i].end)
			return true;
	return false;
}

/* Whether [@s, @e) meets the shim's own memory: the staging area and the
 * agent's and the watchdog's stacks, never registered as the program's.
 * Context: any (shim_internal.h says when the fields are set). */
static bool own_memory(uint64_t s, uint64_t e)
{
	struct shim_range own[3] = {
		{ (uint64_t)shim.staging, (uint64_t)shim.staging + RT_BATCH * RT_PAGE },
		{ (uint64_t)shim.agent_stack, (uint64_t)shim.agent_stack + SHIM_STACK },
		{ (uint64_t)shim.watch_stack, (uint64_t)shim.watch_stack + SHIM_STACK },
	};
	return overlaps(own, 3, s, e);
}

/* One line of /proc/self/maps. */
struct shim_vma {
	uint64_t start, end;
	char perms[5];
	unsigned long inode;
	const char *path;		/* "" for anonymous */
};

/* Parse @line into @v (@v->path points into @line). Context: any.
 * Return: false if it is not a line of the maps. */
static bool parse_line(char *line, struct shim_vma *v)
{
	unsigned long long s, e, off;
	unsigned int maj, min;
	int n = 0;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %lu %n", &s, &e, v->perms, &off, &maj, &min,
		   &v->inode, &n) < 7)
		return false;
	v->start = s;
	v->end = e;
	v->path = line + n;
	return true;
}

/* Whether @v is anonymous memory (the heap included). Context: any. */
static bool is_anon(const struct shim_vma *v)
{
	return v->inode == 0 && (!v->path[0] || !strcmp(v->path, "[heap]"));
}

/*
 * Read /proc/self/maps into maps_buf.
 * Context: reg_lock held (maps_buf is shared). Return: the length, or -1.
 */
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
 * program runs (they are never registered, the heap aside), and find where
 * the calling thread's rseq cpu_id lies.
 * Context: the constructor; takes reg_lock.
 * Return: the address of the calling thread's rseq cpu_id
 * (shim_cpu_id_word()) if it lies in memory the shim never registers,
 * else 0.
 */
uint64_t shim_snapshot(void)
{
	uint64_t lead = shim_cpu_id_word(), safe = 0;
	struct shim_vma v;
	char *line, *save = NULL;

	pthread_mutex_lock(&reg_lock);
	if (read_maps() >= 0)
		for (line = strtok_r(maps_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			if (!parse_line(line, &v))
				continue;
			/* The agent reads the main thread's rseq cpu_id
			 * (shim_policy.c): only if it lies in memory never
			 * registered, so that the agent cannot fault on a page
			 * it would have to evict itself. Of the VMAs existing
			 * now only [heap] gets registered; the TCB is in ld.so's
			 * own mapping. */
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

/* End the records of [@s, @e), keeping the parts of a range outside it.
 * Context: reg_lock held. */
static void forget(uint64_t s, uint64_t e)
{
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
}

/**
 * shim_scan() - register every candidate VMA not registered yet
 * (docs/RUNTIME.md, "What is registered") and tell the supervisor.
 * Context: any thread of the process (the session's start, the agent, the
 * watchdog, or a program thread without a watchdog); takes reg_lock.
 */
void shim_scan(void)
{
	struct shim_vma v, prev = { 0 };
	char *line, *save = NULL;
	bool have_prev = false;

	pthread_mutex_lock(&reg_lock);
	if (!shim_active() || !shim_sock_ours() || read_maps() < 0) {
		pthread_mutex_unlock(&reg_lock);
		return;
	}
	for (line = strtok_r(maps_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!parse_line(line, &v))
			continue;
		bool guard_below = have_prev && prev.end == v.start && is_anon(&prev) &&
				   !strcmp(prev.perms, "---p");
		bool heap = !strcmp(v.path, "[heap]");

		/*
		 * The reserve of a glibc arena heap (a 64 MiB block, aligned,
		 * read-write at its start): glibc grows the heap with its own
		 * mprotect(), which no interposer sees; registered, the reserve
		 * passes its registration on to each piece made read-write.
		 * Never a thread stack: a stack's guard is below it, and a stack
		 * is not a 64 MiB-aligned pair.
		 */
		bool arena_reserve = have_prev && prev.end == v.start && is_anon(&v) &&
				     !strcmp(v.perms, "---p") && !strcmp(prev.perms, "rw-p") &&
				     !(prev.start & (SHIM_ARENA_HEAP - 1)) &&
				     v.end - prev.start == SHIM_ARENA_HEAP &&
				     registered(prev.start, prev.end);

		prev = v;
		have_prev = true;
		if ((strcmp(v.perms, "rw-p") && !arena_reserve) || !is_anon(&v) || guard_below ||
		    v.end - v.start < SHIM_MIN_VMA || own_memory(v.start, v.end) ||
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
 * shim_forget_range() - a mapping made, unmapped or moved away at
 * [@s, @e) ends every registration record there. The agent learns the
 * same from the supervisor's RT_FORGET, but only after the batch it may be
 * busy with; meanwhile a new mapping at the same address (munmap() then
 * mmap() of the same size: a stress-ng round) would look registered
 * already and stay unregistered until then.
 * Context: a program thread (the interposers); takes reg_lock.
 */
void shim_forget_range(uint64_t s, uint64_t e)
{
	if (!shim_active() || e <= s)
		return;
	pthread_mutex_lock(&reg_lock);
	forget(s, e);
	pthread_mutex_unlock(&reg_lock);
}

/**
 * shim_free_pages() - MADV_FREE of the program's memory. The REMOVE event
 * of a MADV_FREE looks like a MADV_DONTNEED's, but the kernel leaves the
 * pages mapped (lazily freed: they stay until reclaim, and a write keeps
 * them for good): passed on as it is, the supervisor would forget pages
 * that stay resident (a budget nothing counts or can evict), and a page of
 * the batch in flight (DEAD) would lose what the program wrote into it
 * after the call. On
 * registered memory MADV_DONTNEED is a correct MADV_FREE (the kernel may
 * free the pages at once; they then read zeros), and the supervisor
 * follows it exactly. A range that is all registered (the common case: an
 * allocator purging its own arena) is dropped with MADV_DONTNEED alone;
 * any other range gets the real MADV_FREE (its result is the call's:
 * EINVAL on a file mapping) and, if that succeeded, MADV_DONTNEED on its
 * registered parts.
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
		 * registered ranges do not overlap, so those not taken start
		 * after the last one taken ends. */
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

/*
 * The process's virtual size and its private writable size in pages
 * (statm's first and sixth fields), one in each half of the result, 0 on
 * error: either changes when a mapping is added, removed or made writable.
 * The second is what sees mprotect(): a PROT_NONE reservation made
 * read-write (glibc's arena growth, V8's heap) leaves the size alone.
 * Context: any.
 */
static unsigned long vm_sig(void)
{
	char buf[128], *p;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	unsigned long size, data = 0;
	ssize_t r;

	if (fd < 0)
		return 0;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return 0;
	buf[r] = 0;
	size = strtoul(buf, &p, 10);
	for (int i = 0; i < 5 && *p; i++)	/* on to the sixth field */
		data = strtoul(p, &p, 10);
	return size ^ (data << 32);
}

/**
 * shim_scan_mark() - note the process's mappings as they are now
 * (vm_sig()): shim_rescan() scans once they change.
 * Context: the session's start, before the agent runs (last_vm).
 */
void shim_scan_mark(void)
{
	last_vm = vm_sig();
}

/**
 * shim_rescan() - scan (shim_scan()) if the process's mappings changed
 * since the last scan of this kind, or shim_maps_forget() asked for one.
 * Context: the agent thread.
 * Return: true if it scanned.
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
 * shim_maps_forget() - the supervisor's RT_FORGET of [@s, @e): end the
 * records there, and have the next shim_rescan() scan whatever statm says.
 * Context: the agent thread; takes reg_lock.
 */
void shim_maps_forget(uint64_t s, uint64_t e)
{
	pthread_mutex_lock(&reg_lock);
	forget(s, e);
	pthread_mutex_unlock(&reg_lock);
	last_vm = 0;
}

/**
 * shim_maps_fork_child() - the records in a child of fork(): the lock is
 * made anew, and with @drop (no fork events: nothing of the child is
 * registered) every record ends.
 * Context: the child's only thread, in its pthread_atfork handler.
 */
void shim_maps_fork_child(bool drop)
{
	pthread_mutex_init(&reg_lock, NULL);
	if (drop)
		nr_reg = 0;
}
