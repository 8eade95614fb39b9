//! The control protocol of `ssdcache serve`, with no I/O inside (like
//! `nbd/handshake.rs`): the client sends one line, `status`, `flush`,
//! `flush-stop` (stops a running flush at its next segment: Ctrl-C of
//! `ssdcache flush`), `maintain`, `set ["KEY=VALUE",…]` (a JSON array:
//! `ssdcache set`), `record-start {"path":…,"max_size":…,"keep":…}` or
//! `record-stop` (`ssdcache record`); the server answers one line of JSON, `{"ok":true,...}` with the
//! command's result, or `{"ok":false,"error":"..."}`, and closes. Fed bytes,
//! tested here; [`super::socket`] moves them.

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::metrics::snapshot::{Snapshot, Source};
use ssdcache_engine::datapath::FlushProgress;
use ssdcache_engine::model_device::ModelDevice;
use ssdcache_engine::record::{RecordConfig, RecordStatus};
use ssdcache_engine::{files, CacheMode, FileCache, FileDevice, MaintainReport, Superblock};

/// The longest command line read.
pub const MAX_LINE: u64 = 4096;

/// A command a client can send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// The engine's state.
    Status,
    /// Write every dirty segment back now.
    Flush,
    /// Run the caching-and-eviction procedure now.
    Maintain,
    /// Stop a running `flush` at its next segment.
    FlushStop,
    /// Change settings now and keep them (`KEY=VALUE` each).
    Set(Vec<String>),
    /// Start recording every request.
    RecordStart(RecordConfig),
    /// Stop the recording.
    RecordStop,
}

impl Command {
    /// Parses a command line (surrounding whitespace ignored).
    pub fn parse(line: &str) -> Result<Command, String> {
        match line.trim() {
            "status" => Ok(Command::Status),
            "flush" => Ok(Command::Flush),
            "maintain" => Ok(Command::Maintain),
            "flush-stop" => Ok(Command::FlushStop),
            "record-stop" => Ok(Command::RecordStop),
            other => {
                if let Some(list) = other.strip_prefix("set ") {
                    return serde_json::from_str::<Vec<String>>(list)
                        .map(Command::Set)
                        .map_err(|e| format!("set: expected a JSON array of \"KEY=VALUE\" strings: {e}"));
                }
                if let Some(cfg) = other.strip_prefix("record-start ") {
                    return serde_json::from_str::<RecordConfig>(cfg)
                        .map(Command::RecordStart)
                        .map_err(|e| format!("record-start: expected {{\"path\":…,\"max_size\":…,\"keep\":…}}: {e}"));
                }
                let shown: String = other.chars().take(40).collect();
                Err(format!(
                    "unknown command `{shown}` (status, flush, flush-stop, maintain, set, record-start, record-stop)"
                ))
            }
        }
    }
}

/// What the commands act on: the engine (a trait so that the protocol is
/// tested without a cache).
pub trait Controlled {
    /// `status`: the same snapshot `/metrics` is rendered from.
    fn status(&self) -> Snapshot;
    /// `flush`: how far it got.
    fn write_back(&self) -> io::Result<FlushProgress>;
    /// `flush-stop`: stops a running flush at its next segment; whether one ran.
    fn stop_write_back(&self) -> bool;
    /// `maintain`.
    fn maintain(&self) -> io::Result<MaintainReport>;
    /// `set`: every assignment applied and kept, or none; the settings kept.
    fn set(&self, assignments: &[String]) -> Result<Vec<String>, String>;
    /// `record-start`, `record-stop`.
    fn record_start(&self, config: RecordConfig) -> Result<RecordStatus, String>;
    fn record_stop(&self) -> Result<RecordStatus, String>;
}

/// A served cache: the engine, its file, and where its snapshots come from
/// (the engine and the NBD server's connections).
pub struct Served {
    pub cache: Arc<FileCache>,
    pub path: PathBuf,
    pub source: Source,
    /// One `set` at a time (each reads, changes and writes the superblock).
    pub setting: Mutex<()>,
}

impl Controlled for Served {
    fn status(&self) -> Snapshot {
        self.source.snapshot()
    }
    fn write_back(&self) -> io::Result<FlushProgress> {
        self.cache.write_back()
    }
    fn stop_write_back(&self) -> bool {
        self.cache.stop_write_back()
    }
    fn maintain(&self) -> io::Result<MaintainReport> {
        self.cache.maintain()
    }
    /// Checks the new configuration against the cache, keeps the settings in
    /// the superblock (both copies), then applies them: a refusal at any
    /// step before the last changes nothing. `mode=…` switches the mode too
    /// (writing dirty segments back first when leaving write-back), before
    /// the other settings are kept.
    fn set(&self, assignments: &[String]) -> Result<Vec<String>, String> {
        // One at a time; a second is refused rather than queued behind a
        // mode switch that may be writing back for minutes.
        let _one = match self.setting.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::WouldBlock) => {
                return Err("another `set` is running (a mode switch writes dirty segments back first): \
                            try again when it ends"
                    .into())
            }
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        };
        let named = |e: std::io::Error| format!("{}: {e}", self.path.display());
        let dev = FileDevice::open(&self.path).map_err(named)?;
        let sb = Superblock::read(&dev).map_err(named)?;
        let mut kept = sb.settings.get();
        let mut config = self.cache.config();
        let mut mode = None;
        for a in assignments {
            match a.trim().strip_prefix("mode=") {
                Some(m) => mode = Some(m.trim().parse::<CacheMode>().map_err(|e| format!("{a}: {e}"))?),
                None => {
                    let key = kept.assign(a)?;
                    kept.set_in(key, &mut config);
                }
            }
        }
        match mode {
            Some(to) => {
                let persist = |m: CacheMode| files::write_mode(&dev, m).map(drop);
                self.cache.switch_mode(to, &config, &persist)?;
                files::write_settings(&dev, &kept)
                    .map_err(|e| format!("mode {} now, but the other settings could not be kept: {e}", to.name()))?;
            }
            None => {
                self.cache.check_config(&config)?;
                files::write_settings(&dev, &kept)
                    .map_err(|e| format!("the settings could not be kept, nothing changed: {e}"))?;
                self.cache.reconfigure(&config)?;
            }
        }
        log::info!("control: set {}", assignments.join(" "));
        let mut out = vec![format!("mode={}", self.cache.mode().name())];
        out.extend(kept.describe());
        Ok(out)
    }
    fn record_start(&self, config: RecordConfig) -> Result<RecordStatus, String> {
        self.cache.start_recording(config)
    }
    fn record_stop(&self) -> Result<RecordStatus, String> {
        self.cache.stop_recording()
    }
}

/// The benchmark's slow backing (`serve --backing-model`), whose modelled
/// busy time `status` reports.
pub trait BackingModel {
    /// Its state, as JSON.
    fn report(&self) -> Value;
}

impl BackingModel for ModelDevice<FileDevice> {
    fn report(&self) -> Value {
        let s = self.stats();
        json!({
            "spec": self.describe(), "reads": s.reads, "writes": s.writes,
            "busy_s": s.busy_ns as f64 / 1e9, "queued_s": s.queued_ns as f64 / 1e9,
        })
    }
}

/// Runs one command (blocking: flush and maintain copy data) and returns
/// the answer.
pub fn answer(cmd: Result<Command, String>, engine: &dyn Controlled, model: Option<&dyn BackingModel>) -> Value {
    let fail = |e: String| json!({"ok": false, "error": e});
    match cmd {
        Err(e) => fail(e),
        Ok(Command::Status) => {
            let mut status = serde_json::to_value(engine.status()).unwrap_or(Value::Null);
            if let Some(m) = model {
                status["backing_model"] = m.report();
            }
            json!({"ok": true, "pid": std::process::id(), "status": status})
        }
        Ok(Command::Flush) => match engine.write_back() {
            Ok(p) => {
                log::info!("control: flush wrote back {} of {} segment(s)", p.written_back, p.total);
                json!({"ok": true, "written_back": p.written_back, "total": p.total, "interrupted": p.interrupted})
            }
            Err(e) => fail(e.to_string()),
        },
        Ok(Command::FlushStop) => json!({"ok": true, "was_running": engine.stop_write_back()}),
        Ok(Command::Maintain) => match engine.maintain() {
            Ok(r) => json!({"ok": true, "report": r}),
            Err(e) => fail(e.to_string()),
        },
        Ok(Command::Set(list)) => match engine.set(&list) {
            Ok(kept) => json!({"ok": true, "settings": kept}),
            Err(e) => fail(e),
        },
        Ok(Command::RecordStart(cfg)) => match engine.record_start(cfg) {
            Ok(st) => json!({"ok": true, "recording": st}),
            Err(e) => fail(e),
        },
        Ok(Command::RecordStop) => match engine.record_stop() {
            Ok(st) => json!({"ok": true, "recording": st}),
            Err(e) => fail(e),
        },
    }
}

/// An answer as the line sent back.
pub fn encode(answer: &Value) -> Vec<u8> {
    let mut out = answer.to_string().into_bytes();
    out.push(b'\n');
    out
}

/// A client's reading of an answer line: `Ok(Ok(v))` done, `Ok(Err(why))`
/// refused by the server, `Err` not an answer at all.
pub fn decode(line: &str) -> Result<Result<Value, String>, serde_json::Error> {
    let v: Value = serde_json::from_str(line.trim())?;
    Ok(if v["ok"] == json!(true) { Ok(v) } else { Err(v["error"].as_str().unwrap_or("no reason given").to_string()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::snapshot::Connections;
    use ssdcache_engine::datapath::MapStatus;
    use ssdcache_engine::{CacheMode, EngineStatus};
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Fake {
        flushes: AtomicU64,
        fail: bool,
    }

    impl Controlled for Fake {
        fn status(&self) -> Snapshot {
            let engine = EngineStatus {
                mode: CacheMode::WriteBack,
                policy: "pwc".into(),
                segment_size: 1 << 20,
                ssd_segments: 8,
                hdd_segments: 64,
                map: MapStatus { cached: 3, dirty: 1, ..Default::default() },
                last_maintenance: None,
                last_report: None,
                next_maintenance: None,
                idle: None,
                uptime: 1.5,
                cache_hints: 0,
                cache_hint_fills: 0,
                requests: Vec::new(),
                procedure_runs: Vec::new(),
                cleaner: None,
                recording: None,
                whatif: None,
            };
            Snapshot { engine, connections: Connections { open: 2, accepted: 5, ..Default::default() } }
        }
        fn write_back(&self) -> io::Result<FlushProgress> {
            if self.fail {
                return Err(io::Error::other("backing device error"));
            }
            let n = self.flushes.fetch_add(1, Ordering::Relaxed) + 2;
            Ok(FlushProgress { written_back: n, total: n + 1, interrupted: true })
        }
        fn stop_write_back(&self) -> bool {
            !self.fail
        }
        fn maintain(&self) -> io::Result<MaintainReport> {
            Ok(MaintainReport { plan: vec![(0, 5)], cached: 4, seconds: 0.25 })
        }
        fn set(&self, assignments: &[String]) -> Result<Vec<String>, String> {
            if self.fail {
                return Err("refused".into());
            }
            Ok(assignments.to_vec())
        }
        fn record_start(&self, config: RecordConfig) -> Result<RecordStatus, String> {
            match self.fail {
                true => Err("refused".into()),
                false => Ok(RecordStatus { path: config.path, running: true, ..Default::default() }),
            }
        }
        fn record_stop(&self) -> Result<RecordStatus, String> {
            Err("no recording runs".into())
        }
    }

    fn round_trip(line: &str, engine: &Fake) -> Result<Value, String> {
        let sent = encode(&answer(Command::parse(line), engine, None));
        assert_eq!(sent.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
        decode(std::str::from_utf8(&sent).unwrap()).expect("an answer")
    }

    #[test]
    fn commands_round_trip_through_one_line_each() {
        let ok = Fake { flushes: AtomicU64::new(0), fail: false };
        let v = round_trip("status\n", &ok).unwrap();
        assert_eq!((v["status"]["cached"].as_u64(), v["status"]["dirty"].as_u64()), (Some(3), Some(1)));
        assert_eq!(v["status"]["mode"], "write-back");
        assert_eq!(
            (v["status"]["connections"]["open"].as_u64(), v["status"]["connections"]["accepted"].as_u64()),
            (Some(2), Some(5))
        );
        let f = round_trip(" flush ", &ok).unwrap();
        assert_eq!(
            (f["written_back"].as_u64(), f["total"].as_u64(), f["interrupted"].as_bool()),
            (Some(2), Some(3), Some(true))
        );
        assert_eq!(round_trip("flush-stop", &ok).unwrap()["was_running"], true);
        assert_eq!(
            round_trip("flush-stop", &Fake { flushes: AtomicU64::new(0), fail: true }).unwrap()["was_running"],
            false
        );
        assert_eq!(round_trip("maintain", &ok).unwrap()["report"]["plan"], json!([[0, 5]]));
        let bad = Fake { flushes: AtomicU64::new(0), fail: true };
        assert_eq!(round_trip("flush", &bad).unwrap_err(), "backing device error");
        let set = round_trip(r#"set ["policy=lru","max-dirty=20%"]"#, &ok).unwrap();
        assert_eq!(set["settings"], json!(["policy=lru", "max-dirty=20%"]));
        assert_eq!(round_trip(r#"set ["policy=lru"]"#, &bad).unwrap_err(), "refused");
        assert!(round_trip("set policy=lru", &ok).unwrap_err().starts_with("set: expected a JSON array"));
        let rec = round_trip(r#"record-start {"path":"/tmp/r.zst","max_size":null,"keep":4}"#, &ok).unwrap();
        assert_eq!(
            (rec["recording"]["path"].as_str(), rec["recording"]["running"].as_bool()),
            (Some("/tmp/r.zst"), Some(true))
        );
        assert!(round_trip("record-start /tmp/r", &ok).unwrap_err().starts_with("record-start: expected"));
        assert_eq!(round_trip("record-stop", &ok).unwrap_err(), "no recording runs");
    }

    #[test]
    fn unknown_commands_and_garbage_answers_are_named() {
        let ok = Fake { flushes: AtomicU64::new(0), fail: false };
        let e = round_trip("format everything", &ok).unwrap_err();
        assert!(e.starts_with("unknown command `format everything`"), "{e}");
        let long = "x".repeat(10_000);
        assert!(round_trip(&long, &ok).unwrap_err().len() < 160, "the echo is bounded");
        assert!(decode("not json").is_err());
        assert_eq!(decode("{\"ok\":false}").unwrap().unwrap_err(), "no reason given");
    }
}
