//! `size`: cache only the pages of requests no larger than `max` (libCacheSim's
//! `size` admissioner, with the request as the object: a block trace's large
//! requests are the sequential, rarely re-read ones).

use super::{Admitter, AdmitterInfo};
use crate::policy::{Access, BuildCtx, ParamInfo, Spec, SpecError};

pub struct Size {
    /// The largest request cached, in pages.
    max_pages: u64,
}

impl Admitter for Size {
    fn admit(&mut self, a: &Access, _victim: Option<u64>, _resident: usize, _capacity: usize) -> bool {
        u64::from(a.request_pages) <= self.max_pages
    }
}

fn build(spec: &Spec, ctx: &BuildCtx) -> Result<Box<dyn Admitter>, SpecError> {
    let max = spec.bytes("max")?;
    if max < ctx.page_bytes {
        return Err(
            spec.invalid("max", format!("smaller than a page ({} bytes): nothing would be cached", ctx.page_bytes))
        );
    }
    Ok(Box::new(Size { max_pages: max / ctx.page_bytes }))
}

pub const INFO: AdmitterInfo = AdmitterInfo {
    name: "size",
    about: "cache only pages of requests of at most max bytes",
    params: &[ParamInfo { name: "max", default: "64KiB", about: "largest request cached" }],
    build,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::read;

    #[test]
    fn pages_of_large_requests_are_not_cached() {
        let mut by = Size { max_pages: 16 };
        for (pages, want) in [(1, true), (16, true), (17, false), (u32::MAX, false)] {
            let a = Access { request_pages: pages, ..read(1, 0) };
            assert_eq!(by.admit(&a, None, 0, 10), want, "{pages} pages");
        }
    }
}
