//! ssdcache-engine: the persistent write-back SSD cache of paper 000 (Baek
//! & Park, "A Persistent Read/Write Cache using General Flash-based SSDs"): the parts
//! that make it survive power loss, device failures and operator mistakes.
//!
//! - [`device`]: the [`BlockDevice`] trait (read_at, write_at, sync) the
//!   cache and backing devices implement, with [`FileDevice`], [`MemDevice`]
//!   and a window of another device ([`device::Region`]).
//! - [`meta`]: the on-disk metadata (§3.2, Fig. 2): two alternating
//!   CRC-32C-checked slots, each saved in two copies, with version, clean,
//!   update and degraded bits, address map and frequency table.
//! - [`recover`]: the start procedure (Fig. 5 lines 30–48) and the rule that
//!   proves which save is current.
//! - [`datapath`]: the concurrent data path through the map (write-back or
//!   write-through), the caching-and-eviction procedure with double writes,
//!   real-time fills, degraded mode and shutdown (Fig. 5 lines 1–28,
//!   50–54), under
//! - [`locks`]: per-segment locks.
//! - [`mode`]: the cache modes; [`superblock`]: the cache file's header, in
//!   two copies.
//! - `decide` (which segments: the simulator's PWC or a classic
//!   replacement policy), `engine`
//!   (`CachedBackend`, the NBD backend, with scheduled maintenance and
//!   status), `files` (create and open a cache over files), `drain`
//!   (offline write-back), `model_device` (the benchmark's slow HDD model),
//!   `cleaner` (the background cleaner bounding dirty data), `check` (a cache
//!   file's health, offline, for `ssdcache check`), `settings` (what
//!   `ssdcache set` changes, kept in the superblock);
//!   [`counters`]: the requests' and procedures' counters.
//! - [`inject`]: device errors and short I/O on demand (tests, and the
//!   hidden `serve --inject-*` flags); `faulty` (tests and feature
//!   `testing`): devices sharing a power supply that can be cut at any
//!   write, tearing it at sector granularity.

pub mod check;
pub mod cleaner;
pub mod counters;
pub mod datapath;
pub mod decide;
pub mod device;
pub mod drain;
pub mod engine;
#[cfg(any(test, feature = "testing"))]
pub mod faulty;
pub mod files;
pub mod inject;
pub mod locks;
pub mod meta;
pub mod mode;
pub mod model_device;
pub mod record;
pub mod recover;
pub mod settings;
pub mod superblock;
pub mod tap_queue;
pub mod taps;
pub mod whatif;

pub use datapath::CacheMap;
pub use device::{BlockDevice, FileDevice, MemDevice};
pub use engine::{CachedBackend, EngineConfig, EngineStatus, MaintainReport};
#[cfg(any(test, feature = "testing"))]
pub use faulty::{CutMode, FaultyDevice, PowerDomain};
pub use files::FileCache;
pub use meta::{Geometry, Meta, MetaStore, SlotError};
pub use mode::CacheMode;
pub use recover::{RecoverError, StartKind, StartOptions, Started};
pub use superblock::Superblock;
