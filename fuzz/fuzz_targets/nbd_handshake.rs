//! The NBD negotiation fed arbitrary client bytes: the option parsers on their
//! own, then the whole `Negotiation` state machine driven the way the server
//! drives it (read exactly `need()` bytes, feed them, send the output).
//! Asserts no panic, `need()` never above the option-data cap (so the server
//! never allocates from an unchecked length), bounded output, that
//! everything sent back is well-formed, and that what transmission gets
//! follows the spec: a metadata context only with structured replies and
//! only after a SET that named that export and succeeded, `SEND_DF` only
//! with structured replies, extended headers only when the client asked
//! for them (and structured replies with them). An input whose first byte
//! has bit 7 set is preceded by the client flags and
//! `NBD_OPT_STRUCTURED_REPLY` (or, with bit 6 too,
//! `NBD_OPT_EXTENDED_HEADERS`), so the fuzzer reaches the metadata-context
//! options without finding them first.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache_fuzz::nbd::{negotiate, Step};
use ssdcache_nbd::consts::*;
use ssdcache_nbd::handshake::{
    parse_client_flags, parse_option, parse_option_header, split_option_reply, ExportInfo, Negotiation, Progress,
};
use ssdcache_nbd::meta_context::parse_meta_request;
use std::ops::ControlFlow;

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
            assert!(matches!(r.reply, REP_ACK | REP_SERVER | REP_INFO | REP_META_CONTEXT), "reply type {:#x}", r.reply);
        }
        if r.reply == REP_META_CONTEXT {
            assert!(matches!(r.opt, OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT));
            assert_eq!(&r.data[4..], CONTEXT_BASE_ALLOCATION.as_bytes());
            let id = u32::from_be_bytes(r.data[0..4].try_into().unwrap());
            assert_eq!(id, if r.opt == OPT_SET_META_CONTEXT { CONTEXT_ID_BASE_ALLOCATION } else { 0 });
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
        if let Ok(r) = parse_meta_request(rest) {
            // every query lies within the data
            assert!(r.queries().map(|q| q.len() + 4).sum::<usize>() + r.name.len() + 8 == rest.len());
        }
    }

    // the state machine
    let ex = exports();
    let mut n = Negotiation::new(&ex);
    let prefixed;
    let mut input = data;
    if data.first().is_some_and(|b| b & 0x80 != 0) {
        let mut v = (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes().to_vec();
        v.extend_from_slice(&IHAVEOPT.to_be_bytes());
        let first = if data[0] & 0x40 != 0 { OPT_EXTENDED_HEADERS } else { OPT_STRUCTURED_REPLY };
        v.extend_from_slice(&first.to_be_bytes());
        v.extend_from_slice(&0u32.to_be_bytes());
        v.extend_from_slice(&data[1..]);
        prefixed = v;
        input = &prefixed;
    }
    // What the client asked for, as seen from outside: structured replies
    // acknowledged, and the (export name, selected) of the last SET.
    let mut structured = false;
    let mut extended = false;
    let mut last_set: Option<(Vec<u8>, bool)> = None;
    negotiate(&mut n, input, |n, Step { chunk, progress, out }| {
        // (`chunk` is what `need()` asked for: an option's header, or its data)
        let pending_opt = if chunk.len() == OPTION_HEADER_LEN {
            Some(u32::from_be_bytes(chunk[8..12].try_into().unwrap()))
        } else {
            None
        };
        // a reply is a handful of headers and strings of at most 4 KiB
        assert!(out.len() <= 4 * (OPTION_REPLY_HEADER_LEN + MAX_STRING_LEN + 16), "{} bytes of output", out.len());
        // Track the outcome of each option from its replies.
        if let Some((r, _)) = split_option_reply(out) {
            let mut rest = out;
            let mut meta = false;
            let mut last = (r.opt, r.reply);
            while let Some((r, tail)) = split_option_reply(rest) {
                meta |= r.reply == REP_META_CONTEXT;
                last = (r.opt, r.reply);
                rest = tail;
            }
            match last {
                (OPT_STRUCTURED_REPLY, REP_ACK) => {
                    assert!(!extended, "structured replies acknowledged after extended headers");
                    structured = true
                }
                (OPT_EXTENDED_HEADERS, REP_ACK) => (structured, extended) = (true, true),
                (OPT_SET_META_CONTEXT, REP_ACK) => {
                    assert!(structured, "SET accepted before structured replies");
                    // the option's data was the chunk fed just now (or none)
                    let name = parse_meta_request(if pending_opt.is_some() { &[] } else { chunk })
                        .map(|r| r.name.to_vec())
                        .unwrap_or_default();
                    last_set = Some((name, meta));
                }
                (OPT_SET_META_CONTEXT, _) => last_set = None,
                (OPT_LIST_META_CONTEXT, REP_ACK) => assert!(structured, "LIST answered before structured replies"),
                _ => {}
            }
        }
        match progress {
            Progress::Continue => {
                let kinds = all_option_replies(out).expect("malformed option reply");
                if let Some(last) = kinds.last() {
                    assert!(*last == REP_ACK || *last & REP_FLAG_ERROR != 0, "last reply {last:#x}");
                }
            }
            Progress::StartTls => panic!("STARTTLS accepted by a server without TLS"),
            Progress::Abort => {
                assert_eq!(all_option_replies(out), Some(vec![REP_ACK]));
                assert_eq!(n.need(), 0);
                return ControlFlow::Break(());
            }
            Progress::Transmit { export } => {
                assert!(export < ex.len());
                assert_eq!(n.need(), 0);
                let s = n.session();
                assert_eq!(s.structured, structured);
                assert_eq!(s.extended, extended, "extended headers the client did not get acknowledged");
                if s.allocation.is_some() {
                    assert!(structured);
                    let (name, selected) = last_set.clone().expect("a context without a successful SET");
                    assert!(selected, "a context the last SET did not select");
                    let named = ex.iter().position(|e| e.name.as_bytes() == name.as_slice());
                    let named = named.or_else(|| name.is_empty().then_some(0));
                    assert_eq!(named, Some(export), "a context selected for another export");
                }
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
                        let flags = u16::from_be_bytes([out[8], out[9]]);
                        assert_eq!(flags & FLAG_SEND_DF != 0, structured, "SEND_DF and structured replies disagree");
                    }
                }
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
});
