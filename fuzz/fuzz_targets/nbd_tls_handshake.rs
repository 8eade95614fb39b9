//! The NBD negotiation with TLS required (`TlsMode::Require`), fed arbitrary
//! client bytes the way the server feeds it. Before the upgrade nothing but
//! `NBD_OPT_STARTTLS` and `NBD_OPT_ABORT` may be answered with anything other
//! than `NBD_REP_ERR_TLS_REQD` (no export list, no export info, no
//! transmission); `STARTTLS` stops all reading until `tls_started`. After the
//! upgrade (simulated when the machine asks for it) the replies stay
//! well-formed and a second `STARTTLS` is refused. Never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache_serve::nbd::consts::*;
use ssdcache_serve::nbd::handshake::{split_option_reply, ExportInfo, Negotiation, Progress, TlsMode};

fn exports() -> Vec<ExportInfo> {
    vec![ExportInfo {
        name: "disk".into(),
        description: "first".into(),
        size: 1 << 30,
        flags: FLAG_HAS_FLAGS | FLAG_SEND_FLUSH,
        max_block: DEFAULT_MAX_BLOCK,
    }]
}

/// The (option, reply type) pairs in `out`; panics on anything malformed.
fn replies(mut out: &[u8]) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    while !out.is_empty() {
        let (r, rest) = split_option_reply(out).expect("malformed option reply");
        v.push((r.opt, r.reply));
        out = rest;
    }
    v
}

fuzz_target!(|data: &[u8]| {
    let ex = exports();
    let mut n = Negotiation::with_tls(&ex, TlsMode::Require);
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
        let upgraded = n.tls_active();
        let progress = match n.feed(chunk) {
            Ok(p) => p,
            Err(e) => {
                let _ = e.to_string();
                break;
            }
        };
        let out = n.output().to_vec();
        n.clear_output();
        if upgraded {
            // over TLS: the ordinary negotiation (nbd_handshake checks its
            // replies, and EXPORT_NAME's is no option reply), but no second upgrade
            if !matches!(progress, Progress::Continue) {
                break;
            }
            for (opt, reply) in replies(&out).into_iter() {
                if opt == OPT_STARTTLS {
                    assert_ne!(reply, REP_ACK, "a second STARTTLS accepted");
                }
            }
            continue;
        }
        match progress {
            Progress::Continue => {
                for (opt, reply) in replies(&out) {
                    match opt {
                        OPT_STARTTLS => assert_eq!(reply, REP_ERR_INVALID, "STARTTLS continued with {reply:#x}"),
                        _ => assert_eq!(reply, REP_ERR_TLS_REQD, "option {opt} answered {reply:#x} before TLS"),
                    }
                }
            }
            Progress::Abort => {
                assert_eq!(replies(&out), vec![(OPT_ABORT, REP_ACK)]);
                break;
            }
            Progress::StartTls => {
                assert_eq!(replies(&out), vec![(OPT_STARTTLS, REP_ACK)]);
                assert_eq!(n.need(), 0, "reading before the TLS handshake");
                assert!(n.feed(&[0; 4]).is_err());
                n.tls_started();
                assert!(n.tls_active());
            }
            Progress::Transmit { .. } => panic!("transmission before TLS"),
        }
    }
});
