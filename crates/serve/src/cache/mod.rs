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
//! - [`map`]: a minimal read/write path through the map with the
//!   caching-and-eviction procedure and shutdown (Fig. 5 lines 1–28, 50–54),
//!   the precursor of the engine.
//! - `engine` (feature `engine`, on by default): the cache engine: `CachedBackend`, an NBD backend over a
//!   [`CacheMap`] whose hot segments the simulator's PWC policy chooses, and
//!   the cache-file layout (superblock, metadata, SSD slots).
//! - [`faulty`]: fault injection: devices sharing a power supply that can be
//!   cut at any write, tearing it at sector granularity.

pub mod device;
#[cfg(feature = "engine")]
pub mod engine;
pub mod faulty;
pub mod map;
pub mod meta;
pub mod recover;

pub use device::{BlockDevice, FileDevice, MemDevice};
#[cfg(feature = "engine")]
pub use engine::{CachedBackend, FileCache, MaintainReport, Superblock};
pub use faulty::{CutMode, FaultyDevice, PowerDomain};
pub use map::CacheMap;
pub use meta::{Geometry, Meta, MetaStore, SlotError};
pub use recover::{RecoverError, StartKind, Started};
