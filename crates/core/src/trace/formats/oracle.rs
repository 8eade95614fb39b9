//! libCacheSim oracleGeneral (TODO by the formats work).
use crate::trace::{Format, Request, TraceError, TraceReader, Unit};
use std::io::BufRead;
use std::path::{Path, PathBuf};
pub struct OracleGeneral {
    _src: Box<dyn BufRead + Send>,
    path: PathBuf,
}
impl OracleGeneral {
    pub fn new(src: Box<dyn BufRead + Send>, path: &Path) -> Self {
        OracleGeneral { _src: src, path: path.into() }
    }
}
impl TraceReader for OracleGeneral {
    fn read_batch(&mut self, _out: &mut Vec<Request>, _max: usize) -> Result<usize, TraceError> {
        Err(TraceError::Format { path: self.path.clone(), msg: "not written yet".into() })
    }
    fn unit(&self) -> Unit {
        Unit::Pages
    }
}
pub fn sniff(_head: &[u8]) -> Option<Format> {
    None
}
