//! Blkparse (TODO by the formats work).
use crate::trace::text::LineFormat;
use crate::trace::{FieldError, Request};
#[derive(Default)]
pub struct Blkparse;
impl LineFormat for Blkparse {
    fn parse(&mut self, _line: &str) -> Result<Option<Request>, FieldError> {
        Err(FieldError::new("line", "blkparse reader not written yet"))
    }
}
