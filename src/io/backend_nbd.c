/* SPDX-License-Identifier: MIT */
/*
 * NBD backend: slot N is bytes [N*4096, N*4096+4096) of an NBD export,
 * reached through libnbd's asynchronous API. Any NBD server will do
 * (nbdkit, nbd-server, qemu-nbd, a storage gateway).
 *
 * One I/O thread per device owns the libnbd handle: it alone calls libnbd,
 * so completion callbacks run on it, never under a caller's lock, and the
 * handle's own lock is never contended. Submitters only append requests to
 * a queue (under q_lock) and kick an eventfd. The thread moves the queue to
 * its private FIFO, issues up to `depth` commands (reads and writes of slot
 * runs, flushes, trims), polls the socket and the eventfd, and completes
 * requests through swap_backend_complete(). reap() only waits for the
 * thread's completions.
 *
 * Memory: every command slot (struct nbd_cmd) is allocated when the
 * device is opened, and requests travel on their own bk_next link, so a
 * swap-out never allocates in uswap's code to make progress: the kernel
 * nbd driver's deadlock (it allocates to send the write that would free
 * memory) cannot happen here. libnbd itself mallocs a small command record
 * per request (about a hundred bytes); that comes from the process heap,
 * which reclaim in uswap never waits on (reclaim frees frames of the frame
 * pool, not heap).
 *
 * Loss and timeouts:
 *   - a command that is not answered within timeout_ms fails with -EIO. An
 *     NBD command cannot be cancelled, and the server could still answer
 *     into the caller's buffer, so the connection is closed first; the
 *     other commands in flight are reissued on a new connection;
 *   - a lost connection is re-established with backoff (1 ms doubling to
 *     250 ms) for reconnect_ms; the commands that were in flight and those
 *     queued meanwhile wait for it and are reissued;
 *   - when reconnect_ms runs out the device fails: everything queued or in
 *     flight completes with -EIO, later submits fail at once with -EIO, and
 *     be->failed is set so that the swap layer stops allocating on it;
 *   - a reconnect must find the same data: slot 0 (the swap header) is
 *     kept as last written and compared on every new connection. A server
 *     that came back empty (nbdkit's memory plugin restarted) would
 *     otherwise hand back zeros for swapped pages; the device fails
 *     instead, and its pages read as -EIO, never as wrong data.
 * A server's error reply (e.g. nbdkit --filter=error) fails that request
 * alone with the server's errno.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "io/backend.h"
#include "util/alloc.h"
#include "util/debug.h"

#define NBD_BACKOFF_MIN_NS	1000000ULL	/* 1 ms */
#define NBD_BACKOFF_MAX_NS	250000000ULL	/* 250 ms */
#define NBD_TRIM_CHUNK		(1ULL << 30)	/* bytes per trim command */
#define NBD_CONNECT_MIN_MS	2000U		/* handshake + slot 0, at least */
#define NBD_LAT_BUCKETS		(64 * 4)

enum nbd_state {
	NBD_CONNECTED,
	NBD_DISCONNECTED,	/* retrying until lost_at + reconnect_ns */
	NBD_FAILED,		/* for good */
};

enum nbd_cmd_kind { CMD_REQ, CMD_CTL };

/* A flush or trim, waited for by its caller (on the caller's stack). */
struct nbd_ctl {
	int op;				/* CTL_FLUSH or CTL_TRIM */
	uint64_t offset, len;		/* bytes, trim only */
	int result;			/* 0 or -errno */
	bool done;			/* q_lock */
	struct nbd_ctl *next;		/* queue link */
};

enum { CTL_FLUSH, CTL_TRIM };

/* One command in flight on the connection; owned by the I/O thread. */
struct nbd_cmd {
	struct nbd_backend *nb;
	enum nbd_cmd_kind kind;
	struct swap_io_req *req;	/* CMD_REQ */
	struct nbd_ctl *ctl;		/* CMD_CTL */
	uint64_t issued_ns;
	int error;			/* set by the completion callback */
	bool done;			/* the callback ran */
	bool busy;			/* slot in use */
};

struct nbd_backend {
	struct swap_backend be;
	char uri[4096];			/* constant */
	struct swap_nbd_params params;	/* constant */
	struct nbd_handle *h;		/* I/O thread only (open/destroy aside) */
	bool can_trim, can_flush;	/* of the first connection; constant */
	bool structured;		/* structured replies negotiated */
	int efd;			/* eventfd: wakes the I/O thread */
	pthread_t thread;

	/* q_lock protects the submission queues, stop, and the wait below */
	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;		/* completions, ctl done */
	struct swap_io_req *q_head, *q_tail;
	struct nbd_ctl *ctl_head, *ctl_tail;
	bool stop;

	/* I/O thread only */
	struct swap_io_req *l_head, *l_tail;	/* waiting for a command slot */
	struct nbd_ctl *lc_head, *lc_tail;
	struct nbd_cmd *cmds;		/* depth slots, allocated at open */
	unsigned int nr_busy;
	enum nbd_state state;
	uint64_t lost_at_ns, next_try_ns, backoff_ns;
	bool closing;			/* callbacks ignored while closing */
	void *page0;			/* slot 0 as last read or written */
	void *page0_check;		/* for the comparison at reconnect */

	_Atomic int astate;		/* mirror of state for other threads */
	_Atomic uint64_t inflight;	/* accepted, not completed */
	_Atomic uint64_t completed;
	_Atomic uint64_t reconnects, timeouts, conn_lost, max_busy;
	_Atomic uint64_t lat_read[NBD_LAT_BUCKETS], lat_write[NBD_LAT_BUCKETS];
	_Atomic uint64_t busy_sum, busy_samples;
};

/* The NBD backend around @be. Context: any. Return: it. */
static inline struct nbd_backend *to_nbd(struct swap_backend *be)
{
	return container_of(be, struct nbd_backend, be);
}

/* CLOCK_MONOTONIC in ns. Context: any. Return: the time. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Latency bucket: 4 per power of two of microseconds. Context: any.
 * Return: the bucket. */
static unsigned int lat_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000 + 1;
	unsigned int lg = 63 - (unsigned int)__builtin_clzll(us);
	unsigned int sub = lg >= 2 ? (unsigned int)((us >> (lg - 2)) & 3) : 0;

	return USWAP_MIN(lg * 4 + sub, NBD_LAT_BUCKETS - 1);
}

/* The lower edge of bucket @b in microseconds. Context: any. Return: it. */
static uint64_t lat_bucket_us(unsigned int b)
{
	unsigned int lg = b / 4, sub = b % 4;
	uint64_t base = 1ULL << lg;

	if (lg >= 2)
		base += (uint64_t)sub << (lg - 2);
	return base - 1;
}

/* Kick the I/O thread's eventfd. Context: any. Return: nothing. */
static void wake_thread(struct nbd_backend *nb)
{
	uint64_t one = 1;

	if (write(nb->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, the thread is awake anyway */
	}
}

/*
 * Change the connection state (and publish it, and be->failed for good).
 * Context: I/O thread (or open, before the thread). Return: nothing.
 */
static void set_state(struct nbd_backend *nb, enum nbd_state s)
{
	nb->state = s;
	atomic_store(&nb->astate, (int)s);
	if (s == NBD_FAILED)
		atomic_store(&nb->be.failed, true);
}

/* ---- the I/O thread ---- */

/*
 * libnbd's completion callback: note the result; the I/O thread completes
 * the request after the libnbd call returns, outside libnbd's lock.
 * Context: I/O thread, inside a libnbd call. Return: 1 (retire the command).
 */
static int nbd_cmd_done(void *user_data, int *error)
{
	struct nbd_cmd *c = user_data;

	if (c->nb->closing)
		return 1;
	c->error = *error;
	c->done = true;
	return 1;
}

/* Complete a request: stats, end_io, then the waiters. Context: I/O
 * thread, no lock held. Return: nothing. */
static void finish_req(struct nbd_backend *nb, struct swap_io_req *r, int result)
{
	swap_backend_complete(&nb->be, r, result);
	atomic_fetch_add(&nb->completed, 1);
	atomic_fetch_sub(&nb->inflight, 1);
	pthread_mutex_lock(&nb->q_lock);
	pthread_cond_broadcast(&nb->q_cond);
	pthread_mutex_unlock(&nb->q_lock);
}

/* Complete a flush or trim and wake its waiter. Context: I/O thread.
 * Return: nothing. */
static void finish_ctl(struct nbd_backend *nb, struct nbd_ctl *c, int result)
{
	pthread_mutex_lock(&nb->q_lock);
	c->result = result;
	c->done = true;
	pthread_cond_broadcast(&nb->q_cond);
	pthread_mutex_unlock(&nb->q_lock);
}

/* Put a command's request back at the head of the private FIFO (reissued
 * first). Context: I/O thread. Return: nothing. */
static void requeue_front(struct nbd_backend *nb, struct nbd_cmd *c)
{
	if (c->kind == CMD_REQ) {
		c->req->bk_next = nb->l_head;
		nb->l_head = c->req;
		if (!nb->l_tail)
			nb->l_tail = c->req;
	} else {
		c->ctl->next = nb->lc_head;
		nb->lc_head = c->ctl;
		if (!nb->lc_tail)
			nb->lc_tail = c->ctl;
	}
}

/* Free a command slot. Context: I/O thread. Return: nothing. */
static void release_cmd(struct nbd_backend *nb, struct nbd_cmd *c)
{
	c->busy = false;
	c->done = false;
	c->req = NULL;
	c->ctl = NULL;
	nb->nr_busy--;
}

/* Count a reply's latency. Context: I/O thread. Return: nothing. */
static void record_latency(struct nbd_backend *nb, struct nbd_cmd *c, uint64_t now)
{
	unsigned int b = lat_bucket(now - c->issued_ns);

	if (c->req->op == SWAP_IO_READ)
		atomic_fetch_add_explicit(&nb->lat_read[b], 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&nb->lat_write[b], 1, memory_order_relaxed);
}

/* Complete every command whose callback ran; on a dead handle the failed
 * ones are requeued. Context: I/O thread. Return: nothing. */
static void collect(struct nbd_backend *nb, bool dead)
{
	uint64_t now = now_ns();
	unsigned int i;

	for (i = 0; i < nb->params.depth; i++) {
		struct nbd_cmd *c = &nb->cmds[i];

		if (!c->busy || !c->done)
			continue;
		if (c->error && dead) {
			requeue_front(nb, c);
		} else if (c->kind == CMD_REQ) {
			struct swap_io_req *r = c->req;
			int err = c->error ? -c->error : 0;

			if (!err)
				record_latency(nb, c, now);
			if (!err && r->op == SWAP_IO_WRITE && r->offset == 0)
				memcpy(nb->page0, r->buf, SWAP_BACKEND_PAGE_SIZE);
			release_cmd(nb, c);
			finish_req(nb, r, err);
			continue;
		} else {
			struct nbd_ctl *ctl = c->ctl;
			int err = c->error ? -c->error : 0;

			release_cmd(nb, c);
			finish_ctl(nb, ctl, err);
			continue;
		}
		release_cmd(nb, c);
	}
}

/*
 * Drop the connection. Commands in flight are requeued, except those past
 * their deadline (@timed_out), which fail with -EIO.
 * Context: I/O thread. Return: nothing.
 */
static void connection_lost(struct nbd_backend *nb, bool timed_out)
{
	uint64_t now = now_ns();
	uint64_t limit = (uint64_t)nb->params.timeout_ms * 1000000ULL;
	unsigned int i;

	collect(nb, true);
	nb->closing = true;
	if (nb->h)
		nbd_close(nb->h);
	nb->h = NULL;
	nb->closing = false;
	for (i = 0; i < nb->params.depth; i++) {
		struct nbd_cmd *c = &nb->cmds[i];

		if (!c->busy)
			continue;
		if (timed_out && now - c->issued_ns >= limit) {
			atomic_fetch_add(&nb->timeouts, 1);
			if (c->kind == CMD_REQ) {
				struct swap_io_req *r = c->req;

				release_cmd(nb, c);
				finish_req(nb, r, -EIO);
			} else {
				struct nbd_ctl *ctl = c->ctl;

				release_cmd(nb, c);
				finish_ctl(nb, ctl, -EIO);
			}
			continue;
		}
		requeue_front(nb, c);
		release_cmd(nb, c);
	}
	atomic_fetch_add(&nb->conn_lost, 1);
	nb->lost_at_ns = now;
	nb->next_try_ns = now;
	nb->backoff_ns = NBD_BACKOFF_MIN_NS;
	set_state(nb, NBD_DISCONNECTED);
}

/*
 * Open a connection to @uri, waiting for the handshake until @deadline
 * (CLOCK_MONOTONIC ns): the connect is asynchronous, so a server that
 * accepts and never answers costs no more than the time given.
 * Context: sleeps. Return: the ready handle, or NULL with *@err = -errno and @msg filled.
 */
static struct nbd_handle *nbd_dial(const char *uri, uint64_t deadline, int *err,
				   char *msg, size_t msglen)
{
	uint64_t t0 = now_ns();
	struct nbd_handle *h = nbd_create();

	if (!h) {
		*err = -ENOMEM;
		snprintf(msg, msglen, "%s", nbd_get_error() ? nbd_get_error() : "nbd_create failed");
		return NULL;
	}
	/* nbds://...?tls-psk-file=FILE names a local file: the user's own
	 * key file, given on the command line as the rest of the URI. */
	if (nbd_set_request_structured_replies(h, true) == -1 ||
	    nbd_set_uri_allow_local_file(h, true) == -1 ||
	    nbd_aio_connect_uri(h, uri) == -1)
		goto fail;
	while (!nbd_aio_is_ready(h)) {
		uint64_t now = now_ns();
		int r;

		if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h))
			goto fail;
		if (now >= deadline) {
			*err = -ETIMEDOUT;
			snprintf(msg, msglen, "no answer within %llu ms",
				 (unsigned long long)((deadline - USWAP_MIN(t0, deadline)) / 1000000ULL));
			nbd_close(h);
			return NULL;
		}
		r = nbd_poll(h, (int)USWAP_MAX((deadline - now) / 1000000ULL, 1));
		if (r == -1)
			goto fail;
	}
	return h;
fail:
	*err = nbd_get_errno() ? -nbd_get_errno() : -EIO;
	snprintf(msg, msglen, "%s", nbd_get_error() ? nbd_get_error() : "connection failed");
	nbd_close(h);
	return NULL;
}

/* The deadline of a first connection's handshake and first read, from
 * now. Context: any. Return: CLOCK_MONOTONIC ns. */
static uint64_t connect_deadline(const struct swap_nbd_params *p)
{
	return now_ns() + (uint64_t)USWAP_MAX(p->timeout_ms, NBD_CONNECT_MIN_MS) * 1000000ULL;
}

/* Read slot 0 of a ready handle by @deadline (CLOCK_MONOTONIC ns).
 * Context: sleeps; the handle's only user. Return: 0 or -errno. */
static int nbd_read_slot0(struct nbd_handle *h, void *buf, uint64_t deadline)
{
	int64_t cookie = nbd_aio_pread(h, buf, SWAP_BACKEND_PAGE_SIZE, 0, NBD_NULL_COMPLETION, 0);
	int done;

	if (cookie == -1)
		return nbd_get_errno() ? -nbd_get_errno() : -EIO;
	while (!(done = nbd_aio_command_completed(h, cookie))) {
		uint64_t now = now_ns();

		if (now >= deadline)
			return -ETIMEDOUT;
		if (nbd_poll(h, (int)USWAP_MAX((deadline - now) / 1000000ULL, 1)) == -1)
			return -EIO;
	}
	return done == 1 ? 0 : -EIO;
}

/*
 * One reconnect attempt, if its backoff time has come; the device fails
 * when the window is over or the export came back without our data.
 * Context: I/O thread, disconnected. Return: nothing (see nb->state).
 */
static void try_reconnect(struct nbd_backend *nb)
{
	uint64_t now = now_ns();
	uint64_t window_end = nb->lost_at_ns + (uint64_t)nb->params.reconnect_ms * 1000000ULL;
	uint64_t deadline;
	char msg[256];
	int err;

	if (now < nb->next_try_ns && now < window_end)
		return;
	/*
	 * The attempt (handshake and the read of slot 0) ends with the
	 * reconnect window, never after it: a server that accepts and never
	 * answers must not hold the device past reconnect_ms.
	 */
	deadline = USWAP_MIN(connect_deadline(&nb->params), window_end);
	nb->h = now < window_end ? nbd_dial(nb->uri, deadline, &err, msg, sizeof(msg)) : NULL;
	if (nb->h && nbd_read_slot0(nb->h, nb->page0_check, deadline)) {
		/* the server is not answering yet: another try later */
		nbd_close(nb->h);
		nb->h = NULL;
	}
	if (nb->h) {
		if (nbd_get_size(nb->h) < 0 ||
		    (uint64_t)nbd_get_size(nb->h) < nb->be.nr_slots << SWAP_BACKEND_PAGE_SHIFT ||
		    memcmp(nb->page0, nb->page0_check, SWAP_BACKEND_PAGE_SIZE)) {
			/* Not our data any more: a smaller export, or one
			 * that lost what we wrote. Retrying cannot help. */
			uswap_warn("nbd: %s: the export changed across the reconnect: the device fails",
				   nb->uri);
			nbd_close(nb->h);
			nb->h = NULL;
			set_state(nb, NBD_FAILED);
			return;
		}
		atomic_fetch_add(&nb->reconnects, 1);
		set_state(nb, NBD_CONNECTED);
		return;
	}
	now = now_ns();
	if (now >= window_end) {
		uswap_warn("nbd: %s: lost, no reconnect within %u ms: the device fails",
			   nb->uri, nb->params.reconnect_ms);
		set_state(nb, NBD_FAILED);
		return;
	}
	nb->next_try_ns = USWAP_MIN(now + nb->backoff_ns, window_end);
	nb->backoff_ns = USWAP_MIN(nb->backoff_ns * 2, NBD_BACKOFF_MAX_NS);
}

/* Fail everything the thread holds: the device has failed. Context: I/O
 * thread. Return: nothing. */
static void fail_all(struct nbd_backend *nb)
{
	while (nb->l_head) {
		struct swap_io_req *r = nb->l_head;

		nb->l_head = r->bk_next;
		finish_req(nb, r, -EIO);
	}
	nb->l_tail = NULL;
	while (nb->lc_head) {
		struct nbd_ctl *c = nb->lc_head;

		nb->lc_head = c->next;
		finish_ctl(nb, c, -EIO);
	}
	nb->lc_tail = NULL;
}

/* Take a free command slot. Context: I/O thread. Return: it, or NULL. */
static struct nbd_cmd *get_cmd(struct nbd_backend *nb)
{
	unsigned int i;

	for (i = 0; i < nb->params.depth; i++) {
		if (!nb->cmds[i].busy) {
			struct nbd_cmd *c = &nb->cmds[i];

			c->busy = true;
			c->done = false;
			c->error = 0;
			nb->nr_busy++;
			return c;
		}
	}
	return NULL;
}

/* Issue what waits, while command slots last. Context: I/O thread.
 * Return: nothing (a dead handle moves the state to disconnected). */
static void issue(struct nbd_backend *nb)
{
	while (nb->state == NBD_CONNECTED && nb->nr_busy < nb->params.depth &&
	       (nb->lc_head || nb->l_head)) {
		struct nbd_cmd *c = get_cmd(nb);
		nbd_completion_callback cb = { .callback = nbd_cmd_done, .user_data = c };
		int64_t cookie;

		c->issued_ns = now_ns();
		if (nb->lc_head) {
			struct nbd_ctl *ctl = nb->lc_head;

			nb->lc_head = ctl->next;
			if (!nb->lc_head)
				nb->lc_tail = NULL;
			c->kind = CMD_CTL;
			c->ctl = ctl;
			if (ctl->op == CTL_FLUSH)
				cookie = nbd_aio_flush(nb->h, cb, 0);
			else
				cookie = nbd_aio_trim(nb->h, ctl->len, ctl->offset, cb, 0);
		} else {
			struct swap_io_req *r = nb->l_head;
			size_t len = (size_t)r->nr << SWAP_BACKEND_PAGE_SHIFT;
			uint64_t off = r->offset << SWAP_BACKEND_PAGE_SHIFT;

			nb->l_head = r->bk_next;
			if (!nb->l_head)
				nb->l_tail = NULL;
			c->kind = CMD_REQ;
			c->req = r;
			if (r->op == SWAP_IO_READ)
				cookie = nbd_aio_pread(nb->h, r->buf, len, off, cb, 0);
			else
				cookie = nbd_aio_pwrite(nb->h, r->buf, len, off, cb, 0);
		}
		if (cookie == -1) {
			int e = nbd_get_errno();

			if (nbd_aio_is_dead(nb->h) || nbd_aio_is_closed(nb->h) ||
			    e == ENOTCONN || e == ESHUTDOWN) {
				requeue_front(nb, c);
				release_cmd(nb, c);
				connection_lost(nb, false);
				return;
			}
			/* Refused by libnbd (never by the server): fail it. */
			if (c->kind == CMD_REQ) {
				struct swap_io_req *r = c->req;

				release_cmd(nb, c);
				finish_req(nb, r, e ? -e : -EIO);
			} else {
				struct nbd_ctl *ctl = c->ctl;

				release_cmd(nb, c);
				finish_ctl(nb, ctl, e ? -e : -EIO);
			}
		}
	}
	if (nb->nr_busy > (unsigned int)atomic_load(&nb->max_busy))
		atomic_store(&nb->max_busy, nb->nr_busy);
}

/* Move the submitters' queues to the private FIFOs. Context: I/O thread;
 * takes q_lock. Return: whether destroy asked to stop. */
static bool take_queue(struct nbd_backend *nb)
{
	bool stop;

	pthread_mutex_lock(&nb->q_lock);
	if (nb->q_head) {
		if (nb->l_tail)
			nb->l_tail->bk_next = nb->q_head;
		else
			nb->l_head = nb->q_head;
		nb->l_tail = nb->q_tail;
		nb->q_head = nb->q_tail = NULL;
	}
	if (nb->ctl_head) {
		if (nb->lc_tail)
			nb->lc_tail->next = nb->ctl_head;
		else
			nb->lc_head = nb->ctl_head;
		nb->lc_tail = nb->ctl_tail;
		nb->ctl_head = nb->ctl_tail = NULL;
	}
	stop = nb->stop;
	pthread_mutex_unlock(&nb->q_lock);
	return stop;
}

/* Milliseconds until the next deadline (a command's or a reconnect try).
 * Context: I/O thread. Return: ms for poll(), -1 for none. */
static int poll_timeout(struct nbd_backend *nb)
{
	uint64_t now = now_ns(), next = UINT64_MAX;
	uint64_t limit = (uint64_t)nb->params.timeout_ms * 1000000ULL;
	unsigned int i;

	if (nb->state == NBD_DISCONNECTED)
		next = nb->next_try_ns;
	for (i = 0; i < nb->params.depth; i++)
		if (nb->cmds[i].busy)
			next = USWAP_MIN(next, nb->cmds[i].issued_ns + limit);
	if (next == UINT64_MAX)
		return -1;
	if (next <= now)
		return 0;
	return (int)USWAP_MIN((next - now + 999999) / 1000000ULL, 1000);
}

/* Whether a command waits past its deadline. Context: I/O thread.
 * Return: true if one does. */
static bool any_timed_out(struct nbd_backend *nb)
{
	uint64_t now = now_ns(), limit = (uint64_t)nb->params.timeout_ms * 1000000ULL;
	unsigned int i;

	for (i = 0; i < nb->params.depth; i++)
		if (nb->cmds[i].busy && !nb->cmds[i].done && now - nb->cmds[i].issued_ns >= limit)
			return true;
	return false;
}

/*
 * The device's I/O thread: takes the queue, (re)connects, issues, polls,
 * completes, checks deadlines, until destroy asks it to stop and nothing
 * is left. Context: its own thread, the only one calling libnbd on nb->h.
 * Return: NULL.
 */
static void *nbd_io_thread(void *arg)
{
	struct nbd_backend *nb = arg;

	for (;;) {
		struct pollfd pfd[2];
		unsigned int nfds = 1;
		bool stop = take_queue(nb);
		int r;

		if (nb->state == NBD_DISCONNECTED) {
			if (stop)	/* swapoff/destroy does not wait out a dead server */
				set_state(nb, NBD_FAILED);
			else
				try_reconnect(nb);
		}
		if (nb->state == NBD_FAILED)
			fail_all(nb);
		issue(nb);
		if (stop && !nb->nr_busy && !nb->l_head && !nb->lc_head)
			break;
		pfd[0] = (struct pollfd){ .fd = nb->efd, .events = POLLIN };
		if (nb->state == NBD_CONNECTED) {
			unsigned int dir = (unsigned int)nbd_aio_get_direction(nb->h);

			pfd[1].fd = nbd_aio_get_fd(nb->h);
			pfd[1].events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
						((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0));
			pfd[1].revents = 0;
			if (pfd[1].fd >= 0)
				nfds = 2;
		}
		r = poll(pfd, nfds, poll_timeout(nb));
		if (r < 0 && errno != EINTR)
			uswap_warn("nbd: poll: %s", strerror(errno));
		if (r > 0 && (pfd[0].revents & POLLIN)) {
			uint64_t v;

			if (read(nb->efd, &v, sizeof(v)) < 0) {
				/* EAGAIN: someone else drained it; nothing lost */
			}
		}
		if (nb->state == NBD_CONNECTED && nfds == 2 && r > 0) {
			if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))
				nbd_aio_notify_read(nb->h);
			else if (pfd[1].revents & POLLOUT)
				nbd_aio_notify_write(nb->h);
		}
		if (nb->state == NBD_CONNECTED) {
			bool dead = nbd_aio_is_dead(nb->h) || nbd_aio_is_closed(nb->h);

			collect(nb, dead);
			if (nb->nr_busy)
				atomic_fetch_add_explicit(&nb->busy_sum, nb->nr_busy,
							  memory_order_relaxed),
				atomic_fetch_add_explicit(&nb->busy_samples, 1,
							  memory_order_relaxed);
			if (dead)
				connection_lost(nb, false);
			else if (any_timed_out(nb))
				connection_lost(nb, true);
		}
	}
	return NULL;
}

/* ---- the ops ---- */

/*
 * ops->submit: queue the batch for the I/O thread (a failed device
 * completes it at once with -EIO). Context: any thread; does not sleep
 * beyond q_lock. Return: 0.
 */
static int nbd_be_submit(struct swap_backend *be, struct swap_io_req *reqs, unsigned int nr)
{
	struct nbd_backend *nb = to_nbd(be);
	unsigned int i;

	if (atomic_load(&nb->astate) == NBD_FAILED) {
		for (i = 0; i < nr; i++)
			swap_backend_complete(be, &reqs[i], -EIO);
		return 0;
	}
	for (i = 0; i + 1 < nr; i++)
		reqs[i].bk_next = &reqs[i + 1];
	reqs[nr - 1].bk_next = NULL;
	for (i = 0; i < nr; i++)
		reqs[i].bk_done = 0;
	atomic_fetch_add(&nb->inflight, nr);
	pthread_mutex_lock(&nb->q_lock);
	if (nb->q_tail)
		nb->q_tail->bk_next = &reqs[0];
	else
		nb->q_head = &reqs[0];
	nb->q_tail = &reqs[nr - 1];
	pthread_mutex_unlock(&nb->q_lock);
	wake_thread(nb);
	return 0;
}

/*
 * ops->reap: wait until @min_complete more requests have completed (the
 * I/O thread completes them), or nothing is in flight. Context: any
 * thread; sleeps. Return: completions seen meanwhile.
 */
static int nbd_be_reap(struct swap_backend *be, unsigned int min_complete)
{
	struct nbd_backend *nb = to_nbd(be);
	uint64_t start, got = 0;

	pthread_mutex_lock(&nb->q_lock);
	start = atomic_load(&nb->completed);
	while (min_complete && atomic_load(&nb->inflight) &&
	       (got = atomic_load(&nb->completed) - start) < min_complete)
		pthread_cond_wait(&nb->q_cond, &nb->q_lock);
	got = atomic_load(&nb->completed) - start;
	pthread_mutex_unlock(&nb->q_lock);
	return (int)USWAP_MIN(got, (uint64_t)INT32_MAX);
}

/* Queue a flush or trim and wait for it. Context: sleeps. Return: its
 * result, -EIO on a failed device. */
static int nbd_ctl_run(struct nbd_backend *nb, struct nbd_ctl *c)
{
	if (atomic_load(&nb->astate) == NBD_FAILED)
		return -EIO;
	c->done = false;
	c->next = NULL;
	pthread_mutex_lock(&nb->q_lock);
	if (nb->ctl_tail)
		nb->ctl_tail->next = c;
	else
		nb->ctl_head = c;
	nb->ctl_tail = c;
	pthread_mutex_unlock(&nb->q_lock);
	wake_thread(nb);
	pthread_mutex_lock(&nb->q_lock);
	while (!c->done)
		pthread_cond_wait(&nb->q_cond, &nb->q_lock);
	pthread_mutex_unlock(&nb->q_lock);
	return c->result;
}

/* ops->flush: NBD_CMD_FLUSH if the server has it. Context: sleeps.
 * Return: 0 or -errno (-EIO: failed device or server error). */
static int nbd_be_flush(struct swap_backend *be)
{
	struct nbd_backend *nb = to_nbd(be);
	struct nbd_ctl c = { .op = CTL_FLUSH };

	if (!nb->can_flush)
		return 0;
	return nbd_ctl_run(nb, &c);
}

/* ops->discard: NBD_CMD_TRIM in chunks of at most 1 GiB. Context: sleeps.
 * Return: 0, -EOPNOTSUPP (no trim), -EIO. */
static int nbd_be_discard(struct swap_backend *be, uint64_t offset, uint64_t nr)
{
	struct nbd_backend *nb = to_nbd(be);
	uint64_t pos = offset << SWAP_BACKEND_PAGE_SHIFT;
	uint64_t end = (offset + nr) << SWAP_BACKEND_PAGE_SHIFT;

	if (!nb->can_trim)
		return -EOPNOTSUPP;
	while (pos < end) {
		struct nbd_ctl c = {
			.op = CTL_TRIM, .offset = pos,
			.len = USWAP_MIN(end - pos, NBD_TRIM_CHUNK),
		};
		int ret = nbd_ctl_run(nb, &c);

		if (ret)
			return ret;
		pos += c.len;
	}
	return 0;
}

/* ops->destroy: let the I/O thread finish what is queued, then close.
 * Context: sleeps (a disconnected device fails its queue at once).
 * Return: nothing. */
static void nbd_be_destroy(struct swap_backend *be)
{
	struct nbd_backend *nb = to_nbd(be);

	pthread_mutex_lock(&nb->q_lock);
	nb->stop = true;
	pthread_mutex_unlock(&nb->q_lock);
	wake_thread(nb);
	pthread_join(nb->thread, NULL);
	if (nb->h) {
		nbd_shutdown(nb->h, 0);
		nbd_close(nb->h);
	}
	close(nb->efd);
	pthread_mutex_destroy(&nb->q_lock);
	pthread_cond_destroy(&nb->q_cond);
	free(nb->cmds);
	free(nb->page0);
	free(nb->page0_check);
	free(nb);
}

static const struct swap_backend_ops nbd_ops = {
	.name = "nbd",
	.submit = nbd_be_submit,
	.reap = nbd_be_reap,
	.flush = nbd_be_flush,
	.discard = nbd_be_discard,
	.destroy = nbd_be_destroy,
};

/* A positive number from the environment, or @def. Context: any.
 * Return: the value. */
static unsigned int env_uint(const char *name, unsigned int def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return def;
	v = strtoul(s, &end, 10);
	if (*end || !v || v > 3600000UL)
		return def;
	return (unsigned int)v;
}

/**
 * swap_nbd_default_params() - the defaults, with the environment's
 * overrides (USWAP_NBD_TIMEOUT_MS, USWAP_NBD_RECONNECT_MS, USWAP_NBD_DEPTH)
 * @p: filled in
 *
 * Context: any.
 * Return: nothing.
 */
void swap_nbd_default_params(struct swap_nbd_params *p)
{
	p->timeout_ms = env_uint("USWAP_NBD_TIMEOUT_MS", SWAP_NBD_TIMEOUT_MS);
	p->reconnect_ms = env_uint("USWAP_NBD_RECONNECT_MS", SWAP_NBD_RECONNECT_MS);
	p->depth = USWAP_MIN(env_uint("USWAP_NBD_DEPTH", SWAP_NBD_DEPTH), SWAP_NBD_MAX_DEPTH);
}

/**
 * swap_backend_nbd_open() - connect to an NBD export and make it a backend
 * @uri: an NBD URI as nbd_connect_uri() takes it (nbd://HOST[:PORT]/EXPORT,
 *       nbd+unix:///EXPORT?socket=PATH, ...)
 * @params: timeouts and depth, or NULL for swap_nbd_default_params()
 * @out: the new backend
 * @err: a one-line reason on failure (may be NULL)
 * @errlen: size of @err
 *
 * The export's size, rounded down to 4096, is the device. It must be
 * writable. The connection asks for structured replies; trim is used for
 * discard when the server offers it.
 *
 * Context: any thread; sleeps (connects, up to params->timeout_ms or 2 s,
 * whichever is longer).
 * Return: 0; -EINVAL (bad params, an export smaller than one page or
 * read-only); -ETIMEDOUT (no handshake in time); -ENOMEM; the connection's
 * error (-ECONNREFUSED, -ENOENT for a missing socket, ...).
 */
int swap_backend_nbd_open(const char *uri, const struct swap_nbd_params *params,
			  struct swap_backend **out, char *err, size_t errlen)
{
	struct swap_nbd_params p;
	struct nbd_backend *nb;
	struct nbd_handle *h;
	char msg[256] = "";
	int64_t size;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!uri || !out || strlen(uri) >= sizeof(nb->uri))
		return -EINVAL;
	if (params)
		p = *params;
	else
		swap_nbd_default_params(&p);
	if (!p.timeout_ms || !p.reconnect_ms || !p.depth || p.depth > SWAP_NBD_MAX_DEPTH)
		return -EINVAL;
	h = nbd_dial(uri, connect_deadline(&p), &ret, msg, sizeof(msg));
	if (!h) {
		if (err)
			snprintf(err, errlen, "nbd: cannot connect to %.200s: %s", uri, msg);
		return ret;
	}
	size = nbd_get_size(h);
	if (size < (int64_t)SWAP_BACKEND_PAGE_SIZE) {
		if (err)
			snprintf(err, errlen, "nbd: %.200s: export of %" PRId64
				 " bytes is smaller than one page", uri, size);
		ret = -EINVAL;
		goto out_close;
	}
	if (nbd_is_read_only(h) == 1) {
		if (err)
			snprintf(err, errlen, "nbd: %.200s: export is read-only", uri);
		ret = -EINVAL;
		goto out_close;
	}
	nb = uswap_calloc(1, sizeof(*nb));
	if (!nb) {
		ret = -ENOMEM;
		goto out_close;
	}
	nb->cmds = uswap_calloc(p.depth, sizeof(*nb->cmds));
	nb->page0 = uswap_malloc(SWAP_BACKEND_PAGE_SIZE);
	nb->page0_check = uswap_malloc(SWAP_BACKEND_PAGE_SIZE);
	nb->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!nb->cmds || !nb->page0 || !nb->page0_check || nb->efd < 0) {
		ret = nb->efd < 0 ? -errno : -ENOMEM;
		goto out_free;
	}
	ret = nbd_read_slot0(h, nb->page0, connect_deadline(&p));
	if (ret) {
		if (err)
			snprintf(err, errlen, "nbd: %.200s: cannot read slot 0: %s", uri,
				 strerror(-ret));
		goto out_free;
	}
	for (unsigned int i = 0; i < p.depth; i++)
		nb->cmds[i].nb = nb;
	swap_backend_init(&nb->be, &nbd_ops, (uint64_t)size >> SWAP_BACKEND_PAGE_SHIFT, false);
	strcpy(nb->uri, uri);
	nb->params = p;
	nb->h = h;
	nb->can_trim = nbd_can_trim(h) == 1;
	nb->can_flush = nbd_can_flush(h) == 1;
	nb->structured = nbd_get_structured_replies_negotiated(h) == 1;
	pthread_mutex_init(&nb->q_lock, NULL);
	pthread_cond_init(&nb->q_cond, NULL);
	set_state(nb, NBD_CONNECTED);
	snprintf(nb->be.desc, sizeof(nb->be.desc), "%.200s nbd%s%s", uri,
		 nb->structured ? " structured" : "", nb->can_trim ? " trim" : "");
	if (pthread_create(&nb->thread, NULL, nbd_io_thread, nb)) {
		pthread_mutex_destroy(&nb->q_lock);
		pthread_cond_destroy(&nb->q_cond);
		ret = -EAGAIN;
		goto out_free;
	}
	*out = &nb->be;
	return 0;

out_free:
	if (nb->efd >= 0)
		close(nb->efd);
	free(nb->cmds);
	free(nb->page0);
	free(nb->page0_check);
	free(nb);
out_close:
	nbd_close(h);
	return ret;
}

/* @be as an NBD backend. Context: any. Return: it, or NULL. */
static struct nbd_backend *nbd_of(struct swap_backend *be)
{
	be = be ? swap_backend_base(be) : NULL;
	return be && be->ops == &nbd_ops ? to_nbd(be) : NULL;
}

/* The @pct percentile of a histogram, in us (a bucket's upper edge);
 * *@count the samples. Context: any; relaxed reads. Return: it, 0 if none. */
static uint64_t lat_percentile(_Atomic uint64_t *hist, unsigned int pct, uint64_t *count)
{
	uint64_t total = 0, seen = 0, want;
	unsigned int b;

	for (b = 0; b < NBD_LAT_BUCKETS; b++)
		total += atomic_load_explicit(&hist[b], memory_order_relaxed);
	*count = total;
	if (!total)
		return 0;
	want = (total * pct + 99) / 100;
	for (b = 0; b < NBD_LAT_BUCKETS; b++) {
		seen += atomic_load_explicit(&hist[b], memory_order_relaxed);
		if (seen >= want)
			return lat_bucket_us(b + 1);	/* the bucket's upper edge */
	}
	return lat_bucket_us(NBD_LAT_BUCKETS - 1);
}

/**
 * swap_backend_nbd_stats() - connection and latency figures of an NBD backend
 * @be: an NBD backend
 * @out: filled in
 *
 * Latencies are from issue to reply of successful commands, in buckets of
 * a quarter power of two (a percentile is the upper edge of its bucket).
 *
 * Context: any; relaxed reads, not one snapshot.
 * Return: 0; -EINVAL if @be is not an NBD backend.
 */
int swap_backend_nbd_stats(struct swap_backend *be, struct swap_nbd_stats *out)
{
	struct nbd_backend *nb = nbd_of(be);
	uint64_t samples;

	if (!nb || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->state = atomic_load(&nb->astate) == NBD_CONNECTED ? "connected" :
		     atomic_load(&nb->astate) == NBD_DISCONNECTED ? "reconnecting" : "failed";
	out->reconnects = atomic_load(&nb->reconnects);
	out->lost_connections = atomic_load(&nb->conn_lost);
	out->timeouts = atomic_load(&nb->timeouts);
	out->max_inflight = atomic_load(&nb->max_busy);
	samples = atomic_load(&nb->busy_samples);
	out->avg_inflight = samples ? (double)atomic_load(&nb->busy_sum) / (double)samples : 0;
	out->read_p50_us = lat_percentile(nb->lat_read, 50, &out->read_samples);
	out->read_p99_us = lat_percentile(nb->lat_read, 99, &out->read_samples);
	out->write_p50_us = lat_percentile(nb->lat_write, 50, &out->write_samples);
	out->write_p99_us = lat_percentile(nb->lat_write, 99, &out->write_samples);
	out->can_trim = nb->can_trim;
	out->structured = nb->structured;
	out->depth = nb->params.depth;
	return 0;
}
