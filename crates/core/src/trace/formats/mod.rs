//! The trace formats, one file each, and the registry that names, sniffs and opens them.

pub mod ascii;
pub mod blkparse;
pub mod common;
pub mod csv;
pub mod keys;
pub mod lcs;
pub mod msr;
pub mod oracle;
pub mod record;
pub mod spc;
pub mod systor;
pub mod tencent;
pub mod twr;
pub mod vscsi;
pub mod webcachesim;

use super::compress::open_counted;
use super::objects::{ObjectLines, ObjectReader, ObjectsAsPages};
use super::text::TextReader;
use super::{ReadOptions, TraceError, TraceReader};
use std::io::BufRead;
use std::path::Path;

/// Every trace format ssdcache reads. `Auto` sniffs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Auto,
    /// UMass SPC: `ASU,LBA,size,opcode,timestamp`.
    Spc,
    /// MSR Cambridge CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
    Msr,
    /// SSDsim ascii: `time_ns dev lba_sectors size_sectors op(1=read)`.
    Ssdsim,
    /// MQSim ascii: the same columns as SSDsim.
    Mqsim,
    /// DiskSim ascii: `time_ms dev lba_sectors size_sectors flags(bit0=read)`.
    Disksim,
    /// Byte-addressed ascii (the Heimdall MSR cuts): `time_ms dev offset_bytes size_bytes op(1=read)`.
    Heimdall,
    /// blkparse default text output (`Q`/`D` events), or WiscSee's `pid D|C op offset size time …` events.
    Blkparse,
    /// libCacheSim's vSCSI CSV (CloudPhysics): `version,time,op(SCSI hex),size,lbn`.
    VscsiCsv,
    /// libCacheSim oracleGeneral binary: 24-byte records `u32 time, u64 id, u32 size, i64 next`.
    OracleGeneral,
    /// SNIA Tencent CBS: `Timestamp,Offset(sectors),Size(sectors),IOType(0=read),VolumeID`.
    Tencent,
    /// SYSTOR'17 VDI CSV: `Timestamp,Response,IOType,LUN,Offset,Size`.
    Systor,
    /// One decimal page number per line, each a one-page read.
    Keys,
    /// Big-endian u32 page numbers, each a one-page read.
    KeysU32be,
    /// Generic CSV with a column mapping.
    Csv,
    /// ssdcache's own compact binary form (`ssdcache trace convert`).
    Binary,
    /// A recording of `ssdcache serve --record`: `time_ns dev op offset bytes outcome`.
    Record,
    /// libCacheSim's lcs binary: an 8 KiB header, then versioned records with sizes (and ops).
    Lcs,
    /// Twitter's cache trace CSV: `timestamp,key,key_size,value_size,client,operation,ttl`.
    Twr,
    /// webcachesim / AdaptSize text: `time id size_bytes`, every request a GET.
    Webcachesim,
}

/// Names accepted by `--format`, with one line on each.
pub const FORMATS: &[(&str, Format, &str)] = &[
    ("auto", Format::Auto, "sniff the format from the file's contents"),
    ("spc", Format::Spc, "UMass SPC: ASU,LBA(sectors),size(bytes),opcode(r/w),timestamp(s)"),
    ("msr", Format::Msr, "MSR Cambridge CSV: filetime,host,disk,Read|Write,offset,size,response"),
    ("ssdsim", Format::Ssdsim, "SSDsim ascii: time_ns dev lba_sectors size_sectors op(1=read,0=write)"),
    ("mqsim", Format::Mqsim, "MQSim ascii: time_ns dev lba_sectors size_sectors op(1=read,0=write)"),
    ("disksim", Format::Disksim, "DiskSim ascii: time_ms dev lba_sectors size_sectors flags(bit0: 1=read)"),
    ("heimdall", Format::Heimdall, "byte ascii: time_ms dev offset_bytes size_bytes op(1=read,0=write)"),
    ("blkparse", Format::Blkparse, "blkparse text output (D or Q events), also WiscSee event lists"),
    ("vscsi-csv", Format::VscsiCsv, "libCacheSim vSCSI CSV: version,time,op(SCSI hex),size,lbn"),
    ("oracle-general", Format::OracleGeneral, "libCacheSim oracleGeneral binary (one page per record)"),
    ("tencent", Format::Tencent, "SNIA Tencent CBS: timestamp,offset(sectors),size(sectors),op(0=read),volume"),
    ("systor", Format::Systor, "SYSTOR'17: timestamp,response,R|W,LUN,offset,size"),
    ("keys", Format::Keys, "one decimal page number per line, each a one-page read"),
    ("keys-u32be", Format::KeysU32be, "big-endian u32 page numbers, each a one-page read"),
    ("csv", Format::Csv, "generic CSV, columns given by --csv-columns"),
    ("binary", Format::Binary, "ssdcache compact binary (written by `ssdcache trace convert`)"),
    ("record", Format::Record, "a recording of `ssdcache serve --record`: time_ns dev op offset bytes outcome"),
    ("lcs", Format::Lcs, "libCacheSim lcs binary (v1-v8): objects with sizes and ops"),
    ("twr", Format::Twr, "Twitter cache trace CSV: timestamp,key,key_size,value_size,client,op,ttl"),
    ("webcachesim", Format::Webcachesim, "webcachesim/AdaptSize text: time id size_bytes (object = id and size)"),
];

/// The formats whose requests carry object sizes (readable with `--unit object`).
pub const OBJECT_FORMATS: &[Format] =
    &[Format::OracleGeneral, Format::Lcs, Format::Twr, Format::Webcachesim, Format::Csv];

impl Format {
    pub fn name(self) -> &'static str {
        FORMATS.iter().find(|(_, f, _)| *f == self).map(|(n, _, _)| *n).unwrap_or("?")
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.to_ascii_lowercase();
        FORMATS.iter().find(|(n, _, _)| *n == s).map(|(_, f, _)| *f).ok_or_else(|| {
            let names: Vec<&str> = FORMATS.iter().map(|(n, _, _)| *n).collect();
            format!("unknown trace format {s:?} (known: {})", names.join(", "))
        })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Opens `path` as `format` (not `Auto`).
pub fn open_as(path: &Path, format: Format, opts: &ReadOptions) -> Result<Box<dyn TraceReader>, TraceError> {
    if format == Format::Auto {
        return Err(TraceError::Format { path: path.into(), msg: "format must be resolved before opening".into() });
    }
    reader_over(open_counted(path, opts.progress.as_ref())?, path, format, opts)
}

/// A reader of `format` (not `Auto`) over the decompressed bytes `src`; `path`
/// names the source in error messages.
pub fn reader_over(
    src: Box<dyn BufRead + Send>,
    path: &Path,
    format: Format,
    opts: &ReadOptions,
) -> Result<Box<dyn TraceReader>, TraceError> {
    let skip = opts.skip_bad;
    Ok(match format {
        Format::Auto => {
            return Err(TraceError::Format { path: path.into(), msg: "format must be resolved before opening".into() })
        }
        Format::Ssdsim | Format::Mqsim => Box::new(TextReader::new(src, ascii::Ascii::ssdsim(), path, skip)),
        Format::Disksim => Box::new(TextReader::new(src, ascii::Ascii::disksim(), path, skip)),
        Format::Heimdall => Box::new(TextReader::new(src, ascii::Ascii::heimdall(), path, skip)),
        Format::Keys => Box::new(TextReader::new(src, keys::Keys, path, skip)),
        Format::KeysU32be => Box::new(keys::KeysU32be::new(src, path)),
        Format::Spc => Box::new(TextReader::new(src, spc::Spc, path, skip)),
        Format::Msr => Box::new(TextReader::new(src, msr::Msr::default(), path, skip)),
        Format::Blkparse => Box::new(TextReader::new(src, blkparse::Blkparse::new(opts.blk_event), path, skip)),
        Format::VscsiCsv => Box::new(TextReader::new(src, vscsi::VscsiCsv, path, skip)),
        Format::Tencent => Box::new(TextReader::new(src, tencent::Tencent, path, skip)),
        Format::Systor => Box::new(TextReader::new(src, systor::Systor, path, skip)),
        Format::Record => Box::new(TextReader::new(src, record::Record::default(), path, skip)),
        Format::Csv => Box::new(TextReader::new(src, csv::Csv::new(csv_mapping(opts, path)?), path, skip)),
        Format::OracleGeneral => Box::new(oracle::OracleGeneral::new(src, path)),
        Format::Binary => Box::new(super::binary::BinaryReader::new(src, path)?),
        Format::Lcs | Format::Twr | Format::Webcachesim => {
            Box::new(ObjectsAsPages::new(objects_over(src, path, format, opts)?))
        }
    })
}

/// The `--csv-columns` mapping format csv needs (in object mode, its `offset=` names the key column).
fn csv_mapping(opts: &ReadOptions, path: &Path) -> Result<csv::CsvMapping, TraceError> {
    opts.csv.clone().ok_or_else(|| TraceError::Format {
        path: path.into(),
        msg: "format csv needs a column mapping (--csv-columns)".into(),
    })
}

/// An object reader ([`Unit`](super::Unit)-free: keys with sizes) of `format`
/// over the decompressed bytes `src`; an error for a format without sizes.
pub fn objects_over(
    src: Box<dyn BufRead + Send>,
    path: &Path,
    format: Format,
    opts: &ReadOptions,
) -> Result<Box<dyn ObjectReader>, TraceError> {
    let skip = opts.skip_bad;
    Ok(match format {
        Format::OracleGeneral => Box::new(oracle::OracleObjects::new(src, path)),
        Format::Lcs => Box::new(lcs::Lcs::new(src, path)?),
        Format::Twr => Box::new(ObjectLines::new(src, twr::Twr, path, skip)),
        Format::Webcachesim => Box::new(ObjectLines::new(src, webcachesim::Webcachesim, path, skip)),
        Format::Csv => {
            Box::new(ObjectLines::new(src, csv::CsvObjects(csv::Csv::new(csv_mapping(opts, path)?)), path, skip))
        }
        other => {
            let names: Vec<&str> = OBJECT_FORMATS.iter().map(|f| f.name()).collect();
            return Err(TraceError::Format {
                path: path.into(),
                msg: format!(
                    "format {other} has no object sizes: object mode reads {} (or use --unit page)",
                    names.join(", ")
                ),
            });
        }
    })
}

/// Opens `path` as `format` (not `Auto`) in object mode.
pub fn open_objects_as(path: &Path, format: Format, opts: &ReadOptions) -> Result<Box<dyn ObjectReader>, TraceError> {
    objects_over(open_counted(path, opts.progress.as_ref())?, path, format, opts)
}

/// How many decompressed bytes the sniffers look at.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// Guesses the format of `path` from its first decompressed bytes (never its name).
pub fn sniff(path: &Path) -> Result<Format, TraceError> {
    let head = super::compress::peek(path, SNIFF_BYTES)?;
    sniff_bytes(&head).ok_or_else(|| TraceError::Format { path: path.into(), msg: unknown_format(&head) })
}

/// Why [`sniff_bytes`] found no format in `head`, as an error message.
pub fn unknown_format(head: &[u8]) -> String {
    match file_kind(head) {
        Some(kind) => format!("this is {kind}, not a trace; if it really is one, name its format with --format"),
        None => "cannot tell the trace format from its contents; name it with --format".into(),
    }
}

/// Well-known file types by their signature, so that `auto` never reads one
/// as binary keys and the error can say what the file is.
pub fn file_kind(head: &[u8]) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"\x7fELF", "an ELF executable or library"),
        (b"MZ", "a Windows (PE/DOS) executable"),
        (b"\xfe\xed\xfa\xce", "a Mach-O executable"),
        (b"\xfe\xed\xfa\xcf", "a Mach-O executable"),
        (b"\xce\xfa\xed\xfe", "a Mach-O executable"),
        (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
        (b"\xca\xfe\xba\xbe", "a Mach-O universal binary or Java class"),
        (b"\0asm", "a WebAssembly module"),
        (b"!<arch>\n", "an ar archive (static library, .deb)"),
        (b"PK\x03\x04", "a zip archive (or jar, docx, wheel)"),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
        (b"%PDF", "a PDF document"),
        (b"\x89PNG", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"RIFF", "a RIFF file (WAV, AVI, WebP)"),
        (b"SQLite format 3\0", "an SQLite database"),
    ];
    if let Some((_, kind)) = SIGNATURES.iter().find(|(magic, _)| head.starts_with(magic)) {
        return Some(kind);
    }
    (head.get(257..262) == Some(b"ustar")).then_some("a tar archive")
}

/// Format guess from a file's first bytes (at most [`SNIFF_BYTES`]; fewer means
/// the whole file); `None` if nothing fits.
///
/// - ssdcache's binary form by its magic;
/// - text (UTF-8 without NUL bytes): the complete lines among the first 200 must
///   parse with one format's own parser (all but one in ten: a bad value here and
///   there should get a line-numbered error from the reader, not "unknown
///   format"), formats tried in the order of [`sniff_text`];
/// - otherwise, unless it is a known kind of file ([`file_kind`]: an executable,
///   an archive, an image…), binary record formats: oracleGeneral if its
///   records are plausible, else big-endian u32 keys if they behave like page
///   accesses ([`keys::sniff_u32be`]).
///
/// `csv` is never guessed: it needs a column mapping.
pub fn sniff_bytes(head: &[u8]) -> Option<Format> {
    if head.starts_with(super::binary::MAGIC) {
        return Some(Format::Binary);
    }
    let text = match std::str::from_utf8(head) {
        Ok(t) => Some(t),
        // a full window may end inside a multi-byte character
        Err(e) if e.error_len().is_none() && head.len() >= SNIFF_BYTES => {
            std::str::from_utf8(&head[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    };
    match text {
        Some(t) if !t.contains('\0') => sniff_text(t),
        _ => sniff_binary(head),
    }
}

fn complete_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> =
        text.lines().map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty()).collect();
    if !text.ends_with('\n') && lines.len() > 1 {
        lines.pop(); // possibly cut short
    }
    lines.truncate(200);
    lines
}

/// Each text sniffer runs its format's own parser over the lines and accepts only
/// if at least nine lines in ten parse and one is a request ([`common::Probe::fits`]).
/// The formats' columns keep them apart: whitespace-separated five numbers
/// (ascii family), one number (keys), blkparse/WiscSee events, then comma
/// separated with 7 columns and `Read`/`Write` (MSR), 6 with `R`/`W` (SYSTOR),
/// `r`/`w` in the fourth (SPC), 0/1 in the fourth (Tencent; before vSCSI, whose
/// fourth column is a byte size), a SCSI opcode in the third (vSCSI).
fn sniff_text(text: &str) -> Option<Format> {
    let lines = complete_lines(text);
    if lines.is_empty() {
        return None;
    }
    record::sniff(&lines)
        .or_else(|| ascii::sniff(&lines))
        .or_else(|| keys::sniff(&lines))
        .or_else(|| blkparse::sniff(&lines))
        .or_else(|| msr::sniff(&lines))
        .or_else(|| systor::sniff(&lines))
        .or_else(|| spc::sniff(&lines))
        .or_else(|| tencent::sniff(&lines))
        .or_else(|| vscsi::sniff(&lines))
        .or_else(|| webcachesim::sniff(&lines))
        .or_else(|| twr::sniff(&lines))
}

fn sniff_binary(head: &[u8]) -> Option<Format> {
    if file_kind(head).is_some() {
        return None;
    }
    lcs::sniff(head).or_else(|| oracle::sniff(head)).or_else(|| keys::sniff_u32be(head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_sniffs_from_a_few_lines() {
        let cases: &[(&str, Format)] = &[
            ("0 0 303567 7 0\r\n26214000 1 240840 6 0\r\n", Format::Ssdsim),
            ("0.000 0 11562803200 4096 1\n223.412 0 3159347200 36864 0\n", Format::Heimdall),
            ("0.5 0 17 3 1\n1.5 0 19 1 0\n", Format::Disksim),
            ("0\n1\n*\n2\n", Format::Keys),
            ("  8,0    3        6     0.000008096   697  D  WS 223490 + 8 [kjournald]\n", Format::Blkparse),
            (
                "35181 D read 136318976 4096 0.000000000 0 False\n0 C read 136327168 4096 0.0001 0.0001 False\n",
                Format::Blkparse,
            ),
            ("128166385295514663,hm,0,Write,9056014336,2048,2833\n", Format::Msr),
            (
                "Timestamp,Response,IOType,LUN,Offset,Size\n1455591804.310701000,0.006475000,R,0,203468398592,32768\n",
                Format::Systor,
            ),
            ("0,303567,3584,w,0.000000\n1,55590,3072,r,0.000000\n", Format::Spc),
            ("1538323200,12910952,8,1,1283\n1538323200,12910960,8,0,1283\n", Format::Tencent),
            ("version,time,op,size,lbn\n1,5633898,2a,512,42932745\n", Format::VscsiCsv),
            ("1,5633898,28,512,42932745\n", Format::VscsiCsv),
        ];
        for (text, want) in cases {
            assert_eq!(sniff_bytes(text.as_bytes()), Some(*want), "{text:?}");
        }
        assert_eq!(sniff_bytes(b"hello, world\n"), None);
        assert_eq!(sniff_bytes(b""), None);
        assert_eq!(sniff_bytes(b"SSDCTRC1\0\0\0\0\0\0\0\0"), Some(Format::Binary));
    }

    #[test]
    fn binary_formats_sniff() {
        let keys: Vec<u64> = (0..1000).map(|i| i % 37).collect();
        let times: Vec<u64> = (0..1000).map(|i| i * 1_000_000).collect();
        let og = oracle::write_oracle(Vec::new(), 4096, &times, &keys).unwrap();
        assert_eq!(sniff_bytes(&og), Some(Format::OracleGeneral));
        let be: Vec<u8> = (0u32..1000).flat_map(|k| (k % 37).to_be_bytes()).collect();
        assert_eq!(sniff_bytes(&be), Some(Format::KeysU32be));
    }

    #[test]
    fn executables_and_random_bytes_are_not_keys() {
        // This test's own executable: an ELF file, a multiple of 4 bytes long
        // or not; it used to sniff as keys-u32be (whole-file check aside).
        let exe = std::env::current_exe().unwrap();
        let head = crate::trace::compress::peek(&exe, SNIFF_BYTES).unwrap();
        assert_eq!(file_kind(&head), Some("an ELF executable or library"));
        assert_eq!(sniff_bytes(&head), None);
        let e = sniff(&exe).unwrap_err().to_string();
        assert!(e.contains("this is an ELF executable") && e.contains("--format"), "{e}");
        // Without its signature, its zero words still give it away.
        let mut body = head.clone();
        body[..4].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(sniff_bytes(&body), None);
        // Random bytes, a whole sniff window and a short file.
        use rand::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for len in [SNIFF_BYTES, 4096] {
            let mut bytes = vec![0u8; len];
            rng.fill_bytes(&mut bytes);
            assert_eq!(sniff_bytes(&bytes), None, "{len} random bytes");
            let e = crate::trace::from_bytes(bytes, Format::Auto, &ReadOptions::default()).err().unwrap();
            assert!(e.to_string().starts_with("<memory>: cannot tell") && e.to_string().contains("--format"), "{e}");
        }
        // A tar archive's signature is at byte 257.
        let mut tar = vec![0u8; 1024];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(file_kind(&tar), Some("a tar archive"));
        assert_eq!(file_kind(b"0 0 303567 7 0\n"), None);
    }

    #[test]
    fn a_cut_last_line_is_ignored() {
        let mut text = "0,303567,3584,w,0.000000\n".repeat(3000);
        text.truncate(SNIFF_BYTES); // cut inside a line
        assert_eq!(sniff_bytes(text.as_bytes()), Some(Format::Spc));
    }

    /// A temp file that removes itself.
    struct Temp(std::path::PathBuf);
    impl Temp {
        fn new(name: &str, bytes: &[u8]) -> Temp {
            let p = std::env::temp_dir().join(format!("ssdcache-fmt-{}-{name}", std::process::id()));
            std::fs::write(&p, bytes).unwrap();
            Temp(p)
        }
    }
    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// (format, good line, bad line, field the error names)
    const BAD: &[(Format, &str, &str, &str)] = &[
        (Format::Spc, "0,303567,3584,w,0.000000", "0,303567,3584,x,0.1", "opcode"),
        (
            Format::Msr,
            "128166385295514663,hm,0,Write,9056014336,2048,2833",
            "128166385295514663,hm,0,Write,9056014336,0,2833",
            "size",
        ),
        (
            Format::Blkparse,
            "8,0 3 6 0.000008096 697 D WS 223490 + 8 [k]",
            "8,0 3 7 0.1 697 D WS 223490 + x [k]",
            "size",
        ),
        (Format::Blkparse, "1 D read 0 4096 0.0 0 False", "1 D erase 0 4096 0.0 0 False", "op"),
        (Format::VscsiCsv, "1,5633898,2a,512,42932745", "1,5633898,2z,512,42932745", "op"),
        (Format::Tencent, "1538323200,12910952,8,1,1283", "1538323200,12910952,8,3,1283", "iotype"),
        (
            Format::Systor,
            "1455591804.310701000,0.006475000,R,0,203468398592,32768",
            "1455591804.3,0.0064,R,lun0,0,512",
            "lun",
        ),
        (Format::Keys, "17", "17x", "key"),
        (Format::Ssdsim, "0 0 303567 7 0", "0 0 303567 7 2", "op"),
    ];

    #[test]
    fn errors_name_file_line_and_field() {
        for (i, &(format, good, bad, field)) in BAD.iter().enumerate() {
            let f = Temp::new(&format!("bad{i}"), format!("{good}\n{bad}\n{good}\n").as_bytes());
            let (mut r, used) = crate::trace::open(&f.0, format, &ReadOptions::default()).unwrap();
            assert_eq!(used, format);
            let e = crate::trace::read_all(r.as_mut()).unwrap_err().to_string();
            let want = format!("{}:2: field {field}: ", f.0.display());
            assert!(e.starts_with(&want), "{format}: {e:?} does not start with {want:?}");

            // --skip-bad: counted and skipped, the good lines still read
            let opts = ReadOptions { skip_bad: true, ..Default::default() };
            let (mut r, _) = crate::trace::open(&f.0, format, &opts).unwrap();
            assert_eq!(crate::trace::read_all(r.as_mut()).unwrap().len(), 2, "{format}");
            assert_eq!(r.skipped(), 1, "{format}");
        }
    }

    #[test]
    fn compressed_files_keep_line_numbers_and_sniff() {
        use std::io::Write;
        let text = "version,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633898,2a,0,42932745\n".to_string()
            + &"1,5633898,2a,512,42932745\n".repeat(8);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text.as_bytes()).unwrap();
        let f = Temp::new("vscsi.bin", &gz.finish().unwrap());
        let (mut r, used) = crate::trace::open(&f.0, Format::Auto, &ReadOptions::default()).unwrap();
        assert_eq!(used, Format::VscsiCsv);
        let e = crate::trace::read_all(r.as_mut()).unwrap_err().to_string();
        assert!(e.contains(":3: field size: size is zero"), "{e}");
    }

    #[test]
    fn from_bytes_matches_open() {
        let text = b"0,303567,3584,w,0.000000\n1,55590,3072,r,0.5\n".to_vec();
        let (mut r, used) = crate::trace::from_bytes(text.clone(), Format::Auto, &ReadOptions::default()).unwrap();
        assert_eq!(used, Format::Spc);
        let from_mem = crate::trace::read_all(r.as_mut()).unwrap();
        let f = Temp::new("spc", &text);
        let (mut r, _) = crate::trace::open(&f.0, Format::Auto, &ReadOptions::default()).unwrap();
        assert_eq!(crate::trace::read_all(r.as_mut()).unwrap(), from_mem);
        let e =
            crate::trace::from_bytes(b"what is this".to_vec(), Format::Auto, &ReadOptions::default()).err().unwrap();
        assert!(e.to_string().starts_with("<memory>: cannot tell"), "{e}");
        let e = crate::trace::from_bytes(vec![], Format::Csv, &ReadOptions::default()).err().unwrap();
        assert!(e.to_string().contains("--csv-columns"), "{e}");
    }

    #[test]
    fn blkparse_queue_events_through_options() {
        let text = b"8,0 3 1 0.000000000 697 Q W 223490 + 8 [k]\n8,0 3 6 0.000008096 697 D W 223490 + 8 [k]\n".to_vec();
        let opts = ReadOptions { blk_event: blkparse::BlkEvent::Queue, ..Default::default() };
        let (mut r, _) = crate::trace::from_bytes(text.clone(), Format::Blkparse, &opts).unwrap();
        assert_eq!(crate::trace::read_all(r.as_mut()).unwrap()[0].time, 0);
        let (mut r, _) = crate::trace::from_bytes(text, Format::Blkparse, &ReadOptions::default()).unwrap();
        assert_eq!(crate::trace::read_all(r.as_mut()).unwrap().len(), 1);
    }

    #[test]
    fn csv_through_options() {
        let opts =
            ReadOptions { csv: Some("time=0,offset=1,size=2,op=3,header=1".parse().unwrap()), ..Default::default() };
        let text = b"t,off,size,op\n5,4096,512,w\n6,0,512,x\n".to_vec();
        let (mut r, _) = crate::trace::from_bytes(text, Format::Csv, &opts).unwrap();
        let e = crate::trace::read_all(r.as_mut()).unwrap_err().to_string();
        assert!(e.starts_with("<memory>:3: field op: "), "{e}");
    }
}
