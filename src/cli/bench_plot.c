/* SPDX-License-Identifier: MIT */
/*
 * uswap bench --plot FILE.svg: the workload's headline figures (throughput
 * or operations per second, latency percentiles, swap-ins and swap-outs),
 * table beside legacy, one panel per figure on its own scale: the bar is
 * the median, the whisker min..max over the runs, and the panel title
 * gives the ratio table/legacy and its 95% interval. A last panel draws
 * every headline ratio with its interval on a log axis around 1. Counters
 * that explain the figures (readahead, retries, bad pages, ...) are in the
 * JSON and the table, not in the picture. Labels are printed as written
 * (gnuplot's enhanced text is off, so '_' is no subscript).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench.h"

#define PLOT_MAX 12

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/**
 * bench_plot_headline() - whether figure @key is one a reader compares:
 * a rate (..._per_s, ..._per_s_median), a latency percentile (p50, p99),
 * or the swap-ins and swap-outs. Context: any. Return: true if so.
 */
bool bench_plot_headline(const char *key)
{
	return ends_with(key, "_per_s") || ends_with(key, "_per_s_median") ||
	       strstr(key, "p50") || strstr(key, "p99") ||
	       !strcmp(key, "swapins") || !strcmp(key, "swapouts");
}

/* One panel's data: two rows (table, legacy) of median, min, max. */
static int write_panel(const char *path, const struct bench_summary *a,
		       const struct bench_summary *b)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "0 table %.9g %.9g %.9g\n", a->median, a->min, a->max);
	if (b)
		fprintf(f, "1 legacy %.9g %.9g %.9g\n", b->median, b->min, b->max);
	return fclose(f) ? -EIO : 0;
}

extern char **environ;

/*
 * Start gnuplot reading its script from a pipe and writing its output to
 * @out_fd (> 2), truncated first. Return: the script's stream and *@pid,
 * or NULL with errno (ENOENT: no gnuplot on PATH).
 */
static FILE *gnuplot_start(int out_fd, pid_t *pid)
{
	char *argv[] = { "gnuplot", NULL };
	posix_spawn_file_actions_t fa;
	int p[2], err;
	FILE *f;

	if (ftruncate(out_fd, 0) || lseek(out_fd, 0, SEEK_SET) < 0 || pipe2(p, O_CLOEXEC))
		return NULL;
	err = posix_spawn_file_actions_init(&fa);
	if (!err) {
		err = posix_spawn_file_actions_adddup2(&fa, p[0], 0);
		if (!err)
			err = posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
		if (!err)
			err = posix_spawnp(pid, "gnuplot", &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	close(p[0]);
	f = err ? NULL : fdopen(p[1], "w");
	if (!f) {
		err = err ? err : errno;
		close(p[1]);
		if (*pid > 0)
			waitpid(*pid, NULL, 0);
		errno = err;
	}
	return f;
}

/**
 * bench_plot_svg() - draw the runs of @t (and @l, NULL for one design)
 * as SVG into @out_fd (an opened --plot file, rewritten whole) with
 * gnuplot (see the file comment).
 * Context: process context; runs gnuplot. Return: 0, -ENOENT (no
 * gnuplot), -EIO (gnuplot failed), -errno of a temporary file.
 */
int bench_plot_svg(int out_fd, const struct bench_opts *o, const struct bench_result *t,
		   unsigned int nt, const struct bench_result *l, unsigned int nl)
{
	char dir[] = "/tmp/uswap-plot-XXXXXX", file[PLOT_MAX + 1][64];
	const char *keys[PLOT_MAX];
	double q[PLOT_MAX], lo[PLOT_MAX], hi[PLOT_MAX];
	unsigned int n = 0, j, cols, rows, panels;
	pid_t pid = -1;
	FILE *gp, *f;
	int rc = 0, status;

	if (!mkdtemp(dir))
		return -errno;
	for (j = 0; nt && j < t[0].n && n < PLOT_MAX; j++)
		if (bench_plot_headline(t[0].m[j].key))
			keys[n++] = t[0].m[j].key;
	for (j = 0; j < n && !rc; j++) {
		struct bench_summary a = bench_figure(t, nt, keys[j]), b;

		snprintf(file[j], sizeof(file[j]), "%s/%u.dat", dir, j);
		q[j] = lo[j] = hi[j] = NAN;
		if (l) {
			b = bench_figure(l, nl, keys[j]);
			if (nl == nt)
				bench_compare(t, l, nt, keys[j], &q[j], &lo[j], &hi[j]);
		}
		rc = write_panel(file[j], &a, l ? &b : NULL);
	}
	/* The ratios, one row each: index, name, ratio, low, high. */
	snprintf(file[n], sizeof(file[n]), "%s/ratio.dat", dir);
	f = rc ? NULL : fopen(file[n], "w");
	if (!rc && !f)
		rc = -errno;
	for (j = 0; f && j < n; j++)
		if (isfinite(q[j]) && q[j] > 0 && isfinite(lo[j]) && lo[j] > 0 && isfinite(hi[j]))
			fprintf(f, "%u %s %.9g %.9g %.9g\n", j, keys[j], q[j], lo[j], hi[j]);
	if (f && fclose(f))
		rc = -EIO;
	panels = n + (l ? 1 : 0);
	if (rc || !panels)
		goto out;
	cols = panels < 3 ? panels : 3;
	rows = (panels + cols - 1) / cols;
	gp = gnuplot_start(out_fd, &pid);
	if (!gp) {
		rc = -errno;
		goto out;
	}
	fprintf(gp, "set terminal svg size %u,%u dynamic noenhanced font 'sans,11'\n"
		    "set output\nset termoption noenhanced\n"
		    "set multiplot layout %u,%u title 'uswap bench %s: table vs legacy, "
		    "median with min..max over %u runs each'\n"
		    "set style fill solid 0.6 border -1\nset boxwidth 0.6\nset grid ytics\n"
		    "set xrange [-0.6:1.6]\nset yrange [0:*]\nunset key\n",
		    360 * cols, 300 * rows + 40, rows, cols, o->workload, nt);
	for (j = 0; j < n; j++) {
		if (l && isfinite(q[j]))
			fprintf(gp, "set title \"%s\\nt/l %.3f, 95%% [%.3f, %.3f]%s\"\n", keys[j],
				q[j], lo[j], hi[j], lo[j] <= 1 && hi[j] >= 1 ? ", no difference" : "");
		else
			fprintf(gp, "set title \"%s\"\n", keys[j]);
		fprintf(gp, "plot '%s' using 1:3:($1==0?0x4477aa:0xcc6677):xtic(2) with boxes "
			    "lc rgb variable, '' using 1:3:4:5 with yerrorbars lc rgb 'black' pt 0\n",
			file[j]);
	}
	if (l) {
		/* Figures down the side, ratios across on a log axis. */
		fprintf(gp, "set title 't/l, 95%% interval, log axis'\n"
			    "set logscale x\nset xrange [*:*]\nset yrange [-0.6:%u.6] reverse\n"
			    "set ytics font 'sans,9'\nunset xtics\nset xtics\nset grid xtics\n"
			    "set lmargin 22\nset arrow from 1, graph 0 to 1, graph 1 nohead "
			    "lc rgb 'gray40' dt 2\n"
			    "plot '%s' using 3:1:4:5:ytic(2) with xerrorbars pt 7 ps 1.0 "
			    "lc rgb 'black', '' using 3:1 with points pt 7 ps 1.0 lc rgb 'black'\n",
			n ? n - 1 : 0, file[n]);
	}
	fprintf(gp, "unset multiplot\n");
	rc = fclose(gp) ? -EIO : 0;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		rc = -EIO;
out:
	for (j = 0; j <= n; j++)
		unlink(file[j]);
	rmdir(dir);
	return rc;
}
