//! `ssdcache trace …`: formats, info, convert, gen.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use ssdcache::sim::flags::parse_page;
use ssdcache::sim::{pages_of, TraceSource};
use ssdcache::trace::binary::BinaryWriter;
use ssdcache::trace::formats::oracle::OracleWriter;
use ssdcache::trace::formats::FORMATS;
use ssdcache::trace::{Format, Op, ReadOptions, TraceReader, Unit, BATCH};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Where and how `trace gen` and `trace convert` write.
#[derive(Args)]
pub struct OutputArgs {
    /// Output: binary (requests as they are, fast to replay), ssdsim (text), keys (one page
    /// key per line per page access) or oracle-general (libCacheSim's binary, one record per page access).
    #[arg(long, default_value = "binary")]
    to: String,
    /// Page size for page streams (keys, oracle-general).
    #[arg(long, default_value = "4KiB")]
    page: String,
    /// Compress the output with zstd.
    #[arg(long)]
    zstd: bool,
    /// Replace the output file if it exists (it is refused otherwise: two arguments swapped must
    /// not overwrite a file). The output is written beside it and renamed over it at the end, so
    /// the input itself may be named, and a failed run leaves no partial file.
    #[arg(long)]
    force: bool,
}

#[derive(Subcommand)]
pub enum TraceCommand {
    /// List the trace formats.
    Formats,
    /// Statistics of a trace: requests, read/write mix, footprint, address span, sizes, duration.
    Info {
        /// Trace file; or a workload spec with --gen.
        input: String,
        /// Input format.
        #[arg(long, short, default_value = "auto")]
        format: Format,
        /// Treat INPUT as a workload generator spec.
        #[arg(long)]
        gen: bool,
        /// Page size for the footprint.
        #[arg(long, default_value = "4KiB")]
        page: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// What a workload is, in one pass: reuse distance and time, popularity (Zipf α), working set,
    /// read/write mix and rate over time, sequential runs, devices, an LBA × time heatmap.
    Analyze(crate::analyze_cmd::AnalyzeArgs),
    /// Write a synthetic workload to a file. `ssdcache trace gen --list` shows the generators.
    Gen {
        /// Workload spec, e.g. 'zipf(alpha=0.9,keys=1M,requests=10M,seed=1)'.
        #[arg(required_unless_present = "list")]
        spec: Option<String>,
        #[arg(required_unless_present = "list")]
        output: Option<PathBuf>,
        #[command(flatten)]
        out: OutputArgs,
        /// List the generators and their parameters.
        #[arg(long)]
        list: bool,
    },
    /// Convert a trace: to ssdcache's binary form (fast to replay), or to a page stream.
    Convert {
        input: PathBuf,
        output: PathBuf,
        /// Input format.
        #[arg(long, short, default_value = "auto")]
        format: Format,
        #[command(flatten)]
        out: OutputArgs,
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
        TraceCommand::Info { input, format, gen, page, json } => {
            let source = if gen {
                TraceSource::Gen(input)
            } else {
                TraceSource::File { path: input.into(), format, opts: ReadOptions::default() }
            };
            let (mut reader, used) = source.open()?;
            let page_bytes = parse_page(&page)?;
            let info = ssdcache::trace::info::analyze(reader.as_mut(), page_bytes).with_context(|| source.name())?;
            if json {
                let mut v = serde_json::to_value(&info)?;
                v["trace"] = source.name().into();
                v["format"] = used.into();
                println!("{v}");
            } else {
                println!("{:<16} {} ({})", "trace", source.name(), used);
                print!("{info}");
            }
            Ok(())
        }
        TraceCommand::Analyze(args) => crate::analyze_cmd::run(args),
        TraceCommand::Gen { list: true, .. } => {
            println!("Workloads (spec: NAME or NAME(key=value,...); mix(A,B,...,weights=...) takes components):\n");
            for g in ssdcache::trace::gen::GENERATORS {
                println!("  {:<10} {}", g.name, g.about);
                for param in g.params {
                    println!("      {:<10} default {:<14} {}", param.name, param.default, param.about);
                }
            }
            Ok(())
        }
        TraceCommand::Gen { spec, output, out, .. } => {
            let (mut reader, _) = TraceSource::Gen(spec.unwrap()).open()?;
            write_output(reader.as_mut(), &output.unwrap(), &out)
        }
        TraceCommand::Convert { input, output, format, out } => {
            let source = TraceSource::File { path: input.clone(), format, opts: ReadOptions::default() };
            let (mut reader, used) = source.open()?;
            if format == Format::Auto {
                eprintln!("{}: format {used} (auto)", input.display());
            }
            write_output(reader.as_mut(), &output, &out)
        }
    }
}

fn write_output(reader: &mut dyn TraceReader, path: &Path, out: &OutputArgs) -> Result<()> {
    let page_bytes = parse_page(&out.page)?;
    let n = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => bail!("{} is a directory", path.display()),
        // A pipe or a device (`/dev/stdout`) is written as it is: nothing there to lose or rename.
        Ok(m) if !m.is_file() => write_as(reader, path, &out.to, page_bytes, out.zstd),
        Ok(_) if !out.force => bail!("{} exists; --force replaces it", path.display()),
        _ => write_beside(path, |tmp| write_as(reader, tmp, &out.to, page_bytes, out.zstd)),
    }
    .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {n} records to {}", path.display());
    Ok(())
}

/// Runs `write` on a new file beside `path`, then renames it over `path`; on
/// an error removes it. The rename is atomic: `path` is whole, old or new.
fn write_beside(path: &Path, write: impl FnOnce(&Path) -> Result<u64>) -> Result<u64> {
    let name = path.file_name().with_context(|| format!("{} is not a file name", path.display()))?;
    let tmp = path.with_file_name(format!(".{}.part-{}", name.to_string_lossy(), std::process::id()));
    let n = write(&tmp).and_then(|n| {
        std::fs::rename(&tmp, path)?;
        Ok(n)
    });
    if n.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    n
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
        "oracle-general" => {
            let page_size = u32::try_from(page_bytes).context("--page too large for oracleGeneral")?;
            let mut w = OracleWriter::new(&mut out, page_size)?;
            while reader.read_batch(&mut batch, BATCH)? > 0 {
                for r in &batch {
                    for key in page_keys(r, unit, page_bytes)? {
                        w.push(r.time, key);
                        n += 1;
                    }
                }
            }
            w.finish()?;
        }
        "ssdsim" => {
            if unit == Unit::Pages {
                bail!("a key trace has no byte addresses to write as ssdsim; use keys or oracle-general");
            }
            while reader.read_batch(&mut batch, BATCH)? > 0 {
                for r in &batch {
                    let op = match r.op {
                        Op::Read => 1,
                        Op::Write => 0,
                        Op::Trim => bail!("ssdsim has no trim; use binary"),
                    };
                    if r.addr % 512 != 0 || r.len % 512 != 0 {
                        bail!(
                            "request at byte {} of {} bytes is not sector-aligned; ssdsim counts sectors",
                            r.addr,
                            r.len
                        );
                    }
                    writeln!(out, "{} {} {} {} {}", r.time, r.dev, r.addr / 512, r.len / 512, op)?;
                    n += 1;
                }
            }
        }
        other => bail!("unknown output form {other:?} (binary, ssdsim, keys, oracle-general)"),
    }
    out.flush()?;
    Ok(n)
}

/// Page keys of a request, exactly as the simulator forms them.
fn page_keys(r: &ssdcache::trace::Request, unit: Unit, page_bytes: u64) -> Result<impl Iterator<Item = u64>> {
    Ok(pages_of(r, unit, page_bytes, 0)?.keys())
}
