/* SPDX-License-Identifier: MIT */
/*
 * The shim's fence between fork() and the program's own changes
 * to its address space (shim_vm.c; docs/RUNTIME.md, "Races of a program
 * with itself"). Part of libuswap_preload.so only.
 */
#ifndef USWAP_RUNTIME_SHIM_VM_H
#define USWAP_RUNTIME_SHIM_VM_H

#include <stddef.h>
#include <stdint.h>

/* Wait until no madvise/mremap/munmap of the program is in flight, and
 * hold new ones back until shim_vm_fork_end(). Context: the forking
 * thread, in the pthread_atfork prepare handler. */
void shim_vm_fork_begin(void);
/* Let them run again: @child is true in the child (one thread: the lock
 * is made anew). Context: the atfork parent or child handler. */
void shim_vm_fork_end(int child);
/* madvise(2) without the fence, for the shim's own memory. Return: 0, -1. */
int shim_raw_madvise(void *addr, size_t len, int advice);
/* Run the mmap system call with the fence held when it may replace
 * mappings (MAP_FIXED). Return: the system call's result. */
long shim_vm_mmap(void *addr, size_t len, int prot, int flags, int fd, long off);

/* [@s, @e) was mapped, unmapped or moved away by the program: the shim's
 * records of registered ranges there are obsolete (shim.c). */
void shim_forget_range(uint64_t s, uint64_t e);

/* MADV_FREE as the program asks it, made MADV_DONTNEED on registered
 * memory (shim.c). Return: 0, -1 and errno. */
int shim_free_pages(void *addr, size_t len);

#endif
