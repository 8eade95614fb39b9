//! The one set of numbers both `ssdcache status --json` and `/metrics` show:
//! the engine's status and the NBD server's connections, read together.

use std::sync::Arc;

use ssdcache_engine::EngineStatus;
use ssdcache_server::{ServerStats, StatsHandle};

/// The NBD server's connections now and since start.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Connections {
    /// Open now (negotiating or in transmission).
    pub open: u64,
    /// Of them, still negotiating.
    pub negotiating: u64,
    /// Admitted since start.
    pub accepted: u64,
    /// Refused since start: the server was full and no connection could be
    /// closed to make room.
    pub refused: u64,
    /// Closed since start to admit a newer one (negotiating too long, or idle
    /// in a full server).
    pub displaced: u64,
    /// Requests the NBD layer answered with an error without passing them
    /// to the engine (out of range, unknown command, bad flags, too large).
    pub rejected: u64,
}

impl From<ServerStats> for Connections {
    fn from(s: ServerStats) -> Self {
        Connections {
            open: s.connections as u64,
            negotiating: s.negotiating as u64,
            accepted: s.accepted,
            refused: s.refused,
            displaced: s.displaced,
            rejected: s.rejected,
        }
    }
}

/// Everything `status --json` and `/metrics` show, at one moment.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Snapshot {
    #[serde(flatten)]
    pub engine: EngineStatus,
    pub connections: Connections,
}

/// Where snapshots come from: the engine and the server it serves through.
#[derive(Clone)]
pub struct Source {
    engine: Arc<dyn Fn() -> EngineStatus + Send + Sync>,
    server: Option<StatsHandle>,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source").finish_non_exhaustive()
    }
}

impl Source {
    /// `engine` gives the engine's status; `server`, when serving, its
    /// connections (none: all zero).
    pub fn new(engine: impl Fn() -> EngineStatus + Send + Sync + 'static, server: Option<StatsHandle>) -> Self {
        Source { engine: Arc::new(engine), server }
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            engine: (self.engine)(),
            connections: self.server.as_ref().map(|s| s.stats().into()).unwrap_or_default(),
        }
    }
}
