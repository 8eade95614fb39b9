//! The trace formats, one file each, and the registry that names, sniffs and opens them.

pub mod ascii;
pub mod blkparse;
pub mod csv;
pub mod keys;
pub mod msr;
pub mod oracle;
pub mod spc;
pub mod systor;
pub mod tencent;
pub mod vscsi;

use super::compress::open_decompressed;
use super::text::TextReader;
use super::{ReadOptions, TraceError, TraceReader};
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
];

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
    let skip = opts.skip_bad;
    let text = |p: &Path| open_decompressed(p);
    Ok(match format {
        Format::Auto => return Err(TraceError::Format { path: path.into(), msg: "format must be resolved before opening".into() }),
        Format::Ssdsim | Format::Mqsim => Box::new(TextReader::new(text(path)?, ascii::Ascii::ssdsim(), path, skip)),
        Format::Disksim => Box::new(TextReader::new(text(path)?, ascii::Ascii::disksim(), path, skip)),
        Format::Heimdall => Box::new(TextReader::new(text(path)?, ascii::Ascii::heimdall(), path, skip)),
        Format::Keys => Box::new(TextReader::new(text(path)?, keys::Keys, path, skip)),
        Format::KeysU32be => Box::new(keys::KeysU32be::new(text(path)?, path)),
        Format::Spc => Box::new(TextReader::new(text(path)?, spc::Spc::default(), path, skip)),
        Format::Msr => Box::new(TextReader::new(text(path)?, msr::Msr::default(), path, skip)),
        Format::Blkparse => Box::new(TextReader::new(text(path)?, blkparse::Blkparse::default(), path, skip)),
        Format::VscsiCsv => Box::new(TextReader::new(text(path)?, vscsi::VscsiCsv::default(), path, skip)),
        Format::Tencent => Box::new(TextReader::new(text(path)?, tencent::Tencent::default(), path, skip)),
        Format::Systor => Box::new(TextReader::new(text(path)?, systor::Systor::default(), path, skip)),
        Format::Csv => {
            let mapping = opts.csv.clone().ok_or_else(|| TraceError::Format {
                path: path.into(),
                msg: "format csv needs a column mapping (--csv-columns)".into(),
            })?;
            Box::new(TextReader::new(text(path)?, csv::Csv::new(mapping), path, skip))
        }
        Format::OracleGeneral => Box::new(oracle::OracleGeneral::new(text(path)?, path)),
        Format::Binary => Box::new(super::binary::BinaryReader::new(text(path)?, path)?),
    })
}

/// Guesses the format of `path` from its first decompressed bytes.
pub fn sniff(path: &Path) -> Result<Format, TraceError> {
    let head = super::compress::peek(path, 64 * 1024)?;
    sniff_bytes(&head).ok_or_else(|| TraceError::Format {
        path: path.into(),
        msg: "cannot tell the trace format from its contents; name it with --format".into(),
    })
}

/// Format guess from a file's first bytes; `None` if nothing fits.
pub fn sniff_bytes(head: &[u8]) -> Option<Format> {
    if head.starts_with(super::binary::MAGIC) {
        return Some(Format::Binary);
    }
    // The text sniffers live beside their formats; each looks at whole lines.
    let text = std::str::from_utf8(head).ok().or_else(|| {
        // the cut may fall inside a multi-byte character
        std::str::from_utf8(&head[..head.len().saturating_sub(4)]).ok()
    });
    match text {
        Some(t) => sniff_text(t),
        None => sniff_binary(head),
    }
}

fn complete_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty()).collect();
    if !text.ends_with('\n') && lines.len() > 1 {
        lines.pop(); // possibly cut short
    }
    lines.truncate(200);
    lines
}

fn sniff_text(text: &str) -> Option<Format> {
    let lines = complete_lines(text);
    if lines.is_empty() {
        return None;
    }
    ascii::sniff(&lines)
        .or_else(|| keys::sniff(&lines))
}

fn sniff_binary(head: &[u8]) -> Option<Format> {
    oracle::sniff(head).or_else(|| keys::sniff_u32be(head))
}
