//! Caches over more than one kind of memory: paper 003's DRAM + NVRAM buffer
//! cache ([`nvram`]: Read Volatile and Read Global, with Write Global and
//! Write Purge), and paper 000's persistent SSD cache in front of an HDD
//! ([`pwc`]) and the segment-unit LRU it is compared against ([`segment_lru`]).
//!
//! A tiered cache keeps each tier under its own replacement rule, built by
//! the registry from a nested spec (`tier=2q(kin=30%)`, through
//! [`Rules`](crate::policy::Rules)), so a tier's rule is the same code
//! `ssdcache sim --policy NAME` runs.

pub mod nvram;
pub mod pwc;
pub mod segment_lru;
