//! Label selectors (apimachinery's `labels` package): parse the selector syntax the API
//! server and kubectl accept, and match it against an object's labels.
//!
//! Syntax: requirements separated by commas, all of which must hold —
//! `key=value` (or `==`), `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key` (exists),
//! `!key` (does not exist), `key>1` and `key<1` (integer comparison). The empty selector
//! matches everything. `!=` and `notin` also match objects without the key, as on the
//! server.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kubekit::labels::Selector;
//!
//! let selector: Selector = "app=web,tier notin (db),!canary".parse().unwrap();
//! let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
//! assert!(selector.matches(&labels));
//! assert!("".parse::<Selector>().unwrap().matches(&labels));
//! assert!("app in (web".parse::<Selector>().is_err());
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A malformed selector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {selector:?}: {reason}")]
pub struct ParseError {
    /// The selector as given.
    pub selector: String,
    /// What is wrong with it.
    pub reason: String,
}

/// How a requirement compares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

/// One requirement on one key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match &self.op {
            Op::In(values) => value.is_some_and(|v| values.contains(v)),
            Op::NotIn(values) => value.is_none_or(|v| !values.contains(v)),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
            Op::Gt(n) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Op::Lt(n) => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = &self.key;
        match &self.op {
            Op::In(v) if v.len() == 1 => write!(f, "{k}={}", v[0]),
            Op::In(v) => write!(f, "{k} in ({})", v.join(",")),
            Op::NotIn(v) if v.len() == 1 => write!(f, "{k}!={}", v[0]),
            Op::NotIn(v) => write!(f, "{k} notin ({})", v.join(",")),
            Op::Exists => write!(f, "{k}"),
            Op::DoesNotExist => write!(f, "!{k}"),
            Op::Gt(n) => write!(f, "{k}>{n}"),
            Op::Lt(n) => write!(f, "{k}<{n}"),
        }
    }
}

/// A parsed label selector; see the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// `key=value` for every entry of `labels` (how a Deployment's `matchLabels` selects).
    pub fn from_labels<'a>(labels: impl IntoIterator<Item = (&'a String, &'a String)>) -> Self {
        Self {
            requirements: labels
                .into_iter()
                .map(|(k, v)| Requirement {
                    key: k.clone(),
                    op: Op::In(vec![v.clone()]),
                })
                .collect(),
        }
    }

    /// Whether this selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

fn valid_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 316
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

/// Splits at commas outside parentheses.
fn split_requirements(s: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
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
        if !(0..=1).contains(&depth) {
            return Err("unbalanced parentheses".into());
        }
    }
    if depth != 0 {
        return Err("unbalanced parentheses".into());
    }
    parts.push(&s[start..]);
    Ok(parts)
}

fn parse_set(rest: &str) -> Result<Vec<String>, String> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesised list of values, found {rest:?}"))?;
    let mut values = Vec::new();
    for v in inner.split(',').map(str::trim) {
        if !v.is_empty() && !valid_token(v) {
            return Err(format!("invalid value {v:?}"));
        }
        values.push(v.to_string());
    }
    Ok(values)
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    let part = part.trim();
    if part.is_empty() {
        return Err("empty requirement".into());
    }
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        return valid_token(key)
            .then(|| Requirement {
                key: key.to_string(),
                op: Op::DoesNotExist,
            })
            .ok_or_else(|| format!("invalid key {key:?}"));
    }
    let key_end = part
        .find(|c: char| c.is_whitespace() || matches!(c, '=' | '!' | '<' | '>'))
        .unwrap_or(part.len());
    let key = &part[..key_end];
    if !valid_token(key) {
        return Err(format!("invalid key {key:?}"));
    }
    let rest = part[key_end..].trim_start();
    let single = |v: &str| -> Result<Vec<String>, String> {
        let v = v.trim();
        if !v.is_empty() && !valid_token(v) {
            return Err(format!("invalid value {v:?}"));
        }
        Ok(vec![v.to_string()])
    };
    let number = |v: &str| -> Result<i64, String> {
        v.trim()
            .parse()
            .map_err(|_| format!("{:?} is not an integer", v.trim()))
    };
    let op = if rest.is_empty() {
        Op::Exists
    } else if let Some(v) = rest.strip_prefix("==") {
        Op::In(single(v)?)
    } else if let Some(v) = rest.strip_prefix("!=") {
        Op::NotIn(single(v)?)
    } else if let Some(v) = rest.strip_prefix('=') {
        Op::In(single(v)?)
    } else if let Some(v) = rest.strip_prefix('>') {
        Op::Gt(number(v)?)
    } else if let Some(v) = rest.strip_prefix('<') {
        Op::Lt(number(v)?)
    } else if let Some(v) = rest.strip_prefix("notin") {
        Op::NotIn(parse_set(v)?)
    } else if let Some(v) = rest.strip_prefix("in") {
        Op::In(parse_set(v)?)
    } else {
        return Err(format!("unknown operator in {part:?}"));
    };
    Ok(Requirement {
        key: key.to_string(),
        op,
    })
}

impl FromStr for Selector {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let error = |reason: String| ParseError {
            selector: s.to_string(),
            reason,
        };
        if s.trim().is_empty() {
            return Ok(Self::everything());
        }
        let requirements = split_requirements(s)
            .map_err(error)?
            .into_iter()
            .map(parse_requirement)
            .collect::<Result<_, _>>()
            .map_err(error)?;
        Ok(Self { requirements })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sel(s: &str) -> Selector {
        s.parse().unwrap()
    }

    #[test]
    fn equality_and_inequality_follow_the_server_including_missing_keys() {
        let web = labels(&[("app", "web")]);
        let none = labels(&[]);
        assert!(sel("app=web").matches(&web));
        assert!(sel("app==web").matches(&web));
        assert!(!sel("app=db").matches(&web));
        assert!(!sel("app!=web").matches(&web));
        assert!(sel("app!=web").matches(&none), "!= matches a missing key");
        assert!(!sel("app=web").matches(&none));
    }

    #[test]
    fn set_and_existence_requirements_match() {
        let l = labels(&[("tier", "front"), ("env", "prod")]);
        assert!(sel("tier in (front, back)").matches(&l));
        assert!(!sel("tier notin (front)").matches(&l));
        assert!(sel("team notin (a)").matches(&l));
        assert!(sel("env").matches(&l));
        assert!(!sel("!env").matches(&l));
        assert!(sel("!canary").matches(&l));
        assert!(sel("tier in (front),env=prod,!canary").matches(&l));
        assert!(!sel("tier in (front),env=dev").matches(&l));
    }

    #[test]
    fn numeric_comparisons_need_integer_values() {
        let l = labels(&[("replicas", "3"), ("name", "x")]);
        assert!(sel("replicas>2").matches(&l));
        assert!(!sel("replicas<3").matches(&l));
        assert!(!sel("name>1").matches(&l));
        assert!("replicas>two".parse::<Selector>().is_err());
    }

    #[test]
    fn malformed_selectors_are_errors_naming_the_problem() {
        for bad in [
            "app in (a",
            "app in a)",
            "=web",
            "app=we b",
            "app ~ web",
            "a,,b",
            "!",
        ] {
            let err = bad.parse::<Selector>().unwrap_err();
            assert_eq!(err.selector, bad);
            assert!(!err.reason.is_empty());
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["app=web", "a in (x,y),!b,c!=d,e>1", "k"] {
            assert_eq!(sel(&sel(s).to_string()), sel(s));
        }
        assert_eq!(Selector::everything().to_string(), "");
    }

    #[test]
    fn from_labels_selects_exactly_those_pairs() {
        let want = labels(&[("app", "web"), ("tier", "front")]);
        let s = Selector::from_labels(&want);
        assert!(s.matches(&want));
        assert!(!s.matches(&labels(&[("app", "web")])));
    }
}
