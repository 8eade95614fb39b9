//! Iometer-like workloads A, B and C of paper 002 (Kim & Kim, NCQ-aware write buffer), Table 2:
//!
//! | | A | B | C |
//! |---|---|---|---|
//! | threads | 12 | 12 | 12 |
//! | file size | 512 KB ~ 1 GB | 512 KB ~ 1 GB | 512 KB ~ 1 GB |
//! | record size | 4 KB ~ 512 KB | 4 KB ~ 512 KB | 4 KB ~ 512 KB |
//! | requests | 500,000 | 500,000 | 500,000 |
//! | avg. inter-arrival | 158 ms | 90 ms | 72 ms |
//! | access pattern | random | random + sequential | sequential |
//!
//! The text adds: every workload is write-only; each of the 12 threads works on its own
//! file; the threads issue I/O equally often; B is half random, half sequential.
//!
//! What the paper leaves open, chosen here: file sizes grow geometrically from `file_min`
//! to `file_max` (512 KiB · 2^i for i = 0..11 with the defaults, exactly 12 sizes); each
//! request's record size is drawn from `size` (the 8 powers of two 4 KiB..512 KiB, equally
//! likely); a random request is aligned to its own size (Iometer's default alignment);
//! a sequential one starts where that thread's previous request ended and wraps at the end
//! of the file; the thread of each request is drawn uniformly; files lie one after another
//! on their device (thread t on device t mod `devices`); arrivals are Poisson with the
//! table's mean gap.

use super::values::{op, Rng, Sizes, Values};
use crate::spec::{Spec, SpecError};
use crate::trace::Request;
use rand::Rng as _;

struct File {
    dev: u32,
    base: u64,
    size: u64,
    /// Where this thread's next sequential request starts.
    cursor: u64,
}

pub(super) struct Iometer {
    files: Vec<File>,
    sizes: Sizes,
    random: f64,
    read: f64,
}

/// Files are whole sectors.
const SECTOR: u64 = 512;

impl Iometer {
    pub fn build(p: &Spec) -> Result<Iometer, SpecError> {
        let threads = p.positive("threads")?;
        if threads > 1 << 16 {
            return Err(p.invalid("threads", "at most 65536 threads"));
        }
        let (min, max) = (p.bytes("file_min")?, p.bytes("file_max")?);
        if min > max {
            return Err(p.invalid("file_min", "is above file_max"));
        }
        let devices = p.positive("devices")?;
        if devices > crate::key::MAX_DEVICES {
            return Err(p.invalid("devices", format!("at most {} devices", crate::key::MAX_DEVICES)));
        }
        let mut next_base = vec![0u64; devices.min(threads) as usize];
        let mut files = Vec::new();
        for t in 0..threads {
            let frac = if threads == 1 { 0.0 } else { t as f64 / (threads - 1) as f64 };
            let size = min as f64 * (max as f64 / min as f64).powf(frac);
            let size = ((size / SECTOR as f64).round() as u64 * SECTOR).max(SECTOR);
            let dev = t % devices;
            let base = next_base[dev as usize];
            next_base[dev as usize] = base
                .checked_add(size)
                .ok_or_else(|| p.invalid("file_max", "the files overflow a 64-bit byte address"))?;
            files.push(File { dev: dev as u32, base, size, cursor: 0 });
        }
        Ok(Iometer { files, sizes: p.sizes("size")?, random: p.ratio("random")?, read: p.ratio("read")? })
    }

    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> Request {
        let op = op(self.read, rng);
        let t = rng.gen_range(0..self.files.len());
        let f = &mut self.files[t];
        let len = (self.sizes.sample(rng) as u64).min(f.size);
        let off = if rng.gen::<f64>() < self.random {
            rng.gen_range(0..=(f.size - len) / len) * len
        } else if f.cursor + len > f.size {
            0
        } else {
            f.cursor
        };
        f.cursor = off + len;
        Request { time: 0, addr: f.base + off, len: len as u32, dev: f.dev, op }
    }
}
