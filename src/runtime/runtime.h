/* SPDX-License-Identifier: MIT */
/*
 * The runtime layer: `uswap run`'s supervisor (docs/RUNTIME.md). The cli
 * calls uswap_runtime_run(); the rest is shared by the supervisor's files.
 */
#ifndef USWAP_RUNTIME_RUNTIME_H
#define USWAP_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <uswap/uswap.h>
#include "runtime/counters.h"
#include "runtime/lru.h"
#include "runtime/pagetab.h"
#include "runtime/proto.h"
#include "runtime/ranges.h"

#define RT_MAX_SWAP	8

struct uswap_run_config {
	uint64_t memory;			/* budget of resident bytes */
	const char *swap[RT_MAX_SWAP];		/* device specs, ",prio=N" allowed */
	unsigned int nr_swap;
	const char *design;			/* "table" or "legacy" */
	bool stats;				/* print counters at the end */
	const char *json;			/* --json FILE (for messages), or NULL */
	int json_fd;				/* ... opened by the cli at start-up
						 * (never through a final symlink):
						 * the counters are written there at the
						 * end, or -1 */
	char **argv;				/* the program */
	bool no_fork_events;			/* rtfork: the prefork path even when
						 * fork events are available */
	/* cold pages */
	uint64_t memory_total;			/* bound of resident + compressed bytes, 0 none */
	int policy;				/* enum rt_evict_policy */
	uint64_t poll_us;			/* busy-poll after a fault, 0 none */
	bool verbose;				/* -v: the start-up check even when all is there */
};

/**
 * uswap_runtime_run() - run @cfg->argv under a budget (docs/RUNTIME.md).
 * Context: the process's only thread; forks the program, returns when the
 * program and every process of its tree that connected have exited.
 * Return: the program's exit status (128 + signal when killed), or 1 when
 * the runtime could not start (a message says why).
 */
int uswap_runtime_run(const struct uswap_run_config *cfg);

/**
 * uswap_runtime_stat() - print the live counters of the `uswap run` that
 * serves process @pid (found through its environment), as JSON or as
 * "name value" lines.
 * Context: any; connects to the supervisor's socket.
 * Return: 0; -ENOENT (@pid is not under uswap run), -errno.
 */
int uswap_runtime_stat(pid_t pid, bool json);

#define RT_LAT_BUCKETS	32	/* fault latency: bucket b holds [2^b, 2^(b+1)) us */

/* The counters (counters.h lists them), and the fault latency histogram. */
struct rt_stats {
#define RT_STAT_FIELD(kind, name, json, line, text, desc)	uint64_t name;
	RT_STATS(RT_STAT_FIELD)
#undef RT_STAT_FIELD
	uint64_t lat[RT_LAT_BUCKETS];		/* faults by time from read to served */
};

#define RT_STEP_PAGES	8	/* pages of an answered batch stored per loop turn */
#define RT_MIRROR_CHUNK	(1U << 16)	/* pages per mirror mapping (256 MiB) */
#define RT_MIRROR_MAX	256		/* mirror mappings per process (64 GiB) */

/* A fault not served yet, and when it was read (ns, CLOCK_MONOTONIC). */
struct rt_pending {
	uint64_t addr, t0;
};

struct rt_loop;

/* A descriptor the event loop watches (supervisor.c): its epoll data. */
struct rt_ev {
	void (*fn)(struct rt_loop *loop, struct rt_ev *ev, uint32_t events);
						/* its handler; NULL: not watched */
	void *arg;				/* the handler's (the session), or NULL */
	int fd;					/* as registered (while fn is set) */
};

/* One process of the tree. Invariant: nr_resident == number of RESIDENT,
 * EVICTING, DEAD and UNEVICTABLE entries of tab. */
struct rt_xfer_ctl;

struct rt_session {
	struct rt_session *next;
	struct rt_sup *sup;
	pid_t pid;				/* the kernel's (SO_PEERCRED, a fault's
						 * thread id), never the message's */
	int pidfd;				/* the process, for its OOM kill, or -1 */
	int sock, uffd, pagemap;
	char *xfer;				/* transfer buffer, shared with the agent */
	struct rt_xfer_ctl *ctl;		/* its control page (xfer_ctl.h), or NULL */
	struct rt_ev ev_uffd, ev_sock;		/* uffd and sock in the event loop
						 * (supervisor.c): watched from the turn
						 * after they are made or change, never
						 * after rt_session_destroy() */
	bool uffd_held;				/* the uffd is left unread: the agent holds
						 * the move lock (rt_session_uffd()) */
	uint64_t staging, staging_end;		/* the agent's staging area */
	struct pagetab tab;
	struct rt_fifo fifo;
	uint64_t nr_resident, nr_swapped;
	uint64_t nr_unevictable;		/* PS_UNEVICTABLE entries (in nr_resident) */
	struct rt_ranges ranges;		/* registered ranges */
	struct uswap_mm *mm;			/* the mirror: swapped pages' data */
	uint64_t chunk[RT_MIRROR_MAX];
	unsigned int nr_chunks;
	uint32_t next_idx, *free_idx;
	size_t nr_free, cap_free;
	uint64_t ra_next;			/* the page after the last swap-in run */
	uint32_t ra_win;			/* prefetch window (pages), serve_swapin() */
	bool inflight;				/* an EVICT is out */
	uint32_t batch_n;
	uint64_t batch_addr[RT_BATCH];		/* updated by REMAP */
	/* The answer to the batch out, stored a few pages per turn */
	bool answered;				/* it came; pages [batch_next, batch_n) left */
	uint32_t batch_next, batch_moved;	/* moved: pages it took off the resident count */
	struct rt_evict answer;
	struct rt_pending *pending;		/* faults waiting */
	size_t nr_pending, cap_pending;
	bool prefork, no_evict, dead;
	int wait_why;				/* serve_fault()'s reason to defer */
	bool orphan;				/* the agent's socket closed */
	/* rtfork: a session made by a FORK event (pid 0 and sock -1 until its
	 * first fault names its pid and its shim's RT_HELLO_FORK arrives) */
	bool forked;
	struct rt_session *fork_parent;		/* while fork_wait: whose batch decides */
	bool fork_wait;				/* EVICTING entries wait for that batch */
	bool fork_shared;			/* forked or forked from: pages may be shared */
	uint64_t balance_mark;			/* balance(): asked in that round */
	struct pagetab passed;			/* shared pages passed over once
						 * (rt_fork_pass_shared()); cap 0 until used */
	struct rt_fifo evict_first;		/* pages left to this process alone by
						 * another's eviction of a shared page
						 * (rt_fork_unshared()): evicted next */
	bool agent_up;				/* RT_AGENT_UP came: batches may be sent */
	uint64_t nr_shared;			/* PS_SHARED pages still shared at the
						 * last look (rt_fork_account()) */
	/* Which pages to evict */
	struct rt_lru lru;			/* resident pages: inactive, active */
	uint64_t scan_clock;			/* sup->st.evicted at the last written-bit scan */
	bool wp;				/* ranges registered for WP_ASYNC too */
	uint8_t *dbg_nz;			/* USWAP_DEBUG >= 2: mirror index -> stored non-zero */
	size_t dbg_cap;
};

#define RT_HELLO_WAIT	16		/* connections waiting for their first message */
#define RT_HELLO_NS	2000000000ULL	/* ... closed after this long */

struct rt_sup {
	struct rt_session *sessions;
	struct uswap_mem *mem;
	uint64_t budget, slack;			/* pages */
	uint64_t resident;			/* sum of nr_resident */
	uint64_t unevictable;			/* sum of nr_unevictable */
	uint64_t locked_ns;			/* rt_sup_locked()'s last look */
	uint64_t inflight_pages;
	unsigned int inflight;			/* batches out */
	uint64_t poll_us;			/* --poll-us */
	const struct rt_session *fault_last;	/* whose fault was read last (compared, never
						 * followed: it may be gone) */
	uint64_t fault_switch_ns;		/* when a fault of another process than the
						 * one before was read (CLOCK_MONOTONIC) */
	bool reclaiming;			/* above the high watermark, evicting
						 * down to the low one (balance()) */
	bool stalled;				/* the last batches freed nothing */
	uint64_t balance_mark;			/* balance(): sessions asked this round */
	uint64_t features;
	pid_t child;
	pid_t inherited[16];	/* our children from before the program (a shell's
				 * process substitution): not of the tree */
	unsigned int nr_inherited;
	struct rt_stats st;
	const char *kill_reason;
	const int *types;			/* the devices */
	unsigned int nr_types;
	/* rtfork */
	struct rt_fork_hello *fork_hellos;	/* RT_HELLO_FORKs not matched yet */
	/* Connections accepted whose first message has not come yet: watched
	 * by the event loop, so a client that connects and stalls (a
	 * preempted `uswap stat`) never holds up the faults. */
	struct rt_ev hello[RT_HELLO_WAIT];	/* a slot is free while its fn is NULL */
	uint64_t hello_ns[RT_HELLO_WAIT];	/* accepted at (CLOCK_MONOTONIC) */
	unsigned int nr_hello;			/* slots in use */
	unsigned int refusals;			/* connections refused (said 32 times) */
	unsigned int violations;		/* processes killed for their messages */
	unsigned int nr_fork_hellos;		/* in fork_hellos */
	/* Eviction policy, the resident + compressed bound */
	enum rt_evict_policy policy;
	struct rt_lru_stats lru_st;
	uint64_t resident_budget;		/* pages: --memory */
	uint64_t total;				/* pages: --memory-total, 0 none */
	uint64_t compressed;			/* bytes the compressed devices hold (last read) */
	uint64_t peak_compressed;		/* bytes */
	uint64_t peak_total;			/* pages: resident + compressed, rounded up */
};

bool rt_sup_hello(struct rt_sup *sup, int fd);
int rt_session_create(struct rt_sup *sup, int sock, pid_t pid, int pidfd,
		      const struct rt_hello *h, int uffd, int memfd, struct rt_session **out);
const char *rt_hello_check(const struct rt_hello *h);
int rt_uffd_adopt(int uffd, uint64_t features);
void rt_session_violation(struct rt_session *s, const char *why);
void rt_session_destroy(struct rt_session *s);
int rt_session_uffd(struct rt_session *s);
void rt_session_uffd_error(struct rt_session *s);
char *rt_xfer_map(int memfd);
void rt_session_kill(struct rt_session *s, const char *why);
#define IS_ERR_XFER(x)	((uintptr_t)(x) >= (uintptr_t)-4095)
int rt_session_sock(struct rt_session *s);
bool rt_session_retry(struct rt_session *s);
bool rt_session_batch_step(struct rt_session *s, uint32_t max);
bool rt_session_evict(struct rt_session *s, uint64_t want);
void rt_session_prefork(struct rt_session *s);
bool rt_session_mm_alive(struct rt_session *s);
void rt_session_orphan(struct rt_session *s);
bool rt_sup_reclaim(struct rt_sup *sup);

/* rtfork: fork events (fork.c) */
void rt_fork_event(struct rt_session *parent, int ufd);
void rt_fork_fault(struct rt_session *s, uint32_t ptid);
void rt_fork_hello(struct rt_sup *sup, int sock, pid_t pid, int memfd);
void rt_fork_batch_done(struct rt_session *parent, const struct rt_evict *m);
void rt_fork_parent_gone(struct rt_session *parent);
bool rt_fork_mm_alive(struct rt_session *s);
void rt_fork_free_hellos(struct rt_sup *sup);
bool rt_fork_events_on(const struct rt_sup *sup);
void rt_fork_unshared(struct rt_session *s, uint64_t addr);
bool rt_fork_pass_shared(struct rt_session *s, uint64_t addr);
void rt_fork_account(struct rt_sup *sup);
int rt_mirror_store(struct rt_session *s, const void *page, uint32_t *idx);
void rt_track_resident(struct rt_session *s, uint64_t addr);

/* The counters' reports (counters.c) */
void rt_stats_json(FILE *f, const struct rt_sup *sup, int status);
void rt_stats_print(const struct rt_sup *sup);

/* Who may reach the supervisor (peer.c) */
int rt_sock_listen(char *path, size_t len, bool *temp_dir);
void rt_sock_unlink(const char *path, bool temp_dir);
pid_t rt_parent_of(pid_t pid);
bool rt_in_tree(pid_t pid, const pid_t *inherited, unsigned int n);
int rt_peer(int fd, pid_t *pid, uid_t *uid, int *pidfd);
bool rt_pidfd_alive(int pidfd);

/* Whether the shim reaches a program (exe_check.c) */
bool rt_exe_check(const char *file);

#endif
