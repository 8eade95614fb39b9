#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache::trace::Format;

// SSDsim/MQSim, DiskSim and the Heimdall byte variant share one parser.
fuzz_target!(|data: &[u8]| {
    for f in [Format::Ssdsim, Format::Disksim, Format::Heimdall] {
        ssdcache_fuzz::read_as(f, data);
    }
});
