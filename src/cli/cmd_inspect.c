/* SPDX-License-Identifier: MIT */
/*
 * uswap inspect: read a swap area's header, say whether swapon (uswap's,
 * which also takes bad pages on files) would accept it, and what the
 * device would cost in static cluster metadata. The area is a file, a
 * block device, or an NBD export (nbd:// or nbd+unix:// URI): for an
 * export, also what the connection offers and the read latency of a few
 * probe reads.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "io/backend.h"
#include "swap/swap_header.h"
#include <uswap/legacy.h>
#include <uswap/swap.h>
#include "swap/swap_internal.h"
#include "util/uuid.h"

#define PROG "uswap inspect"

struct inspect_result {
	const char *path;
	struct uswap_swap_header h;
	bool parsed;			/* h holds a parsed header */
	bool valid;			/* and it passed validation */
	uint64_t file_pages;
	uint64_t usable_pages;		/* valid only */
	uint64_t max_slots;		/* valid only */
	uint64_t clusters;		/* valid only */
	uint64_t static_bytes;		/* valid only; the reported design's */
	/* --design: measured on a real swapon of the file with that design */
	const char *design;
	bool measured;
	uint64_t m_static, m_cluster_array, m_map, m_dynamic;
	uint64_t m_cgroup, m_zeromap;	/* the old design's static per-slot arrays */
	/* an NBD export: the connection and the probe reads */
	bool nbd;
	struct swap_nbd_stats ns;	/* state is a static string */
	unsigned int probes;		/* single-page reads, one at a time */
	char nbd_desc[256];
	char err[256];
};

#define NBD_PROBES	32

/* Whether @path names an NBD export. Context: any. Return: true if so. */
static bool is_nbd_uri(const char *path)
{
	return !strncmp(path, "nbd://", 6) || !strncmp(path, "nbd+unix://", 11);
}

/*
 * The header of an NBD export, as uswap_swap_header_read_file() reads a
 * file's: slot 0 through the NBD backend, then NBD_PROBES single-page reads
 * spread over the export, one at a time, whose latency the backend records.
 * Context: process context; connects and blocks.
 * Return: 0 (the header parsed), or -errno with @r->err filled.
 */
static int read_nbd(struct inspect_result *r)
{
	struct swap_backend *be = NULL;
	void *page = aligned_alloc(SWAP_BACKEND_PAGE_SIZE, SWAP_BACKEND_PAGE_SIZE);
	unsigned int i;
	int ret;

	if (!page) {
		snprintf(r->err, sizeof(r->err), "out of memory");
		return -ENOMEM;
	}
	ret = swap_backend_nbd_open(r->path, NULL, &be, r->err, sizeof(r->err));
	if (ret)
		goto out;
	r->nbd = true;
	r->file_pages = be->nr_slots;
	snprintf(r->nbd_desc, sizeof(r->nbd_desc), "%s", swap_backend_describe(be));
	ret = swap_backend_read(be, 0, 1, page);
	if (ret) {
		snprintf(r->err, sizeof(r->err), "cannot read the header: %s", strerror(-ret));
		goto out;
	}
	ret = uswap_swap_header_parse(page, &r->h, r->err, sizeof(r->err));
	for (i = 1; !ret && i <= NBD_PROBES; i++) {
		if (swap_backend_read(be, be->nr_slots * i / (NBD_PROBES + 1), 1, page))
			break;
		r->probes++;
	}
	swap_backend_nbd_stats(be, &r->ns);
out:
	swap_backend_destroy(be);
	free(page);
	return ret;
}

/*
 * Swap the file on with @r->design, read what the device allocated, swap
 * it off. The old design's per-slot arrays beside its map (the 2-byte
 * memcg id and the zero-page bit) are measured with it; the table design
 * keeps both in its tables (dynamic).
 */
static int measure_design(struct inspect_result *r)
{
	struct uswap_legacy_stat ls;
	struct uswap_swap_stat st;
	char err[256] = "", spec[4200];
	int type;

	snprintf(spec, sizeof(spec), r->nbd ? "%s" : "file:%s", r->path);
	type = uswap_swapon_spec_design(spec, 0, r->design, err, sizeof(err));
	if (type < 0) {
		/* Bounded so that the whole message fits r->err (256). */
		snprintf(r->err, sizeof(r->err), "swapon with the %.16s design: %.200s", r->design,
			 err[0] ? err : strerror(-type));
		return type;
	}
	if (uswap_swap_stat((unsigned int)type, &st) == 0) {
		r->m_static = st.static_bytes;
		r->m_dynamic = st.dynamic_bytes;
		r->m_cluster_array = uswap_swap_static_metadata_bytes(st.max);
		memset(&ls, 0, sizeof(ls));
		uswap_legacy_stat((unsigned int)type, &ls);
		r->m_map = ls.map_bytes;
		r->m_cgroup = ls.swap_cgroup_bytes;
		r->m_zeromap = ls.zeromap_bytes;
		r->measured = true;
	}
	return uswap_swapoff_type((unsigned int)type);
}

static void print_metadata_json(FILE *out, const struct inspect_result *r)
{
	fprintf(out, "  \"design\": \"%s\",\n  \"metadata\": {\"static_bytes\": %llu, "
		"\"cluster_array_bytes\": %llu, \"swap_map_bytes\": %llu, "
		"\"swap_cgroup_bytes\": %llu, \"zeromap_bytes\": %llu, "
		"\"static_bytes_per_slot\": %.4f, \"dynamic_bytes\": %llu},\n", r->design,
		(unsigned long long)r->m_static, (unsigned long long)r->m_cluster_array,
		(unsigned long long)r->m_map, (unsigned long long)r->m_cgroup,
		(unsigned long long)r->m_zeromap,
		r->max_slots ? (double)r->m_static / (double)r->max_slots : 0.0,
		(unsigned long long)r->m_dynamic);
}

/* A JSON string: quotes, backslashes and bytes outside printable ASCII escaped. */
static void json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

/* The label for people: non-printable bytes as \xNN. */
static void text_label(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!*p) {
		fputs("(none)", out);
		return;
	}
	for (; *p; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '\\')
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
}

static void print_json(FILE *out, const struct inspect_result *r)
{
	char uuid[USWAP_UUID_STR_SIZE];
	uint32_t i;

	fprintf(out, "{\n  \"valid\": %s,\n", r->valid ? "true" : "false");
	if (!r->valid) {
		fputs("  \"error\": ", out);
		json_string(out, r->err);
		fputs(",\n", out);
	}
	if (!r->parsed) {
		fputs("  \"version\": null,\n  \"byteswapped\": null,\n  \"last_page\": null,\n"
		      "  \"nr_badpages\": null,\n  \"badpages\": null,\n  \"label\": null,\n"
		      "  \"uuid\": null,\n", out);
	} else {
		uswap_uuid_format(r->h.uuid, uuid);
		fprintf(out, "  \"version\": %u,\n  \"byteswapped\": %s,\n  \"last_page\": %u,\n"
			"  \"nr_badpages\": %u,\n  \"badpages\": [",
			r->h.version, r->h.byteswapped ? "true" : "false", r->h.last_page,
			r->h.nr_badpages);
		for (i = 0; i < r->h.nr_badpages; i++)
			fprintf(out, "%s%u", i ? ", " : "", r->h.badpages[i]);
		fputs("],\n  \"label\": ", out);
		json_string(out, r->h.label);
		fprintf(out, ",\n  \"uuid\": \"%s\",\n", uuid);
	}
	if (r->measured)
		print_metadata_json(out, r);
	if (r->nbd)
		fprintf(out, "  \"nbd\": {\"structured_replies\": %s, \"trim\": %s, "
			"\"probe_reads\": %u, \"read_p50_us\": %llu, \"read_p99_us\": %llu},\n",
			r->ns.structured ? "true" : "false", r->ns.can_trim ? "true" : "false",
			r->probes, (unsigned long long)r->ns.read_p50_us,
			(unsigned long long)r->ns.read_p99_us);
	if (r->valid)
		fprintf(out, "  \"usable_pages\": %llu,\n  \"clusters\": %llu,\n"
			"  \"static_metadata_bytes\": %llu\n}\n",
			(unsigned long long)r->usable_pages, (unsigned long long)r->clusters,
			(unsigned long long)r->static_bytes);
	else
		fputs("  \"usable_pages\": null,\n  \"clusters\": null,\n"
		      "  \"static_metadata_bytes\": null\n}\n", out);
}

static void print_text(FILE *out, const struct inspect_result *r)
{
	char uuid[USWAP_UUID_STR_SIZE];
	uint32_t i;

	fprintf(out, "%s:\n", r->path);
	if (r->parsed) {
		uswap_uuid_format(r->h.uuid, uuid);
		fprintf(out, "  version:          %u%s\n", r->h.version,
			r->h.byteswapped ? " (other byte order)" : "");
		fprintf(out, "  last_page:        %u (%llu pages with the header)\n",
			r->h.last_page, (unsigned long long)r->h.last_page + 1);
		fprintf(out, "  %s        %llu pages\n", r->nbd ? "export:   " : "file size:",
			(unsigned long long)r->file_pages);
		if (r->nbd)
			fprintf(out, "  nbd:              %s; %u probe reads (one at a time, "
				"1 page), latency p50 %llu us, p99 %llu us\n", r->nbd_desc,
				r->probes, (unsigned long long)r->ns.read_p50_us,
				(unsigned long long)r->ns.read_p99_us);
		fputs("  label:            ", out);
		text_label(out, r->h.label);
		fprintf(out, "\n  uuid:             %s\n", uuid);
		fprintf(out, "  bad pages:        %u", r->h.nr_badpages);
		for (i = 0; i < r->h.nr_badpages; i++)
			fprintf(out, "%s%u", i ? ", " : ": ", r->h.badpages[i]);
		fputc('\n', out);
	}
	if (r->valid) {
		fprintf(out, "  usable pages:     %llu (%llu KiB)\n",
			(unsigned long long)r->usable_pages,
			(unsigned long long)(r->usable_pages * USWAP_SWAP_HEADER_SIZE / 1024));
		fprintf(out, "  clusters:         %llu of %d slots\n",
			(unsigned long long)r->clusters, SWAPFILE_CLUSTER);
		fprintf(out, "  static metadata:  %llu bytes\n",
			(unsigned long long)r->static_bytes);
		if (r->measured) {
			fprintf(out, "  %s design, measured on swapon:\n", r->design);
			fprintf(out, "    static:         %llu bytes, %.3f per slot (cluster array %llu, "
				"swap_map %llu, swap_cgroup %llu, zeromap %llu)\n",
				(unsigned long long)r->m_static,
				r->max_slots ? (double)r->m_static / (double)r->max_slots : 0.0,
				(unsigned long long)r->m_cluster_array,
				(unsigned long long)r->m_map, (unsigned long long)r->m_cgroup,
				(unsigned long long)r->m_zeromap);
			fprintf(out, "    dynamic:        %llu bytes (swap tables with their memcg "
				"ids, extend tables, continuation pages)\n",
				(unsigned long long)r->m_dynamic);
		}
		fputs("  verdict:          valid swap area\n", out);
	} else {
		fprintf(out, "  verdict:          invalid: %s\n", r->err);
	}
}

static void warn_permissions(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH))
		fprintf(stderr, PROG ": warning: %s is readable or writable by group/others "
			"(mode %04o): a swap area holds process memory; use chmod 0600\n",
			path, (unsigned int)(st.st_mode & 07777));
}

static void inspect_usage(FILE *out)
{
	fprintf(out,
		"usage: uswap inspect [--json] [--design table|legacy] FILE|URI\n"
		"\n"
		"Read the swap header of FILE (a regular file or block device) or of an\n"
		"NBD export (nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH),\n"
		"check it as swapon does, and show its fields, the usable pages, the\n"
		"clusters and the static cluster metadata a device of that size needs.\n"
		"For an export, also what the server offers and the latency (p50, p99)\n"
		"of a few single-page reads.\n"
		"With --design, swap FILE on with that slot design and report the\n"
		"metadata the device really allocated, then swap it off.\n"
		"Exit status 0 if the area is valid, 1 if not (the reason on stderr).\n");
}

/**
 * inspect_parse_args() - the options of "uswap inspect"
 * @argc: argument count, argv[0] ("inspect") included
 * @argv: the arguments; getopt_long() state is global (optind)
 * @json: set if --json was given
 * @design: the --design (table or legacy), or NULL
 * @path: the FILE or URI
 *
 * Parses only: opens nothing.
 * Context: option parsing. Return: 0 (inspect it), 1 (--help printed), or
 * -EINVAL (the message or the usage printed).
 */
int inspect_parse_args(int argc, char **argv, bool *json, const char **design,
		       const char **path)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "design", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*json = false;
	*design = NULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			*json = true;
			break;
		case 'd':
			if (strcmp(optarg, "table") && strcmp(optarg, "legacy")) {
				fprintf(stderr, PROG ": --design must be table or legacy\n");
				return -EINVAL;
			}
			*design = optarg;
			break;
		case 'h':
			inspect_usage(stdout);
			return 1;
		default:
			inspect_usage(stderr);
			return -EINVAL;
		}
	}
	if (argc - optind != 1) {
		inspect_usage(stderr);
		return -EINVAL;
	}
	*path = argv[optind];
	return 0;
}

/**
 * cmd_inspect() - the "uswap inspect" subcommand
 * @argc: argument count, argv[0] included
 * @argv: "inspect", optional --json, FILE
 *
 * Context: process context; blocking I/O.
 * Return: exit status: 0 valid swap area, 1 invalid or unreadable (or a
 * usage error).
 */
int cmd_inspect(int argc, char **argv)
{
	static struct inspect_result r;
	const char *design, *path;
	bool json;
	int ret;

	ret = inspect_parse_args(argc, argv, &json, &design, &path);
	if (ret)
		return ret > 0 ? 0 : 1;
	memset(&r, 0, sizeof(r));
	r.path = path;
	r.design = design;

	if (is_nbd_uri(r.path)) {
		r.parsed = !read_nbd(&r);
	} else {
		warn_permissions(r.path);
		r.parsed = !uswap_swap_header_read_file(r.path, &r.h, &r.file_pages,
							 r.err, sizeof(r.err));
	}
	if (r.parsed)
		r.valid = !uswap_swap_header_validate(&r.h, r.file_pages, &r.usable_pages,
						      &r.max_slots, r.err, sizeof(r.err));
	if (r.valid) {
		r.clusters = (r.max_slots + SWAPFILE_CLUSTER - 1) / SWAPFILE_CLUSTER;
		r.static_bytes = uswap_swap_static_metadata_bytes(r.max_slots);
		if (design && measure_design(&r))
			r.valid = false;
		/* The headline figure is the chosen design's, not the table's. */
		if (r.measured)
			r.static_bytes = r.m_static;
	}

	if (json)
		print_json(stdout, &r);
	else
		print_text(stdout, &r);
	if (!r.valid)
		fprintf(stderr, PROG ": %s: invalid swap area: %s\n", r.path, r.err);
	return r.valid ? 0 : 1;
}
