//! What watches the requests besides the counters: the recording
//! ([`crate::record`]) and the what-if shadow ([`crate::whatif`]). Each
//! request's event is handed over without waiting; with nothing watching, a
//! request pays one uncontended read lock.

use std::sync::RwLock;

use ssdcache::trace::formats::record::{Outcome as RecOutcome, RecordOp};
use ssdcache::trace::Op;

use crate::counters::requests::{Op as RequestOp, Outcome};
use crate::record::{now_ns, Event, RecordConfig, RecordStatus, Recorder};
use crate::whatif::{Access, Shadow, WhatIfConfig, WhatIfReport};
use ssdcache_block::sync::{read, write};

/// The recording running now, and the last one's status once stopped.
#[derive(Default)]
struct Inner {
    recorder: Option<Recorder>,
    last: Option<RecordStatus>,
    shadow: Option<Shadow>,
}

#[derive(Default)]
pub struct Taps {
    inner: RwLock<Inner>,
}

impl Taps {
    /// A request answered: `op` on `bytes` at `offset`, and what the cache did.
    pub fn request(&self, op: RequestOp, offset: u64, bytes: u64, outcome: Outcome) {
        let g = read(&self.inner);
        if let Some(s) = &g.shadow {
            let op = match op {
                RequestOp::Read => Some(Op::Read),
                RequestOp::Write | RequestOp::WriteZeroes => Some(Op::Write),
                RequestOp::Trim => Some(Op::Trim),
                _ => None,
            };
            if let Some(op) = op.filter(|_| bytes > 0) {
                s.push(Access { op, offset, len: bytes });
            }
        }
        let Some(r) = &g.recorder else { return };
        let op = match op {
            RequestOp::Read => RecordOp::Read,
            RequestOp::Write => RecordOp::Write,
            RequestOp::WriteZeroes => RecordOp::WriteZeroes,
            RequestOp::Trim => RecordOp::Trim,
            RequestOp::Flush => RecordOp::Flush,
            // Hints and queries move no data the policy sees as a request.
            RequestOp::Cache | RequestOp::BlockStatus => return,
        };
        let outcome = match outcome {
            Outcome::Hit => RecOutcome::Hit,
            Outcome::Miss => RecOutcome::Miss,
            Outcome::Bypass => RecOutcome::Bypass,
            Outcome::Ok => RecOutcome::Done,
            Outcome::Error => RecOutcome::Error,
        };
        r.push(Event::Request { time_ns: now_ns(), op, offset, bytes, outcome });
    }

    /// A marker: a procedure, a change of mode or policy.
    pub fn mark(&self, text: String) {
        if let Some(r) = &read(&self.inner).recorder {
            r.push(Event::Mark { time_ns: now_ns(), text });
        }
    }

    /// Starts recording to `config.path` with `header`; refused while one runs.
    pub fn start(&self, config: RecordConfig, header: String) -> Result<RecordStatus, String> {
        let mut g = write(&self.inner);
        if let Some(r) = &g.recorder {
            if r.status().running {
                return Err(format!("already recording to {} (stop it first)", r.status().path.display()));
            }
        }
        let path = config.path.display().to_string();
        let r = Recorder::start(config, header).map_err(|e| format!("{path}: {e}"))?;
        let st = r.status();
        if let Some(old) = g.recorder.replace(r) {
            g.last = Some(old.stop());
        }
        log::info!("recording to {path}");
        Ok(st)
    }

    /// Stops the recording (its queue written, then its end marker).
    pub fn stop(&self) -> Result<RecordStatus, String> {
        let mut g = write(&self.inner);
        let r = g.recorder.take().ok_or("no recording runs")?;
        let st = r.stop();
        log::info!("recording to {} stopped: {} records, {} dropped", st.path.display(), st.records, st.dropped);
        g.last = Some(st.clone());
        Ok(st)
    }

    /// Starts the what-if shadow (replacing one that runs).
    pub fn start_whatif(&self, config: WhatIfConfig) -> Result<(), String> {
        config.check()?;
        let s = Shadow::start(config).map_err(|e| format!("the what-if thread: {e}"))?;
        write(&self.inner).shadow = Some(s);
        Ok(())
    }

    /// What the shadow says now (`None`: none runs).
    pub fn whatif(&self) -> Option<WhatIfReport> {
        read(&self.inner).shadow.as_ref().map(Shadow::report)
    }

    /// The running recording's status, else the last one's.
    pub fn status(&self) -> Option<RecordStatus> {
        let g = read(&self.inner);
        g.recorder.as_ref().map(Recorder::status).or_else(|| g.last.clone())
    }
}
