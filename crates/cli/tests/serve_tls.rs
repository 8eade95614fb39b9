//! `ssdcache serve` beyond loopback, with real clients: TLS (`--tls
//! require|on`, client certificates) against nbdinfo, nbdcopy (libnbd),
//! qemu-img and qemu-io (`tls-creds-x509`); Unix sockets
//! (`nbd+unix:///disk?socket=…`); the refusal of clear text beyond
//! loopback; bad TLS files (endless, FIFOs, chains TLS cannot send,
//! certificates out of their dates); the memory of clients that send a
//! ClientHello and read nothing. Certificates are made by
//! `scripts/lib/make_test_certs.sh` (openssl). Needs openssl, libnbd-bin and
//! qemu-utils (scripts/test.sh installs them); a missing tool fails the test.
//! Loopback only; every wait is bounded.

use ssdcache_nbd::consts::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{make_cache, one_line_error, Server, BIN};

fn tool(name: &str) -> Command {
    let found = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output().unwrap();
    assert!(
        found.status.success(),
        "{name} is missing: apt-get install openssl libnbd-bin qemu-utils (scripts/test.sh does)"
    );
    Command::new(name)
}

/// Runs a client for at most 60 s.
fn client(mut cmd: Command) -> Output {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{cmd:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A 4 MiB write-back cache setup and test certificates in a temporary directory.
struct Fixture {
    dir: tempfile::TempDir,
    cache: PathBuf,
    backing: PathBuf,
    certs: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let (cache, backing) = make_cache(dir.path(), 4 << 20, &["--size", "2MiB"]);
        let certs = dir.path().join("certs");
        tool("openssl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/lib/make_test_certs.sh");
        let out = Command::new("bash").arg(script).arg(&certs).output().unwrap();
        assert!(out.status.success(), "making certificates: {}", text(&out));
        Fixture { dir, cache, backing, certs }
    }

    fn cert(&self, name: &str) -> String {
        self.certs.join(name).display().to_string()
    }

    /// `--tls MODE` with the server's certificate, and client verification if `verify`.
    fn tls_args(&self, mode: &str, verify: bool) -> Vec<String> {
        let mut a = vec![
            "--tls".into(),
            mode.into(),
            "--tls-cert".into(),
            self.cert("server-cert.pem"),
            "--tls-key".into(),
            self.cert("server-key.pem"),
        ];
        if verify {
            a.extend(["--tls-ca".into(), self.cert("ca-cert.pem"), "--tls-verify-peer".into()]);
        }
        a
    }

    fn serve_cmd(&self, listen: &str, extra: &[String]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("serve").arg(&self.cache).arg(&self.backing).args(["--listen", listen, "--export", "disk"]).args(extra);
        c
    }

    /// Starts a server; waits (up to 20 s) for the address it prints.
    fn serve(&self, listen: &str, extra: &[String]) -> Server {
        Server::start(&mut self.serve_cmd(listen, extra), &self.dir.path().join("serve.err"))
    }

    /// libnbd's TLS URI for the export, with the client files of `dir` (client, nocert, rogue).
    fn nbds(&self, s: &Server, dir: &str) -> String {
        format!("nbds://localhost:{}/disk?tls-certificates={}", s.port(), self.cert(dir))
    }
}

/// Random bytes (xorshift; no need for a crate).
fn random(len: usize, mut seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.extend_from_slice(&seed.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// qemu's TLS client options for the export on `port` with the client files of `dir`.
fn qemu_tls(f: &Fixture, port: u16, dir: &str) -> (String, String) {
    (
        format!("tls-creds-x509,id=tls0,endpoint=client,dir={}", f.cert(dir)),
        format!("driver=nbd,host=localhost,port={port},export=disk,tls-creds=tls0"),
    )
}

#[test]
fn tls_require_serves_clients_with_a_certificate_from_the_ca() {
    let f = Fixture::new();
    let s = f.serve("127.0.0.1:0", &f.tls_args("require", true));
    // nbdinfo over TLS
    let o = client({
        let mut c = tool("nbdinfo");
        c.arg(f.nbds(&s, "client"));
        c
    });
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("with TLS"), "{}", text(&o));
    assert!(text(&o).contains("export-size: 4194304"), "{}", text(&o));

    // qemu-img writes a random image through TLS, compares it, nbdcopy reads it back
    let image = f.dir.path().join("image.raw");
    let data = random(4 << 20, 7);
    std::fs::write(&image, &data).unwrap();
    let (object, target) = qemu_tls(&f, s.port(), "client");
    let source = format!("driver=raw,file.driver=file,file.filename={}", image.display());
    let o = client({
        let mut c = tool("qemu-img");
        c.args(["convert", "-n", "--object", &object, "--image-opts", &source, "--target-image-opts", &target]);
        c
    });
    assert!(o.status.success(), "qemu-img convert: {}", text(&o));
    let o = client({
        let mut c = tool("qemu-img");
        c.args(["compare", "--object", &object, "--image-opts", &source, &target]);
        c
    });
    assert!(o.status.success() && text(&o).contains("identical"), "qemu-img compare: {}", text(&o));
    let copy = f.dir.path().join("copy.raw");
    let o = client({
        let mut c = tool("nbdcopy");
        c.arg(f.nbds(&s, "client")).arg(&copy);
        c
    });
    assert!(o.status.success(), "nbdcopy: {}", text(&o));
    assert!(std::fs::read(&copy).unwrap() == data, "nbdcopy read back other bytes");

    // qemu-io: a pattern written and read back over TLS
    let o = client({
        let mut c = tool("qemu-io");
        c.args(["--object", &object, "--image-opts", &target]);
        c.args(["-c", "write -P 0x5a 1000 70000", "-c", "read -P 0x5a 1000 70000", "-c", "flush"]);
        c
    });
    assert!(o.status.success() && !text(&o).contains("Pattern verification failed"), "qemu-io: {}", text(&o));
    assert_eq!(s.stop(), 0);
    // what went through TLS is on the backing file after the clean stop
    let on_disk = std::fs::read(&f.backing).unwrap();
    assert!(on_disk[1000..71000].iter().all(|&b| b == 0x5a));
    assert!(on_disk[71000..] == data[71000..] && on_disk[..1000] == data[..1000]);
}

#[test]
fn tls_verify_peer_refuses_clients_without_a_good_certificate() {
    let f = Fixture::new();
    let s = f.serve("127.0.0.1:0", &f.tls_args("require", true));
    for dir in ["nocert", "rogue"] {
        let o = client({
            let mut c = tool("nbdinfo");
            c.arg(f.nbds(&s, dir));
            c
        });
        assert!(!o.status.success(), "{dir}: {}", text(&o));
        assert!(!text(&o).contains("export-size"), "{dir}: {}", text(&o));
    }
    // qemu with no client certificate
    let (object, target) = qemu_tls(&f, s.port(), "nocert");
    let o = client({
        let mut c = tool("qemu-io");
        c.args(["--object", &object, "--image-opts", &target, "-c", "read 0 4k"]);
        c
    });
    assert!(!o.status.success(), "qemu-io without a certificate: {}", text(&o));
    // the server still serves a good client
    let o = client({
        let mut c = tool("nbdinfo");
        c.arg("--size").arg(f.nbds(&s, "client"));
        c
    });
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "4194304", "{}", text(&o));
    assert_eq!(s.stop(), 0);
}

/// The reply types the server sends to `opt` in clear text, after the greeting.
fn clear_text_option(port: u16, opt: u32, data: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    let mut m = (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes().to_vec();
    m.extend_from_slice(&IHAVEOPT.to_be_bytes());
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    s.write_all(&m).unwrap();
    let mut replies = Vec::new();
    loop {
        let mut h = [0u8; 20];
        if s.read_exact(&mut h).is_err() {
            return replies; // closed
        }
        let reply = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let mut d = vec![0u8; u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize];
        s.read_exact(&mut d).unwrap();
        replies.push((reply, d));
        if reply == REP_ACK || reply & REP_FLAG_ERROR != 0 {
            return replies;
        }
    }
}

#[test]
fn tls_require_refuses_clear_text_and_hides_the_export_list() {
    let f = Fixture::new();
    let s = f.serve("127.0.0.1:0", &f.tls_args("require", false));
    let o = client({
        let mut c = tool("nbdinfo");
        c.arg(format!("nbd://127.0.0.1:{}/disk", s.port()));
        c
    });
    assert!(!o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("export-size"), "{}", text(&o));
    let o = client({
        let mut c = tool("nbdinfo");
        c.arg("--list").arg(format!("nbd://127.0.0.1:{}/", s.port()));
        c
    });
    assert!(!text(&o).contains("disk"), "the list shows the export: {}", text(&o));
    // on the wire: LIST is NBD_REP_ERR_TLS_REQD and nothing else; EXPORT_NAME hangs up
    let r = clear_text_option(s.port(), OPT_LIST, b"");
    assert_eq!(r.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![REP_ERR_TLS_REQD]);
    assert!(clear_text_option(s.port(), OPT_EXPORT_NAME, b"disk").is_empty());
    // without --tls-verify-peer any TLS client gets in, with or without a certificate
    let o = client({
        let mut c = tool("nbdinfo");
        c.arg("--size").arg(f.nbds(&s, "nocert"));
        c
    });
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "4194304", "{}", text(&o));
    assert_eq!(s.stop(), 0);
}

#[test]
fn tls_on_serves_both_clear_text_and_tls() {
    let f = Fixture::new();
    let s = f.serve("127.0.0.1:0", &f.tls_args("on", false));
    for (uri, proto) in
        [(format!("nbd://127.0.0.1:{}/disk", s.port()), "without TLS"), (f.nbds(&s, "client"), "with TLS")]
    {
        let o = client({
            let mut c = tool("nbdinfo");
            c.arg(&uri);
            c
        });
        assert!(o.status.success() && text(&o).contains(proto), "{uri}: {}", text(&o));
    }
    assert_eq!(s.stop(), 0);
}

#[test]
fn unix_socket_serves_and_is_cleaned_up() {
    let f = Fixture::new();
    let sock = f.dir.path().join("disk.sock");
    let listen = format!("unix:{}", sock.display());
    let s = f.serve(&listen, &[]);
    assert_eq!(s.addr, listen);
    let m = std::fs::symlink_metadata(&sock).unwrap();
    assert!(m.file_type().is_socket());
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
    let uri = format!("nbd+unix:///disk?socket={}", sock.display());
    let o = client({
        let mut c = tool("qemu-io");
        c.args(["-f", "raw", &uri, "-c", "write -P 0x33 8192 4096", "-c", "read -P 0x33 8192 4096"]);
        c
    });
    assert!(o.status.success() && !text(&o).contains("verification failed"), "{}", text(&o));
    let o = client({
        let mut c = tool("nbdinfo");
        c.arg("--size").arg(&uri);
        c
    });
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "4194304", "{}", text(&o));
    // a second server on the same path is refused while the first listens
    let o = client(f.serve_cmd(&listen, &[]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("a server already listens"), "{}", text(&o));
    assert_eq!(s.stop(), 0);
    assert!(!sock.exists(), "the socket is removed at a clean stop");

    // a stale socket (nobody listens) is replaced
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    let s = f.serve(&listen, &[]);
    assert_eq!(s.stop(), 0);
    assert!(!sock.exists());

    // a regular file, a symbolic link (not followed) and a directory are refused and kept
    std::fs::write(&sock, b"precious").unwrap();
    let target = f.dir.path().join("target");
    std::fs::write(&target, b"also precious").unwrap();
    let link = f.dir.path().join("link.sock");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let dir = f.dir.path().join("dir.sock");
    std::fs::create_dir(&dir).unwrap();
    for (path, what) in [(&sock, "a regular file"), (&link, "a symbolic link"), (&dir, "a directory")] {
        let o = client(f.serve_cmd(&format!("unix:{}", path.display()), &[]));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("is {what}: refusing to replace it")), "{err}");
    }
    assert_eq!(std::fs::read(&sock).unwrap(), b"precious");
    assert_eq!(std::fs::read(&target).unwrap(), b"also precious");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
}

#[test]
fn clear_text_beyond_loopback_needs_insecure_or_tls() {
    let f = Fixture::new();
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let o = client(f.serve_cmd(listen, &[]));
        one_line_error(
            &o,
            &[&format!("--listen {listen}: refusing to serve clear text beyond loopback"), "--insecure"],
        );
    }
    // --tls on still allows clear text, but is a choice the user made with certificates in hand
    let s = f.serve("0.0.0.0:0", &f.tls_args("require", false));
    let o = client({
        let mut c = tool("nbdinfo");
        c.arg("--size").arg(f.nbds(&s, "client"));
        c
    });
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "4194304", "{}", text(&o));
    assert_eq!(s.stop(), 0);
    let s = f.serve("0.0.0.0:0", &["--insecure".to_string()]);
    let o = client({
        let mut c = tool("nbdinfo");
        c.arg("--size").arg(format!("nbd://127.0.0.1:{}/disk", s.port()));
        c
    });
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "4194304", "{}", text(&o));
    assert_eq!(s.stop(), 0);
}

#[test]
fn bad_tls_files_and_flags_are_one_line_errors() {
    let f = Fixture::new();
    let missing = f.dir.path().join("missing.pem").display().to_string();
    let garbage = f.dir.path().join("garbage.pem");
    std::fs::write(&garbage, b"not a certificate\n").unwrap();
    let garbage = garbage.display().to_string();
    let (cert, key) = (f.cert("server-cert.pem"), f.cert("server-key.pem"));
    let other_key = f.cert("client-key.pem");
    let dir = f.certs.display().to_string();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (vec!["--tls", "require", "--tls-cert", &missing, "--tls-key", &key], vec![&missing, "No such file"]),
        (vec!["--tls", "require", "--tls-cert", &cert, "--tls-key", &missing], vec!["TLS key", &missing]),
        (vec!["--tls", "require", "--tls-cert", &dir, "--tls-key", &key], vec!["TLS certificate", &dir]),
        (vec!["--tls", "require", "--tls-cert", &garbage, "--tls-key", &key], vec![&garbage, "not PEM"]),
        (vec!["--tls", "require", "--tls-cert", &cert, "--tls-key", &garbage], vec![&garbage, "PRIVATE KEY"]),
        (vec!["--tls", "require", "--tls-cert", &key, "--tls-key", &key], vec!["no certificate"]),
        (vec!["--tls", "require", "--tls-cert", &cert, "--tls-key", &other_key], vec!["do not go together"]),
        (
            vec!["--tls", "require", "--tls-cert", &cert, "--tls-key", &key, "--tls-ca", &garbage, "--tls-verify-peer"],
            vec!["TLS CA", &garbage],
        ),
        (vec!["--tls", "on", "--tls-cert", &cert], vec!["needs both --tls-cert and --tls-key"]),
        (vec!["--tls-cert", &cert, "--tls-key", &key], vec!["need --tls on or --tls require"]),
        (vec!["--tls-psk", &garbage], vec!["--tls-psk", "not supported", "rustls"]),
        (vec!["--tls", "require", "--tls-cert", &cert, "--tls-key", &key, "--tls-verify-peer"], vec!["needs --tls-ca"]),
        (
            vec!["--tls", "require", "--tls-cert", &cert, "--tls-key", &key, "--tls-ca", &cert],
            vec!["--tls-ca is only used"],
        ),
    ];
    for (args, want) in cases {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let o = client(f.serve_cmd("127.0.0.1:0", &args));
        one_line_error(&o, &want);
    }
    let o = client(f.serve_cmd("localhost:10809", &[]));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("neither IP:PORT"), "{}", text(&o));
}

/// Runs `cmd` in an address space of at most 1 GiB (a file read whole
/// fails instead of taking the machine's memory) for at most 30 s.
fn bounded(mut cmd: Command) -> Output {
    use std::os::unix::process::CommandExt;
    // SAFETY: only setrlimit, async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("{cmd:?} still running after 30 s: {}", text(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A certificate "chain" of `server-cert.pem` and then copies of
/// `ca-cert.pem`, at least `der_bytes` of DER in all, in `name` (no CA
/// issues such a chain; rustls sends whatever it is given).
fn big_chain(f: &Fixture, name: &str, der_bytes: usize) -> String {
    use rustls::pki_types::pem::PemObject;
    let ca_pem = std::fs::read_to_string(f.certs.join("ca-cert.pem")).unwrap();
    let ca_der = rustls::pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap().len();
    let mut pem = std::fs::read_to_string(f.certs.join("server-cert.pem")).unwrap();
    pem.push_str(&ca_pem.repeat(der_bytes.div_ceil(ca_der)));
    let path = f.dir.path().join(name);
    std::fs::write(&path, pem).unwrap();
    path.display().to_string()
}

#[test]
fn tls_files_are_read_with_bounds_and_a_chain_tls_cannot_send_is_refused() {
    let f = Fixture::new();
    let (cert, key) = (f.cert("server-cert.pem"), f.cert("server-key.pem"));
    let fifo = f.dir.path().join("fifo.pem");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let fifo = fifo.display().to_string();
    // 17 MiB of DER: over the 2^24-1 bytes a TLS handshake message can hold
    // (and about 24 MB of PEM, under the 32 MiB read for a certificate file)
    let huge = big_chain(&f, "huge-chain.pem", 17 << 20);
    let huge_named = format!("TLS certificate {huge}: a chain of ");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        // endless files: read up to the bound, not to the end (before: 8 GB and counting)
        (vec!["--tls-cert", &cert, "--tls-key", "/dev/zero"], vec!["TLS key /dev/zero", "larger than 1 MiB"]),
        (
            vec!["--tls-cert", "/dev/urandom", "--tls-key", &key],
            vec!["TLS certificate /dev/urandom", "larger than 32 MiB"],
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &key, "--tls-ca", "/dev/zero", "--tls-verify-peer"],
            vec!["TLS CA /dev/zero", "larger than 32 MiB"],
        ),
        // a FIFO nobody writes: empty, not a hang (before: blocked in open for ever)
        (vec!["--tls-cert", &cert, "--tls-key", &fifo], vec!["TLS key", &fifo, "no PRIVATE KEY"]),
        (vec!["--tls-cert", &fifo, "--tls-key", &key], vec!["TLS certificate", &fifo, "no certificate"]),
        // a chain no client could receive (before: accepted)
        (vec!["--tls-cert", &huge, "--tls-key", &key], vec![&huge_named, "over the 16777215-byte (16 MiB) limit"]),
    ];
    for (args, want) in cases {
        let mut a = vec!["--tls".to_string(), "require".to_string()];
        a.extend(args.iter().map(|s| s.to_string()));
        one_line_error(&bounded(f.serve_cmd("127.0.0.1:0", &a)), &want);
    }
}

#[test]
fn a_server_certificate_out_of_its_validity_dates_is_warned_about() {
    let f = Fixture::new();
    for (name, want) in [
        ("expired-cert.pem", "expired on Jan  2 00:00:00 2020"),
        ("future-cert.pem", "is not valid before Jan  1 00:00:00 2090"),
    ] {
        let args: Vec<String> =
            ["--tls", "require", "--tls-cert", &f.cert(name), "--tls-key", &f.cert("server-key.pem")]
                .map(String::from)
                .into();
        let s = f.serve("127.0.0.1:0", &args);
        let err = std::fs::read_to_string(f.dir.path().join("serve.err")).unwrap();
        let warning = format!("WARN: TLS certificate {}: the server's certificate {want}", f.cert(name));
        assert!(err.contains(&warning), "{err:?} lacks {warning:?}");
        assert_eq!(s.stop(), 0);
    }
    // a certificate within its dates is not warned about
    let s = f.serve("127.0.0.1:0", &f.tls_args("require", false));
    let err = std::fs::read_to_string(f.dir.path().join("serve.err")).unwrap();
    assert!(!err.contains("WARN"), "{err}");
    assert_eq!(s.stop(), 0);
}

/// The first flight of a rustls client: its ClientHello.
fn client_hello() -> Vec<u8> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut c = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let mut hello = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut hello).unwrap();
    }
    hello
}

/// `GET /metrics` on `addr`: the value of sample `name`.
fn metric(addr: std::net::SocketAddr, name: &str) -> f64 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    let line = page.lines().find(|l| l.split(' ').next() == Some(name)).unwrap_or_else(|| panic!("no {name}: {page}"));
    line.split(' ').nth(1).unwrap().parse().unwrap()
}

fn vm_hwm_kib(s: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Twelve clients send a ClientHello and read nothing, with a 14 MiB
/// certificate chain (under the TLS limit, over what clients accept: a
/// mistake or a hostile configuration): each handshake's flight holds the
/// chain until the client reads it. Before, every one held it outside
/// `--buffer-memory` (12 x 14 MiB; 1.25 GB with a 150 MB chain) and the
/// memory stayed with the process after they left. Now the handshakes take
/// it from `--buffer-memory` in turn, and it is returned when they end.
///
/// The bound, 96 MiB over the start: the 64 MiB budget (two handshakes of
/// 28 MiB at a time) and what glibc keeps after they end, which
/// `malloc_trim` cannot return: the free top of each arena that built a
/// flight, below its trim threshold (twice the largest block freed, here
/// 16 MiB), one arena per runtime thread (2 on this 2-core machine).
/// Measured: about +45 MiB with the clients and +30 to +55 MiB after; before,
/// +170 MiB with them and after (every connection closed).
#[test]
fn client_hello_only_clients_hold_at_most_the_buffer_memory() {
    const BOUND: u64 = 96 << 10; // KiB
    let f = Fixture::new();
    let chain = big_chain(&f, "big-chain.pem", 14 << 20);
    let args: Vec<String> = [
        "--tls",
        "require",
        "--tls-cert",
        &chain,
        "--tls-key",
        &f.cert("server-key.pem"),
        "--buffer-memory",
        "64MiB",
        "--metrics",
        "127.0.0.1:0",
    ]
    .map(String::from)
    .into();
    let s = f.serve("127.0.0.1:0", &args);
    let rss0 = s.rss_kib();
    let hello = client_hello();
    let mut clients = Vec::new();
    for _ in 0..12 {
        let mut c = TcpStream::connect(s.nbd()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut g = [0u8; 18];
        c.read_exact(&mut g).unwrap();
        let mut m = (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes().to_vec();
        m.extend_from_slice(&IHAVEOPT.to_be_bytes());
        m.extend_from_slice(&OPT_STARTTLS.to_be_bytes());
        m.extend_from_slice(&0u32.to_be_bytes());
        c.write_all(&m).unwrap();
        let mut r = [0u8; 20];
        c.read_exact(&mut r).unwrap();
        assert_eq!(u32::from_be_bytes(r[12..16].try_into().unwrap()), REP_ACK);
        c.write_all(&hello).unwrap();
        c.set_nonblocking(true).unwrap();
        clients.push(c);
    }
    // Give every handshake the time to answer (before: all twelve did; now
    // those that fit in the budget, the others wait for it).
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        let answered = clients.iter().filter(|c| c.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0)).count();
        if answered == clients.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let during = s.rss_kib().saturating_sub(rss0);
    drop(clients);
    // Every connection ends (the waiting ones once they get the budget and
    // find their client gone), and the memory goes back.
    let t = Instant::now();
    while metric(s.metrics(), "ssdcache_connections_open") > 0.0 {
        assert!(t.elapsed() < Duration::from_secs(60), "connections still open after 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    // (the freed memory goes back on a blocking thread, soon after)
    let mut after = s.rss_kib().saturating_sub(rss0);
    let t = Instant::now();
    while after >= BOUND && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        after = s.rss_kib().saturating_sub(rss0);
    }
    let peak = vm_hwm_kib(&s).saturating_sub(rss0);
    println!(
        "12 ClientHello-only clients, 14 MiB chain, --buffer-memory 64MiB: server RSS {rss0} KiB at start, \
         +{during} KiB with them, +{peak} KiB at most, +{after} KiB after they left"
    );
    assert!(during < BOUND, "grew by {during} KiB with 12 handshakes, over --buffer-memory 64MiB");
    assert!(after < BOUND, "still {after} KiB above the start after the clients left");
    assert_eq!(s.stop(), 0);
}
