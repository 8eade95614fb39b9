//! ssdcache-serve: an NBD (Network Block Device) server over a generic block
//! backend.
//!
//! - [`nbd`]: the protocol, as pure functions and a sans-I/O negotiation state
//!   machine (what the fuzz targets exercise).
//! - [`backend`]: the [`Backend`] trait an export is served from, with
//!   [`FileBackend`] (a file or block device) and [`MemBackend`] (tests);
//!   [`extents`]: the allocation (data or hole) block status reports.
//! - [`server`] (feature `server`, on by default): a TCP server with several
//!   exports: tokio accepts and negotiates, then requests run concurrently
//!   on a server-wide pool of blocking worker threads (nbdkit's model) with
//!   memory and threads bounded per connection and server-wide, and a
//!   graceful shutdown ends with [`Backend::shutdown`].
//! - [`stderr_log`]: the servers' stderr logger (`-v` levels).
//! - [`cache`]: paper 000's persistent SSD cache: metadata, recovery,
//!   segment locks, the concurrent data path, the engine (`CachedBackend`)
//!   with its policy adapter, the cache file, fault-injection devices and
//!   the benchmark's slow HDD-model device.
//! - `control` and `daemon` (features `server` and `engine`): the control
//!   channel (`ssdcache status | flush | maintain`) and the `ssdcache serve`
//!   daemon's whole life, which the CLI only configures.
//! - [`metrics`]: what `status --json` and the Prometheus endpoint
//!   (`serve --metrics`) show, from one snapshot.
//!
//! Example: `cargo run -p ssdcache-serve --example serve_file -- disk.img
//! --listen 127.0.0.1:10809 --export disk`, then `qemu-io -f raw
//! nbd://127.0.0.1:10809/disk`.

pub mod backend;
pub mod cache;
#[cfg(all(feature = "server", feature = "engine"))]
pub mod control;
#[cfg(all(feature = "server", feature = "engine"))]
pub mod daemon;
pub mod extents;
pub mod metrics;
pub mod nbd;
#[cfg(feature = "server")]
pub mod server;
pub mod stderr_log;
pub(crate) mod sync;
#[cfg(feature = "server")]
pub mod unix_socket;

pub use backend::{Backend, FileBackend, MemBackend};
pub use extents::Extent;
#[cfg(feature = "server")]
pub use server::{Export, Server, ServerConfig, ServerError, ServerHandle, ServerStats, StatsHandle};
