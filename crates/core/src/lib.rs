//! ssdcache: flash-aware storage caching.
//!
//! The crate is the model of the world: [`trace`] turns block traces into
//! [`trace::Request`]s, [`policy`] holds the cache policies as state machines that
//! emit I/O effects, [`sim`] drives a policy over a trace and [`metrics`] holds
//! what a run reports. See `DESIGN.md` in the shared folder for the architecture.

pub mod analyze;
pub mod device;
pub mod excerpt;
pub mod heap;
pub mod key;
pub mod list;
pub mod metrics;
pub mod mrc;
pub mod policy;
pub mod sim;
pub mod spec;
pub mod trace;
pub mod units;

/// Time in nanoseconds since the start of a trace.
pub type Nanos = u64;
