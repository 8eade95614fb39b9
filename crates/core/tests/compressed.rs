//! A compressed trace, decoded on the reader's own thread, reads to exactly the
//! requests of the same trace uncompressed: gzip, zstd, xz and bzip2, for every
//! sample trace in `../shared/traces` and for generated MSR, SPC and SSDsim text
//! and ssdcache's binary form large enough to pass through many decode buffers.
//! Damaged files (cut short, a byte changed) end in an error, never a hang or
//! fewer requests without one.

mod common;

use ssdcache::trace::binary::BinaryWriter;
use ssdcache::trace::{self, Format, Op, ReadOptions, Request, TraceError, Unit};
use std::io::{Read, Write};
use std::path::Path;

const CODECS: &[&str] = &["gz", "zst", "xz", "bz2"];

fn compress(codec: &str, data: &[u8]) -> Vec<u8> {
    match codec {
        "gz" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "zst" => {
            // with a checksum, as the zstd command writes by default
            let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
            e.include_checksum(true).unwrap();
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "xz" => {
            let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "bz2" => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        _ => unreachable!(),
    }
}

fn read_file(path: &Path, format: Format) -> Result<Vec<Request>, TraceError> {
    let (mut reader, _) = trace::open(path, format, &ReadOptions::default())?;
    trace::read_all(reader.as_mut())
}

/// `data` read plain and through every codec gives the same requests (at least `min` of them).
fn same_requests(name: &str, data: &[u8], format: Format, min: usize) {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join(name);
    std::fs::write(&plain, data).unwrap();
    let want = read_file(&plain, format).unwrap_or_else(|e| panic!("{e}"));
    assert!(want.len() >= min, "{name}: {} requests", want.len());
    for codec in CODECS {
        let path = dir.path().join(format!("{name}.{codec}"));
        std::fs::write(&path, compress(codec, data)).unwrap();
        let got = read_file(&path, format).unwrap_or_else(|e| panic!("{e}"));
        assert!(got == want, "{name}.{codec}: {} requests, plain {}", got.len(), want.len());
    }
}

/// A small seeded generator (xorshift), so the test needs no data files.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `lines` MSR, SPC or SSDsim lines: several decode buffers (256 KiB) of text.
fn generated(format: Format, lines: usize) -> Vec<u8> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = String::new();
    let mut t = 128_166_372_000_000_000u64;
    for i in 0..lines {
        t += rng.below(5000);
        let size = 512 << rng.below(8);
        let line = match format {
            Format::Msr => format!(
                "{t},{},{},{},{},{size},{}\n",
                ["hm", "src1"][rng.below(2) as usize],
                rng.below(3),
                ["Read", "Write"][rng.below(2) as usize],
                rng.below(1 << 25) * 512,
                rng.below(60_000)
            ),
            Format::Spc => format!(
                "{},{},{size},{},{}.{:06}\n",
                rng.below(24),
                rng.below(1 << 26),
                ["r", "w"][rng.below(2) as usize],
                i / 1000,
                i % 1000 * 997 % 1_000_000
            ),
            Format::Ssdsim => {
                format!(
                    "{} {} {} {} {}\n",
                    t - 128_166_372_000_000_000,
                    rng.below(16),
                    rng.below(1 << 30),
                    1 + rng.below(64),
                    rng.below(2)
                )
            }
            _ => unreachable!(),
        };
        out.push_str(&line);
        if i % 997 == 5 {
            out.push_str("\r\n"); // a blank line, CRLF
        }
    }
    out.into_bytes()
}

#[test]
fn generated_text_reads_the_same_compressed() {
    same_requests("gen.msr", &generated(Format::Msr, 40_000), Format::Msr, 40_000);
    same_requests("gen.spc", &generated(Format::Spc, 40_000), Format::Spc, 40_000);
    same_requests("gen.ssdsim", &generated(Format::Ssdsim, 40_000), Format::Ssdsim, 40_000);
}

#[test]
fn the_binary_form_reads_the_same_compressed() {
    let mut rng = Rng(7);
    let reqs: Vec<Request> = (0..60_000u64)
        .map(|i| Request {
            time: i * 1000,
            addr: rng.below(1 << 40),
            len: 1 + rng.below(1 << 20) as u32,
            dev: rng.below(8) as u32,
            op: [Op::Read, Op::Write, Op::Trim][rng.below(3) as usize],
        })
        .collect();
    let mut w = BinaryWriter::new(Vec::new(), Unit::Bytes).unwrap();
    for r in &reqs {
        w.write(r).unwrap();
    }
    let bytes = w.finish().unwrap();
    same_requests("gen.bin", &bytes, Format::Binary, reqs.len());
}

#[test]
fn every_sample_trace_reads_the_same_compressed() {
    let Some(dir) = common::traces_dir() else { return };
    let mut files = Vec::new();
    for sub in std::fs::read_dir(&dir).unwrap() {
        let sub = sub.unwrap().path();
        if sub.is_dir() {
            for f in std::fs::read_dir(&sub).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e == "gz") {
                    files.push(f);
                }
            }
        }
    }
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        let mut data = Vec::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(&f).unwrap()).read_to_end(&mut data).unwrap();
        let format = trace::formats::sniff_bytes(&data[..data.len().min(trace::formats::SNIFF_BYTES)])
            .unwrap_or_else(|| panic!("{}: no format", f.display()));
        let name = f.file_name().unwrap().to_string_lossy().trim_end_matches(".gz").to_string();
        same_requests(&name, &data, format, 1);
    }
}

#[test]
fn a_damaged_compressed_file_is_an_error() {
    let data = generated(Format::Msr, 30_000);
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.msr");
    std::fs::write(&plain, &data).unwrap();
    let full = read_file(&plain, Format::Msr).unwrap().len();
    for codec in CODECS {
        let packed = compress(codec, &data);
        // cut short at several places, and one byte changed in the middle
        let mut damaged: Vec<(String, Vec<u8>)> =
            [3, 2, 1].iter().map(|&k| (format!("cut at {k}/4"), packed[..packed.len() * k / 4].to_vec())).collect();
        let mut flipped = packed.clone();
        flipped[packed.len() / 2] ^= 0x55;
        damaged.push(("a byte changed".into(), flipped));
        for (what, bytes) in damaged {
            let path = dir.path().join(format!("damaged.msr.{codec}"));
            std::fs::write(&path, &bytes).unwrap();
            match read_file(&path, Format::Msr) {
                Err(e) => {
                    let msg = e.to_string();
                    assert!(msg.starts_with(&path.display().to_string()) && !msg.contains('\n'), "{msg}");
                }
                Ok(reqs) => panic!("{codec}, {what}: {} requests of {full} and no error", reqs.len()),
            }
        }
    }
}
