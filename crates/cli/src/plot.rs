//! `ssdcache plot ...`: the Python package's plot CLI (`python3 -m ssdcache.plot`)
//! under the one command. Its arguments go through untouched, and so does its
//! exit status (the process is replaced on Unix). That Python side (the charts,
//! `ssdcache._plot_cli`, `ssdcache._results_io`) is pure Python: it does not load
//! the Rust extension `ssdcache._core` back (tests/python/test_plot.py checks it
//! with the extension blocked).

use anyhow::{anyhow, Result};
use clap::Args;
use std::ffi::OsString;
use std::process::Command;

/// Says so when the package is missing, else runs `ssdcache.plot` as
/// `python -m` would, with the command's arguments after it.
const LAUNCHER: &str = r#"import runpy, sys
try:
    import importlib.util
    found = importlib.util.find_spec("ssdcache.plot") is not None
    why = ""
except ImportError as e:
    found, why = False, f" ({e})"
if not found:
    sys.stderr.write("ssdcache: error: ssdcache plot needs the Python package: pip install ." + why + "\n")
    sys.exit(2)
runpy.run_module("ssdcache.plot", run_name="__main__", alter_sys=True)
"#;

pub const MISSING: &str = "ssdcache plot needs the Python package: pip install .";

#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct PlotArgs {
    /// Arguments for `python3 -m ssdcache.plot` (try `ssdcache plot --help`): KIND INPUT.csv|json -o OUT.png|svg.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// The Python to run: `$SSDCACHE_PYTHON`, else `python3`.
fn python() -> OsString {
    std::env::var_os("SSDCACHE_PYTHON").unwrap_or_else(|| "python3".into())
}

fn command(args: &[OsString]) -> Command {
    let mut cmd = Command::new(python());
    // argv[0] of the module is set by runpy; "-c" keeps the script out of it.
    cmd.arg("-c").arg(LAUNCHER).args(args);
    cmd
}

/// Runs `python3 -m ssdcache.plot ARGS` as a child; an error if it fails.
pub fn run_child(args: &[OsString]) -> Result<()> {
    let status =
        command(args).status().map_err(|e| anyhow!("{MISSING} (and Python 3 to run it: {:?}: {e})", python()))?;
    if !status.success() {
        return Err(anyhow!("python3 -m ssdcache.plot failed ({status})"));
    }
    Ok(())
}

pub fn run(args: PlotArgs) -> Result<()> {
    let mut cmd = command(&args.args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Only returns if the exec failed.
        let e = cmd.exec();
        Err(anyhow!("{MISSING} (and Python 3 to run it: {:?}: {e})", python()))
    }
    #[cfg(not(unix))]
    {
        match cmd.status() {
            Ok(status) => std::process::exit(status.code().unwrap_or(1)),
            Err(e) => Err(anyhow!("{MISSING} (and Python 3 to run it: {:?}: {e})", python())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_pass_through_untouched() {
        let args: Vec<OsString> = ["bars", "--baseline", "lru", "in.csv", "-o", "out.png"].map(OsString::from).to_vec();
        let cmd = command(&args);
        let got: Vec<&std::ffi::OsStr> = cmd.get_args().collect();
        assert_eq!(got[0], "-c");
        assert_eq!(got[1], LAUNCHER);
        assert_eq!(&got[2..], args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
        assert!(LAUNCHER.contains(MISSING));
    }
}
