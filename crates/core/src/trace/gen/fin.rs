//! `fin`: a paper 001-like bank OLTP workload whose reads and writes have
//! their own hot pages, overlapping by a set share.
//!
//! Paper 001 (§4.2, Tables 3–5) replays UMass Financial1/Financial2 as WL1
//! (23:77 read:write), WL2 (both traces, 63:37) and WL3 (82:18). Its Table 5
//! shows how far reads and writes share pages: with the whole cache given to
//! writes (WO), LRU's read hit ratio falls from 91 to 87 % on WL1 but from 93
//! to 69 % on WL3, and the write hit ratio from 96 to 87 % on both — so most
//! of WL1's reads, and about three quarters of WL3's, go to pages that are
//! also written, and about a tenth of the writes to pages that only reads
//! keep in the cache. A single Zipf over one key space shares *every* hot
//! page (WO then hardly changes the read hit ratio); Financial1's first 10 k
//! requests share almost none (6.8 % of read page accesses go to a page
//! written before, 13.6 % of write accesses to one read before).
//!
//! Here the write population is keys `0..wkeys` and the read population keys
//! `wkeys..wkeys+rkeys`, each with its own Zipf(`alpha`) popularity scattered
//! by its own permutation. A read draws from the write population with
//! probability `rw` (reading data the bank wrote), else from its own; a write
//! draws from the read population with probability `wr` (updating data that
//! is mostly read), else from its own. `rw=wr=0` gives disjoint populations;
//! `rw=1,wr=0` reads only what is written. `read`, `size`, `align`, `unit`,
//! `devices`, `iat`, `requests` and `seed` are the key generators' own.

use super::values::Rng;
use super::zipf::{Permutation, ZipfKeys};
use crate::spec::{Spec, SpecError};
use crate::trace::Op;
use rand::Rng as _;

pub(super) struct Fin {
    writes: ZipfKeys,
    reads: ZipfKeys,
    wkeys: u64,
    rkeys: u64,
    rw: f64,
    wr: f64,
}

impl Fin {
    pub fn build(p: &Spec, rng: &mut Rng) -> Result<Fin, SpecError> {
        let alpha = p.float("alpha")?;
        if alpha < 0.0 {
            return Err(p.invalid("alpha", "must be 0 or more (0 is uniform)"));
        }
        let wkeys = positive(p, "wkeys")?;
        let rkeys = positive(p, "rkeys")?;
        if wkeys.checked_add(rkeys).is_none_or(|n| n > 1 << 53) {
            return Err(p.invalid("rkeys", "wkeys + rkeys must be at most 2^53"));
        }
        let writes = ZipfKeys::new(wkeys, alpha, Some(Permutation::new(wkeys, rng)));
        let reads = ZipfKeys::new(rkeys, alpha, Some(Permutation::new(rkeys, rng)));
        Ok(Fin { writes, reads, wkeys, rkeys, rw: p.ratio("rw")?, wr: p.ratio("wr")? })
    }

    /// Keys in all: both populations.
    pub fn keys(&self) -> u64 {
        self.wkeys + self.rkeys
    }

    #[inline]
    pub fn next(&self, op: Op, rng: &mut Rng) -> u64 {
        let cross = rng.gen::<f64>() < if op == Op::Read { self.rw } else { self.wr };
        // the write population when a write stays home or a read crosses over
        if (op == Op::Read) == cross {
            self.writes.next(rng)
        } else {
            self.wkeys + self.reads.next(rng)
        }
    }
}

fn positive(p: &Spec, key: &str) -> Result<u64, SpecError> {
    use super::values::Values;
    p.positive(key)
}
