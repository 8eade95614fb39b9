#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache::trace::formats::blkparse::BlkEvent;
use ssdcache::trace::{Format, ReadOptions};

// blkparse text and WiscSee events, with D (default) and Q as the request event.
fuzz_target!(|data: &[u8]| {
    ssdcache_fuzz::read_as(Format::Blkparse, data);
    let q = ReadOptions { blk_event: BlkEvent::Queue, ..Default::default() };
    ssdcache_fuzz::read_with(Format::Blkparse, data, &q);
});
