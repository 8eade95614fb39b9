//! Tiered caches: a fast device caching a slower one as a whole (paper 000's
//! persistent SSD cache in front of an HDD), one policy per file.

pub mod pwc;
