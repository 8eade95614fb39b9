//! The classic replacement rules, one per file.

pub mod arc;
pub mod belady;
pub mod clock;
pub mod fifo;
pub mod lfu;
pub mod lirs;
pub mod lru;
pub mod none;
pub mod s3fifo;
pub mod twoq;

// issue 17 part 2
pub mod clockpro;
pub mod lecar;
pub mod wtinylfu;
