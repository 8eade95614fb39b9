//! Specs of policies and devices: `NAME` or `NAME(key=value,…)`, e.g.
//! `2q(kin=25%,kout=50%)` or `ftl(type=page,nand=mlc2,op=7%)`.

use super::registry::ParamInfo;
use crate::units;
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum SpecError {
    #[error("malformed {kind} spec {spec:?}: {why}")]
    Syntax { kind: &'static str, spec: String, why: String },
    #[error("unknown {kind} {name:?} (known: {known})")]
    UnknownPolicy { kind: &'static str, name: String, known: String },
    #[error("{kind} {policy} has no parameter {param:?} (its parameters: {known})")]
    UnknownParam { kind: &'static str, policy: String, param: String, known: String },
    #[error("{kind} {policy}, parameter {param}={value}: {why}")]
    BadValue { kind: &'static str, policy: String, param: String, value: String, why: String },
}

/// A parsed spec.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub name: String,
    pub params: Vec<(String, String)>,
    /// What the spec names, for messages: "policy" or "device".
    pub kind: &'static str,
    info: &'static [ParamInfo],
}

/// Splits `s` at commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Splits a comma-separated list of specs (`lru,arc,2q(kin=25%,kout=50%)`).
pub fn split_list(s: &str) -> Vec<String> {
    split_top_level(s).into_iter().map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
}

impl Spec {
    /// Parses a policy spec.
    pub fn parse(text: &str) -> Result<Spec, SpecError> {
        Spec::parse_kind(text, "policy")
    }

    /// Parses a spec of `kind` ("policy", "device"), which error messages name.
    pub fn parse_kind(text: &str, kind: &'static str) -> Result<Spec, SpecError> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let syntax = |why: &str| SpecError::Syntax { kind, spec: text.to_string(), why: why.to_string() };
        let (name, rest) = match t.find('(') {
            Some(i) => (&t[..i], Some(&t[i..])),
            None => (t.as_str(), None),
        };
        if name.is_empty() {
            return Err(syntax(&format!("missing {kind} name")));
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(syntax(&format!("a {kind} name has only letters, digits, '-' and '_'")));
        }
        let mut params = Vec::new();
        if let Some(rest) = rest {
            let inner = rest
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| syntax("parameters go in one pair of parentheses at the end"))?;
            if inner.matches('(').count() != inner.matches(')').count() {
                return Err(syntax("unbalanced parentheses"));
            }
            for part in split_top_level(inner).into_iter().filter(|p| !p.is_empty()) {
                let (k, v) = part.split_once('=').ok_or_else(|| syntax(&format!("{part:?} is not key=value")))?;
                if k.is_empty() || v.is_empty() {
                    return Err(syntax(&format!("{part:?} is not key=value")));
                }
                let k = k.to_ascii_lowercase();
                if params.iter().any(|(p, _)| *p == k) {
                    return Err(syntax(&format!("parameter {k} given twice")));
                }
                params.push((k, v.to_string()));
            }
        }
        Ok(Spec { name: name.to_ascii_lowercase(), params, kind, info: &[] })
    }

    /// The canonical text: name, then the given parameters in order.
    pub fn canonical(&self) -> String {
        if self.params.is_empty() {
            return self.name.clone();
        }
        let ps: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}({})", self.name, ps.join(","))
    }

    /// Checks every given parameter is one the policy declares, and remembers the declarations.
    pub(crate) fn bind(&mut self, info: &'static [ParamInfo]) -> Result<(), SpecError> {
        for (k, _) in &self.params {
            if !info.iter().any(|p| p.name == k) {
                let known: Vec<&str> = info.iter().map(|p| p.name).collect();
                return Err(SpecError::UnknownParam {
                    kind: self.kind,
                    policy: self.name.clone(),
                    param: k.clone(),
                    known: if known.is_empty() { "none".into() } else { known.join(", ") },
                });
            }
        }
        self.info = info;
        Ok(())
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

    fn bad(&self, key: &str, why: impl Into<String>) -> SpecError {
        SpecError::BadValue {
            kind: self.kind,
            policy: self.name.clone(),
            param: key.to_string(),
            value: self.raw(key).to_string(),
            why: why.into(),
        }
    }

    /// A ratio `25%` or `0.25` in [0, 1].
    pub fn ratio(&self, key: &str) -> Result<f64, SpecError> {
        units::parse_ratio(self.raw(key)).map_err(|e| self.bad(key, e.why))
    }

    /// A size: `64GiB`, `512MB`, `4096`.
    pub fn bytes(&self, key: &str) -> Result<u64, SpecError> {
        units::parse_bytes(self.raw(key)).map_err(|e| self.bad(key, e.why))
    }

    /// A non-negative integer.
    pub fn uint(&self, key: &str) -> Result<u64, SpecError> {
        self.raw(key).parse::<u64>().map_err(|_| self.bad(key, "expected a non-negative integer"))
    }

    /// A finite number.
    pub fn float(&self, key: &str) -> Result<f64, SpecError> {
        match self.raw(key).parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.bad(key, "expected a number")),
        }
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`).
    pub fn flag(&self, key: &str) -> Result<bool, SpecError> {
        match self.raw(key).to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(self.bad(key, "expected true or false")),
        }
    }

    /// One of `choices`.
    pub fn choice(&self, key: &str, choices: &[&str]) -> Result<String, SpecError> {
        let v = self.raw(key).to_ascii_lowercase();
        if choices.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(self.bad(key, format!("expected one of {}", choices.join(", "))))
        }
    }

    /// An error about `key`'s value, for checks a build function makes itself.
    pub fn invalid(&self, key: &str, why: impl Into<String>) -> SpecError {
        self.bad(key, why)
    }
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
    fn rejects_malformed() {
        for bad in ["", "(x=1)", "lru(", "lru(x)", "lru(x=1", "lru(x=1)y", "l r u!", "lru(x=1,x=2)", "lru(=1)"] {
            assert!(Spec::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }
}
