//! Label selectors (apimachinery's `labels` package): parse the selector syntax the API
//! server and kubectl accept, and match it against an object's labels. The parser is
//! apimachinery's `labels.Parse`, token for token: what it accepts (`x in ()` and
//! `x notin (a,,)` hold the empty value), what it refuses, and its error messages
//! ([`ParseError::reason`]), which kubekit-fake answers as the real server does.
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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use crate::validation::{dns1123_subdomain_regex_error, is_dns1123_subdomain, quote, regex_error};

/// A set of labels a [`Selector`] reads (apimachinery's `labels.Labels`): a label map, or
/// an object's [`MetaRef`](crate::meta_ref::MetaRef).
pub trait Labels {
    /// The value of label `key`, if the set has it.
    fn get(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn get(&self, key: &str) -> Option<&str> {
        BTreeMap::get(self, key).map(String::as_str)
    }
}

/// A malformed selector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {selector:?}: {reason}")]
pub struct ParseError {
    /// The selector as given.
    pub selector: String,
    /// What is wrong with it: apimachinery's message, as the API server answers it.
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
    fn matches(&self, labels: &(impl Labels + ?Sized)) -> bool {
        let value = labels.get(&self.key);
        let listed = |values: &[String], v: &str| values.iter().any(|listed| listed == v);
        match &self.op {
            Op::Equals { value: want, .. } => value == Some(want),
            Op::NotEquals(unwanted) => value != Some(unwanted),
            Op::In(values) => value.is_some_and(|v| listed(values, v)),
            Op::NotIn(values) => value.is_none_or(|v| !listed(values, v)),
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

/// The values of a set, comma-separated (a set of only the empty value prints as `()`,
/// which parses back to it).
struct Values<'a>(&'a [String]);

impl fmt::Display for Values<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
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
    pub fn matches(&self, labels: &(impl Labels + ?Sized)) -> bool {
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

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `IsLabelKey` (`IsQualifiedName`): `[prefix/]name`, every fault.
fn label_key_errors(key: &str) -> Vec<String> {
    let key_regex = || {
        regex_error(
            LABEL_KEY_ERR,
            LABEL_KEY_FMT,
            &["MyName", "my.name", "123-abc"],
        )
    };
    let parts: Vec<&str> = key.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > MAX_LABEL_PREFIX_LEN {
                    errs.push(format!(
                        "prefix part must be no more than {MAX_LABEL_PREFIX_LEN} bytes"
                    ));
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {}", dns1123_subdomain_regex_error()));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                key_regex()
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > MAX_LABEL_VALUE_LEN {
        errs.push(format!(
            "name part must be no more than {MAX_LABEL_VALUE_LEN} bytes"
        ));
    }
    if name.is_empty() || !is_label_value(name) {
        errs.push(format!("name part {}", key_regex()));
    }
    errs
}

/// apimachinery's `IsLabelValue`, every fault.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > MAX_LABEL_VALUE_LEN {
        errs.push(format!("must be no more than {MAX_LABEL_VALUE_LEN} bytes"));
    }
    if !is_label_value(value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// apimachinery's `field.Invalid(path, value, detail).Error()`.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", quote(value))
}

/// The tokens of apimachinery's selector lexer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// The token a literal is, when it is one (`in`, `notin` and the symbols).
fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits a selector into tokens as apimachinery's lexer does; the last one is
/// [`Token::End`]. A NUL byte ends the token it follows (and is skipped), or the selector
/// where a token would start, as there.
fn tokens(s: &str) -> Vec<(Token, &str)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        while at < b.len() && is_whitespace(b[at]) {
            at += 1;
        }
        if at == b.len() || b[at] == 0 {
            out.push((Token::End, ""));
            return out;
        }
        let start = at;
        let token = if is_special(b[at]) {
            // The longest run of symbols that is a token (every single symbol is one).
            let mut last = None;
            while at < b.len() && is_special(b[at]) {
                match keyword(&s[start..=at]) {
                    Some(t) => last = Some((t, at + 1)),
                    None if last.is_some() => break,
                    None => {}
                }
                at += 1;
            }
            let (token, end) = last.expect("a single symbol is a token");
            at = end;
            token
        } else {
            while at < b.len() && b[at] != 0 && !is_special(b[at]) && !is_whitespace(b[at]) {
                at += 1;
            }
            keyword(&s[start..at]).unwrap_or(Token::Identifier)
        };
        out.push((token, &s[start..at]));
        if b.get(at) == Some(&0) {
            at += 1;
        }
    }
}

/// Where the parser is: `in` and `notin` are values inside a set and after an operator.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// apimachinery's selector parser, with its error messages.
struct Parser<'a> {
    tokens: Vec<(Token, &'a str)>,
    position: usize,
}

impl<'a> Parser<'a> {
    fn lookahead(&self, context: Context) -> (Token, &'a str) {
        let (token, literal) = self.tokens[self.position.min(self.tokens.len() - 1)];
        match token {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn consume(&mut self, context: Context) -> (Token, &'a str) {
        let item = self.lookahead(context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    match self.consume(Context::Values) {
                        (Token::End, _) => return Ok(requirements),
                        (Token::Comma, _) => {
                            let (next, literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        (_, literal) => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (mut token, mut literal) = self.consume(Context::Values);
        let negated = token == Token::DoesNotExist;
        if negated {
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let key = literal;
        let key_errors = label_key_errors(key);
        if !key_errors.is_empty() {
            return Err(invalid("<nil>", key, &key_errors.join("; ")));
        }
        let unary = matches!(self.lookahead(Context::Values).0, Token::End | Token::Comma);
        if negated || unary {
            let op = if negated {
                Op::DoesNotExist
            } else {
                Op::Exists
            };
            return new_requirement(key, op);
        }
        let (token, literal) = self.consume(Context::KeyAndOperator);
        let op = match token {
            Token::In => Op::In(self.set()?),
            Token::NotIn => Op::NotIn(self.set()?),
            Token::Equals | Token::DoubleEquals => Op::Equals {
                value: self.exact_value()?,
                double: token == Token::DoubleEquals,
            },
            Token::NotEquals => Op::NotEquals(self.exact_value()?),
            Token::GreaterThan => Op::Gt(self.number(key)?),
            Token::LessThan => Op::Lt(self.number(key)?),
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        };
        new_requirement(key, op)
    }

    /// `(a,b)`: a set, sorted; `()`, and a missing value between commas, are `""`.
    fn set(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        let values = match token {
            Token::Identifier | Token::Comma => {
                let values = self.values()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                values
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                BTreeSet::from([String::new()])
            }
            _ => {
                return Err(format!(
                    "found '{literal}', expected: ',', ')' or identifier"
                ));
            }
        };
        Ok(values.into_iter().collect())
    }

    /// The comma-separated values of a set, up to its `)`.
    fn values(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            match self.consume(Context::Values) {
                (Token::Identifier, literal) => {
                    values.insert(literal.to_string());
                    match self.lookahead(Context::Values) {
                        (Token::Comma, _) => {}
                        (Token::ClosedPar, _) => return Ok(values),
                        (_, next) => {
                            return Err(format!("found '{next}', expected: ',' or ')'"));
                        }
                    }
                }
                (Token::Comma, _) => {
                    // `(,`, `,,` and `,)` hold the empty value.
                    let next = self.lookahead(Context::Values).0;
                    if values.is_empty() || matches!(next, Token::ClosedPar | Token::Comma) {
                        values.insert(String::new());
                    }
                    if next == Token::ClosedPar {
                        return Ok(values);
                    }
                }
                (_, literal) => {
                    return Err(format!("found '{literal}', expected: ',', or identifier"));
                }
            }
        }
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`; none is `""`.
    fn exact_value(&mut self) -> Result<String, String> {
        if matches!(self.lookahead(Context::Values).0, Token::End | Token::Comma) {
            return Ok(String::new());
        }
        match self.consume(Context::Values) {
            (Token::Identifier, literal) => Ok(literal.to_string()),
            (_, literal) => Err(format!("found '{literal}', expected: identifier")),
        }
    }

    /// The integer after `>` or `<`.
    fn number(&mut self, key: &str) -> Result<i64, String> {
        let value = self.exact_value()?;
        let mut errs = Vec::new();
        let n = value.parse::<i64>();
        if n.is_err() {
            errs.push(invalid(
                "values[0]",
                &value,
                "for 'Gt', 'Lt' operators, the value must be an integer",
            ));
        }
        errs.extend(value_error(key, 0, &value));
        match n {
            Ok(n) if errs.is_empty() => Ok(n),
            _ => Err(aggregate(errs)),
        }
    }
}

/// The fault of a requirement's `i`th value, as apimachinery's `validateLabelValue`.
fn value_error(key: &str, i: usize, value: &str) -> Option<String> {
    let errs = label_value_errors(value);
    (!errs.is_empty()).then(|| invalid(&format!("values[{i}][{key}]"), value, &errs.join("; ")))
}

/// apimachinery's aggregate error: one message, or `[a, b]` without repeats.
fn aggregate(errs: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::new();
    for e in errs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.as_slice() {
        [one] => one.clone(),
        all => format!("[{}]", all.join(", ")),
    }
}

/// apimachinery's `NewRequirement`: the values are checked (the key already is).
fn new_requirement(key: &str, op: Op) -> Result<Requirement, String> {
    let values: Vec<&String> = match &op {
        Op::In(v) | Op::NotIn(v) => v.iter().collect(),
        Op::Equals { value, .. } | Op::NotEquals(value) => vec![value],
        _ => Vec::new(),
    };
    let errs: Vec<String> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| value_error(key, i, v))
        .collect();
    if !errs.is_empty() {
        return Err(aggregate(errs));
    }
    Ok(Requirement {
        key: key.to_string(),
        op,
    })
}

impl FromStr for Selector {
    type Err = ParseError;

    /// Parses as apimachinery's `labels.Parse`, with its error messages (as `reason`).
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let mut parser = Parser {
            tokens: tokens(s),
            position: 0,
        };
        parser
            .parse()
            .map(Self::sorted)
            .map_err(|reason| ParseError {
                selector: s.to_string(),
                reason,
            })
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
        assert_eq!(sel("y in (,)").to_string(), "y in ()");
        assert_eq!(
            sel("y in ()"),
            sel("y in (,)"),
            "both are the set of the empty value"
        );
        assert_eq!(sel("y in (,a)").to_string(), "y in (,a)");
        assert_eq!(
            sel("z,!b,a>1,c notin (q)").to_string(),
            "a>1,!b,c notin (q),z"
        );
        let one = labels(&[("y", "jkl")]);
        assert!(sel("y==jkl").matches(&one) && !sel("y notin (jkl)").matches(&one));
    }

    /// apimachinery's own cases (`labels/selector_test.go`: `TestSelectorParse`,
    /// `TestSetSelectorParser`): (selector, valid, how it prints when valid).
    #[test]
    fn apimachinerys_parser_cases_parse_and_print_alike() {
        for (input, printed) in [
            ("x=a,y=b,z=c", "x=a,y=b,z=c"),
            ("", ""),
            ("x!=a,y=b", "x!=a,y=b"),
            ("x=", "x="),
            ("x= ", "x="),
            ("x=,z= ", "x=,z="),
            ("x= ,z= ", "x=,z="),
            ("!x", "!x"),
            ("x>1", "x>1"),
            ("x>1,z<5", "x>1,z<5"),
            ("x  notin\t\t(abc,def)", "x notin (abc,def)"),
            ("x in (abc,)", "x in (,abc)"),
            ("x in (abc,abc)", "x in (abc)"),
            ("x in ()", "x in ()"),
            ("x in (a,,)", "x in (,a)"),
            ("x in (a,,,,,,)", "x in (,a)"),
            ("x in (a,,a,,a,,a,,)", "x in (,a)"),
            (
                "x notin (abc,,def),bar,z in (),w",
                "bar,w,x notin (,abc,def),z in ()",
            ),
            ("x,y in (a)", "x,y in (a)"),
            ("x notin ( )", "x notin ()"),
            ("x notin (, a)", "x notin (,a)"),
            (
                "x notin (abc),y in (jkl,mno),z notin ()",
                "x notin (abc),y in (jkl,mno),z notin ()",
            ),
            ("a ", "a"),
            ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
        ] {
            let parsed: Selector = input.parse().unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(parsed.to_string(), printed, "{input:?}");
        }
        for bad in [
            "x=a||y=b",
            "x==a==b",
            "!x=a",
            "x<a",
            "x,,y",
            ",x,y",
            "x nott in (y)",
            "a in (xyz),",
            "a in (xyz)b notin ()",
            "a in (xyz abc)",
            "a notin(",
            "a (",
            "(",
        ] {
            assert!(bad.parse::<Selector>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn errors_are_apimachinerys_messages() {
        let reason = |s: &str| s.parse::<Selector>().unwrap_err().reason;
        assert_eq!(
            reason("a in (b"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(reason("x,,y"), "found ',', expected: identifier after ','");
        assert_eq!(
            reason("a (b)"),
            "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            reason("a=b c"),
            "found 'c', expected: ',' or 'end of string'"
        );
        assert_eq!(
            reason("=a"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            reason("x<a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            reason("A_"),
            "unable to parse requirement: <nil>: Invalid value: \"A_\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(
            reason("a in (b,-c)"),
            "unable to parse requirement: values[0][a]: Invalid value: \"-c\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
    }

    #[test]
    fn from_labels_selects_exactly_those_pairs() {
        let want = labels(&[("app", "web"), ("tier", "front")]);
        let s = Selector::from_labels(&want);
        assert!(s.matches(&want));
        assert!(!s.matches(&labels(&[("app", "web")])));
    }
}
