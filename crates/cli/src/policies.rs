//! `ssdcache policies`: the catalogue.

use ssdcache::policy::mode::MODES;
use ssdcache::policy::registry::MODE_PARAM;
use ssdcache::policy::POLICIES;

pub fn print() {
    println!("Policies (spec: NAME or NAME(key=value,...)):\n");
    for p in POLICIES {
        println!("  {:<10} {}", p.name, p.about);
        for param in p.params.iter().chain(std::iter::once(&MODE_PARAM)) {
            println!("      {:<10} default {:<14} {}", param.name, param.default, param.about);
        }
    }
    println!("\nModes (--mode, or mode= in a spec):\n");
    for (name, _, about) in MODES {
        println!("  {name:<14} {about}");
    }
}
