/* A binning pass of the CPU engine (binning.c). */
#ifndef SORTD_CPU_BINNING_H
#define SORTD_CPU_BINNING_H

#include "plan.h"

/* Runs pass p on nth threads: every key of p->src_k (and value) to its place
   by the pass's digit in p->dst_k (and p->dst_v). Sets p->epoch. Whatever the
   keys, it writes only inside [0, n) of the outputs. Returns false when a checked
   pass (plan.h) found keys other than goff counted: then some places of the
   outputs were written twice and others not at all. */
bool sortd__bin_pass(sortd__pass *p, unsigned nth);

#endif
