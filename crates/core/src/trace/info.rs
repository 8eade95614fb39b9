//! `ssdcache trace info` statistics (TODO).
