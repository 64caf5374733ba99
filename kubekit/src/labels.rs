//! Label selectors (apimachinery's `labels` package): parse the selector syntax the API
//! server and kubectl accept, and match it against an object's labels.
//!
//! Syntax: requirements separated by commas, all of which must hold —
//! `key=value` (or `==`), `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key` (exists),
//! `!key` (does not exist), `key>1` and `key<1` (integer comparison). The empty selector
//! matches everything. `!=` and `notin` also match objects without the key, as on the
//! server. Keys and values are validated as the API server validates them (a key is an
//! optional DNS-subdomain prefix of at most 253 characters, `/`, and a name of at most 63;
//! a value at most 63 characters; both alphanumerics, `-`, `_` and `.`); a selector prints
//! as apimachinery prints it, requirements sorted by key.
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

/// How a requirement compares; each spelling of the syntax is kept, so a selector prints
/// as it was written (apimachinery's `selection.Operator`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    /// `key=value`, or `key==value` when `double`.
    Equals {
        value: String,
        double: bool,
    },
    NotEquals(String),
    /// Values sorted and without duplicates (a set, as apimachinery keeps them).
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
            Op::Equals { value: want, .. } => value == Some(want),
            Op::NotEquals(unwanted) => value != Some(unwanted),
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
            Op::Equals {
                value,
                double: false,
            } => write!(f, "{k}={value}"),
            Op::Equals {
                value,
                double: true,
            } => write!(f, "{k}=={value}"),
            Op::NotEquals(v) => write!(f, "{k}!={v}"),
            Op::In(v) => write!(f, "{k} in ({})", Values(v)),
            Op::NotIn(v) => write!(f, "{k} notin ({})", Values(v)),
            Op::Exists => write!(f, "{k}"),
            Op::DoesNotExist => write!(f, "!{k}"),
            Op::Gt(n) => write!(f, "{k}>{n}"),
            Op::Lt(n) => write!(f, "{k}<{n}"),
        }
    }
}

/// The values of a set, comma-separated; a set of only the empty value prints as `,`
/// (`()` would be an empty set, which does not parse).
struct Values<'a>(&'a [String]);

impl fmt::Display for Values<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [only] if only.is_empty() => f.write_str(","),
            values => f.write_str(&values.join(",")),
        }
    }
}

/// A parsed label selector; see the [module docs](self). Its requirements are kept
/// sorted by key (stably), as apimachinery's parser sorts them, so two selectors that
/// differ only in the order of their requirements are equal and print the same.
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
        Self::sorted(
            labels
                .into_iter()
                .map(|(k, v)| Requirement {
                    key: k.clone(),
                    op: Op::Equals {
                        value: v.clone(),
                        double: false,
                    },
                })
                .collect(),
        )
    }

    fn sorted(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
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

/// The longest label value, and the longest name part of a key (apimachinery's
/// `LabelValueMaxLength`, `qualifiedNameMaxLength`).
pub const MAX_LABEL_VALUE_LEN: usize = 63;
/// The longest prefix of a key: a DNS subdomain (`DNS1123SubdomainMaxLength`).
pub const MAX_LABEL_PREFIX_LEN: usize = 253;

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, empty included: a label value, or (non-empty)
/// the name part of a key.
fn is_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    b.is_empty()
        || (b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')))
}

/// A DNS-1123 subdomain: dot-separated lowercase alphanumerics and `-`, each part starting
/// and ending alphanumeric.
fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|part| {
        let b = part.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

/// apimachinery's `validateLabelKey` (`IsQualifiedName`): `[prefix/]name`.
fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let bad = |why: String| Err(format!("invalid label key {key:?}: {why}"));
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return bad("prefix part must be non-empty".into());
        }
        if prefix.len() > MAX_LABEL_PREFIX_LEN {
            return bad(format!(
                "prefix part must be no more than {MAX_LABEL_PREFIX_LEN} characters"
            ));
        }
        if !is_dns_subdomain(prefix) {
            return bad("prefix part must be a lowercase DNS subdomain".into());
        }
    }
    if name.is_empty() {
        return bad("name part must be non-empty".into());
    }
    if name.len() > MAX_LABEL_VALUE_LEN {
        return bad(format!(
            "name part must be no more than {MAX_LABEL_VALUE_LEN} characters"
        ));
    }
    if !is_label_value(name) {
        return bad("name part must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric".into());
    }
    Ok(())
}

/// apimachinery's `validateLabelValue`.
fn validate_value(value: &str) -> Result<(), String> {
    if value.len() > MAX_LABEL_VALUE_LEN {
        return Err(format!(
            "invalid label value of {} characters: must be no more than {MAX_LABEL_VALUE_LEN}",
            value.len()
        ));
    }
    if !is_label_value(value) {
        return Err(format!(
            "invalid label value {value:?}: must be empty or consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"
        ));
    }
    Ok(())
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
    if inner.trim().is_empty() {
        return Err("for 'in', 'notin' operators, values set can't be empty".into());
    }
    let mut values = inner
        .split(',')
        .map(|v| {
            let v = v.trim();
            validate_value(v).map(|()| v.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    values.sort();
    values.dedup();
    Ok(values)
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    let part = part.trim();
    if part.is_empty() {
        return Err("empty requirement".into());
    }
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        validate_key(key)?;
        return Ok(Requirement {
            key: key.to_string(),
            op: Op::DoesNotExist,
        });
    }
    let key_end = part
        .find(|c: char| c.is_whitespace() || matches!(c, '=' | '!' | '<' | '>'))
        .unwrap_or(part.len());
    let key = &part[..key_end];
    validate_key(key)?;
    let rest = part[key_end..].trim_start();
    let single = |v: &str| -> Result<String, String> {
        let v = v.trim();
        validate_value(v).map(|()| v.to_string())
    };
    let number = |v: &str| -> Result<i64, String> {
        v.trim()
            .parse()
            .map_err(|_| format!("{:?} is not an integer", v.trim()))
    };
    let op = if rest.is_empty() {
        Op::Exists
    } else if let Some(v) = rest.strip_prefix("==") {
        Op::Equals {
            value: single(v)?,
            double: true,
        }
    } else if let Some(v) = rest.strip_prefix("!=") {
        Op::NotEquals(single(v)?)
    } else if let Some(v) = rest.strip_prefix('=') {
        Op::Equals {
            value: single(v)?,
            double: false,
        }
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
        Ok(Self::sorted(requirements))
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
    fn keys_and_values_are_validated_as_the_api_server_does() {
        let long = |n: usize| "x".repeat(n);
        for bad in [
            format!("x16={}", long(254)),
            format!("x16={}", long(64)),
            long(254),
            format!("{}=a", long(64)),
            format!("{}/x", long(254)),
            format!("x in (a,{})", long(64)),
            format!("!{}", long(64)),
            "Example.com/x=a".into(),
            "/x=a".into(),
            "a/b/c=d".into(),
            "-a=b".into(),
            "a-=b".into(),
            "a=_b".into(),
            "a=b-".into(),
            "x in ()".into(),
        ] {
            let err = bad.parse::<Selector>().expect_err(&bad);
            assert_eq!(err.selector, bad);
        }
        let err = format!("x16={}", long(254))
            .parse::<Selector>()
            .unwrap_err();
        assert!(err.reason.contains("no more than 63"), "{err}");
        let err = format!("{}/x", long(254)).parse::<Selector>().unwrap_err();
        assert!(
            err.reason.contains("prefix part must be no more than 253"),
            "{err}"
        );
        for good in [
            format!("{}/{}={}", "a".repeat(253), long(63), long(63)),
            "example.com/app-name_1.x=v_1.2-b".into(),
            "a=".into(),
            "x in (a,)".into(),
        ] {
            assert!(good.parse::<Selector>().is_ok(), "{good}");
        }
    }

    #[test]
    fn requirements_are_sorted_by_key_and_every_operator_prints_as_written() {
        assert_eq!(sel("x=a,a=x"), sel("a=x,x=a"));
        assert_eq!(sel("x=a,a=x").to_string(), "a=x,x=a");
        assert_eq!(sel("y==jkl").to_string(), "y==jkl");
        assert_eq!(sel("y notin (jkl)").to_string(), "y notin (jkl)");
        assert_eq!(sel("y in (jkl)").to_string(), "y in (jkl)");
        assert_eq!(sel("y!=jkl").to_string(), "y!=jkl");
        assert_eq!(sel("y in (b,a,b)").to_string(), "y in (a,b)");
        assert_eq!(sel("y in (,)").to_string(), "y in (,)");
        assert_eq!(sel("y in (,a)").to_string(), "y in (,a)");
        assert_eq!(
            sel("z,!b,a>1,c notin (q)").to_string(),
            "a>1,!b,c notin (q),z"
        );
        let one = labels(&[("y", "jkl")]);
        assert!(sel("y==jkl").matches(&one) && !sel("y notin (jkl)").matches(&one));
    }

    #[test]
    fn from_labels_selects_exactly_those_pairs() {
        let want = labels(&[("app", "web"), ("tier", "front")]);
        let s = Selector::from_labels(&want);
        assert!(s.matches(&want));
        assert!(!s.matches(&labels(&[("app", "web")])));
    }
}
