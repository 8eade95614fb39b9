//! Systor (TODO by the formats work).
use crate::trace::text::LineFormat;
use crate::trace::{FieldError, Request};
#[derive(Default)]
pub struct Systor;
impl LineFormat for Systor {
    fn parse(&mut self, _line: &str) -> Result<Option<Request>, FieldError> {
        Err(FieldError::new("line", "systor reader not written yet"))
    }
}
