//! ssdcache-block: what an NBD export is served from, below both the
//! protocol and the cache engine.
//!
//! - [`Backend`]: the trait an export is served from, with [`FileBackend`]
//!   (a file or block device) and [`MemBackend`] (tests);
//! - [`extents`]: the allocation (data or hole) block status reports;
//! - [`sync`]: the lock helper every crate of the server shares.
mod backend;
pub mod extents;
pub mod sync;

pub use backend::{not_fast, Backend, FileBackend, MemBackend};
pub use extents::Extent;
