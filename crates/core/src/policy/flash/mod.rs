//! Flash-aware buffer policies (papers 001, 002 and 004, and the originals
//! they build on), one per file. Page-unit rules are [`Replacement`]s and get
//! every mode from [`ModeCache`]; block-unit write buffers are [`Policy`]s of
//! their own, since they flush whole blocks.
//!
//! [`Replacement`]: super::Replacement
//! [`ModeCache`]: super::ModeCache
//! [`Policy`]: super::Policy

pub mod abm;
pub mod ad_lru;
pub mod block;
pub mod bplru;
pub mod ccf_lru;
pub mod cflru;
pub mod clc;
pub mod dpw_lru;
pub mod fab;
pub mod lru_wsr;
pub mod page_lists;
pub mod qlru;
#[cfg(test)]
pub(crate) mod testing;
