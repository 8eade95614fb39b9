//! Msr (TODO by the formats work).
use crate::trace::text::LineFormat;
use crate::trace::{FieldError, Request};
#[derive(Default)]
pub struct Msr;
impl LineFormat for Msr {
    fn parse(&mut self, _line: &str) -> Result<Option<Request>, FieldError> {
        Err(FieldError::new("line", "msr reader not written yet"))
    }
}
