//! `seqcut`: pages of a sequential stream are not cached once the stream is
//! longer than `cutoff` (bcache's `sequential_cutoff`): a backup, a scan or
//! a large copy would otherwise flush the cache for data read once.
//!
//! Streams are followed at page level, as bcache follows them per task: up to
//! `streams` recent streams, each the next page it expects and its length so
//! far; an access to a stream's next page extends it, one to its last page
//! again keeps it (requests smaller than a page, or than a segment in
//! `serve`, come several to a page), any other access starts a new stream in
//! place of the least recently used one. A page is not
//! cached when its stream, counting the page, is longer than `cutoff`. Hits
//! still hit: the layer decides what enters, not what stays. (bcache decides
//! per request, counting the request's whole size; at page level the first
//! `cutoff` bytes of a long stream are cached and the rest is not.)

use super::{Admitter, AdmitterInfo};
use crate::policy::{Access, BuildCtx, ParamInfo, Spec, SpecError};

#[derive(Clone, Copy)]
struct Stream {
    next: u64,
    pages: u64,
    last_used: u64,
}

pub struct SeqCut {
    cutoff_pages: u64,
    streams: Vec<Stream>,
    max_streams: usize,
    clock: u64,
    /// Length of the stream the last seen access belongs to, with its key.
    last: (u64, u64),
}

impl SeqCut {
    fn new(cutoff_pages: u64, max_streams: usize) -> Self {
        SeqCut { cutoff_pages, streams: Vec::with_capacity(max_streams), max_streams, clock: 0, last: (u64::MAX, 0) }
    }

    /// The length of `key`'s stream once `key` joins it.
    fn follow(&mut self, key: u64) -> u64 {
        self.clock += 1;
        let now = self.clock;
        if let Some(s) = self.streams.iter_mut().find(|s| s.next == key || s.next == key.wrapping_add(1)) {
            // (its next page extends it; its last page again, as a stream of
            // requests smaller than a page or a segment sends, keeps it as it is)
            if s.next == key {
                s.next = key.wrapping_add(1);
                s.pages += 1;
            }
            s.last_used = now;
            return s.pages;
        }
        let fresh = Stream { next: key.wrapping_add(1), pages: 1, last_used: now };
        if self.streams.len() < self.max_streams {
            self.streams.push(fresh);
        } else {
            let oldest = self.streams.iter_mut().min_by_key(|s| s.last_used).expect("at least one stream");
            *oldest = fresh;
        }
        1
    }
}

impl Admitter for SeqCut {
    fn seen(&mut self, a: &Access) {
        let pages = self.follow(a.key);
        self.last = (a.key, pages);
    }
    fn admit(&mut self, a: &Access, _victim: Option<u64>, _resident: usize, _capacity: usize) -> bool {
        // `seen` ran for this access (the rule is touched before a miss is offered);
        // a caller that offers a miss without touching gets it followed here.
        if self.last.0 != a.key {
            self.seen(a);
        }
        self.last.1 <= self.cutoff_pages
    }
}

fn build(spec: &Spec, ctx: &BuildCtx) -> Result<Box<dyn Admitter>, SpecError> {
    let cutoff = spec.bytes("cutoff")?;
    if cutoff < ctx.page_bytes {
        return Err(spec.invalid("cutoff", format!("smaller than a page ({} bytes)", ctx.page_bytes)));
    }
    let streams = spec.uint("streams")?;
    if !(1..=4096).contains(&streams) {
        return Err(spec.invalid("streams", "1 to 4096 streams"));
    }
    Ok(Box::new(SeqCut::new(cutoff / ctx.page_bytes, streams as usize)))
}

pub const INFO: AdmitterInfo = AdmitterInfo {
    name: "seqcut",
    about: "do not cache a sequential stream beyond cutoff bytes (bcache's sequential_cutoff)",
    params: &[
        ParamInfo { name: "cutoff", default: "4MiB", about: "stream length beyond which pages are not cached" },
        ParamInfo { name: "streams", default: "16", about: "concurrent streams followed" },
    ],
    build,
};

#[cfg(test)]
mod tests {
    use super::super::testing::admitted;
    use super::*;

    #[test]
    fn a_stream_is_cut_after_cutoff_pages() {
        let mut by = SeqCut::new(4, 16);
        let got = admitted(&mut by, &[100, 101, 102, 103, 104, 105, 7, 106]);
        assert_eq!(got, [true, true, true, true, false, false, true, false]);
    }

    #[test]
    fn requests_smaller_than_a_page_keep_their_stream() {
        // several accesses to each page of a stream: counted once a page, and
        // they do not push the stream out of a table of 2
        let mut by = SeqCut::new(3, 2);
        let got = admitted(&mut by, &[100, 100, 100, 101, 101, 102, 102, 102, 103, 103, 104]);
        assert_eq!(got, [true, true, true, true, true, true, true, true, false, false, false]);
    }

    #[test]
    fn interleaved_streams_are_followed_apart() {
        let mut by = SeqCut::new(2, 16);
        let got = admitted(&mut by, &[10, 50, 11, 51, 12, 52]);
        assert_eq!(got, [true, true, true, true, false, false]);
    }

    #[test]
    fn more_streams_than_followed_forget_the_oldest() {
        let mut by = SeqCut::new(2, 2);
        // 10.. and 50.. then 90.. replaces the stream at 10: 11 starts afresh.
        let got = admitted(&mut by, &[10, 50, 51, 90, 11, 12, 13]);
        assert_eq!(got, [true, true, true, true, true, true, false]);
    }
}
