//! The `ssdcache` command.

mod analyze_cmd;
mod heap;
mod mrc_cmd;
mod objects_cmd;
mod output;
mod plot;
mod policies;
mod progress;
mod record_cmd;
mod run;
mod serve_cmd;
mod serve_limits;
mod serve_net;
mod set_cmd;
mod trace_cmd;
mod whatif_cmd;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

#[derive(Parser)]
#[command(name = "ssdcache", version, about = "Flash-aware storage caching: simulate cache policies on block traces")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay traces through cache policies and report device accesses, not only hit ratio.
    ///
    /// With no arguments, runs every classic policy on a bundled synthetic workload.
    /// Lists (--policy, --cache, --mode, repeated --trace/--gen) run every combination in parallel.
    Sim(run::SimArgs),
    /// Miss-ratio curve of a trace in one pass: every cache size's LRU misses
    /// (read, write, request) and dirty write-backs, exact, from stack distances.
    Mrc(mrc_cmd::MrcArgs),
    /// List every policy with its parameters and defaults, and the cache modes.
    Policies,
    /// List the backing device models (--device), their parameters and presets.
    Devices,
    /// Inspect, convert and generate traces.
    Trace {
        #[command(subcommand)]
        command: trace_cmd::TraceCommand,
    },
    /// Plot sweep results (CSV or JSON from `sim`): runs `python3 -m ssdcache.plot` with
    /// the arguments given. Needs the Python package (`pip install .`).
    Plot(plot::PlotArgs),
    /// Format a file as a persistent write-back SSD cache (paper 000's PWC) for a backing file.
    Create(serve_cmd::CreateArgs),
    /// Serve a backing file through its SSD cache over NBD (SIGTERM/SIGINT: write back and stop
    /// cleanly; SIGUSR1: run the caching-and-eviction procedure now).
    // Boxed: its many flags make it far larger than the other commands.
    Serve(Box<serve_cmd::ServeArgs>),
    /// Check a cache's superblock and metadata copies, checksums, clean/update bits; exit 1 if it
    /// cannot start.
    Check(serve_cmd::CheckArgs),
    /// Write every segment the cache may hold dirty back to the backing store, offline (after a
    /// crash, or when `serve` refuses to start), verify it, and leave the cache clean.
    Drain(serve_cmd::DrainArgs),
    /// A cache's state: from its running server (hit ratios, dirty segments, bytes per device,
    /// maintenance), or from its files when none runs.
    Status(serve_cmd::StatusArgs),
    /// Make a running server write every dirty segment back now.
    Flush(serve_cmd::ControlArgs),
    /// Make a running server run the caching-and-eviction procedure now.
    Maintain(serve_cmd::ControlArgs),
    /// Change a cache's policy, admission or cleaner settings now, without a restart, and keep them
    /// in the cache file (kept for the next start when no server runs); --list names the keys.
    Set(set_cmd::SetArgs),
    /// Make a running server record every request it answers (start PATH | stop): a trace
    /// `ssdcache sim` replays, to ask what another policy or size would have done.
    Record(record_cmd::RecordArgs),
    /// What the running server's shadow says another policy, or a cache from 1/4x to 4x this one,
    /// would do with the workload it serves (`serve --whatif`, on by default).
    Whatif(whatif_cmd::WhatIfArgs),
}

fn main() {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_)) {
        // A reader that goes away (`ssdcache check | grep -q clean`, `| head`)
        // ends the command quietly, as for any Unix filter, instead of a
        // panic on the next print. Not for the server: a client that
        // disconnects must cost it an EPIPE, not its life.
        // SAFETY: setting a signal's disposition to the default, before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let result = match cli.command {
        // (object mode is a path of its own: objects_cmd.rs)
        Command::Sim(args) if args.input.unit == run::RequestUnit::Object => objects_cmd::sim(&args),
        Command::Sim(args) => run::sim(args),
        Command::Mrc(args) if args.input.unit == run::RequestUnit::Object => objects_cmd::mrc(&args),
        Command::Mrc(args) => mrc_cmd::run(args),
        Command::Policies => {
            policies::print();
            Ok(())
        }
        Command::Devices => {
            policies::print_devices();
            Ok(())
        }
        Command::Trace { command } => trace_cmd::run(command),
        Command::Plot(args) => plot::run(args),
        Command::Create(args) => serve_cmd::create(args),
        Command::Serve(args) => serve_cmd::serve(*args),
        Command::Check(args) => serve_cmd::check(args),
        Command::Drain(args) => serve_cmd::drain(args),
        Command::Status(args) => serve_cmd::status(args),
        // Interrupted (SIGINT): 130, the shell's status for a command ended by it.
        Command::Flush(args) => serve_cmd::flush(args).map(|done| {
            if !done {
                std::process::exit(130)
            }
        }),
        Command::Maintain(args) => serve_cmd::maintain(args),
        Command::Set(args) => set_cmd::run(args),
        Command::Record(args) => record_cmd::run(args),
        Command::Whatif(args) => whatif_cmd::run(args),
    };
    if std::env::var_os("SSDCACHE_HEAP_STATS").is_some() {
        eprintln!("heap peak bytes: {}", heap::peak());
    }
    if let Err(e) = result {
        // One line, what and where; exit status 2 as for any bad input.
        eprintln!("ssdcache: error: {e:#}");
        std::process::exit(2);
    }
}
