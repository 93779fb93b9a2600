// verifier.js — an HTTP receiver for the tests that checks the AWS Signature
// V4 of every request the way an AWS service does, signing it again with
// aws4 1.13.2 (an independent signer, pinned by package-lock.json) from the
// known test credentials: answers 200 when the signatures agree, 403 when
// they do not (or the credential scope, the date, the payload hash or the
// session token is wrong), and keeps one outcome per request, served as JSON
// on GET /state (never a secret). Binds 127.0.0.1 only.
//
//   node verifier.js --config FILE [--port N]     prints "listening PORT H2PORT" when ready
//
// H2PORT serves the same check over cleartext HTTP/2 (prior knowledge) as a
// unary gRPC server would answer: grpc-status 0 and an empty message when the
// signature is AWS's, 16 (UNAUTHENTICATED) with the reason when it is not.
// HTTP/2 has no Host header: :authority is the host that was signed.
//
// FILE (JSON): {"access_key_id": "...", "secret_access_key": "...",
//               "session_token": "..." (optional: then required on every request),
//               "region": "us-east-1", "service": "aps"}
"use strict";

const crypto = require("crypto");
const fs = require("fs");
const http = require("http");
const http2 = require("http2");
const aws4 = require("aws4");

const args = process.argv.slice(2);
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const port = option("--port") !== undefined ? Number(option("--port")) : 0;
const config = JSON.parse(fs.readFileSync(option("--config"), "utf8"));

const outcomes = []; // one per request: {status, reason, signed_headers, token, path, bytes}
const MAX_SKEW_MS = 5 * 60 * 1000; // AWS refuses a signature more than 5 minutes off

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

// The reason a request is refused, or null when its signature is AWS's.
// req: {method, url, headers} with lower-case header names.
function verify(req, body) {
  const given = req.headers.authorization || "";
  const match = AUTHORIZATION.exec(given);
  if (!match) return "missing or malformed Authorization header";
  const [, keyId, date, region, service, signedHeaders] = match;
  if (keyId !== config.access_key_id) return "unknown access key id";
  if (region !== config.region) return `credential scope region ${region}, expected ${config.region}`;
  if (service !== config.service) return `credential scope service ${service}, expected ${config.service}`;
  const amzDate = req.headers["x-amz-date"] || "";
  if (!/^\d{8}T\d{6}Z$/.test(amzDate)) return "missing or malformed X-Amz-Date";
  if (amzDate.slice(0, 8) !== date) return "X-Amz-Date and the credential scope disagree";
  const when = Date.parse(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T` +
      `${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`);
  if (!(Math.abs(Date.now() - when) <= MAX_SKEW_MS)) return "X-Amz-Date too far from now";
  const signed = signedHeaders.split(";");
  for (const required of ["host", "x-amz-date"]) {
    if (!signed.includes(required)) return `${required} is not signed`;
  }
  for (const name of signed) {
    if (req.headers[name] === undefined) return `signed header ${name} is not in the request`;
  }
  const token = req.headers["x-amz-security-token"];
  if (config.session_token) {
    if (token === undefined) return "missing X-Amz-Security-Token";
    if (!signed.includes("x-amz-security-token")) return "x-amz-security-token is not signed";
    if (token !== config.session_token) return "wrong session token";
  } else if (token !== undefined) {
    return "a session token where none was issued";
  }
  const payloadHash = crypto.createHash("sha256").update(body).digest("hex");
  const claimed = req.headers["x-amz-content-sha256"];
  if (claimed !== undefined && claimed !== payloadHash) return "X-Amz-Content-Sha256 is not the body's";

  // Signed again by aws4 over exactly the headers the request says it signed.
  const headers = {};
  for (const name of signed) headers[name] = req.headers[name];
  const ignore = {};
  for (const name of ["content-length", "content-type", "x-amz-security-token"]) {
    if (!signed.includes(name)) ignore[name] = true;
  }
  const expected = aws4.sign(
    {
      method: req.method,
      host: req.headers.host,
      path: req.url,
      headers,
      body,
      service: config.service,
      region: config.region,
      extraHeadersToIgnore: ignore,
    },
    { accessKeyId: config.access_key_id, secretAccessKey: config.secret_access_key },
  ).headers.Authorization;
  if (expected !== given) return "signature mismatch";
  return null;
}

// One outcome per request, kept for GET /state.
function record(req, body, reason, protocol) {
  const match = AUTHORIZATION.exec(req.headers.authorization || "");
  outcomes.push({
    status: reason === null ? 200 : 403,
    reason,
    protocol,
    path: req.url,
    bytes: body.length,
    signed_headers: match ? match[5] : null,
    token: req.headers["x-amz-security-token"] !== undefined,
    content_encoding: req.headers["content-encoding"] || null,
  });
}

function checked(req, body) {
  try {
    return verify(req, body);
  } catch (error) {
    return `cannot verify: ${error.message}`;
  }
}

function readBody(req, then) {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => then(Buffer.concat(chunks)));
}

const server = http.createServer((req, res) => {
  readBody(req, (body) => {
    if (req.method === "GET" && req.url === "/state") {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ requests: outcomes }));
      return;
    }
    const reason = checked(req, body);
    record(req, body, reason, "http/1.1");
    if (reason === null) {
      res.writeHead(200, { "Content-Length": "0" });
      res.end();
    } else {
      // As AWS answers: the reason in a JSON message.
      const text = JSON.stringify({ message: `SigV4 verification failed: ${reason}` });
      res.writeHead(403, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
      res.end(text);
    }
  });
});

const grpcServer = http2.createServer((req, res) => {
  readBody(req, (body) => {
    const view = { method: req.method, url: req.url, headers: { ...req.headers, host: req.headers[":authority"] } };
    const reason = checked(view, body);
    record(view, body, reason, "grpc");
    res.writeHead(200, { "content-type": "application/grpc" });
    if (reason === null) {
      res.addTrailers({ "grpc-status": "0" });
      res.end(Buffer.alloc(5)); // an empty response message, uncompressed
    } else {
      res.addTrailers({ "grpc-status": "16", "grpc-message": encodeURIComponent(`SigV4 verification failed: ${reason}`) });
      res.end();
    }
  });
});

server.listen(port, "127.0.0.1", () => {
  grpcServer.listen(0, "127.0.0.1", () => {
    process.stdout.write(`listening ${server.address().port} ${grpcServer.address().port}\n`);
  });
});
