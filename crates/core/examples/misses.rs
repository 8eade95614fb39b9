//! Development aid: miss count of a policy on a trace.
//! `cargo run --release -p ssdcache --example misses -- SPEC CAPACITY_PAGES TRACE [FORMAT]`

use ssdcache::policy::registry::build;
use ssdcache::policy::{registry::BuildCtx, Mode};
use ssdcache::sim::{SimConfig, Simulator};
use ssdcache::trace::{open, Format, ReadOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: misses SPEC CAPACITY_PAGES TRACE [FORMAT]");
        std::process::exit(2);
    }
    let capacity: usize = args[2].parse().expect("capacity in pages");
    let format: Format = args.get(4).map(|f| f.parse().unwrap()).unwrap_or(Format::Auto);
    let (mut reader, _) = open(args[3].as_ref(), format, &ReadOptions::default()).unwrap();
    let (mut policy, _) = build(&args[1], &BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 }).unwrap();
    let c = Simulator::new(policy.as_mut(), SimConfig { page_bytes: 4096 }).run(reader.as_mut()).unwrap();
    println!("{} {}", c.pages, c.misses());
}
