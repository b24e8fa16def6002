/* SPDX-License-Identifier: MIT */
/*
 * shmem-like objects: file-like memory indexed by page, whose pages are
 * swapped like anonymous ones except that a swapped page holds one swap
 * reference for the object (folio_dup_swap once when it leaves the object
 * for the swap cache; no special shmem count since swap table phase II,
 * see docs/KERNEL-MAP.md).
 *
 * A slot holds 0 (never written: reads as zeros), a folio pointer, a
 * swap PTE (bit 1 set, which no aligned pointer has), or PTE_POISON: a
 * page swapoff could not read back from a failed device, -EIO on access
 * (the kernel's poisoned swap entry from shmem_unuse() and unuse_pte()).
 */
#include <stdlib.h>
#include <string.h>

#include "mm/mm_internal.h"
#include "util/alloc.h"

static bool slot_is_swap(uint64_t v)
{
	return v & PTE_SWAP;
}

static bool slot_is_folio(uint64_t v)
{
	return v && !slot_is_swap(v) && v != PTE_POISON;
}

/** uswap_shmem_create() - see uswap/mm.h. */
USWAP_API int uswap_shmem_create(struct uswap_mem *mem, uint64_t len, struct uswap_shmem **out)
{
	struct uswap_shmem *shm;

	if (!len)
		return -EINVAL;
	shm = uswap_calloc(1, sizeof(*shm));
	if (!shm)
		return -ENOMEM;
	shm->mem = mem;
	shm->nr_pages = (len + USWAP_PAGE_SIZE - 1) >> USWAP_PAGE_SHIFT;
	shm->slots = uswap_calloc(shm->nr_pages, sizeof(*shm->slots));
	if (!shm->slots) {
		free(shm);
		return -ENOMEM;
	}
	pthread_mutex_init(&shm->lock, NULL);
	pthread_mutex_lock(&mem->mmlist_lock);
	cds_list_add_tail(&shm->node, &mem->shmems);
	pthread_mutex_unlock(&mem->mmlist_lock);
	*out = shm;
	return 0;
}

/*
 * A page the object gave up to swap while its write was in flight stays in
 * the swap cache and on the LRU with folio->mapping naming the object, so
 * that reclaim knows it on its next pass (shmem_unmap_folio()). Before the
 * object is freed that folio becomes a plain swap-cache folio: reclaim
 * would otherwise read the freed object through it and never free it.
 * Context: reclaim excluded (mem->reclaim_lock held); takes the folio lock.
 */
static void shmem_forget_cached(struct uswap_shmem *shm, swp_entry_t entry)
{
	void *mine = (void *)((uintptr_t)shm | MAPPING_SHMEM);
	struct folio *f = swap_cache_get_folio(entry);

	if (!f)
		return;
	folio_lock(f);
	if (folio_matches_swap_entry(f, entry) && f->mapping == mine)
		f->mapping = NULL;
	folio_unlock(f);
	folio_put(f);
}

/**
 * uswap_shmem_destroy() - free the object: its folios and swap entries.
 * Context: no access to @shm may run; excludes reclaim meanwhile.
 */
USWAP_API void uswap_shmem_destroy(struct uswap_shmem *shm)
{
	struct uswap_mem *mem;
	uint64_t i;

	if (!shm)
		return;
	mem = shm->mem;
	pthread_mutex_lock(&mem->mmlist_lock);
	cds_list_del(&shm->node);
	pthread_mutex_unlock(&mem->mmlist_lock);
	/* With no reclaim running, no folio of ours is isolated. */
	pthread_mutex_lock(&mem->reclaim_lock);
	for (i = 0; i < shm->nr_pages; i++) {
		uint64_t v = shm->slots[i];

		if (!v || v == PTE_POISON)
			continue;
		if (slot_is_swap(v)) {
			shmem_forget_cached(shm, pte_to_swp_entry(v));
			USWAP_BUG_ON(swap_put_entries_direct(pte_to_swp_entry(v), 1));
			continue;
		}
		{
			struct folio *f = (struct folio *)(uintptr_t)v;

			folio_lock(f);
			folio_wait_writeback(f);
			if (folio_test_swapcache(f))
				swap_cache_del_folio(f, 0);
			f->mapping = NULL;
			folio_unlock(f);
			lru_del(mem, f);
			folio_put(f);
		}
	}
	pthread_mutex_unlock(&mem->reclaim_lock);
	pthread_mutex_destroy(&shm->lock);
	free(shm->slots);
	free(shm);
}

/*
 * Bring page @idx in from swap entry @v. Return: 0 (look again), -errno.
 * Context: shm->lock not held.
 */
static int shmem_swapin(struct uswap_shmem *shm, uint64_t idx, uint64_t v)
{
	struct folio *ra[USWAP_SWAPIN_RA_MAX];
	struct uswap_swapin_info info = { .ra_folios = ra };
	struct uswap_mem *mem = shm->mem;
	swp_entry_t entry = pte_to_swp_entry(v);
	struct folio *folio;
	int err;

	err = mem_swapin(mem, NULL, entry, 1, &info, &folio);
	if (err == -ENOENT || err == -EAGAIN)
		return 0;
	if (err == -ENODEV) {
		/* Swapoff may have brought the page in meanwhile. */
		pthread_mutex_lock(&shm->lock);
		err = shm->slots[idx] == v ? -ENODEV : 0;
		pthread_mutex_unlock(&shm->lock);
		return err;
	}
	if (err)
		return err;
	/*
	 * Onto the LRU only once locked, as do_swap_page() does: an unlocked
	 * folio read around the cache (old design) still holds its slot's
	 * SWAP_HAS_CACHE, and reclaim must not find it in that state.
	 */
	err = uswap_swapin_lock(folio, entry);
	if (info.major)
		lru_add(mem, folio, false);
	if (err) {
		folio_put(folio);
		if (err == -EIO) {
			mem_stat_inc(mem, read_errors);
			return -EIO;
		}
		return 0;
	}
	/*
	 * The object's accesses write the page with no mapping to protect:
	 * it must not change while the device may still read it (as the
	 * kernel's shmem_swapin_folio() waits). Reclaim cannot start another
	 * write while we hold the lock.
	 */
	folio_wait_writeback(folio);
	pthread_mutex_lock(&shm->lock);
	if (shm->slots[idx] == v) {
		folio->mapping = (void *)((uintptr_t)shm | MAPPING_SHMEM);
		folio->index = idx;
		folio_get(folio);	/* the object's reference */
		shm->slots[idx] = (uint64_t)(uintptr_t)folio;
		folio_put_swap(folio, -1);
		/* The object holds the page now: the slot can go. */
		folio_free_swap(folio);
	} else {
		folio_free_swap(folio);
	}
	pthread_mutex_unlock(&shm->lock);
	folio_unlock(folio);
	folio_put(folio);
	return 0;
}

/* A zeroed folio for never-written page @idx. Return: 0, -ENOMEM. */
static int shmem_alloc(struct uswap_shmem *shm, uint64_t idx)
{
	struct uswap_mem *mem = shm->mem;
	struct folio *f = mem_alloc_folio(mem, 0);
	bool used = false;

	if (!f)
		return -ENOMEM;
	memset(folio_address(f), 0, USWAP_PAGE_SIZE);
	folio_mark_uptodate(f);
	folio_set_flag(f, PG_swapbacked);
	f->mapping = (void *)((uintptr_t)shm | MAPPING_SHMEM);
	f->index = idx;
	lru_add(mem, f, false);
	pthread_mutex_lock(&shm->lock);
	if (!shm->slots[idx]) {
		shm->slots[idx] = (uint64_t)(uintptr_t)f;	/* takes our reference */
		used = true;
	}
	pthread_mutex_unlock(&shm->lock);
	if (!used) {
		lru_del(mem, f);
		folio_put(f);
	}
	return 0;
}

static int shmem_rw(struct uswap_shmem *shm, uint64_t off, void *buf, size_t len, bool write)
{
	while (len) {
		uint64_t idx = off >> USWAP_PAGE_SHIFT;
		size_t po = off & (USWAP_PAGE_SIZE - 1), n = USWAP_MIN(len, USWAP_PAGE_SIZE - po);
		uint64_t v;
		int err = 0;

		if (idx >= shm->nr_pages)
			return -EFAULT;
		pthread_mutex_lock(&shm->lock);
		v = shm->slots[idx];
		if (v == PTE_POISON) {
			pthread_mutex_unlock(&shm->lock);
			return -EIO;
		}
		if (slot_is_folio(v)) {
			struct folio *f = (struct folio *)(uintptr_t)v;

			if (write) {
				memcpy((char *)folio_address(f) + po, buf, n);
				folio_mark_dirty(f);
			} else {
				memcpy(buf, (char *)folio_address(f) + po, n);
			}
			folio_mark_accessed(shm->mem, f);
			pthread_mutex_unlock(&shm->lock);
			off += n;
			buf = (char *)buf + n;
			len -= n;
			continue;
		}
		pthread_mutex_unlock(&shm->lock);
		if (!v)
			err = shmem_alloc(shm, idx);
		else
			err = shmem_swapin(shm, idx, v);
		if (err)
			return err;
	}
	return 0;
}

/** uswap_shmem_read() - see uswap/mm.h. */
USWAP_API int uswap_shmem_read(struct uswap_shmem *shm, uint64_t off, void *buf, size_t len)
{
	return shmem_rw(shm, off, buf, len, false);
}

/** uswap_shmem_write() - see uswap/mm.h. */
USWAP_API int uswap_shmem_write(struct uswap_shmem *shm, uint64_t off, const void *buf, size_t len)
{
	return shmem_rw(shm, off, (void *)buf, len, true);
}

/**
 * shmem_unmap_folio() - reclaim: the object gives up its page for the
 * swap entry of its swap-cache folio, with one swap reference.
 * A folio the object gave up on an earlier pass (its write was
 * asynchronous, so reclaim put it back until the write ended) already
 * has the object's slot holding its swap entry: it is a plain swap-cache
 * folio now, as after the kernel's shmem_writeout(), and reclaim may free
 * it.
 * Context: folio locked and in the swap cache. Return: true if done.
 */
bool shmem_unmap_folio(struct uswap_shmem *shm, struct folio *folio)
{
	uint64_t v;
	bool done = false;

	pthread_mutex_lock(&shm->lock);
	v = shm->slots[folio->index];
	if (v == (uint64_t)(uintptr_t)folio && !folio_dup_swap(folio, -1)) {
		shm->slots[folio->index] = swp_entry_to_pte(folio->swap, false);
		folio_put_refs(folio, 1);	/* the object's reference */
		done = true;
	} else if (slot_is_swap(v) && pte_to_swp_entry(v).val == folio->swap.val) {
		done = true;
	}
	pthread_mutex_unlock(&shm->lock);
	return done;
}

/*
 * Swapoff could not read page @idx (its device failed): the page is lost.
 * Its slot becomes PTE_POISON and the object's swap reference is put.
 * Context: shm->lock not held.
 */
static void shmem_unuse_lost(struct uswap_shmem *shm, uint64_t idx, uint64_t v)
{
	bool lost = false;

	pthread_mutex_lock(&shm->lock);
	if (shm->slots[idx] == v) {
		shm->slots[idx] = PTE_POISON;
		lost = true;
	}
	pthread_mutex_unlock(&shm->lock);
	if (!lost)
		return;
	USWAP_BUG_ON(swap_put_entries_direct(pte_to_swp_entry(v), 1));
	mem_stat_inc(shm->mem, swapoff_lost);
}

/**
 * shmem_unuse() - swapoff: bring in every page on device @type. A page
 * that cannot be read (-EIO) is lost: see shmem_unuse_lost().
 * Context: may sleep. Return: 0, or the swap-in's -errno (-ENOMEM, ...)
 * other than -EIO.
 */
int shmem_unuse(struct uswap_shmem *shm, unsigned int type)
{
	uint64_t i;
	int err;

	for (i = 0; i < shm->nr_pages; i++) {
		for (;;) {
			uint64_t v;

			pthread_mutex_lock(&shm->lock);
			v = shm->slots[i];
			pthread_mutex_unlock(&shm->lock);
			if (!slot_is_swap(v) || swp_type(pte_to_swp_entry(v)) != type)
				break;
			err = shmem_swapin(shm, i, v);
			if (err == -EIO)
				shmem_unuse_lost(shm, i, v);
			else if (err)
				return err;
		}
	}
	return 0;
}
