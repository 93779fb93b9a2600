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
//               "region": "us-east-1", "service": "aps",
//               "role": {...} (optional, below)}
//
// With "role": {"arn": "arn:aws:iam::123456789012:role/NAME",
//               "expiry_seconds": 3600, "refuse": false}
// a third port, STSPORT in "listening PORT H2PORT STSPORT", answers as AWS
// STS does: a POST of the form Action=AssumeRole&Version=2011-06-15&RoleArn=
// ...&RoleSessionName=...&DurationSeconds=... signed (service "sts") with
// the credentials above gets the XML AssumeRoleResponse with temporary
// credentials expiring expiry_seconds later (whole seconds); anything else
// the XML ErrorResponse of AWS (403 SignatureDoesNotMatch or AccessDenied,
// 400 for a bad form). The receiver then takes only requests signed with
// temporary credentials it issued, unexpired, carrying their session token,
// and refuses the credentials above. Each issued secret starts TMPSECRET and
// each token TMPTOKEN, so that a test can look for them in what a run
// printed without knowing them. While "refuse" is true every AssumeRole is
// refused 403 AccessDenied; POST /control {"refuse": bool} on PORT turns it.
// GET /state also lists {sts: [{status, reason, role_arn, session_name,
// duration_seconds, issued_key_id}]} and each request's key_id.
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

const outcomes = []; // one per request: {status, reason, signed_headers, token, path, bytes, key_id}
const stsOutcomes = []; // one per AssumeRole call (see the header)
const role = config.role || null;
let refuseAssumeRole = Boolean(role && role.refuse);
const issued = new Map(); // temporary access key id -> {secretAccessKey, sessionToken, expiresAt}
const MAX_SKEW_MS = 5 * 60 * 1000; // AWS refuses a signature more than 5 minutes off

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

// The credentials a request to the receiver may be signed with: those
// issued by the STS port when a role is configured, else the configured ones.
function receiverKey(keyId) {
  if (role) return issued.get(keyId) || null;
  if (keyId !== config.access_key_id) return null;
  return { secretAccessKey: config.secret_access_key, sessionToken: config.session_token || null };
}

// The credentials an AssumeRole call must be signed with: the configured ones.
function baseKey(keyId) {
  if (keyId !== config.access_key_id) return null;
  return { secretAccessKey: config.secret_access_key, sessionToken: config.session_token || null };
}

// The reason a request is refused, or null when its signature is AWS's.
// req: {method, url, headers} with lower-case header names; service: the
// credential scope's; keyOf(keyId): {secretAccessKey, sessionToken,
// expiresAt (optional)} or null for an unknown key.
function verify(req, body, service_ = config.service, keyOf = receiverKey) {
  const given = req.headers.authorization || "";
  const match = AUTHORIZATION.exec(given);
  if (!match) return "missing or malformed Authorization header";
  const [, keyId, date, region, service, signedHeaders] = match;
  const key = keyOf(keyId);
  if (key === null) return "unknown access key id";
  if (key.expiresAt !== undefined && Date.now() >= key.expiresAt) return "expired security token";
  if (region !== config.region) return `credential scope region ${region}, expected ${config.region}`;
  if (service !== service_) return `credential scope service ${service}, expected ${service_}`;
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
  if (key.sessionToken) {
    if (token === undefined) return "missing X-Amz-Security-Token";
    if (!signed.includes("x-amz-security-token")) return "x-amz-security-token is not signed";
    if (token !== key.sessionToken) return "wrong session token";
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
      service: service_,
      region: config.region,
      extraHeadersToIgnore: ignore,
    },
    { accessKeyId: keyId, secretAccessKey: key.secretAccessKey },
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
    key_id: match ? match[1] : null,
  });
}

function checked(req, body, service, keyOf) {
  try {
    return verify(req, body, service, keyOf);
  } catch (error) {
    return `cannot verify: ${error.message}`;
  }
}

function readBody(req, then) {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => then(Buffer.concat(chunks)));
}

// ------------------------------------------------------------ STS

const STS_NAMESPACE = "https://sts.amazonaws.com/doc/2011-06-15/";

function stsError(res, status, code, message) {
  const text =
    `<ErrorResponse xmlns="${STS_NAMESPACE}">\n  <Error>\n    <Type>Sender</Type>\n` +
    `    <Code>${code}</Code>\n    <Message>${message}</Message>\n  </Error>\n` +
    `  <RequestId>${crypto.randomUUID()}</RequestId>\n</ErrorResponse>\n`;
  res.writeHead(status, { "Content-Type": "text/xml", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

function randomText(alphabet, length) {
  let out = "";
  for (const byte of crypto.randomBytes(length)) out += alphabet[byte % alphabet.length];
  return out;
}

// Issues temporary credentials for the role, expiring in whole seconds.
function issue() {
  const expiresAt = Math.floor(Date.now() / 1000 + role.expiry_seconds) * 1000;
  const keyId = "ASIA" + randomText("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16);
  const key = {
    secretAccessKey: "TMPSECRET" + randomText("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+", 31),
    // Base64 as AWS's: '/', '+' and '=' must survive the header.
    sessionToken: "TMPTOKEN" + crypto.randomBytes(96).toString("base64"),
    expiresAt,
  };
  issued.set(keyId, key);
  return { keyId, key, expiration: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, "Z") };
}

// The reason an AssumeRole form is refused (400), or null.
function formProblem(form) {
  if (form.get("Action") !== "AssumeRole") return "Action is not AssumeRole";
  if (form.get("Version") !== "2011-06-15") return "Version is not 2011-06-15";
  if (!/^[\w+=,.@-]{2,64}$/.test(form.get("RoleSessionName") || "")) return "bad RoleSessionName";
  const duration = Number(form.get("DurationSeconds"));
  if (!(Number.isInteger(duration) && duration >= 900 && duration <= 43200)) return "bad DurationSeconds";
  return null;
}

function answerAssumeRole(req, res, body) {
  const outcome = { status: 403, reason: null, role_arn: null, session_name: null,
                    duration_seconds: null, issued_key_id: null };
  stsOutcomes.push(outcome);
  const form = new URLSearchParams(body.toString("utf8"));
  outcome.role_arn = form.get("RoleArn");
  outcome.session_name = form.get("RoleSessionName");
  outcome.duration_seconds = Number(form.get("DurationSeconds"));
  const contentType = (req.headers["content-type"] || "").split(";")[0].trim();
  const reason = contentType !== "application/x-www-form-urlencoded"
    ? "not a form"
    : checked(req, body, "sts", baseKey);
  if (reason !== null) {
    outcome.reason = reason;
    stsError(res, 403, "SignatureDoesNotMatch", `The request signature we calculated does not match: ${reason}`);
    return;
  }
  const problem = formProblem(form);
  if (problem !== null) {
    outcome.status = 400;
    outcome.reason = problem;
    stsError(res, 400, "ValidationError", problem);
    return;
  }
  if (refuseAssumeRole || outcome.role_arn !== role.arn) {
    outcome.reason = refuseAssumeRole ? "refused" : "unknown role";
    stsError(res, 403, "AccessDenied",
      `User: arn:aws:iam::123456789012:user/tokenspeed-test is not authorized to perform: ` +
      `sts:AssumeRole on resource: ${outcome.role_arn}`);
    return;
  }
  const { keyId, key, expiration } = issue();
  outcome.status = 200;
  outcome.issued_key_id = keyId;
  const text =
    `<AssumeRoleResponse xmlns="${STS_NAMESPACE}">\n  <AssumeRoleResult>\n` +
    `    <AssumedRoleUser>\n      <Arn>${role.arn.replace(":iam::", ":sts::").replace(":role/", ":assumed-role/")}/${outcome.session_name}</Arn>\n` +
    `      <AssumedRoleId>AROATOKENSPEEDTEST:${outcome.session_name}</AssumedRoleId>\n    </AssumedRoleUser>\n` +
    `    <Credentials>\n      <AccessKeyId>${keyId}</AccessKeyId>\n` +
    `      <SecretAccessKey>${key.secretAccessKey}</SecretAccessKey>\n` +
    `      <SessionToken>${key.sessionToken}</SessionToken>\n` +
    `      <Expiration>${expiration}</Expiration>\n    </Credentials>\n` +
    `  </AssumeRoleResult>\n  <ResponseMetadata>\n    <RequestId>${crypto.randomUUID()}</RequestId>\n` +
    `  </ResponseMetadata>\n</AssumeRoleResponse>\n`;
  res.writeHead(200, { "Content-Type": "text/xml", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

const stsServer = http.createServer((req, res) => {
  readBody(req, (body) => {
    if (req.method !== "POST") {
      stsError(res, 400, "InvalidAction", "only POST");
      return;
    }
    answerAssumeRole(req, res, body);
  });
});

// ------------------------------------------------------------ the receiver

const server = http.createServer((req, res) => {
  readBody(req, (body) => {
    if (req.method === "GET" && req.url === "/state") {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ requests: outcomes, sts: stsOutcomes }));
      return;
    }
    if (req.method === "POST" && req.url === "/control") {
      const change = JSON.parse(body.toString("utf8") || "{}");
      if (typeof change.refuse === "boolean") refuseAssumeRole = change.refuse;
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ refuse: refuseAssumeRole }));
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
    stsServer.listen(0, "127.0.0.1", () => {
      process.stdout.write(
        `listening ${server.address().port} ${grpcServer.address().port} ${stsServer.address().port}\n`);
    });
  });
});
