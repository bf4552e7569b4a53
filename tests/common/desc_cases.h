/*
 * Named sort descriptors and what sortd_sort_desc_check() must say of them: the unit test's
 * table, and seeds for the request fuzzer's corpus.
 */
#ifndef SORTD_TESTS_DESC_CASES_H
#define SORTD_TESTS_DESC_CASES_H

#include <stdint.h>

#include "sortd_types.h"

typedef struct desc_case {
        const char *name;
        sortd_sort_desc desc;
        uint64_t n;
        sortd_status want;
        const char *why; /* a part of the message, NULL for SORTD_OK */
} desc_case;

#define U32 SORTD_KEY_U32
#define NONE SORTD_PAYLOAD_NONE
#define ASC SORTD_ASCENDING

static const desc_case desc_cases[] = {
        {"u32 full width", {U32, NONE, ASC, 0, 0}, 1000, SORTD_OK, NULL},
        {"u32 explicit end", {U32, NONE, ASC, 0, 32}, 1000, SORTD_OK, NULL},
        {"u32 window", {U32, SORTD_PAYLOAD_VALUES32, SORTD_DESCENDING, 3, 17}, 5, SORTD_OK, NULL},
        {"u8 top bit", {SORTD_KEY_U8, NONE, ASC, 7, 8}, 5, SORTD_OK, NULL},
        {"f64 full width", {SORTD_KEY_F64, SORTD_PAYLOAD_ARGSORT64, ASC, 0, 64}, 9, SORTD_OK, NULL},
        {"f16 full width", {SORTD_KEY_F16, NONE, ASC, 0, 16}, 3, SORTD_OK, NULL},
        {"bf16 exponent bits", {SORTD_KEY_BF16, NONE, SORTD_DESCENDING, 7, 15}, 3, SORTD_OK, NULL},
        {"u128 full width",
         {SORTD_KEY_U128, SORTD_PAYLOAD_VALUES64, ASC, 0, 128},
         3,
         SORTD_OK,
         NULL},
        {"i128 across bit 64", {SORTD_KEY_I128, NONE, ASC, 60, 68}, 3, SORTD_OK, NULL},
        {"i128 sign bit", {SORTD_KEY_I128, NONE, ASC, 127, 0}, 3, SORTD_OK, NULL},
        {"n = 0", {SORTD_KEY_I16, SORTD_PAYLOAD_VALUES64, ASC, 0, 0}, 0, SORTD_OK, NULL},
        {"argsort32 at 2^32 keys",
         {U32, SORTD_PAYLOAD_ARGSORT32, ASC, 0, 0},
         (uint64_t)1 << 32,
         SORTD_OK,
         NULL},
        {"argsort32 past 2^32 keys",
         {U32, SORTD_PAYLOAD_ARGSORT32, ASC, 0, 0},
         ((uint64_t)1 << 32) + 1,
         SORTD_E_INVAL,
         "too large for u32 argsort indices"},
        {"argsort64 past 2^32 keys",
         {U32, SORTD_PAYLOAD_ARGSORT64, ASC, 0, 0},
         (uint64_t)1 << 33,
         SORTD_OK,
         NULL},
        {"end past the width",
         {SORTD_KEY_U8, NONE, ASC, 0, 9},
         5,
         SORTD_E_INVAL,
         "bad bit range [0, 9) for a 8-bit key"},
        {"u128 end past the width",
         {SORTD_KEY_U128, NONE, ASC, 0, 129},
         5,
         SORTD_E_INVAL,
         "bad bit range [0, 129) for a 128-bit key"},
        {"i128 begin at the width",
         {SORTD_KEY_I128, NONE, ASC, 128, 0},
         5,
         SORTD_E_INVAL,
         "bad bit range [128, 0) for a 128-bit key"},
        {"f16 end past the width",
         {SORTD_KEY_F16, NONE, ASC, 0, 17},
         5,
         SORTD_E_INVAL,
         "bad bit range [0, 17) for a 16-bit key"},
        {"bf16 end past the width",
         {SORTD_KEY_BF16, NONE, ASC, 8, 17},
         5,
         SORTD_E_INVAL,
         "bad bit range [8, 17) for a 16-bit key"},
        {"empty range", {U32, NONE, ASC, 5, 5}, 5, SORTD_E_INVAL, "bad bit range [5, 5)"},
        {"reversed range", {U32, NONE, ASC, 9, 4}, 5, SORTD_E_INVAL, "bad bit range"},
        {"begin at the width",
         {SORTD_KEY_U16, NONE, ASC, 16, 0},
         5,
         SORTD_E_INVAL,
         "bad bit range [16, 0) for a 16-bit key"},
        {"key type count",
         {SORTD_KEY_TYPE_COUNT, NONE, ASC, 0, 0},
         5,
         SORTD_E_INVAL,
         "unknown key type 14"},
        {"negative key type",
         {(sortd_key_type)-1, NONE, ASC, 0, 0},
         5,
         SORTD_E_INVAL,
         "unknown key type -1"},
        {"payload count",
         {U32, SORTD_PAYLOAD_COUNT, ASC, 0, 0},
         5,
         SORTD_E_INVAL,
         "unknown payload 5"},
        {"order count", {U32, NONE, SORTD_ORDER_COUNT, 0, 0}, 5, SORTD_E_INVAL, "unknown order 2"},
        {"huge order",
         {U32, NONE, (sortd_order)INT32_MAX, 0, 0},
         5,
         SORTD_E_INVAL,
         "unknown order 2147483647"},
};

#undef U32
#undef NONE
#undef ASC

#endif
