/* SPDX-License-Identifier: MIT */
/*
 * The backend contract: the one interface between the swap layer and the
 * devices that hold swapped-out pages.
 *
 * A backend stores 4096-byte pages ("slots") addressed by slot offset
 * 0 .. nr_slots-1. Slot 0 is an ordinary slot here; the swap layer puts its
 * header there. Callers describe I/O as requests, each one run of
 * consecutive slots, and hand a batch of them to swap_backend_submit().
 *
 * Completion. Every request accepted by submit completes exactly once:
 * the backend sets req->result (0 or -errno) and then calls req->end_io(req)
 * (if non-NULL). After end_io returns (or, without end_io, once result is
 * published) the backend no longer touches the request. end_io runs on
 * whichever thread the backend completes on:
 *   - synchronous backends (zram), the pread fallback of the file backend,
 *     and requests failed at submit time complete inside submit, before it
 *     returns;
 *   - the io_uring file backend completes in swap_backend_reap(), and may
 *     also reap inside submit when its ring is full.
 * So end_io must not take a lock that the submitting thread holds, and it
 * must not call submit or reap on the same backend.
 * swap_backend_rw_sync() wraps this for callers that want to wait. A
 * backend may give such callers a path of their own (ops->rw_sync): the
 * file backend runs the batch on a ring the caller holds alone, so nobody
 * else has to be woken to complete it.
 *
 * be->synchronous is the kernel's SWP_SYNCHRONOUS_IO: the device is so
 * fast (memory) that swap-in does no readahead. It is not "completes inside
 * submit": any backend may do that, and callers must be ready for it.
 *
 * Shared preconditions (stated once; checked at USWAP_DEBUG >= 1, where a
 * violation is -EINVAL and a warning; a "pre:" line names any extra):
 *   - be and every out-parameter are non-NULL;
 *   - a request has op SWAP_IO_READ or SWAP_IO_WRITE, nr >= 1,
 *     offset + nr <= be->nr_slots (so offset < nr_slots and a run never
 *     wraps or crosses the end), and buf non-NULL with nr * 4096 bytes;
 *   - a request is not resubmitted, freed or changed until it completes,
 *     and its buffer is not touched by the caller meanwhile.
 * Submit checks the whole batch before starting any of it: it either
 * accepts every request (each then completes through end_io, I/O errors
 * in result) or returns -errno and accepts none.
 *
 * Thread safety: every function here may be called from several threads
 * at once on one backend, except create/open and destroy (and the
 * "pre: no I/O in flight" functions named below). Concurrent writes to
 * the same slot, or a read racing a write of it, leave that slot's content
 * unspecified (old or new page, never a crash); the swap layer never does
 * that, because a slot's I/O is serialized by its swap cache folio.
 */
#ifndef USWAP_IO_BACKEND_H
#define USWAP_IO_BACKEND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWAP_BACKEND_PAGE_SHIFT	12
#define SWAP_BACKEND_PAGE_SIZE	(1U << SWAP_BACKEND_PAGE_SHIFT)
/* Longest run one request may carry: one cluster (order-9 folio). */
#define SWAP_IO_MAX_RUN		512U

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

struct swap_backend;

enum swap_io_op {
	SWAP_IO_READ = 0,
	SWAP_IO_WRITE = 1,
};

/*
 * One run of slots to read or write. The caller fills op..private; the
 * fields after them belong to the backend while the request is in flight.
 */
struct swap_io_req {
	int op;				/* SWAP_IO_READ or SWAP_IO_WRITE */
	unsigned int nr;		/* slots in the run, 1..SWAP_IO_MAX_RUN */
	uint64_t offset;		/* first slot */
	void *buf;			/* nr * 4096 bytes */
	int result;			/* out: 0 or -errno, set before end_io */
	void (*end_io)(struct swap_io_req *req);	/* may be NULL */
	void *private;			/* the caller's, untouched */
	/* backend-private while in flight */
	size_t bk_done;			/* bytes transferred so far (short I/O) */
	struct swap_io_req *bk_next;	/* backend lists (retries) */
};

/* Counters kept for every backend; bytes count successful requests only. */
struct swap_backend_stats {
	uint64_t reads;			/* read requests completed */
	uint64_t writes;		/* write requests completed */
	uint64_t read_bytes;
	uint64_t write_bytes;
	uint64_t errors;		/* requests completed with result < 0 */
};

/*
 * The ops table. Required: name, submit, destroy. A NULL reap means
 * "completes inside submit"; a NULL flush succeeds; a NULL discard is
 * -EOPNOTSUPP; a NULL slot_free_notify is a no-op. A NULL rw_sync means
 * swap_backend_rw_sync() submits and reaps. inner (wrappers only): the
 * backend wrapped, for swap_backend_base() and swap_backend_failed().
 *
 * rw_sync (optional): run a checked batch on the calling thread and
 * complete every request (swap_backend_complete()) before returning 0, or
 * return -errno having accepted none of it (as submit).
 */
struct swap_backend_ops {
	const char *name;
	int (*submit)(struct swap_backend *be, struct swap_io_req *reqs,
		      unsigned int nr);
	int (*reap)(struct swap_backend *be, unsigned int min_complete);
	int (*rw_sync)(struct swap_backend *be, struct swap_io_req *reqs,
		       unsigned int nr);
	int (*flush)(struct swap_backend *be);
	int (*discard)(struct swap_backend *be, uint64_t offset, uint64_t nr);
	void (*slot_free_notify)(struct swap_backend *be, uint64_t offset);
	struct swap_backend *(*inner)(struct swap_backend *be);	/* a wrapper's */
	void (*destroy)(struct swap_backend *be);
};

/*
 * Embedded first in every backend's own struct (container_of).
 * Invariant: stats counters only grow; reads + writes == requests completed.
 */
struct swap_backend {
	const struct swap_backend_ops *ops;	/* set at create, constant */
	uint64_t nr_slots;			/* constant after create */
	bool synchronous;			/* SWP_SYNCHRONOUS_IO; constant */
	bool stable_writes;			/* reads a page under writeback outside
						 * the caller's call (compression): the
						 * page must not change meanwhile; the
						 * block layer's stable writes; constant */
	bool rotational;			/* a spinning disk: the kernel's
						 * !bdev_nonrot(); set at open, constant
						 * from swapon on */
	char desc[256];				/* swap_backend_describe(); constant */
	struct {
		_Atomic uint64_t reads, writes, read_bytes, write_bytes, errors;
	} stats;				/* relaxed atomics */
	_Atomic bool failed;			/* the device failed for good: every
						 * request completes with -EIO from now
						 * on (a lost NBD server); only goes
						 * false -> true */
};

/* ---- Generic entry points (backend.c) ---- */

int swap_backend_submit(struct swap_backend *be, struct swap_io_req *reqs,
			unsigned int nr);
int swap_backend_reap(struct swap_backend *be, unsigned int min_complete);
int swap_backend_rw_sync(struct swap_backend *be, struct swap_io_req *reqs,
			 unsigned int nr);
int swap_backend_read(struct swap_backend *be, uint64_t offset,
		      unsigned int nr, void *buf);
int swap_backend_write(struct swap_backend *be, uint64_t offset,
		       unsigned int nr, const void *buf);
int swap_backend_flush(struct swap_backend *be);
int swap_backend_discard(struct swap_backend *be, uint64_t offset, uint64_t nr);
void swap_backend_slot_free_notify(struct swap_backend *be, uint64_t offset);
void swap_backend_destroy(struct swap_backend *be);
void swap_backend_destroy_inner(struct swap_backend *be);
const char *swap_backend_describe(const struct swap_backend *be);
void swap_backend_get_stats(const struct swap_backend *be,
			    struct swap_backend_stats *out);
bool swap_backend_failed(const struct swap_backend *be);
struct swap_backend *swap_backend_base(struct swap_backend *be);

/* Watching backends go (the bench's per-device figures; backend.c). */
struct swap_backend_observer {
	void (*destroy)(struct swap_backend *be, void *arg);
	void *arg;
};

void swap_backend_set_observer(const struct swap_backend_observer *obs);

/* For backend implementations: init the common part, check, complete. */
void swap_backend_init(struct swap_backend *be,
		       const struct swap_backend_ops *ops, uint64_t nr_slots,
		       bool synchronous);
int swap_backend_check_reqs(const struct swap_backend *be,
			    const struct swap_io_req *reqs, unsigned int nr);
void swap_backend_complete(struct swap_backend *be, struct swap_io_req *req,
			   int result);

/* ---- file / block device (backend_file.c) ---- */

enum {
	SWAP_FILE_DIRECT	= 1U << 0,	/* O_DIRECT; bufs 4096-aligned */
	SWAP_FILE_NO_URING	= 1U << 1,	/* force the pread/pwrite path */
};

int swap_backend_file_open(const char *path, unsigned int flags,
			   struct swap_backend **out);
int swap_backend_file_register_buffers(struct swap_backend *be, void *base,
				       size_t len);
int swap_backend_file_unregister_buffers(struct swap_backend *be);
bool swap_backend_file_uses_uring(const struct swap_backend *be);
int swap_backend_file_identity(struct swap_backend *be, uint64_t *dev, uint64_t *ino);
struct stat;
int swap_backend_file_stat(struct swap_backend *be, struct stat *st);
int swap_backend_file_lock(struct swap_backend *be);

/* ---- compressed memory (backend_zram.c) ---- */

enum swap_zram_algo {
	SWAP_ZRAM_LZ4 = 0,	/* default */
	SWAP_ZRAM_ZSTD = 1,
};

/* Memory accounting of a zram backend (a snapshot; fields may be skewed
 * against each other by concurrent I/O, each is exact at rest). */
struct swap_zram_stats {
	uint64_t pages_stored;		/* slots holding data */
	uint64_t same_pages;		/* stored as one repeated 8-byte word */
	uint64_t compressed_pages;	/* stored compressed */
	uint64_t raw_pages;		/* incompressible, stored as is */
	uint64_t orig_data_size;	/* pages_stored * 4096 */
	uint64_t compr_data_size;	/* bytes held for compressed+raw pages */
	uint64_t meta_bytes;		/* slot array, locks, struct */
	uint64_t mem_used;		/* compr_data_size + meta_bytes */
	uint64_t pool_bytes;		/* memory holding the data: chunks of
					 * size classes, empty ones kept for
					 * reuse (>= compr_data_size) */
	double ratio;			/* orig_data_size / mem_used */
};

int swap_backend_zram_create(uint64_t nr_slots, enum swap_zram_algo algo,
			     struct swap_backend **out);
int swap_backend_zram_stats(struct swap_backend *be,
			    struct swap_zram_stats *out);
const char *swap_zram_algo_name(enum swap_zram_algo algo);

/* ---- fault injection wrapper (backend_fault.c) ---- */

enum {
	SWAP_FAULT_READ		= 1U << SWAP_IO_READ,
	SWAP_FAULT_WRITE	= 1U << SWAP_IO_WRITE,
	SWAP_FAULT_RW		= SWAP_FAULT_READ | SWAP_FAULT_WRITE,
};
#define SWAP_FAULT_MAX_OFFSETS	32

int swap_backend_fault_create(struct swap_backend *inner,
			      struct swap_backend **out);
int swap_backend_fault_fail_nth(struct swap_backend *be, unsigned int ops,
				uint64_t nth, int err);
int swap_backend_fault_fail_offset(struct swap_backend *be, unsigned int ops,
				   uint64_t offset, int err);
void swap_backend_fault_clear(struct swap_backend *be);
uint64_t swap_backend_fault_injected(struct swap_backend *be);
uint64_t swap_backend_fault_injected_all(void);

/* ---- encryption wrapper (backend_crypt.c) ---- */

enum swap_crypt_cipher {
	SWAP_CRYPT_NONE = 0,		/* no wrapper */
	SWAP_CRYPT_AUTO,		/* AES-256-GCM with AES-NI, else XChaCha20 */
	SWAP_CRYPT_XCHACHA20,		/* XChaCha20-Poly1305 */
	SWAP_CRYPT_AES256GCM,		/* AES-256-GCM (needs AES-NI) */
};

/* Memory the wrapper keeps per slot: a 64-bit nonce counter and a tag. */
#define SWAP_CRYPT_META_PER_SLOT	24

struct swap_crypt_stats {
	enum swap_crypt_cipher cipher;	/* the one in use, never AUTO */
	uint64_t pages_sealed;		/* pages written (slot 0 excluded) */
	uint64_t pages_opened;		/* pages read back and authenticated */
	uint64_t auth_failures;		/* written pages that failed to open
					 * (changed on the device): -EIO */
	uint64_t meta_bytes;		/* nr_slots * SWAP_CRYPT_META_PER_SLOT,
					 * reserved; resident as slots are used */
};

int swap_backend_crypt_create(struct swap_backend *inner, enum swap_crypt_cipher cipher,
			      struct swap_backend **out);
int swap_backend_crypt_stats(struct swap_backend *be, struct swap_crypt_stats *out);
const char *swap_crypt_cipher_name(enum swap_crypt_cipher c);

/* ---- NBD (backend_nbd.c) ---- */

#define SWAP_NBD_TIMEOUT_MS	10000U	/* a command unanswered this long: -EIO */
#define SWAP_NBD_RECONNECT_MS	5000U	/* retry a lost connection this long */
#define SWAP_NBD_DEPTH		64U	/* commands in flight */
#define SWAP_NBD_MAX_DEPTH	1024U

struct swap_nbd_params {
	unsigned int timeout_ms;	/* per command, > 0 */
	unsigned int reconnect_ms;	/* reconnect window, > 0 */
	unsigned int depth;		/* 1..SWAP_NBD_MAX_DEPTH */
};

struct swap_nbd_stats {
	const char *state;		/* "connected", "reconnecting", "failed" */
	uint64_t reconnects;		/* connections re-established */
	uint64_t lost_connections;	/* connections dropped (loss or timeout) */
	uint64_t timeouts;		/* commands failed by timeout */
	uint64_t max_inflight;		/* most commands in flight at once */
	double avg_inflight;		/* mean, sampled at each wake-up with any */
	uint64_t read_samples, write_samples;
	uint64_t read_p50_us, read_p99_us;	/* issue to reply, successful */
	uint64_t write_p50_us, write_p99_us;
	unsigned int depth;
	bool can_trim, structured;
};

void swap_nbd_default_params(struct swap_nbd_params *p);
int swap_backend_nbd_open(const char *uri, const struct swap_nbd_params *params,
			  struct swap_backend **out, char *err, size_t errlen);
int swap_backend_nbd_stats(struct swap_backend *be, struct swap_nbd_stats *out);

/* ---- device specs (backend_spec.c) ---- */

enum swap_backend_kind {
	SWAP_BACKEND_ZRAM,
	SWAP_BACKEND_FILE,
	SWAP_BACKEND_NBD,
};

struct swap_backend_spec {
	enum swap_backend_kind kind;
	uint64_t size;			/* zram: bytes (multiple of 4096) */
	uint64_t nr_slots;		/* zram: size / 4096 */
	enum swap_zram_algo algo;	/* zram */
	char path[4096];		/* file: path; nbd: the URI */
	int rotational;			/* file: -1 from the disk, 0/1 forced
					 * (",rotational=N" after the path) */
	enum swap_crypt_cipher encrypt;	/* file, nbd: ",encrypt=..."; on (AUTO)
					 * unless ",encrypt=off"; zram: NONE */
	bool discard;			/* file, nbd: free clusters discarded
					 * (SWAP_FLAG_DISCARD) unless ",discard=off" */
	uint64_t fault_read_nth;	/* "fault:read_err=N:": the N-th read fails, 0 none */
	uint64_t fault_read_slot;	/* "fault:read_err_slot=S:": reads of slot S fail, 0 none */
	uint64_t fault_write_nth;	/* "fault:write_err=N:": the N-th write fails, 0 none */
};

#define SWAP_SPEC_MIN_SLOTS	10

int swap_backend_spec_parse(const char *spec, struct swap_backend_spec *out,
			    char *err, size_t errlen);
int swap_backend_open_spec(const char *spec, struct swap_backend **out,
			   char *err, size_t errlen);
int swap_backend_encrypt(struct swap_backend **be, enum swap_crypt_cipher cipher,
			 char *err, size_t errlen);

#endif
