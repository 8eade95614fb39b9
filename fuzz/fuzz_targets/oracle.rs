#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache::trace::formats::oracle::{next_access_vtimes, write_oracle, RECORD};
use ssdcache::trace::{self, Format, ReadOptions};

// Reading arbitrary records, the sniffer on them, and the writer: whatever keys
// were read, writing them and reading back gives the same keys, with next-access
// positions that point at the same key.
fuzz_target!(|data: &[u8]| {
    ssdcache_fuzz::read_as(Format::OracleGeneral, data);
    let _ = trace::formats::oracle::sniff(data);
    let Ok((mut r, _)) = trace::from_bytes(data.to_vec(), Format::OracleGeneral, &ReadOptions::default()) else {
        return;
    };
    let reqs = ssdcache_fuzz::drain(r.as_mut(), Format::OracleGeneral, data.len());
    let keys: Vec<u64> = reqs.iter().map(|r| r.addr).collect();
    let times: Vec<u64> = reqs.iter().map(|r| r.time).collect();
    let bytes = write_oracle(Vec::new(), 4096, &times, &keys).unwrap();
    assert_eq!(bytes.len(), keys.len() * RECORD);
    let next = next_access_vtimes(&keys);
    for (i, &n) in next.iter().enumerate() {
        if n != -1 {
            let j = (n - 1) as usize;
            assert!(j > i && keys[j] == keys[i]);
            assert!(keys[i + 1..j].iter().all(|&k| k != keys[i]));
        } else {
            assert!(keys[i + 1..].iter().all(|&k| k != keys[i]));
        }
    }
    if !keys.is_empty() {
        assert_eq!(trace::formats::oracle::sniff(&bytes), Some(Format::OracleGeneral));
    }
    let (mut r, _) = trace::from_bytes(bytes, Format::OracleGeneral, &ReadOptions::default()).unwrap();
    let back: Vec<u64> = trace::read_all(r.as_mut()).unwrap().iter().map(|r| r.addr).collect();
    assert_eq!(back, keys);
});
