/* SPDX-License-Identifier: MIT */
/*
 * File and block device backend: slot N is bytes [N*4096, N*4096+4096) of
 * the file. I/O goes through an io_uring of FILE_RING_DEPTH entries, or,
 * when the ring cannot be set up (or USWAP_NO_IO_URING=1 or
 * SWAP_FILE_NO_URING asks for it), through pread/pwrite inside submit.
 *
 * io_uring locking. liburing lets one thread fill the submission queue
 * while another consumes the completion queue, so the two sides have their
 * own mutex:
 *   sq_lock: get_sqe / prep / io_uring_submit. The SQ is empty whenever
 *            sq_lock is free: a holder submits what it prepared before it
 *            lets go.
 *   cq_lock: wait / peek / cqe_seen, and the end_io calls of what was
 *            reaped.
 * No thread holds both, except buffer (un)registration which takes
 * sq_lock then cq_lock with nothing in flight.
 *
 * inflight counts requests accepted and not yet completed, including ones
 * a reaper has taken off the CQ to resubmit after a short transfer. New
 * requests are prepared only while inflight < depth, so the SQ (depth
 * entries) never overflows and the CQ (2 * depth) never does either. A
 * submitter that finds the ring full lets go of sq_lock and reaps.
 *
 * Why a waiter in reap cannot hang: it sleeps in io_uring_wait_cqe() only
 * while some request other than the ones on its own retry list is in
 * flight; every such request is either in the kernel or on another
 * thread's retry list, and that thread resubmits it without needing
 * cq_lock.
 *
 * Synchronous callers (swap_backend_rw_sync(): a sync swap-out, a fault's
 * read batch) do not use the shared ring. Completing there means another
 * thread (the swap layer's reaper) wakes up for every request and wakes the
 * caller in turn: two context switches per page. Instead a caller takes a
 * ring of its own from a small pool ("sring", FILE_SRING_MAX at most),
 * submits its batch and waits for it in one io_uring_enter(), and gives
 * the ring back: no lock is held while it waits, nobody else is woken.
 * When every sring is taken, the caller does pread/pwrite itself.
 *
 * Buffered writes to a regular file are the exception: a file system
 * without non-blocking buffered writes (FMODE_BUF_WASYNC; ext4 has none)
 * makes io_uring hand every such write to an io-wq worker thread, which
 * costs the same two switches again. A synchronous caller gains nothing
 * from that, so it writes with pwrite on its own thread (write_inline).
 * Asynchronous writes still go through the shared ring, where the worker
 * overlaps the submitter.
 *
 * pool_lock guards the sring free list and counts, and is taken inside
 * sq_lock and cq_lock by buffer (un)registration, which changes the
 * registered region only while no sring is out of the pool.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <linux/fs.h>

#include <liburing.h>

#include "io/backend.h"
#if defined(USWAP_TSAN)
#include <sanitizer/tsan_interface.h>
/* The kernel orders a request's SQE before its CQE; tell TSan. */
#define uswap_tsan_release(p) __tsan_release(p)
#define uswap_tsan_acquire(p) __tsan_acquire(p)
#else
#define uswap_tsan_release(p) do { } while (0)
#define uswap_tsan_acquire(p) do { } while (0)
#endif
#include "util/alloc.h"
#include "util/debug.h"
#include "util/lock.h"

#define FILE_RING_DEPTH	64U
#define FILE_SRING_DEPTH 64U	/* one readahead batch (SWAP_READ_BATCH_MAX) */
#define FILE_SRING_MAX	16U	/* synchronous callers with a ring at once */

/* A ring for one synchronous caller at a time (see the top comment). */
struct file_sring {
	struct file_sring *next;	/* pool free list; pool_lock */
	struct io_uring ring;		/* used by its holder alone */
	bool fixed;			/* the region is registered on it; pool_lock */
};

struct file_backend {
	struct swap_backend be;
	int fd;				/* O_RDWR, constant */
	bool is_blkdev;			/* constant */
	bool direct;			/* O_DIRECT: bufs must be 4096-aligned */
	bool use_uring;			/* constant after open */
	bool write_inline;		/* sync writes by pwrite; constant */
	unsigned int depth;		/* ring entries, constant */
	struct io_uring ring;
	struct uswap_mutex sq_lock;
	struct uswap_mutex cq_lock;
	_Atomic unsigned int inflight;	/* see the top comment */
	_Atomic unsigned long handoff;	/* release at submit, acquire at reap */
	char *reg_base;			/* registered buffer; changed under both
					 * locks and pool_lock, with no sring out */
	size_t reg_len;
	struct uswap_mutex pool_lock;
	struct file_sring *sring_free;	/* idle srings; pool_lock */
	unsigned int nr_srings;		/* srings made; pool_lock */
	unsigned int nr_srings_out;	/* srings held by callers; pool_lock */
};

static inline struct file_backend *to_file(struct swap_backend *be)
{
	return container_of(be, struct file_backend, be);
}

static inline size_t req_bytes(const struct swap_io_req *r)
{
	return (size_t)r->nr << SWAP_BACKEND_PAGE_SHIFT;
}

/* ---- pread/pwrite path ---- */

static int file_rw_direct(struct file_backend *f, struct swap_io_req *r)
{
	size_t total = req_bytes(r), done = 0;
	off_t base = (off_t)(r->offset << SWAP_BACKEND_PAGE_SHIFT);

	while (done < total) {
		char *p = (char *)r->buf + done;
		ssize_t n;

		if (r->op == SWAP_IO_READ)
			n = pread(f->fd, p, total - done, base + (off_t)done);
		else
			n = pwrite(f->fd, p, total - done, base + (off_t)done);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;	/* past the end: truncated under us */
		done += (size_t)n;
	}
	return 0;
}

/* ---- io_uring path ---- */

/*
 * Prepare the rest of @r (past bk_done) on @ring; @reg says whether the
 * registered region may be used on that ring. The caller owns the ring's SQ
 * and has room in it.
 */
static void file_prep_on(struct file_backend *f, struct io_uring *ring,
			 bool reg, struct swap_io_req *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	char *buf = (char *)r->buf + r->bk_done;
	unsigned int len = (unsigned int)(req_bytes(r) - r->bk_done);
	uint64_t off = (r->offset << SWAP_BACKEND_PAGE_SHIFT) + r->bk_done;
	bool fixed;

	USWAP_BUG_ON(!sqe);
	fixed = reg && f->reg_base && buf >= f->reg_base &&
		(size_t)(buf - f->reg_base) + len <= f->reg_len;
	if (r->op == SWAP_IO_READ) {
		if (fixed)
			io_uring_prep_read_fixed(sqe, f->fd, buf, len, off, 0);
		else
			io_uring_prep_read(sqe, f->fd, buf, len, off);
	} else {
		if (fixed)
			io_uring_prep_write_fixed(sqe, f->fd, buf, len, off, 0);
		else
			io_uring_prep_write(sqe, f->fd, buf, len, off);
	}
	io_uring_sqe_set_data(sqe, r);
}

static void __file_prep(struct file_backend *f, struct swap_io_req *r)
{
	uswap_assert_held(&f->sq_lock);
	/* inflight <= depth and the SQ is drained at each unlock */
	file_prep_on(f, &f->ring, true, r);
}

static int file_reap(struct swap_backend *be, unsigned int min_complete);

/* Push every prepared SQE to the kernel. Called and returns with sq_lock. */
static void __file_flush_sq(struct file_backend *f)
{
	uswap_assert_held(&f->sq_lock);
	/*
	 * The request fields written by the submitting thread are read by
	 * whichever thread reaps the CQE. The kernel orders the two, but
	 * only through the ring; this release (paired with the acquire in
	 * file_reap()) states the handoff in C11 terms, which is what TSan
	 * checks.
	 */
	atomic_fetch_add_explicit(&f->handoff, 1, memory_order_release);
	while (io_uring_sq_ready(&f->ring)) {
		int r = io_uring_submit(&f->ring);

		if (r >= 0 || r == -EINTR)
			continue;
		/* -EAGAIN/-EBUSY: out of kernel resources or CQ backlog */
		USWAP_BUG_ON(r != -EAGAIN && r != -EBUSY);
		uswap_mutex_unlock(&f->sq_lock);
		file_reap(&f->be, 0);
		sched_yield();
		uswap_mutex_lock(&f->sq_lock);
	}
}

static void file_resubmit(struct file_backend *f, struct swap_io_req *list)
{
	uswap_mutex_lock(&f->sq_lock);
	for (; list; list = list->bk_next) {
		__file_prep(f, list);	/* already counted in inflight */
		uswap_tsan_release(list);
	}
	__file_flush_sq(f);
	uswap_mutex_unlock(&f->sq_lock);
}

/*
 * Account a CQE's result *@res to @r. Return: true when @r is finished
 * (*@res is then its result, 0 or -errno), false when the rest of it must
 * be submitted again (a short transfer, -EAGAIN, -EINTR).
 */
static bool file_cqe_finished(struct swap_io_req *r, int *res)
{
	int v = *res;

	if (v == -EAGAIN || v == -EINTR)
		return false;
	if (v < 0)
		return true;
	if (v == 0) {
		*res = -EIO;	/* no progress: past the end of the file */
		return true;
	}
	r->bk_done += (size_t)v;
	if (r->bk_done < req_bytes(r))
		return false;
	*res = 0;
	return true;
}

/* A CQE for @r with result @res: 1 if @r completed, 0 if queued for retry. */
static int file_cqe_done(struct file_backend *f, struct swap_io_req *r, int res,
			 struct swap_io_req **retry)
{
	if (!file_cqe_finished(r, &res)) {
		r->bk_next = *retry;
		*retry = r;
		return 0;
	}
	swap_backend_complete(&f->be, r, res);
	/* after end_io, so that "nothing in flight" implies "all ended" */
	atomic_fetch_sub_explicit(&f->inflight, 1, memory_order_release);
	return 1;
}

static int file_reap(struct swap_backend *be, unsigned int min_complete)
{
	struct file_backend *f = to_file(be);
	unsigned int done = 0;

	if (!f->use_uring)
		return 0;
	for (;;) {
		struct swap_io_req *retry = NULL;
		unsigned int nr_retry = 0;

		uswap_mutex_lock(&f->cq_lock);
		for (;;) {
			struct io_uring_cqe *cqe;
			struct swap_io_req *r;
			int ret, res;

			if (done >= min_complete) {
				ret = io_uring_peek_cqe(&f->ring, &cqe);
				if (ret == -EAGAIN)
					break;
			} else {
				if (atomic_load_explicit(&f->inflight,
							 memory_order_acquire) <= nr_retry)
					break;
				ret = io_uring_wait_cqe(&f->ring, &cqe);
			}
			if (ret == -EINTR || ret == -EAGAIN || ret == -ETIME)
				continue;
			USWAP_BUG_ON(ret < 0);
			atomic_load_explicit(&f->handoff, memory_order_acquire);
			r = io_uring_cqe_get_data(cqe);
			uswap_tsan_acquire(r);
			res = cqe->res;
			io_uring_cqe_seen(&f->ring, cqe);
			if (file_cqe_done(f, r, res, &retry))
				done++;
			else
				nr_retry++;
		}
		uswap_mutex_unlock(&f->cq_lock);
		if (!retry)
			break;
		file_resubmit(f, retry);
		if (done >= min_complete)
			break;
	}
	return (int)USWAP_MIN(done, (unsigned int)INT32_MAX);
}

static int file_submit(struct swap_backend *be, struct swap_io_req *reqs,
		       unsigned int nr)
{
	struct file_backend *f = to_file(be);
	unsigned int i;

	if (f->direct) {
		for (i = 0; i < nr; i++)
			if ((uintptr_t)reqs[i].buf & (SWAP_BACKEND_PAGE_SIZE - 1))
				return -EINVAL;
	}
	if (!f->use_uring) {
		for (i = 0; i < nr; i++)
			swap_backend_complete(be, &reqs[i], file_rw_direct(f, &reqs[i]));
		return 0;
	}

	uswap_mutex_lock(&f->sq_lock);
	for (i = 0; i < nr; i++) {
		while (atomic_load_explicit(&f->inflight, memory_order_acquire) >=
		       f->depth) {
			/* ring full: push ours, then make room without sq_lock */
			__file_flush_sq(f);
			uswap_mutex_unlock(&f->sq_lock);
			file_reap(be, 1);
			uswap_mutex_lock(&f->sq_lock);
		}
		reqs[i].bk_done = 0;
		reqs[i].bk_next = NULL;
		atomic_fetch_add_explicit(&f->inflight, 1, memory_order_relaxed);
		__file_prep(f, &reqs[i]);
		uswap_tsan_release(&reqs[i]);
	}
	__file_flush_sq(f);
	uswap_mutex_unlock(&f->sq_lock);
	return 0;
}

/* ---- synchronous callers: a ring of their own ---- */

/* Register the region on @s if there is one. Context: pool_lock. */
static void __file_sring_register(struct file_backend *f, struct file_sring *s)
{
	struct iovec iov = { .iov_base = f->reg_base, .iov_len = f->reg_len };

	uswap_assert_held(&f->pool_lock);
	if (s->fixed)
		io_uring_unregister_buffers(&s->ring);
	/* Without the registration the ring still works, page by page pinned. */
	s->fixed = f->reg_base && !io_uring_register_buffers(&s->ring, &iov, 1);
}

/*
 * Take an idle sring, or make one while fewer than FILE_SRING_MAX exist.
 * Context: any thread; takes pool_lock. Return: the sring, or NULL.
 */
static struct file_sring *file_sring_get(struct file_backend *f)
{
	struct file_sring *s;

	uswap_mutex_lock(&f->pool_lock);
	s = f->sring_free;
	if (s) {
		f->sring_free = s->next;
	} else if (f->nr_srings < FILE_SRING_MAX && (s = uswap_calloc(1, sizeof(*s)))) {
		if (io_uring_queue_init(FILE_SRING_DEPTH, &s->ring, 0)) {
			free(s);
			s = NULL;
		} else {
			f->nr_srings++;
			__file_sring_register(f, s);
		}
	}
	if (s)
		f->nr_srings_out++;
	uswap_mutex_unlock(&f->pool_lock);
	return s;
}

static void file_sring_put(struct file_backend *f, struct file_sring *s)
{
	uswap_mutex_lock(&f->pool_lock);
	s->next = f->sring_free;
	f->sring_free = s;
	f->nr_srings_out--;
	uswap_mutex_unlock(&f->pool_lock);
}

/*
 * Run @n requests (n <= FILE_SRING_DEPTH, bk_done 0) on @s and complete
 * each. Short transfers and -EAGAIN go back on the same ring for the rest.
 */
static void file_sring_run(struct file_backend *f, struct file_sring *s,
			   struct swap_io_req **list, unsigned int n)
{
	unsigned int i, pending = n;

	for (i = 0; i < n; i++)
		file_prep_on(f, &s->ring, s->fixed, list[i]);
	while (pending) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_submit_and_wait(&s->ring, 1);

		/* -EAGAIN/-EBUSY: out of kernel resources for a moment; the
		 * SQEs stay queued and go with the next call */
		if (ret == -EAGAIN || ret == -EBUSY)
			sched_yield();
		USWAP_BUG_ON(ret < 0 && ret != -EINTR && ret != -EAGAIN &&
			     ret != -EBUSY && ret != -ETIME);
		while (!io_uring_peek_cqe(&s->ring, &cqe)) {
			struct swap_io_req *r = io_uring_cqe_get_data(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(&s->ring, cqe);
			if (!file_cqe_finished(r, &res)) {
				file_prep_on(f, &s->ring, s->fixed, r);
				continue;
			}
			swap_backend_complete(&f->be, r, res);
			pending--;
		}
	}
}

/*
 * ops->rw_sync: the batch on the caller's thread (see the top comment).
 * Context: any thread; sleeps; takes pool_lock briefly.
 */
static int file_rw_sync(struct swap_backend *be, struct swap_io_req *reqs,
			unsigned int nr)
{
	struct file_backend *f = to_file(be);
	struct swap_io_req *list[FILE_SRING_DEPTH];
	struct file_sring *s = NULL;
	unsigned int i, n = 0;

	if (f->direct) {
		for (i = 0; i < nr; i++)
			if ((uintptr_t)reqs[i].buf & (SWAP_BACKEND_PAGE_SIZE - 1))
				return -EINVAL;
	}
	for (i = 0; i < nr; i++) {
		struct swap_io_req *r = &reqs[i];

		r->bk_done = 0;
		r->bk_next = NULL;
		if (!f->use_uring || (r->op == SWAP_IO_WRITE && f->write_inline)) {
			swap_backend_complete(be, r, file_rw_direct(f, r));
			continue;
		}
		if (!s && !(s = file_sring_get(f))) {
			/* every sring is busy: do it here, as pread does */
			swap_backend_complete(be, r, file_rw_direct(f, r));
			continue;
		}
		list[n++] = r;
		if (n == FILE_SRING_DEPTH) {
			file_sring_run(f, s, list, n);
			n = 0;
		}
	}
	if (n)
		file_sring_run(f, s, list, n);
	if (s)
		file_sring_put(f, s);
	return 0;
}

static int file_flush(struct swap_backend *be)
{
	if (fdatasync(to_file(be)->fd))
		return -errno;
	return 0;
}

static int file_discard(struct swap_backend *be, uint64_t offset, uint64_t nr)
{
	struct file_backend *f = to_file(be);
	uint64_t start = offset << SWAP_BACKEND_PAGE_SHIFT;
	uint64_t len = nr << SWAP_BACKEND_PAGE_SHIFT;

	if (f->is_blkdev) {
		uint64_t range[2] = { start, len };

		if (ioctl(f->fd, BLKDISCARD, range))
			return errno == ENOTTY ? -EOPNOTSUPP : -errno;
		return 0;
	}
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)start, (off_t)len))
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return 0;
}

static void file_destroy(struct swap_backend *be)
{
	struct file_backend *f = to_file(be);

	if (f->use_uring) {
		while (atomic_load_explicit(&f->inflight, memory_order_acquire))
			if (file_reap(be, 1) <= 0)
				sched_yield();
		io_uring_queue_exit(&f->ring);
	}
	while (f->sring_free) {
		struct file_sring *s = f->sring_free;

		f->sring_free = s->next;
		io_uring_queue_exit(&s->ring);
		free(s);
	}
	close(f->fd);
	uswap_mutex_destroy(&f->pool_lock);
	uswap_mutex_destroy(&f->sq_lock);
	uswap_mutex_destroy(&f->cq_lock);
	free(f);
}

static const struct swap_backend_ops file_ops = {
	.name = "file",
	.submit = file_submit,
	.reap = file_reap,
	.rw_sync = file_rw_sync,
	.flush = file_flush,
	.discard = file_discard,
	.destroy = file_destroy,
};

static bool env_no_uring(void)
{
	const char *s = getenv("USWAP_NO_IO_URING");

	return s && *s && strcmp(s, "0") != 0;
}

/* Read a sysfs attribute that holds 0 or 1. Return: 0 or 1; -1 if absent. */
static int sysfs_read_bool(const char *path)
{
	char buf[8] = "";
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || (buf[0] != '0' && buf[0] != '1'))
		return -1;
	return buf[0] == '1';
}

/*
 * Whether the disk under a swap file or swap partition is rotational (the
 * kernel's !bdev_nonrot(), which swapon uses to count nr_rotate_swap and to
 * leave SWP_SOLIDSTATE off): the block device is the file itself (@st of a
 * block device) or the one the file lives on (st_dev). Its
 * /sys/dev/block/MAJ:MIN/queue/rotational decides; a partition has no queue
 * of its own, so its disk's (the sysfs parent directory) is read. Loop and
 * device-mapper devices report their own attribute. A file on no block
 * device (tmpfs, btrfs's anonymous st_dev), or no sysfs: not rotational.
 * Context: any. Return: true if rotational.
 */
static bool file_backend_rotational(const struct stat *st)
{
	dev_t dev = S_ISBLK(st->st_mode) ? st->st_rdev : st->st_dev;
	char path[96];
	int r;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/rotational", major(dev),
		 minor(dev));
	r = sysfs_read_bool(path);
	if (r < 0) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/rotational",
			 major(dev), minor(dev));
		r = sysfs_read_bool(path);
	}
	return r == 1;
}

/**
 * swap_backend_file_open() - open a file or block device as a backend
 * @path: a regular file (its size, rounded down to 4096, is the device) or
 *        a block device
 * @flags: SWAP_FILE_DIRECT (O_DIRECT: every buf must be 4096-aligned, or
 *         submit returns -EINVAL), SWAP_FILE_NO_URING (pread/pwrite)
 * @out: the new backend
 *
 * io_uring is used unless @flags or the environment (USWAP_NO_IO_URING=1)
 * says otherwise or the ring cannot be set up; swap_backend_describe()
 * tells which ("file:PATH io_uring" or "file:PATH pread").
 * be->rotational is set from the disk under the file
 * (file_backend_rotational()); a caller may override it before swapon.
 *
 * Context: any thread; sleeps.
 * Return: 0; -EINVAL for flags, a file smaller than one slot or not a
 * regular file or block device; -ENOMEM; the open(2)/fstat(2) error
 * (-ENOENT, -EACCES, -EISDIR, ...).
 */
int swap_backend_file_open(const char *path, unsigned int flags,
			   struct swap_backend **out)
{
	struct io_uring_params p;
	struct file_backend *f;
	struct stat st;
	uint64_t size;
	int fd, ret;

	if (!path || !out || (flags & ~(SWAP_FILE_DIRECT | SWAP_FILE_NO_URING)))
		return -EINVAL;
	fd = open(path, O_RDWR | O_CLOEXEC |
		  ((flags & SWAP_FILE_DIRECT) ? O_DIRECT : 0));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out_close;
	}
	if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size)) {
			ret = -errno;
			goto out_close;
		}
	} else {
		ret = -EINVAL;
		goto out_close;
	}
	if (size < SWAP_BACKEND_PAGE_SIZE) {
		ret = -EINVAL;
		goto out_close;
	}
	f = uswap_calloc(1, sizeof(*f));
	if (!f) {
		ret = -ENOMEM;
		goto out_close;
	}
	swap_backend_init(&f->be, &file_ops, size >> SWAP_BACKEND_PAGE_SHIFT, false);
	f->fd = fd;
	f->is_blkdev = S_ISBLK(st.st_mode);
	f->be.rotational = file_backend_rotational(&st);
	f->direct = flags & SWAP_FILE_DIRECT;
	f->depth = FILE_RING_DEPTH;
	uswap_mutex_init(&f->sq_lock);
	uswap_mutex_init(&f->cq_lock);
	uswap_mutex_init(&f->pool_lock);
	if (!(flags & SWAP_FILE_NO_URING) && !env_no_uring()) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_CQSIZE;
		p.cq_entries = 2 * f->depth;
		f->use_uring = io_uring_queue_init_params(f->depth, &f->ring, &p) == 0;
	}
	f->write_inline = f->use_uring && !f->direct && S_ISREG(st.st_mode);
	snprintf(f->be.desc, sizeof(f->be.desc), "file:%s %s%s", path,
		 f->use_uring ? "io_uring" : "pread",
		 f->direct ? " direct" : "");
	*out = &f->be;
	return 0;

out_close:
	close(fd);
	return ret;
}

/* Bring every (idle) sring's registration in line with reg_base. */
static void file_srings_reregister(struct file_backend *f)
{
	struct file_sring *s;

	uswap_assert_held(&f->pool_lock);
	for (s = f->sring_free; s; s = s->next)
		__file_sring_register(f, s);
}

static struct file_backend *file_of(struct swap_backend *be)
{
	return be && be->ops == &file_ops ? to_file(be) : NULL;
}

/**
 * swap_backend_file_uses_uring() - whether I/O goes through io_uring
 * @be: a file backend
 *
 * Context: any.
 * Return: true for io_uring, false for pread/pwrite or a non-file backend.
 */
bool swap_backend_file_uses_uring(const struct swap_backend *be)
{
	struct file_backend *f = file_of((struct swap_backend *)be);

	return f && f->use_uring;
}

/**
 * swap_backend_file_stat() - fstat(2) of the backend's descriptor
 * @be: a file backend
 * @st: filled
 *
 * Context: any thread. Return: 0; -EINVAL for a non-file backend; fstat's error.
 */
int swap_backend_file_stat(struct swap_backend *be, struct stat *st)
{
	struct file_backend *f = file_of(be);

	if (!f)
		return -EINVAL;
	return fstat(f->fd, st) ? -errno : 0;
}

/**
 * swap_backend_file_lock() - take the file's swap lock, across processes
 * @be: a file backend
 *
 * A write lock on the whole file, owned by the backend's open file
 * description (F_OFD_SETLK): it conflicts with the lock of any other open
 * of the file, in this process or another, and goes when the backend
 * closes its descriptor (destroy), or with the process. Every uswap
 * swapon of a file takes it, so two of them cannot swap on one file.
 *
 * Context: any thread. Return: 0; -EBUSY when another open of the file
 * holds it; -EINVAL for a non-file backend; fcntl's error.
 */
int swap_backend_file_lock(struct swap_backend *be)
{
	struct file_backend *f = file_of(be);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (!f)
		return -EINVAL;
	if (!fcntl(f->fd, F_OFD_SETLK, &fl))
		return 0;
	return errno == EAGAIN || errno == EACCES ? -EBUSY : -errno;
}

/**
 * swap_backend_file_identity() - what the backend's descriptor opened
 * @be: a file backend
 * @dev: st_dev of a regular file, st_rdev of a block device
 * @ino: st_ino of a regular file, UINT64_MAX for a block device (one
 *       device whatever node names it)
 *
 * Read from the open descriptor, not the path: the identity a swapon
 * claims is the one it does I/O to, whatever renames happen meanwhile.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for a non-file backend; fstat(2)'s error.
 */
int swap_backend_file_identity(struct swap_backend *be, uint64_t *dev, uint64_t *ino)
{
	struct file_backend *f = file_of(be);
	struct stat st;

	if (!f)
		return -EINVAL;
	if (fstat(f->fd, &st))
		return -errno;
	*dev = f->is_blkdev ? (uint64_t)st.st_rdev : (uint64_t)st.st_dev;
	*ino = f->is_blkdev ? UINT64_MAX : (uint64_t)st.st_ino;
	return 0;
}

/**
 * swap_backend_file_register_buffers() - register the caller's I/O memory
 * @be: a file backend
 * @base: start of the region (e.g. the frame pool)
 * @len: its length in bytes (the kernel caps one buffer at 1 GiB and
 *       counts it against RLIMIT_MEMLOCK)
 *
 * Afterwards a request whose buffer lies inside the region uses
 * READ_FIXED/WRITE_FIXED (no per-I/O page pinning); others work as before.
 * Replaces an earlier registration. On the pread path this only records
 * the region.
 * pre: no I/O in flight on @be.
 *
 * Context: any thread; sleeps.
 * Return: 0; -EINVAL for a non-file backend or empty region; -EBUSY with
 * I/O in flight; the kernel's error (-ENOMEM over RLIMIT_MEMLOCK, ...).
 */
int swap_backend_file_register_buffers(struct swap_backend *be, void *base,
				       size_t len)
{
	struct file_backend *f = file_of(be);
	struct iovec iov = { .iov_base = base, .iov_len = len };
	int ret = 0;

	if (!f || !base || !len)
		return -EINVAL;
	uswap_mutex_lock(&f->sq_lock);
	uswap_mutex_lock(&f->cq_lock);
	uswap_mutex_lock(&f->pool_lock);
	if (atomic_load_explicit(&f->inflight, memory_order_acquire) ||
	    f->nr_srings_out) {
		ret = -EBUSY;
		goto out;
	}
	if (f->use_uring) {
		if (f->reg_base)
			io_uring_unregister_buffers(&f->ring);
		f->reg_base = NULL;
		f->reg_len = 0;
		ret = io_uring_register_buffers(&f->ring, &iov, 1);
		if (ret) {
			file_srings_reregister(f);	/* none now */
			goto out;
		}
	}
	f->reg_base = base;
	f->reg_len = len;
	file_srings_reregister(f);
out:
	uswap_mutex_unlock(&f->pool_lock);
	uswap_mutex_unlock(&f->cq_lock);
	uswap_mutex_unlock(&f->sq_lock);
	return ret;
}

/**
 * swap_backend_file_unregister_buffers() - drop the registered region
 * @be: a file backend
 *
 * pre: no I/O in flight on @be.
 *
 * Context: any thread; sleeps.
 * Return: 0 (also when nothing was registered); -EINVAL for a non-file
 * backend; -EBUSY with I/O in flight.
 */
int swap_backend_file_unregister_buffers(struct swap_backend *be)
{
	struct file_backend *f = file_of(be);
	int ret = 0;

	if (!f)
		return -EINVAL;
	uswap_mutex_lock(&f->sq_lock);
	uswap_mutex_lock(&f->cq_lock);
	uswap_mutex_lock(&f->pool_lock);
	if (atomic_load_explicit(&f->inflight, memory_order_acquire) ||
	    f->nr_srings_out) {
		ret = -EBUSY;
	} else {
		if (f->use_uring && f->reg_base)
			io_uring_unregister_buffers(&f->ring);
		f->reg_base = NULL;
		f->reg_len = 0;
		file_srings_reregister(f);
	}
	uswap_mutex_unlock(&f->pool_lock);
	uswap_mutex_unlock(&f->cq_lock);
	uswap_mutex_unlock(&f->sq_lock);
	return ret;
}
