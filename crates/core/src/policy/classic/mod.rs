//! The classic replacement rules, one per file.

pub mod lru;
