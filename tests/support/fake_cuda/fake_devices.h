/*
 * The devices the fake runtime (cuda_runtime.h) shows a process, and what each one holds: its
 * identity, its memory, its sticky error, whether it computes wrongly or faults. Private to
 * tests/support/fake_cuda: fake_cuda.cc's calls ask it which device they run on.
 *
 * Two ordinals, as in CUDA: a physical one (0 .. controls.devices - 1, what the environment
 * variables name) and a visible one, what CUDA_VISIBLE_DEVICES leaves and renumbers (what the
 * runtime's callers name). Every function takes its own lock, which nests inside fake_cuda.cc's
 * g_lock, never the other way round.
 */
#ifndef SORTD_FAKE_DEVICES_H
#define SORTD_FAKE_DEVICES_H

#include "cuda_runtime.h"

namespace fake_cuda
{
namespace devices
{

/* Physical devices at most; controls.devices above it counts as this many. */
constexpr int MAX = 64;

/* How many devices the process sees; the physical ordinal of a visible one (-1 if none). */
int visible_count();
int physical(int visible);
/* The visible ordinal of a physical device; -1 when CUDA_VISIBLE_DEVICES hides it. */
int visible_of(int physical);

/* The calling host thread's current device (visible ordinal): cudaSetDevice, cudaGetDevice. */
int current();
void set_current(int visible);

/* The physical device a call of this thread works on, or why it cannot: cudaErrorNoDevice,
   or the sticky error that lost its context. */
cudaError_t context(int *physical);
/* The device's sticky error (cudaSuccess while it works); lose() sets it. */
cudaError_t sticky(int physical);
void lose(int physical, cudaError_t rc);

/* Device memory: takes bytes of the device's total, false when they are not free. */
bool reserve(int physical, size_t bytes);
void release(int physical, size_t bytes);
void memory(int physical, size_t *free_bytes, size_t *total_bytes);

/* $FAKE_CUDA_BAD_DEVICES names it: its device-to-host copies come back wrong. */
bool bad(int physical);
/* Whether a launch on it faults now ($FAKE_CUDA_FAULT_FILE, control().fail_launch_at). */
bool launch_faults(int physical);
/* The next cudaMalloc fails (control().fail_malloc_at). */
bool malloc_fails();

/* Adds one to a counter of controls, under the lock: engines on several threads count too. */
void count(uint64_t controls::*counter);
/* Takes one off (controls::live_graph_execs, when an exec is destroyed). */
void uncount(uint64_t controls::*counter);

/* "0000:01:00.0": the PCI address of a physical device. */
int pci_bus(int physical);

} /* namespace devices */
} /* namespace fake_cuda */

#endif
