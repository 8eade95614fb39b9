//! `ssdcache trace …`: formats, info, convert, gen.

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use ssdcache::sim::{page_key, TraceSource};
use ssdcache::trace::binary::BinaryWriter;
use ssdcache::trace::formats::FORMATS;
use ssdcache::trace::{Format, ReadOptions, TraceReader, Unit, BATCH};
use ssdcache::units::parse_bytes;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Subcommand)]
pub enum TraceCommand {
    /// List the trace formats.
    Formats,
    /// Convert a trace: to ssdcache's binary form (fast to replay), or to a page stream.
    Convert {
        input: PathBuf,
        output: PathBuf,
        /// Input format.
        #[arg(long, short, default_value = "auto")]
        format: Format,
        /// Output: binary (requests as they are), keys (one page key per line per page
        /// access) or oracle-general (libCacheSim's binary, one record per page access).
        #[arg(long, default_value = "binary")]
        to: String,
        /// Page size for page streams (keys, oracle-general).
        #[arg(long, default_value = "4KiB")]
        page: String,
        /// Compress the output with zstd.
        #[arg(long)]
        zstd: bool,
    },
}

pub fn run(cmd: TraceCommand) -> Result<()> {
    match cmd {
        TraceCommand::Formats => {
            for (name, _, about) in FORMATS {
                println!("  {name:<15} {about}");
            }
            println!("\ngz, xz, bz2 and zstd compressed files are read transparently.");
            Ok(())
        }
        TraceCommand::Convert { input, output, format, to, page, zstd } => {
            let source = TraceSource::File { path: input.clone(), format, opts: ReadOptions::default() };
            let (mut reader, used) = source.open()?;
            if format == Format::Auto {
                eprintln!("{}: format {used} (auto)", input.display());
            }
            let page_bytes = parse_bytes(&page).context("--page")?;
            let n = write_as(reader.as_mut(), &output, &to, page_bytes, zstd)
                .with_context(|| format!("writing {}", output.display()))?;
            eprintln!("wrote {n} records to {}", output.display());
            Ok(())
        }
    }
}

fn create(path: &Path, zstd: bool) -> Result<Box<dyn Write>> {
    let file = BufWriter::with_capacity(1 << 20, File::create(path)?);
    Ok(if zstd { Box::new(zstd_encoder(file)?) } else { Box::new(file) })
}

fn zstd_encoder<W: Write + 'static>(w: W) -> Result<impl Write> {
    Ok(zstd::stream::write::Encoder::new(w, 3)?.auto_finish())
}

/// Writes `reader` to `path` in the `to` form; returns records written.
pub fn write_as(reader: &mut dyn TraceReader, path: &Path, to: &str, page_bytes: u64, zstd: bool) -> Result<u64> {
    let unit = reader.unit();
    let mut out = create(path, zstd)?;
    let mut batch = Vec::with_capacity(BATCH);
    let mut n = 0u64;
    match to {
        "binary" => {
            let mut w = BinaryWriter::new(&mut out, unit)?;
            while reader.read_batch(&mut batch, BATCH)? > 0 {
                for r in &batch {
                    w.write(r)?;
                    n += 1;
                }
            }
            w.finish()?;
        }
        "keys" => {
            while reader.read_batch(&mut batch, BATCH)? > 0 {
                for r in &batch {
                    for key in page_keys(r, unit, page_bytes)? {
                        writeln!(out, "{key}")?;
                        n += 1;
                    }
                }
            }
        }
        other => bail!("unknown output form {other:?} (binary, keys, oracle-general)"),
    }
    out.flush()?;
    Ok(n)
}

/// Page keys of a request, as the simulator forms them.
fn page_keys(r: &ssdcache::trace::Request, unit: Unit, page_bytes: u64) -> Result<impl Iterator<Item = u64>> {
    let (first, last) = match unit {
        Unit::Pages => (r.addr, r.addr + r.len as u64 - 1),
        Unit::Bytes => (r.addr / page_bytes, (r.addr + r.len as u64 - 1) / page_bytes),
    };
    if page_key(r.dev, last).is_none() {
        bail!("page {last} of device {} out of range", r.dev);
    }
    let dev = r.dev;
    Ok((first..=last).map(move |p| page_key(dev, p).unwrap()))
}
