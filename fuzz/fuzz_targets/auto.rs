#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache::trace::{formats, Format};

// The sniffer on arbitrary bytes, then whichever reader it picks.
fuzz_target!(|data: &[u8]| {
    let head = &data[..data.len().min(formats::SNIFF_BYTES)];
    let guess = formats::sniff_bytes(head);
    assert_ne!(guess, Some(Format::Auto));
    assert_ne!(guess, Some(Format::Csv));
    ssdcache_fuzz::read_as(Format::Auto, data);
});
