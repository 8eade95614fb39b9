//! FIFO over bytes: hits change nothing; a miss evicts the oldest objects
//! until the new one fits (libCacheSim's `FIFO` with sizes): LRU without the
//! move on a hit.

use super::lru::SizedLru;
use super::{SizedInfo, SizedPolicy};
use crate::spec::{Spec, SpecError};

fn build(_: &Spec, capacity: u64) -> Result<Box<dyn SizedPolicy>, SpecError> {
    Ok(Box::new(SizedLru::new(capacity, false)))
}

pub const INFO: SizedInfo = SizedInfo { name: "fifo", about: "first in, first out, over bytes", params: &[], build };
