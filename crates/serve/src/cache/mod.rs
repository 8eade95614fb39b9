//! The persistent write-back SSD cache of paper 000 (Baek & Park, "A
//! Persistent Read/Write Cache using General Flash-based SSDs"): the parts
//! that make it survive power loss.
//!
//! - [`device`]: the [`BlockDevice`] trait (read_at, write_at, sync) the
//!   cache and backing devices implement, with [`FileDevice`] and [`MemDevice`].
//! - [`meta`]: the on-disk metadata (§3.2, Fig. 2): two alternating
//!   CRC-32C-checked slots with version, clean and update bits, address map
//!   and frequency table.
//! - [`recover`]: the start procedure (Fig. 5 lines 30–48).
//! - [`map`]: the concurrent data path through the map (write-back or
//!   write-through), the caching-and-eviction procedure with double writes,
//!   real-time fills, and shutdown (Fig. 5 lines 1–28, 50–54), under
//! - [`locks`]: per-segment locks.
//! - Feature `engine` (on by default): `decide` (which segments: the
//!   simulator's PWC or a classic replacement policy), `engine`
//!   (`CachedBackend`, the NBD backend, with scheduled maintenance and
//!   status), `layout` (the cache file: superblock with the cache mode,
//!   metadata, SSD slots; create and open), `drain` (offline write-back).
//! - [`faulty`]: fault injection: devices sharing a power supply that can be
//!   cut at any write, tearing it at sector granularity.

#[cfg(feature = "engine")]
pub mod decide;
pub mod device;
#[cfg(feature = "engine")]
pub mod drain;
#[cfg(feature = "engine")]
pub mod engine;
pub mod faulty;
pub mod inject;
#[cfg(feature = "engine")]
pub mod layout;
pub mod locks;
pub mod map;
pub mod meta;
pub mod recover;
pub mod slow;

pub use device::{BlockDevice, FileDevice, MemDevice};
#[cfg(feature = "engine")]
pub use engine::{CachedBackend, EngineConfig, EngineStatus, MaintainReport};
pub use faulty::{CutMode, FaultyDevice, PowerDomain};
#[cfg(feature = "engine")]
pub use layout::{CacheMode, FileCache, Superblock};
pub use map::CacheMap;
pub use meta::{Geometry, Meta, MetaStore, SlotError};
pub use recover::{RecoverError, StartKind, StartOptions, Started};
