/* SPDX-License-Identifier: MIT */
/* The supervisor's reports: the counters of counters.h and values derived
 * from its state, as JSON (`uswap run --json`, `uswap stat`) and --stats. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include "runtime/runtime.h"
#include "runtime/uffd_ops.h"

/* The fault service time's @pct percentile (an upper bound, us). */
static unsigned long long lat_pct(const struct rt_sup *sup, unsigned int pct)
{
	return rt_lat_pct(sup->st.lat, RT_LAT_BUCKETS, pct);
}

/* @num / @den as a ratio, 0 when @den is 0. */
static double ratio(uint64_t num, uint64_t den)
{
	return den ? (double)num / (double)den : 0.0;
}

/* The JSON members of the eviction lists and the --memory-total bound. */
static void json_lru(FILE *f, const struct rt_sup *sup)
{
	const struct rt_lru_stats *l = &sup->tree.lru_st;
	uint64_t active = 0, inactive = 0;

	for (const struct rt_session *s = sup->sessions; s; s = s->next) {
		inactive += s->pg.lru.nr[0];
		active += s->pg.lru.nr[1];
	}
	fprintf(f, "\"evict_policy\":\"%s\",\"active_pages\":%llu,\"inactive_pages\":%llu,"
		"\"swapin_pages\":%llu,\"refaults\":%llu,\"refaults_activated\":%llu,"
		"\"deactivated\":%llu,\"written_scans\":%llu,\"written_found\":%llu,"
		"\"rotated\":%llu,\"promoted\":%llu,"
		"\"refaults_per_swapin\":%.4f,\"refaults_per_eviction\":%.4f,"
		"\"memory_budget_pages\":%llu,\"memory_total_pages\":%llu,"
		"\"compressed_bytes\":%llu,\"peak_compressed_bytes\":%llu,"
		"\"resident_plus_compressed_pages\":%llu,\"peak_resident_plus_compressed_pages\":%llu,"
		"\"swap_max_pages\":%llu,\"swap_pages\":%llu,\"peak_swap_pages\":%llu,"
		"\"swap_full\":%llu,",
		sup->tree.policy == RT_EVICT_FIFO ? "fifo" : "lru", (unsigned long long)active,
		(unsigned long long)inactive, (unsigned long long)l->swapin_pages,
		(unsigned long long)l->refaults, (unsigned long long)l->activated,
		(unsigned long long)l->deactivated, (unsigned long long)l->scans,
		(unsigned long long)l->written, (unsigned long long)l->rotated,
		(unsigned long long)l->promoted, ratio(l->refaults, sup->tree.st.swapins),
		ratio(l->refaults, sup->tree.st.evicted), (unsigned long long)sup->resident_budget,
		(unsigned long long)sup->total, (unsigned long long)sup->compressed,
		(unsigned long long)sup->peak_compressed,
		(unsigned long long)(sup->tree.resident + (sup->compressed + RT_PAGE - 1) / RT_PAGE),
		(unsigned long long)sup->peak_total, (unsigned long long)sup->swap_max,
		(unsigned long long)sup->swap_pages, (unsigned long long)sup->peak_swap_pages,
		(unsigned long long)sup->swap_full);
}

/* The supervisor's CPU time so far (all its threads, user + system), ms. */
static uint64_t cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* The counters of counters.h as JSON members, each followed by a comma. */
static void json_counters(FILE *f, const struct rt_sup *sup)
{
#define X(kind, name, json, line, text, desc) \
	fprintf(f, "\"" json "\":%llu,", (unsigned long long)RT_STAT_OUT_##kind(sup, name));
	RT_STATS(X)
#undef X
}

/* The mirrors' memory (the mm layer's frames): its frames, direct
 * reclaims, kswapd wake-ups and pages reclaimed into @m, now or as it was
 * destroyed (the end of the run). Return: false without one. */
static bool mirror_stats(const struct rt_sup *sup, unsigned long long m[4])
{
	struct uswap_mem_stats ms = sup->mem_end;

	if (sup->mem)
		uswap_mem_get_stats(sup->mem, &ms);
	if (!ms.nr_frames)
		return false;
	m[0] = ms.nr_frames;
	m[1] = ms.direct_reclaims;
	m[2] = ms.kswapd_wakeups;
	m[3] = ms.reclaimed;
	return true;
}

/**
 * rt_stats_json() - write @sup's counters to @f as one JSON object, with
 * @status as exit_status. Context: supervisor thread.
 */
void rt_stats_json(FILE *f, const struct rt_sup *sup, int status)
{
	unsigned long long m[4];

	fprintf(f, "{\"exit_status\":%d,\"budget_pages\":%llu,\"resident_pages\":%llu,",
		status, (unsigned long long)sup->tree.budget, (unsigned long long)sup->tree.resident);
	json_counters(f, sup);
	fprintf(f, "\"fault_p50_us_below\":%llu,\"fault_p99_us_below\":%llu,\"poll_us\":%llu,"
		"\"cpu_ms\":%llu,", lat_pct(sup, 50), lat_pct(sup, 99),
		(unsigned long long)sup->poll_us, (unsigned long long)cpu_ms());
	json_lru(f, sup);
	if (mirror_stats(sup, m))
		fprintf(f, "\"mirror\":{\"frames\":%llu,\"direct_reclaims\":%llu,"
			"\"kswapd_wakeups\":%llu,\"reclaimed\":%llu},", m[0], m[1], m[2], m[3]);
	fprintf(f, "\"processes\":[");
	for (const struct rt_session *s = sup->sessions; s; s = s->next)
		fprintf(f, "%s{\"pid\":%d,\"resident_pages\":%llu,\"swapped_pages\":%llu}",
			s == sup->sessions ? "" : ",", (int)s->pid,
			(unsigned long long)s->pg.nr_resident, (unsigned long long)s->pg.nr_swapped);
	fprintf(f, "],\"devices\":[");
	for (unsigned int i = 0; i < sup->nr_types; i++) {
		struct uswap_swap_stat ss = { 0 };

		uswap_swap_stat((unsigned int)sup->types[i], &ss);
		fprintf(f, "%s{\"type\":%d,\"inuse_pages\":%llu,\"writes\":%llu,\"reads\":%llu}",
			i ? "," : "", sup->types[i], (unsigned long long)ss.inuse_pages,
			(unsigned long long)ss.writes, (unsigned long long)ss.reads);
	}
	fprintf(f, "]}\n");
}

/* Print --stats line @line: "uswap run: ", @head, its counters, @tail. */
static void print_line(const struct rt_sup *sup, enum rt_stat_line line, const char *head,
		       const char *tail)
{
	const char *sep = "";

	fprintf(stderr, "uswap run: %s", head);
#define X(kind, name, json, ln, text, desc)						\
	if (RT_LINE_##ln == line) {							\
		fprintf(stderr, "%s" text, sep, (unsigned long long)RT_STAT_OUT_##kind(sup, name)); \
		sep = ", ";								\
	}
	RT_STATS(X)
#undef X
	fprintf(stderr, "%s\n", tail);
}

/* Whether a counter of --stats line @line is not zero. */
static bool line_nonzero(const struct rt_sup *sup, enum rt_stat_line line)
{
	uint64_t any = 0;

#define X(kind, name, json, ln, text, desc)	\
	if (RT_LINE_##ln == line)		\
		any |= RT_STAT_OUT_##kind(sup, name);
	RT_STATS(X)
#undef X
	return any != 0;
}

/** rt_stats_print() - print @sup's counters on stderr (--stats). Context: the end of the run. */
void rt_stats_print(const struct rt_sup *sup)
{
	const struct rt_lru_stats *l = &sup->tree.lru_st;
	unsigned long long m[4];
	char head[64], tail[96];

	snprintf(head, sizeof(head), "budget %llu pages, ", (unsigned long long)sup->tree.budget);
	snprintf(tail, sizeof(tail), "; fault service p50 < %llu us, p99 < %llu us",
		 lat_pct(sup, 50), lat_pct(sup, 99));
	print_line(sup, RT_LINE_MAIN, head, tail);
	if (line_nonzero(sup, RT_LINE_OVER))
		print_line(sup, RT_LINE_OVER, "over the budget: ", "");
	print_line(sup, RT_LINE_WAIT, "deferred faults waited for: ", "");
	snprintf(head, sizeof(head), "--poll-us %llu: ", (unsigned long long)sup->poll_us);
	snprintf(tail, sizeof(tail), "; CPU %llu ms", (unsigned long long)cpu_ms());
	print_line(sup, RT_LINE_POLL, head, tail);
	if (line_nonzero(sup, RT_LINE_COLO))
		print_line(sup, RT_LINE_COLO, "following the faulting thread: ", "");
	if (line_nonzero(sup, RT_LINE_FORK))
		print_line(sup, RT_LINE_FORK, "", "");
	fprintf(stderr, "uswap run: eviction %s: %llu refaults (%.3f per swap-in, %.3f per "
		"eviction), %llu activated, %llu deactivated; written bits: %llu scans, %llu "
		"pages, %llu rotated, %llu promoted; resident + compressed peak %llu "
		"pages (compressed peak %llu bytes), bound %llu pages%s\n",
		sup->tree.policy == RT_EVICT_FIFO ? "fifo" : "lru", (unsigned long long)l->refaults,
		ratio(l->refaults, sup->tree.st.swapins), ratio(l->refaults, sup->tree.st.evicted),
		(unsigned long long)l->activated, (unsigned long long)l->deactivated,
		(unsigned long long)l->scans, (unsigned long long)l->written,
		(unsigned long long)l->rotated, (unsigned long long)l->promoted,
		(unsigned long long)sup->peak_total, (unsigned long long)sup->peak_compressed,
		(unsigned long long)sup->total, sup->total ? "" : " (none)");
	if (mirror_stats(sup, m))
		fprintf(stderr, "uswap run: mirror memory: %llu frames, %llu direct reclaims, "
			"%llu kswapd wake-ups, %llu pages reclaimed\n", m[0], m[1], m[2], m[3]);
	if (sup->swap_max)
		fprintf(stderr, "uswap run: --swap-max %llu pages: swap peak %llu pages, %llu "
			"evictions refused at the limit\n", (unsigned long long)sup->swap_max,
			(unsigned long long)sup->peak_swap_pages, (unsigned long long)sup->swap_full);
	for (unsigned int i = 0; i < sup->nr_types; i++) {
		struct uswap_swap_stat ss = { 0 };

		uswap_swap_stat((unsigned int)sup->types[i], &ss);
		fprintf(stderr, "uswap run: device %d: %llu slots in use at exit, %llu writes, "
			"%llu reads", sup->types[i], (unsigned long long)ss.inuse_pages,
			(unsigned long long)ss.writes, (unsigned long long)ss.reads);
		if (ss.sealed_with)
			fprintf(stderr, "; sealed with %s, %llu pages changed on the device",
				ss.sealed_with == USWAP_SEALED_AES256GCM ? "AES-256-GCM" :
				"XChaCha20-Poly1305", (unsigned long long)ss.sealed_changed);
		fputc('\n', stderr);
	}
}
