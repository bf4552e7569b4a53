/*
 * sortd_counters.h against sortd.proto, which cannot include it: every counter is a StatusReply
 * field of its wire type, numbered from 6 in the list's order (the order of the public
 * sortd_server_status too), and every integer field of StatusReply is a counter or one of the
 * two figures that are not counted (capacity, uptime_ms). A counter added to one list only
 * fails here, and so does one without its kind and help for monitoring.
 */
#include <check.h>
#include <stdbool.h>
#include <string.h>

#include "sortd_counters.h"
#include "suite.h"
#include "sortd.pb-c.h"

static const struct counter {
        const char *name;
        unsigned field;
        ProtobufCType type;
} counters[] = {
#define ROW(name, field, wire_type, label) {#name, field, PROTOBUF_C_TYPE_##wire_type},
        SORTD_STATUS_COUNTERS(ROW)
#undef ROW
};

#define N_COUNTERS (sizeof(counters) / sizeof(counters[0]))

/* What each is to a monitoring system (SORTD_STATUS_COUNTER_KINDS). */
static const struct kind {
        const char *name;
        bool counter;
        const char *help;
} kinds[] = {
#define COUNTER true
#define GAUGE false
#define KIND(name, kind, help) {#name, kind, help},
        SORTD_STATUS_COUNTER_KINDS(KIND)
#undef KIND
#undef GAUGE
#undef COUNTER
};

#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

static const ProtobufCMessageDescriptor *status_reply = &sortd__wire__status_reply__descriptor;

static bool is_counter(const char *name)
{
        for (size_t i = 0; i < N_COUNTERS; i++)
                if (strcmp(counters[i].name, name) == 0)
                        return true;
        return false;
}

START_TEST(counters_are_fields)
{
        const struct counter *c = &counters[_i];
        const ProtobufCFieldDescriptor *f =
                protobuf_c_message_descriptor_get_field_by_name(status_reply, c->name);

        ck_assert_msg(f, "counter %s is not a StatusReply field", c->name);
        ck_assert_msg(f->type == c->type, "%s: wire type %d, sortd_counters.h says %d", c->name,
                      (int)f->type, (int)c->type);
        ck_assert_msg(f->id == c->field, "%s is field %u, sortd_counters.h puts it at %u", c->name,
                      f->id, c->field);
}
END_TEST

START_TEST(fields_are_counters)
{
        unsigned integers = 0;

        for (unsigned i = 0; i < status_reply->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &status_reply->fields[i];

                if (f->type != PROTOBUF_C_TYPE_UINT32 && f->type != PROTOBUF_C_TYPE_UINT64)
                        continue;
                integers++;
                if (strcmp(f->name, "capacity") == 0 || strcmp(f->name, "uptime_ms") == 0)
                        continue;
                ck_assert_msg(is_counter(f->name), "StatusReply.%s is not in sortd_counters.h",
                              f->name);
        }
        ck_assert_uint_eq(integers, N_COUNTERS + 2);
}
END_TEST

/* Every counter has its kind and help, in the same order: a counter added without them is
   missing from sortctl status --format=prometheus. */
START_TEST(counters_have_kinds)
{
        ck_assert_uint_eq(N_KINDS, N_COUNTERS);
        for (size_t i = 0; i < N_COUNTERS; i++) {
                ck_assert_str_eq(kinds[i].name, counters[i].name);
                /* HELP is one line of text: no newline, no backslash to escape. */
                ck_assert_msg(kinds[i].help[0] && !strpbrk(kinds[i].help, "\\\n"), "%s: bad help",
                              kinds[i].name);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("status-counters");
        TCase *tc = tcase_create("agree");

        tcase_add_loop_test(tc, counters_are_fields, 0, (int)N_COUNTERS);
        tcase_add_test(tc, fields_are_counters);
        tcase_add_test(tc, counters_have_kinds);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
