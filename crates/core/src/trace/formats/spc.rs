//! UMass SPC (TODO by the formats work).
use crate::trace::text::LineFormat;
use crate::trace::{FieldError, Request};
#[derive(Default)]
pub struct Spc;
impl LineFormat for Spc {
    fn parse(&mut self, _line: &str) -> Result<Option<Request>, FieldError> {
        Err(FieldError::new("line", "spc reader not written yet"))
    }
}
