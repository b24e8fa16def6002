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
#include "runtime/colocate.h"
#include "runtime/copier.h"
#include "runtime/counters.h"
#include "runtime/coldlist.h"
#include "runtime/pagetab.h"
#include "runtime/pager.h"
#include "runtime/proto.h"
#include "runtime/ranges.h"
#include "runtime/uffd_ops.h"

#define RT_MAX_SWAP	8

struct uswap_run_config {
	uint64_t memory;			/* budget of resident bytes */
	const char *swap[RT_MAX_SWAP];		/* device specs, ",prio=N" allowed */
	unsigned int nr_swap;
	const char *design;			/* "table" or "legacy" */
	bool stats;				/* print counters at the end */
	const char *json;			/* --json FILE (for messages), or NULL */
	int json_fd;				/* ... opened by the cli, or -1 */
	char **argv;				/* the program */
	bool no_fork_events;			/* the prefork path even with fork events */
	bool no_keep_clean;			/* no kept copies (docs/RUNTIME.md, "Clean pages") */
	uint64_t memory_total;			/* bound of resident + compressed bytes, 0 none */
	uint64_t swap_max;			/* --swap-max: bytes of swap, 0 none */
	int policy;				/* enum rt_evict_policy */
	uint64_t poll_us;			/* busy-poll after a fault, 0 none */
	bool no_colocate;			/* --no-colocate: the serving thread follows no one */
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
#define RT_STAT_FIELD(kind, name, json, line, text, desc)	RT_STAT_FIELD_##kind(name)
	RT_STATS(RT_STAT_FIELD)
#undef RT_STAT_FIELD
	uint64_t lat[RT_LAT_BUCKETS];		/* faults by time from read to served */
};

#define RT_STEP_PAGES	8	/* pages of an answered batch stored per loop turn */
#define RT_ALONE_NS	10000000ULL	/* no other process faulted for this long: alone */
#define RT_TURNS_RUN	32	/* swap-in run at most, while two fault in turns */
#define RT_COPY_MIN_PAGES 8	/* a shorter run is copied by the serving thread */
#define RT_FOLLOW_BURST	4	/* the followed thread's faults read in a row, before the turn's rest */

/* Where a process's agent is (docs/RUNTIME.md, "The supervisor's record of a process"). */
enum rt_phase {
	RT_PH_UNMET,		/* a forked child whose shim has not said hello */
	RT_PH_RUN,		/* batches may be sent (once agent_up) */
	RT_PH_PREFORK,		/* a fork is prepared: the batch out, then (without
				 * fork events) every page in; then PREFORK_DONE */
	RT_PH_FORKING,		/* PREFORK_DONE sent: no batch until POSTFORK */
	RT_PH_ORPHAN,		/* the agent's socket closed: faults only */
};

/* The batch of a session's pager space. */
enum rt_batch_phase {
	RT_B_NONE,		/* none out */
	RT_B_OUT,		/* sent, not answered */
	RT_B_ANSWERED,		/* answered, its slots settled a few per turn */
};

struct rt_loop;

/* A descriptor the event loop watches (supervisor.c): its epoll data. */
struct rt_ev {
	void (*fn)(struct rt_loop *loop, struct rt_ev *ev, uint32_t events); /* NULL: not watched */
	void *arg;				/* the handler's (the session), or NULL */
	int fd;					/* as registered (while fn is set) */
};

struct rt_xfer_ctl;

/* One process of the tree: the transport around its pager space. */
struct rt_session {
	struct rt_session *next;
	struct rt_sup *sup;
	pid_t pid;				/* the kernel's word, never the message's */
	int pidfd;				/* the process, for its OOM kill, or -1 */
	int sock, uffd;
	char *xfer;				/* transfer buffer, shared with the agent */
	struct rt_xfer_ctl *ctl;		/* its control page (xfer_ctl.h), or NULL */
	struct rt_ev ev_uffd, ev_sock;		/* in the event loop (supervisor.c) */
	bool uffd_held;				/* left unread: the agent holds the move lock */
	bool copying;				/* a swap-in run at the copy thread (copier.h):
						 * uffd unread, faults waiting, fork held */
	uint64_t staging, staging_end;		/* the agent's staging area */
	struct pager pg;			/* its pages (pager.h); pg.pagemap is ours */
	enum rt_phase phase;
	enum rt_batch_phase batch;
	struct rt_evict answer;			/* the answer to the batch out */
	bool agent_up;				/* RT_AGENT_UP came */
	pid_t agent_tid;			/* the agent's thread it named (one of the
						 * process's), or 0 */
	pid_t fault_tid;			/* the thread of the fault being served,
						 * 0 for one served again */
	uint64_t agent_fault;			/* the address of the agent's fault kept
						 * waiting until served, or 0 */
	uint32_t agent_over;			/* pages given to the agent's faults past
						 * the line while this batch is out */
	bool dead;				/* killed by us */
	int wait_why;				/* serve_fault()'s reason to defer (pg_wait) */
	bool forked;				/* made by a FORK event (pid 0, sock -1
						 * until named and met: fork.c) */
	bool fork_shared;			/* forked or forked from: pages may be shared */
	uint64_t balance_mark;			/* rt_sup_reclaim(): asked in that round */
};

#define RT_HELLO_WAIT	16		/* connections waiting for their first message */
#define RT_HELLO_NS	2000000000ULL	/* ... closed after this long */

struct rt_sup {
	struct rt_session *sessions;
	struct uswap_mem *mem;			/* the mirrors' memory, NULL once destroyed */
	struct uswap_mem_stats mem_end;		/* its counters as it was destroyed */
	struct pg_tree tree;			/* the budget, resident pages, counters */
	uint64_t slack;				/* pages */
	uint64_t locked_ns;			/* rt_sup_locked()'s last look */
	unsigned int inflight;			/* batches out */
	uint64_t poll_us;			/* --poll-us */
	const struct rt_session *fault_last;	/* whose fault was read last (never followed) */
	uint64_t fault_switch_ns;		/* when fault_last changed (now_ns()) */
	bool followed_woke;			/* the last copy woke the followed thread at SCHED_IDLE */
	struct rt_colo colo;			/* following the faulting thread */
	struct rt_copier copier;		/* the copy thread (copier.h) */
	bool reclaiming;			/* evicting down to the low watermark */
	bool stalled;				/* the last batches freed nothing */
	uint64_t balance_mark;			/* balance(): sessions asked this round */
	uint64_t features;
	pid_t child;
	pid_t inherited[16];			/* our children not of the tree */
	unsigned int nr_inherited;
	struct rt_stats st;
	const char *kill_reason;
	const int *types;			/* the devices */
	unsigned int nr_types;
	struct rt_fork_hello *fork_hellos;	/* RT_HELLO_FORKs not matched yet */
	/* accepted connections waiting for their first message, in the loop */
	struct rt_ev hello[RT_HELLO_WAIT];	/* a slot is free while its fn is NULL */
	uint64_t hello_ns[RT_HELLO_WAIT];	/* accepted at (CLOCK_MONOTONIC) */
	unsigned int nr_hello;			/* slots in use */
	unsigned int refusals;			/* connections refused (said 32 times) */
	unsigned int violations;		/* processes killed for their messages */
	unsigned int nr_fork_hellos;		/* in fork_hellos */
	unsigned int nr_refused;		/* hellos answered with an error */
	/* The resident + compressed bound */
	uint64_t resident_budget;		/* pages: --memory */
	uint64_t total;				/* pages: --memory-total, 0 none */
	uint64_t compressed;			/* bytes the compressed devices hold (last read) */
	uint64_t compressed_ns;			/* when read (now_ns()) */
	uint64_t peak_compressed;		/* bytes */
	uint64_t peak_total;			/* pages: resident + compressed, rounded up */
	/* The swap limit (--swap-max): the mirrors' memory cgroup */
	struct uswap_memcg *memcg;		/* NULL without --swap-max */
	uint64_t swap_max;			/* pages: its memory.swap.max, 0 none */
	uint64_t swap_pages, peak_swap_pages;	/* its memory.swap.current / .peak (last read) */
	uint64_t swap_full;			/* evictions refused: the limit reached */
};

bool rt_sup_swap_full(struct rt_sup *sup);

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
struct rt_session *rt_sup_copied(struct rt_sup *sup, bool wait);
bool rt_session_batch_step(struct rt_session *s, uint32_t max);
bool rt_session_evict(struct rt_session *s, uint64_t want);
void rt_session_prefork(struct rt_session *s);
bool rt_session_mm_alive(struct rt_session *s);
void rt_session_orphan(struct rt_session *s);
bool rt_sup_reclaim(struct rt_sup *sup);

/* fork events (fork.c) */
void rt_fork_event(struct rt_session *parent, int ufd);
void rt_fork_fault(struct rt_session *s, uint32_t ptid);
void rt_fork_hello(struct rt_sup *sup, int sock, pid_t pid, int memfd);
void rt_fork_parent_gone(struct rt_session *parent);
bool rt_fork_mm_alive(struct rt_session *s);
void rt_fork_free_hellos(struct rt_sup *sup);
bool rt_fork_events_on(const struct rt_sup *sup);
void rt_fork_unshared(struct rt_session *s, uint64_t addr);
bool rt_fork_pass_shared(void *arg, struct pager *p, uint64_t addr);
uint32_t rt_fork_hint(const struct rt_session *s, struct rt_evict *m);
void rt_fork_account(struct rt_sup *sup);
extern const struct pg_ops rt_session_ops;

/* Whether two processes fault in turns: none faulted alone for RT_ALONE_NS
 * (docs/RUNTIME.md, "Two processes faulting"). Context: supervisor thread. */
static inline bool rt_two_faulting(const struct rt_sup *sup)
{
	return now_ns() - sup->fault_switch_ns <= RT_ALONE_NS;
}

void rt_sup_check(struct rt_sup *sup);

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
