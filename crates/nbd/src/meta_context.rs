//! The data of `NBD_OPT_LIST_META_CONTEXT` / `NBD_OPT_SET_META_CONTEXT` and
//! which of this server's metadata contexts a request's queries select.
//!
//! One context exists: `base:allocation`. Query syntax (the spec's for the
//! `base:` namespace): `base:allocation` selects it; `base:` lists it but
//! selects nothing; any other leaf of `base:`, and any other namespace, is
//! ignored (the spec says MUST ignore). A query that is not UTF-8 or has no
//! `namespace:` prefix is invalid (`NBD_REP_ERR_INVALID`, which the spec
//! allows). No query at all lists every context and selects none.

use super::consts::MAX_STRING_LEN;

/// Why a request is invalid: the text of its `NBD_REP_ERR_INVALID` reply
/// (the handshake wraps it in its `InvalidOption`).
pub type Invalid = &'static str;

/// A parsed `LIST` / `SET` request: `u32 name length, name, u32 query count,
/// count × (u32 length, query)`. Borrowed from the option data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaRequest<'a> {
    pub name: &'a [u8],
    /// The queries, still length-prefixed (checked by [`parse_meta_request`]).
    raw_queries: &'a [u8],
}

impl<'a> MetaRequest<'a> {
    /// The query strings.
    pub fn queries(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut rest = self.raw_queries;
        std::iter::from_fn(move || {
            let n = u32::from_be_bytes(rest.get(0..4)?.try_into().ok()?) as usize;
            let q = rest.get(4..4 + n)?;
            rest = &rest[4 + n..];
            Some(q)
        })
    }
}

/// Parses and checks the whole request: the name and every query within the
/// string limit, the count matching the data exactly. Never allocates.
pub fn parse_meta_request(data: &[u8]) -> Result<MetaRequest<'_>, Invalid> {
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    if data.len() < 8 {
        return Err("option data shorter than 8 bytes");
    }
    let name_len = be(&data[0..4]);
    if name_len > MAX_STRING_LEN {
        return Err("export name longer than 4096 bytes");
    }
    if 4 + name_len + 4 > data.len() {
        return Err("export name length exceeds option data");
    }
    let name = &data[4..4 + name_len];
    let count = be(&data[4 + name_len..8 + name_len]);
    let raw_queries = &data[8 + name_len..];
    // Walk the queries: each needs at least its 4-byte length, so a huge
    // count runs out of data long before it runs out of loop.
    let mut rest = raw_queries;
    for _ in 0..count {
        if rest.len() < 4 {
            return Err("fewer queries than their count says");
        }
        let n = be(&rest[0..4]);
        if n > MAX_STRING_LEN {
            return Err("query longer than 4096 bytes");
        }
        if 4 + n > rest.len() {
            return Err("query length exceeds option data");
        }
        rest = &rest[4 + n..];
    }
    if !rest.is_empty() {
        return Err("data after the last query");
    }
    Ok(MetaRequest { name, raw_queries })
}

/// Whether a request's queries select `base:allocation`: for a `LIST`
/// (`set` false) the contexts to list, for a `SET` the ones to select.
pub fn selects_allocation(req: &MetaRequest<'_>, set: bool) -> Result<bool, Invalid> {
    let mut any = false;
    let mut allocation = false;
    for q in req.queries() {
        any = true;
        let q = std::str::from_utf8(q).map_err(|_| "query is not UTF-8")?;
        let Some((namespace, leaf)) = q.split_once(':') else {
            return Err("query has no namespace (namespace:leaf)");
        };
        if namespace.is_empty() {
            return Err("query has an empty namespace");
        }
        if namespace == "base" && (leaf == "allocation" || (leaf.is_empty() && !set)) {
            allocation = true;
        }
    }
    Ok(allocation || (!any && !set))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn meta_data(name: &[u8], queries: &[&[u8]]) -> Vec<u8> {
        let mut v = (name.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(name);
        v.extend_from_slice(&(queries.len() as u32).to_be_bytes());
        for q in queries {
            v.extend_from_slice(&(q.len() as u32).to_be_bytes());
            v.extend_from_slice(q);
        }
        v
    }

    #[test]
    fn parse_good_requests() {
        let d = meta_data(b"disk", &[b"base:allocation", b"qemu:dirty-bitmap:x"]);
        let r = parse_meta_request(&d).unwrap();
        assert_eq!(r.name, b"disk");
        assert_eq!(r.queries().collect::<Vec<_>>(), vec![&b"base:allocation"[..], b"qemu:dirty-bitmap:x"]);
        let d = meta_data(b"", &[]);
        let r = parse_meta_request(&d).unwrap();
        assert_eq!((r.name, r.queries().count()), (&b""[..], 0));
        let q = vec![b'x'; MAX_STRING_LEN];
        assert!(parse_meta_request(&meta_data(b"", &[&q])).is_ok());
    }

    #[test]
    fn parse_bad_requests() {
        assert!(parse_meta_request(&[0; 7]).is_err());
        let good = meta_data(b"disk", &[b"base:allocation"]);
        let mut more = good.clone();
        more.push(0); // trailing byte
        assert!(parse_meta_request(&more).is_err());
        let mut count = good.clone();
        count[8..12].copy_from_slice(&u32::MAX.to_be_bytes()); // count past the data
        assert!(parse_meta_request(&count).is_err());
        let mut qlen = good.clone();
        qlen[12..16].copy_from_slice(&1000u32.to_be_bytes()); // query past the data
        assert!(parse_meta_request(&qlen).is_err());
        let mut huge = good.clone();
        huge[0..4].copy_from_slice(&u32::MAX.to_be_bytes()); // name length overflow
        assert!(parse_meta_request(&huge).is_err());
        assert!(parse_meta_request(&good[..good.len() - 1]).is_err());
        let long = vec![b'x'; MAX_STRING_LEN + 1];
        assert!(parse_meta_request(&meta_data(b"", &[&long])).is_err());
        assert!(parse_meta_request(&meta_data(&long, &[])).is_err());
    }

    #[test]
    fn query_matching() {
        let sel = |qs: &[&[u8]], set| selects_allocation(&parse_meta_request(&meta_data(b"", qs)).unwrap(), set);
        // LIST
        assert_eq!(sel(&[], false), Ok(true));
        assert_eq!(sel(&[b"base:"], false), Ok(true));
        assert_eq!(sel(&[b"base:allocation"], false), Ok(true));
        assert_eq!(sel(&[b"base:other", b"qemu:allocation-depth"], false), Ok(false));
        // SET
        assert_eq!(sel(&[], true), Ok(false));
        assert_eq!(sel(&[b"base:"], true), Ok(false));
        assert_eq!(sel(&[b"base:allocation"], true), Ok(true));
        assert_eq!(sel(&[b"x-foo:bar", b"base:allocation"], true), Ok(true));
        assert_eq!(sel(&[b"base:Allocation"], true), Ok(false));
        // invalid queries
        assert!(sel(&[b"allocation"], true).is_err());
        assert!(sel(&[b":allocation"], false).is_err());
        assert!(sel(&[b"base:\xff"], true).is_err());
    }
}
