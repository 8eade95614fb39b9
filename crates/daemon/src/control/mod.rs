//! The control channel of a running `ssdcache serve` (`ssdcache status |
//! flush | maintain`): the protocol, with no I/O inside ([`protocol`]), and
//! the Unix socket that carries it ([`socket`]).

pub mod protocol;
pub mod socket;
