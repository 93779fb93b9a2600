/*
 * tokenspeed/metric_reporter.h — the stable C ABI between the tokenspeed-metrics
 * host and a metric output plugin. This header is the only thing a plugin needs.
 *
 * A plugin is a shared object that exports one function, tsm_register
 * (TSM_REGISTER_SYMBOL). The host loads the file, calls tsm_register once per
 * process with a host-API table, and the plugin declares its outputs
 * ("reporters") through host->register_metric_reporter. Registration only
 * declares factories: it must not start threads or acquire external resources.
 *
 * Per reporter the host then calls, in this order and on these processes:
 *   validate(config)        launcher, at startup: check and normalize settings
 *   start_node(config)      launcher, optional: node-wide shared resources
 *   create_sink(producer)   every producer, lazily on the first event
 *   sink emit / close       the sink's delivery thread
 *   session close           launcher, after its own sinks are closed
 *
 * Versioning rule: TSM_METRIC_REPORTER_API_VERSION (the major) changes only
 * when an existing field or function changes meaning. New fields are appended
 * to the end of a struct (TSM_METRIC_REPORTER_API_MINOR counts them); every
 * struct starts with uint32_t struct_size so the reader checks the size before
 * touching an appended field. A plugin built against any header of a major
 * loads in every later host of that major (docs/abi.md).
 *
 * Ownership rule: nothing is freed by a module that did not allocate it.
 * Strings a plugin hands back (normalized configuration, producer
 * configuration, error messages) are written into a host-provided tsm_buffer,
 * which copies them before the call returns.
 *
 * A complete minimal plugin, in C:
 *
 *   #include <tokenspeed/metric_reporter.h>
 *   #include <stdio.h>
 *
 *   static int validate(void *ud, const char *cfg, size_t n,
 *                       tsm_buffer *normalized, tsm_buffer *error) {
 *       (void)ud; (void)error;
 *       normalized->assign(normalized, cfg, n);   // accept as is
 *       return TSM_OK;
 *   }
 *   static int emit(void *self, const tsm_metric_event *e, tsm_buffer *error) {
 *       (void)self; (void)error;
 *       printf("%s %g x%llu\n", e->metric, e->value,
 *              (unsigned long long)e->weight);
 *       return TSM_OK;
 *   }
 *   static int close_sink(void *self, int64_t timeout_ns, tsm_buffer *error) {
 *       (void)self; (void)timeout_ns; (void)error;
 *       return TSM_OK;
 *   }
 *   static const tsm_sink_vtable vtable = {
 *       sizeof(tsm_sink_vtable), emit, close_sink };
 *   static int create_sink(void *ud, const char *cfg, size_t n,
 *                          tsm_sink *sink, tsm_buffer *error) {
 *       (void)ud; (void)cfg; (void)n; (void)error;
 *       sink->vtable = &vtable;
 *       sink->self = NULL;
 *       return TSM_OK;
 *   }
 *   TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
 *       if (host->api_version != TSM_METRIC_REPORTER_API_VERSION)
 *           return TSM_UNSUPPORTED_API;
 *       tsm_reporter_descriptor d = {0};
 *       d.struct_size = sizeof d;
 *       d.name = "print";
 *       d.validate = validate;
 *       d.create_sink = create_sink;
 *       d.start_node = NULL;          // no node-wide resources
 *       return host->register_metric_reporter(host->host_data, &d, error);
 *   }
 */
#ifndef TOKENSPEED_METRIC_REPORTER_H
#define TOKENSPEED_METRIC_REPORTER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The metric reporter API version this header describes. The host passes the
 * version it implements in tsm_host_api.api_version; a plugin that does not
 * support it returns TSM_UNSUPPORTED_API from tsm_register. */
#define TSM_METRIC_REPORTER_API_VERSION 1u

/* The minor version of this header within its API version: how many times a
 * field was appended (0: the header of 0.1.0; 1: the descriptor's version;
 * 2: its settings; 3: the sink's process and delivery figures; 4: the
 * metric info's histogram layout). It never
 * crosses the boundary: the other side's struct_size says which fields it
 * filled. For a plugin that builds against several headers:
 * #if TSM_METRIC_REPORTER_API_MINOR >= 3 ... sink->report_figures ... */
#define TSM_METRIC_REPORTER_API_MINOR 4u

/* The name of the one function every plugin exports (type tsm_register_fn). */
#define TSM_REGISTER_SYMBOL "tsm_register"

#if defined(__GNUC__) || defined(__clang__)
#define TSM_EXPORT __attribute__((visibility("default")))
#else
#define TSM_EXPORT
#endif

/* Status codes returned by every function of this ABI. */
typedef enum tsm_status {
  TSM_OK = 0,             /* success */
  TSM_ERROR = 1,          /* failure; a message is in the error buffer */
  TSM_UNSUPPORTED_API = 2 /* tsm_register only: host api_version unsupported */
} tsm_status;

/* A growable byte buffer owned by the host, handed to the plugin to receive a
 * string (JSON text or an error message). The plugin calls assign; the host
 * copies the bytes before assign returns, so the plugin may pass a temporary.
 * Valid only during the call it is passed to; touched only from that thread. */
typedef struct tsm_buffer {
  uint32_t struct_size; /* sizeof(tsm_buffer) as the host compiled it */
  void *host_data;      /* host-private; the plugin must not touch it */
  /* Replace the contents with a copy of size bytes at data (UTF-8, need not
   * be NUL-terminated). Calling it again replaces the earlier contents. */
  void (*assign)(struct tsm_buffer *buffer, const char *data, size_t size);
} tsm_buffer;

/* ---------------------------------------------------------------- metrics */

/* The kind of a metric family. */
typedef enum tsm_metric_kind {
  TSM_KIND_COUNTER = 1,  /* monotonically increasing; events are deltas */
  TSM_KIND_GAUGE = 2,    /* current value; events are assignments */
  TSM_KIND_HISTOGRAM = 3 /* distribution; events are observations */
} tsm_metric_kind;

/* The operation an event carries. */
typedef enum tsm_operation {
  TSM_OP_INC = 1,    /* counter delta (value >= 0), weight 1 */
  TSM_OP_SET = 2,    /* gauge assignment, weight 1 */
  TSM_OP_OBSERVE = 3 /* histogram observation of value, weight times */
} tsm_operation;

/* The label a family carries when an operator caps its series (a view's
 * cardinality_limit): "" on each of its series but one, "true" on the
 * overflow series, which records the label sets past the cap (its other
 * labels are ""). OpenTelemetry's otel.metric.overflow attribute. */
#define TSM_OVERFLOW_LABEL "otel_metric_overflow"

/* Host-owned description of a metric family, so that a plugin can build
 * typed or cumulative series without private knowledge of the catalog.
 * Lives (with every string and array it points to) until the sink that
 * received it is closed. Read-only for the plugin; safe from any thread. */
typedef struct tsm_metric_info {
  uint32_t struct_size;           /* sizeof(tsm_metric_info), host build */
  uint32_t kind;                  /* a tsm_metric_kind */
  const char *name;               /* as in events: counters end in _total */
  const char *help;               /* one-line description, UTF-8 */
  const char *unit;               /* "seconds", "tokens", "" if none */
  uint32_t label_count;           /* number of label names */
  const char *const *label_names; /* label_count names, in event order */
  uint32_t bucket_count;          /* histograms: number of upper bounds */
  const double *bucket_bounds;    /* ascending upper bounds, +Inf implied
                                     and not listed; NULL if none */
  /* ---- appended fields (minor 4): a plugin reads them only when
   * struct_size >= TSM_METRIC_INFO_SIZE_V2. An exponential family still has
   * bucket_bounds (its declared classic bounds, else the powers of two from
   * 2^-10 to 2^10), so a plugin that aggregates classic buckets keeps
   * working with it. */
  uint32_t histogram_layout; /* a tsm_histogram_layout; histograms only */
  uint32_t max_buckets;      /* exponential: buckets per sign, at most */
  double zero_threshold;     /* exponential: |value| <= this is zero */
  int32_t max_scale;         /* exponential: the scale it starts at
                                (-10 to 20), lowered to keep
                                max_buckets */
} tsm_metric_info;

/* How a histogram family's buckets are laid out (tsm_metric_info, minor 4). */
typedef enum tsm_histogram_layout {
  TSM_HISTOGRAM_CLASSIC = 0,    /* the upper bounds of bucket_bounds */
  TSM_HISTOGRAM_EXPONENTIAL = 1 /* base-2 exponential buckets: bucket i at
                                   scale s holds (2^(i/2^s), 2^((i+1)/2^s)]
                                   (OpenTelemetry's ExponentialHistogram,
                                   Prometheus' native histogram) */
} tsm_histogram_layout;

/* The sizes a metric info had as fields were appended: V1 up to
 * bucket_bounds (0.1.0 to minor 3), V2 up to max_scale (minor 4). */
#define TSM_METRIC_INFO_SIZE_V1 (offsetof(tsm_metric_info, bucket_bounds) + sizeof(const double *))
#define TSM_METRIC_INFO_SIZE_V2 (offsetof(tsm_metric_info, max_scale) + sizeof(int32_t))

/* One observation, before any aggregation. Valid only during emit: a plugin
 * that keeps anything copies it before returning. Read-only. */
typedef struct tsm_metric_event {
  uint32_t struct_size;            /* sizeof(tsm_metric_event), host build */
  uint32_t operation;              /* a tsm_operation */
  int64_t timestamp_ns;            /* wall clock of the observation, Unix ns */
  const char *metric;              /* metric name; counters end in _total */
  double value;                    /* counter delta, gauge value or
                                      observation, in the metric's unit */
  uint64_t weight;                 /* observation multiplicity; 1 for inc
                                      and set. observe(0.01, weight 3) is
                                      count += 3, sum += 0.03 */
  uint32_t label_count;            /* number of labels */
  const char *const *label_names;  /* label_count names (same order as
                                      info->label_names) */
  const char *const *label_values; /* label_count values, as supplied by
                                      the collection point */
  const tsm_metric_info *info;     /* the metric's metadata, see above */
} tsm_metric_event;

/* ------------------------------------------------------------------ sinks */

/* The operations of a sink. Static storage in the plugin is typical. */
typedef struct tsm_sink_vtable {
  uint32_t struct_size; /* sizeof(tsm_sink_vtable) as the plugin compiled it */
  /* Deliver one event. Called from the sink's delivery thread, one
   * call at a time. Must return promptly: queue the event in the plugin and
   * deliver in the background. A nonzero return disables the sink for the
   * rest of the process (its events are then counted as dropped); the sink
   * is still closed at shutdown and never rebuilt. */
  int (*emit)(void *self, const tsm_metric_event *event, tsm_buffer *error);
  /* Flush what can be flushed within timeout_ns nanoseconds, then release
   * every resource of the sink. Called once, after the last emit returned,
   * from a host thread. The host does not wait beyond the timeout plus a
   * small grace. A nonzero return is logged; it skips nothing. */
  int (*close)(void *self, int64_t timeout_ns, tsm_buffer *error);
} tsm_sink_vtable;

/* The process a sink serves, as the host names it in its own reports (the
 * summary table, /metrics, log lines). A push output uses it to keep the
 * streams of two processes apart at the back end. Host-owned, read-only;
 * lives (with its strings) until the sink's close returns. Appended
 * (minor 3). */
typedef struct tsm_process_identity {
  uint32_t struct_size; /* sizeof(tsm_process_identity), host build */
  int32_t rank;         /* rank within the role (data-parallel rank); -1: none */
  const char *name;     /* unique within the node: "scheduler-0", "frontend" */
  const char *role;     /* "launcher", "scheduler", "frontend", "worker", ... */
  const char *node;     /* the node (--metrics-node-name, else the host name) */
  int64_t pid;          /* the process whose events the sink receives (for a
                           sink isolated in a helper process: the producer) */
} tsm_process_identity;

/* What became of the events a sink accepted (emit returned TSM_OK), as only
 * the plugin can see it: whether they reached its back end. Counters count
 * events since the sink was created and never go down; an output that
 * aggregates counts an event as sent once a request holding its effect was
 * accepted. pending is a current value, not a counter. Filled by the plugin
 * for report_figures below. Appended (minor 3). */
typedef struct tsm_delivery_figures {
  uint32_t struct_size; /* sizeof(tsm_delivery_figures), plugin build */
  uint32_t reserved;    /* 0 */
  uint64_t sent;        /* events whose data the back end accepted */
  uint64_t refused;     /* events the plugin refused itself: over one of its
                           limits (series, size) or not representable */
  uint64_t lost;        /* events whose data was given up: rejected by the
                           back end, a full queue, close's deadline */
  uint64_t retries;     /* failed send attempts tried again (attempts) */
  uint64_t pending;     /* events held now, not yet sent or given up */
} tsm_delivery_figures;

/* A process-local sink created by create_sink. No inheritance: a vtable and
 * the plugin's own object. */
typedef struct tsm_sink {
  uint32_t struct_size;          /* set by the host before create_sink */
  const tsm_sink_vtable *vtable; /* set by the plugin; lives until close */
  void *self;                    /* set by the plugin; passed back */
  /* ---- appended fields (minor 3): set by the host before create_sink; a
   * plugin reads them only when struct_size covers them */
  /* The process this sink serves; valid until close returns. */
  const tsm_process_identity *process;
  /* Pass back as the first argument of report_figures. */
  void *host_sink_data;
  /* Optional for the plugin: report the sink's delivery figures (totals, not
   * increments). Callable from any thread, any number of times, until close
   * returns; lock-free and cheap (the host keeps the latest of each
   * counter). Call it after each send and once inside close, after the last
   * send. The host shows the figures per output and process in its summary,
   * its shutdown report and on /metrics; a sink that never calls it shows
   * none. */
  void (*report_figures)(void *host_sink_data, const tsm_delivery_figures *figures);
} tsm_sink;

/* The sizes a sink had as fields were appended: V1 up to self (0.1.0 to
 * minor 2), V2 up to report_figures (sizeof(tsm_sink) of this header). */
#define TSM_SINK_SIZE_V1 (offsetof(tsm_sink, self) + sizeof(void *))
#define TSM_SINK_SIZE_V2 \
  (offsetof(tsm_sink, report_figures) + sizeof(void (*)(void *, const tsm_delivery_figures *)))

/* --------------------------------------------------------- node sessions */

typedef struct tsm_node_session_vtable {
  uint32_t struct_size; /* sizeof(tsm_node_session_vtable), plugin build */
  /* Release the node-wide resources within timeout_ns nanoseconds. Called
   * once, in the launcher, after the launcher's own sinks are closed. */
  int (*close)(void *self, int64_t timeout_ns, tsm_buffer *error);
} tsm_node_session_vtable;

/* Launcher-owned resources shared by the node, created by start_node. */
typedef struct tsm_node_session {
  uint32_t struct_size;                  /* set by the host */
  const tsm_node_session_vtable *vtable; /* set by the plugin */
  void *self;                            /* set by the plugin */
} tsm_node_session;

/* -------------------------------------------------------------- reporters */

/* The factories of one output name. Copied by the host during
 * register_metric_reporter; the name string is copied too. Functions are
 * called from host threads, never concurrently for the same reporter. */
typedef struct tsm_reporter_descriptor {
  uint32_t struct_size; /* sizeof(tsm_reporter_descriptor), plugin build */
  /* Output name selected with --metrics-reporters: 1-64 characters of
   * [a-z0-9_.-]. "prometheus" is reserved for the built-in output. */
  const char *name;
  /* Validate and normalize settings without creating resources; reject
   * unsupported keys. config_json is a JSON object (UTF-8, config_size
   * bytes, NUL-terminated). On success write a JSON object into normalized
   * (an empty buffer means the input as given) and return TSM_OK; on
   * failure write a one-line message into error and return TSM_ERROR.
   * Required. */
  int (*validate)(void *user_data, const char *config_json, size_t config_size,
                  tsm_buffer *normalized, tsm_buffer *error);
  /* Create one process-local sink from the producer configuration (a JSON
   * object). Fill sink->vtable and sink->self. Clean up whatever was
   * allocated before returning an error. Required. */
  int (*create_sink)(void *user_data, const char *producer_config_json, size_t producer_config_size,
                     tsm_sink *sink, tsm_buffer *error);
  /* Optional (NULL when no shared resource is needed: the normalized
   * configuration is then the producer configuration). Create launcher-owned
   * node resources, fill *session, and write the producer configuration
   * (a JSON object of plain data: never a socket, thread or client) into
   * producer_config. */
  int (*start_node)(void *user_data, const char *config_json, size_t config_size,
                    tsm_node_session *session, tsm_buffer *producer_config, tsm_buffer *error);
  uint32_t override; /* nonzero: replace an existing name (later wins) */
  void *user_data;   /* passed back to the three functions above */
  /* ---- appended fields: read by the host only when struct_size covers them */
  /* Optional: the plugin's own version ("2.3.1", UTF-8, at most 64 bytes
   * are kept), shown by `tokenspeed-metrics plugins`. NULL or "" when not
   * given. Copied by the host during register_metric_reporter. */
  const char *version;
  /* Optional, appended (read only when struct_size covers it; NULL: not
   * described). The reporter's settings as a JSON array (UTF-8,
   * NUL-terminated), one object per key: "key", "type", "default" (absent
   * when required), "min" and "max" (numbers), "choices" (strings),
   * "description"; "secret": true for a key whose value the host must
   * never print (shown as "<secret>"; every value of an "object of
   * strings" row, every field of an "object" row); "fields" (rows of the
   * same form) for a key of "type": "object". Shown by
   * `tokenspeed-metrics plugins`; copied by the host during
   * register_metric_reporter. The plugin kit's SettingsTable::describe()
   * writes it. */
  const char *settings;
} tsm_reporter_descriptor;

/* The sizes a descriptor had as fields were appended: what struct_size says
 * when a plugin was built against that header. A host reads an appended
 * field only from a struct_size that covers it.
 *   V1: up to user_data, as in 0.1.0 (neither version nor settings)
 *   V2: up to version (no settings)
 *   V3: up to settings (sizeof(tsm_reporter_descriptor) of this header) */
#define TSM_REPORTER_DESCRIPTOR_SIZE_V1 \
  (offsetof(tsm_reporter_descriptor, user_data) + sizeof(void *))
#define TSM_REPORTER_DESCRIPTOR_SIZE_V2 \
  (offsetof(tsm_reporter_descriptor, version) + sizeof(const char *))
#define TSM_REPORTER_DESCRIPTOR_SIZE_V3 \
  (offsetof(tsm_reporter_descriptor, settings) + sizeof(const char *))

/* Log severities for tsm_host_api.log. */
typedef enum tsm_log_level {
  TSM_LOG_DEBUG = 0,
  TSM_LOG_INFO = 1,
  TSM_LOG_WARNING = 2,
  TSM_LOG_ERROR = 3
} tsm_log_level;

/* What the host offers a plugin during tsm_register. The table and what it
 * points to are valid during tsm_register only, except log, which may be
 * called from any thread for the life of the process. */
typedef struct tsm_host_api {
  uint32_t struct_size;     /* sizeof(tsm_host_api) as the host compiled it */
  uint32_t api_version;     /* TSM_METRIC_REPORTER_API_VERSION of the host */
  void *host_data;          /* pass back as the first argument below */
  const char *host_version; /* e.g. "0.1.0", for messages only */
  /* Declare one output. Returns TSM_OK, or TSM_ERROR with a message (name
   * invalid, reserved or taken without override, called after tsm_register
   * returned). A plugin may register several names. */
  int (*register_metric_reporter)(void *host_data, const tsm_reporter_descriptor *descriptor,
                                  tsm_buffer *error);
  /* Write one line to the host log, tagged with the plugin's name. Plugins
   * rate-limit their own repeated messages. */
  void (*log)(void *host_data, uint32_t level, const char *message);
} tsm_host_api;

/* The exported entry point. Return TSM_OK, TSM_UNSUPPORTED_API when
 * host->api_version is not one the plugin supports, or TSM_ERROR with a
 * message; on failure every name registered in this call is rolled back. */
typedef int (*tsm_register_fn)(const tsm_host_api *host, tsm_buffer *error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TOKENSPEED_METRIC_REPORTER_H */
