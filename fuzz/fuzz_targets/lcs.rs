#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache::trace::Format;

// Both views of the format: page mode (each key a page) and object mode (sizes checked).
fuzz_target!(|data: &[u8]| {
    ssdcache_fuzz::read_as(Format::Lcs, data);
    ssdcache_fuzz::read_objects_as(Format::Lcs, data);
});
