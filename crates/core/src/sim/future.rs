//! Next uses for offline policies (Belady): for every page access, the
//! position (access number) of the next access to the same page, or
//! [`NEVER`].
//!
//! A trace on disk is not held in memory for them. A first pass writes every
//! access's page key to an unnamed temporary file (8 bytes per page access;
//! the file is gone when the run ends, even if it is killed); a reverse pass
//! reads it back to front in blocks and overwrites each key with its next
//! use, with a map from page to its nearest later access — memory in
//! proportion to the footprint, not the trace; the run then reads the file
//! front to back, a block at a time, beside a second pass over the trace. So
//! the results are exactly those of the in-memory computation
//! ([`next_uses`], kept for traces already in memory), at the price of disk
//! space and two extra sequential passes over it. (A bounded look-ahead
//! window would cap the disk too, but would change Belady's decisions for
//! reuses beyond the window.)

use super::{pages_of, PageRange, SimError};
use crate::policy::NEVER;
use crate::trace::{Op, Request, Unit};
use hashbrown::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// Entries per block of the reverse pass and of the forward read: 512 KiB.
const BLOCK: usize = 1 << 16;

/// The next use of every page access of `requests`, computed in memory.
pub fn next_uses(requests: &[Request], unit: Unit, page_bytes: u64) -> Result<Vec<u64>, SimError> {
    let mut keys = Vec::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        let pr = pages_of(r, unit, page_bytes, i as u64)?;
        keys.extend(access_keys(r.op, pr));
    }
    let mut next = vec![NEVER; keys.len()];
    let mut seen: HashMap<u64, u64> = HashMap::with_capacity(keys.len() / 4);
    for (i, &k) in keys.iter().enumerate().rev() {
        if k != NEVER {
            if let Some(j) = seen.insert(k, i as u64) {
                next[i] = j;
            }
        }
    }
    Ok(next)
}

/// The keys one request's page accesses stand for: trims are page accesses
/// too (they take a position), they just never count as uses.
fn access_keys(op: Op, pr: PageRange) -> impl Iterator<Item = u64> {
    pr.keys().map(move |k| if op == Op::Trim { NEVER } else { k })
}

fn spill_error(e: std::io::Error) -> SimError {
    SimError::Config(format!("next-use spill file (temporary directory, $TMPDIR): {e}"))
}

/// The first pass: page keys, in trace order, to a temporary file.
pub struct Spill {
    out: BufWriter<File>,
    accesses: u64,
}

impl Spill {
    pub fn new() -> Result<Spill, SimError> {
        let file = tempfile::tempfile().map_err(spill_error)?;
        Ok(Spill { out: BufWriter::with_capacity(BLOCK * 8, file), accesses: 0 })
    }

    /// Adds the page accesses of one request (its pages `pr`).
    pub fn push(&mut self, op: Op, pr: PageRange) -> Result<(), SimError> {
        for k in access_keys(op, pr) {
            self.out.write_all(&k.to_le_bytes()).map_err(spill_error)?;
        }
        self.accesses += pr.count;
        Ok(())
    }

    /// The reverse pass: turns the keys into next uses, in place, and opens
    /// them for reading front to back.
    pub fn finish(self) -> Result<NextUses, SimError> {
        let mut file = self.out.into_inner().map_err(|e| spill_error(e.into_error()))?;
        let mut seen: HashMap<u64, u64> = HashMap::new();
        let mut bytes = vec![0u8; BLOCK * 8];
        let mut end = self.accesses;
        while end > 0 {
            let start = end.saturating_sub(BLOCK as u64);
            let block = &mut bytes[..(end - start) as usize * 8];
            file.seek(SeekFrom::Start(start * 8)).map_err(spill_error)?;
            file.read_exact(block).map_err(spill_error)?;
            for (i, entry) in block.chunks_exact_mut(8).enumerate().rev() {
                let k = u64::from_le_bytes(entry.try_into().expect("8 bytes"));
                let next = if k == NEVER { NEVER } else { seen.insert(k, start + i as u64).unwrap_or(NEVER) };
                entry.copy_from_slice(&next.to_le_bytes());
            }
            file.seek(SeekFrom::Start(start * 8)).map_err(spill_error)?;
            file.write_all(block).map_err(spill_error)?;
            end = start;
        }
        drop(seen);
        file.seek(SeekFrom::Start(0)).map_err(spill_error)?;
        Ok(NextUses {
            buf: Vec::with_capacity(BLOCK),
            pos: 0,
            file: Some(BufReader::with_capacity(BLOCK * 8, file)),
            left: self.accesses,
            error: None,
        })
    }
}

/// Next uses read in trace order, one per page access: from memory, or a
/// block at a time from a [`Spill`]'s file.
pub struct NextUses {
    buf: Vec<u64>,
    pos: usize,
    file: Option<BufReader<File>>,
    /// Entries still in the file.
    left: u64,
    /// A read that failed: [`NextUses::next_use`] has no error path (it is on the
    /// per-page path); the simulator checks this after each request.
    error: Option<std::io::Error>,
}

impl NextUses {
    /// Next uses computed in memory ([`next_uses`]).
    pub fn in_memory(next: Vec<u64>) -> NextUses {
        NextUses { buf: next, pos: 0, file: None, left: 0, error: None }
    }

    /// The next use of the next page access ([`NEVER`] past the end).
    #[inline]
    pub fn next_use(&mut self) -> u64 {
        if self.pos == self.buf.len() && !self.refill() {
            return NEVER;
        }
        self.pos += 1;
        self.buf[self.pos - 1]
    }

    fn refill(&mut self) -> bool {
        let Some(file) = self.file.as_mut() else { return false };
        if self.left == 0 || self.error.is_some() {
            return false;
        }
        let n = self.left.min(BLOCK as u64) as usize;
        let mut bytes = vec![0u8; n * 8];
        if let Err(e) = file.read_exact(&mut bytes) {
            self.error = Some(e);
            return false;
        }
        self.left -= n as u64;
        self.buf.clear();
        self.buf.extend(bytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))));
        self.pos = 0;
        true
    }

    /// A read of the spill file that failed, once.
    pub fn take_error(&mut self) -> Option<SimError> {
        self.error.take().map(spill_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spilled(requests: &[Request], unit: Unit, page_bytes: u64) -> Vec<u64> {
        let mut spill = Spill::new().unwrap();
        for (i, r) in requests.iter().enumerate() {
            spill.push(r.op, pages_of(r, unit, page_bytes, i as u64).unwrap()).unwrap();
        }
        let mut next = spill.finish().unwrap();
        let n = next_uses(requests, unit, page_bytes).unwrap().len();
        let out: Vec<u64> = (0..n).map(|_| next.next_use()).collect();
        assert_eq!(next.next_use(), NEVER, "past the end");
        assert!(next.take_error().is_none());
        out
    }

    #[test]
    fn a_hand_made_trace() {
        let r = |op, page: u64, pages: u32| Request { time: 0, addr: page * 4096, len: pages * 4096, dev: 0, op };
        let reqs = [r(Op::Read, 1, 2), r(Op::Trim, 2, 1), r(Op::Write, 1, 1), r(Op::Read, 2, 1)];
        // accesses: 1 2 | T2 | 1 | 2
        let want = vec![3, 4, NEVER, NEVER, NEVER];
        assert_eq!(next_uses(&reqs, Unit::Bytes, 4096).unwrap(), want);
        assert_eq!(spilled(&reqs, Unit::Bytes, 4096), want);
    }

    #[test]
    fn more_than_a_block_of_accesses() {
        // 3 blocks and a bit: keys reused across block boundaries.
        let reqs: Vec<Request> = (0..3 * BLOCK as u64 + 17)
            .map(|i| Request { time: i, addr: (i * 7919) % 5003, len: 1, dev: 0, op: Op::Read })
            .collect();
        assert_eq!(spilled(&reqs, Unit::Pages, 4096), next_uses(&reqs, Unit::Pages, 4096).unwrap());
    }

    proptest! {
        #[test]
        fn spilled_equals_in_memory(ops in proptest::collection::vec((0u8..3, 0u64..40, 1u32..5), 0..300)) {
            let reqs: Vec<Request> = ops
                .iter()
                .map(|&(op, page, pages)| Request {
                    time: 0,
                    addr: page * 4096 + 100,
                    len: pages * 4096,
                    dev: (page % 2) as u32,
                    op: [Op::Read, Op::Write, Op::Trim][op as usize],
                })
                .collect();
            prop_assert_eq!(spilled(&reqs, Unit::Bytes, 4096), next_uses(&reqs, Unit::Bytes, 4096).unwrap());
        }
    }
}
