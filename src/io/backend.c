/* SPDX-License-Identifier: MIT */
/*
 * The generic half of the backend contract (see backend.h): argument
 * checks, statistics, completion, and the synchronous wait helper.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <string.h>

#include "io/backend.h"
#include "util/debug.h"

/* swap_backend_set_observer(): NULL, or the registered observer. */
static _Atomic(const struct swap_backend_observer *) backend_observer;

/**
 * swap_backend_init() - set up the common part of a backend
 * @be: the embedded struct of a new backend
 * @ops: its ops table (name, submit and destroy non-NULL)
 * @nr_slots: its size in slots
 * @synchronous: SWP_SYNCHRONOUS_IO
 *
 * Context: any; called by a backend's create function before publishing @be.
 * Return: nothing.
 */
void swap_backend_init(struct swap_backend *be,
		       const struct swap_backend_ops *ops, uint64_t nr_slots,
		       bool synchronous)
{
	USWAP_BUG_ON(!ops || !ops->name || !ops->submit || !ops->destroy);
	memset(be, 0, sizeof(*be));
	be->ops = ops;
	be->nr_slots = nr_slots;
	be->synchronous = synchronous;
	snprintf(be->desc, sizeof(be->desc), "%s", ops->name);
}

/**
 * swap_backend_check_reqs() - check a batch against the shared preconditions
 * @be: the backend
 * @reqs: the batch
 * @nr: requests in @reqs
 *
 * Context: any.
 * Return: 0 if every request is well formed, -EINVAL otherwise (with a
 * warning at USWAP_DEBUG >= 1).
 */
int swap_backend_check_reqs(const struct swap_backend *be,
			    const struct swap_io_req *reqs, unsigned int nr)
{
	unsigned int i;

	if (nr && !reqs)
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		const struct swap_io_req *r = &reqs[i];

		if ((r->op != SWAP_IO_READ && r->op != SWAP_IO_WRITE) ||
		    !r->nr || r->nr > SWAP_IO_MAX_RUN || !r->buf ||
		    r->offset >= be->nr_slots ||
		    r->nr > be->nr_slots - r->offset) {
			uswap_warn("%s: bad request %u: op %d offset %" PRIu64
				   " nr %u buf %p (nr_slots %" PRIu64 ")",
				   be->ops->name, i, r->op, r->offset, r->nr,
				   r->buf, be->nr_slots);
			return -EINVAL;
		}
	}
	return 0;
}

/**
 * swap_backend_complete() - finish a request: result, stats, end_io
 * @be: the backend that owns the request
 * @req: the request
 * @result: 0 or -errno
 *
 * Context: any; called by backends, never with a lock that end_io could
 * want. @req must not be touched after this returns.
 * Return: nothing.
 */
void swap_backend_complete(struct swap_backend *be, struct swap_io_req *req,
			   int result)
{
	uint64_t bytes = (uint64_t)req->nr << SWAP_BACKEND_PAGE_SHIFT;

	if (req->op == SWAP_IO_READ) {
		atomic_fetch_add_explicit(&be->stats.reads, 1, memory_order_relaxed);
		if (!result)
			atomic_fetch_add_explicit(&be->stats.read_bytes, bytes,
						  memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&be->stats.writes, 1, memory_order_relaxed);
		if (!result)
			atomic_fetch_add_explicit(&be->stats.write_bytes, bytes,
						  memory_order_relaxed);
	}
	if (result)
		atomic_fetch_add_explicit(&be->stats.errors, 1, memory_order_relaxed);
	req->result = result;
	if (req->end_io)
		req->end_io(req);
}

/**
 * swap_backend_submit() - start a batch of requests
 * @be: the backend
 * @reqs: @nr requests (shared preconditions in backend.h)
 * @nr: batch size; 0 does nothing
 *
 * Each accepted request completes once through its end_io, possibly before
 * this returns (synchronous backends always do that).
 *
 * Context: any thread; may sleep; may run end_io of these or earlier
 * requests.
 * Return: 0 if the whole batch was accepted; -EINVAL (a malformed request)
 * with none of it accepted.
 */
int swap_backend_submit(struct swap_backend *be, struct swap_io_req *reqs,
			unsigned int nr)
{
	int ret;

	if (!nr)
		return 0;
	ret = swap_backend_check_reqs(be, reqs, nr);
	if (ret)
		return ret;
	return be->ops->submit(be, reqs, nr);
}

/**
 * swap_backend_reap() - complete finished requests of an async backend
 * @be: the backend
 * @min_complete: wait until at least this many have completed; 0 only
 *                collects what is already done
 *
 * Returns early, with fewer than @min_complete, when nothing is left in
 * flight (another thread may have reaped the ones the caller waits for).
 *
 * Context: any thread; sleeps when @min_complete > 0; runs end_io.
 * Return: the number of requests completed by this call (0 for backends
 * that complete inside submit), or -errno from the kernel (e.g. -EINTR is
 * retried, not returned).
 */
int swap_backend_reap(struct swap_backend *be, unsigned int min_complete)
{
	if (!be->ops->reap)
		return 0;
	return be->ops->reap(be, min_complete);
}

struct sync_wait {
	_Atomic unsigned int pending;
};

static void sync_end_io(struct swap_io_req *req)
{
	struct sync_wait *w = req->private;

	atomic_fetch_sub_explicit(&w->pending, 1, memory_order_release);
}

/**
 * swap_backend_rw_sync() - submit a batch and wait for all of it
 * @be: the backend
 * @reqs: @nr requests; their end_io and private are overwritten
 * @nr: batch size
 *
 * Every request has completed when this returns. A backend with its own
 * synchronous path (ops->rw_sync) runs the batch there, on this thread.
 *
 * Context: any thread; sleeps. The caller must not hold a lock that other
 * threads' end_io callbacks take (this may reap their requests too).
 * Return: 0 if every request succeeded; -EINVAL if the batch was rejected
 * (nothing done); otherwise the first failed request's result (e.g. -EIO),
 * with every request's own result set.
 */
int swap_backend_rw_sync(struct swap_backend *be, struct swap_io_req *reqs,
			 unsigned int nr)
{
	struct sync_wait w;
	unsigned int i;
	int ret;

	if (!nr)
		return 0;
	atomic_init(&w.pending, nr);
	for (i = 0; i < nr; i++) {
		reqs[i].end_io = sync_end_io;
		reqs[i].private = &w;
		reqs[i].result = 0;
	}
	if (be->ops->rw_sync) {
		ret = swap_backend_check_reqs(be, reqs, nr);
		if (ret)
			return ret;
		/* On success every request has completed: pending is 0. */
		ret = be->ops->rw_sync(be, reqs, nr);
	} else {
		ret = swap_backend_submit(be, reqs, nr);
	}
	if (ret)
		return ret;
	while (atomic_load_explicit(&w.pending, memory_order_acquire)) {
		/*
		 * We may not return while a request points at w. Reaping 0
		 * with ours pending means another thread took our
		 * completions and is about to run sync_end_io: let it. A
		 * reap error (none is expected once submit succeeded) is
		 * treated the same way.
		 */
		if (swap_backend_reap(be, 1) <= 0)
			sched_yield();
	}
	for (i = 0; i < nr; i++)
		if (reqs[i].result)
			return reqs[i].result;
	return 0;
}

/**
 * swap_backend_read() - read a run of slots, waiting for it
 * @be: the backend
 * @offset: first slot
 * @nr: slots, 1..SWAP_IO_MAX_RUN
 * @buf: nr * 4096 bytes
 *
 * Context: any thread; sleeps.
 * Return: 0, -EINVAL for a bad run, or the I/O error (-EIO, ...).
 */
int swap_backend_read(struct swap_backend *be, uint64_t offset,
		      unsigned int nr, void *buf)
{
	struct swap_io_req req = {
		.op = SWAP_IO_READ, .offset = offset, .nr = nr, .buf = buf,
	};

	return swap_backend_rw_sync(be, &req, 1);
}

/**
 * swap_backend_write() - write a run of slots, waiting for it
 * @be: the backend
 * @offset: first slot
 * @nr: slots, 1..SWAP_IO_MAX_RUN
 * @buf: nr * 4096 bytes
 *
 * Context: any thread; sleeps.
 * Return: 0, -EINVAL for a bad run, or the I/O error (-EIO, -ENOSPC, ...).
 */
int swap_backend_write(struct swap_backend *be, uint64_t offset,
		       unsigned int nr, const void *buf)
{
	struct swap_io_req req = {
		.op = SWAP_IO_WRITE, .offset = offset, .nr = nr,
		.buf = (void *)buf,	/* never written through for a write */
	};

	return swap_backend_rw_sync(be, &req, 1);
}

/**
 * swap_backend_flush() - make completed writes durable
 * @be: the backend
 *
 * Context: any thread; sleeps.
 * Return: 0 or -errno from the device (e.g. -EIO).
 */
int swap_backend_flush(struct swap_backend *be)
{
	if (!be->ops->flush)
		return 0;
	return be->ops->flush(be);
}

/**
 * swap_backend_discard() - tell the device a run of slots holds no data
 * @be: the backend
 * @offset: first slot
 * @nr: slots; offset + nr <= nr_slots
 *
 * The slots read back as zeroes or as their old content afterwards
 * (device-dependent); the swap layer only discards free slots.
 *
 * Context: any thread; sleeps.
 * Return: 0; -EINVAL for a bad range; -EOPNOTSUPP when the device cannot.
 */
int swap_backend_discard(struct swap_backend *be, uint64_t offset, uint64_t nr)
{
	if (!nr)
		return 0;
	if (offset >= be->nr_slots || nr > be->nr_slots - offset)
		return -EINVAL;
	if (!be->ops->discard)
		return -EOPNOTSUPP;
	return be->ops->discard(be, offset, nr);
}

/**
 * swap_backend_slot_free_notify() - the slot's data is no longer needed
 * @be: the backend
 * @offset: the slot, < nr_slots
 *
 * Like the kernel's swap_slot_free_notify(): a memory backend releases the
 * slot's memory; others ignore it.
 * pre: no I/O on @offset in flight.
 *
 * Context: any thread; does not sleep for long.
 * Return: nothing.
 */
void swap_backend_slot_free_notify(struct swap_backend *be, uint64_t offset)
{
	if (offset >= be->nr_slots) {
		uswap_warn("%s: slot_free_notify(%" PRIu64 ") past %" PRIu64,
			   be->ops->name, offset, be->nr_slots);
		return;
	}
	if (be->ops->slot_free_notify)
		be->ops->slot_free_notify(be, offset);
}

/**
 * swap_backend_destroy() - release a backend
 * @be: the backend, or NULL
 *
 * Requests still in flight are completed (their end_io runs) first.
 * pre: no other thread uses @be.
 *
 * Context: any thread; sleeps.
 * Return: nothing.
 */
void swap_backend_destroy(struct swap_backend *be)
{
	const struct swap_backend_observer *obs;

	if (!be)
		return;
	obs = atomic_load_explicit(&backend_observer, memory_order_acquire);
	if (obs && obs->destroy)
		obs->destroy(be, obs->arg);
	be->ops->destroy(be);
}

/**
 * swap_backend_destroy_inner() - release a wrapper's inner backend
 * @be: the backend a wrapper wraps
 *
 * As swap_backend_destroy(), without telling the observer: the wrapper
 * stands for it there (its counters are the requests, its stats reach
 * the inner backend's through swap_backend_base()).
 *
 * Context: the wrapper's destroy. Return: nothing.
 */
void swap_backend_destroy_inner(struct swap_backend *be)
{
	be->ops->destroy(be);
}

/**
 * swap_backend_set_observer() - watch every backend's last moment
 * @obs: the observer (it and its arg outlive its registration), or NULL
 *
 * obs->destroy(be, arg) runs in swap_backend_destroy() before the backend
 * is released, on the destroying thread (swapoff's, for a swap device).
 * At swapoff no request of the device is in flight any more, so its
 * counters and backend-specific stats are final there: the bench reads
 * per-device figures this way after a workload has swapped its devices
 * off. Backends destroyed elsewhere (a failed swapon, a fault wrapper's
 * inner backend) are reported too; an encryption wrapper's inner backend
 * is not (swap_backend_destroy_inner()).
 *
 * Context: any; the observer must not destroy backends, and must be
 * unregistered (NULL) only when no destroy can be running.
 * Return: nothing.
 */
void swap_backend_set_observer(const struct swap_backend_observer *obs)
{
	atomic_store_explicit(&backend_observer, obs, memory_order_release);
}

/**
 * swap_backend_describe() - one line naming the backend and its mode
 * @be: the backend
 *
 * E.g. "file:/var/swap io_uring", "file:/dev/sdb pread",
 * "zram:1073741824 lz4".
 *
 * Context: any.
 * Return: a string owned by @be, valid until it is destroyed.
 */
const char *swap_backend_describe(const struct swap_backend *be)
{
	return be->desc;
}

/**
 * swap_backend_get_stats() - snapshot of the request counters
 * @be: the backend
 * @out: filled with the counters
 *
 * Context: any; counters read one by one (relaxed), so a snapshot taken
 * during I/O may be skewed by the requests completing meanwhile.
 * Return: nothing.
 */
void swap_backend_get_stats(const struct swap_backend *be,
			    struct swap_backend_stats *out)
{
	struct swap_backend *b = (struct swap_backend *)be;

	out->reads = atomic_load_explicit(&b->stats.reads, memory_order_relaxed);
	out->writes = atomic_load_explicit(&b->stats.writes, memory_order_relaxed);
	out->read_bytes = atomic_load_explicit(&b->stats.read_bytes,
					       memory_order_relaxed);
	out->write_bytes = atomic_load_explicit(&b->stats.write_bytes,
						memory_order_relaxed);
	out->errors = atomic_load_explicit(&b->stats.errors, memory_order_relaxed);
}

/**
 * swap_backend_failed() - whether the device has failed for good
 * @be: the backend
 *
 * A failed device completes every request with -EIO (e.g. an NBD server
 * that did not come back within the reconnect window); the swap layer
 * stops allocating on it.
 *
 * A wrapper has failed when the backend it wraps has.
 *
 * Context: any; lockless.
 * Return: true once the device has failed.
 */
bool swap_backend_failed(const struct swap_backend *be)
{
	struct swap_backend *b = (struct swap_backend *)be;

	for (; b; b = b->ops->inner ? b->ops->inner(b) : NULL)
		if (atomic_load_explicit(&b->failed, memory_order_acquire))
			return true;
	return false;
}

/**
 * swap_backend_base() - the backend under every wrapper (encryption, fault)
 * @be: the backend
 *
 * Context: any. Return: @be itself when it wraps nothing.
 */
struct swap_backend *swap_backend_base(struct swap_backend *be)
{
	while (be->ops->inner)
		be = be->ops->inner(be);
	return be;
}
