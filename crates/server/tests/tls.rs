//! The server with TLS, spoken to by a raw NBD client over rustls: the
//! upgrade, a client certificate from another CA presented in full and
//! refused by the server's verifier (libnbd and qemu never send one the
//! server's CA list does not name), pipelined requests of many sizes
//! through the pump with replies out of order, a client that vanishes, and
//! a shutdown with a client that reads nothing. Certificates:
//! `scripts/lib/make_test_certs.sh` (openssl).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use ssdcache_block::MemBackend;
use ssdcache_nbd::consts::*;
use ssdcache_nbd::handshake::TlsMode;
use ssdcache_nbd::request::{encode_request_header, parse_simple_reply, RequestHeader};
use ssdcache_server::TlsSettings;
use ssdcache_server::{Export, Server, ServerConfig, ServerHandle};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

const SIZE: usize = 8 << 20;
const T: Duration = Duration::from_secs(10);

fn certs() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/lib/make_test_certs.sh");
    let out = std::process::Command::new("bash").arg(script).arg(&certs).output().expect("bash");
    assert!(out.status.success(), "making certificates (needs openssl): {}", String::from_utf8_lossy(&out.stderr));
    (dir, certs)
}

async fn start(certs: &Path, verify: bool, config: ServerConfig) -> (ServerHandle, Arc<MemBackend>) {
    let tls = TlsSettings::load(
        TlsMode::Require,
        &certs.join("server-cert.pem"),
        &certs.join("server-key.pem"),
        verify.then(|| certs.join("ca-cert.pem")).as_deref(),
    )
    .unwrap();
    let mem = Arc::new(MemBackend::new(SIZE));
    let config = ServerConfig { tls: Some(tls), ..config };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let h = Server::new(vec![Export::new("disk", mem.clone())], config).unwrap().start(listener).unwrap();
    (h, mem)
}

/// A rustls client trusting the test CA, presenting `client` (`client` or `rogue`) if given.
fn connector(certs: &Path, client: Option<&str>) -> TlsConnector {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(certs.join("ca-cert.pem")).unwrap()).unwrap();
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        None => b.with_no_client_auth(),
        Some(name) => {
            let chain = vec![CertificateDer::from_pem_file(certs.join(format!("{name}-cert.pem"))).unwrap()];
            let key = PrivateKeyDer::from_pem_file(certs.join(format!("{name}-key.pem"))).unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        }
    };
    TlsConnector::from(Arc::new(config))
}

async fn send_option<S: AsyncWrite + Unpin>(s: &mut S, opt: u32, data: &[u8]) -> std::io::Result<()> {
    let mut m = IHAVEOPT.to_be_bytes().to_vec();
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    s.write_all(&m).await?;
    s.flush().await
}

/// The replies to one option, up to the final one (ACK or an error).
async fn option_replies<S: AsyncRead + Unpin>(s: &mut S) -> std::io::Result<Vec<(u32, Vec<u8>)>> {
    let mut v = Vec::new();
    loop {
        let mut h = [0u8; 20];
        timeout(T, s.read_exact(&mut h)).await??;
        let reply = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let mut d = vec![0u8; u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize];
        s.read_exact(&mut d).await?;
        v.push((reply, d));
        if reply == REP_ACK || reply & REP_FLAG_ERROR != 0 {
            return Ok(v);
        }
    }
}

/// Greeting, flags, STARTTLS, and the TLS handshake.
async fn upgrade(h: &ServerHandle, tls: &TlsConnector) -> std::io::Result<TlsStream<TcpStream>> {
    let mut s = TcpStream::connect(h.local_addr()).await?;
    let mut g = [0u8; 18];
    s.read_exact(&mut g).await?;
    s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes()).await?;
    send_option(&mut s, OPT_LIST, b"").await?;
    let r = option_replies(&mut s).await?;
    assert_eq!(r.iter().map(|r| r.0).collect::<Vec<_>>(), vec![REP_ERR_TLS_REQD]);
    send_option(&mut s, OPT_STARTTLS, b"").await?;
    assert_eq!(option_replies(&mut s).await?[0].0, REP_ACK);
    tls.connect(ServerName::try_from("localhost").unwrap(), s).await
}

/// Upgrades, then NBD_OPT_GO on the default export.
async fn ready(h: &ServerHandle, tls: &TlsConnector) -> std::io::Result<TlsStream<TcpStream>> {
    let mut s = upgrade(h, tls).await?;
    send_option(&mut s, OPT_GO, &[0; 6]).await?;
    let r = option_replies(&mut s).await?;
    assert_eq!(r.last().unwrap().0, REP_ACK, "{r:?}");
    Ok(s)
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < T, "{what}: not within {T:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_certificates_from_the_ca_get_in() {
    let (_dir, certs) = certs();
    let (h, _) = start(&certs, true, ServerConfig::default()).await;
    // The good client negotiates and lists the export over TLS.
    let mut s = upgrade(&h, &connector(&certs, Some("client"))).await.unwrap();
    send_option(&mut s, OPT_LIST, b"").await.unwrap();
    let r = option_replies(&mut s).await.unwrap();
    assert_eq!(r.iter().map(|r| r.0).collect::<Vec<_>>(), vec![REP_SERVER, REP_ACK]);
    drop(s);
    // A certificate from another CA, sent in full, and none: in TLS 1.3 the
    // client finishes its handshake first; the server's refusal is an alert
    // instead of the option's reply.
    for who in [Some("rogue"), None] {
        let refused = async {
            let mut s = upgrade(&h, &connector(&certs, who)).await?;
            send_option(&mut s, OPT_LIST, b"").await?;
            option_replies(&mut s).await
        };
        let e = refused.await.expect_err("served a client without a certificate from the CA");
        let msg = e.to_string();
        assert!(
            msg.contains("UnknownCA") || msg.contains("CertificateRequired") || msg.contains("alert"),
            "{who:?}: {msg}"
        );
    }
    wait_for("refused connections closed", || h.stats().connections == 0).await;
    let report = h.shutdown().await.unwrap();
    assert_eq!(report.connections, 3);
}

/// Sends every request (header, and a write's payload) before reading any
/// reply, then reads the replies in whatever order they come; checks each
/// read's data against `expect`. Returns the stream.
async fn pipeline(
    s: TlsStream<TcpStream>,
    reqs: Vec<(RequestHeader, Option<Vec<u8>>)>,
    expect: &[u8],
) -> TlsStream<TcpStream> {
    let mut reads: HashMap<u64, (usize, usize)> = reqs
        .iter()
        .filter(|(r, _)| r.kind == CMD_READ)
        .map(|(r, _)| (r.cookie, (r.offset as usize, r.length as usize)))
        .collect();
    let n = reqs.len();
    let (mut rd, mut wr) = tokio::io::split(s);
    let writer = tokio::spawn(async move {
        for (hdr, data) in reqs {
            wr.write_all(&encode_request_header(&hdr)).await.unwrap();
            if let Some(d) = data {
                wr.write_all(&d).await.unwrap();
            }
        }
        wr.flush().await.unwrap();
        wr
    });
    for _ in 0..n {
        let mut r = [0u8; SIMPLE_REPLY_LEN];
        timeout(T, rd.read_exact(&mut r)).await.unwrap().unwrap();
        let reply = parse_simple_reply(&r).unwrap();
        assert_eq!(reply.errno, 0);
        if let Some((offset, len)) = reads.remove(&reply.cookie) {
            let mut d = vec![0u8; len];
            timeout(T, rd.read_exact(&mut d)).await.unwrap().unwrap();
            assert!(d == expect[offset..offset + len], "read {offset}+{len} differs");
        }
    }
    assert!(reads.is_empty(), "unanswered reads {reads:?}");
    rd.unsplit(writer.await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_of_every_size_round_trip() {
    let (_dir, certs) = certs();
    let (h, mem) = start(&certs, false, ServerConfig::default()).await;
    let s = ready(&h, &connector(&certs, None)).await.unwrap();
    // Writes of 1 B to 4 MiB side by side, all sent before a reply is read
    // (replies come back in any order: requests run concurrently), then
    // reads of the same ranges and of whole megabytes across them.
    let sizes = [1usize, 511, 4096, 65536, 65537, 300_000, 1 << 20, 4 << 20];
    let mut expect = vec![0u8; SIZE];
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    let mut offset = 1000;
    for (i, &len) in sizes.iter().enumerate() {
        let data: Vec<u8> = (0..len).map(|j| (j * 31 + i * 7 + 1) as u8).collect();
        expect[offset..offset + len].copy_from_slice(&data);
        let w =
            RequestHeader { flags: 0, kind: CMD_WRITE, cookie: i as u64, offset: offset as u64, length: len as u64 };
        reads.push((RequestHeader { kind: CMD_READ, cookie: 100 + i as u64, ..w }, None));
        writes.push((w, Some(data)));
        offset += len + 777;
    }
    for m in 0..SIZE >> 20 {
        let r = RequestHeader {
            flags: 0,
            kind: CMD_READ,
            cookie: 200 + m as u64,
            offset: (m << 20) as u64,
            length: 1 << 20,
        };
        reads.push((r, None));
    }
    let s = pipeline(s, writes, &expect).await;
    assert!(mem.contents() == expect);
    let _s = pipeline(s, reads, &expect).await;
    let report = h.shutdown().await.unwrap();
    assert_eq!(report.aborted, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vanished_and_silent_clients_do_not_hold_the_server() {
    let (_dir, certs) = certs();
    let config = ServerConfig { drain_timeout: Duration::from_secs(1), ..ServerConfig::default() };
    let (h, _) = start(&certs, false, config).await;
    let tls = connector(&certs, None);
    // A client that sends a request and vanishes: its connection goes.
    let mut gone = ready(&h, &tls).await.unwrap();
    let r = RequestHeader { flags: 0, kind: CMD_READ, cookie: 1, offset: 0, length: 1 << 20 };
    gone.write_all(&encode_request_header(&r)).await.unwrap();
    gone.flush().await.unwrap();
    drop(gone);
    wait_for("the vanished client's connection closed", || h.stats().connections == 0).await;
    // A client that asks for 64 MiB and reads none of it: the shutdown
    // aborts it after the drain timeout instead of waiting for ever.
    let mut silent = ready(&h, &tls).await.unwrap();
    for cookie in 0..16 {
        let r = RequestHeader { flags: 0, kind: CMD_READ, cookie, offset: 0, length: 4 << 20 };
        silent.write_all(&encode_request_header(&r)).await.unwrap();
    }
    silent.flush().await.unwrap();
    wait_for("the reads taken", || h.stats().buffered > 0).await;
    let report = timeout(Duration::from_secs(20), h.shutdown()).await.expect("the shutdown finished").unwrap();
    assert_eq!(report.aborted, 1);
    drop(silent);
}
