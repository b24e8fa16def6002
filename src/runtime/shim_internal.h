/* SPDX-License-Identifier: MIT */
/*
 * What the files of libuswap_preload.so share (docs/RUNTIME.md, "Shim"):
 *   shim_conn.c    the session: the constructor, the connection and its
 *                  hello, the agent's and the watchdog's start, the
 *                  watchdog, the session across fork()
 *   shim_maps.c    /proc/self/maps: the start-up snapshot, the scans, the
 *                  records of registered ranges
 *   shim_agent.c   the agent's mechanism: batches moved out through the
 *                  staging area
 *   shim_policy.c  the agent's policy: its CPU, a batch's layout
 *   shim_libc.c    the interposed libc functions, and their fence
 *                  against fork()
 * Part of libuswap_preload.so only. Every symbol declared here is hidden
 * (the object is built with hidden visibility): the object exports only
 * the libc functions it interposes.
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
 * The locks, each static in its file, in the order they nest:
 *   vm_lock (shim_libc.c: the fence, read by the program's calls, written
 *   by the fork's prepare handler)
 *     -> fork_lock -> fork_wait_lock (shim_conn.c: the fork handlers)
 *     -> reg_lock (shim_maps.c: the records; under the fence only in
 *        shim_free_pages())
 * fork_lock and reg_lock never nest. The move lock (xfer_ctl.h) is the
 * agent's with the supervisor; no other lock is taken under it.
 */

/*
 * The process's session, which shim_conn.c makes (session_start(),
 * fork_session()) and ends (close_session()).
 * Every field but @active is written only while no shim thread runs and
 * no other thread of the program can use it: in the constructor, or in
 * a child's fork handler (the child's only thread), before
 * start_threads(); pthread_create() orders those writes before every read
 * of the agent and the watchdog, and a program thread reads a field only
 * after it has seen @active set (shim_active(), acquire).
 */
struct shim_session {
	atomic_bool active;	/* connected and registered; written by the session's
				 * start and end (release), read by every job */
	int uffd;		/* the process's uffd (kept high); read by the agent
				 * (moves, the staging area) and the scans (registration) */
	int sock;		/* the supervisor's socket (kept high); read by the agent
				 * (requests) and by every sender (shim_send()) */
	char *staging;		/* RT_BATCH pages, registered, between guard pages: the
				 * agent's; the scans never register it again */
	char *xfer;		/* the transfer buffer, shared with the supervisor: the
				 * agent copies each batch's pages into it */
	struct rt_xfer_ctl *ctl;	/* its control page: the move lock, the
					 * cancelled slots (xfer_ctl.h) */
	char *agent_stack;	/* SHIM_STACK bytes each: the scans never register them */
	char *watch_stack;
};
extern struct shim_session shim;

/* Whether the session is up. Context: any thread. Return: true if so. */
static inline bool shim_active(void)
{
	return atomic_load_explicit(&shim.active, memory_order_acquire);
}

/*
 * The address of the calling thread's rseq cpu_id, which the kernel keeps
 * current on every return to user space, if glibc registered rseq for it.
 * Context: any thread. Return: the address, or 0.
 */
static inline uint64_t shim_cpu_id_word(void)
{
	if (__rseq_size < offsetof(struct rseq, cpu_id) + sizeof(uint32_t))
		return 0;
	return (uint64_t)(uintptr_t)__builtin_thread_pointer() + (uint64_t)__rseq_offset +
	       offsetof(struct rseq, cpu_id);
}

/* The agent (shim_agent.c). */

/* The agent thread's function (pthread_create()). Return: NULL. */
void *shim_agent_main(void *arg);
/* Register the staging area with shim.uffd. Context: the session's start,
 * before the agent runs. Return: 0, or -errno (errno set). */
int shim_staging_register(void);

/*
 * The agent's policy (shim_policy.c): its plan for one batch. Any plan
 * moves the same pages with the same results; it changes only what the
 * batch costs. The mechanism asks for one before each batch
 * (shim_policy_plan()) and follows it.
 */
struct shim_plan {
	uint32_t split;	/* pages [split, n) of a batch of n go to the end of the
			 * staging area, no run across it; split <= n */
	bool yield;	/* the agent yields the CPU after each run */
};

/* The agent may follow the CPU of the thread whose rseq cpu_id is at
 * @word (0: of none). Context: the constructor, before the agent runs. */
void shim_policy_follow(uint64_t word);
/* The lead in a child of fork(): kept if it is the forking thread.
 * Context: the child's atfork handler, before its agent runs. */
void shim_policy_fork_child(void);
/* Note the agent's affinity and policy. Context: the agent, at its start. */
void shim_policy_agent_start(void);
/* Bind or unbind the agent for a batch @m of @n pages, and fill @plan.
 * Context: the agent, before the batch. */
void shim_policy_plan(const struct rt_evict *m, uint32_t n, struct shim_plan *plan);

/* The fence (shim_libc.c). */

/* Wait until no madvise/mremap/munmap of the program is in flight, and
 * hold new ones back until shim_vm_fork_end(). Context: the forking
 * thread, in the pthread_atfork prepare handler. */
void shim_vm_fork_begin(void);
/* Let them run again: @child is true in the child (one thread: the lock
 * is made anew). Context: the atfork parent or child handler. */
void shim_vm_fork_end(int child);
/* madvise(2) without the fence, for the shim's own memory. Return: 0, -1. */
int shim_raw_madvise(void *addr, size_t len, int advice);

/* The session (shim_conn.c). */

/* Whether shim.sock is still the supervisor's socket in the caller's
 * descriptor table. Context: any. Return: true if so. */
bool shim_sock_ours(void);
/* Send @len bytes of @msg on shim.sock. Context: after shim_sock_ours().
 * Return: 0, -1. */
int shim_send(const void *msg, size_t len);

/* The agent's start on the session's side: its id, its own descriptor
 * table, the start-up handshake. Context: the agent, at its start. */
void shim_agent_setup(void);
/* The supervisor's RT_PREFORK_DONE: the fork's prepare handler goes on.
 * Context: the agent. */
void shim_prefork_done(void);

/* Register what a program thread just made (mmap(), mprotect()): the
 * watchdog scans for it, or the caller itself when there is no watchdog.
 * Context: a program thread; waits for the scan. */
void shim_scan_for_caller(void);

/* The maps and the registration records (shim_maps.c). */

/* Remember the VMAs that exist before the program runs. Context: the
 * constructor. Return: the calling thread's rseq cpu_id address if it
 * lies in memory never registered, else 0. */
uint64_t shim_snapshot(void);
/* Register every candidate VMA not registered yet, and tell the
 * supervisor. Context: any thread; takes the records' lock. */
void shim_scan(void);
/* Note the process's mappings as they are, for shim_rescan(). Context:
 * the session's start, before the agent runs. */
void shim_scan_mark(void);
/* Scan if the mappings changed since the last rescan or a
 * shim_maps_forget(). Context: the agent. Return: true if it scanned. */
bool shim_rescan(void);
/* The supervisor's RT_FORGET of [@s, @e): end the records there; the next
 * shim_rescan() scans. Context: the agent. */
void shim_maps_forget(uint64_t s, uint64_t e);
/* The records in a child of fork(): the lock made anew, every record
 * ended with @drop. Context: the child's atfork handler. */
void shim_maps_fork_child(bool drop);
/* [@s, @e) was mapped, unmapped or moved away by the program: the shim's
 * records of registered ranges there are obsolete. */
void shim_forget_range(uint64_t s, uint64_t e);

/* MADV_FREE as the program asks it, made MADV_DONTNEED on registered
 * memory. Return: 0, -1 and errno. */
int shim_free_pages(void *addr, size_t len);

#endif
