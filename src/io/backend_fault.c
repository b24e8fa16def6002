/* SPDX-License-Identifier: MIT */
/*
 * Fault injection wrapper: a backend that forwards to another and fails
 * chosen requests instead, for the tests that check that a failing device
 * loses nothing silently. Built at every debug level: it costs nothing
 * until a caller wraps a backend in it, and the tests that need it run in
 * release builds too.
 *
 * Rules (any number may be armed at once; the first that matches wins):
 *   - nth: the N-th request (1-based) whose op is in the mask, counted
 *     from the time the rule is armed; one-shot;
 *   - offset: every request whose op is in the mask and whose run covers
 *     the offset, until cleared.
 * An injected failure completes the request with the rule's errno without
 * touching the inner backend (a failed write leaves the old data there).
 *
 * Stats: the wrapper's own counters count the injected failures; the
 * forwarded requests are counted by the inner backend.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/backend.h"
#include "util/alloc.h"
#include "util/debug.h"
#include "util/lock.h"

/* Requests failed on purpose by every wrapper, for sweeps that see
 * devices only through the public API. */
static _Atomic uint64_t fault_injected_all;

struct fault_rule_off {
	uint64_t offset;
	unsigned int ops;		/* SWAP_FAULT_READ | SWAP_FAULT_WRITE */
	int err;
};

struct fault_backend {
	struct swap_backend be;
	struct swap_backend *inner;	/* owned */
	struct uswap_mutex lock;	/* the rules below */
	unsigned int nth_ops;		/* 0: nth rule off */
	uint64_t nth;			/* fail when seen reaches it */
	uint64_t seen;			/* matching requests since armed */
	int nth_err;
	struct fault_rule_off offs[SWAP_FAULT_MAX_OFFSETS];
	unsigned int nr_offs;
	_Atomic uint64_t injected;
};

static inline struct fault_backend *to_fault(struct swap_backend *be)
{
	return container_of(be, struct fault_backend, be);
}

/* The errno to inject into @r, or 0 to forward it. */
static int __fault_decide(struct fault_backend *fb, const struct swap_io_req *r)
{
	unsigned int bit = 1U << r->op;
	unsigned int i;
	int err = 0;

	uswap_assert_held(&fb->lock);
	if (fb->nth_ops & bit) {
		if (++fb->seen == fb->nth) {
			err = fb->nth_err;
			fb->nth_ops = 0;
		}
	}
	for (i = 0; !err && i < fb->nr_offs; i++) {
		const struct fault_rule_off *o = &fb->offs[i];

		if ((o->ops & bit) && o->offset >= r->offset &&
		    o->offset - r->offset < r->nr)
			err = o->err;
	}
	return err;
}

static void fault_forward(struct fault_backend *fb, struct swap_io_req *reqs,
			  unsigned int nr)
{
	unsigned int i;
	int ret;

	if (!nr)
		return;
	ret = swap_backend_submit(fb->inner, reqs, nr);
	if (!ret)
		return;
	/* the inner backend refused: we accepted, so they fail here */
	for (i = 0; i < nr; i++)
		swap_backend_complete(&fb->be, &reqs[i], ret);
}

static int fault_submit(struct swap_backend *be, struct swap_io_req *reqs,
			unsigned int nr)
{
	struct fault_backend *fb = to_fault(be);
	unsigned int i, start = 0;

	for (i = 0; i < nr; i++) {
		int err;

		uswap_mutex_lock(&fb->lock);
		err = __fault_decide(fb, &reqs[i]);
		uswap_mutex_unlock(&fb->lock);
		if (!err)
			continue;
		/* forward the run before it, in order, then fail this one */
		fault_forward(fb, reqs + start, i - start);
		start = i + 1;
		atomic_fetch_add_explicit(&fb->injected, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&fault_injected_all, 1, memory_order_relaxed);
		swap_backend_complete(be, &reqs[i], err);
	}
	fault_forward(fb, reqs + start, nr - start);
	return 0;
}

static int fault_reap(struct swap_backend *be, unsigned int min_complete)
{
	return swap_backend_reap(to_fault(be)->inner, min_complete);
}

static int fault_flush(struct swap_backend *be)
{
	return swap_backend_flush(to_fault(be)->inner);
}

static int fault_discard(struct swap_backend *be, uint64_t offset, uint64_t nr)
{
	return swap_backend_discard(to_fault(be)->inner, offset, nr);
}

static void fault_slot_free_notify(struct swap_backend *be, uint64_t offset)
{
	swap_backend_slot_free_notify(to_fault(be)->inner, offset);
}

static struct swap_backend *fault_inner(struct swap_backend *be)
{
	return to_fault(be)->inner;
}

static void fault_destroy(struct swap_backend *be)
{
	struct fault_backend *fb = to_fault(be);

	swap_backend_destroy(fb->inner);
	uswap_mutex_destroy(&fb->lock);
	free(fb);
}

static const struct swap_backend_ops fault_ops = {
	.name = "fault",
	.submit = fault_submit,
	.reap = fault_reap,
	.flush = fault_flush,
	.discard = fault_discard,
	.slot_free_notify = fault_slot_free_notify,
	.inner = fault_inner,
	.destroy = fault_destroy,
};

static struct fault_backend *fault_of(struct swap_backend *be)
{
	return be && be->ops == &fault_ops ? to_fault(be) : NULL;
}

/**
 * swap_backend_fault_create() - wrap a backend with fault injection
 * @inner: the backend to forward to; the wrapper owns it from now on
 *         (destroying the wrapper destroys it)
 * @out: the wrapper, with @inner's size and synchronous flag, no rule armed
 *
 * Context: any thread; allocates.
 * Return: 0; -EINVAL for a NULL argument; -ENOMEM (then @inner is still
 * the caller's).
 */
int swap_backend_fault_create(struct swap_backend *inner,
			      struct swap_backend **out)
{
	struct fault_backend *fb;

	if (!inner || !out)
		return -EINVAL;
	fb = uswap_calloc(1, sizeof(*fb));
	if (!fb)
		return -ENOMEM;
	swap_backend_init(&fb->be, &fault_ops, inner->nr_slots, inner->synchronous);
	fb->be.stable_writes = inner->stable_writes;
	fb->inner = inner;
	uswap_mutex_init(&fb->lock);
	snprintf(fb->be.desc, sizeof(fb->be.desc), "fault(%.240s)",
		 swap_backend_describe(inner));
	*out = &fb->be;
	return 0;
}

static bool fault_args_ok(unsigned int ops, int err)
{
	return ops && !(ops & ~SWAP_FAULT_RW) && err < 0;
}

/**
 * swap_backend_fault_fail_nth() - fail the nth matching request, once
 * @be: a fault wrapper
 * @ops: SWAP_FAULT_READ, SWAP_FAULT_WRITE or SWAP_FAULT_RW
 * @nth: 1 fails the next matching request, 2 the one after, ...
 * @err: the negative errno to complete it with (e.g. -EIO)
 *
 * Replaces an earlier nth rule and restarts the count.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for a non-wrapper, empty @ops, @nth 0 or @err >= 0;
 *.
 */
int swap_backend_fault_fail_nth(struct swap_backend *be, unsigned int ops,
				uint64_t nth, int err)
{
	struct fault_backend *fb = fault_of(be);

	if (!fb || !nth || !fault_args_ok(ops, err))
		return -EINVAL;
	uswap_mutex_lock(&fb->lock);
	fb->nth_ops = ops;
	fb->nth = nth;
	fb->seen = 0;
	fb->nth_err = err;
	uswap_mutex_unlock(&fb->lock);
	return 0;
}

/**
 * swap_backend_fault_fail_offset() - fail every request covering a slot
 * @be: a fault wrapper
 * @ops: SWAP_FAULT_READ, SWAP_FAULT_WRITE or SWAP_FAULT_RW
 * @offset: the slot, < nr_slots
 * @err: the negative errno (e.g. -EIO)
 *
 * Context: any thread.
 * Return: 0; -EINVAL for a bad argument; -ENOSPC when
 * SWAP_FAULT_MAX_OFFSETS rules are armed.
 */
int swap_backend_fault_fail_offset(struct swap_backend *be, unsigned int ops,
				   uint64_t offset, int err)
{
	struct fault_backend *fb = fault_of(be);
	int ret = 0;

	if (!fb || offset >= be->nr_slots || !fault_args_ok(ops, err))
		return -EINVAL;
	uswap_mutex_lock(&fb->lock);
	if (fb->nr_offs == SWAP_FAULT_MAX_OFFSETS) {
		ret = -ENOSPC;
	} else {
		fb->offs[fb->nr_offs].offset = offset;
		fb->offs[fb->nr_offs].ops = ops;
		fb->offs[fb->nr_offs].err = err;
		fb->nr_offs++;
	}
	uswap_mutex_unlock(&fb->lock);
	return ret;
}

/**
 * swap_backend_fault_clear() - disarm every rule
 * @be: a fault wrapper (anything else is ignored)
 *
 * The injected counter is kept.
 *
 * Context: any thread.
 * Return: nothing.
 */
void swap_backend_fault_clear(struct swap_backend *be)
{
	struct fault_backend *fb = fault_of(be);

	if (!fb)
		return;
	uswap_mutex_lock(&fb->lock);
	fb->nth_ops = 0;
	fb->nr_offs = 0;
	uswap_mutex_unlock(&fb->lock);
}

/**
 * swap_backend_fault_injected() - how many requests were failed on purpose
 * @be: a fault wrapper
 *
 * Context: any thread.
 * Return: the count since creation; 0 for anything else.
 */
uint64_t swap_backend_fault_injected(struct swap_backend *be)
{
	struct fault_backend *fb = fault_of(be);

	return fb ? atomic_load_explicit(&fb->injected, memory_order_relaxed) : 0;
}


/**
 * swap_backend_fault_injected_all() - requests failed on purpose by all wrappers
 *
 * For the I/O failure sweeps, which reach their device through a spec
 * ("fault:write_err=N:...") and not through its backend.
 *
 * Context: any thread.
 * Return: the count since the process started.
 */
uint64_t swap_backend_fault_injected_all(void)
{
	return atomic_load_explicit(&fault_injected_all, memory_order_relaxed);
}
