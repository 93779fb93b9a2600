/* abi_layout_test.c — the size and the offset of every member of every struct
 * of tokenspeed/metric_reporter.h on x86-64 (LP64), and the values of its
 * enumerators and macros, pinned at compile time (C11 _Static_assert). A
 * failure to compile is the test failing: a member moved, was resized or
 * removed. An appended member adds its line here, and the struct's size
 * grows (docs/abi.md). Other architectures compile an empty test. */
#include <stddef.h>

#include <tokenspeed/metric_reporter.h>

#define TSM_ASSERT_OFFSET(type, member, offset) \
  _Static_assert(offsetof(type, member) == (offset), #type "." #member " moved")
#define TSM_ASSERT_SIZE(type, size) _Static_assert(sizeof(type) == (size), #type " resized")

#if defined(__x86_64__) && defined(__LP64__)

_Static_assert(TSM_METRIC_REPORTER_API_VERSION == 1u, "the API major changed");
_Static_assert(TSM_METRIC_REPORTER_API_MINOR >= 4u, "the API minor went back");
_Static_assert(TSM_OK == 0 && TSM_ERROR == 1 && TSM_UNSUPPORTED_API == 2, "tsm_status");
_Static_assert(TSM_KIND_COUNTER == 1 && TSM_KIND_GAUGE == 2 && TSM_KIND_HISTOGRAM == 3,
               "tsm_metric_kind");
_Static_assert(TSM_OP_INC == 1 && TSM_OP_SET == 2 && TSM_OP_OBSERVE == 3, "tsm_operation");
_Static_assert(TSM_LOG_DEBUG == 0 && TSM_LOG_INFO == 1 && TSM_LOG_WARNING == 2 &&
                   TSM_LOG_ERROR == 3,
               "tsm_log_level");
_Static_assert(sizeof(tsm_status) == 4 && sizeof(tsm_metric_kind) == 4 &&
                   sizeof(tsm_operation) == 4 && sizeof(tsm_log_level) == 4,
               "an enum changed its size");

TSM_ASSERT_SIZE(tsm_buffer, 24);
TSM_ASSERT_OFFSET(tsm_buffer, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_buffer, host_data, 8);
TSM_ASSERT_OFFSET(tsm_buffer, assign, 16);

TSM_ASSERT_SIZE(tsm_metric_info, 88);
TSM_ASSERT_OFFSET(tsm_metric_info, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_metric_info, kind, 4);
TSM_ASSERT_OFFSET(tsm_metric_info, name, 8);
TSM_ASSERT_OFFSET(tsm_metric_info, help, 16);
TSM_ASSERT_OFFSET(tsm_metric_info, unit, 24);
TSM_ASSERT_OFFSET(tsm_metric_info, label_count, 32);
TSM_ASSERT_OFFSET(tsm_metric_info, label_names, 40);
TSM_ASSERT_OFFSET(tsm_metric_info, bucket_count, 48);
TSM_ASSERT_OFFSET(tsm_metric_info, bucket_bounds, 56);
TSM_ASSERT_OFFSET(tsm_metric_info, histogram_layout, 64); /* appended (minor 4) */
TSM_ASSERT_OFFSET(tsm_metric_info, max_buckets, 68);
TSM_ASSERT_OFFSET(tsm_metric_info, zero_threshold, 72);
TSM_ASSERT_OFFSET(tsm_metric_info, max_scale, 80);
_Static_assert(TSM_METRIC_INFO_SIZE_V1 == 64, "size of a metric info up to minor 3");
_Static_assert(TSM_METRIC_INFO_SIZE_V2 == 84, "size of a metric info up to max_scale");
_Static_assert(TSM_HISTOGRAM_CLASSIC == 0 && TSM_HISTOGRAM_EXPONENTIAL == 1, "layouts renumbered");

TSM_ASSERT_SIZE(tsm_metric_event, 72);
TSM_ASSERT_OFFSET(tsm_metric_event, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_metric_event, operation, 4);
TSM_ASSERT_OFFSET(tsm_metric_event, timestamp_ns, 8);
TSM_ASSERT_OFFSET(tsm_metric_event, metric, 16);
TSM_ASSERT_OFFSET(tsm_metric_event, value, 24);
TSM_ASSERT_OFFSET(tsm_metric_event, weight, 32);
TSM_ASSERT_OFFSET(tsm_metric_event, label_count, 40);
TSM_ASSERT_OFFSET(tsm_metric_event, label_names, 48);
TSM_ASSERT_OFFSET(tsm_metric_event, label_values, 56);
TSM_ASSERT_OFFSET(tsm_metric_event, info, 64);

TSM_ASSERT_SIZE(tsm_sink_vtable, 24);
TSM_ASSERT_OFFSET(tsm_sink_vtable, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_sink_vtable, emit, 8);
TSM_ASSERT_OFFSET(tsm_sink_vtable, close, 16);

TSM_ASSERT_SIZE(tsm_process_identity, 40); /* new type (minor 3) */
TSM_ASSERT_OFFSET(tsm_process_identity, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_process_identity, rank, 4);
TSM_ASSERT_OFFSET(tsm_process_identity, name, 8);
TSM_ASSERT_OFFSET(tsm_process_identity, role, 16);
TSM_ASSERT_OFFSET(tsm_process_identity, node, 24);
TSM_ASSERT_OFFSET(tsm_process_identity, pid, 32);

TSM_ASSERT_SIZE(tsm_delivery_figures, 48); /* new type (minor 3) */
TSM_ASSERT_OFFSET(tsm_delivery_figures, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_delivery_figures, reserved, 4);
TSM_ASSERT_OFFSET(tsm_delivery_figures, sent, 8);
TSM_ASSERT_OFFSET(tsm_delivery_figures, refused, 16);
TSM_ASSERT_OFFSET(tsm_delivery_figures, lost, 24);
TSM_ASSERT_OFFSET(tsm_delivery_figures, retries, 32);
TSM_ASSERT_OFFSET(tsm_delivery_figures, pending, 40);

TSM_ASSERT_SIZE(tsm_sink, 48);
TSM_ASSERT_OFFSET(tsm_sink, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_sink, vtable, 8);
TSM_ASSERT_OFFSET(tsm_sink, self, 16);
TSM_ASSERT_OFFSET(tsm_sink, process, 24);        /* appended (minor 3) */
TSM_ASSERT_OFFSET(tsm_sink, host_sink_data, 32); /* appended (minor 3) */
TSM_ASSERT_OFFSET(tsm_sink, report_figures, 40); /* appended (minor 3) */
_Static_assert(TSM_SINK_SIZE_V1 == 24, "size of a sink up to minor 2");
_Static_assert(TSM_SINK_SIZE_V2 == 48, "size of a sink up to report_figures");

TSM_ASSERT_SIZE(tsm_node_session_vtable, 16);
TSM_ASSERT_OFFSET(tsm_node_session_vtable, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_node_session_vtable, close, 8);

TSM_ASSERT_SIZE(tsm_node_session, 24);
TSM_ASSERT_OFFSET(tsm_node_session, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_node_session, vtable, 8);
TSM_ASSERT_OFFSET(tsm_node_session, self, 16);

TSM_ASSERT_SIZE(tsm_reporter_descriptor, 72);
TSM_ASSERT_OFFSET(tsm_reporter_descriptor, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_reporter_descriptor, name, 8);
TSM_ASSERT_OFFSET(tsm_reporter_descriptor, validate, 16);
TSM_ASSERT_OFFSET(tsm_reporter_descriptor, create_sink, 24);
TSM_ASSERT_OFFSET(tsm_reporter_descriptor, start_node, 32);
TSM_ASSERT_OFFSET(tsm_reporter_descriptor, override, 40);
TSM_ASSERT_OFFSET(tsm_reporter_descriptor, user_data, 48);
TSM_ASSERT_OFFSET(tsm_reporter_descriptor, version, 56);  /* appended (minor 1) */
TSM_ASSERT_OFFSET(tsm_reporter_descriptor, settings, 64); /* appended (minor 2) */
_Static_assert(TSM_REPORTER_DESCRIPTOR_SIZE_V1 == 56, "size of a 0.1.0 descriptor");
_Static_assert(TSM_REPORTER_DESCRIPTOR_SIZE_V2 == 64, "size of a descriptor up to version");
_Static_assert(TSM_REPORTER_DESCRIPTOR_SIZE_V3 == 72, "size of a descriptor up to settings");

TSM_ASSERT_SIZE(tsm_host_api, 40);
TSM_ASSERT_OFFSET(tsm_host_api, struct_size, 0);
TSM_ASSERT_OFFSET(tsm_host_api, api_version, 4);
TSM_ASSERT_OFFSET(tsm_host_api, host_data, 8);
TSM_ASSERT_OFFSET(tsm_host_api, host_version, 16);
TSM_ASSERT_OFFSET(tsm_host_api, register_metric_reporter, 24);
TSM_ASSERT_OFFSET(tsm_host_api, log, 32);

#endif

int main(void) { return 0; }
