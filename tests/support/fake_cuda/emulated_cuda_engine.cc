/*
 * The cuda engine as it is (kernels/cuda/cuda_engine.cu, with cuda_backend.cuh and
 * memory_ops.cuh), compiled as C++ on the SIMT emulator under the stand-in CUDA runtime
 * (tests/support/fake_cuda): its ops are sortd__cuda_engine_ops, as in a CUDA build.
 */
#include "simt.h" /* first: the kernels compile against it */

#include "cuda_runtime.h" /* tests/support/fake_cuda, not CUDA's */

#include "cuda/cuda_engine.cu" /* -I kernels/ */
