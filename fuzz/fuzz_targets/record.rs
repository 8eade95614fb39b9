#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache::trace::Format;

fuzz_target!(|data: &[u8]| {
    ssdcache_fuzz::read_as(Format::Record, data);
});
