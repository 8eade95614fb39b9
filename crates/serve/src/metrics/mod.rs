//! What the server shows operators: `ssdcache status --json` (the control
//! socket) and Prometheus metrics (`serve --metrics ADDR`), both rendered
//! from one [`snapshot::Snapshot`] so that they cannot disagree.
//!
//! - [`requests`], [`procedures`]: the counters the engine keeps (atomics,
//!   counted where it decides a request's outcome or runs a procedure).
//! - `snapshot` (features `server` and `engine`): the engine's status plus
//!   the server's connections, taken at once.
//! - `exposition`: a snapshot in the Prometheus/OpenMetrics text format,
//!   written by the `prometheus-client` crate.
//! - `http`: the `/metrics` endpoint, bounded in memory, time and
//!   connections against hostile clients.

pub mod procedures;
pub mod requests;

#[cfg(all(feature = "server", feature = "engine"))]
pub mod exposition;
#[cfg(all(feature = "server", feature = "engine"))]
pub mod http;
#[cfg(all(feature = "server", feature = "engine"))]
pub mod snapshot;
