/* SPDX-License-Identifier: MIT */
/*
 * Per-device figures of the mm benches: each workload run swaps its own
 * devices on and off, so the figures are taken when a device's backend is
 * destroyed at swapoff (swap_backend_set_observer(): its counters are final
 * then, nothing in flight). Per device, keyed by its description
 * (swap_backend_describe()): pages written and read (successful requests'
 * bytes / 4096), failed requests, and for an NBD device the read and write
 * latency (issue to reply, p50/p99), the commands in flight (max, mean)
 * and reconnects. Over several runs, each figure's median (with min and
 * max for the page counts).
 *
 * The workload result struct (<uswap/workload.h>) has a fixed layout and
 * no room for a list of devices; these figures stay in the CLI.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"
#include "io/backend.h"

#define DEV_MAX		16
#define DEV_MAX_RUNS	100

enum dev_fig {
	F_OUT, F_IN, F_ERR, F_RP50, F_RP99, F_WP50, F_WP99, F_MAXQ, F_AVGQ, F_RECON, F_NR
};

struct bench_dev {
	const char *design;		/* "table", "legacy", or "" (not said) */
	char desc[256];
	bool nbd;
	char state[16];			/* NBD: as of the last run */
	unsigned int n;			/* runs recorded */
	double v[F_NR][DEV_MAX_RUNS];
};

static struct {
	pthread_mutex_t lock;
	const char *design;		/* of the runs now; NULL: not recorded */
	unsigned int nr;
	struct bench_dev dev[DEV_MAX];
} devs = { .lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * The observer: record @be's final figures as one run of its device.
 * Context: swapoff's thread (any), before the backend is released; takes
 * devs.lock. Return: nothing.
 */
static void dev_destroyed(struct swap_backend *be, void *arg)
{
	struct swap_backend_stats bs;
	struct swap_nbd_stats ns;
	struct bench_dev *d = NULL;
	unsigned int i, k;

	(void)arg;
	swap_backend_get_stats(be, &bs);
	pthread_mutex_lock(&devs.lock);
	if (!devs.design)
		goto out;
	for (i = 0; i < devs.nr && !d; i++)
		if (!strcmp(devs.dev[i].desc, swap_backend_describe(be)) &&
		    !strcmp(devs.dev[i].design, devs.design))
			d = &devs.dev[i];
	if (!d && devs.nr < DEV_MAX) {
		d = &devs.dev[devs.nr++];
		memset(d, 0, sizeof(*d));
		d->design = devs.design;
		snprintf(d->desc, sizeof(d->desc), "%s", swap_backend_describe(be));
	}
	if (!d || d->n == DEV_MAX_RUNS)
		goto out;
	k = d->n++;
	d->v[F_OUT][k] = (double)(bs.write_bytes >> SWAP_BACKEND_PAGE_SHIFT);
	d->v[F_IN][k] = (double)(bs.read_bytes >> SWAP_BACKEND_PAGE_SHIFT);
	d->v[F_ERR][k] = (double)bs.errors;
	if (!swap_backend_nbd_stats(be, &ns)) {
		d->nbd = true;
		snprintf(d->state, sizeof(d->state), "%s", ns.state);
		d->v[F_RP50][k] = (double)ns.read_p50_us;
		d->v[F_RP99][k] = (double)ns.read_p99_us;
		d->v[F_WP50][k] = (double)ns.write_p50_us;
		d->v[F_WP99][k] = (double)ns.write_p99_us;
		d->v[F_MAXQ][k] = (double)ns.max_inflight;
		d->v[F_AVGQ][k] = ns.avg_inflight;
		d->v[F_RECON][k] = (double)ns.reconnects;
	}
out:
	pthread_mutex_unlock(&devs.lock);
}

static const struct swap_backend_observer dev_observer = { .destroy = dev_destroyed };

/**
 * bench_devices_start() - forget earlier devices and record every backend
 * destroyed from now on (the devices a workload swaps off).
 * Context: the bench thread, before the runs. Return: nothing.
 */
void bench_devices_start(void)
{
	pthread_mutex_lock(&devs.lock);
	devs.nr = 0;
	devs.design = "";
	pthread_mutex_unlock(&devs.lock);
	swap_backend_set_observer(&dev_observer);
}

/**
 * bench_devices_design() - file the devices of the runs that follow under
 * @design ("table" or "legacy", a string that outlives the bench), or with
 * NULL record none of them (warm-up runs).
 * Context: the bench thread, between runs. Return: nothing.
 */
void bench_devices_design(const char *design)
{
	pthread_mutex_lock(&devs.lock);
	devs.design = design;
	pthread_mutex_unlock(&devs.lock);
}

/* Median, min and max of figure @f of @d. Context: devs.lock. Return: nothing. */
static void dev_fig(const struct bench_dev *d, enum dev_fig f, struct bench_summary *s)
{
	double v[DEV_MAX_RUNS];

	memcpy(v, d->v[f], d->n * sizeof(v[0]));
	s->median = bench_median(v, d->n);	/* sorts v */
	s->min = v[0];
	s->max = v[d->n - 1];
}

/* The pages written to the devices of @design, medians summed. Context:
 * devs.lock. Return: the sum. */
static double total_out(const char *design)
{
	struct bench_summary s;
	double t = 0;
	unsigned int i;

	for (i = 0; i < devs.nr; i++) {
		if (strcmp(devs.dev[i].design, design))
			continue;
		dev_fig(&devs.dev[i], F_OUT, &s);
		t += s.median;
	}
	return t;
}

static void json_desc(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/**
 * bench_devices_print() - the per-device figures recorded since
 * bench_devices_start(), and stop recording.
 * @f: the output, or NULL to print nothing
 * @json: print `,"devices":[...]` (a member for the caller's JSON object)
 *        instead of text lines
 *
 * Context: the bench thread, after the runs (no swapoff running).
 * Return: nothing.
 */
void bench_devices_print(FILE *f, bool json)
{
	struct bench_summary s[F_NR];
	double all;
	unsigned int i, k;

	swap_backend_set_observer(NULL);
	pthread_mutex_lock(&devs.lock);
	if (!f)
		devs.nr = 0;
	if (json && f)
		fputs(",\"devices\":[", f);
	else if (devs.nr)
		fputs("  per device (medians over runs; NBD latency is issue to reply, us):\n", f);
	for (i = 0; i < devs.nr; i++) {
		const struct bench_dev *d = &devs.dev[i];

		all = total_out(d->design);
		for (k = 0; k < F_NR; k++)
			dev_fig(d, k, &s[k]);
		if (json) {
			fputs(i ? ",{" : "{", f);
			if (d->design[0])
				fprintf(f, "\"design\":\"%s\",", d->design);
			fputs("\"device\":", f);
			json_desc(f, d->desc);
			fprintf(f, ",\"runs\":%u,\"pages_out\":%.0f,\"pages_out_min\":%.0f,"
				"\"pages_out_max\":%.0f,\"pages_out_share\":%.4f,\"pages_in\":%.0f,"
				"\"pages_in_min\":%.0f,\"pages_in_max\":%.0f,\"errors\":%.0f",
				d->n, s[F_OUT].median, s[F_OUT].min, s[F_OUT].max,
				all > 0 ? s[F_OUT].median / all : 0, s[F_IN].median, s[F_IN].min,
				s[F_IN].max, s[F_ERR].median);
			if (d->nbd)
				fprintf(f, ",\"nbd\":{\"state\":\"%s\",\"read_p50_us\":%.0f,"
					"\"read_p99_us\":%.0f,\"write_p50_us\":%.0f,"
					"\"write_p99_us\":%.0f,\"max_inflight\":%.0f,"
					"\"avg_inflight\":%.2f,\"reconnects\":%.0f}", d->state,
					s[F_RP50].median, s[F_RP99].median, s[F_WP50].median,
					s[F_WP99].median, s[F_MAXQ].median, s[F_AVGQ].median,
					s[F_RECON].median);
			fputc('}', f);
			continue;
		}
		fprintf(f, "    %s%s%s\n      pages out %.0f [%.0f %.0f] (%.1f%%), in %.0f [%.0f %.0f], "
			"failed requests %.0f\n", d->design, d->design[0] ? ": " : "", d->desc,
			s[F_OUT].median, s[F_OUT].min,
			s[F_OUT].max, all > 0 ? 100.0 * s[F_OUT].median / all : 0.0,
			s[F_IN].median, s[F_IN].min, s[F_IN].max, s[F_ERR].median);
		if (d->nbd)
			fprintf(f, "      nbd %s: read p50 %.0f p99 %.0f, write p50 %.0f p99 %.0f; "
				"in flight max %.0f mean %.2f; reconnects %.0f\n", d->state,
				s[F_RP50].median, s[F_RP99].median, s[F_WP50].median,
				s[F_WP99].median, s[F_MAXQ].median, s[F_AVGQ].median,
				s[F_RECON].median);
	}
	if (json && f)
		fputc(']', f);
	devs.nr = 0;
	pthread_mutex_unlock(&devs.lock);
}
