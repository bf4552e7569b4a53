/* Sizes, names and parsing of sortd's key types and payloads. */
#include <string.h>

#include "sortd_types.h"

static const struct {
        const char *name;
        unsigned bytes;
} key_types[SORTD_KEY_TYPE_COUNT] = {
        [SORTD_KEY_U8] = {"u8", 1},      [SORTD_KEY_I8] = {"i8", 1},
        [SORTD_KEY_U16] = {"u16", 2},    [SORTD_KEY_I16] = {"i16", 2},
        [SORTD_KEY_U32] = {"u32", 4},    [SORTD_KEY_I32] = {"i32", 4},
        [SORTD_KEY_F32] = {"f32", 4},    [SORTD_KEY_U64] = {"u64", 8},
        [SORTD_KEY_I64] = {"i64", 8},    [SORTD_KEY_F64] = {"f64", 8},
        [SORTD_KEY_F16] = {"f16", 2},    [SORTD_KEY_BF16] = {"bf16", 2},
        [SORTD_KEY_U128] = {"u128", 16}, [SORTD_KEY_I128] = {"i128", 16},
};

static const struct {
        const char *name;
        unsigned bytes;
} payloads[SORTD_PAYLOAD_COUNT] = {
        [SORTD_PAYLOAD_NONE] = {"none", 0},           [SORTD_PAYLOAD_VALUES32] = {"v32", 4},
        [SORTD_PAYLOAD_VALUES64] = {"v64", 8},        [SORTD_PAYLOAD_ARGSORT32] = {"argsort32", 4},
        [SORTD_PAYLOAD_ARGSORT64] = {"argsort64", 8},
};

size_t sortd_key_size(sortd_key_type t)
{
        return (unsigned)t < SORTD_KEY_TYPE_COUNT ? key_types[t].bytes : 0;
}

size_t sortd_payload_size(sortd_payload p)
{
        return (unsigned)p < SORTD_PAYLOAD_COUNT ? payloads[p].bytes : 0;
}

int sortd_payload_is_argsort(sortd_payload p)
{
        return p == SORTD_PAYLOAD_ARGSORT32 || p == SORTD_PAYLOAD_ARGSORT64;
}

const char *sortd_key_type_name(sortd_key_type t)
{
        return (unsigned)t < SORTD_KEY_TYPE_COUNT ? key_types[t].name : "?";
}

const char *sortd_payload_name(sortd_payload p)
{
        return (unsigned)p < SORTD_PAYLOAD_COUNT ? payloads[p].name : "?";
}

int sortd_key_type_parse(const char *name)
{
        for (int i = 0; i < SORTD_KEY_TYPE_COUNT; i++)
                if (name && strcmp(name, key_types[i].name) == 0)
                        return i;
        return -1;
}

int sortd_payload_parse(const char *name)
{
        for (int i = 0; i < SORTD_PAYLOAD_COUNT; i++)
                if (name && strcmp(name, payloads[i].name) == 0)
                        return i;
        return -1;
}
