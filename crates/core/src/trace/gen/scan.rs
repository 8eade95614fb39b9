//! Sequential keys: `scan(start, length)` and `loop(keys)` (a scan from 0).

use super::values::Values;
use crate::spec::{Spec, SpecError};

pub(super) struct Scan {
    start: u64,
    length: u64,
    /// Offset of the next key from `start`.
    pos: u64,
}

impl Scan {
    pub fn build(p: &Spec, is_loop: bool) -> Result<Scan, SpecError> {
        let (start, length, key) = if is_loop {
            (0, p.positive("keys")?, "keys")
        } else {
            (p.count("start")?, p.positive("length")?, "length")
        };
        if start.checked_add(length).is_none() {
            return Err(p.invalid(key, "start + length overflows"));
        }
        Ok(Scan { start, length, pos: 0 })
    }

    /// One past the last key.
    pub fn end(&self) -> u64 {
        self.start + self.length
    }

    /// The next key for a request covering `span` keys; the next request starts right after
    /// it. A request that would cross the end starts over at `start` instead.
    #[inline]
    pub fn next(&mut self, span: u64) -> u64 {
        if self.pos > 0 && self.pos + span > self.length {
            self.pos = 0;
        }
        let key = self.start + self.pos;
        self.pos += span;
        if self.pos >= self.length {
            self.pos = 0;
        }
        key
    }
}
