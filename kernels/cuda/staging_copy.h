/*
 * Which host copy the CUDA engines' staging (staging.h) uses in each direction: streamed
 * (non-temporal stores, kernels/cpu/copy.h) or memcpy. Plain C and free of CUDA, so that
 * bench/copybench, which times both, can say what the engines use.
 *
 * Both are streamed: on the 2-core development host the streamed copy moved 1.31-1.47x memcpy's
 * rate up and 1.34-1.45x down at 1 and 2 threads, with the destination (a slot the DMA engine
 * reads, or the caller's array, read long after) not read again soon. The H200's host has run
 * only memcpy, in the engines at 8 threads (docs/performance.md, "The staging copy"): at 16
 * threads the memory bus, not the stores, may bound either copy. scripts/gpu-check's copy step
 * times both per direction there and says which of these to change.
 *
 * -DSORTD_STREAM_UP=0 / -DSORTD_STREAM_DOWN=0 (in c_args, cpp_args and cuda_args alike) builds
 * the engines and copybench with memcpy in that direction, to time the engines' pageable path
 * (gpu-check's memory step) with the other copy.
 */
#ifndef SORTD_CUDA_STAGING_COPY_H
#define SORTD_CUDA_STAGING_COPY_H

#ifndef SORTD_STREAM_UP /* caller's memory -> slot, before the DMA to the device */
#define SORTD_STREAM_UP 1
#endif
#ifndef SORTD_STREAM_DOWN /* slot -> caller's memory, after the DMA from the device */
#define SORTD_STREAM_DOWN 1
#endif

#endif
