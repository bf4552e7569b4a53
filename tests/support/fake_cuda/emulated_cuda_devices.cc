/*
 * The device list of the engine library (kernels/cuda/devices.cu, engine.h's sortd_devices_list)
 * compiled as C++ under the stand-in CUDA runtime (tests/support/fake_cuda), as in a CUDA build.
 */
#include "simt.h" /* first: cuda_runtime.h here builds on it */

#include "cuda_runtime.h" /* tests/support/fake_cuda, not CUDA's */

#include "cuda/devices.cu" /* -I kernels/ */
