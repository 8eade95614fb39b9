//! What every fuzz target checks, whatever the bytes: a reader over them never
//! panics, allocates only what its input accounts for (libFuzzer's
//! `-malloc_limit_mb`/`-rss_limit_mb` catch the rest), and terminates: each
//! request consumes input, so a reader that keeps returning requests past the
//! input's length is stuck.

pub mod nbd;

use ssdcache::trace::{self, Format, ReadOptions, Request, TraceReader, Unit};

/// Reads `data` as `format` with and without `--skip-bad`.
pub fn read_as(format: Format, data: &[u8]) {
    read_with(format, data, &ReadOptions::default());
    read_with(format, data, &ReadOptions { skip_bad: true, ..Default::default() });
}

/// Reads `data` as `format` with `opts`, checking the reader's contract.
pub fn read_with(format: Format, data: &[u8], opts: &ReadOptions) {
    let (mut reader, used) = match trace::from_bytes(data.to_vec(), format, opts) {
        Ok(r) => r,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    if format != Format::Auto {
        assert_eq!(used, format);
    }
    drain(reader.as_mut(), used, data.len());
}

/// Reads to the end (or the first error) in small, varying batches.
pub fn drain(reader: &mut dyn TraceReader, format: Format, input_len: usize) -> Vec<Request> {
    let mut all = Vec::new();
    let mut out = Vec::new();
    let mut calls = 0usize;
    loop {
        calls += 1;
        assert!(calls <= input_len + 2, "reader does not terminate: {calls} calls on {input_len} bytes");
        let max = 1 + calls % 7;
        match reader.read_batch(&mut out, max) {
            Ok(0) => {
                assert!(out.is_empty());
                // the end stays the end
                assert_eq!(reader.read_batch(&mut out, max).map_err(|e| e.to_string()), Ok(0));
                break;
            }
            Ok(n) => {
                assert_eq!(n, out.len());
                assert!(n <= max, "read {n} requests when asked for {max}");
                for r in &out {
                    assert!(r.len > 0, "zero-length request {r:?}");
                    assert!((r.dev as u64) < ssdcache::key::MAX_DEVICES, "device out of range {r:?}");
                }
                all.extend_from_slice(&out);
                assert!(all.len() <= input_len, "{} requests from {input_len} bytes", all.len());
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.starts_with("<memory>"), "error does not name its source: {msg}");
                break;
            }
        }
    }
    if let Some(first) = all.first() {
        // every format but the binary one rebases times to the first request
        if format != Format::Binary {
            assert_eq!(first.time, 0, "{format}: first request not at time 0");
        }
    }
    if matches!(format, Format::Keys | Format::KeysU32be | Format::OracleGeneral) {
        assert_eq!(reader.unit(), Unit::Pages);
    }
    all
}

/// Reads `data` as `format` in object mode (`--unit object`), with and without
/// `--skip-bad`: every object has a size in 1 ..= 2^48 and the reader terminates.
pub fn read_objects_as(format: Format, data: &[u8]) {
    for skip_bad in [false, true] {
        let opts = ReadOptions { skip_bad, ..Default::default() };
        let src = Box::new(std::io::Cursor::new(data.to_vec()));
        let Ok(mut reader) = trace::formats::objects_over(src, std::path::Path::new("<memory>"), format, &opts) else {
            continue;
        };
        let (mut out, mut total, mut calls) = (Vec::new(), 0usize, 0usize);
        loop {
            calls += 1;
            assert!(calls <= data.len() + 2, "object reader does not terminate");
            match reader.read_objects(&mut out, 1 + calls % 7) {
                Ok(0) => break,
                Ok(n) => {
                    total += n;
                    assert!(total <= data.len(), "{total} objects from {} bytes", data.len());
                    for o in &out {
                        assert!(o.size > 0 && o.size <= trace::objects::MAX_OBJECT_BYTES, "{o:?}");
                    }
                }
                Err(e) => {
                    assert!(e.to_string().starts_with("<memory>"), "{e}");
                    break;
                }
            }
        }
    }
}
