//! The counters the engine keeps (atomics, counted where it decides a
//! request's outcome or runs a procedure), which `status --json` and the
//! Prometheus endpoint show.
pub mod procedures;
pub mod requests;
