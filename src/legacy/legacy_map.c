/* SPDX-License-Identifier: MIT */
/*
 * The swap_map of the old design: a byte per slot, counts up to 62 in the
 * byte and beyond in continuation pages, and SWAP_HAS_CACHE, the pin a
 * folio (cached or read around the cache) holds on its slots.
 *
 * The kernel walked the continuation digits with carries and borrows one
 * step at a time (swap_count_continued); this file decodes the count,
 * computes count +- 1 and encodes it back, which yields the same bytes
 * because a count has exactly one representation (legacy.h).
 */
#include <stdlib.h>

#include "legacy/legacy_internal.h"
#include "util/alloc.h"

/* The continuation chain of @offset's map page, or NULL. cont_lock held. */
static struct legacy_cont_page *cont_chain(struct legacy_info *li, uint64_t offset)
{
	uswap_assert_held(&li->cont_lock);
	return li->cont_heads ? li->cont_heads[offset / LEGACY_MAP_PAGE] : NULL;
}

/* Continuation pages a count needs above the map byte's digit. */
static unsigned int legacy_cont_levels(long count)
{
	unsigned int need = 0;
	long t;

	for (t = count / (SWAP_MAP_MAX + 1); t; t /= SWAP_CONT_MAX + 1)
		need++;
	return need;
}

/**
 * __legacy_get_count() - exact count of slot @offset, continuation included.
 * Context: ci->lock held; takes cont_lock. Return: count, -EINVAL if bad.
 */
long __legacy_get_count(struct swap_info_struct *si, struct swap_cluster_info *ci,
			uint64_t offset)
{
	struct legacy_info *li = legacy_info(si);
	unsigned char ent = legacy_map_get(si, offset);
	long count, mult = SWAP_MAP_MAX + 1;
	struct legacy_cont_page *p;

	uswap_assert_held(&ci->lock);
	(void)ci;
	if (ent == SWAP_MAP_BAD)
		return -EINVAL;
	count = ent & SWAP_COUNT_MASK;
	if (!(ent & COUNT_CONTINUED))
		return count;
	uswap_spin_lock(&li->cont_lock);
	for (p = cont_chain(li, offset); p; p = p->next) {
		unsigned char d = p->digit[offset % LEGACY_MAP_PAGE];

		count += (long)(d & SWAP_CONT_MAX) * mult;
		if (!(d & COUNT_CONTINUED))
			break;
		mult *= SWAP_CONT_MAX + 1;
	}
	uswap_spin_unlock(&li->cont_lock);
	return count;
}

/*
 * Write @count into slot @offset, keeping SWAP_HAS_CACHE. Every digit of
 * the chain is rewritten, so digits above the new count's top become 0.
 * Context: ci->lock held; takes cont_lock.
 * Return: 0, or -ENOMEM with *levels = continuation pages the count needs
 * (nothing written): the caller adds a page and retries.
 */
static int __legacy_set_count(struct swap_info_struct *si, uint64_t offset, long count,
			      unsigned int *levels)
{
	struct legacy_info *li = legacy_info(si);
	unsigned char ent = legacy_map_get(si, offset), cache = ent & SWAP_HAS_CACHE;
	long low = count % (SWAP_MAP_MAX + 1), rest = count / (SWAP_MAP_MAX + 1), t;
	unsigned int need = 0, have = 0;
	struct legacy_cont_page *p;

	uswap_assert(count >= 0 && ent != SWAP_MAP_BAD);
	if (!rest && !(ent & COUNT_CONTINUED)) {
		legacy_map_set(si, offset, (unsigned char)(low | cache));
		return 0;
	}
	need = legacy_cont_levels(count);
	uswap_spin_lock(&li->cont_lock);
	for (p = cont_chain(li, offset); p; p = p->next)
		have++;
	if (need > have) {
		uswap_spin_unlock(&li->cont_lock);
		*levels = need;
		return -ENOMEM;
	}
	for (p = cont_chain(li, offset), t = rest; p; p = p->next) {
		unsigned char d = (unsigned char)(t % (SWAP_CONT_MAX + 1));

		t /= SWAP_CONT_MAX + 1;
		p->digit[offset % LEGACY_MAP_PAGE] = (unsigned char)(d | (t ? COUNT_CONTINUED : 0));
	}
	uswap_spin_unlock(&li->cont_lock);
	legacy_map_set(si, offset, (unsigned char)(low | cache | (rest ? COUNT_CONTINUED : 0)));
	return 0;
}

#ifndef legacy_cont_alloc_unlocked_hook
#define legacy_cont_alloc_unlocked_hook(si, offset) do { } while (0)
#endif

/*
 * The kernel's add_swap_count_continuation(): give @offset's map page a
 * chain of at least @levels continuation pages. The page (and the lazily
 * allocated array of chain heads, the kernel's page->lru of each vmalloc
 * page) is allocated with the cluster unlocked; meanwhile a racing thread
 * may have added one, or puts may have lowered the count so that the slot
 * no longer needs it (the kernel rechecks the count for that): then ours
 * is dropped.
 * Context: ci->lock held on entry and exit, dropped inside.
 * Return: 0 (retry the count), -ENOMEM.
 */
static int legacy_add_continuation(struct swap_info_struct *si, struct swap_cluster_info *ci,
				   uint64_t offset, unsigned int levels)
{
	struct legacy_info *li = legacy_info(si);
	struct legacy_cont_page *page, **heads = NULL, **tail;
	unsigned int have = 0;
	int err = 0;

	swap_cluster_unlock(ci);
	page = uswap_calloc(1, sizeof(*page));
	if (!atomic_load_explicit(&li->has_cont_heads, memory_order_acquire))
		heads = uswap_calloc(li->nr_map_pages, sizeof(*heads));
	legacy_cont_alloc_unlocked_hook(si, offset);
	uswap_spin_lock(&ci->lock);
	if (!page) {
		free(heads);
		return -ENOMEM;
	}
	/* The count one more dup would make now, not when we unlocked. */
	levels = USWAP_MIN(levels, legacy_cont_levels(__legacy_get_count(si, ci, offset) + 1));
	uswap_spin_lock(&li->cont_lock);
	if (!li->cont_heads) {
		if (!heads) {
			err = -ENOMEM;
			goto out;
		}
		li->cont_heads = heads;
		heads = NULL;
		atomic_store_explicit(&li->has_cont_heads, true, memory_order_release);
	}
	for (tail = &li->cont_heads[offset / LEGACY_MAP_PAGE]; *tail; tail = &(*tail)->next)
		have++;
	if (have < levels) {
		*tail = page;
		page = NULL;
		atomic_fetch_add_explicit(&li->nr_cont_pages, 1, memory_order_relaxed);
	}
out:
	uswap_spin_unlock(&li->cont_lock);
	free(page);
	free(heads);
	return err;
}

/**
 * legacy_free_cont_pages() - free every continuation page (swapoff).
 * Context: the device is dead; no locks needed.
 */
void legacy_free_cont_pages(struct legacy_info *li)
{
	unsigned long i;

	if (!li->cont_heads)
		return;
	for (i = 0; i < li->nr_map_pages; i++) {
		struct legacy_cont_page *p = li->cont_heads[i], *next;

		for (; p; p = next) {
			next = p->next;
			free(p);
			atomic_fetch_sub_explicit(&li->nr_cont_pages, 1, memory_order_relaxed);
		}
	}
	free(li->cont_heads);
	li->cont_heads = NULL;
	atomic_store(&li->has_cont_heads, false);
}

/**
 * legacy_dup() - __swap_duplicate(): count + 1 on @nr slots of one cluster.
 * @direct: fork's swap_duplicate, every slot must have a count; otherwise
 * the slots belong to a locked folio holding SWAP_HAS_CACHE.
 * Context: takes ci->lock (dropped to add continuation pages).
 * Return: 0; -EINVAL (bad slot), -ENOENT (count 0 and not cached, or count
 * 0 for @direct), -ENOMEM, -EOVERFLOW. On error no count changed.
 */
int legacy_dup(struct swap_info_struct *si, uint64_t offset, unsigned int nr, bool direct)
{
	struct swap_cluster_info *ci;
	unsigned int i, levels = 0;
	int err = 0;

	uswap_assert(offset % SWAPFILE_CLUSTER + nr <= SWAPFILE_CLUSTER);
	ci = swap_cluster_lock(si, offset);
	for (i = 0; i < nr; i++) {
		uint64_t o = offset + i;
		unsigned char ent = legacy_map_get(si, o);
		long c;

		if (ent == SWAP_MAP_BAD) {
			err = -EINVAL;
			break;
		}
		c = __legacy_get_count(si, ci, o);
		if (!c && (direct || !(ent & SWAP_HAS_CACHE))) {
			err = -ENOENT;
			break;
		}
		if (c >= LEGACY_COUNT_LIMIT) {
			err = -EOVERFLOW;
			break;
		}
		err = __legacy_set_count(si, o, c + 1, &levels);
		if (err == -ENOMEM) {
			/* The slots are pinned (folio lock or the caller's
			 * reference): they survive the unlocked window. */
			err = legacy_add_continuation(si, ci, o, levels);
			if (!err) {
				i--;
				continue;
			}
		}
		if (err)
			break;
	}
	if (err) {
		while (i--) {
			uint64_t o = offset + i;

			__legacy_set_count(si, o, __legacy_get_count(si, ci, o) - 1, &levels);
		}
		uswap_dump_slot("legacy dup failed", si, offset);
	}
	if (USWAP_DEBUG_WALKS)
		legacy_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	return err;
}

/**
 * legacy_folio_put() - swap_free_nr() from a locked folio holding
 * SWAP_HAS_CACHE: count - 1 on each slot; never frees (the pin stays).
 * Context: folio locked; takes ci->lock. Return: 0, -ENOENT (a count is 0,
 * nothing changed).
 */
int legacy_folio_put(struct swap_info_struct *si, struct folio *folio, uint64_t offset,
		     unsigned int nr)
{
	struct swap_cluster_info *ci = swap_cluster_lock(si, offset);
	unsigned int i, levels;
	int err = 0;

	(void)folio;
	for (i = 0; i < nr; i++) {
		if (__legacy_get_count(si, ci, offset + i) <= 0) {
			err = -ENOENT;
			uswap_dump_slot("folio_put_swap of a zero count", si, offset + i);
			break;
		}
	}
	for (i = 0; !err && i < nr; i++) {
		uswap_assert(legacy_map_get(si, offset + i) & SWAP_HAS_CACHE);
		__legacy_set_count(si, offset + i, __legacy_get_count(si, ci, offset + i) - 1,
				   &levels);
	}
	if (USWAP_DEBUG_WALKS)
		legacy_check_cluster(si, ci);
	swap_cluster_unlock(ci);
	return err;
}

/**
 * __legacy_free_entries() - slots [offset, offset+nr) of @ci, whose map
 * bytes are 0, become free: shadows cleared (phase I cleared them here),
 * usage accounted, the cluster relisted. The legacy form of
 * __swap_cluster_free_entries(). Context: ci->lock held.
 */
void __legacy_free_entries(struct swap_info_struct *si, struct swap_cluster_info *ci,
			   uint64_t offset, unsigned int nr)
{
	unsigned int off = (unsigned int)(offset % SWAPFILE_CLUSTER), i;

	uswap_assert_held(&ci->lock);
	uswap_assert(ci->count >= nr);
	for (i = 0; i < nr; i++) {
		uint64_t tb = __swap_table_get(ci, off + i);

		USWAP_BUG_ON(legacy_map_get(si, offset + i));
		USWAP_BUG_ON(swp_tb_is_folio(tb) || swp_tb_is_bad(tb));
		if (!swp_tb_is_null(tb))
			__swap_table_set(ci, off + i, SWP_TB_NULL);
	}
	ci->count -= nr;
	swap_range_free(si, offset, nr);
	if (!ci->count)
		free_cluster(si, ci);
	else
		partial_free_cluster(si, ci);
}

/**
 * __legacy_put_cache() - drop SWAP_HAS_CACHE from @nr slots of @ci
 * (put_swap_folio / swapcache_clear); slots left with nothing are freed.
 * Context: ci->lock held; the table words are no longer PFNs.
 */
void __legacy_put_cache(struct swap_info_struct *si, struct swap_cluster_info *ci,
			uint64_t offset, unsigned int nr)
{
	unsigned int i, run = 0;

	uswap_assert_held(&ci->lock);
	for (i = 0; i < nr; i++) {
		unsigned char ent = legacy_map_get(si, offset + i);

		USWAP_BUG_ON(!(ent & SWAP_HAS_CACHE));
		ent &= (unsigned char)~SWAP_HAS_CACHE;
		legacy_map_set(si, offset + i, ent);
		if (!ent) {
			run++;
			continue;
		}
		if (run) {
			__legacy_free_entries(si, ci, offset + i - run, run);
			run = 0;
		}
	}
	if (run)
		__legacy_free_entries(si, ci, offset + nr - run, run);
}

/**
 * __legacy_swapcache_prepare() - take SWAP_HAS_CACHE on @nr slots of @ci:
 * the bit lock that makes one racing swap-in the reader.
 * Context: ci->lock held. Return: 0; -EEXIST (some slot's bit is taken:
 * cached, or being read by someone else), -ENOENT (a slot has count 0),
 * -EINVAL (bad slot). On error no bit changed.
 */
int __legacy_swapcache_prepare(struct swap_info_struct *si, struct swap_cluster_info *ci,
			       uint64_t offset, unsigned int nr)
{
	unsigned int i;

	uswap_assert_held(&ci->lock);
	for (i = 0; i < nr; i++) {
		unsigned char ent = legacy_map_get(si, offset + i);

		if (ent == SWAP_MAP_BAD)
			return -EINVAL;
		if (ent & SWAP_HAS_CACHE)
			return -EEXIST;
		if (!swap_count(ent))
			return -ENOENT;
	}
	for (i = 0; i < nr; i++)
		legacy_map_set(si, offset + i,
			       (unsigned char)(legacy_map_get(si, offset + i) | SWAP_HAS_CACHE));
	return 0;
}

/** legacy_swapcache_clear() - __legacy_put_cache() taking ci->lock. */
void legacy_swapcache_clear(struct swap_info_struct *si, uint64_t offset, unsigned int nr)
{
	struct swap_cluster_info *ci = swap_cluster_lock(si, offset);

	__legacy_put_cache(si, ci, offset, nr);
	if (USWAP_DEBUG_WALKS)
		legacy_check_cluster(si, ci);
	swap_cluster_unlock(ci);
}

/* Check that every slot of [offset, offset+nr) in a locked cluster has a count. */
static int legacy_check_counted(struct swap_info_struct *si, struct swap_cluster_info *ci,
				uint64_t offset, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		long c = __legacy_get_count(si, ci, offset + i);

		if (c < 0)
			return (int)c;
		if (!c)
			return -ENOENT;
	}
	return 0;
}

/**
 * legacy_put_direct() - free_swap_and_cache_nr(): one reference less on
 * each of @nr slots. The whole range is checked first so that a wrong call
 * changes nothing. A slot reaching 0 is freed unless SWAP_HAS_CACHE is
 * set; then its folio is reclaimed if unmapped (or swap is full).
 * Context: takes ci->lock per cluster, then folio trylocks.
 * Return: 0, -ENOENT (a count is 0), -EINVAL (a bad slot).
 */
int legacy_put_direct(struct swap_info_struct *si, uint64_t offset, uint64_t nr)
{
	uint64_t end = offset + nr, o;
	unsigned int levels;
	int err = 0;

	for (o = offset; o < end;) {
		unsigned int n = (unsigned int)USWAP_MIN(end - o, SWAPFILE_CLUSTER - o % SWAPFILE_CLUSTER);
		struct swap_cluster_info *ci = swap_cluster_lock(si, o);

		err = legacy_check_counted(si, ci, o, n);
		swap_cluster_unlock(ci);
		if (err) {
			uswap_dump_slot("put of an unreferenced slot", si, o);
			return err;
		}
		o += n;
	}
	for (o = offset; o < end;) {
		unsigned int n = (unsigned int)USWAP_MIN(end - o, SWAPFILE_CLUSTER - o % SWAPFILE_CLUSTER);
		uint64_t reclaim[SWAPFILE_CLUSTER / 64] = { 0 };
		struct swap_cluster_info *ci = swap_cluster_lock(si, o);
		unsigned int i, run = 0;

		/* A concurrent misuse may have dropped them meanwhile. */
		err = legacy_check_counted(si, ci, o, n);
		for (i = 0; !err && i < n; i++) {
			long c = __legacy_get_count(si, ci, o + i);

			__legacy_set_count(si, o + i, c - 1, &levels);
			if (!legacy_map_get(si, o + i)) {
				run++;
				continue;
			}
			if (run) {
				__legacy_free_entries(si, ci, o + i - run, run);
				run = 0;
			}
			if (legacy_map_get(si, o + i) == SWAP_HAS_CACHE)
				reclaim[i / 64] |= 1ULL << (i % 64);
		}
		if (run)
			__legacy_free_entries(si, ci, o + n - run, run);
		if (USWAP_DEBUG_WALKS)
			legacy_check_cluster(si, ci);
		swap_cluster_unlock(ci);
		if (err)
			return err;
		for (i = 0; i < n; i++)
			if (reclaim[i / 64] & (1ULL << (i % 64)))
				legacy_try_reclaim(si, o + i, false);
		o += n;
	}
	return 0;
}

/** legacy_swapcount() - swp_swapcount(). Context: takes ci->lock. */
long legacy_swapcount(struct swap_info_struct *si, uint64_t offset)
{
	struct swap_cluster_info *ci = swap_cluster_lock(si, offset);
	long c = __legacy_get_count(si, ci, offset);

	swap_cluster_unlock(ci);
	return c;
}

/** legacy_swapped() - swap_entry_swapped(): count > 0. Lockless. */
bool legacy_swapped(struct swap_info_struct *si, uint64_t offset)
{
	unsigned char ent = legacy_map_get(si, offset);

	return ent != SWAP_MAP_BAD && swap_count(ent);
}

/** legacy_maybe_swapped() - any slot of @folio with a count. Lockless. */
bool legacy_maybe_swapped(struct swap_info_struct *si, struct folio *folio)
{
	uint64_t offset = swp_offset(folio->swap);
	unsigned long i, nr = folio_nr_pages(folio);

	for (i = 0; i < nr; i++)
		if (legacy_swapped(si, offset + i))
			return true;
	return false;
}

/**
 * legacy_check_cluster() - recount @ci and check the invariants of
 * legacy.h; abort on the first broken one. Context: ci->lock held.
 */
void legacy_check_cluster(struct swap_info_struct *si, struct swap_cluster_info *ci)
{
	uint64_t base = cluster_offset(si, ci);
	unsigned int i, used = 0;

	uswap_assert_held(&ci->lock);
	for (i = 0; i < SWAPFILE_CLUSTER; i++) {
		uint64_t tb = __swap_table_get(ci, i);
		unsigned char ent;

		if (base + i >= si->max) {
			/* The masked tail: bad in the table, no map byte. */
			USWAP_BUG_ON(swap_cluster_table(ci) && !swp_tb_is_bad(tb));
			used += swap_cluster_table(ci) != NULL;
			continue;
		}
		ent = legacy_map_get(si, base + i);
		if (ent)
			used++;
		USWAP_BUG_ON((ent == SWAP_MAP_BAD) != swp_tb_is_bad(tb));
		USWAP_BUG_ON(!swp_tb_is_countable(tb) && !swp_tb_is_bad(tb));
		USWAP_BUG_ON(swp_tb_is_folio(tb) && !(ent & SWAP_HAS_CACHE));
		USWAP_BUG_ON(!ent && !swp_tb_is_null(tb));
		USWAP_BUG_ON(ent != SWAP_MAP_BAD && (ent & SWAP_COUNT_MASK) > SWAP_MAP_MAX);
		if (swp_tb_is_folio(tb) || swp_tb_is_shadow(tb))
			USWAP_BUG_ON(__swp_tb_get_count(tb));
	}
	USWAP_BUG_ON(used != ci->count);
}
