//! Printing reports: a detail table for one run, a row per run for sweeps, JSON lines, CSV.

use anyhow::Result;
use ssdcache::metrics::Report;
use ssdcache::units::format_bytes;
use std::io::Write;

fn pct(x: f64) -> String {
    format!("{:.2}%", 100.0 * x)
}

/// Groups digits: 1234567 -> 1,234,567.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Paper 003's DRAM + NVRAM caches: hits by tier and moves between tiers
/// (printed only when the policy has tiers).
fn tier_rows(r: &Report) {
    let c = &r.counters;
    let tiered = [
        c.read_hits_dram,
        c.read_hits_nvram,
        c.write_hits_dram,
        c.write_hits_nvram,
        c.migrations_to_nvram,
        c.migrations_to_dram,
    ];
    if tiered.iter().all(|&n| n == 0) {
        return;
    }
    let rows: Vec<(&str, String)> = vec![
        (
            "read hits by tier",
            format!("{} in DRAM, {} in NVRAM", thousands(c.read_hits_dram), thousands(c.read_hits_nvram)),
        ),
        (
            "write hits by tier",
            format!(
                "{} in DRAM (moved to NVRAM: Table 1 counts them as write misses), {} in NVRAM",
                thousands(c.write_hits_dram),
                thousands(c.write_hits_nvram)
            ),
        ),
        (
            "tier moves",
            format!(
                "{} DRAM->NVRAM (Write Purge), {} NVRAM->DRAM (Write Global)",
                thousands(c.migrations_to_nvram),
                thousands(c.migrations_to_dram)
            ),
        ),
    ];
    for (k, v) in rows {
        println!("{k:<22} {v}");
    }
}

/// How a run's cache was sized and what its warm-up skipped (`--cache N%`, `--warmup`).
fn sizing_note(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(f) = r.footprint_pages {
        out.push(format!("footprint {} pages", thousands(f)));
    }
    if let Some(w) = &r.warmup {
        out.push(format!("warm-up {w}: first {} requests uncounted", thousands(r.warmup_requests)));
    }
    out
}

/// One run, one line per number.
pub fn detail(r: &Report) {
    let c = &r.counters;
    let share = r.cache_share.map(|s| format!(" ({}% of the footprint)", s * 100.0)).unwrap_or_default();
    let rows: Vec<(&str, String)> = vec![
        ("trace", format!("{} ({})", r.trace, r.format)),
        ("policy", format!("{} ({})", r.policy, r.mode)),
        (
            "cache",
            format!(
                "{} = {} pages of {}{share}",
                format_bytes(r.cache_bytes),
                thousands(r.capacity_pages),
                format_bytes(r.page_bytes)
            ),
        ),
        ("sizing", sizing_note(r).join("; ")),
        (
            "requests",
            format!(
                "{} ({} read, {} write, {} trim)",
                thousands(c.requests),
                thousands(c.read_requests),
                thousands(c.write_requests),
                thousands(c.trim_requests)
            ),
        ),
        (
            "page accesses",
            format!("{} ({} read, {} write)", thousands(c.pages), thousands(c.read_pages), thousands(c.write_pages)),
        ),
        (
            "hit ratio",
            format!(
                "{}  (read {}, write {}; requests fully hit {})",
                pct(r.hit_ratio),
                pct(r.read_hit_ratio),
                pct(r.write_hit_ratio),
                pct(r.request_hit_ratio)
            ),
        ),
        ("hits / misses", format!("{} / {}", thousands(c.hits), thousands(r.misses))),
        (
            "served by the cache",
            format!(
                "{} of page accesses, {} of bytes  (no backing I/O for the access's own data)",
                pct(r.served_ratio),
                pct(r.served_bytes_ratio)
            ),
        ),
        ("write hits to backing", format!("{}  (hits that still wrote backing)", thousands(c.write_hits_to_backing))),
        (
            "backing reads",
            format!("{} pages (of which read-for-write {})", thousands(c.backing_reads), thousands(c.read_for_write)),
        ),
        (
            "backing writes",
            format!("{} pages (dirty write-backs {})", thousands(c.backing_writes), thousands(c.dirty_writebacks)),
        ),
        ("evictions", thousands(c.evictions)),
        ("cache writes", thousands(c.cache_writes)),
        ("drain writes", format!("{} pages (written back at the end, not counted above)", thousands(c.drain_writes))),
        ("read-replace-dirty", format!("{}  (x2)", thousands(c.read_replace_dirty))),
        ("read-overwrite-clean", format!("{}  (x1)", thousands(c.read_overwrite_clean))),
        ("write-replace-dirty", format!("{}  (x1)", thousands(c.write_replace_dirty))),
        ("write-overwrite-clean", format!("{}  (x0)", thousands(c.write_overwrite_clean))),
        ("backing accesses", format!("{}  (paper 003: 2*RRD + ROC + WRD)", thousands(r.backing_accesses))),
    ];
    // (the sizing row only when there is something to say)
    for (k, v) in rows.into_iter().filter(|(k, v)| *k != "sizing" || !v.is_empty()) {
        println!("{k:<22} {v}");
    }
    tier_rows(r);
    if let Some(d) = &r.device {
        let s = &d.stats;
        let rows: Vec<(&str, String)> = vec![
            ("device", d.device.clone()),
            ("device page reads", thousands(s.host_page_reads)),
            (
                "device page writes",
                format!(
                    "{} host + {} extra (GC copies)",
                    thousands(s.host_page_writes),
                    thousands(s.extra_page_writes)
                ),
            ),
            ("erases", thousands(s.erases)),
            (
                "merges",
                format!(
                    "{} switch, {} partial, {} full (hybrid FTL)",
                    thousands(s.switch_merges),
                    thousands(s.partial_merges),
                    thousands(s.full_merges)
                ),
            ),
            ("write amplification", format!("{:.3}", s.write_amplification)),
            (
                "execution time",
                format!(
                    "{}  (read {}, write {}, extra write {}, erase {})",
                    secs(d.execution_time_ns),
                    secs(s.read_time),
                    secs(s.write_time),
                    secs(s.extra_write_time),
                    secs(s.erase_time)
                ),
            ),
        ];
        for (k, v) in rows {
            println!("{k:<22} {v}");
        }
        if s.physical_pages > 0 {
            // What GC had to work with: the nominal spare, and the never-written
            // (or trimmed) logical pages that act as more.
            println!(
                "{:<22} physical/logical {:.3}; {:.1}% of logical pages unwritten at the end → physical/written {:.3}",
                "effective spare",
                s.physical_per_logical,
                100.0 * s.unwritten_share,
                s.physical_per_written
            );
        }
        if s.precondition_page_writes > 0 {
            println!(
                "{:<22} {} host page writes, {} programs (WA {:.3} at its end); not counted above",
                "preconditioned",
                thousands(s.precondition_host_page_writes),
                thousands(s.precondition_page_writes),
                s.precondition_write_amplification
            );
        }
        if s.out_of_range_pages > 0 {
            println!(
                "{:<22} {} pages past the device's end (not charged)",
                "out of range",
                thousands(s.out_of_range_pages)
            );
        }
    }
    if let Some(q) = &r.queue {
        let rows: Vec<(&str, String)> = vec![
            (
                "queue",
                format!(
                    "NCQ depth {}, inter-arrival x{}{}",
                    q.queue_depth,
                    q.iat_scale,
                    if q.all_at_once { " (all timestamps equal: all arrive at once)" } else { "" }
                ),
            ),
            (
                "completed",
                format!(
                    "{} requests in {}  (device busy {:.1}%)",
                    thousands(q.completed_requests),
                    dur(q.makespan_ns as f64),
                    100.0 * q.utilization
                ),
            ),
            ("IOPS", format!("{:.1}", q.iops)),
            ("bandwidth", format!("{:.2} MB/s  (write {:.2} MB/s)", q.bandwidth_mb_s, q.write_bandwidth_mb_s)),
            (
                "latency",
                format!(
                    "mean {}, p50 {}, p99 {}, max {}",
                    dur(q.latency_mean_ns),
                    dur(q.latency_p50_ns as f64),
                    dur(q.latency_p99_ns as f64),
                    dur(q.latency_max_ns as f64)
                ),
            ),
            ("avg queue length", format!("{:.2}", q.avg_queue_length)),
            (
                "host wait",
                format!("mean {}, max {}  (NCQ full)", dur(q.mean_host_wait_ns), dur(q.max_host_wait_ns as f64)),
            ),
        ];
        for (k, v) in rows {
            println!("{k:<22} {v}");
        }
    }
    if c.maintenance_ns > 0 || c.maintenance_reads + c.maintenance_writes + c.maintenance_cache_writes > 0 {
        println!(
            "{:<22} {} pages read from backing, {} written back, {} written to the cache; {}",
            "maintenance",
            thousands(c.maintenance_reads),
            thousands(c.maintenance_writes),
            thousands(c.maintenance_cache_writes),
            secs(c.maintenance_ns)
        );
    }
    if let Some(d) = &r.cache_device {
        println!(
            "{:<22} {}: {} page reads, {} page writes, {} erases; {}",
            "cache device",
            d.cache_device,
            thousands(d.cache_device_page_reads),
            thousands(d.cache_device_page_writes),
            thousands(d.cache_device_erases),
            secs(d.cache_device_time_ns)
        );
    }
    if let Some(p) = r.write_share_mean {
        println!("{:<22} {:.2}% of the cache (mean over page accesses)", "write share P", 100.0 * p);
    }
    if r.skipped > 0 {
        println!("{:<22} {}", "skipped lines", thousands(r.skipped));
    }
    if let Some(note) = &r.trace_note {
        println!("{:<22} {note}", "note");
    }
    if !r.series.is_empty() {
        series(r);
    }
}

/// The per-interval series of one run.
fn series(r: &Report) {
    // (policies with an adaptive split, ABM's P, get its mean share per interval)
    let split = r.series.iter().any(|b| b.write_share.is_some());
    println!(
        "\n{:>9} {:>10} {:>8} {:>8} {:>8} {:>12} {:>12} {:>12}{}",
        "interval",
        "requests",
        "hit%",
        "read%",
        "served%",
        "mean lat ms",
        "maint s",
        "MB/s",
        if split { format!(" {:>8}", "P%") } else { String::new() }
    );
    // (only intervals with requests are listed: their numbers say which)
    for b in &r.series {
        println!(
            "{:>9} {:>10} {:>8.2} {:>8.2} {:>8.2} {:>12.3} {:>12.3} {:>12.2}{}",
            b.interval,
            thousands(b.requests),
            100.0 * b.hit_ratio,
            100.0 * b.read_hit_ratio,
            100.0 * b.served_ratio,
            b.mean_latency_ns / 1e6,
            b.maintenance_ns as f64 / 1e9,
            b.throughput_mb_s,
            match (split, b.write_share) {
                (true, Some(p)) => format!(" {:>8.2}", 100.0 * p),
                (true, None) => format!(" {:>8}", "-"),
                _ => String::new(),
            }
        );
    }
}

/// Nanoseconds in the unit that suits them.
fn dur(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Nanoseconds as seconds with three decimals.
fn secs(ns: u64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

/// A row per run.
pub fn table(reports: &[Report]) {
    let multi_trace = reports.iter().any(|r| r.trace != reports[0].trace);
    let multi_mode = reports.iter().any(|r| r.mode != reports[0].mode);
    let mut header = vec![];
    if multi_trace {
        header.push("trace");
    }
    header.extend(["policy", "cache"]);
    if multi_mode {
        header.push("mode");
    }
    header.extend([
        "hit%",
        "read%",
        "write%",
        "served%",
        "bk reads",
        "bk writes",
        "writebacks",
        "RRD",
        "ROC",
        "WRD",
        "WOC",
        "bk accesses",
    ]);
    let with_device = reports.iter().any(|r| r.device.is_some());
    if with_device {
        header.extend(["erases", "GC writes", "WA", "exec s"]);
    }
    let with_queue = reports.iter().any(|r| r.queue.is_some());
    if with_queue {
        header.extend(["QD", "iat x", "avg QL", "IOPS", "MB/s", "wMB/s", "lat ms", "p99 ms"]);
    }
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in reports {
        let c = &r.counters;
        let mut row = vec![];
        if multi_trace {
            row.push(short_name(&r.trace));
        }
        row.extend([r.policy.clone(), format_bytes(r.cache_bytes)]);
        if multi_mode {
            row.push(r.mode.clone());
        }
        row.extend([
            format!("{:.2}", 100.0 * r.hit_ratio),
            format!("{:.2}", 100.0 * r.read_hit_ratio),
            format!("{:.2}", 100.0 * r.write_hit_ratio),
            format!("{:.2}", 100.0 * r.served_ratio),
            thousands(c.backing_reads),
            thousands(c.backing_writes),
            thousands(c.dirty_writebacks),
            thousands(c.read_replace_dirty),
            thousands(c.read_overwrite_clean),
            thousands(c.write_replace_dirty),
            thousands(c.write_overwrite_clean),
            thousands(r.backing_accesses),
        ]);
        if with_device {
            match &r.device {
                Some(d) => row.extend([
                    thousands(d.stats.erases),
                    thousands(d.stats.extra_page_writes),
                    format!("{:.3}", d.stats.write_amplification),
                    format!("{:.3}", d.execution_time_ns as f64 / 1e9),
                ]),
                None => row.extend(std::iter::repeat_n(String::new(), 4)),
            }
        }
        if with_queue {
            match &r.queue {
                Some(q) => row.extend([
                    q.queue_depth.to_string(),
                    q.iat_scale.to_string(),
                    format!("{:.2}", q.avg_queue_length),
                    format!("{:.1}", q.iops),
                    format!("{:.2}", q.bandwidth_mb_s),
                    format!("{:.2}", q.write_bandwidth_mb_s),
                    format!("{:.3}", q.latency_mean_ns / 1e6),
                    format!("{:.3}", q.latency_p99_ns as f64 / 1e6),
                ]),
                None => row.extend(std::iter::repeat_n(String::new(), 8)),
            }
        }
        rows.push(row);
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap()).collect();
    let text_cols = if multi_trace { 2 } else { 1 };
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                if i < text_cols {
                    format!("{cell:<w$}", w = widths[i])
                } else {
                    format!("{cell:>w$}", w = widths[i])
                }
            })
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
    let mut context = vec![format!("page {}", format_bytes(reports[0].page_bytes))];
    if !multi_trace {
        context.insert(0, format!("trace {} ({})", reports[0].trace, reports[0].format));
    }
    if !multi_mode {
        context.push(format!("mode {}", reports[0].mode));
    }
    if let Some(d) = reports.iter().find_map(|r| r.device.as_ref()) {
        context.push(format!("device {}", d.device));
    }
    context.extend(sizing_note(&reports[0]));
    println!("\n{}", context.join("; "));
    if with_queue {
        println!("QD: NCQ depth; iat x: inter-arrival scale; avg QL: time-weighted commands in the NCQ; lat: mean completion - arrival");
    }
    println!("RRD/ROC/WRD/WOC: paper 003's read-replace-dirty, read-overwrite-clean, write-replace-dirty, write-overwrite-clean; bk accesses = 2*RRD + ROC + WRD");
}

fn short_name(trace: &str) -> String {
    let base = trace.rsplit('/').next().unwrap_or(trace);
    if base.chars().count() > 40 {
        format!("{}…", base.chars().take(39).collect::<String>())
    } else {
        base.to_string()
    }
}

pub fn json<T: serde::Serialize>(reports: &[T]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for r in reports {
        serde_json::to_writer(&mut out, r)?;
        writeln!(out)?;
    }
    Ok(())
}

fn csv_cell(v: &serde_json::Value) -> String {
    let s = match v {
        serde_json::Value::String(s) => s.clone(),
        // (a field only some runs have, e.g. ABM's write_share_mean: an empty cell)
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    };
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

pub fn csv(reports: &[Report]) -> Result<()> {
    // (a series is a list per run: --json carries it)
    csv_rows(reports, &["series"])
}

/// Prints `rows` as CSV: a header from the first row's fields, then one line
/// per row; fields named in `drop` are left out.
pub fn csv_rows<T: serde::Serialize>(rows: &[T], drop: &[&str]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for (i, r) in rows.iter().enumerate() {
        let serde_json::Value::Object(mut map) = serde_json::to_value(r)? else { unreachable!() };
        for field in drop {
            map.remove(*field);
        }
        if i == 0 {
            writeln!(out, "{}", map.keys().cloned().collect::<Vec<_>>().join(","))?;
        }
        writeln!(out, "{}", map.values().map(csv_cell).collect::<Vec<_>>().join(","))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_groups() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn csv_quotes_specs_with_commas() {
        assert_eq!(csv_cell(&serde_json::json!("2q(kin=25%,kout=50%)")), "\"2q(kin=25%,kout=50%)\"");
        assert_eq!(csv_cell(&serde_json::json!(3)), "3");
    }
}
