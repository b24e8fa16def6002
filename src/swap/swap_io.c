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
 * A folio whose pages are all zeros is not written: its slots get the
 * zero flag (the table entries' Z, the old design's zeromap), and a read
 * of flagged slots fills zeros without I/O (the kernel's
 * is_folio_zero_filled() / swap_read_folio_zeromap()). A folio with some
 * zero pages is written whole, its slots' flags cleared.
 *
 * Whoever waits for its I/O anyway (a synchronous writeout, a fault's read
 * batch) runs it with swap_backend_rw_sync(): on the calling thread, which
 * on io_uring means a ring of its own (backend_file.c), so no other thread
 * is woken per request. Only asynchronous writeout (reclaim on a slow
 * device) completes elsewhere: backends that complete in
 * swap_backend_reap() (io_uring) get a completion thread per device, which
 * sleeps while nothing is in flight.
 */
#include <stdlib.h>

#include "io/backend.h"
#include "swap/swap_internal.h"
#include "swap/swap_io.h"
#include "util/alloc.h"

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
	struct swap_bio_batch *b = uswap_calloc(1, sizeof(*b) + n * (sizeof(b->reqs[0]) +
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
	io = uswap_calloc(1, sizeof(*io));
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

/* The end of a folio's write with @result: writeback ends. */
static void swap_write_done(struct swap_info_struct *si, struct folio *folio, int result)
{
	if (result) {
		/* The data stays in memory: dirty again, still in the cache. */
		atomic_fetch_add(&si->nr_write_errors, 1);
		folio_set_flag(folio, PG_error);
		folio_mark_dirty(folio);
	} else {
		atomic_fetch_add(&si->nr_writes, 1);
		folio_clear_flag(folio, PG_error);
	}
	folio_end_writeback(folio);
}

static void swap_write_end_io(struct swap_io_req *req)
{
	struct swap_bio_batch *b;
	struct folio *folio = req_folio(req, &b);

	swap_write_done(b->si, folio, req->result);
	folio_put(folio);
	swap_bio_done(req);
}

/* Whether every byte of @folio is zero (is_folio_zero_filled()). */
static bool folio_zero_filled(struct folio *folio)
{
	const uint64_t *w = folio_address(folio);
	size_t i, n = folio_nr_pages(folio) * USWAP_PAGE_SIZE / sizeof(*w);

	for (i = 0; i < n; i += 8) {
		if (w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7])
			return false;
	}
	return true;
}

/*
 * The zero flag of @folio's slots to @zero. Clearing, the common case,
 * writes nothing when no slot has it.
 * Context: folio locked in the swap cache (its slots pinned); @si pinned;
 * takes ci->lock.
 */
static void swap_zero_mark(struct swap_info_struct *si, struct folio *folio, bool zero)
{
	uint64_t offset = swp_offset(folio->swap);
	unsigned int nr = (unsigned int)folio_nr_pages(folio);
	struct swap_cluster_info *ci = swap_cluster_lock(si, offset);

	if (zero || si->design->zero_count(si, ci, offset, nr))
		si->design->zero_set(si, ci, offset, nr, zero);
	swap_cluster_unlock(ci);
}

/**
 * swap_zero_uniform() - whether slots [@offset, @offset+@nr) of one
 * cluster all have the zero flag or all lack it: a large folio may be
 * swapped in over them only then (can_swapin_thp()'s swap_zeromap_batch()
 * test; a mixed range falls back to smaller folios).
 * Context: @si pinned; takes ci->lock. Return: true if uniform.
 */
bool swap_zero_uniform(struct swap_info_struct *si, uint64_t offset, unsigned int nr)
{
	struct swap_cluster_info *ci;
	unsigned int z;

	if (offset % SWAPFILE_CLUSTER + nr > SWAPFILE_CLUSTER || offset + nr > si->max)
		return false;
	ci = swap_cluster_lock(si, offset);
	z = si->design->zero_count(si, ci, offset, nr);
	swap_cluster_unlock(ci);
	return !z || z == nr;
}

/* swap_writeout() with @sync: the write on this thread. Context: @si pinned. */
static int swap_writeout_sync(struct swap_info_struct *si, struct folio *folio)
{
	struct swap_io_req req = {
		.op = SWAP_IO_WRITE,
		.nr = (unsigned int)folio_nr_pages(folio),
		.offset = swp_offset(folio->swap),
		.buf = folio_address(folio),
	};
	int err;

	/* The caller's reference keeps the folio while it is unlocked. */
	folio_clear_dirty(folio);
	folio_start_writeback(folio);
	folio_unlock(folio);
	err = swap_backend_rw_sync(si->bdev, &req, 1);
	swap_write_done(si, folio, err);
	put_swap_device(si);
	/* A refused write (no result: e.g. -ENOMEM sealing it) says why. */
	return !err ? 0 : req.result ? -EIO : err;
}

/**
 * swap_writeout() - write a swap-cache folio to its slots.
 * The folio goes under writeback, is cleaned and unlocked; on completion
 * writeback ends (PG_error and dirty again if the write failed).
 * @sync: wait for the completion.
 * A folio of zeros is not written: its slots are flagged, it is cleaned
 * and unlocked at once.
 * Context: folio locked and in the swap cache, not under writeback; returns
 * with it unlocked. Return: 0 (submitted; with @sync, written; or all
 * zeros, flagged), -EIO (the
 * write failed, with @sync), -EINVAL, -EOPNOTSUPP (device without backend),
 * -ENOMEM (no memory to submit it; with @sync also a write the device
 * refused for want of memory, left dirty as a failed one). On an error
 * before submission the folio is unlocked, unchanged.
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
	if (!err && folio_zero_filled(folio)) {
		/* Nothing to write: the flag says what the slots hold. */
		swap_zero_mark(si, folio, true);
		atomic_fetch_add(&si->nr_zero_out, folio_nr_pages(folio));
		folio_clear_dirty(folio);
		folio_unlock(folio);
		put_swap_device(si);
		return 0;
	}
	if (!err)
		swap_zero_mark(si, folio, false);
	if (!err && !si->bdev)
		err = -EOPNOTSUPP;
	if (!err && sync)
		return swap_writeout_sync(si, folio);
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
	return 0;
}

/* The end of a folio's read with @result: uptodate or PG_error, unlocked. */
static void swap_read_done(struct swap_info_struct *si, struct folio *folio, int result)
{
	if (result) {
		atomic_fetch_add(&si->nr_read_errors, 1);
		folio_set_flag(folio, PG_error);
	} else {
		atomic_fetch_add(&si->nr_reads, 1);
		folio_clear_flag(folio, PG_error);
		folio_mark_uptodate(folio);
	}
	folio_unlock(folio);
}

/*
 * Read one page of @folio at slot @offset, on this thread.
 * Context: folio locked; @si pinned. Return: 0 or the request's error.
 */
static int swap_read_page(struct swap_info_struct *si, struct folio *folio, uint64_t offset,
			  unsigned int i)
{
	struct swap_io_req req = {
		.op = SWAP_IO_READ,
		.nr = 1,
		.offset = offset + i,
		.buf = (char *)folio_address(folio) + (size_t)i * USWAP_PAGE_SIZE,
	};
	int err;

	if (!si->bdev)
		return -EOPNOTSUPP;
	err = swap_backend_rw_sync(si->bdev, &req, 1);
	return req.result ? req.result : err;
}

/*
 * swap_read_zero() - fill the pages of @folio whose slots have the zero
 * flag. All of them: the read is done (uptodate, unlocked), true. None:
 * false, the device reads it. Some (a large folio added over slots that
 * different folios wrote; swap-in itself avoids it: swap_zero_uniform()):
 * the zero pages filled, the others read one by one here; done, true.
 * Context: folio locked in the swap cache; @si pinned; takes ci->lock.
 */
static bool swap_read_zero(struct swap_info_struct *si, struct folio *folio)
{
	uint64_t offset = swp_offset(folio->swap);
	unsigned int nr = (unsigned int)folio_nr_pages(folio), z, i;
	struct swap_cluster_info *ci = swap_cluster_lock(si, offset);
	bool flag[SWAPFILE_CLUSTER];
	int err = 0;

	z = si->design->zero_count(si, ci, offset, nr);
	if (z && z < nr)
		for (i = 0; i < nr; i++)
			flag[i] = si->design->zero_count(si, ci, offset + i, 1);
	swap_cluster_unlock(ci);
	if (!z)
		return false;
	if (z == nr) {
		memset(folio_address(folio), 0, (size_t)nr * USWAP_PAGE_SIZE);
	} else {
		for (i = 0; i < nr; i++) {
			int e;

			if (flag[i]) {
				memset((char *)folio_address(folio) + (size_t)i * USWAP_PAGE_SIZE, 0,
				       USWAP_PAGE_SIZE);
				continue;
			}
			e = swap_read_page(si, folio, offset, i);
			if (e && !err)
				err = e;
		}
	}
	atomic_fetch_add(&si->nr_zero_in, z);
	if (z < nr) {
		swap_read_done(si, folio, err);
		return true;
	}
	folio_clear_flag(folio, PG_error);	/* no I/O: not counted as a read */
	folio_mark_uptodate(folio);
	folio_unlock(folio);
	return true;
}

/**
 * swap_read_entry() - copy the data of the swapped-out page @entry into
 * @buf (one page) without a folio of its own: from its swap-cache folio
 * when one is cached and uptodate, zeros for a zero-flagged slot, else
 * read straight from the device (no cache, no readahead, no frame).
 * The caller holds a reference to the slot (a count) and nobody writes
 * the page meanwhile, so the slot's data is stable.
 * Context: may sleep (I/O, folio lock); takes ci->lock. Return: 0;
 * -EINVAL, -ENODEV (no such device), -EOPNOTSUPP (no backend: an
 * in-memory device keeps no data), -EIO (the read failed).
 */
int swap_read_entry(swp_entry_t entry, void *buf)
{
	struct swap_info_struct *si;
	struct swap_cluster_info *ci;
	struct folio *folio = swap_cache_get_folio(entry);
	uint64_t offset = swp_offset(entry);
	unsigned int zero;
	int err;

	if (folio) {
		bool done = false;

		folio_lock(folio);
		if (folio_matches_swap_entry(folio, entry) && folio_test_uptodate(folio)) {
			memcpy(buf, (char *)folio_address(folio) +
			       (size_t)(offset - swp_offset(folio->swap)) * USWAP_PAGE_SIZE,
			       USWAP_PAGE_SIZE);
			done = true;
		}
		folio_unlock(folio);
		folio_put(folio);
		if (done)
			return 0;
	}
	err = swap_entry_pin(entry, &si);
	if (err)
		return err;
	ci = swap_cluster_lock(si, offset);
	zero = si->design->zero_count(si, ci, offset, 1);
	swap_cluster_unlock(ci);
	if (zero) {
		memset(buf, 0, USWAP_PAGE_SIZE);
		atomic_fetch_add(&si->nr_zero_in, 1);
	} else if (!si->bdev) {
		err = -EOPNOTSUPP;
	} else {
		struct swap_io_req req = {
			.op = SWAP_IO_READ, .nr = 1, .offset = offset, .buf = buf,
		};

		err = swap_backend_rw_sync(si->bdev, &req, 1);
		if (!err)
			err = req.result;
		if (err) {
			atomic_fetch_add(&si->nr_read_errors, 1);
			err = -EIO;
		} else {
			atomic_fetch_add(&si->nr_reads, 1);
		}
	}
	put_swap_device(si);
	return err;
}

/**
 * swap_read_folios() - read @n (at most SWAP_READ_BATCH_MAX) locked
 * swap-cache folios of device @si from their slots, in one batch, on the
 * calling thread. Each is marked uptodate (or PG_error) and unlocked
 * before this returns.
 * Folios whose slots have the zero flag are filled with zeros, not read.
 * Context: the folios are locked by the caller, which hands the locks to
 * the I/O; @si pinned by the caller; sleeps. Return: 0 (also when some
 * reads failed: PG_error says which), or -errno when the batch could not
 * be started (-EOPNOTSUPP, -ENODEV, -EINVAL), every folio to be read from
 * the device then failed.
 */
int swap_read_folios(struct swap_info_struct *si, struct folio **folios, unsigned int n)
{
	struct swap_io_req reqs[SWAP_READ_BATCH_MAX];
	struct folio *io[SWAP_READ_BATCH_MAX];
	unsigned int i, nio = 0;
	int err = 0;

	if (n > SWAP_READ_BATCH_MAX) {
		for (i = 0; i < n; i++)
			swap_read_done(si, folios[i], -EINVAL);
		return -EINVAL;
	}
	/* Zero-flagged slots are filled here; the rest go to the device. */
	for (i = 0; i < n; i++) {
		if (!swap_read_zero(si, folios[i]))
			io[nio++] = folios[i];
	}
	folios = io;
	n = nio;
	if (!n)
		return 0;
	if (!si->bdev)
		err = -EOPNOTSUPP;
	else if (!swap_device_tryget(si))
		err = -ENODEV;
	if (err) {
		for (i = 0; i < n; i++)
			swap_read_done(si, folios[i], err);
		return err;
	}
	for (i = 0; i < n; i++) {
		reqs[i] = (struct swap_io_req){
			.op = SWAP_IO_READ,
			.nr = (unsigned int)folio_nr_pages(folios[i]),
			.offset = swp_offset(folios[i]->swap),
			.buf = folio_address(folios[i]),
		};
	}
	err = swap_backend_rw_sync(si->bdev, reqs, n);
	if (err) {
		/* Every result 0 with an error: the batch was rejected. */
		for (i = 0; i < n && !reqs[i].result; i++)
			;
		if (i < n)
			err = 0;	/* it ran; the results say what failed */
		else
			for (i = 0; i < n; i++)
				reqs[i].result = err;
	}
	for (i = 0; i < n; i++)
		swap_read_done(si, folios[i], reqs[i].result);
	put_swap_device(si);
	return err;
}

/** uswap_swap_writeout() - see uswap/swap.h. */
USWAP_API int uswap_swap_writeout(struct folio *folio, bool sync)
{
	return swap_writeout(folio, sync);
}
