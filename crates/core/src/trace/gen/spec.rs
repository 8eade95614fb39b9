//! Parsing workload specs (`zipf(alpha=0.9,keys=1M)`) and their parameter values.

use super::{GenError, Iat, Sizes, GENERATORS};
use crate::units;

/// A spec split into name, components (only `mix` has them) and `key=value` parameters.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Parsed {
    pub name: String,
    pub components: Vec<Parsed>,
    pub params: Vec<(String, String)>,
}

/// Byte index of the first `ch` outside parentheses.
fn find_top_level(s: &str, ch: char) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c == ch && depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// Splits at commas outside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = s;
    while let Some(i) = find_top_level(rest, ',') {
        parts.push(&rest[..i]);
        rest = &rest[i + 1..];
    }
    parts.push(rest);
    parts
}

fn is_generator_name(s: &str) -> bool {
    GENERATORS.iter().any(|(name, _, _)| name.eq_ignore_ascii_case(s))
}

pub(super) fn parse(text: &str) -> Result<Parsed, GenError> {
    let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    parse_inner(&t, text)
}

fn parse_inner(t: &str, whole: &str) -> Result<Parsed, GenError> {
    let syntax = |why: String| GenError::Syntax { spec: whole.to_string(), why };
    let (name, rest) = match t.find('(') {
        Some(i) => (&t[..i], Some(&t[i..])),
        None => (t, None),
    };
    if name.is_empty() {
        return Err(syntax(format!("missing workload name in {t:?}")));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(syntax(format!("{name:?}: a workload name has only letters, digits, '-' and '_'")));
    }
    let mut parsed = Parsed { name: name.to_ascii_lowercase(), components: Vec::new(), params: Vec::new() };
    let Some(rest) = rest else { return Ok(parsed) };
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| syntax(format!("{t:?}: parameters go in one pair of parentheses at the end")))?;
    let (mut depth, mut balanced) = (0i32, true);
    for c in inner.chars() {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        balanced &= depth >= 0;
    }
    if depth != 0 || !balanced {
        return Err(syntax(format!("{t:?}: unbalanced parentheses")));
    }
    for part in split_top_level(inner).into_iter().filter(|p| !p.is_empty()) {
        if let Some(eq) = find_top_level(part, '=') {
            let (k, v) = (&part[..eq], &part[eq + 1..]);
            if k.is_empty() || v.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(syntax(format!("{part:?} is not key=value")));
            }
            let k = k.to_ascii_lowercase();
            if parsed.params.iter().any(|(p, _)| *p == k) {
                return Err(syntax(format!("parameter {k} given twice")));
            }
            parsed.params.push((k, v.to_string()));
        } else if part.contains('(') || is_generator_name(part) || parsed.params.is_empty() {
            // a component of a mix
            parsed.components.push(parse_inner(part, whole)?);
        } else {
            // `size=4KiB:70%,64KiB:30%`: a list value continues after its comma
            let last = parsed.params.last_mut().expect("checked above");
            last.1.push(',');
            last.1.push_str(part);
        }
    }
    Ok(parsed)
}

/// The parameters of one spec, checked against the generator's declared defaults.
pub(super) struct Params<'a> {
    gen: &'a str,
    given: &'a [(String, String)],
    defaults: Vec<(&'static str, &'static str)>,
}

/// Splits a declaration `alpha=1.0,keys=1M` into pairs.
pub(super) fn declared(decl: &'static str) -> Vec<(&'static str, &'static str)> {
    decl.split(',').filter_map(|kv| kv.split_once('=')).collect()
}

impl<'a> Params<'a> {
    pub fn new(p: &'a Parsed, decl: &'static str) -> Result<Self, GenError> {
        let defaults = declared(decl);
        for (k, _) in &p.params {
            if !defaults.iter().any(|(d, _)| d == k) {
                let known: Vec<&str> = defaults.iter().map(|(d, _)| *d).collect();
                return Err(GenError::UnknownParam { gen: p.name.clone(), param: k.clone(), known: known.join(", ") });
            }
        }
        Ok(Params { gen: &p.name, given: &p.params, defaults })
    }

    pub fn is_given(&self, key: &str) -> bool {
        self.given.iter().any(|(k, _)| k == key)
    }

    pub fn raw(&self, key: &str) -> &str {
        if let Some((_, v)) = self.given.iter().find(|(k, _)| k == key) {
            return v;
        }
        self.defaults
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("workload {} reads undeclared parameter {key}", self.gen))
    }

    pub fn bad(&self, key: &str, why: impl Into<String>) -> GenError {
        GenError::BadValue {
            gen: self.gen.to_string(),
            param: key.to_string(),
            value: self.raw(key).to_string(),
            why: why.into(),
        }
    }

    /// A count: `1000`, `100k`, `10M`, `1.5G`, `1_000_000` (decimal suffixes).
    pub fn count(&self, key: &str) -> Result<u64, GenError> {
        parse_count(self.raw(key)).ok_or_else(|| self.bad(key, "expected a whole count like 1000, 100k, 10M or 1G"))
    }

    /// A count of at least 1.
    pub fn positive(&self, key: &str) -> Result<u64, GenError> {
        match self.count(key)? {
            0 => Err(self.bad(key, "must be at least 1")),
            n => Ok(n),
        }
    }

    pub fn ratio(&self, key: &str) -> Result<f64, GenError> {
        units::parse_ratio(self.raw(key)).map_err(|e| self.bad(key, e.why))
    }

    pub fn float(&self, key: &str) -> Result<f64, GenError> {
        match self.raw(key).parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.bad(key, "expected a number")),
        }
    }

    pub fn boolean(&self, key: &str) -> Result<bool, GenError> {
        match self.raw(key).to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Ok(true),
            "false" | "no" | "off" | "0" => Ok(false),
            _ => Err(self.bad(key, "expected true or false")),
        }
    }

    pub fn bytes(&self, key: &str) -> Result<u64, GenError> {
        units::parse_bytes(self.raw(key)).map_err(|e| self.bad(key, e.why))
    }

    /// `0` (every request at time 0), `100us` (fixed gap) or `exp(100us)` (exponential gaps with that mean).
    pub fn iat(&self, key: &str) -> Result<Iat, GenError> {
        let v = self.raw(key);
        let lower = v.to_ascii_lowercase();
        let (exp, d) = match lower.strip_prefix("exp(").and_then(|r| r.strip_suffix(')')) {
            Some(inner) => (true, inner),
            None => (false, v),
        };
        let ns = units::parse_duration_ns(d).map_err(|e| self.bad(key, e.why))?;
        Ok(match (exp, ns) {
            (_, 0) => Iat::Zero,
            (false, ns) => Iat::Fixed(ns),
            (true, ns) => Iat::Exp(ns as f64),
        })
    }

    /// `4KiB` (fixed), `4KiB..64KiB` (uniform over whole 512-byte sectors, or over bytes when the
    /// bounds are not whole sectors) or `4KiB:70%,64KiB:30%` (weighted list; `/` separates too;
    /// without weights every size is equally likely).
    pub fn sizes(&self, key: &str) -> Result<Sizes, GenError> {
        let v = self.raw(key);
        let size = |s: &str| -> Result<u32, GenError> {
            let b = units::parse_bytes(s).map_err(|e| self.bad(key, e.why))?;
            u32::try_from(b).map_err(|_| self.bad(key, format!("{s} is over the 4GiB a request may have")))
        };
        if let Some((lo, hi)) = v.split_once("..") {
            let (lo, hi) = (size(lo)?, size(hi)?);
            if lo > hi {
                return Err(self.bad(key, "the range's lower bound is above its upper bound"));
            }
            let step = if lo % 512 == 0 && hi % 512 == 0 { 512 } else { 1 };
            return Ok(Sizes::Range { lo, hi, step });
        }
        let items: Vec<&str> = v.split([',', '/']).collect();
        if items.len() == 1 && !v.contains(':') {
            return Ok(Sizes::Fixed(size(v)?));
        }
        let weighted = items.iter().filter(|i| i.contains(':')).count();
        if weighted != 0 && weighted != items.len() {
            return Err(self.bad(key, "give a weight to every size (4KiB:70%,64KiB:30%) or to none"));
        }
        let mut list = Vec::new();
        for item in items {
            let (s, w) = match item.split_once(':') {
                Some((s, w)) => (
                    s,
                    weight(w).ok_or_else(|| self.bad(key, format!("weight {w:?} is not a number or percentage")))?,
                ),
                None => (item, 1.0),
            };
            list.push((size(s)?, w));
        }
        let weights: Vec<f64> = list.iter().map(|(_, w)| *w).collect();
        let cum = cumulative(&weights).ok_or_else(|| self.bad(key, "the weights must not all be zero"))?;
        Ok(Sizes::List { sizes: list.into_iter().map(|(s, _)| s).collect(), cum })
    }

    /// Mixture weights `90%/10%` or `9,1` (normalized), or `equal`.
    pub fn weights(&self, key: &str, n: usize) -> Result<Vec<f64>, GenError> {
        let v = self.raw(key);
        let weights: Vec<f64> = if v.eq_ignore_ascii_case("equal") {
            vec![1.0; n]
        } else {
            v.split([',', '/'])
                .map(|w| weight(w).ok_or_else(|| self.bad(key, format!("weight {w:?} is not a number or percentage"))))
                .collect::<Result<_, _>>()?
        };
        if weights.len() != n {
            return Err(self.bad(key, format!("{} weights for {n} components", weights.len())));
        }
        cumulative(&weights).ok_or_else(|| self.bad(key, "the weights must not all be zero"))
    }
}

/// A count with an optional decimal suffix.
pub(super) fn parse_count(text: &str) -> Option<u64> {
    let t = text.trim().replace('_', "");
    let (num, mult) = match t.char_indices().last()? {
        (i, 'k' | 'K') => (&t[..i], 1e3),
        (i, 'm' | 'M') => (&t[..i], 1e6),
        (i, 'g' | 'G') => (&t[..i], 1e9),
        (i, 't' | 'T') => (&t[..i], 1e12),
        _ => (t.as_str(), 1.0),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let v = num.parse::<f64>().ok()? * mult;
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < u64::MAX as f64).then_some(v as u64)
}

/// A non-negative weight: `70%` or `0.7` or `7`.
fn weight(text: &str) -> Option<f64> {
    let v = match text.strip_suffix('%') {
        Some(p) => p.parse::<f64>().ok()? / 100.0,
        None => text.parse::<f64>().ok()?,
    };
    (v.is_finite() && v >= 0.0).then_some(v)
}

/// Normalized running sums of `weights` (the last is exactly 1), or None if they sum to 0.
fn cumulative(weights: &[f64]) -> Option<Vec<f64>> {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let mut acc = 0.0;
    let mut cum: Vec<f64> = weights
        .iter()
        .map(|w| {
            acc += w;
            acc / total
        })
        .collect();
    *cum.last_mut().unwrap() = 1.0;
    Some(cum)
}
