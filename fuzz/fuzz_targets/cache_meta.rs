//! The cache's on-disk parsers fed arbitrary bytes: a metadata slot
//! (`Meta::decode`), a superblock copy (`Superblock::decode`), and a whole
//! cache-file image (`Superblock::read_either`, then every metadata copy and
//! the proof rule of `recover::load`). Asserts no panic, no allocation sized
//! by an unchecked field (libFuzzer's malloc limit catches one), and that
//! whatever decodes re-encodes to the same value.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache_engine::meta::Meta;
use ssdcache_engine::Superblock;
use ssdcache_engine::{recover, MemDevice};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Meta::decode(data, None) {
        assert_eq!(Meta::decode(&m.encode(), Some(&m.geometry)).expect("re-encoded slot decodes"), m);
    }
    if let Some(Ok(sb)) = Superblock::decode(data) {
        assert_eq!(Superblock::decode(&sb.encode()), Some(Ok(sb)));
    }
    // As a cache file: the bytes, then zeroes up to 64 KiB, then the bytes
    // again (so both superblock copies and both metadata copies can be hit).
    let mut img = data.to_vec();
    img.resize(64 << 10, 0);
    img.extend_from_slice(data);
    let dev = MemDevice::from_vec(img);
    if let Ok(r) = Superblock::read_either(&dev) {
        assert!(r.sb.end() <= dev.contents().len() as u64);
        if let Ok(store) = r.sb.store(&dev) {
            let _ = recover::load(&store);
            let _ = recover::dirty_exposure(&store);
        }
    }
});
