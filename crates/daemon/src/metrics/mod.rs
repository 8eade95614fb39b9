//! What the server shows operators: `ssdcache status --json` (the control
//! socket) and Prometheus metrics (`serve --metrics ADDR`), both rendered
//! from one [`snapshot::Snapshot`] so that they cannot disagree.
//!
//! - `snapshot`: the engine's status (with its counters,
//!   `ssdcache_engine::counters`) plus
//!   the server's connections, taken at once.
//! - `exposition`: a snapshot in the Prometheus/OpenMetrics text format,
//!   written by the `prometheus-client` crate.
//! - `http`: the `/metrics` endpoint (also `/status.json` and a live page
//!   at `/`, `page.html`), bounded in memory, time and
//!   connections against hostile clients.

pub mod exposition;
pub mod http;
pub mod snapshot;
