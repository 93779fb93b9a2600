/* abi_probe.c — a shared object whose exported functions name every type of
 * tokenspeed/metric_reporter.h, so that libabigail's abidw describes the whole
 * ABI from its debug information (abi/baseline/README.md). Never installed,
 * never loaded: only its DWARF matters. It names types, never fields, so it
 * compiles against every header of API version 1, the 0.1.0 one included. */
#include <tokenspeed/metric_reporter.h>

/* Every struct, through a pointer: abidw then follows each member, the
 * function-pointer members and the structs they point to included. */
TSM_EXPORT void tsm_abi_probe_buffer(tsm_buffer *value) { (void)value; }
TSM_EXPORT void tsm_abi_probe_metric_info(const tsm_metric_info *value) { (void)value; }
TSM_EXPORT void tsm_abi_probe_metric_event(const tsm_metric_event *value) { (void)value; }
TSM_EXPORT void tsm_abi_probe_sink_vtable(const tsm_sink_vtable *value) { (void)value; }
TSM_EXPORT void tsm_abi_probe_sink(tsm_sink *value) { (void)value; }
TSM_EXPORT void tsm_abi_probe_node_session_vtable(const tsm_node_session_vtable *value) {
  (void)value;
}
TSM_EXPORT void tsm_abi_probe_node_session(tsm_node_session *value) { (void)value; }
TSM_EXPORT void tsm_abi_probe_reporter_descriptor(const tsm_reporter_descriptor *value) {
  (void)value;
}
TSM_EXPORT void tsm_abi_probe_host_api(const tsm_host_api *value) { (void)value; }

/* Every enum, by value: its enumerators and their values. */
TSM_EXPORT tsm_status tsm_abi_probe_status(tsm_status value) { return value; }
TSM_EXPORT tsm_metric_kind tsm_abi_probe_metric_kind(tsm_metric_kind value) { return value; }
TSM_EXPORT tsm_operation tsm_abi_probe_operation(tsm_operation value) { return value; }
TSM_EXPORT tsm_log_level tsm_abi_probe_log_level(tsm_log_level value) { return value; }
TSM_EXPORT tsm_histogram_layout tsm_abi_probe_histogram_layout(tsm_histogram_layout value) {
  return value;
}

/* The entry point's type, as every plugin exports it. */
TSM_EXPORT void tsm_abi_probe_register_fn(tsm_register_fn value) { (void)value; }
