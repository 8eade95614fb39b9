//! `ssdcache policies` and `ssdcache devices`: the catalogues.

use ssdcache::device::catalog::DEVICES;
use ssdcache::device::{HDD_PRESETS, MEMORY_PRESETS, PRESETS, SSD_PRESETS};
use ssdcache::policy::registry::{ADMITTERS, POLICIES, SIZED_POLICIES};
use ssdcache::policy::{ParamInfo, MODES, MODE_PARAM};
use ssdcache::units::format_bytes;

pub fn print() {
    println!("Policies (spec: NAME or NAME(key=value,...)):\n");
    for p in POLICIES {
        println!("  {:<10} {}", p.name, p.about);
        print_params(p.params.iter().chain(std::iter::once(&MODE_PARAM)));
    }
    println!("\nAdmitters (admit(by=ADMITTER,rule=RULE); layers nest: rule=admit(...)):\n");
    for a in ADMITTERS {
        println!("  {:<10} {}", a.name, a.about);
        print_params(a.params.iter());
    }
    println!("\nObject mode (--unit object: sizes in bytes; docs/objects.md):\n");
    for p in SIZED_POLICIES {
        println!("  {:<10} {}", p.name, p.about);
        print_params(p.params.iter());
    }
    println!("\nModes (--mode, or mode= in a spec):\n");
    for (name, _, about) in MODES {
        println!("  {name:<14} {about}");
    }
}

fn print_params<'a>(params: impl Iterator<Item = &'a ParamInfo>) {
    for param in params {
        println!("      {:<10} default {:<14} {}", param.name, param.default, param.about);
    }
}

pub fn print_devices() {
    println!("Devices (--device NAME or NAME(key=value,...)):\n");
    for d in DEVICES {
        println!("  {:<10} {}", d.name, d.about);
        for param in d.params {
            println!("      {:<10} default {:<10} {}", param.name, param.default, param.about);
        }
    }
    println!("\nNAND presets (ftl nand=):\n");
    for p in PRESETS {
        let t = p.timing;
        println!(
            "  {:<9} page {:>6}, block {:>6}, read {} us, program {} us, erase {} us  ({})",
            p.name,
            format_bytes(t.page_bytes),
            format_bytes(t.block_bytes()),
            t.read_ns / 1000,
            t.program_ns / 1000,
            t.erase_ns / 1000,
            p.source
        );
    }
    println!("\nHDD presets (hdd model=):\n");
    for p in HDD_PRESETS {
        let h = p.params;
        println!(
            "  {:<13} {} rpm, seek {} ms avg / {} ms min, {:.1} MB/s  ({})",
            p.name,
            h.rpm,
            h.avg_seek_ns as f64 / 1e6,
            h.min_seek_ns as f64 / 1e6,
            h.transfer_bytes_per_s as f64 / 1e6,
            p.source
        );
    }
    println!("\nSSD presets (ssd model=):\n");
    for p in SSD_PRESETS {
        let s = p.params;
        println!(
            "  {:<9} seq {} / {} MB/s read/write, random {} / {} IOPS  ({})",
            p.name,
            s.seq_read_bytes_per_s / 1_000_000,
            s.seq_write_bytes_per_s / 1_000_000,
            s.rand_read_iops,
            s.rand_write_iops,
            p.source
        );
    }
    println!("\nMemory presets:\n");
    for p in MEMORY_PRESETS {
        let m = p.params;
        println!(
            "  {:<9} read {} ns, write {} ns per page  ({})",
            p.name, m.read_ns_per_page, m.write_ns_per_page, p.source
        );
    }
}
