/* SPDX-License-Identifier: MIT */
/*
 * The messages between `uswap run` (the supervisor) and the shim in each
 * program process, over a SOCK_SEQPACKET unix socket (one message per
 * packet). docs/RUNTIME.md draws who sends what, and when.
 */
#ifndef USWAP_RUNTIME_PROTO_H
#define USWAP_RUNTIME_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define RT_ENV_SOCK	"USWAP_RUN_SOCK"	/* the supervisor's socket path */
#define RT_BATCH	64			/* pages per eviction batch */
#define RT_PAGE		4096UL

enum rt_msg_type {
	RT_HELLO = 1,		/* shim -> sup, with fds [uffd, transfer memfd] */
	RT_HELLO_ACK,		/* sup -> shim: features enabled, or an error */
	RT_REG,			/* shim -> sup: [start, end) was registered */
	RT_EVICT,		/* sup -> shim: move these pages out */
	RT_EVICTED,		/* shim -> sup: status per page, bytes in the transfer buffer */
	RT_FORGET,		/* sup -> shim: [start, end) was unmapped */
	RT_PREFORK,		/* shim -> sup: bring every page in, stop evicting */
	RT_PREFORK_DONE,	/* sup -> shim: done */
	RT_POSTFORK,		/* shim -> sup: evicting may resume */
	RT_STAT,		/* `uswap stat` -> sup (an rt_hello, no fds): one packet of JSON */
	/* fork events (docs/RUNTIME.md, "Fork with fork events") */
	RT_HELLO_FORK = 20,	/* child shim -> sup (an rt_hello, fds [transfer memfd]):
				 * RT_HELLO_ACK answers with fds [the child's uffd] */
	RT_AGENT_UP = 21,	/* shim -> sup (an rt_simple naming the agent's
				 * thread): the agent runs; EVICT may be sent (no
				 * one could answer a batch sent earlier) */
	RT_LOG = 23,		/* shim -> sup (an rt_log): a message the supervisor prints */
	RT_KICK = 22,		/* shim -> sup: the move lock is handed over (xfer_ctl.h) */
};

struct rt_hello {
	uint32_t type;
	int32_t pid;			/* the sender's, never used: the supervisor
					 * takes the kernel's word (SO_PEERCRED) */
	uint64_t staging;		/* the agent's staging area: events there are its own;
					 * page aligned, RT_BATCH pages exactly */
	uint64_t staging_len;
	uint64_t xfer_pages;		/* transfer buffer size in pages (RT_XFER_PAGES) */
};

struct rt_hello_ack {
	uint32_t type;
	int32_t err;			/* 0, or -errno: the shim gives up (and says so) */
	uint64_t features;		/* UFFD_FEATURE_* enabled on the uffd */
};

struct rt_range_msg {			/* RT_REG, RT_FORGET */
	uint32_t type;
	uint32_t pad;
	uint64_t start, end;
};

/* RT_EVICT's flags */
#define RT_EVICT_AWAY_LEAD	1u	/* the thread followed on `away` is the agent's
					 * lead (tid == pid): its own CPU, read at the
					 * batch, is the one to stay off */
#define RT_EVICT_TURNS		2u	/* two processes fault in turns: an agent at a
					 * real-time policy yields between runs */

struct rt_evict {			/* RT_EVICT, RT_EVICTED */
	uint32_t type;
	uint32_t n;			/* <= RT_BATCH */
	int32_t away;			/* EVICT: the CPU the supervisor serves a
					 * followed thread on, for the agent to stay
					 * off it; -1: none */
	uint32_t flags;			/* EVICT: RT_EVICT_* */
	uint64_t addr[RT_BATCH];
	int32_t status[RT_BATCH];	/* EVICT: 1 shared after a fork (make it exclusive
					 * first), else 0. EVICTED: 0 moved (bytes in slot
					 * i), 1 moved after a write made it exclusive,
					 * -errno (-ECANCELED: the supervisor cancelled the
					 * slot, xfer_ctl.h) */
};

struct rt_log {
	uint32_t type;
	uint32_t len;			/* bytes of text used */
	char text[240];			/* not NUL-terminated; printed escaped */
};

struct rt_simple {			/* RT_PREFORK, RT_PREFORK_DONE, RT_POSTFORK, RT_AGENT_UP, RT_KICK */
	uint32_t type;
	uint32_t arg;			/* RT_AGENT_UP: the agent's thread id; else 0 */
};

/*
 * The size of a shim's message of type @type, each sent whole as one
 * packet: 0 for a type the shim never sends after its hello (the
 * supervisor takes any other size, or such a type, as a violation).
 */
static inline size_t rt_msg_size(uint32_t type)
{
	switch (type) {
	case RT_REG:
		return sizeof(struct rt_range_msg);
	case RT_EVICTED:
		return sizeof(struct rt_evict);
	case RT_LOG:
		return sizeof(struct rt_log);
	case RT_PREFORK:
	case RT_POSTFORK:
	case RT_AGENT_UP:
	case RT_KICK:
		return sizeof(struct rt_simple);
	default:
		return 0;
	}
}

#endif
