//! The loop the NBD negotiation targets share: the `Negotiation` state
//! machine driven over fuzzer bytes the way the server drives it.

use ssdcache_nbd::consts::{GREETING_LEN, MAX_OPTION_DATA};
use ssdcache_nbd::handshake::{Negotiation, Progress};
use std::ops::ControlFlow;

/// One step of [`negotiate`]: what was fed, and what came of it.
pub struct Step<'a> {
    /// The bytes fed: exactly what `need()` asked for.
    pub chunk: &'a [u8],
    pub progress: Progress,
    /// What the machine wrote in answer (its output is cleared after each step).
    pub out: &'a [u8],
}

/// Checks and drops the greeting, then feeds `input` to `n` in chunks of
/// exactly `need()` bytes (never above the option-data cap, so the server
/// never allocates from an unchecked length), handing each step to `check`.
/// Stops at the end of the input, when `need()` is 0, at an error (which
/// must display), or when `check` breaks.
pub fn negotiate<'e>(
    n: &mut Negotiation<'e>,
    mut input: &[u8],
    mut check: impl FnMut(&mut Negotiation<'e>, Step<'_>) -> ControlFlow<()>,
) {
    assert_eq!(n.output().len(), GREETING_LEN);
    n.clear_output();
    loop {
        let need = n.need();
        assert!(need <= MAX_OPTION_DATA as usize, "need {need}");
        if need == 0 || input.len() < need {
            break;
        }
        let (chunk, rest) = input.split_at(need);
        input = rest;
        let progress = match n.feed(chunk) {
            Ok(p) => p,
            Err(e) => {
                let _ = e.to_string();
                break;
            }
        };
        let out = n.output().to_vec();
        n.clear_output();
        if check(n, Step { chunk, progress, out: &out }).is_break() {
            break;
        }
    }
}
