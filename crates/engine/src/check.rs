//! `ssdcache check`: every superblock and metadata copy of a cache file read
//! and judged, offline. Says "clean" only when a proven-current save says so;
//! healthy means the cache can start.

use serde_json::{json, Map, Value};

use crate::device::BlockDevice;
use crate::recover;
use crate::superblock::Superblock;

/// What `check` found: the JSON object `check --json` prints (with
/// `healthy`), the text lines of the plain report, and the verdict.
pub struct CheckReport {
    pub healthy: bool,
    pub lines: Vec<String>,
    pub json: Map<String, Value>,
}

/// Reads every copy on `dev` (a cache file) and judges whether it can start.
pub fn check(dev: &impl BlockDevice) -> CheckReport {
    let mut json = Map::new();
    let mut lines = Vec::new();
    let healthy = check_into(dev, &mut json, &mut lines);
    json.insert("healthy".into(), healthy.into());
    CheckReport { healthy, lines, json }
}

/// Fills `out` (JSON) and `lines` (text); returns whether the cache can start.
fn check_into(dev: &impl BlockDevice, out: &mut Map<String, Value>, lines: &mut Vec<String>) -> bool {
    out.insert("clean".into(), false.into());
    let read = match Superblock::read_either(dev) {
        Ok(r) => r,
        Err(e) => {
            lines.push(format!("superblock: {e}"));
            out.insert("error".into(), e.to_string().into());
            return false;
        }
    };
    let sb = read.sb;
    let g = sb.geometry;
    lines.push(format!(
        "superblock: {} cache, segment {} bytes, {} SSD segments, {} HDD segments, metadata at {} and {}, data at {}",
        sb.mode.name(),
        g.segment_size,
        g.ssd_segments,
        g.hdd_segments,
        sb.meta_offset,
        sb.mirror_offset,
        sb.data_offset
    ));
    match &read.damaged {
        None => lines.push(format!("superblock copies: both intact (offsets 0 and {})", sb.backup_offset)),
        Some((at, what)) => lines.push(format!(
            "superblock copy at offset {at}: DAMAGED ({what}); the other is intact and `serve` rewrites it"
        )),
    }
    let (supers, metas) = sb.regions();
    out.insert("mode".into(), sb.mode.name().into());
    out.insert(
        "layout".into(),
        json!({"superblock": supers, "metadata": metas, "data": [sb.data_offset, sb.data_end() - sb.data_offset]}),
    );
    out.insert(
        "superblock_damaged".into(),
        json!(read.damaged.as_ref().map(|d| json!({"offset": d.0, "defect": d.1}))),
    );
    let store = match sb.store(dev) {
        Ok(s) => s,
        Err(e) => {
            lines.push(format!("metadata: {e}"));
            return false;
        }
    };
    let mut copies = Vec::new();
    for (slot, pair) in store.read_all().into_iter().enumerate() {
        for (copy, r) in pair.into_iter().enumerate() {
            let name = format!("slot {slot} {}", crate::meta::COPIES[copy]);
            match r {
                Ok(m) => {
                    lines.push(format!(
                        "{name}: version {} checksum ok, clean {}, update {}, degraded {}, procedures {}, evict clock {}, {} of {} slots mapped",
                        m.version, m.clean as u8, m.update as u8, m.degraded as u8, m.procedures, m.evict_hand,
                        m.map.iter().flatten().count(), m.map.len()
                    ));
                    copies.push(json!({"slot": slot, "copy": copy, "version": m.version, "clean": m.clean, "update": m.update, "degraded": m.degraded}));
                }
                Err(e) => {
                    lines.push(format!("{name}: {e}"));
                    copies.push(json!({"slot": slot, "copy": copy, "error": e.to_string()}));
                }
            }
        }
    }
    out.insert("copies".into(), copies.into());
    match recover::load(&store) {
        Ok(l) => {
            let m = &l.meta;
            let state = if m.update {
                "interrupted during caching and eviction: the next start refills the SSD from the backing store (which holds every write)"
            } else if m.clean {
                "clean: shut down cleanly, the backing store holds every write"
            } else {
                "not clean: the SSD may hold writes not yet on the backing store; the next start (or `ssdcache drain`) writes every cached segment back"
            };
            lines.push(format!("in use: version {} (slot {}, proven current); {state}", m.version, l.slot));
            if m.degraded {
                lines.push(
                    "DEGRADED: the cache device failed; nothing new is cached until `serve --clear-degraded`".into(),
                );
            }
            let bad = l.bad_copies();
            if !bad.is_empty() {
                lines.push(format!("damaged or torn copies (the next start rewrites them): {}", bad.join("; ")));
            }
            out.insert("version".into(), m.version.into());
            out.insert("clean".into(), (m.clean && !m.update).into());
            out.insert("update".into(), m.update.into());
            out.insert("degraded".into(), m.degraded.into());
            true
        }
        Err(e) => {
            lines.push(format!("cannot start: {e}"));
            out.insert("error".into(), e.to_string().into());
            false
        }
    }
}
