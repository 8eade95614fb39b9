//! Specs: the one way a policy, a device or a workload is named on the command
//! line, in Python and in the daemon's flags — `NAME` or `NAME(key=value,…)`,
//! e.g. `2q(kin=25%,kout=50%)`, `ftl(type=page,nand=mlc2,op=7%)`,
//! `zipf(alpha=0.9,keys=1M)`. A value may itself be a spec
//! (`abm(read=lirs(hir=5%))`); workloads also take components
//! (`mix(zipf,uniform,weights=90%/10%)`) and list values that continue after a
//! comma (`size=4KiB:70%,64KiB:30%`).
//!
//! What a spec may say is declared in a table of [`ParamInfo`]s (name, default,
//! what it means): every catalogue — policies, devices, workloads — lists its
//! entries' parameters that way, and [`Spec::bind`] checks a spec against it.

use crate::excerpt::{clip, excerpt};
use crate::units;
use thiserror::Error;

/// One parameter a policy, device or workload accepts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: &'static str,
    pub about: &'static str,
}

impl ParamInfo {
    pub const fn new(name: &'static str, default: &'static str, about: &'static str) -> ParamInfo {
        ParamInfo { name, default, about }
    }
}

/// `a` then `b`, as one table (`N` = `A + B`): for catalogues whose entries
/// share parameters.
pub const fn concat_params<const A: usize, const B: usize, const N: usize>(
    a: [ParamInfo; A],
    b: [ParamInfo; B],
) -> [ParamInfo; N] {
    assert!(A + B == N, "concat_params: N must be A + B");
    let mut out = [ParamInfo::new("", "", ""); N];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < N {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

/// What is wrong with a spec. `kind` says what the spec names ("policy",
/// "device", "workload"), so every message names the thing being parsed.
/// Messages quote what the user wrote through [`excerpt`], so that a spec of
/// megabytes (from Python, a file) still gives a one-line error.
#[derive(Debug, Error, PartialEq)]
pub enum SpecError {
    #[error("malformed {kind} spec {}: {why}", excerpt(spec))]
    Syntax { kind: &'static str, spec: String, why: String },
    #[error("unknown {kind} {} (known: {known})", excerpt(name))]
    UnknownName { kind: &'static str, name: String, known: String },
    #[error("{kind} {name} has no parameter {} (its parameters: {known})", excerpt(param))]
    UnknownParam { kind: &'static str, name: String, param: String, known: String },
    #[error("{kind} {name}, parameter {param}={}: {why}", clip(value))]
    BadValue { kind: &'static str, name: String, param: String, value: String, why: String },
}

/// Deepest nesting of parentheses a spec may have: far more than any real
/// spec needs (`admit(by=…,rule=admit(…))` is two), few enough that building
/// what a spec nests, one call deeper a level, cannot overflow the stack.
const MAX_NESTING: usize = 32;

/// Most parameters and components one spec may list: far more than any entry
/// declares, and it keeps the check for repeated parameters cheap.
const MAX_PARTS: usize = 256;

/// A parsed spec.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub name: String,
    pub params: Vec<(String, String)>,
    /// Sub-specs given without a key (only where the grammar allows them: `mix(A,B)`).
    pub components: Vec<Spec>,
    /// What the spec names, for messages: "policy", "device", "workload".
    pub kind: &'static str,
    info: &'static [ParamInfo],
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

/// Splits `s` at commas that are not inside parentheses.
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

/// Splits a comma-separated list of specs (`lru,arc,2q(kin=25%,kout=50%)`).
pub fn split_list(s: &str) -> Vec<String> {
    split_top_level(s).into_iter().map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
}

/// Whether a part without `=` is a component: `None` where the grammar has no
/// components (policies, devices).
type IsComponent<'a> = Option<&'a dyn Fn(&str) -> bool>;

impl Spec {
    /// Parses a policy spec.
    pub fn parse(text: &str) -> Result<Spec, SpecError> {
        Spec::parse_kind(text, "policy")
    }

    /// Parses a spec of `kind` ("policy", "device"), which error messages name.
    pub fn parse_kind(text: &str, kind: &'static str) -> Result<Spec, SpecError> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        parse_inner(&t, text, kind, None)
    }

    /// Parses a spec whose parentheses may also hold components: a part
    /// without `=` is a component if it has parentheses, if `is_name` knows it
    /// or if no parameter came before it; otherwise it continues the list value
    /// of the parameter before it (`size=4KiB:70%,64KiB:30%`).
    pub fn parse_with_components(
        text: &str,
        kind: &'static str,
        is_name: &dyn Fn(&str) -> bool,
    ) -> Result<Spec, SpecError> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        parse_inner(&t, text, kind, Some(is_name))
    }

    /// The canonical text: name, then the given parameters in order.
    pub fn canonical(&self) -> String {
        if self.params.is_empty() {
            return self.name.clone();
        }
        let ps: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}({})", self.name, ps.join(","))
    }

    /// Checks every given parameter is one the table declares, and remembers the
    /// declarations (for defaults).
    pub fn bind(&mut self, info: &'static [ParamInfo]) -> Result<(), SpecError> {
        for (k, _) in &self.params {
            if !info.iter().any(|p| p.name == k) {
                let known: Vec<&str> = info.iter().map(|p| p.name).collect();
                return Err(SpecError::UnknownParam {
                    kind: self.kind,
                    name: self.name.clone(),
                    param: k.clone(),
                    known: if known.is_empty() { "none".into() } else { known.join(", ") },
                });
            }
        }
        self.info = info;
        Ok(())
    }

    /// Whether `key` was given (rather than left at its default).
    pub fn is_given(&self, key: &str) -> bool {
        self.params.iter().any(|(k, _)| k == key)
    }

    /// The value text for `key`: given, or the declared default.
    pub fn raw(&self, key: &str) -> &str {
        if let Some((_, v)) = self.params.iter().find(|(k, _)| k == key) {
            return v;
        }
        self.info
            .iter()
            .find(|p| p.name == key)
            .map(|p| p.default)
            .unwrap_or_else(|| panic!("{} {} reads undeclared parameter {key}", self.kind, self.name))
    }

    /// An error about `key`'s value, for checks a build function makes itself.
    pub fn invalid(&self, key: &str, why: impl Into<String>) -> SpecError {
        SpecError::BadValue {
            kind: self.kind,
            name: self.name.clone(),
            param: key.to_string(),
            value: self.raw(key).to_string(),
            why: why.into(),
        }
    }

    /// An error about the spec as a whole.
    pub fn malformed(&self, why: impl Into<String>) -> SpecError {
        SpecError::Syntax { kind: self.kind, spec: self.name.clone(), why: why.into() }
    }

    /// A ratio `25%` or `0.25` in [0, 1].
    pub fn ratio(&self, key: &str) -> Result<f64, SpecError> {
        units::parse_ratio(self.raw(key)).map_err(|e| self.invalid(key, e.why))
    }

    /// A size: `64GiB`, `512MB`, `4096`.
    pub fn bytes(&self, key: &str) -> Result<u64, SpecError> {
        units::parse_bytes(self.raw(key)).map_err(|e| self.invalid(key, e.why))
    }

    /// A non-negative integer.
    pub fn uint(&self, key: &str) -> Result<u64, SpecError> {
        self.raw(key).parse::<u64>().map_err(|_| self.invalid(key, "expected a non-negative integer"))
    }

    /// A finite number.
    pub fn float(&self, key: &str) -> Result<f64, SpecError> {
        match self.raw(key).parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.invalid(key, "expected a number")),
        }
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`).
    pub fn flag(&self, key: &str) -> Result<bool, SpecError> {
        match self.raw(key).to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(self.invalid(key, "expected true or false")),
        }
    }

    /// One of `choices`.
    pub fn choice(&self, key: &str, choices: &[&str]) -> Result<String, SpecError> {
        let v = self.raw(key).to_ascii_lowercase();
        if choices.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(self.invalid(key, format!("expected one of {}", choices.join(", "))))
        }
    }

    /// A value that is itself a spec (`read=lirs(hir=5%)`) naming one of
    /// `choices`: the nested spec's text, checked by name only (its own
    /// parameters are checked by whoever builds it).
    pub fn nested(&self, key: &str, kind: &'static str, choices: &[&str]) -> Result<String, SpecError> {
        let text = self.raw(key);
        let inner = Spec::parse_kind(text, kind).map_err(|e| self.invalid(key, e.to_string()))?;
        if choices.contains(&inner.name.as_str()) {
            Ok(text.to_string())
        } else {
            Err(self.invalid(key, format!("expected one of {}", choices.join(", "))))
        }
    }
}

/// `t`: the text without whitespace; `whole`: the text as given, for messages.
fn parse_inner(t: &str, whole: &str, kind: &'static str, is_component: IsComponent) -> Result<Spec, SpecError> {
    let syntax = |why: String| SpecError::Syntax { kind, spec: whole.to_string(), why };
    let (name, rest) = match t.find('(') {
        Some(i) => (&t[..i], Some(&t[i..])),
        None => (t, None),
    };
    if name.is_empty() {
        return Err(syntax(format!("missing {kind} name in {}", excerpt(t))));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(syntax(format!("{}: a {kind} name has only letters, digits, '-' and '_'", excerpt(name))));
    }
    let mut spec =
        Spec { name: name.to_ascii_lowercase(), params: Vec::new(), components: Vec::new(), kind, info: &[] };
    let Some(rest) = rest else { return Ok(spec) };
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| syntax(format!("{}: parameters go in one pair of parentheses at the end", excerpt(t))))?;
    let (mut depth, mut deepest, mut balanced) = (0i32, 0i32, true);
    for c in inner.chars() {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        deepest = deepest.max(depth);
        balanced &= depth >= 0;
    }
    if depth != 0 || !balanced {
        return Err(syntax(format!("{}: unbalanced parentheses", excerpt(t))));
    }
    if deepest as usize >= MAX_NESTING {
        return Err(syntax(format!("parentheses nested more than {MAX_NESTING} deep")));
    }
    let parts: Vec<&str> = split_top_level(inner).into_iter().filter(|p| !p.is_empty()).collect();
    if parts.len() > MAX_PARTS {
        return Err(syntax(format!("{} parameters and components, more than {MAX_PARTS}", parts.len())));
    }
    for part in parts {
        if let Some(eq) = find_top_level(part, '=') {
            let (k, v) = (&part[..eq], &part[eq + 1..]);
            if k.is_empty() || v.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(syntax(format!("{} is not key=value", excerpt(part))));
            }
            let k = k.to_ascii_lowercase();
            if spec.params.iter().any(|(p, _)| *p == k) {
                return Err(syntax(format!("parameter {} given twice", excerpt(&k))));
            }
            spec.params.push((k, v.to_string()));
            continue;
        }
        let Some(is_name) = is_component else {
            return Err(syntax(format!("{} is not key=value", excerpt(part))));
        };
        if part.contains('(') || is_name(part) || spec.params.is_empty() {
            spec.components.push(parse_inner(part, whole, kind, is_component)?);
        } else {
            // `size=4KiB:70%,64KiB:30%`: a list value continues after its comma
            let last = spec.params.last_mut().expect("checked above");
            last.1.push(',');
            last.1.push_str(part);
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_params() {
        let s = Spec::parse("2Q( kin=25%, kout=50% )").unwrap();
        assert_eq!(s.name, "2q");
        assert_eq!(s.params, vec![("kin".into(), "25%".into()), ("kout".into(), "50%".into())]);
        assert_eq!(s.canonical(), "2q(kin=25%,kout=50%)");
        let s = Spec::parse("abm(read=lirs,write=clc(x=1))").unwrap();
        assert_eq!(s.params[1], ("write".into(), "clc(x=1)".into()));
        assert_eq!(split_list("lru, arc,2q(kin=25%,kout=50%)"), vec!["lru", "arc", "2q(kin=25%,kout=50%)"]);
    }

    #[test]
    fn nesting_is_bounded_and_long_text_is_quoted_in_part() {
        let nested = |levels: usize| format!("{}x{}", "a(b=".repeat(levels), ")".repeat(levels));
        assert!(Spec::parse(&nested(MAX_NESTING)).is_ok());
        let e = Spec::parse(&nested(MAX_NESTING + 1)).unwrap_err().to_string();
        assert!(e.contains("nested more than 32 deep"), "{e}");
        let long = format!("lru(x{}=1)", "y".repeat(10_000));
        let e = Spec::parse(&long.replace("=1", "")).unwrap_err().to_string();
        assert!(e.len() < 300 && e.contains("(10006 bytes)"), "{e}");
        assert_eq!(excerpt("lru"), "\"lru\"");
        let many = |n: usize| format!("lru({})", (0..n).map(|i| format!("a{i}=1")).collect::<Vec<_>>().join(","));
        assert!(Spec::parse(&many(MAX_PARTS)).is_ok());
        let e = Spec::parse(&many(1_000_000)).unwrap_err().to_string();
        assert!(e.contains("1000000 parameters and components, more than 256"), "{e}");
        assert_eq!(clip(&"é".repeat(81)), format!("{}… (162 bytes)", "é".repeat(80)));
    }

    #[test]
    fn rejects_malformed() {
        for bad in
            ["", "(x=1)", "lru(", "lru(x)", "lru(x=1", "lru(x=1)y", "l r u!", "lru(x=1,x=2)", "lru(=1)", "lru(x=1))("]
        {
            assert!(Spec::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn components_and_list_values_where_the_grammar_has_them() {
        let known = |s: &str| s == "zipf" || s == "uniform";
        let s = Spec::parse_with_components(
            "mix(zipf(alpha=1),uniform(size=4KiB:70%,64KiB:30%),weights=9,1)",
            "workload",
            &known,
        )
        .unwrap();
        assert_eq!(s.components.len(), 2);
        assert_eq!(s.components[1].params, vec![("size".into(), "4KiB:70%,64KiB:30%".into())]);
        assert_eq!(s.params, vec![("weights".into(), "9,1".into())]);
        assert!(Spec::parse("mix(zipf,uniform)").is_err());
    }

    #[test]
    fn errors_name_the_kind() {
        let mut s = Spec::parse_kind("ftl(bogus=1)", "device").unwrap();
        const OP: &[ParamInfo] = &[ParamInfo::new("op", "7%", "")];
        let e = s.bind(OP).unwrap_err().to_string();
        assert_eq!(e, "device ftl has no parameter \"bogus\" (its parameters: op)");
        let e = Spec::parse_kind("ftl(", "device").unwrap_err().to_string();
        assert!(e.starts_with("malformed device spec"), "{e}");
    }

    #[test]
    fn tables_concatenate() {
        const A: [ParamInfo; 1] = [ParamInfo::new("a", "1", "")];
        const B: [ParamInfo; 2] = [ParamInfo::new("b", "2", ""), ParamInfo::new("c", "3", "")];
        const AB: [ParamInfo; 3] = concat_params(A, B);
        assert_eq!(AB.map(|p| p.name), ["a", "b", "c"]);
    }
}
