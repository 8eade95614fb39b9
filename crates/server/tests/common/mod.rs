//! The raw NBD client's handshake steps the server's tests share.

use ssdcache_nbd::consts::*;
use ssdcache_nbd::handshake::{split_option_reply, OptionReply};
use ssdcache_server::ServerHandle;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Connects and answers the greeting (fixed newstyle, no zeroes).
pub async fn greeted(h: &ServerHandle) -> TcpStream {
    let mut s = TcpStream::connect(h.local_addr()).await.unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).await.unwrap();
    s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes()).await.unwrap();
    s
}

/// Sends option `opt` with `data`; its replies up to the ACK or an error,
/// each waited for at most `t`.
pub async fn option(s: &mut TcpStream, opt: u32, data: &[u8], t: Duration) -> Vec<(u32, Vec<u8>)> {
    let mut m = IHAVEOPT.to_be_bytes().to_vec();
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    s.write_all(&m).await.unwrap();
    let mut v = Vec::new();
    loop {
        let mut h = [0u8; 20];
        timeout(t, s.read_exact(&mut h)).await.unwrap().unwrap();
        let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
        let mut buf = h.to_vec();
        buf.resize(20 + len, 0);
        s.read_exact(&mut buf[20..]).await.unwrap();
        let (OptionReply { opt: o, reply, data }, _) = split_option_reply(&buf).unwrap();
        assert_eq!(o, opt);
        v.push((reply, data.to_vec()));
        if reply == REP_ACK || reply & REP_FLAG_ERROR != 0 {
            return v;
        }
    }
}
