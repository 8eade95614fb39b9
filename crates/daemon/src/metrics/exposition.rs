//! A [`Snapshot`] in the OpenMetrics text format (which Prometheus scrapes),
//! encoded by prometheus-client: a [`Collector`] takes one snapshot per
//! scrape and writes every family from it, so the page and `status --json`
//! come from the same numbers. docs/serve.md ("Observing it") lists every
//! metric.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::snapshot::{Snapshot, Source};
use ssdcache_engine::counters::requests::LatencySnapshot;

/// The Content-Type of [`render`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Encodes a fresh snapshot at each scrape.
#[derive(Debug)]
struct SnapshotCollector(Source);

impl Collector for SnapshotCollector {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        encode_snapshot(&self.0.snapshot(), &mut e)
    }
}

/// The registry of a server's metrics.
pub fn registry(source: Source) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(SnapshotCollector(source)));
    r
}

/// The Content-Type of [`to_classic`]'s output.
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The exposition text in OpenMetrics (ends with `# EOF`).
pub fn render(registry: &Registry) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    prometheus_client::encoding::text::encode(&mut out, registry).expect("encode to a String");
    out
}

/// OpenMetrics text as Prometheus's classic text format (0.0.4), for
/// clients that do not ask for OpenMetrics (curl, `promtool check metrics`).
/// prometheus-client writes only OpenMetrics, whose counter metadata names
/// the family (`# TYPE x counter`, sample `x_total`) where the classic format
/// names the sample (`# TYPE x_total counter`): that is the one difference
/// for what we export (no units, info, exemplars or timestamps), so this
/// renames counter metadata and drops the `# EOF` marker, and nothing else.
pub fn to_classic(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len() + 1024);
    let mut help: Option<&str> = None; // a HELP line waiting for its TYPE
    for line in openmetrics.lines() {
        if line == "# EOF" {
            continue;
        }
        if line.starts_with("# HELP ") {
            if let Some(h) = help.replace(line) {
                out.push_str(h);
                out.push('\n');
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some((name, "counter")) = rest.split_once(' ') {
                if let Some(h) = help.take() {
                    let text = h.strip_prefix("# HELP ").and_then(|t| t.strip_prefix(name)).unwrap_or(" ");
                    out.push_str(&format!("# HELP {name}_total{text}\n"));
                }
                out.push_str(&format!("# TYPE {name}_total counter\n"));
                continue;
            }
        }
        if let Some(h) = help.take() {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(h) = help {
        out.push_str(h);
        out.push('\n');
    }
    out
}

type Labels<'a> = Vec<(&'static str, &'a str)>;

/// A counter family (no labels: one series with an empty label list).
fn counters<'a>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels<'a>, u64)>,
) -> Result<(), std::fmt::Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in series {
        // An unlabelled series without the empty `{}`.
        if labels.is_empty() {
            m.encode_counter::<NoLabelSet, _, u64>(&v, None)?;
        } else {
            m.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(&v, None)?;
        }
    }
    Ok(())
}

fn gauges<'a>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels<'a>, f64)>,
) -> Result<(), std::fmt::Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in series {
        if labels.is_empty() {
            m.encode_gauge(&v)?;
        } else {
            m.encode_family(&labels)?.encode_gauge(&v)?;
        }
    }
    Ok(())
}

fn histograms<'a>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels<'a>, &'a LatencySnapshot)>,
) -> Result<(), std::fmt::Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, h) in series {
        // prometheus-client marks the +Inf bucket by f64::MAX.
        let buckets: Vec<(f64, u64)> =
            h.buckets.iter().map(|&(le, n)| (if le.is_finite() { le } else { f64::MAX }, n)).collect();
        m.encode_family(&labels)?.encode_histogram::<NoLabelSet>(h.sum_seconds, h.count, &buckets, None)?;
    }
    Ok(())
}

fn one<T>(v: T) -> [(Labels<'static>, T); 1] {
    [(Vec::new(), v)]
}

fn encode_snapshot(s: &Snapshot, e: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
    let st = &s.engine;
    let m = &st.map;
    let seg = st.segment_size;

    gauges(
        e,
        "ssdcache_mode_info",
        "The cache mode and replacement policy (value always 1).",
        [(vec![("mode", st.mode.name()), ("policy", st.policy.as_str())], 1.0)],
    )?;

    // Requests, per operation and outcome.
    let req = |r: &ssdcache_engine::counters::requests::RequestSnapshot| -> Labels<'_> {
        vec![("op", r.op), ("outcome", r.outcome)]
    };
    counters(
        e,
        "ssdcache_requests",
        "NBD requests answered, per operation and outcome (hit: every segment cached; miss: some not; \
         bypass: cache not consulted or a miss declined; ok: trim or flush done; error: error reply).",
        st.requests.iter().map(|r| (req(r), r.count)),
    )?;
    counters(
        e,
        "ssdcache_request_bytes",
        "Bytes NBD requests asked to read, write, zero or trim, per operation and outcome.",
        st.requests.iter().map(|r| (req(r), r.bytes)),
    )?;
    histograms(
        e,
        "ssdcache_request_duration_seconds",
        "Time from the engine receiving a request to its answer (segment locks, fills, device I/O; not the network).",
        st.requests.iter().map(|r| (req(r), &r.latency)),
    )?;

    // Pieces (one per segment a request touches), as status counts them.
    counters(
        e,
        "ssdcache_request_pieces",
        "Request pieces (one per segment a request touches) whose segment was cached (hit) or not (miss).",
        [
            (vec![("op", "read"), ("result", "hit")], m.read_hits),
            (vec![("op", "read"), ("result", "miss")], m.read_misses),
            (vec![("op", "write"), ("result", "hit")], m.write_hits),
            (vec![("op", "write"), ("result", "miss")], m.write_misses),
        ],
    )?;
    counters(
        e,
        "ssdcache_served_bytes",
        "Request bytes served without touching the backing device.",
        one(m.served_bytes),
    )?;
    counters(
        e,
        "ssdcache_served_pieces",
        "Request pieces served without touching the backing device.",
        one(m.served_pieces),
    )?;
    counters(
        e,
        "ssdcache_write_hits_to_backing",
        "Write hits that wrote the backing device all the same (write-through, double writes, invalidations).",
        one(m.write_hits_to_backing),
    )?;

    // Devices.
    counters(
        e,
        "ssdcache_device_request_bytes",
        "Bytes requests read from or wrote to each device (whole-segment copies are ssdcache_segment_copies).",
        [
            (vec![("device", "cache"), ("direction", "read")], m.ssd_read),
            (vec![("device", "cache"), ("direction", "write")], m.ssd_written),
            (vec![("device", "backing"), ("direction", "read")], m.hdd_read),
            (vec![("device", "backing"), ("direction", "write")], m.hdd_written),
        ],
    )?;
    counters(
        e,
        "ssdcache_segment_copies",
        "Whole segments copied: backing to cache (fill) and cache to backing (write_back).",
        [(vec![("kind", "fill")], m.filled), (vec![("kind", "write_back")], m.written_back)],
    )?;
    counters(
        e,
        "ssdcache_dirty_evictions",
        "Write-back with a replacement policy: misses whose victim was dirty and waited for its write-back \
         (the cleaner's max-dirty keeps clean victims at hand).",
        one(m.dirty_evictions),
    )?;
    counters(
        e,
        "ssdcache_trimmed_bytes",
        "Bytes clients' trims discarded on the backing store (serve --trim pass).",
        one(m.trimmed_bytes),
    )?;
    counters(
        e,
        "ssdcache_zeroed_bytes",
        "Bytes write-zeroes made zero on the backing store without writing them (a hole or a zeroed range).",
        one(m.zeroed_bytes),
    )?;
    counters(
        e,
        "ssdcache_trim_dropped_segments",
        "Cached segments dropped because a trim or write-zeroes covered them wholly (dirty ones are not written back).",
        one(m.trim_dropped_segments),
    )?;
    counters(
        e,
        "ssdcache_cache_hint_fills",
        "Segments filled at once for NBD_CMD_CACHE hints (replacement modes; PWC counts the reference instead).",
        one(st.cache_hint_fills),
    )?;
    counters(
        e,
        "ssdcache_device_errors",
        "I/O errors of each device since start.",
        [(vec![("device", "cache")], m.ssd_errors), (vec![("device", "backing")], m.hdd_errors)],
    )?;

    // The cache's state.
    gauges(e, "ssdcache_segment_size_bytes", "Bytes per segment.", one(seg as f64))?;
    gauges(e, "ssdcache_cache_slots", "Segment slots on the cache device.", one(st.ssd_segments as f64))?;
    gauges(e, "ssdcache_cached_segments", "Slots holding a segment.", one(m.cached as f64))?;
    gauges(
        e,
        "ssdcache_dirty_segments",
        "Cached segments holding writes not yet on the backing device.",
        one(m.dirty as f64),
    )?;
    gauges(e, "ssdcache_dirty_bytes", "Bytes of the dirty segments (whole segments).", one((m.dirty * seg) as f64))?;
    gauges(
        e,
        "ssdcache_degraded",
        "1 if the cache device failed and the cache is degraded.",
        one(m.degraded as u8 as f64),
    )?;
    gauges(e, "ssdcache_metadata_version", "The last durable metadata version.", one(m.version as f64))?;

    // Procedures.
    gauges(
        e,
        "ssdcache_procedure_running",
        "1 while a caching-and-eviction procedure runs.",
        one(m.in_procedure as u8 as f64),
    )?;
    counters(
        e,
        "ssdcache_procedure_runs",
        "Runs of the caching-and-eviction procedure and of write-backs of every dirty segment (flush), by result.",
        st.procedure_runs.iter().flat_map(|p| {
            [
                (vec![("procedure", p.procedure), ("result", "completed")], p.completed),
                (vec![("procedure", p.procedure), ("result", "failed")], p.failed),
            ]
        }),
    )?;
    histograms(
        e,
        "ssdcache_procedure_duration_seconds",
        "How long each run of a procedure took, completed or not.",
        st.procedure_runs.iter().map(|p| (vec![("procedure", p.procedure)], &p.duration)),
    )?;
    // The background cleaner (write-back with --max-dirty / --dirty-age).
    if let Some(c) = &st.cleaner {
        counters(
            e,
            "ssdcache_cleaner_segments",
            "Dirty segments the background cleaner wrote back, by why they were due.",
            [(vec![("reason", "too_many")], c.cleaned_too_many), (vec![("reason", "too_old")], c.cleaned_too_old)],
        )?;
        counters(e, "ssdcache_cleaner_bytes", "Bytes the background cleaner wrote back.", one(c.cleaned_bytes))?;
        gauges(
            e,
            "ssdcache_cleaner_running",
            "1 while the background cleaner has due segments (writing back, yielding, rate-limited or backing off).",
            one(c.running as u8 as f64),
        )?;
        gauges(
            e,
            "ssdcache_oldest_dirty_seconds",
            "How long the oldest dirty segment has been dirty (0 when none is).",
            one(c.oldest_dirty_age.unwrap_or(0.0)),
        )?;
    }

    // The live what-if: each policy's miss ratio at each size, since the start.
    if let Some(w) = &st.whatif {
        let points: Vec<(&str, String, f64)> = w
            .since_start
            .iter()
            .flat_map(|c| {
                c.points.iter().filter_map(|p| Some((c.policy.as_str(), p.cache_bytes.to_string(), p.miss_ratio?)))
            })
            .collect();
        gauges(
            e,
            "ssdcache_whatif_miss_ratio",
            "The what-if shadow's miss ratio (segment accesses, since the start) of a policy at a cache size.",
            points.iter().map(|(p, b, r)| (vec![("policy", *p), ("cache_bytes", b.as_str())], *r)),
        )?;
        counters(e, "ssdcache_whatif_dropped", "Requests the what-if shadow's full queue dropped.", one(w.dropped))?;
    }
    if let Some(r) = &st.recording {
        counters(e, "ssdcache_record_events", "Requests and markers written to the recording.", one(r.records))?;
        counters(e, "ssdcache_record_dropped", "Requests the recording's full queue dropped.", one(r.dropped))?;
    }

    // Connections.
    let c = &s.connections;
    gauges(e, "ssdcache_connections_open", "NBD connections open now.", one(c.open as f64))?;
    gauges(e, "ssdcache_connections_negotiating", "Of them, still negotiating.", one(c.negotiating as f64))?;
    counters(e, "ssdcache_connections_accepted", "NBD connections admitted since start.", one(c.accepted))?;
    counters(
        e,
        "ssdcache_connections_refused",
        "NBD connections refused because the server was full.",
        one(c.refused),
    )?;
    counters(
        e,
        "ssdcache_connections_displaced",
        "NBD connections closed to admit a newer one (negotiating too long, or idle in a full server).",
        one(c.displaced),
    )?;
    counters(
        e,
        "ssdcache_requests_rejected",
        "NBD requests answered with an error before reaching the engine (out of range, unknown command, \
         bad flags, over the maximum block size); not in ssdcache_requests.",
        one(c.rejected),
    )?;
    gauges(e, "ssdcache_uptime_seconds", "Seconds since the cache opened.", one(st.uptime))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_text_names_counter_metadata_after_the_samples() {
        let om = "# HELP a_requests Requests.\n# TYPE a_requests counter\na_requests_total{op=\"read\"} 3\n\
                  # HELP a_dirty Dirty.\n# TYPE a_dirty gauge\na_dirty 2.0\n# EOF\n";
        assert_eq!(
            to_classic(om),
            "# HELP a_requests_total Requests.\n# TYPE a_requests_total counter\na_requests_total{op=\"read\"} 3\n\
             # HELP a_dirty Dirty.\n# TYPE a_dirty gauge\na_dirty 2.0\n"
        );
    }
}
