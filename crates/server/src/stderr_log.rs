//! The servers' logger: `PREFIX: LEVEL: message` lines on stderr, with the
//! level set by a `-v` count. Hand-written because the binaries need nothing
//! more than this (no timestamps, no filtering by module).

/// The logger installed by [`init`].
struct Stderr {
    prefix: &'static str,
    level: log::LevelFilter,
}

impl log::Log for Stderr {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= self.level
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            eprintln!("{}: {}: {}", self.prefix, r.level(), r.args());
        }
    }
    fn flush(&self) {}
}

/// Logs warnings (`verbose` 0), info (1) or debug (2+) to stderr, each line
/// starting with `prefix`. Call once, at start.
pub fn init(prefix: &'static str, verbose: u8) {
    let level = match verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        _ => log::LevelFilter::Debug,
    };
    log::set_logger(Box::leak(Box::new(Stderr { prefix, level }))).expect("logger set once");
    log::set_max_level(level);
}
