//! Twitter's cache traces (twemcache, OSDI'20), in their published CSV form:
//! `timestamp,anonymized key,key size,value size,client id,operation,TTL`.
//!
//! An object's size is its key size plus its value size, as libCacheSim's
//! Twitter readers count it. Keys are anonymized text, hashed to 64 bits
//! ([`text_key`](crate::trace::objects::text_key)). Operations: `get`, `gets`
//! read; `set`, `add`, `replace`, `cas`, `append`, `prepend`, `incr`, `decr`
//! write; `delete` removes (a trim). Timestamps are seconds.

use crate::trace::objects::{key_field, nine_in_ten, object_size, ObjectLineFormat, ObjectRequest};
use crate::trace::text::u64_field;
use crate::trace::{FieldError, Format, Op};

pub struct Twr;

/// The request kind of a Twitter operation name.
fn op_of(name: &str) -> Option<Op> {
    Some(match name.trim() {
        "get" | "gets" => Op::Read,
        "set" | "add" | "replace" | "cas" | "append" | "prepend" | "incr" | "decr" => Op::Write,
        "delete" => Op::Trim,
        _ => return None,
    })
}

impl ObjectLineFormat for Twr {
    fn parse(&mut self, line: &str) -> Result<Option<ObjectRequest>, FieldError> {
        let mut f = line.split(',');
        let time = u64_field("timestamp", f.next())?.saturating_mul(1_000_000_000);
        let key = key_field("key", f.next())?;
        let key_size = u64_field("key_size", f.next())?;
        let value_size = u64_field("value_size", f.next())?;
        let _client = f.next().ok_or_else(|| FieldError::new("client", "missing"))?;
        let name = f.next().ok_or_else(|| FieldError::new("operation", "missing"))?;
        let op = op_of(name).ok_or_else(|| {
            FieldError::new(
                "operation",
                format!("{name:?} is not get, gets, set, add, replace, cas, append, prepend, incr, decr or delete"),
            )
        })?;
        let size = object_size("size", key_size.saturating_add(value_size))?;
        Ok(Some(ObjectRequest { time, key, size, op }))
    }
}

/// Seven comma-separated columns whose sixth is a Twitter operation.
pub fn sniff(lines: &[&str]) -> Option<Format> {
    let fits = |l: &str| {
        let cols: Vec<&str> = l.split(',').collect();
        cols.len() == 7 && op_of(cols[5]).is_some() && cols[0].trim().parse::<u64>().is_ok()
    };
    nine_in_ten(lines, fits).then_some(Format::Twr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::objects::text_key;

    #[test]
    fn lines_parse() {
        let r = Twr.parse("0,nz:u:eeW511W3dcH3de3d15ec,26,76,1,get,0").unwrap().unwrap();
        assert_eq!((r.time, r.key, r.size, r.op), (0, text_key("nz:u:eeW511W3dcH3de3d15ec"), 102, Op::Read));
        assert_eq!(Twr.parse("5,k,1,2,3,delete,0").unwrap().unwrap().op, Op::Trim);
        assert_eq!(Twr.parse("5,k,1,2,3,set,0").unwrap().unwrap().op, Op::Write);
        assert_eq!(Twr.parse("5,k,1,2,3,fly,0").unwrap_err().field, "operation");
        assert_eq!(Twr.parse("5,k,0,0,3,get,0").unwrap_err().field, "size");
        assert_eq!(sniff(&["0,abc,26,76,1,get,0"]), Some(Format::Twr));
    }
}
