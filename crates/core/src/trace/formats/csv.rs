//! Generic CSV with a column mapping (TODO by the formats work).
use crate::trace::text::LineFormat;
use crate::trace::{FieldError, Request};
#[derive(Clone, Debug, Default)]
pub struct CsvMapping;
pub struct Csv;
impl Csv {
    pub fn new(_m: CsvMapping) -> Self {
        Csv
    }
}
impl LineFormat for Csv {
    fn parse(&mut self, _line: &str) -> Result<Option<Request>, FieldError> {
        Err(FieldError::new("line", "csv reader not written yet"))
    }
}
