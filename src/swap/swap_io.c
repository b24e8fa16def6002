/* SPDX-License-Identifier: MIT */
/*
 * Swap I/O: writing a swap-cache folio to its slots and reading it back,
 * through the device's backend.
 *
 * A write runs with the folio under writeback and unlocked; a read runs
 * with the folio locked, and its completion marks the folio uptodate (or
 * failed) and unlocks it, so that every other thread wanting the data
 * simply waits on the folio lock.
 *
 * Backends that complete in swap_backend_reap() (io_uring) get a
 * completion thread per device, which sleeps while nothing is in flight.
 */
#include <stdlib.h>

#include "io/backend.h"
#include "swap/swap_internal.h"
#include "swap/swap_io.h"

struct swap_io_ctx {
	struct swap_backend *be;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	_Atomic long inflight;		/* requests submitted, not completed */
	bool stop;			/* lock */
};

/*
 * One submission: n requests in one array (the backend takes arrays), each
 * request's private is its folio. The last completion frees the batch.
 */
struct swap_bio_batch {
	struct swap_info_struct *si;	/* pinned until the batch is freed */
	_Atomic unsigned int remaining;
	struct folio **folios;		/* folios[i] is reqs[i]'s; after reqs[] */
	struct swap_io_req reqs[];	/* each req->private is the batch */
};

static struct swap_bio_batch *swap_bio_batch_alloc(struct swap_info_struct *si, unsigned int n)
{
	struct swap_bio_batch *b = calloc(1, sizeof(*b) + n * (sizeof(b->reqs[0]) +
							      sizeof(struct folio *)));

	if (!b)
		return NULL;
	b->si = si;
	b->folios = (struct folio **)&b->reqs[n];
	atomic_init(&b->remaining, n);
	return b;
}

static struct folio *req_folio(struct swap_io_req *req, struct swap_bio_batch **bp)
{
	struct swap_bio_batch *b = req->private;

	*bp = b;
	return b->folios[req - b->reqs];
}

static void swap_io_completed(struct swap_io_ctx *io);

/* After a request's folio is dealt with: the batch's end, maybe. */
static void swap_bio_done(struct swap_io_req *req)
{
	struct swap_bio_batch *b = req->private;
	struct swap_info_struct *si = b->si;
	struct swap_io_ctx *io = si->io;

	swap_io_completed(io);
	if (atomic_fetch_sub(&b->remaining, 1) == 1) {
		put_swap_device(si);
		free(b);
	}
}

static void *swap_io_reaper(void *arg)
{
	struct swap_io_ctx *io = arg;

	for (;;) {
		pthread_mutex_lock(&io->lock);
		while (!io->stop && !atomic_load(&io->inflight))
			pthread_cond_wait(&io->cond, &io->lock);
		if (io->stop && !atomic_load(&io->inflight)) {
			pthread_mutex_unlock(&io->lock);
			return NULL;
		}
		pthread_mutex_unlock(&io->lock);
		swap_backend_reap(io->be, 1);
	}
}

/**
 * swap_io_ctx_create() - completion machinery for @be: a reaper thread when
 * the backend completes asynchronously, nothing otherwise.
 * Context: may sleep. Return: 0, -ENOMEM, -EAGAIN (thread).
 */
int swap_io_ctx_create(struct swap_backend *be, struct swap_io_ctx **out)
{
	struct swap_io_ctx *io;

	*out = NULL;
	if (!be->ops->reap)
		return 0;
	io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->be = be;
	pthread_mutex_init(&io->lock, NULL);
	pthread_cond_init(&io->cond, NULL);
	if (pthread_create(&io->thread, NULL, swap_io_reaper, io)) {
		free(io);
		return -EAGAIN;
	}
	*out = io;
	return 0;
}

/** swap_io_ctx_destroy() - wait for in-flight I/O, stop the reaper. */
void swap_io_ctx_destroy(struct swap_io_ctx *io)
{
	if (!io)
		return;
	pthread_mutex_lock(&io->lock);
	io->stop = true;
	pthread_cond_signal(&io->cond);
	pthread_mutex_unlock(&io->lock);
	pthread_join(io->thread, NULL);
	pthread_mutex_destroy(&io->lock);
	pthread_cond_destroy(&io->cond);
	free(io);
}

static void swap_io_submitted(struct swap_io_ctx *io, long nr)
{
	if (!io)
		return;
	if (atomic_fetch_add(&io->inflight, nr) == 0) {
		pthread_mutex_lock(&io->lock);
		pthread_cond_signal(&io->cond);
		pthread_mutex_unlock(&io->lock);
	}
}

static void swap_io_completed(struct swap_io_ctx *io)
{
	if (io)
		atomic_fetch_sub(&io->inflight, 1);
}

static void swap_write_end_io(struct swap_io_req *req)
{
	struct swap_bio_batch *b;
	struct folio *folio = req_folio(req, &b);
	struct swap_info_struct *si = b->si;

	if (req->result) {
		/* The data stays in memory: dirty again, still in the cache. */
		atomic_fetch_add(&si->nr_write_errors, 1);
		folio_set_flag(folio, PG_error);
		folio_mark_dirty(folio);
	} else {
		atomic_fetch_add(&si->nr_writes, 1);
		folio_clear_flag(folio, PG_error);
	}
	folio_end_writeback(folio);
	folio_put(folio);
	swap_bio_done(req);
}

/**
 * swap_writeout() - write a swap-cache folio to its slots.
 * The folio goes under writeback, is cleaned and unlocked; on completion
 * writeback ends (PG_error and dirty again if the write failed).
 * @sync: wait for the completion.
 * Context: folio locked and in the swap cache, not under writeback; returns
 * with it unlocked. Return: 0 (submitted; with @sync, written), -EIO (the
 * write failed, with @sync), -EINVAL, -EOPNOTSUPP (device without backend),
 * -ENOMEM. On an error before submission the folio is unlocked, unchanged.
 */
int swap_writeout(struct folio *folio, bool sync)
{
	struct swap_info_struct *si;
	struct swap_bio_batch *b = NULL;
	struct swap_io_req *req;
	int err;

	if (!folio_test_locked(folio) || !folio_test_swapcache(folio) ||
	    folio_test_writeback(folio)) {
		folio_unlock(folio);
		return -EINVAL;
	}
	err = swap_entry_pin(folio->swap, &si);
	if (!err && !si->bdev)
		err = -EOPNOTSUPP;
	if (!err && !(b = swap_bio_batch_alloc(si, 1)))
		err = -ENOMEM;
	if (err) {
		if (err != -ENODEV && err != -EINVAL)
			put_swap_device(si);
		folio_unlock(folio);
		return err;
	}
	req = &b->reqs[0];
	req->op = SWAP_IO_WRITE;
	req->nr = (unsigned int)folio_nr_pages(folio);
	req->offset = swp_offset(folio->swap);
	req->buf = folio_address(folio);
	req->end_io = swap_write_end_io;
	req->private = b;
	b->folios[0] = folio;
	folio_get(folio);
	folio_clear_dirty(folio);
	folio_start_writeback(folio);
	folio_unlock(folio);
	/*
	 * The batch's pin ends in the completion, which a synchronous backend
	 * runs inside submit: keep one of our own until submit has returned,
	 * or swapoff could free the backend under it.
	 */
	__get_swap_device(si);
	swap_io_submitted(si->io, 1);
	err = swap_backend_submit(si->bdev, req, 1);
	if (err) {
		/* Not accepted: complete it ourselves, as a failed write. */
		req->result = err;
		swap_write_end_io(req);
	}
	put_swap_device(si);
	if (sync) {
		folio_wait_writeback(folio);
		return folio_test_flag(folio, PG_error) ? -EIO : 0;
	}
	return 0;
}

static void swap_read_end_io(struct swap_io_req *req)
{
	struct swap_bio_batch *b;
	struct folio *folio = req_folio(req, &b);
	struct swap_info_struct *si = b->si;

	if (req->result) {
		atomic_fetch_add(&si->nr_read_errors, 1);
		folio_set_flag(folio, PG_error);
	} else {
		atomic_fetch_add(&si->nr_reads, 1);
		folio_clear_flag(folio, PG_error);
		folio_mark_uptodate(folio);
	}
	folio_unlock(folio);
	swap_bio_done(req);
}

/**
 * swap_read_folios() - read @n locked swap-cache folios of device @si from
 * their slots, in one submission. Each completes by being marked uptodate
 * (or PG_error) and unlocked; synchronous backends complete before return.
 * Context: the folios are locked by the caller, which hands the locks to
 * the I/O; @si pinned by the caller. Return: 0, or -errno when the batch
 * could not be submitted, every folio then completed as failed.
 */
int swap_read_folios(struct swap_info_struct *si, struct folio **folios, unsigned int n)
{
	struct swap_bio_batch *b = NULL;
	unsigned int i;
	int err = 0;

	if (!n)
		return 0;
	if (!si->bdev)
		err = -EOPNOTSUPP;
	else if (!swap_device_tryget(si))
		err = -ENODEV;
	else if (!(b = swap_bio_batch_alloc(si, n))) {
		put_swap_device(si);
		err = -ENOMEM;
	}
	if (err) {
		for (i = 0; i < n; i++) {
			folio_set_flag(folios[i], PG_error);
			folio_unlock(folios[i]);
		}
		return err;
	}
	for (i = 0; i < n; i++) {
		struct swap_io_req *req = &b->reqs[i];

		req->op = SWAP_IO_READ;
		req->nr = (unsigned int)folio_nr_pages(folios[i]);
		req->offset = swp_offset(folios[i]->swap);
		req->buf = folio_address(folios[i]);
		req->end_io = swap_read_end_io;
		req->private = b;
		b->folios[i] = folios[i];
	}
	swap_io_submitted(si->io, n);
	err = swap_backend_submit(si->bdev, b->reqs, n);
	if (err) {
		for (i = 0; i < n; i++) {
			b->reqs[i].result = err;
			swap_read_end_io(&b->reqs[i]);
		}
	}
	return err;
}

/** uswap_swap_writeout() - see uswap/swap.h. */
USWAP_API int uswap_swap_writeout(struct folio *folio, bool sync)
{
	return swap_writeout(folio, sync);
}
