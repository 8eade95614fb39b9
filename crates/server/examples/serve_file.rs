//! Serves one file (or block device) over NBD.
//!
//!   cargo run -p ssdcache-server --example serve_file -- FILE --listen 127.0.0.1:10809 [--export NAME]
//!
//! Prints `listening on ADDR` once bound (with `--listen 127.0.0.1:0` the
//! kernel picks a free port and this line tells which). SIGINT or SIGTERM
//! stops it gracefully: in-flight requests finish, the file is synced, and it
//! exits 0.

use clap::Parser;
use ssdcache_block::FileBackend;
use ssdcache_server::{Export, Server, ServerConfig};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(about = "Serve a file or block device over NBD")]
struct Args {
    /// File or block device to export.
    file: PathBuf,
    /// Address to listen on (loopback unless told otherwise; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:10809")]
    listen: SocketAddr,
    /// Export name (the empty default name also selects it).
    #[arg(long, default_value = "")]
    export: String,
    /// Description shown by NBD_OPT_LIST / nbdinfo.
    #[arg(long, default_value = "")]
    description: String,
    /// Refuse writes.
    #[arg(long)]
    read_only: bool,
    /// Largest READ/WRITE payload in bytes (advertised maximum block size).
    #[arg(long, default_value_t = 32 << 20)]
    max_block: u32,
    /// Seconds connections get to drain on shutdown.
    #[arg(long, default_value_t = 30)]
    drain_timeout: u64,
    /// Log each connection (-v) or more (-vv) to stderr.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    ssdcache_server::stderr_log::init("serve_file", args.verbose);

    let backend = FileBackend::open(&args.file, args.read_only)?;
    let export = Export::new(args.export.clone(), Arc::new(backend)).with_description(args.description.clone());
    let max_inflight_bytes = (64usize << 20).max(2 * args.max_block as usize);
    let config = ServerConfig {
        max_block: args.max_block,
        max_inflight_bytes,
        buffer_memory: (256usize << 20).max(max_inflight_bytes),
        drain_timeout: Duration::from_secs(args.drain_timeout),
        ..ServerConfig::default()
    };
    let server = Server::new(vec![export], config)?;

    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        let handle = server.start(listener)?;
        println!("listening on {}", handle.local_addr());
        std::io::stdout().flush()?;

        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r?,
            _ = term.recv() => {}
        }
        eprintln!("serve_file: stopping");
        let report = handle.shutdown().await?;
        eprintln!("serve_file: stopped after {} connection(s), {} aborted", report.connections, report.aborted);
        Ok(())
    })
}
