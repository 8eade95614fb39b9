//! The classic replacement rules, one per file.

pub mod arc;
pub mod belady;
pub mod car;
pub mod clock;
pub mod clockpro;
pub mod fifo;
pub mod lecar;
pub mod lfu;
pub mod lfuda;
pub mod lirs;
pub mod lru;
pub mod lru_k;
pub mod mq;
pub mod none;
pub mod s3fifo;
pub mod sieve;
pub mod slru;
pub mod twoq;
pub mod wtinylfu;
