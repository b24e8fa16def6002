/* SPDX-License-Identifier: MIT */
/*
 * Following the faulting thread (docs/RUNTIME.md). A fault costs two
 * wake-ups: the faulting thread wakes the serving thread, whose copy wakes
 * the faulting thread. Where the two sleep on different CPUs, each wake-up
 * lands on a CPU that went idle, which on a guest is a halted vCPU to wake.
 * On one CPU neither does: the serving thread is queued while the faulting
 * thread is still on its way to sleep, and the faulting thread preempts
 * the serving thread when woken. Binding the serving thread there is not
 * enough: the scheduler wakes a thread on an idle CPU rather than on a
 * busy one (select_idle_sibling()), and the waker's CPU is busy with the
 * waker. A CPU that runs only SCHED_IDLE tasks counts as idle there
 * (sched_idle_cpu()), so while it follows, the serving thread issues the
 * wake-up at SCHED_IDLE, and stays there while its turns serve the
 * followed thread alone: it takes its own policy back before a turn with
 * other work, before it wakes an agent with a batch (which would
 * otherwise land on this "idle" CPU) and before it sleeps. A policy change
 * costs about as much as the fault's copy: kept across turns, not changed
 * twice per fault (preempted by the woken thread, the serving thread runs
 * again when that thread faults again, and finds the fault waiting).
 *
 * A thread at SCHED_IDLE runs only when nothing else wants its CPU: while
 * the followed thread computes, the serving thread waits, and with it any
 * other thread's faults and any agent's answer. The guard thread looks
 * every RT_COLO_GUARD_NS; when the serving thread has not turned for
 * RT_COLO_STUCK_NS while the event loop had work waiting at two looks in a
 * row, the guard gives it its policy and affinity back, and following
 * stops for RT_COLO_BACKOFF_NS.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/colocate.h"
#include "runtime/uffd_ops.h"

#define RT_COLO_ALONE_NS	10000000ULL	/* one thread faulted alone this long */
#define RT_COLO_SHARE		2	/* others' faults under half its own: alone */
#define RT_COLO_LOOK_NS		100000ULL	/* its CPU read at most this often */
#define RT_COLO_STUCK_NS	2000000ULL	/* no turn for this long, with work waiting */
#define RT_COLO_BACKOFF_NS	100000000ULL	/* no following after a rescue */
#define RT_COLO_GUARD_NS	1000000ULL	/* the guard's period while following */
#define RT_COLO_PARK_NS		50000000ULL	/* the guard sleeps after this out of SCHED_IDLE */

/**
 * rt_sched_can_return() - whether the calling thread, at SCHED_IDLE, may
 * take @policy and @param back (or give them to another thread of its
 * process): with CAP_SYS_NICE, or (sched(7)) a nice value RLIMIT_NICE
 * allows, a real-time priority RLIMIT_RTPRIO allows. Context: any thread.
 */
bool rt_sched_can_return(int policy, const struct sched_param *param)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	struct rlimit rl;
	int nice;

	if (policy < 0 || policy == SCHED_IDLE || policy == SCHED_DEADLINE)
		return false;
	if (!syscall(SYS_capget, &hdr, d) &&
	    (d[CAP_SYS_NICE / 32].effective >> (CAP_SYS_NICE % 32)) & 1)
		return true;
	if (policy == SCHED_FIFO || policy == SCHED_RR)
		return !getrlimit(RLIMIT_RTPRIO, &rl) &&
		       rl.rlim_cur >= (rlim_t)param->sched_priority;
	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	return !errno && !getrlimit(RLIMIT_NICE, &rl) && rl.rlim_cur >= (rlim_t)(20 - nice);
}

/* The guard: while the serving thread is at SCHED_IDLE, look every
 * RT_COLO_GUARD_NS whether it is kept from waiting work: work seen waiting
 * at two looks in a row, no turn since the first, and none for
 * RT_COLO_STUCK_NS (a thread just woken is not stuck). If so, give it its
 * policy and affinity back. Context: its own thread; touches the serving
 * thread only through scheduler calls and the atomics. */
static void *guard_main(void *arg)
{
	struct rt_colo *c = arg;
	struct timespec ts = { 0, RT_COLO_GUARD_NS };
	uint64_t waiting_beat = 0;	/* the beat at a look that saw work waiting */

	for (;;) {
		struct pollfd p = { .fd = c->epfd, .events = POLLIN };
		uint64_t beat;

		pthread_mutex_lock(&c->lock);
		while (atomic_load(&c->parked) && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
		pthread_mutex_unlock(&c->lock);
		nanosleep(&ts, NULL);
		if (!atomic_load(&c->idle) && now_ns() - atomic_load(&c->last_ns) > RT_COLO_PARK_NS) {
			/* park; a wake-up that began meanwhile sees parked
			 * (rt_colo_copy()), or we see it */
			atomic_store(&c->parked, true);
			if (atomic_load(&c->idle) ||
			    now_ns() - atomic_load(&c->last_ns) <= RT_COLO_PARK_NS)
				atomic_store(&c->parked, false);
			continue;
		}
		beat = atomic_load(&c->beat_ns);
		if (!atomic_load(&c->idle) || poll(&p, 1, 0) <= 0) {
			waiting_beat = 0;
			continue;
		}
		if (beat != waiting_beat || now_ns() - beat < RT_COLO_STUCK_NS) {
			waiting_beat = beat;
			continue;
		}
		waiting_beat = 0;
		/* the serving thread may be leaving SCHED_IDLE itself: both
		 * set the same policy and affinity */
		sched_setscheduler(c->tid, c->policy, &c->param);
		sched_setaffinity(c->tid, sizeof(c->mask), &c->mask);
		atomic_store(&c->rescued, true);
	}
}

/*
 * rt_colo_init() - set @c up for the calling (serving) thread; @epfd is
 * the event loop's epoll. Following needs @enable, two CPUs or more in the
 * thread's affinity and a way back from SCHED_IDLE (rt_sched_can_return()).
 * Context: the serving thread, before the event loop. Return: nothing;
 * c->usable says whether following can happen.
 */
void rt_colo_init(struct rt_colo *c, int epfd, bool enable)
{
	memset(c, 0, sizeof(*c));
	atomic_init(&c->parked, true);
	c->stat_fd = -1;
	c->task_fd = -1;
	c->cpu = -1;
	c->helpers_off = -1;
	c->epfd = epfd;
	c->tid = (pid_t)syscall(SYS_gettid);
	c->policy = sched_getscheduler(0);
	if (!enable || c->policy < 0 || sched_getparam(0, &c->param) ||
	    sched_getaffinity(0, sizeof(c->mask), &c->mask) || CPU_COUNT(&c->mask) < 2 ||
	    !rt_sched_can_return(c->policy, &c->param))
		return;
	if (pthread_mutex_init(&c->lock, NULL))
		return;
	if (pthread_cond_init(&c->cond, NULL)) {
		pthread_mutex_destroy(&c->lock);
		return;
	}
	c->usable = true;
}

/*
 * rt_colo_normal() - give the serving thread its own policy back if it is
 * at SCHED_IDLE: before work that wakes another thread (an agent's batch)
 * or serves anyone but the followed thread. Context: serving thread.
 */
void rt_colo_normal(struct rt_colo *c)
{
	if (!c->at_idle)
		return;
	if (sched_setscheduler(0, c->policy, &c->param) && !atomic_load(&c->rescued)) {
		/* rt_sched_can_return() said yes: something changed under us */
		fprintf(stderr, "uswap run: cannot leave SCHED_IDLE: %s; following stops\n",
			strerror(errno));
		c->usable = false;
	}
	c->at_idle = false;
	atomic_store(&c->idle, false);
	c->idle_ns += now_ns() - c->idle_from;
}

/*
 * The supervisor's threads other than the serving thread, into c->helpers:
 * listed again only when their number changed (the link count of
 * /proc/self/task is two more than the threads), since listing the
 * directory took 60% of place_helpers() (about 15 us of 27 here, once
 * per bind). The threads listed are the supervisor's own, which live
 * until its end (kswapd, the copy thread, the guard, library threads):
 * a thread that ended changes the count and the list is read again.
 * Context: serving thread. Return: 0, or -1 (the list is not known).
 */
static int list_helpers(struct rt_colo *c)
{
	char buf[4096];
	struct stat st;
	long n;

	if (c->task_fd < 0) {
		c->task_fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (c->task_fd < 0)
			return -1;
	}
	if (fstat(c->task_fd, &st))
		return -1;
	if (st.st_nlink == c->task_nlink)
		return 0;
	c->nr_helpers = 0;
	c->task_nlink = 0;
	if (lseek(c->task_fd, 0, SEEK_SET))
		return -1;
	while ((n = syscall(SYS_getdents64, c->task_fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(void *)(buf + off);
			pid_t t = (pid_t)atoi(e->d_name);

			off += e->d_reclen;
			if (t > 0 && t != c->tid && c->nr_helpers < RT_COLO_HELPERS)
				c->helpers[c->nr_helpers++] = t;
		}
	}
	if (n < 0)
		return -1;
	c->task_nlink = st.st_nlink;
	return 0;
}

/*
 * Keep the supervisor's other threads (the mm layer's kswapd, the guard,
 * library threads) off @cpu, or give them the serving thread's own mask
 * (theirs at creation) back (@cpu < 0). Woken by the serving thread at SCHED_IDLE, such a
 * thread would be placed on its "idle" CPU; queued there, even delayed
 * after it sleeps, it makes the CPU busy at the followed thread's next
 * wake-up, which the scheduler then puts on the other CPU.
 * Context: serving thread. Failures leave a thread where it is.
 */
static void place_helpers(struct rt_colo *c, int cpu)
{
	cpu_set_t set = c->mask;

	if (cpu == c->helpers_off)
		return;
	if (cpu >= 0)
		CPU_CLR(cpu, &set);
	if (list_helpers(c))
		return;
	for (unsigned int i = 0; i < c->nr_helpers; i++)
		sched_setaffinity(c->helpers[i], sizeof(set), &set);
	c->helpers_off = cpu;
}

/* Stop following: the policy and affinity back, the stat file closed.
 * Context: serving thread. */
static void unfollow(struct rt_colo *c)
{
	rt_colo_normal(c);
	if (c->cpu >= 0)
		sched_setaffinity(0, sizeof(c->mask), &c->mask);
	place_helpers(c, -1);
	c->cpu = -1;
	c->key = NULL;
	if (c->stat_fd >= 0)
		close(c->stat_fd);
	c->stat_fd = -1;
}

/* Follow on @cpu: bind the serving thread there. Context: serving thread. */
static void follow(struct rt_colo *c, int cpu)
{
	cpu_set_t one;

	if (cpu == c->cpu)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return;
	c->binds++;
	c->cpu = cpu;
	place_helpers(c, cpu);
}

/* The CPU the followed thread last ran on (/proc/PID/task/TID/stat, the
 * 39th field), or -1. Context: serving thread. */
static int thread_cpu(struct rt_colo *c)
{
	char buf[1024], *p;
	ssize_t n;
	int field = 2;

	if (c->stat_fd < 0) {
		snprintf(buf, sizeof(buf), "/proc/%d/task/%d/stat", (int)c->pid, (int)c->ftid);
		c->stat_fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (c->stat_fd < 0)
			return -1;
	}
	n = pread(c->stat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* the name (field 2) may hold spaces and ')': count from its last ')' */
	for (p = strrchr(buf, ')'); p && *p; p++)
		if (*p == ' ' && ++field == 39)
			return atoi(p + 1);
	return -1;
}

/* Read the followed thread's CPU now (@now). Return: it, or -1 when the
 * thread is gone or on a CPU outside our mask, following then stopped.
 * Context: serving thread. */
static int look(struct rt_colo *c, uint64_t now)
{
	int cpu;

	c->look_ns = now;
	cpu = thread_cpu(c);
	if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &c->mask)) {
		unfollow(c);
		return -1;
	}
	return cpu;
}

/*
 * rt_colo_fault() - a fault of thread @tid of process @pid was read from
 * the uffd whose event loop entry is @key.
 * Follows @tid once it has been the thread faulting, with no run copied
 * (rt_colo_run()), for RT_COLO_ALONE_NS, on the CPU it last ran on (its
 * later moves: rt_colo_no_fault()). Faults of other threads, of this
 * process or another, stop following once they reach half of @tid's
 * (RT_COLO_SHARE; counts halved every RT_COLO_ALONE_NS): a thread
 * faulting far more than the rest is followed, the rest served the plain
 * way.
 * Context: serving thread.
 */
void rt_colo_fault(struct rt_colo *c, pid_t pid, pid_t tid, const void *key)
{
	uint64_t now;
	int cpu;

	if (!c->usable)
		return;
	now = now_ns();
	if (now - c->window_ns >= RT_COLO_ALONE_NS) {	/* older faults count half */
		c->window_ns = now;
		c->mine /= 2;
		c->others /= 2;
	}
	if (pid != c->pid || tid != c->ftid) {
		if (++c->others * RT_COLO_SHARE <= c->mine)
			return;		/* a rare other fault: still alone enough */
		unfollow(c);
		c->pid = pid;
		c->ftid = tid;
		c->alone_ns = now;
		c->mine = 1;
		c->others = 0;
		return;
	}
	c->mine++;
	if (now - c->alone_ns < RT_COLO_ALONE_NS || now < c->backoff_until)
		return;
	if (c->cpu >= 0 || (cpu = look(c, now)) < 0)
		return;
	if (!c->guard_up) {
		if (pthread_create(&c->guard, NULL, guard_main, c)) {
			c->usable = false;
			return;
		}
		c->guard_up = true;
	}
	follow(c, cpu);
	c->key = key;
}

/*
 * rt_colo_run() - a run (prefetch, zeros) is copied to process @pid: if it
 * is the one followed (or to be), stop following, and start counting
 * RT_COLO_ALONE_NS again. After a run the woken thread has pages to go
 * through while the serving thread stores the turn's evictions: work
 * better done on two CPUs than in turns on one, so the copy wakes it at
 * the serving thread's own policy, unbound, where the scheduler puts it.
 * Another process's run changes nothing here (its wake-up is the plain
 * one: ops_copy()). Context: serving thread, before the run's copy.
 */
void rt_colo_run(struct rt_colo *c, pid_t pid)
{
	if (!c->usable || pid != c->pid)
		return;
	c->alone_ns = now_ns();
	if (c->cpu >= 0)
		unfollow(c);
}

/*
 * rt_colo_copy() - copy @len bytes at @src to @dst of @uffd and wake the
 * threads waiting there; while following, at SCHED_IDLE, so that the
 * scheduler places the woken thread on this CPU, where it preempts us. The
 * serving thread stays at SCHED_IDLE while its turns serve the followed
 * thread alone (rt_colo_turn()). Context: serving thread; returns once it
 * runs again, mostly when the woken thread sleeps on its next fault.
 * Return: as rt_uffd_copy().
 */
int rt_colo_copy(struct rt_colo *c, int uffd, uint64_t dst, const void *src, uint64_t len,
		 uint64_t *done)
{
	static const struct sched_param zero;

	if (rt_colo_on(c) && !c->at_idle && !sched_setscheduler(0, SCHED_IDLE, &zero)) {
		c->at_idle = true;
		c->idle_from = now_ns();
		atomic_store(&c->beat_ns, c->idle_from);
		atomic_store(&c->idle, true);
		if (atomic_load(&c->parked)) {
			pthread_mutex_lock(&c->lock);
			atomic_store(&c->parked, false);
			pthread_cond_signal(&c->cond);
			pthread_mutex_unlock(&c->lock);
		}
	}
	if (c->at_idle) {
		atomic_store(&c->last_ns, now_ns());
		c->wakes++;
	}
	return rt_uffd_copy(uffd, dst, src, len, done);
}

/*
 * rt_colo_no_fault() - the event loop found nothing waiting. While
 * following, the followed thread then is not asleep on a fault on our
 * CPU: it was placed on another one at its last wake-up (docs/RUNTIME.md,
 * "Moved at a wake-up"), or it waits for something else. Read its CPU, at
 * most every RT_COLO_LOOK_NS, and follow it there (colo_moved): its next
 * fault then finds us on its CPU. Context: serving thread, before it
 * sleeps.
 */
void rt_colo_no_fault(struct rt_colo *c)
{
	uint64_t now;
	int cpu;

	if (c->cpu < 0 || (now = now_ns()) - c->look_ns < RT_COLO_LOOK_NS ||
	    (cpu = look(c, now)) < 0 || cpu == c->cpu)
		return;
	c->moved++;
	follow(c, cpu);
}

/*
 * rt_colo_turn() - the event loop turns; @only_followed: this turn's events
 * are all the followed process's uffd. A turn with other work gives the
 * serving thread its policy back; a rescue by the guard stops following
 * for a while. Context: serving thread, after each wait.
 */
void rt_colo_turn(struct rt_colo *c, bool only_followed)
{
	if (!c->usable)
		return;
	if (atomic_exchange(&c->rescued, false)) {
		/* the guard gave the policy and affinity back; unfollow()
		 * sets the same again and does the bookkeeping */
		c->rescues++;
		c->backoff_until = now_ns() + RT_COLO_BACKOFF_NS;
		unfollow(c);
		return;
	}
	if (!c->at_idle)
		return;
	atomic_store(&c->beat_ns, now_ns());
	if (!only_followed)
		rt_colo_normal(c);
}

/* rt_colo_fini() - stop following and the guard. Context: serving thread, after the loop. */
void rt_colo_fini(struct rt_colo *c)
{
	if (!c->usable && !c->guard_up)
		return;
	unfollow(c);
	if (c->task_fd >= 0)
		close(c->task_fd);
	c->task_fd = -1;
	if (c->guard_up) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_cond_signal(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->guard, NULL);
		c->guard_up = false;
	}
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	c->usable = false;
}
