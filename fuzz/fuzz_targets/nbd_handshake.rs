//! The NBD negotiation fed arbitrary client bytes: the option parsers on their
//! own, then the whole `Negotiation` state machine driven the way the server
//! drives it (read exactly `need()` bytes, feed them, send the output).
//! Asserts no panic, `need()` never above the option-data cap (so the server
//! never allocates from an unchecked length), bounded output, and that
//! everything sent back is well-formed.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache_serve::nbd::consts::*;
use ssdcache_serve::nbd::handshake::{
    parse_client_flags, parse_option, parse_option_header, split_option_reply, ExportInfo, Negotiation, Progress,
};

fn exports() -> Vec<ExportInfo> {
    vec![
        ExportInfo {
            name: "disk".into(),
            description: "first".into(),
            size: 1 << 30,
            flags: FLAG_HAS_FLAGS | FLAG_SEND_FLUSH,
            max_block: DEFAULT_MAX_BLOCK,
        },
        ExportInfo { name: "b".into(), description: String::new(), size: 0, flags: FLAG_HAS_FLAGS, max_block: 512 },
    ]
}

/// Splits `out` into option replies; false if it is anything else.
fn all_option_replies(mut out: &[u8]) -> Option<Vec<u32>> {
    let mut kinds = Vec::new();
    while !out.is_empty() {
        let (r, rest) = split_option_reply(out)?;
        if r.reply & REP_FLAG_ERROR == 0 {
            assert!(matches!(r.reply, REP_ACK | REP_SERVER | REP_INFO), "reply type {:#x}", r.reply);
        }
        kinds.push(r.reply);
        out = rest;
    }
    Some(kinds)
}

fuzz_target!(|data: &[u8]| {
    // the parsers on their own
    let _ = parse_client_flags(data.get(..4).unwrap_or(&[]));
    let _ = parse_option_header(data.get(..OPTION_HEADER_LEN).unwrap_or(&[]));
    if let Some((head, rest)) = data.split_first() {
        let opt = (*head % 12) as u32;
        if let Ok(o) = parse_option(opt, rest) {
            let _ = format!("{o:?}");
        }
    }

    // the state machine
    let ex = exports();
    let mut n = Negotiation::new(&ex);
    assert_eq!(n.output().len(), GREETING_LEN);
    n.clear_output();
    let mut input = data;
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
        let out = n.output();
        // a reply is a handful of headers and strings of at most 4 KiB
        assert!(out.len() <= 4 * (OPTION_REPLY_HEADER_LEN + MAX_STRING_LEN + 16), "{} bytes of output", out.len());
        match progress {
            Progress::Continue => {
                let kinds = all_option_replies(out).expect("malformed option reply");
                if let Some(last) = kinds.last() {
                    assert!(*last == REP_ACK || *last & REP_FLAG_ERROR != 0, "last reply {last:#x}");
                }
            }
            Progress::Abort => {
                assert_eq!(all_option_replies(out), Some(vec![REP_ACK]));
                assert_eq!(n.need(), 0);
                break;
            }
            Progress::Transmit { export } => {
                assert!(export < ex.len());
                assert_eq!(n.need(), 0);
                match all_option_replies(out) {
                    // NBD_OPT_GO: infos then ACK
                    Some(kinds) if out.len() != 10 && out.len() != 10 + EXPORT_NAME_ZEROES => {
                        assert_eq!(kinds.last(), Some(&REP_ACK))
                    }
                    // NBD_OPT_EXPORT_NAME: size, flags, zeroes unless NO_ZEROES
                    _ => {
                        let want = if n.no_zeroes() { 10 } else { 10 + EXPORT_NAME_ZEROES };
                        assert_eq!(out.len(), want);
                        assert_eq!(&out[0..8], &ex[export].size.to_be_bytes());
                    }
                }
                break;
            }
        }
        n.clear_output();
    }
});
