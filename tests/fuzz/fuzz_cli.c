/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the option parsing of the uswap commands, apart from their work.
 * Input: one byte choosing the command (run, stat, bench, inspect, mkswap),
 * then its arguments separated by NUL bytes (at most MAX_ARGS). Each parse
 * runs twice on fresh copies of the arguments, with getopt's global state
 * reset; checked, any divergence aborting:
 * - the result is 0 (go on), 1 (--help) or an error, the same both times,
 *   with the same parsed values;
 * - a parse that goes on leaves values in range: sizes of at least 1 MiB
 *   (run), counts at least 1 (bench), designs, policies and workloads that
 *   exist, at most the maximum of --swap specs, each within its length,
 *   labels of at most 15 bytes, at most 637 bad pages, every string one of
 *   the arguments, the remaining arguments the tail of argv;
 * - nothing runs: the functions the commands would call next abort here.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cli/bench.h"
#include "cli/outfile.h"
#include "runtime/runtime.h"
#include "cli/cmd_mkswap.c"	/* its static parse_args() */

#define CHECK(cond) do { if (!(cond)) abort(); } while (0)
#define MAX_ARGS	24

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The work after the parse: never reached from here. */
int uswap_runtime_run(const struct uswap_run_config *cfg) { abort(); }
int uswap_runtime_stat(pid_t pid, bool json) { abort(); }
int cli_open_output(const char *what, const char *path, bool *created) { abort(); }
int bench_swapio(const struct bench_opts *o) { abort(); }
int bench_usemem(const struct bench_opts *o) { abort(); }
int bench_bgsave(const struct bench_opts *o) { abort(); }
int bench_build(const struct bench_opts *o) { abort(); }
int bench_random(const struct bench_opts *o) { abort(); }
int bench_sharedfault(const struct bench_opts *o) { abort(); }

static const char *const bench_names[] = {
	"swapio", "usemem", "bgsave", "build", "random", "sharedfault",
};

/*
 * glibc keeps a pointer into the last argv it parsed (the rest of a group
 * of short options) unless optind is 0 at the next call; the commands set
 * optind = 1, so a parse that stopped in a group would resume in freed
 * memory. One empty parse with optind 0 forgets it.
 */
static void getopt_reset(void)
{
	static char arg0[] = "reset";
	char *av[] = { arg0, NULL };

	optind = 0;
	while (getopt(1, av, "") != -1)
		;
	optind = 0;
}

/* Whether @s points into one of the arguments. */
static bool in_args(const char *s, char *const *argv, int argc)
{
	int i;

	for (i = 0; i < argc; i++)
		if (s >= argv[i] && s <= argv[i] + strlen(argv[i]))
			return true;
	return false;
}

struct parsed {
	int ret;
	union {
		struct uswap_run_config run;
		struct { bool json; uint64_t pid; } stat;
		struct { struct bench_opts o; size_t w; } bench;
		struct { bool json; const char *design, *path; } inspect;
		struct mkswap_opts mkswap;
	} u;
	int rest;		/* arguments left after the options */
};

/* Parse @argv with command @cmd; strings in @p point into @argv. */
static void parse(unsigned int cmd, int argc, char **argv, struct parsed *p)
{
	memset(p, 0, sizeof(*p));
	getopt_reset();
	switch (cmd) {
	case 0:
		p->ret = run_parse_args(argc, argv, &p->u.run);
		if (!p->ret) {
			struct uswap_run_config *c = &p->u.run;
			unsigned int i;

			CHECK(c->memory >= 1ULL << 20 && (!c->memory_total ||
							  c->memory_total >= 1ULL << 20));
			CHECK(c->nr_swap <= RT_MAX_SWAP && c->json_fd == -1);
			for (i = 0; i < c->nr_swap; i++)
				CHECK(in_args(c->swap[i], argv, argc) && strlen(c->swap[i]) <= 511);
			CHECK(!strcmp(c->design, "table") || !strcmp(c->design, "legacy"));
			CHECK(c->policy == RT_EVICT_LRU || c->policy == RT_EVICT_FIFO);
			CHECK(c->poll_us <= 10000);
			CHECK(!c->json || in_args(c->json, argv, argc));
			CHECK(optind < argc && c->argv == argv + optind);
		}
		break;
	case 1:
		p->ret = stat_parse_args(argc, argv, &p->u.stat.json, &p->u.stat.pid);
		if (!p->ret)
			CHECK(p->u.stat.pid >= 1 && p->u.stat.pid <= INT_MAX &&
			      argc == 2 + p->u.stat.json);
		break;
	case 2:
		p->ret = bench_parse_args(argc, argv, &p->u.bench.o, &p->u.bench.w);
		if (!p->ret) {
			struct bench_opts *o = &p->u.bench.o;

			CHECK(p->u.bench.w < sizeof(bench_names) / sizeof(bench_names[0]));
			CHECK(!strcmp(o->workload, bench_names[p->u.bench.w]));
			CHECK(!strcmp(o->design, "table") || !strcmp(o->design, "legacy") ||
			      !strcmp(o->design, "both"));
			CHECK(strcmp(o->workload, "swapio") || !strcmp(o->design, "table"));
			CHECK(o->nr_swap <= BENCH_MAX_SWAP && o->runs >= 1);
			CHECK(isfinite(o->seconds) && o->seconds >= 0);
			CHECK(o->argc >= 0 && o->argv + o->argc == argv + argc);
			CHECK(!o->plot || in_args(o->plot, argv, argc));
			o->seed = 0;	/* the clock's by default */
		}
		break;
	case 3:
		p->ret = inspect_parse_args(argc, argv, &p->u.inspect.json, &p->u.inspect.design,
					    &p->u.inspect.path);
		if (!p->ret)
			CHECK(in_args(p->u.inspect.path, argv, argc) &&
			      (!p->u.inspect.design || !strcmp(p->u.inspect.design, "table") ||
			       !strcmp(p->u.inspect.design, "legacy")));
		break;
	default:
		p->ret = parse_args(argc, argv, &p->u.mkswap);
		if (!p->ret) {
			struct mkswap_opts *o = &p->u.mkswap;

			CHECK(o->path && in_args(o->path, argv, argc));
			CHECK(!o->size_arg || in_args(o->size_arg, argv, argc));
			CHECK(memchr(o->label, '\0', sizeof(o->label)));
			CHECK(o->has_label == (o->label[0] != '\0'));
			CHECK(o->nr_bad <= MAX_SWAP_BADPAGES);
			memset(o->uuid, 0, sizeof(o->uuid));	/* random by default */
		}
		break;
	}
	CHECK(p->ret == 0 || p->ret == 1 || p->ret < 0);
	p->rest = argc - optind;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const cmds[] = { "run", "stat", "bench", "inspect", "mkswap" };
	static struct parsed pa, pb;
	char *abuf, *bbuf, *av[MAX_ARGS + 2], *bv[MAX_ARGS + 2];
	unsigned int cmd;
	size_t i, start;
	int argc = 1;

	if (!size)
		return 0;
	cmd = data[0] % 5;
	data++;
	size--;
	/* Two copies, each argument NUL-terminated; argv[0] the command. */
	abuf = malloc(size + 1 + 8);
	bbuf = malloc(size + 1 + 8);
	CHECK(abuf && bbuf);
	strcpy(abuf, cmds[cmd]);
	strcpy(bbuf, cmds[cmd]);
	av[0] = abuf;
	bv[0] = bbuf;
	memcpy(abuf + 8, data, size);
	abuf[8 + size] = '\0';
	memcpy(bbuf + 8, data, size);
	bbuf[8 + size] = '\0';
	for (start = 0, i = 0; size && i <= size && argc <= MAX_ARGS; i++) {
		if (i < size && data[i])
			continue;
		av[argc] = abuf + 8 + start;
		bv[argc] = bbuf + 8 + start;
		argc++;
		start = i + 1;
	}
	av[argc] = NULL;
	bv[argc] = NULL;

	parse(cmd, argc, av, &pa);
	parse(cmd, argc, bv, &pb);
	CHECK(pa.ret == pb.ret && pa.rest == pb.rest);
	if (!pa.ret && cmd == 0) {
		CHECK(pa.u.run.argv - av == pb.u.run.argv - bv);
		CHECK(pa.u.run.memory == pb.u.run.memory && pa.u.run.nr_swap == pb.u.run.nr_swap &&
		      pa.u.run.poll_us == pb.u.run.poll_us && pa.u.run.policy == pb.u.run.policy &&
		      pa.u.run.memory_total == pb.u.run.memory_total);
	} else if (!pa.ret && cmd == 2) {
		CHECK(pa.u.bench.w == pb.u.bench.w && pa.u.bench.o.memory == pb.u.bench.o.memory &&
		      pa.u.bench.o.size == pb.u.bench.o.size && pa.u.bench.o.runs == pb.u.bench.o.runs &&
		      pa.u.bench.o.threads == pb.u.bench.o.threads &&
		      pa.u.bench.o.procs == pb.u.bench.o.procs);
	} else if (!pa.ret && cmd == 3) {
		CHECK(!strcmp(pa.u.inspect.path, pb.u.inspect.path) &&
		      pa.u.inspect.json == pb.u.inspect.json);
	} else if (!pa.ret && cmd == 4) {
		CHECK(!memcmp(&pa.u.mkswap.bad, &pb.u.mkswap.bad, sizeof(pa.u.mkswap.bad)) &&
		      pa.u.mkswap.nr_bad == pb.u.mkswap.nr_bad &&
		      !strcmp(pa.u.mkswap.label, pb.u.mkswap.label) &&
		      pa.u.mkswap.force == pb.u.mkswap.force);
	}
	free(abuf);
	free(bbuf);
	return 0;
}
