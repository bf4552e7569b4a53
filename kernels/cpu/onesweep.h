/* The CPU Onesweep engine's internals, shared with its white-box tests. */
#ifndef SORTD_CPU_ONESWEEP_H
#define SORTD_CPU_ONESWEEP_H

#include "../engine.h"

/* Keys per tile of a binning pass (a power of two). */
#define SORTD__CPU_TILE_KEYS 32768u

#endif
