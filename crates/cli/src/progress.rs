//! A progress bar with an ETA for one long run over a trace file (`sim`,
//! `mrc`), drawn on standard error only when it is a terminal. The run counts
//! the file's bytes as it reads them ([`Progress`], over every pass); a
//! thread polls the count five times a second and moves the bar.

use indicatif::{ProgressBar, ProgressStyle};
use ssdcache::trace::progress::Progress;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A bar following a [`Progress`]; cleared when dropped.
pub struct Bar {
    progress: Progress,
    stop: Arc<AtomicBool>,
    poller: Option<JoinHandle<()>>,
}

impl Bar {
    /// A bar labelled `label` (the trace), drawn if standard error is a
    /// terminal; hidden otherwise (the count is kept anyway, it is cheap).
    pub fn new(label: &str) -> Bar {
        let progress = Progress::new();
        let stop = Arc::new(AtomicBool::new(false));
        let poller = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:40} {percent:>3}% {binary_bytes}/{binary_total_bytes} {elapsed} ETA {eta} {msg}",
                )
                .expect("a valid template"),
            );
            bar.set_message(label.to_string());
            let (p, stop) = (progress.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    let (read, total) = p.position();
                    bar.set_length(total);
                    bar.set_position(read.min(total));
                    std::thread::sleep(Duration::from_millis(200));
                }
                bar.finish_and_clear();
            })
        });
        Bar { progress, stop, poller }
    }

    /// The counter to give the run.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.poller.take() {
            let _ = t.join();
        }
    }
}
