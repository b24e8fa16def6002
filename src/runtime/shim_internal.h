/* SPDX-License-Identifier: MIT */
/*
 * What the files of libuswap_preload.so share (docs/RUNTIME.md, "Shim"):
 *   shim_conn.c    the session: connection, threads, watchdog, fork handlers
 *   shim_maps.c    /proc/self/maps: snapshot, scans, records of registrations
 *   shim_agent.c   the agent's mechanism: batches moved out
 *   shim_policy.c  the agent's policy: its CPU, a batch's layout
 *   shim_libc.c    the interposed libc functions, and the fence against fork()
 * Functions are documented where they are defined. Every symbol here is
 * hidden: the object exports only the libc functions it interposes.
 *
 * The locks, each static in its file, in the order they nest:
 *   vm_lock (shim_libc.c: the fence; read by the program's calls, written
 *   by the fork's prepare handler)
 *     -> fork_lock -> fork_wait_lock (shim_conn.c: the fork handlers)
 *     -> reg_lock (shim_maps.c: the records; under the fence only in
 *        shim_free_pages())
 * fork_lock and reg_lock never nest. The move lock (xfer_ctl.h) is the
 * agent's with the supervisor; no other lock is taken under it.
 */
#ifndef USWAP_RUNTIME_SHIM_INTERNAL_H
#define USWAP_RUNTIME_SHIM_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/rseq.h>

struct rt_evict;
struct rt_xfer_ctl;

#define SHIM_MIN_VMA	(64UL << 10)	/* smaller mappings are not worth a round trip */
#define SHIM_STACK	(256UL << 10)	/* the agent's and the watchdog's stacks */

/*
 * The process's session, made and ended by shim_conn.c. Every field but
 * @active is written only before start_threads(), by the constructor or a
 * child's fork handler (one thread); pthread_create() orders the writes
 * before the shim threads' reads, and a program thread reads a field only
 * after it has seen @active set (shim_active()). The scans never register
 * the staging area or the stacks.
 */
struct shim_session {
	atomic_bool active;		/* connected, registered; set (release) by shim_conn.c */
	int uffd;			/* kept high; read by the agent and the scans */
	int sock;			/* kept high; read by the agent and shim_send() */
	char *staging;			/* RT_BATCH pages between guard pages: the agent's */
	char *xfer;			/* the transfer buffer, the agent's with the supervisor */
	struct rt_xfer_ctl *ctl;	/* its control page (xfer_ctl.h) */
	char *agent_stack, *watch_stack;	/* SHIM_STACK bytes each */
};
extern struct shim_session shim;

/* Whether the session is up. Context: any thread. */
static inline bool shim_active(void)
{
	return atomic_load_explicit(&shim.active, memory_order_acquire);
}

/* The address of the calling thread's rseq cpu_id (kept current by the
 * kernel), or 0 if glibc registered no rseq. */
static inline uint64_t shim_cpu_id_word(void)
{
	if (__rseq_size < offsetof(struct rseq, cpu_id) + sizeof(uint32_t))
		return 0;
	return (uint64_t)(uintptr_t)__builtin_thread_pointer() + (uint64_t)__rseq_offset +
	       offsetof(struct rseq, cpu_id);
}

/* shim_agent.c */
void *shim_agent_main(void *arg);
int shim_staging_register(void);

/* The policy's plan for one batch: it changes what the batch costs, never
 * which pages move or with which results. */
struct shim_plan {
	uint32_t split;	/* pages [split, n) of a batch of n go to the end of the
			 * staging area, no run across it; split <= n */
	bool yield;	/* the agent yields the CPU after each run */
};

/*
 * shim_parse_num() - the number in @base (10 or 16) at *@p, after any
 * spaces; *@p moves past its digits. Return: false if there are none.
 * The shim's threads parse /proc files with this, not with strtoul() or
 * sscanf(): those read the locale's data, which setlocale() put in the
 * program's heap, and a shim thread must never fault on program memory
 * (its fault could wait for the batch it is to answer).
 */
static inline bool shim_parse_num(const char **p, unsigned int base, unsigned long long *v)
{
	const char *s = *p;
	unsigned long long n = 0;
	bool any = false;

	while (*s == ' ')
		s++;
	for (;; s++, any = true) {
		unsigned int d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned int)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned int)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned int)(*s - 'A' + 10);
		else
			break;
		n = n * base + d;
	}
	*p = s;
	*v = n;
	return any;
}

/* shim_policy.c */
void shim_policy_follow(uint64_t word);
void shim_policy_fork_child(void);
void shim_policy_agent_start(void);
void shim_policy_plan(const struct rt_evict *m, uint32_t n, struct shim_plan *plan);

/* shim_libc.c */
void shim_vm_fork_begin(void);
void shim_vm_fork_end(int child);
int shim_raw_madvise(void *addr, size_t len, int advice);

/* shim_conn.c */
bool shim_sock_ours(void);
int shim_send(const void *msg, size_t len);
void shim_prefork_done(void);
void shim_scan_for_caller(void);

/* shim_maps.c */
uint64_t shim_snapshot(void);
void shim_scan(void);
void shim_scan_mark(void);
bool shim_rescan(void);
void shim_maps_forget(uint64_t s, uint64_t e);
void shim_maps_fork_child(bool drop);
void shim_forget_range(uint64_t s, uint64_t e);
int shim_free_pages(void *addr, size_t len);

#endif
