//! Reads msgpack payloads of the zmq_load output's dynamo_fpm_v1 schema, one
//! per line as hex on stdin, decodes each with rmp_serde into structs of
//! Dynamo's ForwardPassMetrics shape (every field `#[serde(default)]`, as a
//! tolerant reader has them) and prints every value, one line of
//! `name=value` pairs per message. Exits 1 on a payload that does not decode.
use serde::Deserialize;
use std::io::BufRead;

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct ScheduledRequests {
    num_prefill_requests: u64,
    sum_prefill_tokens: u64,
    var_prefill_length: f64,
    sum_prefill_kv_tokens: u64,
    num_decode_requests: u64,
    sum_decode_kv_tokens: u64,
    var_decode_kv_tokens: f64,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct QueuedRequests {
    num_prefill_requests: u64,
    sum_prefill_tokens: u64,
    var_prefill_length: f64,
    num_decode_requests: u64,
    sum_decode_kv_tokens: u64,
    var_decode_kv_tokens: f64,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct ForwardPassMetrics {
    version: u32,
    worker_id: u64,
    dp_rank: u32,
    counter_id: u64,
    wall_time: f64,
    scheduled_requests: ScheduledRequests,
    queued_requests: QueuedRequests,
}

fn bytes_of(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

fn describe(m: &ForwardPassMetrics) -> String {
    let s = &m.scheduled_requests;
    let q = &m.queued_requests;
    format!(
        "version={} worker_id={} dp_rank={} counter_id={} wall_time={:?} \
         scheduled.num_prefill_requests={} scheduled.sum_prefill_tokens={} \
         scheduled.var_prefill_length={:?} scheduled.sum_prefill_kv_tokens={} \
         scheduled.num_decode_requests={} scheduled.sum_decode_kv_tokens={} \
         scheduled.var_decode_kv_tokens={:?} queued.num_prefill_requests={} \
         queued.sum_prefill_tokens={} queued.var_prefill_length={:?} \
         queued.num_decode_requests={} queued.sum_decode_kv_tokens={} \
         queued.var_decode_kv_tokens={:?}",
        m.version, m.worker_id, m.dp_rank, m.counter_id, m.wall_time,
        s.num_prefill_requests, s.sum_prefill_tokens, s.var_prefill_length,
        s.sum_prefill_kv_tokens, s.num_decode_requests, s.sum_decode_kv_tokens,
        s.var_decode_kv_tokens, q.num_prefill_requests, q.sum_prefill_tokens,
        q.var_prefill_length, q.num_decode_requests, q.sum_decode_kv_tokens,
        q.var_decode_kv_tokens
    )
}

fn main() {
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        let payload = bytes_of(line.trim());
        match rmp_serde::from_slice::<ForwardPassMetrics>(&payload) {
            Ok(metrics) => println!("{}", describe(&metrics)),
            Err(error) => {
                eprintln!("does not decode: {error}");
                std::process::exit(1);
            }
        }
    }
}
