/*
 * The CUDA devices this process sees (engine.h: sortd_devices_list): the arguments, and a build
 * without CUDA, which sees none. The runtime is asked in kernels/cuda/devices.cu, so that this
 * file compiles in every build.
 */
#include <stdio.h>

#include "engine_impl.h"

sortd_status sortd_devices_list(sortd_device_info *out, size_t max, size_t *count, char *why,
                                size_t why_len)
{
        if (!count || (max && !out)) {
                if (why_len)
                        snprintf(why, why_len, "count, and out when max > 0, must not be NULL");
                return SORTD_E_INVAL;
        }
#ifdef SORTD_HAVE_CUDA
        return sortd__cuda_devices_list(out, max, count, why, why_len);
#else
        (void)why;
        *count = 0;
        return SORTD_OK;
#endif
}
