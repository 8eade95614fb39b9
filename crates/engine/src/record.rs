//! Recording what a server answers (`serve --record PATH`, `ssdcache record
//! CACHE start|stop`): every request, with its outcome, as a trace `sim`,
//! `mrc` and `trace analyze` read (`ssdcache::trace::formats::record`).
//!
//! **Off the request path.** A request hands its [`Event`] to a bounded queue
//! ([`QUEUE`] events, [`crate::tap_queue`]): when the queue is full the event
//! is dropped and counted, and the request never waits. One thread writes.
//!
//! **Readable after a crash.** The thread writes zstd frames, each a whole
//! number of lines, with one `write` call per frame, every second or every
//! [`FRAME_BYTES`] of text: a killed server leaves a file of whole frames (its
//! last second lost), which reads as the prefix it is; `sim` says it lacks
//! the end marker a stopped recording ends with.
//!
//! **Bounded on disk.** With a maximum size, once the file reaches it, it is
//! ended (its end marker), renamed `PATH.1` (an older `PATH.1` becomes
//! `PATH.2`, …, the oldest beyond `keep` is deleted) and a new `PATH` begins,
//! header first: every file is a recording of its own, and the disk holds at
//! most `(keep + 1) × max` bytes. A write that fails (a full disk) stops the
//! recording — said in the log and in `status` — never the server.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::tap_queue::{drain, TapQueue};

use ssdcache::trace::formats::record::{write_line, Outcome, RecordOp, END, HEADER, MARK};
use ssdcache_block::sync::lock;

/// Events the queue holds before it drops (about 3 MiB).
pub const QUEUE: usize = 65_536;
/// Text gathered before a frame is written (at the latest every second).
pub const FRAME_BYTES: usize = 256 << 10;
/// The smallest `--record-max-size`: a few frames.
pub const MIN_MAX_SIZE: u64 = 1 << 20;
/// Older files kept by default, and at most.
pub const DEFAULT_KEEP: u32 = 4;
pub const MAX_KEEP: u32 = 1000;

/// One thing recorded.
#[derive(Clone, Debug)]
pub enum Event {
    Request {
        time_ns: u64,
        op: RecordOp,
        offset: u64,
        bytes: u64,
        outcome: Outcome,
    },
    /// A procedure, a change of mode or policy (`# mark TIME TEXT`).
    Mark {
        time_ns: u64,
        text: String,
    },
}

/// Unix nanoseconds now.
pub fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// What to record to.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordConfig {
    pub path: PathBuf,
    /// Rotate once the file reaches this many bytes (`None`: never).
    pub max_size: Option<u64>,
    /// Older files kept when rotating.
    pub keep: u32,
}

impl RecordConfig {
    /// Checks the bounds and the path: not a directory or anything but a
    /// regular file, not one of `protected` (the cache and backing files,
    /// by device and inode, so another path or a symlink to them is caught
    /// too), in a directory that exists.
    pub fn check(&self, protected: &[(u64, u64)]) -> Result<(), String> {
        let p = self.path.display();
        if let Some(m) = self.max_size.filter(|&m| m < MIN_MAX_SIZE) {
            return Err(format!("a maximum recording size of {m} bytes: at least {MIN_MAX_SIZE} (1 MiB)"));
        }
        if self.keep > MAX_KEEP {
            return Err(format!("keeping {} older recordings: at most {MAX_KEEP}", self.keep));
        }
        match std::fs::metadata(&self.path) {
            Ok(m) if m.is_dir() => return Err(format!("{p} is a directory, not a file to record to")),
            Ok(m) if !m.is_file() => return Err(format!("{p} is not a regular file (a FIFO or device?)")),
            Ok(m) => {
                use std::os::unix::fs::MetadataExt;
                if protected.contains(&(m.dev(), m.ino())) {
                    return Err(format!("{p} is this server's cache or backing file: record elsewhere"));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{p}: {e}")),
        }
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(format!("{p}: its directory {} does not exist", dir.display()));
        }
        Ok(())
    }
}

/// What `status` shows of a recording.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct RecordStatus {
    pub path: PathBuf,
    pub running: bool,
    /// Why it stopped, if it stopped by itself (a write failed).
    pub failed: Option<String>,
    /// Events written, and dropped because the queue was full.
    pub records: u64,
    pub dropped: u64,
    /// Compressed bytes written, over every file of this recording.
    pub bytes: u64,
    /// Files rotated out.
    pub rotations: u64,
}

#[derive(Debug, Default)]
struct Counts {
    records: AtomicU64,
    bytes: AtomicU64,
    rotations: AtomicU64,
    stopped: AtomicBool,
    failed: Mutex<Option<String>>,
}

/// A running recording: the queue's sending end and the writing thread.
pub struct Recorder {
    config: RecordConfig,
    queue: Arc<TapQueue<Event>>,
    counts: Arc<Counts>,
    thread: Option<JoinHandle<()>>,
}

impl Recorder {
    /// Opens `config.path` (created or truncated), writes the header (`header`:
    /// JSON naming the cache's geometry, mode, policy and settings) and starts
    /// the writing thread. `config` must have passed [`RecordConfig::check`].
    pub fn start(config: RecordConfig, header: String) -> io::Result<Recorder> {
        let file = open(&config.path)?;
        let counts = Arc::new(Counts::default());
        let queue = Arc::new(TapQueue::new(QUEUE));
        let mut w =
            Writer { config: config.clone(), header, file, file_bytes: 0, text: String::new(), counts: counts.clone() };
        w.begin_file()?;
        let q = queue.clone();
        let thread = std::thread::Builder::new().name("ssdcache-record".into()).spawn(move || w.run(&q))?;
        Ok(Recorder { config, queue, counts, thread: Some(thread) })
    }

    /// Hands `e` to the writer; drops (and counts) it if the queue is full.
    pub fn push(&self, e: Event) {
        self.queue.push(e);
    }

    pub fn status(&self) -> RecordStatus {
        let c = &self.counts;
        RecordStatus {
            path: self.config.path.clone(),
            running: !c.stopped.load(Relaxed),
            failed: lock(&c.failed).clone(),
            records: c.records.load(Relaxed),
            dropped: self.queue.dropped(),
            bytes: c.bytes.load(Relaxed),
            rotations: c.rotations.load(Relaxed),
        }
    }

    /// Ends the recording: what is queued is written, then the end marker.
    pub fn stop(mut self) -> RecordStatus {
        self.finish();
        self.status()
    }

    fn finish(&mut self) {
        self.queue.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.finish();
    }
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).write(true).truncate(true).open(path)
}

/// The thread's side.
struct Writer {
    config: RecordConfig,
    header: String,
    file: File,
    file_bytes: u64,
    text: String,
    counts: Arc<Counts>,
}

impl Writer {
    fn run(mut self, q: &TapQueue<Event>) {
        let mut since = Instant::now();
        let mut failed = false;
        drain(q, |batch, closed| {
            for e in batch.drain(..) {
                if failed {
                    return;
                }
                self.line(&e);
                self.counts.records.fetch_add(1, Relaxed);
                if self.text.len() >= FRAME_BYTES {
                    failed = self.write_out();
                }
            }
            if !failed && !closed && since.elapsed() >= Duration::from_secs(1) {
                since = Instant::now();
                failed = self.write_out();
            }
            if failed {
                q.close(); // nothing more is kept; the loop ends
            }
        });
        if failed {
            return;
        }
        self.text.push_str(&format!("{END}{} {{\"records\":{}}}\n", now_ns(), self.counts.records.load(Relaxed)));
        if let Err(e) = self.frame().and_then(|()| self.file.sync_data()) {
            self.fail(e);
            return;
        }
        self.counts.stopped.store(true, Relaxed);
    }

    /// A frame of what is gathered, and a rotation if due; whether it failed
    /// (then the recording has stopped).
    fn write_out(&mut self) -> bool {
        match self.frame().and_then(|()| self.maybe_rotate()) {
            Ok(()) => false,
            Err(e) => {
                self.fail(e);
                true
            }
        }
    }

    fn line(&mut self, e: &Event) {
        match e {
            Event::Request { time_ns, op, offset, bytes, outcome } => {
                write_line(&mut self.text, *time_ns, 0, *op, *offset, *bytes, *outcome)
            }
            Event::Mark { time_ns, text } => {
                let text: String = text.chars().filter(|c| *c != '\n').take(1000).collect();
                self.text.push_str(&format!("{MARK}{time_ns} {text}\n"));
            }
        }
    }

    /// Writes what is gathered as one zstd frame, in one `write`.
    fn frame(&mut self) -> io::Result<()> {
        if self.text.is_empty() {
            return Ok(());
        }
        let z = zstd::bulk::compress(self.text.as_bytes(), 3)?;
        self.file.write_all(&z)?;
        self.text.clear();
        self.file_bytes += z.len() as u64;
        self.counts.bytes.fetch_add(z.len() as u64, Relaxed);
        Ok(())
    }

    fn begin_file(&mut self) -> io::Result<()> {
        self.text.push_str(&format!("{HEADER}{}\n", self.header));
        self.frame()
    }

    /// Over the maximum size: ends this file, shifts the older ones, begins
    /// a new one.
    fn maybe_rotate(&mut self) -> io::Result<()> {
        let Some(max) = self.config.max_size else { return Ok(()) };
        if self.file_bytes < max {
            return Ok(());
        }
        self.text.push_str(&format!("{END}{} {{\"rotated\":true}}\n", now_ns()));
        self.frame()?;
        self.file.sync_data()?;
        let p = &self.config.path;
        let older = |n: u32| PathBuf::from(format!("{}.{n}", p.display()));
        if self.config.keep == 0 {
            std::fs::remove_file(p)?;
        } else {
            let _ = std::fs::remove_file(older(self.config.keep));
            for n in (1..self.config.keep).rev() {
                if older(n).exists() {
                    std::fs::rename(older(n), older(n + 1))?;
                }
            }
            std::fs::rename(p, older(1))?;
        }
        self.file = open(p)?;
        self.file_bytes = 0;
        self.counts.rotations.fetch_add(1, Relaxed);
        self.begin_file()
    }

    fn fail(&self, e: io::Error) {
        log::error!("recording to {} stopped: {e} (the server goes on)", self.config.path.display());
        *lock(&self.counts.failed) = Some(e.to_string());
        self.counts.stopped.store(true, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ssdcache::trace::{self, Format, ReadOptions};

    fn read(path: &Path) -> (Vec<trace::Request>, Option<String>) {
        let (mut r, f) = trace::open(path, Format::Auto, &ReadOptions::default()).unwrap();
        assert_eq!(f, Format::Record);
        let reqs = trace::read_all(r.as_mut()).unwrap();
        (reqs, r.end_note())
    }

    fn req(i: u64) -> Event {
        Event::Request { time_ns: i, op: RecordOp::Read, offset: i * 4096, bytes: 4096, outcome: Outcome::Hit }
    }

    #[test]
    fn a_recording_reads_back_as_a_trace_with_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.zst");
        let cfg = RecordConfig { path: path.clone(), max_size: None, keep: 0 };
        cfg.check(&[]).unwrap();
        let r = Recorder::start(cfg, "{\"slots\":4}".into()).unwrap();
        for i in 0..1000 {
            r.push(req(i));
        }
        r.push(Event::Mark { time_ns: 1000, text: "policy s3fifo".into() });
        let st = r.stop();
        assert_eq!((st.records, st.dropped, st.running, st.failed), (1001, 0, false, None));
        let (reqs, note) = read(&path);
        assert_eq!(reqs.len(), 1000);
        assert_eq!((reqs[999].addr, reqs[999].time), (999 * 4096, 999));
        assert_eq!(note, None, "ended cleanly");
    }

    #[test]
    fn a_recording_cut_off_reads_as_its_prefix_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.zst");
        let r = Recorder::start(RecordConfig { path: path.clone(), max_size: None, keep: 0 }, "{}".into()).unwrap();
        for i in 0..10 {
            r.push(req(i));
        }
        // What a kill -9 leaves: the frames written so far (the thread
        // writes one at least every second), never the end marker.
        let t = Instant::now();
        while r.status().bytes < 40 && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let copy = dir.path().join("copy.zst");
        std::thread::sleep(Duration::from_millis(1200));
        std::fs::copy(&path, &copy).unwrap();
        drop(r);
        let (reqs, note) = read(&copy);
        assert_eq!(reqs.len(), 10);
        assert!(note.unwrap().contains("cut off"));
    }

    #[test]
    fn rotation_keeps_whole_recordings_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.zst");
        let cfg = RecordConfig { path: path.clone(), max_size: Some(MIN_MAX_SIZE), keep: 2 };
        let r = Recorder::start(cfg, "{}".into()).unwrap();
        // Random-looking offsets compress poorly: several MiB of frames,
        // pushed in bursts the writer keeps up with (it drops, never blocks).
        let (mut x, mut i) = (1u64, 0u64);
        let t = Instant::now();
        while r.status().rotations < 3 && t.elapsed() < Duration::from_secs(60) {
            for _ in 0..5_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let outcome = Outcome::Miss;
                r.push(Event::Request { time_ns: i, op: RecordOp::Write, offset: x >> 20, bytes: 4096, outcome });
                i += 1;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let st = r.stop();
        assert!(st.rotations >= 3, "{st:?}");
        let mut total = 0;
        for p in [path.clone(), dir.path().join("rec.zst.1"), dir.path().join("rec.zst.2")] {
            let (reqs, note) = read(&p);
            assert!(!reqs.is_empty() && note.is_none(), "{}: every file is a whole recording", p.display());
            total += std::fs::metadata(&p).unwrap().len();
        }
        assert!(!dir.path().join("rec.zst.3").exists(), "only `keep` older files");
        assert!(total <= 3 * (MIN_MAX_SIZE + FRAME_BYTES as u64), "{total}");
    }

    #[test]
    fn bad_paths_and_bounds_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = |p: PathBuf| RecordConfig { path: p, max_size: None, keep: DEFAULT_KEEP };
        assert!(cfg(dir.path().to_path_buf()).check(&[]).unwrap_err().contains("is a directory"));
        assert!(cfg(dir.path().join("no/such/rec")).check(&[]).unwrap_err().contains("does not exist"));
        let cache = dir.path().join("cache");
        std::fs::write(&cache, b"x").unwrap();
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&cache).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&cache, &link).unwrap();
        assert!(cfg(link).check(&[(m.dev(), m.ino())]).unwrap_err().contains("cache or backing file"));
        let small = RecordConfig { path: dir.path().join("r"), max_size: Some(1000), keep: 1 };
        assert!(small.check(&[]).unwrap_err().contains("at least"));
        assert!(cfg("/dev/null".into()).check(&[]).unwrap_err().contains("not a regular file"));
    }
}
