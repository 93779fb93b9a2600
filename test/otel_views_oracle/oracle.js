// oracle.js — OpenTelemetry's JavaScript SDK (@opentelemetry/sdk-metrics
// 2.12.1) as the oracle of the views (docs/views.md): plays a recording
// script through a MeterProvider whose Views are the views file's, collects
// once with a cumulative reader and prints the points, normalized as
// test/integration/otel_views_oracle.py normalizes what the otlp output sent.
//
//   node oracle.js SCRIPT VIEWS      prints {"points": [...]} on stdout
//
// SCRIPT: {"families": [{"name", "kind": "counter"|"histogram", "labels": [names],
//                         "buckets": [bounds]}],
//          "recordings": [{"family", "labels": [values], "value": "decimal"}]}
// (a value is a string: Boost.JSON 1.81, which the host's driver reads the
// script with, rounds some decimal numbers to a neighbouring double)
// VIEWS: the views file (docs/views.md). Each view becomes one OpenTelemetry
// View: select.name -> instrumentName (the SDK's wildcard is one `*`),
// select.kind -> instrumentType, keep_labels -> an allow-list attributes
// processor, drop_labels -> a deny-list one, buckets -> an explicit bucket
// histogram aggregation, drop -> the drop aggregation, name -> name,
// cardinality_limit -> aggregationCardinalityLimit. The SDK makes one stream
// per matching View where the views file merges them in order, so a family
// selected by two views is refused here (exit status 2).
//
// A point: {"name", "type": "sum"|"histogram", "attributes": {key: string}}
// with "value" (sum) or "count", "sum", "explicit_bounds", "bucket_counts".
"use strict";

const fs = require("fs");
const sdk = require("@opentelemetry/sdk-metrics");

// Collects on demand: what a periodic reader would export, without a timer.
class ManualReader extends sdk.MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => sdk.AggregationTemporality.CUMULATIVE });
  }
  async onForceFlush() {}
  async onShutdown() {}
}

const KINDS = { counter: sdk.InstrumentType.COUNTER, histogram: sdk.InstrumentType.HISTOGRAM };

function globMatches(pattern, name) {
  const escaped = pattern.replace(/[\^$\\.+?()[\]{}|]/g, "\\$&").replace(/\*/g, ".*");
  return new RegExp(`^${escaped}$`).test(name);
}

function selects(view, family) {
  const select = view.select || {};
  return globMatches(select.name, family.name) && (!select.kind || select.kind === family.kind);
}

// The OpenTelemetry View of one of our views.
function otelView(view) {
  const select = view.select || {};
  if (select.kind && !KINDS[select.kind]) throw new Error(`select.kind ${select.kind}: not in the oracle`);
  const options = { instrumentName: select.name };
  if (select.kind) options.instrumentType = KINDS[select.kind];
  const processors = [];
  if (view.keep_labels) processors.push(sdk.createAllowListAttributesProcessor(view.keep_labels));
  if (view.drop_labels) processors.push(sdk.createDenyListAttributesProcessor(view.drop_labels));
  if (processors.length) options.attributesProcessors = processors;
  if (view.drop) {
    options.aggregation = { type: sdk.AggregationType.DROP };
  } else if (view.buckets) {
    options.aggregation = { type: sdk.AggregationType.EXPLICIT_BUCKET_HISTOGRAM,
      options: { boundaries: view.buckets } };
  }
  if (view.name) options.name = view.name;
  if (view.cardinality_limit !== undefined) options.aggregationCardinalityLimit = view.cardinality_limit;
  for (const key of Object.keys(view)) {
    if (!["select", "keep_labels", "drop_labels", "drop", "buckets", "name", "cardinality_limit"].includes(key)) {
      throw new Error(`view key ${key}: not in the oracle`);
    }
  }
  return options;
}

function normalize(metric) {
  return metric.dataPoints.map((dp) => {
    const attributes = {};
    for (const key of Object.keys(dp.attributes).sort()) attributes[key] = String(dp.attributes[key]);
    const point = { name: metric.descriptor.name, attributes };
    if (metric.dataPointType === sdk.DataPointType.SUM) {
      point.type = "sum";
      point.value = dp.value;
    } else if (metric.dataPointType === sdk.DataPointType.HISTOGRAM) {
      point.type = "histogram";
      point.count = dp.value.count;
      point.sum = dp.value.sum;
      point.explicit_bounds = dp.value.buckets.boundaries;
      point.bucket_counts = dp.value.buckets.counts;
    } else {
      throw new Error(`${metric.descriptor.name}: data point type ${metric.dataPointType} not in the oracle`);
    }
    return point;
  });
}

function instruments(meter, families, views) {
  const out = {};
  for (const family of families) {
    const selecting = views.filter((view) => selects(view, family));
    if (selecting.length > 1) {
      process.stderr.write(`oracle: ${family.name} is selected by ${selecting.length} views; ` +
        "OpenTelemetry would make a stream of each\n");
      process.exit(2);
    }
    if (family.kind === "counter") {
      out[family.name] = { family, instrument: meter.createCounter(family.name) };
    } else if (family.kind === "histogram") {
      out[family.name] = { family, instrument: meter.createHistogram(family.name,
        { advice: { explicitBucketBoundaries: family.buckets } }) };
    } else {
      throw new Error(`${family.name}: kind ${family.kind} not in the oracle`);
    }
  }
  return out;
}

async function main() {
  const [scriptPath, viewsPath] = process.argv.slice(2);
  const script = JSON.parse(fs.readFileSync(scriptPath, "utf8"));
  const views = JSON.parse(fs.readFileSync(viewsPath, "utf8")).views || [];
  const reader = new ManualReader();
  const provider = new sdk.MeterProvider({ views: views.map(otelView), readers: [reader] });
  const byName = instruments(provider.getMeter("tokenspeed-oracle"), script.families, views);
  for (const recording of script.recordings) {
    const { family, instrument } = byName[recording.family];
    const attributes = {};
    family.labels.forEach((name, i) => { attributes[name] = recording.labels[i]; });
    const value = Number(recording.value);
    if (family.kind === "counter") instrument.add(value, attributes);
    else instrument.record(value, attributes);
  }
  // One collection: the SDK's cardinality limit counts the attribute sets of
  // one collection interval (see otel_views_oracle.py).
  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length) throw new Error(`collect: ${errors}`);
  const points = [];
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) points.push(...normalize(metric));
  }
  process.stdout.write(JSON.stringify({ points }) + "\n");
  await provider.shutdown();
}

main().catch((error) => {
  process.stderr.write(`oracle: ${error.stack || error}\n`);
  process.exit(1);
});
