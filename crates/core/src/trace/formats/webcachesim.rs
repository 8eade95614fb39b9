//! webcachesim's request format (the AdaptSize sample trace, NSDI'17, as
//! shipped with webcachesim and Caffeine's simulator): one request per line,
//! whitespace-separated `time id size_bytes`, every request a GET.
//!
//! An object is the pair (id, size), as both simulators key it: a request for
//! an id with another size is another object. The key is a hash of the pair
//! ([`object_key`]). Times are taken as seconds (in the sample they count
//! requests).

use crate::trace::objects::{nine_in_ten, object_size, ObjectLineFormat, ObjectRequest};
use crate::trace::text::{f64_field, to_nanos, u64_field};
use crate::trace::{FieldError, Format, Op};

pub struct Webcachesim;

/// The key of object (`id`, `size`): FNV-1a over both numbers' bytes.
pub fn object_key(id: u64, size: u64) -> u64 {
    id.to_le_bytes()
        .iter()
        .chain(size.to_le_bytes().iter())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

impl ObjectLineFormat for Webcachesim {
    fn parse(&mut self, line: &str) -> Result<Option<ObjectRequest>, FieldError> {
        let mut f = line.split_ascii_whitespace();
        let time = to_nanos("time", f64_field("time", f.next())?, 1e9)?;
        let id = u64_field("id", f.next())?;
        let size = object_size("size", u64_field("size", f.next())?)?;
        if let Some(extra) = f.next() {
            return Err(FieldError::new("line", format!("unexpected fourth column {extra:?} (want `time id size`)")));
        }
        Ok(Some(ObjectRequest { time, key: object_key(id, size), size, op: Op::Read }))
    }
}

/// Three whitespace-separated non-negative integers on (nine in ten of) the lines.
pub fn sniff(lines: &[&str]) -> Option<Format> {
    let fits = |l: &str| {
        let cols: Vec<&str> = l.split_ascii_whitespace().collect();
        cols.len() == 3 && cols.iter().all(|c| c.parse::<u64>().is_ok()) && cols[2] != "0"
    };
    nine_in_ten(lines, fits).then_some(Format::Webcachesim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_sizes_are_checked() {
        let r = Webcachesim.parse("3 2 40773").unwrap().unwrap();
        assert_eq!((r.time, r.key, r.size, r.op), (3_000_000_000, object_key(2, 40773), 40773, Op::Read));
        assert_ne!(object_key(2, 40773), object_key(2, 40774));
        let e = Webcachesim.parse("3 2 0").unwrap_err();
        assert_eq!(e.field, "size");
        let e = Webcachesim.parse("3 2 281474976710657").unwrap_err();
        assert!(e.msg.contains("281474976710657"), "{e:?}");
        assert_eq!(Webcachesim.parse("3 x 5").unwrap_err().field, "id");
        assert_eq!(sniff(&["1 0 68", "2 1 7454"]), Some(Format::Webcachesim));
        assert_eq!(sniff(&["1 0 68 4 5"]), None);
    }
}
