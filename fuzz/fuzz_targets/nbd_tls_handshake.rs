//! The NBD negotiation with TLS required (`TlsMode::Require`), fed arbitrary
//! client bytes the way the server feeds it. Before the upgrade nothing but
//! `NBD_OPT_STARTTLS` and `NBD_OPT_ABORT` may be answered with anything other
//! than `NBD_REP_ERR_TLS_REQD` (no export list, no export info, no
//! transmission); `STARTTLS` stops all reading until `tls_started`. After the
//! upgrade (simulated when the machine asks for it) the replies stay
//! well-formed and a second `STARTTLS` is refused. Never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdcache_fuzz::nbd::{negotiate, Step};
use ssdcache_nbd::consts::*;
use ssdcache_nbd::handshake::{split_option_reply, ExportInfo, Negotiation, Progress, TlsMode};
use std::ops::ControlFlow;

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
    negotiate(&mut n, data, |n, Step { progress, out, .. }| {
        if n.tls_active() {
            // over TLS: the ordinary negotiation (nbd_handshake checks its
            // replies, and EXPORT_NAME's is no option reply), but no second upgrade
            if !matches!(progress, Progress::Continue) {
                return ControlFlow::Break(());
            }
            for (opt, reply) in replies(out).into_iter() {
                if opt == OPT_STARTTLS {
                    assert_ne!(reply, REP_ACK, "a second STARTTLS accepted");
                }
            }
            return ControlFlow::Continue(());
        }
        match progress {
            Progress::Continue => {
                for (opt, reply) in replies(out) {
                    match opt {
                        OPT_STARTTLS => assert_eq!(reply, REP_ERR_INVALID, "STARTTLS continued with {reply:#x}"),
                        _ => assert_eq!(reply, REP_ERR_TLS_REQD, "option {opt} answered {reply:#x} before TLS"),
                    }
                }
            }
            Progress::Abort => {
                assert_eq!(replies(out), vec![(OPT_ABORT, REP_ACK)]);
                return ControlFlow::Break(());
            }
            Progress::StartTls => {
                assert_eq!(replies(out), vec![(OPT_STARTTLS, REP_ACK)]);
                assert_eq!(n.need(), 0, "reading before the TLS handshake");
                assert!(n.feed(&[0; 4]).is_err());
                n.tls_started();
                assert!(n.tls_active());
            }
            Progress::Transmit { .. } => panic!("transmission before TLS"),
        }
        ControlFlow::Continue(())
    });
});
