//! Flash-aware buffer policies (papers 001, 002 and 004, and the originals
//! they build on), one per file. Page-unit rules are [`Replacement`]s and get
//! every mode from [`ModeCache`]; block-unit write buffers are [`Policy`]s of
//! their own, since they flush whole blocks.
//!
//! [`Replacement`]: super::Replacement
//! [`ModeCache`]: super::ModeCache
//! [`Policy`]: super::Policy

pub mod abm;
pub mod block;
pub mod bplru;
pub mod clc;
pub mod fab;
