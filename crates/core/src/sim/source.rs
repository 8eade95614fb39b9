//! Where a run's requests come from: a trace file, a generator spec, or a
//! trace already in memory (Python's `load`), read as often as a run needs.

use super::SimError;
use crate::trace::progress::Progress;
use crate::trace::{self, Format, MemoryReader, ReadOptions, Request, TraceReader, Unit};
use std::path::PathBuf;
use std::sync::Arc;

/// Where a run's requests come from.
#[derive(Clone)]
pub enum TraceSource {
    /// A trace file in a format (or [`Format::Auto`]).
    File { path: PathBuf, format: Format, opts: ReadOptions },
    /// A synthetic workload spec (see [`crate::trace::gen`]).
    Gen(String),
    /// Requests already in memory, e.g. a file loaded once for a sweep.
    Memory { name: String, format: String, requests: Arc<[Request]>, unit: Unit, skipped: u64 },
}

impl TraceSource {
    /// A trace file with the command line's reader options (`--skip-bad`,
    /// `--csv-columns`).
    pub fn file(
        path: impl Into<PathBuf>,
        format: Format,
        skip_bad: bool,
        csv_columns: Option<&str>,
    ) -> Result<TraceSource, SimError> {
        let mut opts = ReadOptions { skip_bad, ..Default::default() };
        if let Some(cols) = csv_columns {
            let mapping = cols
                .parse::<crate::trace::formats::csv::CsvMapping>()
                .map_err(|e| SimError::Config(format!("--csv-columns: {e}")))?;
            opts.csv = Some(mapping);
        }
        Ok(TraceSource::File { path: path.into(), format, opts })
    }

    /// The name reports carry: the path or the generator spec.
    pub fn name(&self) -> String {
        match self {
            TraceSource::File { path, .. } => path.display().to_string(),
            TraceSource::Gen(spec) => spec.clone(),
            TraceSource::Memory { name, .. } => name.clone(),
        }
    }

    /// Opens a reader; returns it with the name of the format used.
    pub fn open(&self) -> Result<(Box<dyn TraceReader>, String), SimError> {
        Ok(match self {
            TraceSource::File { path, format, opts } => {
                let (reader, used) = trace::open(path, *format, opts)?;
                (reader, used.name().to_string())
            }
            TraceSource::Gen(spec) => (open_gen(spec)?, "gen".to_string()),
            TraceSource::Memory { requests, unit, format, skipped, .. } => {
                (Box::new(MemoryReader::new(requests.clone(), *unit).with_skipped(*skipped)), format.clone())
            }
        })
    }

    /// The source with its file's reading counted in `progress` (sources not
    /// read from a file are returned as they are).
    pub fn with_progress(&self, progress: &Progress) -> TraceSource {
        let mut s = self.clone();
        if let TraceSource::File { opts, .. } = &mut s {
            opts.progress = Some(progress.clone());
        }
        s
    }

    /// The progress counter the source's reading goes to, if any.
    pub fn progress(&self) -> Option<&Progress> {
        match self {
            TraceSource::File { opts, .. } => opts.progress.as_ref(),
            _ => None,
        }
    }

    /// Reads the whole trace into memory, so that many runs share one parse.
    pub fn load(&self) -> Result<TraceSource, SimError> {
        if let TraceSource::Memory { .. } = self {
            return Ok(self.clone());
        }
        let (mut reader, format) = self.open()?;
        let requests = trace::read_all(reader.as_mut())?;
        Ok(TraceSource::Memory {
            name: self.name(),
            format,
            requests: requests.into(),
            unit: reader.unit(),
            skipped: reader.skipped(),
        })
    }

    /// The trace replayed `times` times back to back (short real traces over
    /// many simulated days): each copy starts one mean inter-arrival time
    /// after the previous one ends. Loads the trace first. `times` must be at
    /// least 1 ([`check_repeat`]).
    pub fn repeat(&self, times: u32) -> Result<TraceSource, SimError> {
        super::flags::check_repeat(times)?;
        let TraceSource::Memory { name, format, requests, unit, skipped } = self.load()? else { unreachable!() };
        if times <= 1 || requests.is_empty() {
            return Ok(TraceSource::Memory { name, format, requests, unit, skipped });
        }
        let first = requests.iter().map(|r| r.time).min().unwrap_or(0);
        let last = requests.iter().map(|r| r.time).max().unwrap_or(0);
        let span = last - first;
        let period = span + (span / requests.len() as u64).max(1);
        // (the copies are held in memory: an absurd count is an error, not an abort)
        let total = requests.len().saturating_mul(times as usize);
        let mut out = Vec::new();
        out.try_reserve_exact(total)
            .map_err(|_| SimError::Config(format!("--repeat {times}: {total} requests do not fit in memory")))?;
        for i in 0..times as u64 {
            out.extend(requests.iter().map(|r| Request { time: r.time - first + i * period, ..*r }));
        }
        Ok(TraceSource::Memory { name: format!("{name} x{times}"), format, requests: out.into(), unit, skipped })
    }
}

fn open_gen(spec: &str) -> Result<Box<dyn TraceReader>, SimError> {
    trace::gen::open(spec).map_err(|e| SimError::Config(e.to_string()))
}
