/*
 * A client of the installed headers: built with only client/ and common/ on its include path
 * and linked with libsortd alone. Its own file-scope definitions of the engine's names would
 * clash with any declaration of them, so it compiles only while sortd.h declares nothing of the
 * engine; it runs only while libsortd exports the vocabulary it uses.
 */
#include <sortd.h>
#include <stdio.h>
#include <string.h>

static int sortd_engine_create, sortd_engine_sort, sortd_engine_destroy, sortd_engine_selfcheck;

int main(void)
{
        sortd_sort_desc d = {SORTD_KEY_F32, SORTD_PAYLOAD_ARGSORT32, SORTD_DESCENDING, 0, 0};
        char why[64] = "";

        if (sortd_engine_create + sortd_engine_sort + sortd_engine_destroy + sortd_engine_selfcheck)
                return 1;
        if (sortd_sort_desc_check(&d, 10, why, sizeof(why)) != SORTD_OK ||
            sortd_key_type_parse("f32") != SORTD_KEY_F32 ||
            strcmp(sortd_payload_name(d.payload), "argsort32") != 0 ||
            strcmp(sortd_strerror(SORTD_E_BUSY), "busy") != 0) {
                fprintf(stderr, "libsortd's vocabulary misbehaves: %s\n", why);
                return 1;
        }
        /* The region calls are exported and accept what a destructor must (no daemon needed). */
        if (sortd_region_data(NULL) || sortd_region_size(NULL) ||
            sortd_region_destroy(NULL, NULL) != SORTD_OK ||
            sortd_region_create(NULL, 4096, &(sortd_region *){NULL}) != SORTD_E_INVAL ||
            sortd_sort_in_region(NULL, &(sortd_region_sort){0}) != SORTD_E_INVAL ||
            sortd_region_register_cuda(NULL, (uint8_t[SORTD_CUDA_IPC_HANDLE_BYTES]){0}, 0, 1,
                                       (uint8_t[SORTD_DEVICE_UUID_BYTES]){0},
                                       &(sortd_region *){NULL}) != SORTD_E_INVAL) {
                fprintf(stderr, "libsortd's region calls misbehave without a connection\n");
                return 1;
        }
        puts("sortd.h declares no engine symbol; libsortd exports the vocabulary and the region "
             "calls");
        return 0;
}
