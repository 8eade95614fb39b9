#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache::trace::formats::csv::CsvMapping;
use ssdcache::trace::{Format, ReadOptions};

// The first line is the column mapping (--csv-columns), the rest the trace. A mapping
// that parses must print as a string that parses back to itself.
fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let Ok(text) = std::str::from_utf8(&data[..split]) else { return };
    let mapping = match text.parse::<CsvMapping>() {
        Ok(m) => m,
        Err(e) => {
            assert!(!e.is_empty());
            return;
        }
    };
    let again: CsvMapping =
        mapping.to_string().parse().unwrap_or_else(|e| panic!("{mapping} does not parse back: {e}"));
    assert_eq!(again, mapping);
    let rest = data.get(split + 1..).unwrap_or(&[]);
    for skip_bad in [false, true] {
        let opts = ReadOptions { skip_bad, csv: Some(mapping.clone()), ..Default::default() };
        ssdcache_fuzz::read_with(Format::Csv, rest, &opts);
    }
});
