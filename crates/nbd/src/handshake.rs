//! Fixed newstyle negotiation as a sans-I/O state machine.
//!
//! [`Negotiation`] owns no socket: the caller writes out whatever
//! [`Negotiation::output`] holds, reads exactly [`Negotiation::need`] bytes and
//! hands them to [`Negotiation::feed`], until `feed` says the client aborted or
//! picked an export. The async server and the fuzz target drive the same code.
//!
//! What the server offers: handshake flags `FIXED_NEWSTYLE | NO_ZEROES`; the
//! options `EXPORT_NAME`, `ABORT`, `LIST`, `INFO` and `GO` (answering
//! `NBD_INFO_EXPORT`, `NBD_INFO_BLOCK_SIZE`, and `NBD_INFO_NAME` /
//! `NBD_INFO_DESCRIPTION` when asked), `STRUCTURED_REPLY`, `EXTENDED_HEADERS`, and
//! `LIST_META_CONTEXT` / `SET_META_CONTEXT` with the one context
//! `base:allocation` (see [`super::meta_context`]); `STARTTLS` when built
//! [`with_tls`](Negotiation::with_tls) (see [`TlsMode`]); everything else
//! (`STARTTLS` too without TLS) gets `NBD_REP_ERR_UNSUP`. What was negotiated for
//! the transmission phase is [`Negotiation::session`].
//!
//! Metadata contexts, as the spec has them: both options need structured
//! replies first (else `NBD_REP_ERR_INVALID`); an unknown export is
//! `NBD_REP_ERR_UNKNOWN`; every `SET` replaces the selection, even one that
//! fails; the selection counts only if the client then enters transmission
//! on the export the last `SET` named. Transmission flags add `SEND_DF`
//! once structured replies are on (reads are one chunk, so DF always holds)
//! and never before (the spec forbids it).
//!
//! TLS stays I/O-free too: `STARTTLS` is answered with an ACK and
//! [`Progress::StartTls`]; the caller runs the TLS handshake on its socket,
//! calls [`Negotiation::tls_started`] and goes on feeding the decrypted bytes.
//!
//! Extended headers (`NBD_OPT_EXTENDED_HEADERS`): only when the client asks;
//! acknowledged (again, harmlessly, if asked twice), they imply structured
//! replies, and a later `STRUCTURED_REPLY` gets `NBD_REP_ERR_EXT_HEADER_REQD`
//! (it would step back to compact headers); option data is
//! `NBD_REP_ERR_INVALID`. Like structured replies they are forgotten at
//! `STARTTLS`.
//!
//! Choices where the spec leaves room:
//! - A client that does not set `NBD_FLAG_C_FIXED_NEWSTYLE` is still answered
//!   in fixed newstyle (the spec allows it; such clients only send
//!   `EXPORT_NAME`, which has no option reply either way).
//! - The empty export name selects the first export (the "default export").
//! - `NBD_INFO_BLOCK_SIZE` is sent on every successful `INFO`/`GO`, requested
//!   or not: minimum 1 (any byte offset and length works), preferred 4096,
//!   maximum the configured largest payload.
//! - Option data longer than [`MAX_OPTION_DATA`] ends the connection rather
//!   than being read and thrown away; an over-long export name in `INFO`/`GO`
//!   is `NBD_REP_ERR_INVALID`, in `EXPORT_NAME` (which cannot be answered with
//!   an error) it ends the connection.

use super::consts::*;
use super::meta_context::{parse_meta_request, selects_allocation, MetaRequest};
use super::structured::Session;

/// What the negotiation needs to know about one export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportInfo {
    /// Name the client asks for (at most [`MAX_STRING_LEN`] bytes).
    pub name: String,
    /// Human-readable description sent in `NBD_OPT_LIST` and `NBD_INFO_DESCRIPTION`.
    pub description: String,
    /// Size in bytes.
    pub size: u64,
    /// Transmission flags (`FLAG_HAS_FLAGS | …`).
    pub flags: u16,
    /// Largest READ/WRITE payload, advertised as the maximum block size.
    pub max_block: u32,
}

/// Errors that end the negotiation with a hard disconnect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("client flags {0:#x} contain bits the server did not offer")]
    UnknownClientFlags(u32),
    #[error("bad option magic {0:#018x}")]
    BadOptionMagic(u64),
    #[error("option {opt} carries {len} bytes of data (limit {MAX_OPTION_DATA})")]
    OptionTooLong { opt: u32, len: u32 },
    #[error("NBD_OPT_EXPORT_NAME names an unknown export {0:?}")]
    UnknownExport(String),
    #[error("NBD_OPT_EXPORT_NAME name of {0} bytes (limit {MAX_STRING_LEN})")]
    ExportNameTooLong(usize),
    #[error("fed {got} bytes where {want} were needed")]
    WrongLength { want: usize, got: usize },
    #[error("negotiation already finished")]
    Finished,
    #[error("NBD_OPT_EXPORT_NAME before NBD_OPT_STARTTLS on a server that requires TLS")]
    TlsRequired,
    #[error("fed bytes while the TLS handshake should run")]
    AwaitingTls,
}

/// Whether the server offers TLS (`NBD_OPT_STARTTLS`), and whether it must
/// come first (the spec's "FORCEDTLS" mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// `NBD_OPT_STARTTLS` is unsupported (`NBD_REP_ERR_UNSUP`).
    #[default]
    Off,
    /// Offered; clients may also negotiate and transmit in clear text.
    On,
    /// Before the upgrade every option but `STARTTLS` and `ABORT` gets
    /// `NBD_REP_ERR_TLS_REQD` (so `LIST` shows nothing), and
    /// `NBD_OPT_EXPORT_NAME`, which cannot be refused, ends the connection.
    Require,
}

/// Result of one [`Negotiation::feed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Write out the output and keep reading.
    Continue,
    /// The client sent `NBD_OPT_ABORT`: write out the output (the ACK) and close.
    Abort,
    /// Negotiation done: write out the output and enter transmission on the
    /// export with this index.
    Transmit { export: usize },
    /// The client sent `NBD_OPT_STARTTLS` and it was accepted: write out the
    /// output (the ACK), run the TLS handshake as the server, then call
    /// [`Negotiation::tls_started`] and go on over the TLS session.
    StartTls,
}

/// A parsed option header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionHeader {
    pub opt: u32,
    pub len: u32,
}

/// Parses the 16-byte option header, checking the magic and the length cap.
pub fn parse_option_header(buf: &[u8]) -> Result<OptionHeader, HandshakeError> {
    if buf.len() != OPTION_HEADER_LEN {
        return Err(HandshakeError::WrongLength { want: OPTION_HEADER_LEN, got: buf.len() });
    }
    let magic = be_u64(&buf[0..8]);
    if magic != IHAVEOPT {
        return Err(HandshakeError::BadOptionMagic(magic));
    }
    let opt = be_u32(&buf[8..12]);
    let len = be_u32(&buf[12..16]);
    if len > MAX_OPTION_DATA {
        return Err(HandshakeError::OptionTooLong { opt, len });
    }
    Ok(OptionHeader { opt, len })
}

/// Parses the client flags; unknown bits are an error (the spec says the
/// server MUST then drop the connection).
pub fn parse_client_flags(buf: &[u8]) -> Result<u32, HandshakeError> {
    if buf.len() != 4 {
        return Err(HandshakeError::WrongLength { want: 4, got: buf.len() });
    }
    let flags = be_u32(buf);
    if flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(HandshakeError::UnknownClientFlags(flags));
    }
    Ok(flags)
}

/// The data of an `NBD_OPT_INFO` / `NBD_OPT_GO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InfoRequest<'a> {
    pub name: &'a [u8],
    /// The requested `NBD_INFO_*` types, 2 bytes each, big-endian.
    raw_infos: &'a [u8],
}

impl<'a> InfoRequest<'a> {
    /// The requested `NBD_INFO_*` types.
    pub fn infos(&self) -> impl Iterator<Item = u16> + 'a {
        self.raw_infos.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]))
    }
}

/// A parsed option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientOption<'a> {
    ExportName(&'a [u8]),
    Abort,
    List,
    Info(InfoRequest<'a>),
    Go(InfoRequest<'a>),
    StructuredReply,
    ExtendedHeaders,
    ListMetaContext(MetaRequest<'a>),
    SetMetaContext(MetaRequest<'a>),
    /// Any option this server does not implement (answered `NBD_REP_ERR_UNSUP`).
    Unsupported(u32),
}

/// Why an option's data is malformed; answered with `NBD_REP_ERR_INVALID`
/// carrying this text (except for `EXPORT_NAME`, see [`parse_option`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidOption(pub &'static str);

/// Parses one option's data. Never allocates; slices borrow from `data`.
///
/// `EXPORT_NAME` with a name over [`MAX_STRING_LEN`] bytes is reported as
/// `Ok(ExportName(..))` all the same: the caller decides (it cannot be answered
/// with an option error, so [`Negotiation`] disconnects).
pub fn parse_option(opt: u32, data: &[u8]) -> Result<ClientOption<'_>, InvalidOption> {
    match opt {
        OPT_EXPORT_NAME => Ok(ClientOption::ExportName(data)),
        // Data on ABORT is meaningless; ignoring it is the gentle reading.
        OPT_ABORT => Ok(ClientOption::Abort),
        OPT_LIST if data.is_empty() => Ok(ClientOption::List),
        OPT_LIST => Err(InvalidOption("NBD_OPT_LIST takes no data")),
        OPT_INFO | OPT_GO => {
            let req = parse_info_request(data)?;
            Ok(if opt == OPT_INFO { ClientOption::Info(req) } else { ClientOption::Go(req) })
        }
        OPT_STRUCTURED_REPLY if data.is_empty() => Ok(ClientOption::StructuredReply),
        OPT_STRUCTURED_REPLY => Err(InvalidOption("NBD_OPT_STRUCTURED_REPLY takes no data")),
        OPT_EXTENDED_HEADERS if data.is_empty() => Ok(ClientOption::ExtendedHeaders),
        OPT_EXTENDED_HEADERS => Err(InvalidOption("NBD_OPT_EXTENDED_HEADERS takes no data")),
        OPT_LIST_META_CONTEXT => Ok(ClientOption::ListMetaContext(parse_meta_request(data).map_err(InvalidOption)?)),
        OPT_SET_META_CONTEXT => Ok(ClientOption::SetMetaContext(parse_meta_request(data).map_err(InvalidOption)?)),
        other => Ok(ClientOption::Unsupported(other)),
    }
}

/// `u32 name length, name, u16 count, count × u16`.
fn parse_info_request(data: &[u8]) -> Result<InfoRequest<'_>, InvalidOption> {
    if data.len() < 6 {
        return Err(InvalidOption("option data shorter than 6 bytes"));
    }
    let name_len = be_u32(&data[0..4]) as usize;
    if name_len > MAX_STRING_LEN {
        return Err(InvalidOption("export name longer than 4096 bytes"));
    }
    // name_len <= 4096, so no overflow; the name and the count must fit.
    if name_len + 6 > data.len() {
        return Err(InvalidOption("export name length exceeds option data"));
    }
    let name = &data[4..4 + name_len];
    let rest = &data[4 + name_len..];
    let count = u16::from_be_bytes([rest[0], rest[1]]) as usize;
    let raw_infos = &rest[2..];
    if raw_infos.len() != count * 2 {
        return Err(InvalidOption("number of information requests does not match option length"));
    }
    Ok(InfoRequest { name, raw_infos })
}

/// Appends one option reply.
///
/// Panics only if `parts` add up to more than 4 GiB, which no reply built here
/// comes near (every part is bounded by [`MAX_STRING_LEN`] or a few bytes).
pub fn put_option_reply(out: &mut Vec<u8>, opt: u32, reply: u32, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let len = u32::try_from(len).expect("option reply longer than 4 GiB");
    out.extend_from_slice(&OPTION_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&opt.to_be_bytes());
    out.extend_from_slice(&reply.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    for p in parts {
        out.extend_from_slice(p);
    }
}

/// The 18-byte server greeting.
pub fn greeting() -> [u8; GREETING_LEN] {
    let mut g = [0u8; GREETING_LEN];
    g[0..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
    g[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    g[16..18].copy_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    g
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    ClientFlags,
    OptionHeader,
    OptionData {
        opt: u32,
        len: u32,
    },
    /// STARTTLS was acknowledged: nothing is read until the upgrade.
    AwaitingTls,
    Done,
}

/// The server side of a fixed newstyle negotiation.
#[derive(Debug)]
pub struct Negotiation<'e> {
    exports: &'e [ExportInfo],
    state: State,
    no_zeroes: bool,
    tls: TlsMode,
    /// The TLS session is up (options now arrive decrypted).
    tls_active: bool,
    out: Vec<u8>,
    /// `NBD_OPT_STRUCTURED_REPLY` was acknowledged (or implied by extended headers).
    structured: bool,
    /// `NBD_OPT_EXTENDED_HEADERS` was acknowledged.
    extended: bool,
    /// The last `SET_META_CONTEXT`'s export and whether it selected
    /// `base:allocation`; `None` before one, or after one that failed.
    contexts: Option<(usize, bool)>,
    /// What the transmission phase runs with (set on entering it).
    session: Session,
}

impl<'e> Negotiation<'e> {
    /// Starts a negotiation; the greeting is already in [`output`](Self::output).
    pub fn new(exports: &'e [ExportInfo]) -> Self {
        Self::with_tls(exports, TlsMode::Off)
    }

    /// Starts a negotiation that offers (or requires) `NBD_OPT_STARTTLS`.
    pub fn with_tls(exports: &'e [ExportInfo], tls: TlsMode) -> Self {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(&greeting());
        Negotiation {
            exports,
            state: State::ClientFlags,
            no_zeroes: false,
            tls,
            tls_active: false,
            out,
            structured: false,
            extended: false,
            contexts: None,
            session: Session::default(),
        }
    }

    /// The TLS handshake after [`Progress::StartTls`] succeeded: options are
    /// read again, now over TLS. Nothing an option negotiated in clear text
    /// survives this (the spec, and nbdkit's CVE-2021-3716): structured
    /// replies and the metadata context selection are forgotten. The client
    /// flags are not an option and stay.
    pub fn tls_started(&mut self) {
        if self.state == State::AwaitingTls {
            self.tls_active = true;
            self.state = State::OptionHeader;
            self.structured = false;
            self.extended = false;
            self.contexts = None;
            self.session = Session::default();
        }
    }

    /// Whether the options are now read over TLS.
    pub fn tls_active(&self) -> bool {
        self.tls_active
    }

    /// Bytes to read before the next [`feed`](Self::feed); 0 once finished.
    /// Never more than [`MAX_OPTION_DATA`].
    pub fn need(&self) -> usize {
        match self.state {
            State::ClientFlags => 4,
            State::OptionHeader => OPTION_HEADER_LEN,
            State::OptionData { len, .. } => len as usize,
            State::AwaitingTls | State::Done => 0,
        }
    }

    /// Bytes to send to the client.
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// Forgets the output once it has been sent.
    pub fn clear_output(&mut self) {
        self.out.clear();
    }

    /// Whether the client asked for no trailing zeroes.
    pub fn no_zeroes(&self) -> bool {
        self.no_zeroes
    }

    /// What the client negotiated for the transmission phase (structured
    /// replies, the `base:allocation` context); meaningful once `feed`
    /// returned [`Progress::Transmit`].
    pub fn session(&self) -> Session {
        self.session
    }

    /// Forgets structured replies and metadata contexts, as the spec asks
    /// after a successful `NBD_OPT_STARTTLS`.
    pub fn forget_options(&mut self) {
        self.structured = false;
        self.extended = false;
        self.contexts = None;
    }

    /// Export `i`'s transmission flags for this client: `SEND_DF` only with
    /// structured replies.
    fn flags(&self, i: usize) -> u16 {
        let f = self.exports[i].flags & !FLAG_SEND_DF;
        if self.structured {
            f | FLAG_SEND_DF
        } else {
            f
        }
    }

    /// Enters transmission on export `i`.
    fn transmit(&mut self, i: usize) -> Progress {
        let allocation = matches!(self.contexts, Some((e, true)) if e == i);
        self.session = Session {
            structured: self.structured,
            extended: self.extended,
            allocation: allocation.then_some(CONTEXT_ID_BASE_ALLOCATION),
        };
        self.state = State::Done;
        Progress::Transmit { export: i }
    }

    /// `LIST_META_CONTEXT` / `SET_META_CONTEXT` (see the module docs).
    fn meta_context(&mut self, opt: u32, req: &MetaRequest<'_>) -> Progress {
        let set = opt == OPT_SET_META_CONTEXT;
        if set {
            self.contexts = None;
        }
        if !self.structured {
            let msg = b"negotiate NBD_OPT_STRUCTURED_REPLY first";
            put_option_reply(&mut self.out, opt, REP_ERR_INVALID, &[msg]);
            return Progress::Continue;
        }
        let Some(i) = self.find(req.name) else {
            put_option_reply(&mut self.out, opt, REP_ERR_UNKNOWN, &[b"no export of that name"]);
            return Progress::Continue;
        };
        match selects_allocation(req, set) {
            Err(msg) => put_option_reply(&mut self.out, opt, REP_ERR_INVALID, &[msg.as_bytes()]),
            Ok(allocation) => {
                if allocation {
                    // LIST replies carry id 0 (reserved); SET replies the real one.
                    let id = if set { CONTEXT_ID_BASE_ALLOCATION } else { 0 };
                    let name = CONTEXT_BASE_ALLOCATION.as_bytes();
                    put_option_reply(&mut self.out, opt, REP_META_CONTEXT, &[&id.to_be_bytes(), name]);
                }
                if set {
                    self.contexts = Some((i, allocation));
                }
                put_option_reply(&mut self.out, opt, REP_ACK, &[]);
            }
        }
        Progress::Continue
    }

    /// Consumes exactly [`need`](Self::need) bytes.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, HandshakeError> {
        let want = self.need();
        if self.state == State::Done {
            return Err(HandshakeError::Finished);
        }
        if self.state == State::AwaitingTls {
            return Err(HandshakeError::AwaitingTls);
        }
        if data.len() != want {
            return Err(HandshakeError::WrongLength { want, got: data.len() });
        }
        match self.state {
            State::ClientFlags => {
                let flags = parse_client_flags(data)?;
                self.no_zeroes = flags & FLAG_C_NO_ZEROES != 0;
                self.state = State::OptionHeader;
                Ok(Progress::Continue)
            }
            State::OptionHeader => {
                let hdr = parse_option_header(data)?;
                if hdr.len == 0 {
                    self.option(hdr.opt, &[])
                } else {
                    self.state = State::OptionData { opt: hdr.opt, len: hdr.len };
                    Ok(Progress::Continue)
                }
            }
            State::OptionData { opt, .. } => self.option(opt, data),
            State::AwaitingTls => Err(HandshakeError::AwaitingTls),
            State::Done => Err(HandshakeError::Finished),
        }
    }

    /// The export of that name; the empty name, unless an export is literally
    /// called "", falls back to the first export.
    fn find(&self, name: &[u8]) -> Option<usize> {
        let exact = self.exports.iter().position(|e| e.name.as_bytes() == name);
        if exact.is_none() && name.is_empty() && !self.exports.is_empty() {
            return Some(0);
        }
        exact
    }

    /// `STARTTLS`, and every option while TLS is required and not yet up;
    /// `None` for the options answered as without TLS.
    fn tls_option(&mut self, opt: u32, data: &[u8]) -> Option<Result<Progress, HandshakeError>> {
        if self.tls == TlsMode::Off {
            return None; // STARTTLS too: NBD_REP_ERR_UNSUP, as before TLS existed
        }
        let gated = self.tls == TlsMode::Require && !self.tls_active;
        match opt {
            OPT_STARTTLS if !data.is_empty() => {
                put_option_reply(&mut self.out, opt, REP_ERR_INVALID, &[b"NBD_OPT_STARTTLS takes no data"]);
            }
            OPT_STARTTLS if self.tls_active => {
                put_option_reply(&mut self.out, opt, REP_ERR_INVALID, &[b"TLS is already negotiated"]);
            }
            OPT_STARTTLS => {
                put_option_reply(&mut self.out, opt, REP_ACK, &[]);
                self.state = State::AwaitingTls;
                return Some(Ok(Progress::StartTls));
            }
            OPT_ABORT => return None,
            OPT_EXPORT_NAME if gated => {
                // It has no error reply: the only refusal is to hang up.
                self.state = State::Done;
                return Some(Err(HandshakeError::TlsRequired));
            }
            _ if gated => {
                put_option_reply(&mut self.out, opt, REP_ERR_TLS_REQD, &[b"TLS required: send NBD_OPT_STARTTLS first"]);
            }
            _ => return None,
        }
        Some(Ok(Progress::Continue))
    }

    fn option(&mut self, opt: u32, data: &[u8]) -> Result<Progress, HandshakeError> {
        self.state = State::OptionHeader;
        if let Some(p) = self.tls_option(opt, data) {
            return p;
        }
        let parsed = match parse_option(opt, data) {
            Ok(p) => p,
            Err(InvalidOption(msg)) => {
                if opt == OPT_SET_META_CONTEXT {
                    self.contexts = None; // replaced even when the SET fails
                }
                put_option_reply(&mut self.out, opt, REP_ERR_INVALID, &[msg.as_bytes()]);
                return Ok(Progress::Continue);
            }
        };
        match parsed {
            ClientOption::ExportName(name) => {
                if name.len() > MAX_STRING_LEN {
                    self.state = State::Done;
                    return Err(HandshakeError::ExportNameTooLong(name.len()));
                }
                let Some(i) = self.find(name) else {
                    self.state = State::Done;
                    return Err(HandshakeError::UnknownExport(String::from_utf8_lossy(name).into_owned()));
                };
                let size = self.exports[i].size;
                let flags = self.flags(i);
                self.out.extend_from_slice(&size.to_be_bytes());
                self.out.extend_from_slice(&flags.to_be_bytes());
                if !self.no_zeroes {
                    self.out.extend_from_slice(&[0u8; EXPORT_NAME_ZEROES]);
                }
                Ok(self.transmit(i))
            }
            ClientOption::Abort => {
                put_option_reply(&mut self.out, opt, REP_ACK, &[]);
                self.state = State::Done;
                Ok(Progress::Abort)
            }
            ClientOption::List => {
                for e in self.exports {
                    let name = e.name.as_bytes();
                    let len = (name.len() as u32).to_be_bytes();
                    put_option_reply(&mut self.out, opt, REP_SERVER, &[&len, name, e.description.as_bytes()]);
                }
                put_option_reply(&mut self.out, opt, REP_ACK, &[]);
                Ok(Progress::Continue)
            }
            ClientOption::Info(req) | ClientOption::Go(req) => {
                let Some(i) = self.find(req.name) else {
                    let msg = b"no export of that name";
                    put_option_reply(&mut self.out, opt, REP_ERR_UNKNOWN, &[msg]);
                    return Ok(Progress::Continue);
                };
                let flags = self.flags(i);
                let e = &self.exports[i];
                let (mut name, mut description) = (false, false);
                for info in req.infos() {
                    match info {
                        INFO_NAME => name = true,
                        INFO_DESCRIPTION => description = true,
                        _ => {} // EXPORT and BLOCK_SIZE are always sent; unknown ones ignored
                    }
                }
                let mut export = [0u8; 12];
                export[0..2].copy_from_slice(&INFO_EXPORT.to_be_bytes());
                export[2..10].copy_from_slice(&e.size.to_be_bytes());
                export[10..12].copy_from_slice(&flags.to_be_bytes());
                put_option_reply(&mut self.out, opt, REP_INFO, &[&export]);
                let mut bs = [0u8; 14];
                bs[0..2].copy_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
                bs[2..6].copy_from_slice(&1u32.to_be_bytes());
                bs[6..10].copy_from_slice(&PREFERRED_BLOCK.min(e.max_block).to_be_bytes());
                bs[10..14].copy_from_slice(&e.max_block.to_be_bytes());
                put_option_reply(&mut self.out, opt, REP_INFO, &[&bs]);
                if name {
                    put_option_reply(&mut self.out, opt, REP_INFO, &[&INFO_NAME.to_be_bytes(), e.name.as_bytes()]);
                }
                if description && !e.description.is_empty() {
                    let d = e.description.as_bytes();
                    put_option_reply(&mut self.out, opt, REP_INFO, &[&INFO_DESCRIPTION.to_be_bytes(), d]);
                }
                put_option_reply(&mut self.out, opt, REP_ACK, &[]);
                if opt == OPT_GO {
                    Ok(self.transmit(i))
                } else {
                    Ok(Progress::Continue)
                }
            }
            ClientOption::StructuredReply if self.extended => {
                let msg = b"extended headers are negotiated: structured replies come with them";
                put_option_reply(&mut self.out, opt, REP_ERR_EXT_HEADER_REQD, &[msg]);
                Ok(Progress::Continue)
            }
            ClientOption::StructuredReply => {
                self.structured = true;
                put_option_reply(&mut self.out, opt, REP_ACK, &[]);
                Ok(Progress::Continue)
            }
            ClientOption::ExtendedHeaders => {
                self.extended = true;
                self.structured = true;
                put_option_reply(&mut self.out, opt, REP_ACK, &[]);
                Ok(Progress::Continue)
            }
            ClientOption::ListMetaContext(req) | ClientOption::SetMetaContext(req) => Ok(self.meta_context(opt, &req)),
            ClientOption::Unsupported(_) => {
                put_option_reply(&mut self.out, opt, REP_ERR_UNSUP, &[b"option not supported"]);
                Ok(Progress::Continue)
            }
        }
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// One option reply split out of a byte stream (used by tests and the fuzz
/// target to check what the server sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionReply<'a> {
    pub opt: u32,
    pub reply: u32,
    pub data: &'a [u8],
}

/// Splits the next option reply off `buf`; `None` if `buf` does not start
/// with a complete, well-formed one.
pub fn split_option_reply(buf: &[u8]) -> Option<(OptionReply<'_>, &[u8])> {
    if buf.len() < OPTION_REPLY_HEADER_LEN || be_u64(&buf[0..8]) != OPTION_REPLY_MAGIC {
        return None;
    }
    let opt = be_u32(&buf[8..12]);
    let reply = be_u32(&buf[12..16]);
    let len = be_u32(&buf[16..20]) as usize;
    let rest = &buf[OPTION_REPLY_HEADER_LEN..];
    if rest.len() < len {
        return None;
    }
    Some((OptionReply { opt, reply, data: &rest[..len] }, &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exports() -> Vec<ExportInfo> {
        vec![
            ExportInfo {
                name: "disk".into(),
                description: "first disk".into(),
                size: 1 << 20,
                flags: FLAG_HAS_FLAGS | FLAG_SEND_FLUSH,
                max_block: DEFAULT_MAX_BLOCK,
            },
            ExportInfo { name: "two".into(), description: String::new(), size: 4096, flags: 1, max_block: 1024 },
        ]
    }

    fn opt_header(opt: u32, len: u32) -> Vec<u8> {
        let mut v = IHAVEOPT.to_be_bytes().to_vec();
        v.extend_from_slice(&opt.to_be_bytes());
        v.extend_from_slice(&len.to_be_bytes());
        v
    }

    fn info_data(name: &[u8], infos: &[u16]) -> Vec<u8> {
        let mut v = (name.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(name);
        v.extend_from_slice(&(infos.len() as u16).to_be_bytes());
        for i in infos {
            v.extend_from_slice(&i.to_be_bytes());
        }
        v
    }

    /// Feeds flags then one option; returns the progress and the replies.
    fn run_option(n: &mut Negotiation, opt: u32, data: &[u8]) -> Result<Progress, HandshakeError> {
        let p = n.feed(&opt_header(opt, data.len() as u32))?;
        if data.is_empty() {
            return Ok(p);
        }
        assert_eq!(p, Progress::Continue);
        assert_eq!(n.need(), data.len());
        n.feed(data)
    }

    fn replies(out: &[u8]) -> Vec<OptionReply<'_>> {
        let mut v = Vec::new();
        let mut rest = out;
        while !rest.is_empty() {
            let (r, tail) = split_option_reply(rest).expect("well-formed option reply");
            v.push(r);
            rest = tail;
        }
        v
    }

    fn started(ex: &[ExportInfo], client_flags: u32) -> Negotiation<'_> {
        let mut n = Negotiation::new(ex);
        assert_eq!(n.output(), &greeting());
        n.clear_output();
        assert_eq!(n.need(), 4);
        assert_eq!(n.feed(&client_flags.to_be_bytes()), Ok(Progress::Continue));
        assert_eq!(n.need(), OPTION_HEADER_LEN);
        n
    }

    #[test]
    fn greeting_layout() {
        let g = greeting();
        assert_eq!(&g[0..8], b"NBDMAGIC");
        assert_eq!(&g[8..16], b"IHAVEOPT");
        assert_eq!(u16::from_be_bytes([g[16], g[17]]), FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
    }

    #[test]
    fn client_flags() {
        assert_eq!(parse_client_flags(&3u32.to_be_bytes()), Ok(3));
        assert_eq!(parse_client_flags(&0u32.to_be_bytes()), Ok(0));
        assert_eq!(parse_client_flags(&4u32.to_be_bytes()), Err(HandshakeError::UnknownClientFlags(4)));
        assert!(matches!(parse_client_flags(&[0, 0, 1]), Err(HandshakeError::WrongLength { .. })));
        let ex = exports();
        let mut n = Negotiation::new(&ex);
        assert_eq!(n.feed(&0x8000_0001u32.to_be_bytes()), Err(HandshakeError::UnknownClientFlags(0x8000_0001)));
    }

    #[test]
    fn option_header() {
        assert_eq!(parse_option_header(&opt_header(7, 10)), Ok(OptionHeader { opt: 7, len: 10 }));
        assert_eq!(
            parse_option_header(&opt_header(7, MAX_OPTION_DATA)),
            Ok(OptionHeader { opt: 7, len: MAX_OPTION_DATA })
        );
        assert_eq!(
            parse_option_header(&opt_header(7, MAX_OPTION_DATA + 1)),
            Err(HandshakeError::OptionTooLong { opt: 7, len: MAX_OPTION_DATA + 1 })
        );
        assert_eq!(
            parse_option_header(&opt_header(1, u32::MAX)),
            Err(HandshakeError::OptionTooLong { opt: 1, len: u32::MAX })
        );
        let mut bad = opt_header(7, 0);
        bad[0] ^= 1;
        assert!(matches!(parse_option_header(&bad), Err(HandshakeError::BadOptionMagic(_))));
        assert!(matches!(parse_option_header(&bad[..15]), Err(HandshakeError::WrongLength { .. })));
    }

    #[test]
    fn parse_info_requests() {
        let d = info_data(b"disk", &[INFO_NAME, INFO_BLOCK_SIZE]);
        let ClientOption::Go(r) = parse_option(OPT_GO, &d).unwrap() else { panic!() };
        assert_eq!(r.name, b"disk");
        assert_eq!(r.infos().collect::<Vec<_>>(), vec![INFO_NAME, INFO_BLOCK_SIZE]);
        assert!(matches!(parse_option(OPT_INFO, &d), Ok(ClientOption::Info(_))));
        // empty name, no infos
        let empty = info_data(b"", &[]);
        let ClientOption::Info(r) = parse_option(OPT_INFO, &empty).unwrap() else { panic!() };
        assert_eq!(r.name, b"");
        assert_eq!(r.infos().count(), 0);
        // malformed
        assert!(parse_option(OPT_GO, &[0, 0, 0, 0, 0]).is_err()); // too short
        let mut long_name = d.clone();
        long_name[0..4].copy_from_slice(&100u32.to_be_bytes());
        assert!(parse_option(OPT_GO, &long_name).is_err()); // name past the end
        let mut huge = d.clone();
        huge[0..4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse_option(OPT_GO, &huge).is_err()); // no overflow
        let mut odd = d.clone();
        odd.push(0);
        assert!(parse_option(OPT_GO, &odd).is_err()); // count mismatch
        let mut count = d.clone();
        let at = 4 + 4;
        count[at..at + 2].copy_from_slice(&3u16.to_be_bytes());
        assert!(parse_option(OPT_GO, &count).is_err());
        let name = vec![b'a'; MAX_STRING_LEN + 1];
        assert_eq!(
            parse_option(OPT_GO, &info_data(&name, &[])),
            Err(InvalidOption("export name longer than 4096 bytes"))
        );
        let name = vec![b'a'; MAX_STRING_LEN];
        assert!(parse_option(OPT_GO, &info_data(&name, &[])).is_ok());
    }

    #[test]
    fn parse_simple_options() {
        assert_eq!(parse_option(OPT_EXPORT_NAME, b"x"), Ok(ClientOption::ExportName(b"x")));
        assert_eq!(parse_option(OPT_ABORT, b""), Ok(ClientOption::Abort));
        assert_eq!(parse_option(OPT_LIST, b""), Ok(ClientOption::List));
        assert!(parse_option(OPT_LIST, b"x").is_err());
        assert_eq!(parse_option(OPT_STRUCTURED_REPLY, b""), Ok(ClientOption::StructuredReply));
        assert!(parse_option(OPT_STRUCTURED_REPLY, b"x").is_err());
        assert_eq!(parse_option(OPT_STARTTLS, b""), Ok(ClientOption::Unsupported(OPT_STARTTLS)));
        assert_eq!(parse_option(0xdead, b"zz"), Ok(ClientOption::Unsupported(0xdead)));
    }

    #[test]
    fn option_reply_builder() {
        let mut out = Vec::new();
        put_option_reply(&mut out, OPT_LIST, REP_SERVER, &[b"ab", b"cde"]);
        assert_eq!(out.len(), OPTION_REPLY_HEADER_LEN + 5);
        assert_eq!(&out[0..8], &OPTION_REPLY_MAGIC.to_be_bytes());
        let (r, rest) = split_option_reply(&out).unwrap();
        assert_eq!(r, OptionReply { opt: OPT_LIST, reply: REP_SERVER, data: b"abcde" });
        assert!(rest.is_empty());
        assert!(split_option_reply(&out[..out.len() - 1]).is_none());
        assert!(split_option_reply(&out[..10]).is_none());
    }

    #[test]
    fn go_with_infos() {
        let ex = exports();
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
        assert!(n.no_zeroes());
        let d = info_data(b"disk", &[INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE, 999]);
        assert_eq!(run_option(&mut n, OPT_GO, &d), Ok(Progress::Transmit { export: 0 }));
        let r = replies(n.output());
        assert_eq!(r.len(), 5);
        assert!(r.iter().all(|r| r.opt == OPT_GO));
        assert_eq!(r[0].reply, REP_INFO);
        let mut exp = INFO_EXPORT.to_be_bytes().to_vec();
        exp.extend_from_slice(&(1u64 << 20).to_be_bytes());
        exp.extend_from_slice(&(FLAG_HAS_FLAGS | FLAG_SEND_FLUSH).to_be_bytes());
        assert_eq!(r[0].data, &exp[..]);
        let mut bs = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
        for v in [1u32, 4096, DEFAULT_MAX_BLOCK] {
            bs.extend_from_slice(&v.to_be_bytes());
        }
        assert_eq!(r[1].data, &bs[..]);
        assert_eq!(r[2].data, b"\x00\x01disk");
        assert_eq!(r[3].data, b"\x00\x02first disk");
        assert_eq!((r[4].reply, r[4].data), (REP_ACK, &b""[..]));
        assert_eq!(n.need(), 0);
        assert_eq!(n.feed(b""), Err(HandshakeError::Finished));
    }

    #[test]
    fn info_then_go_default_export() {
        let ex = exports();
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        // INFO on the second export keeps negotiating; preferred block capped by max
        assert_eq!(run_option(&mut n, OPT_INFO, &info_data(b"two", &[])), Ok(Progress::Continue));
        let r = replies(n.output());
        assert_eq!(r.len(), 3);
        assert_eq!(&r[1].data[6..14], &[0, 0, 4, 0, 0, 0, 4, 0]);
        assert_eq!(r[2].reply, REP_ACK);
        n.clear_output();
        // the empty name picks the first export
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"", &[])), Ok(Progress::Transmit { export: 0 }));
        // ... unless an export is really called ""
        let mut ex = exports();
        ex[1].name.clear();
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"", &[])), Ok(Progress::Transmit { export: 1 }));
    }

    #[test]
    fn unknown_export_and_unsupported_options() {
        let ex = exports();
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"nope", &[])), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, OPT_STRUCTURED_REPLY, b"junk"), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, OPT_STARTTLS, b""), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, 77, b"abc"), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, OPT_LIST, b"junk"), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, OPT_GO, b"\0\0"), Ok(Progress::Continue));
        let r = replies(n.output());
        let kinds: Vec<_> = r.iter().map(|r| (r.opt, r.reply)).collect();
        assert_eq!(
            kinds,
            vec![
                (OPT_GO, REP_ERR_UNKNOWN),
                (OPT_STRUCTURED_REPLY, REP_ERR_INVALID),
                (OPT_STARTTLS, REP_ERR_UNSUP),
                (77, REP_ERR_UNSUP),
                (OPT_LIST, REP_ERR_INVALID),
                (OPT_GO, REP_ERR_INVALID),
            ]
        );
        // still negotiating: a good GO works afterwards
        n.clear_output();
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"two", &[])), Ok(Progress::Transmit { export: 1 }));
    }

    #[test]
    fn list_and_abort() {
        let ex = exports();
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        assert_eq!(run_option(&mut n, OPT_LIST, b""), Ok(Progress::Continue));
        let r = replies(n.output());
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].reply, REP_SERVER);
        assert_eq!(r[0].data, b"\0\0\0\x04diskfirst disk");
        assert_eq!(r[1].data, b"\0\0\0\x03two");
        assert_eq!(r[2].reply, REP_ACK);
        n.clear_output();
        assert_eq!(run_option(&mut n, OPT_ABORT, b""), Ok(Progress::Abort));
        assert_eq!(replies(n.output()), vec![OptionReply { opt: OPT_ABORT, reply: REP_ACK, data: b"" }]);
        assert_eq!(n.need(), 0);
    }

    #[test]
    fn export_name_zeroes() {
        let ex = exports();
        for (flags, zeroes) in
            [(FLAG_C_FIXED_NEWSTYLE, true), (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES, false), (0, true)]
        {
            let mut n = started(&ex, flags);
            assert_eq!(run_option(&mut n, OPT_EXPORT_NAME, b"two"), Ok(Progress::Transmit { export: 1 }));
            let out = n.output();
            assert_eq!(out.len(), 10 + if zeroes { EXPORT_NAME_ZEROES } else { 0 });
            assert_eq!(&out[0..8], &4096u64.to_be_bytes());
            assert_eq!(&out[8..10], &1u16.to_be_bytes());
            assert!(out[10..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn export_name_errors_disconnect() {
        let ex = exports();
        let mut n = started(&ex, 1);
        assert_eq!(run_option(&mut n, OPT_EXPORT_NAME, b"nope"), Err(HandshakeError::UnknownExport("nope".into())));
        assert_eq!(n.need(), 0);
        let mut n = started(&ex, 1);
        let long = vec![b'x'; MAX_STRING_LEN + 1];
        assert_eq!(run_option(&mut n, OPT_EXPORT_NAME, &long), Err(HandshakeError::ExportNameTooLong(4097)));
        // no exports at all: even the default name is unknown
        let none: Vec<ExportInfo> = Vec::new();
        let mut n = started(&none, 1);
        assert!(matches!(run_option(&mut n, OPT_EXPORT_NAME, b""), Err(HandshakeError::UnknownExport(_))));
    }

    #[test]
    fn wrong_feed_length() {
        let ex = exports();
        let mut n = Negotiation::new(&ex);
        assert_eq!(n.feed(&[0; 5]), Err(HandshakeError::WrongLength { want: 4, got: 5 }));
    }

    fn tls_started_with(ex: &[ExportInfo], mode: TlsMode) -> Negotiation<'_> {
        let mut n = Negotiation::with_tls(ex, mode);
        n.clear_output();
        assert_eq!(n.feed(&FLAG_C_FIXED_NEWSTYLE.to_be_bytes()), Ok(Progress::Continue));
        n
    }

    /// Runs STARTTLS to the upgrade.
    fn upgrade(n: &mut Negotiation) {
        assert_eq!(run_option(n, OPT_STARTTLS, b""), Ok(Progress::StartTls));
        assert_eq!(replies(n.output()), vec![OptionReply { opt: OPT_STARTTLS, reply: REP_ACK, data: b"" }]);
        n.clear_output();
        // nothing is read in clear text until the TLS session is up
        assert_eq!(n.need(), 0);
        assert_eq!(n.feed(&opt_header(OPT_LIST, 0)), Err(HandshakeError::AwaitingTls));
        assert!(!n.tls_active());
        n.tls_started();
        assert!(n.tls_active());
        assert_eq!(n.need(), OPTION_HEADER_LEN);
    }

    #[test]
    fn tls_required_refuses_every_option_but_starttls_and_abort() {
        let ex = exports();
        let mut n = tls_started_with(&ex, TlsMode::Require);
        for (opt, data) in [
            (OPT_LIST, vec![]),
            (OPT_GO, info_data(b"disk", &[])),
            (OPT_INFO, info_data(b"disk", &[])),
            (OPT_STRUCTURED_REPLY, vec![]),
            (0xdead, b"zz".to_vec()),
            (OPT_GO, b"\0".to_vec()), // malformed: still TLS_REQD, nothing parsed
        ] {
            assert_eq!(run_option(&mut n, opt, &data), Ok(Progress::Continue));
            let r = replies(n.output());
            assert_eq!(r.len(), 1, "option {opt}: {r:?}");
            assert_eq!((r[0].opt, r[0].reply), (opt, REP_ERR_TLS_REQD));
            n.clear_output();
        }
        // no export name leaks before the upgrade
        assert_eq!(run_option(&mut n, OPT_STARTTLS, b"x"), Ok(Progress::Continue));
        assert_eq!(replies(n.output())[0].reply, REP_ERR_INVALID);
        n.clear_output();
        upgrade(&mut n);
        assert_eq!(run_option(&mut n, OPT_LIST, b""), Ok(Progress::Continue));
        assert_eq!(replies(n.output())[0].reply, REP_SERVER);
        n.clear_output();
        assert_eq!(run_option(&mut n, OPT_STARTTLS, b""), Ok(Progress::Continue));
        assert_eq!(replies(n.output())[0].reply, REP_ERR_INVALID);
        n.clear_output();
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));

        // EXPORT_NAME cannot be refused with a reply: the connection ends
        let mut n = tls_started_with(&ex, TlsMode::Require);
        assert_eq!(run_option(&mut n, OPT_EXPORT_NAME, b"disk"), Err(HandshakeError::TlsRequired));
        assert!(n.output().is_empty());
        assert_eq!(n.need(), 0);
        // ... but works over TLS
        let mut n = tls_started_with(&ex, TlsMode::Require);
        upgrade(&mut n);
        assert_eq!(run_option(&mut n, OPT_EXPORT_NAME, b"two"), Ok(Progress::Transmit { export: 1 }));
        // ABORT is answered in clear text
        let mut n = tls_started_with(&ex, TlsMode::Require);
        assert_eq!(run_option(&mut n, OPT_ABORT, b""), Ok(Progress::Abort));
        assert_eq!(replies(n.output())[0].reply, REP_ACK);
    }

    #[test]
    fn tls_on_allows_clear_text_and_the_upgrade() {
        let ex = exports();
        let mut n = tls_started_with(&ex, TlsMode::On);
        assert_eq!(run_option(&mut n, OPT_LIST, b""), Ok(Progress::Continue));
        assert_eq!(replies(n.output()).len(), 3);
        n.clear_output();
        upgrade(&mut n);
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"two", &[])), Ok(Progress::Transmit { export: 1 }));
        let mut n = tls_started_with(&ex, TlsMode::On);
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"", &[])), Ok(Progress::Transmit { export: 0 }));
        assert!(!n.tls_active());
        // structured replies and a context chosen in clear text are forgotten at the upgrade
        let mut n = tls_started_with(&ex, TlsMode::On);
        assert_eq!(run_option(&mut n, OPT_STRUCTURED_REPLY, b""), Ok(Progress::Continue));
        let d = meta_data(b"disk", &[b"base:allocation"]);
        assert_eq!(run_option(&mut n, OPT_SET_META_CONTEXT, &d), Ok(Progress::Continue));
        n.clear_output();
        upgrade(&mut n);
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));
        assert_eq!(export_flags(n.output()) & FLAG_SEND_DF, 0);
        assert_eq!(n.session(), Session::default());
        // ... and negotiated again over TLS, they count
        let mut n = tls_started_with(&ex, TlsMode::Require);
        upgrade(&mut n);
        assert_eq!(run_option(&mut n, OPT_STRUCTURED_REPLY, b""), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, OPT_SET_META_CONTEXT, &d), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));
        assert_eq!(
            n.session(),
            Session { structured: true, extended: false, allocation: Some(CONTEXT_ID_BASE_ALLOCATION) }
        );
        // off: STARTTLS is unsupported, and tls_started does nothing
        let mut n = tls_started_with(&ex, TlsMode::Off);
        assert_eq!(run_option(&mut n, OPT_STARTTLS, b""), Ok(Progress::Continue));
        assert_eq!(replies(n.output())[0].reply, REP_ERR_UNSUP);
        n.tls_started();
        assert!(!n.tls_active());
    }

    fn meta_data(name: &[u8], queries: &[&[u8]]) -> Vec<u8> {
        let mut v = (name.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(name);
        v.extend_from_slice(&(queries.len() as u32).to_be_bytes());
        for q in queries {
            v.extend_from_slice(&(q.len() as u32).to_be_bytes());
            v.extend_from_slice(q);
        }
        v
    }

    fn kinds(out: &[u8]) -> Vec<u32> {
        replies(out).iter().map(|r| r.reply).collect()
    }

    /// The `NBD_INFO_EXPORT` flags of a GO/INFO reply.
    fn export_flags(out: &[u8]) -> u16 {
        let r = replies(out);
        let e = r.iter().find(|r| r.reply == REP_INFO && r.data[0..2] == INFO_EXPORT.to_be_bytes()).unwrap();
        u16::from_be_bytes([e.data[10], e.data[11]])
    }

    #[test]
    fn meta_context_needs_structured_replies_first() {
        let ex = exports();
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        let d = meta_data(b"disk", &[b"base:allocation"]);
        for opt in [OPT_LIST_META_CONTEXT, OPT_SET_META_CONTEXT] {
            assert_eq!(run_option(&mut n, opt, &d), Ok(Progress::Continue));
            assert_eq!(kinds(n.output()), vec![REP_ERR_INVALID]);
            n.clear_output();
        }
        // without structured replies no DF, no context
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));
        assert_eq!(export_flags(n.output()) & FLAG_SEND_DF, 0);
        assert_eq!(n.session(), Session::default());
    }

    #[test]
    fn structured_set_and_go() {
        let ex = exports();
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        assert_eq!(run_option(&mut n, OPT_STRUCTURED_REPLY, b""), Ok(Progress::Continue));
        assert_eq!(kinds(n.output()), vec![REP_ACK]);
        n.clear_output();
        // LIST with no query lists base:allocation with id 0
        assert_eq!(run_option(&mut n, OPT_LIST_META_CONTEXT, &meta_data(b"disk", &[])), Ok(Progress::Continue));
        let r = replies(n.output());
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].reply, r[0].data), (REP_META_CONTEXT, &b"\0\0\0\0base:allocation"[..]));
        assert_eq!(r[1].reply, REP_ACK);
        n.clear_output();
        // SET selects it with a nonzero id
        let d = meta_data(b"disk", &[b"qemu:dirty-bitmap:a", b"base:allocation"]);
        assert_eq!(run_option(&mut n, OPT_SET_META_CONTEXT, &d), Ok(Progress::Continue));
        let r = replies(n.output());
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].reply, REP_META_CONTEXT);
        assert_eq!(&r[0].data[0..4], &CONTEXT_ID_BASE_ALLOCATION.to_be_bytes());
        assert_eq!(&r[0].data[4..], b"base:allocation");
        n.clear_output();
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));
        assert_eq!(export_flags(n.output()), FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_DF);
        assert_eq!(
            n.session(),
            Session { structured: true, extended: false, allocation: Some(CONTEXT_ID_BASE_ALLOCATION) }
        );
    }

    #[test]
    fn meta_context_selection_rules() {
        let ex = exports();
        let structured = |ex| {
            let mut n = started(ex, FLAG_C_FIXED_NEWSTYLE);
            assert_eq!(run_option(&mut n, OPT_STRUCTURED_REPLY, b""), Ok(Progress::Continue));
            n.clear_output();
            n
        };
        let set = |n: &mut Negotiation, name: &[u8], qs: &[&[u8]]| {
            assert_eq!(run_option(n, OPT_SET_META_CONTEXT, &meta_data(name, qs)), Ok(Progress::Continue));
            let k = kinds(n.output());
            n.clear_output();
            k
        };
        let go = |n: &mut Negotiation, name: &[u8]| {
            assert!(matches!(run_option(n, OPT_GO, &info_data(name, &[])), Ok(Progress::Transmit { .. })));
            n.session().allocation
        };
        // unknown contexts, base: and no query select nothing (ACK only)
        let mut n = structured(&ex);
        assert_eq!(set(&mut n, b"disk", &[b"base:other", b"x-a:b", b"base:"]), vec![REP_ACK]);
        assert_eq!(set(&mut n, b"disk", &[]), vec![REP_ACK]);
        assert_eq!(go(&mut n, b"disk"), None);
        // a later SET replaces an earlier one, even when it fails
        let mut n = structured(&ex);
        assert_eq!(set(&mut n, b"disk", &[b"base:allocation"]), vec![REP_META_CONTEXT, REP_ACK]);
        assert_eq!(set(&mut n, b"disk", &[b"nonamespace"]), vec![REP_ERR_INVALID]);
        assert_eq!(go(&mut n, b"disk"), None);
        let mut n = structured(&ex);
        assert_eq!(set(&mut n, b"disk", &[b"base:allocation"]), vec![REP_META_CONTEXT, REP_ACK]);
        assert_eq!(run_option(&mut n, OPT_SET_META_CONTEXT, b"\0\0"), Ok(Progress::Continue)); // malformed
        assert_eq!(kinds(n.output()), vec![REP_ERR_INVALID]);
        n.clear_output();
        assert_eq!(go(&mut n, b"disk"), None);
        // an unknown export: UNKNOWN, and the selection is gone
        let mut n = structured(&ex);
        assert_eq!(set(&mut n, b"disk", &[b"base:allocation"]), vec![REP_META_CONTEXT, REP_ACK]);
        assert_eq!(set(&mut n, b"nope", &[b"base:allocation"]), vec![REP_ERR_UNKNOWN]);
        assert_eq!(go(&mut n, b"disk"), None);
        // selected for one export, transmission on another: no context
        let mut n = structured(&ex);
        assert_eq!(set(&mut n, b"two", &[b"base:allocation"]), vec![REP_META_CONTEXT, REP_ACK]);
        assert_eq!(go(&mut n, b"disk"), None);
        // the default name selects the default export, and EXPORT_NAME keeps the context
        let mut n = structured(&ex);
        assert_eq!(set(&mut n, b"", &[b"base:allocation"]), vec![REP_META_CONTEXT, REP_ACK]);
        assert_eq!(run_option(&mut n, OPT_EXPORT_NAME, b"disk"), Ok(Progress::Transmit { export: 0 }));
        assert_eq!(n.session().allocation, Some(CONTEXT_ID_BASE_ALLOCATION));
        assert_eq!(&n.output()[8..10], &(FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_DF).to_be_bytes());
        // LIST never changes the selection; forget_options (STARTTLS) drops everything
        let mut n = structured(&ex);
        assert_eq!(set(&mut n, b"disk", &[b"base:allocation"]), vec![REP_META_CONTEXT, REP_ACK]);
        assert_eq!(run_option(&mut n, OPT_LIST_META_CONTEXT, &meta_data(b"disk", &[b"x-y:z"])), Ok(Progress::Continue));
        assert_eq!(kinds(n.output()), vec![REP_ACK]);
        n.clear_output();
        n.forget_options();
        assert_eq!(go(&mut n, b"disk"), None);
        assert!(!n.session().structured);
    }

    #[test]
    fn extended_headers_only_when_asked_and_imply_structured_replies() {
        let ex = exports();
        // not asked: compact headers
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        assert_eq!(run_option(&mut n, OPT_STRUCTURED_REPLY, b""), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));
        assert!(!n.session().extended && n.session().structured);
        // asked: acknowledged, structured replies come with them, DF is advertised
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        assert_eq!(run_option(&mut n, OPT_EXTENDED_HEADERS, b""), Ok(Progress::Continue));
        assert_eq!(kinds(n.output()), vec![REP_ACK]);
        n.clear_output();
        // asked twice: still fine; STRUCTURED_REPLY after it: EXT_HEADER_REQD, nothing changes
        assert_eq!(run_option(&mut n, OPT_EXTENDED_HEADERS, b""), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, OPT_STRUCTURED_REPLY, b""), Ok(Progress::Continue));
        assert_eq!(kinds(n.output()), vec![REP_ACK, REP_ERR_EXT_HEADER_REQD]);
        n.clear_output();
        // metadata contexts need no STRUCTURED_REPLY of their own
        let d = meta_data(b"disk", &[b"base:allocation"]);
        assert_eq!(run_option(&mut n, OPT_SET_META_CONTEXT, &d), Ok(Progress::Continue));
        assert_eq!(kinds(n.output()), vec![REP_META_CONTEXT, REP_ACK]);
        n.clear_output();
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));
        assert_eq!(export_flags(n.output()) & FLAG_SEND_DF, FLAG_SEND_DF);
        assert_eq!(
            n.session(),
            Session { structured: true, extended: true, allocation: Some(CONTEXT_ID_BASE_ALLOCATION) }
        );
        // data on the option: INVALID, not negotiated
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        assert_eq!(run_option(&mut n, OPT_EXTENDED_HEADERS, b"x"), Ok(Progress::Continue));
        assert_eq!(kinds(n.output()), vec![REP_ERR_INVALID]);
        n.clear_output();
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));
        assert_eq!(n.session(), Session::default());
        // forgotten at STARTTLS, negotiated again over TLS
        let mut n = tls_started_with(&ex, TlsMode::On);
        assert_eq!(run_option(&mut n, OPT_EXTENDED_HEADERS, b""), Ok(Progress::Continue));
        n.clear_output();
        upgrade(&mut n);
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));
        assert_eq!(n.session(), Session::default());
        let mut n = tls_started_with(&ex, TlsMode::On);
        upgrade(&mut n);
        assert_eq!(run_option(&mut n, OPT_EXTENDED_HEADERS, b""), Ok(Progress::Continue));
        assert_eq!(run_option(&mut n, OPT_EXPORT_NAME, b"disk"), Ok(Progress::Transmit { export: 0 }));
        assert!(n.session().extended);
        let mut n = started(&ex, FLAG_C_FIXED_NEWSTYLE);
        assert_eq!(run_option(&mut n, OPT_EXTENDED_HEADERS, b""), Ok(Progress::Continue));
        n.forget_options();
        assert_eq!(run_option(&mut n, OPT_GO, &info_data(b"disk", &[])), Ok(Progress::Transmit { export: 0 }));
        assert_eq!(n.session(), Session::default());
    }
}
