/*
 * The CUDA engine's start-up self-check: the daemon runs it before serving
 * and refuses to serve wrong results.
 */
#ifndef SORTD_CUDA_SELFCHECK_H
#define SORTD_CUDA_SELFCHECK_H

#include <stddef.h>

#include "../engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Sorts a fixed, varied sample (every key type; keys only, 8-byte values,
 * u32 argsort; both orders; a bit window; sizes around the tiles, up to the
 * engine's capacity) with `cuda` and with a "cub" engine made on `device`,
 * and compares them bit for bit. Returns SORTD_OK, SORTD_E_SELFCHECK naming
 * the first case that differs, or the error that stopped either engine,
 * with the message in why.
 */
sortd_status sortd_cuda_selfcheck(sortd_engine *cuda, int device, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
