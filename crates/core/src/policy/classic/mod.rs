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
pub mod car;
pub mod clockpro;
pub mod lecar;
pub mod lfuda;
pub mod lru_k;
pub mod mq;
pub mod sieve;
pub mod slru;
pub mod wtinylfu;
