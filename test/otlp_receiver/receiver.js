// receiver.js — an OTLP/HTTP metrics receiver for the tests. Every request is
// decoded with the official OpenTelemetry protobuf decoders
// (@opentelemetry/otlp-transformer 0.52.1); accepted data points are kept
// per resource (service.instance.id) and served as JSON on GET /state, with
// a summary of every request (its headers included). An ExponentialHistogram
// point keeps its scale, zero bucket and both signs' buckets as decoded; with
// delta temporality its windows are kept in order (merging them needs a
// common scale: the tests do it).
// Faults a real Collector cannot be made to show are scripted on POST
// /control. Binds 127.0.0.1 only.
//
//   node receiver.js [--port N] [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
//                                      prints "listening PORT" when ready
//
// With --tls-cert and --tls-key it serves HTTPS with that certificate (PEM);
// with --client-ca too, every connection must present a client certificate
// that CA signed, or the handshake fails (/control and /state included).
//
// With --grpc-port N (0: any free port) it also serves OTLP/gRPC
// (opentelemetry.proto.collector.metrics.v1.MetricsService/Export, plaintext
// HTTP/2, or TLS with the options above) with @grpc/grpc-js 1.14.7, decoding
// with the same decoders into the same state, and prints
// "listening PORT grpc GRPC_PORT" when both are ready.
//
// POST /control {"responses": [R, ...], "default": R}: the next requests get
// the scripted responses in order, then the default. R is
//   {"status": 503, "retry_after": "1", "delay_ms": 0, "hang": false,
//    "rejected_data_points": 0, "error_message": ""}
// "hang": never answer (the client must give up); "delay_ms": answer late.
// A request that is not answered 200 is not accepted: its points are not kept.
// A gRPC call takes the same plans: "grpc_status" (a code, 0 when absent)
// and "grpc_message" are its answer, "retry_delay_ms" adds a RetryInfo of
// that delay (grpc-status-details-bin); "status" is not used, and a call not
// answered 0 is not accepted.
"use strict";

const fs = require("fs");
const http = require("http");
const https = require("https");
const zlib = require("zlib");
const root = require("@opentelemetry/otlp-transformer/build/src/generated/root.js");

const v1 = root.opentelemetry.proto.collector.metrics.v1;
const Request = v1.ExportMetricsServiceRequest;
const Response = v1.ExportMetricsServiceResponse;

const args = process.argv.slice(2);
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const port = option("--port") !== undefined ? Number(option("--port")) : 0;
const grpcPort = option("--grpc-port");
const tlsCert = option("--tls-cert");
const tlsKey = option("--tls-key");
const clientCa = option("--client-ca");

let scripted = [];
let defaultResponse = { status: 200 };
const requests = [];      // one summary per request received
const series = {};        // accepted points: key -> point
const resources = {};     // service.instance.id -> resource attributes
const hanging = [];       // responses never answered

function attributesObject(list) {
  const out = {};
  for (const kv of list || []) {
    const v = kv.value || {};
    out[kv.key] = v.stringValue !== undefined ? v.stringValue
      : v.intValue !== undefined ? Number(v.intValue)
      : v.doubleValue !== undefined ? v.doubleValue
      : v.boolValue !== undefined ? v.boolValue : null;
  }
  return out;
}

function sortedJson(object) {
  return JSON.stringify(Object.keys(object).sort().map((k) => [k, object[k]]));
}

// Keeps a cumulative point when it is not older than the one kept; adds a
// delta point to what was kept.
function keep(key, point) {
  const kept = series[key];
  if (point.temporality === "AGGREGATION_TEMPORALITY_DELTA" && kept) {
    if (point.type === "exponential_histogram") {
      kept.count += point.count;
      kept.sum += point.sum;
      kept.windows.push(...point.windows);
    } else if (point.type === "histogram") {
      kept.count += point.count;
      kept.sum += point.sum;
      kept.bucket_counts = kept.bucket_counts.map((c, i) => c + point.bucket_counts[i]);
    } else {
      kept.value += point.value;
    }
    kept.time = point.time;
    kept.points += 1;
    return;
  }
  if (kept && BigInt(kept.time) > BigInt(point.time)) return;
  point.points = (kept ? kept.points : 0) + 1;
  series[key] = point;
}

function accept(decoded) {
  let points = 0;
  for (const rm of decoded.resourceMetrics || []) {
    const resource = attributesObject(rm.resource && rm.resource.attributes);
    const instance = String(resource["service.instance.id"]);
    resources[instance] = resource;
    for (const sm of rm.scopeMetrics || []) {
      for (const metric of sm.metrics || []) {
        const data = metric.sum || metric.gauge || metric.histogram || metric.exponentialHistogram;
        const type = metric.sum ? "sum" : metric.gauge ? "gauge" : metric.histogram ? "histogram"
          : metric.exponentialHistogram ? "exponential_histogram" : "other";
        for (const dp of (data && data.dataPoints) || []) {
          points += 1;
          const attributes = attributesObject(dp.attributes);
          const point = {
            instance, name: metric.name, unit: metric.unit, description: metric.description,
            type, attributes, time: String(dp.timeUnixNano || "0"),
            start: String(dp.startTimeUnixNano || "0"),
            temporality: data.aggregationTemporality || null,
            monotonic: metric.sum ? Boolean(metric.sum.isMonotonic) : null,
          };
          if (type === "histogram") {
            point.count = Number(dp.count || 0);
            point.sum = dp.sum || 0;
            point.bucket_counts = (dp.bucketCounts || []).map(Number);
            point.explicit_bounds = dp.explicitBounds || [];
          } else if (type === "exponential_histogram") {
            point.count = Number(dp.count || 0);
            point.sum = dp.sum || 0;
            point.windows = [exponentialWindow(dp)];
          } else {
            point.value = dp.asDouble !== undefined && dp.asDouble !== null ? dp.asDouble : Number(dp.asInt || 0);
          }
          keep(`${instance}\u0000${metric.name}\u0000${sortedJson(attributes)}`, point);
        }
      }
    }
  }
  return points;
}

// What an ExponentialHistogramDataPoint says beyond count and sum (min and
// max null when absent, as for a point without observations).
function exponentialWindow(dp) {
  const buckets = (b) => ({
    offset: (b && b.offset) || 0,
    bucket_counts: ((b && b.bucketCounts) || []).map(Number),
  });
  return {
    count: Number(dp.count || 0), sum: dp.sum || 0, scale: dp.scale || 0,
    zero_count: Number(dp.zeroCount || 0), zero_threshold: dp.zeroThreshold || 0,
    positive: buckets(dp.positive), negative: buckets(dp.negative),
    min: dp.min !== undefined ? dp.min : null, max: dp.max !== undefined ? dp.max : null,
  };
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

async function handleExport(req, res) {
  const raw = await readBody(req);
  const encoding = req.headers["content-encoding"] || "identity";
  const summary = {
    encoding, content_type: req.headers["content-type"] || "", bytes: raw.length,
    headers: req.headers,
  };
  requests.push(summary);
  let decoded;
  try {
    const body = encoding === "gzip" ? zlib.gunzipSync(raw) : raw;
    decoded = Request.toObject(Request.decode(body), { longs: String, enums: String, defaults: false });
  } catch (error) {
    summary.status = 400;
    summary.error = String(error);
    res.writeHead(400, { "Content-Type": "text/plain" });
    res.end(`cannot decode: ${error}`);
    return;
  }
  const plan = scripted.length > 0 ? scripted.shift() : defaultResponse;
  summary.planned = plan.status || 200;
  if (plan.hang) {
    summary.status = "hang";
    hanging.push(res);
    return;
  }
  const answer = () => {
    if (res.destroyed || req.socket.destroyed) {
      summary.status = "client gone";
      return;
    }
    const status = plan.status || 200;
    summary.status = status;
    const headers = { "Content-Type": "application/x-protobuf" };
    if (plan.retry_after !== undefined) headers["Retry-After"] = String(plan.retry_after);
    if (status === 200) {
      summary.points = accept(decoded);
      const partial = plan.rejected_data_points || plan.error_message
        ? { partialSuccess: { rejectedDataPoints: plan.rejected_data_points || 0, errorMessage: plan.error_message || "" } }
        : {};
      res.writeHead(200, headers);
      res.end(Buffer.from(Response.encode(Response.fromObject(partial)).finish()));
    } else {
      res.writeHead(status, headers);
      res.end(`scripted status ${status}`);
    }
  };
  if (plan.delay_ms) setTimeout(answer, plan.delay_ms); else answer();
}

async function handle(req, res) {
  try {
    if (req.method === "POST" && req.url === "/v1/metrics") return await handleExport(req, res);
    if (req.method === "POST" && req.url === "/control") {
      const control = JSON.parse((await readBody(req)).toString() || "{}");
      if (control.responses) scripted = control.responses.slice();
      if (control.default) defaultResponse = control.default;
      if (control.release_hanging) while (hanging.length) hanging.pop().destroy();
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end("{}");
    }
    if (req.method === "GET" && req.url === "/state") {
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ requests, series: Object.values(series), resources }));
    }
    res.writeHead(404);
    res.end();
  } catch (error) {
    res.writeHead(500);
    res.end(String(error));
  }
}

// A google.rpc.Status holding a google.rpc.RetryInfo of delayMs, in the
// protobuf wire format (what grpc-status-details-bin carries).
function retryInfoStatus(code, message, delayMs) {
  const varint = (n) => {
    const out = [];
    let v = BigInt(n);
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) byte |= 0x80;
      out.push(byte);
    } while (v > 0n);
    return Buffer.from(out);
  };
  const field = (number, bytes) => Buffer.concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
  const number = (n, value) => Buffer.concat([varint(n << 3), varint(value)]);
  const duration = Buffer.concat([number(1, Math.floor(delayMs / 1000)), number(2, (delayMs % 1000) * 1000000)]);
  const any = Buffer.concat([field(1, Buffer.from("type.googleapis.com/google.rpc.RetryInfo")),
    field(2, field(1, duration))]);
  return Buffer.concat([number(1, code), field(2, Buffer.from(message)), field(3, any)]);
}

// One OTLP/gRPC Export call: the message arrives decompressed by grpc-js
// (grpc-encoding gzip), is decoded with the official decoder and answered as
// planned.
function handleGrpcExport(call, callback) {
  const raw = call.request;
  const metadata = call.metadata.getMap();
  const headers = {};
  for (const key of Object.keys(metadata)) headers[key] = String(metadata[key]);
  // grpc-js keeps content-type and grpc-encoding to itself: the framed
  // size (content-length) shows whether the message came compressed.
  // grpc-js takes grpc-timeout out of the metadata into the call's deadline:
  // the milliseconds left of it when the call arrived (null: no deadline).
  const deadline = call.getDeadline();
  const summary = {
    protocol: "grpc", bytes: raw.length, headers,
    framed_bytes: headers["content-length"] !== undefined ? Number(headers["content-length"]) : null,
    deadline_left_ms: Number.isFinite(Number(deadline)) ? Number(deadline) - Date.now() : null,
  };
  requests.push(summary);
  let decoded;
  try {
    decoded = Request.toObject(Request.decode(raw), { longs: String, enums: String, defaults: false });
  } catch (error) {
    summary.status = 3;
    summary.error = String(error);
    callback({ code: 3, details: `cannot decode: ${error}` });
    return;
  }
  const plan = scripted.length > 0 ? scripted.shift() : defaultResponse;
  const code = plan.grpc_status || 0;
  summary.planned = code;
  if (plan.hang) {
    summary.status = "hang";
    hanging.push({ destroy: () => callback({ code: 14, details: "released" }) });
    return;
  }
  const answer = () => {
    if (call.cancelled) {
      summary.status = "client gone";
      return;
    }
    summary.status = code;
    if (code !== 0) {
      const error = { code, details: plan.grpc_message || `scripted status ${code}` };
      if (plan.retry_delay_ms !== undefined) {
        const grpc = require("@grpc/grpc-js");
        error.metadata = new grpc.Metadata();
        error.metadata.set("grpc-status-details-bin", retryInfoStatus(code, error.details, plan.retry_delay_ms));
      }
      callback(error);
      return;
    }
    summary.points = accept(decoded);
    const partial = plan.rejected_data_points || plan.error_message
      ? { partialSuccess: { rejectedDataPoints: plan.rejected_data_points || 0, errorMessage: plan.error_message || "" } }
      : {};
    callback(null, Buffer.from(Response.encode(Response.fromObject(partial)).finish()));
  };
  if (plan.delay_ms) setTimeout(answer, plan.delay_ms); else answer();
}

function startGrpc(port, ready) {
  const grpc = require("@grpc/grpc-js");
  const identity = (buffer) => buffer;
  const service = {
    Export: {
      path: "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
      requestStream: false, responseStream: false,
      requestSerialize: identity, requestDeserialize: identity,
      responseSerialize: identity, responseDeserialize: identity,
    },
  };
  const grpcServer = new grpc.Server();
  grpcServer.addService(service, { Export: handleGrpcExport });
  // With --tls-cert and --tls-key, TLS with that certificate (HTTP/2 agreed
  // through ALPN); with --client-ca, a client certificate that CA signed.
  const credentials = tlsCert && tlsKey
    ? grpc.ServerCredentials.createSsl(clientCa ? fs.readFileSync(clientCa) : null,
      [{ cert_chain: fs.readFileSync(tlsCert), private_key: fs.readFileSync(tlsKey) }],
      Boolean(clientCa))
    : grpc.ServerCredentials.createInsecure();
  grpcServer.bindAsync(`127.0.0.1:${port}`, credentials, (error, bound) => {
    if (error) {
      process.stderr.write(`cannot serve gRPC: ${error}\n`);
      process.exit(1);
    }
    ready(bound);
  });
}

let server;
if (tlsCert && tlsKey) {
  const options = { cert: fs.readFileSync(tlsCert), key: fs.readFileSync(tlsKey) };
  if (clientCa) {
    options.ca = fs.readFileSync(clientCa);
    options.requestCert = true;
    options.rejectUnauthorized = true;
  }
  server = https.createServer(options, handle);
} else {
  server = http.createServer(handle);
}
server.keepAliveTimeout = 60000;
server.listen(port, "127.0.0.1", () => {
  if (grpcPort === undefined) {
    process.stdout.write(`listening ${server.address().port}\n`);
    return;
  }
  startGrpc(Number(grpcPort), (bound) => {
    process.stdout.write(`listening ${server.address().port} grpc ${bound}\n`);
  });
});
process.on("SIGTERM", () => process.exit(0));
