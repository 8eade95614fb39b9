//! VscsiCsv (TODO by the formats work).
use crate::trace::text::LineFormat;
use crate::trace::{FieldError, Request};
#[derive(Default)]
pub struct VscsiCsv;
impl LineFormat for VscsiCsv {
    fn parse(&mut self, _line: &str) -> Result<Option<Request>, FieldError> {
        Err(FieldError::new("line", "vscsi reader not written yet"))
    }
}
