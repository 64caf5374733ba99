//! Kubernetes' semver library (`semverlib.go`, at the version kube-apiserver 1.37
//! declares, with the `normalize` argument), on blang/semver v4's parser:
//!
//! - `semver(s)` and `semver(s, normalize)`: the `kubernetes.Semver` value of `s`, or an
//!   evaluation error with blang's text (`No Major.Minor.Patch elements found`, ...).
//!   `normalize` first strips one leading `v`, leading zeros of each of the first three
//!   dot-separated parts and fills a missing minor or patch with `0` (`v01.2` is
//!   `1.2.0`); a short version with a prerelease or build is refused.
//! - `isSemver(s)` and `isSemver(s, normalize)`: whether `semver` would succeed.
//! - `v.major()`, `v.minor()`, `v.patch()`: the numbers as ints (wrapped as Go's
//!   `types.Int(uint64)` does past `int`'s range).
//! - `v.compareTo(w)` (-1, 0 or 1), `v.isGreaterThan(w)`, `v.isLessThan(w)` and `v == w`:
//!   by semver precedence, build metadata ignored (`1.0.0+a == 1.0.0+b`).
//!
//! Not done: `kubernetes.Semver` is not a name programs can refer to (nor is it in
//! cel-go), and a semver compared with `==` to a value of another type is `false` where
//! cel-go's runtime fails with `no such overload`.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{BOOL_TYPE, STRING_TYPE};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use super::{fail, opaque, opaque_type, overloads, text};

/// The functions [`register`] declares, as a program's references name them.
pub(super) const FUNCTIONS: &[&str] = &[
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
];

/// The type name of [`Semver`] values, as cel-go's library names it.
const SEMVER: &str = "kubernetes.Semver";

/// Declares the library's overloads on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    overloads!(env,
        global "semver" "string_to_semver" (STRING_TYPE) => to_semver;
        global "semver" "string_bool_to_semver" (STRING_TYPE, BOOL_TYPE) => to_semver;
        global "isSemver" "is_semver_string" (STRING_TYPE) => is_semver;
        global "isSemver" "is_semver_string_bool" (STRING_TYPE, BOOL_TYPE) => is_semver;
        member "major" "semver_major" (opaque_type(SEMVER)) => major;
        member "minor" "semver_minor" (opaque_type(SEMVER)) => minor;
        member "patch" "semver_patch" (opaque_type(SEMVER)) => patch;
        member "isGreaterThan" "semver_is_greater_than" (opaque_type(SEMVER), opaque_type(SEMVER)) => is_greater_than;
        member "isLessThan" "semver_is_less_than" (opaque_type(SEMVER), opaque_type(SEMVER)) => is_less_than;
        member "compareTo" "semver_compare_to" (opaque_type(SEMVER), opaque_type(SEMVER)) => compare_to;
    )
}

/// A semantic version, as blang/semver's `Version` without its build metadata, which
/// only [`parse`] checks: nothing reads or compares it. Equal ([`PartialEq`]) when of the
/// same precedence.
#[derive(Debug)]
struct Semver {
    /// The major number.
    major: u64,
    /// The minor number.
    minor: u64,
    /// The patch number.
    patch: u64,
    /// The prerelease identifiers (after `-`), none for a release.
    pre: Vec<Identifier>,
}

/// A prerelease identifier; numeric ones sort before alphanumeric ones ([`Ord`] of the
/// variants' order), numbers by value, text by its bytes.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Identifier {
    /// Digits only.
    Numeric(u64),
    /// Letters, digits and `-`, not all digits.
    Alphanumeric(String),
}

impl Semver {
    /// blang's `Version.Compare`: major, minor, patch, then a release above its
    /// prereleases, prereleases by their identifiers (a shorter prefix first).
    fn precedence(&self, other: &Semver) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => self.pre.cmp(&other.pre),
            })
    }
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.precedence(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        SEMVER
    }
}

/// The ASCII digits blang calls `numbers`.
fn digits_only(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// blang's `alphanum`: ASCII letters, digits and `-`.
fn alphanumeric(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// blang's `hasLeadingZeroes`.
fn leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)` of a string of digits, with its error text.
fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            super::go_quote(s)
        ));
    }
    s.parse().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            super::go_quote(s)
        )
    })
}

/// A major, minor or patch number (`what` its name, `What` capitalised) as blang reads
/// it.
fn number(s: &str, what: &str, capitalised: &str) -> Result<u64, String> {
    if !digits_only(s) {
        return Err(format!(
            "Invalid character(s) found in {what} number {}",
            super::go_quote(s)
        ));
    }
    if leading_zero(s) {
        return Err(format!(
            "{capitalised} number must not contain leading zeroes {}",
            super::go_quote(s)
        ));
    }
    parse_uint(s)
}

/// blang's `NewPRVersion`.
fn prerelease(s: &str) -> Result<Identifier, String> {
    if s.is_empty() {
        return Err("Prerelease is empty".into());
    }
    if digits_only(s) {
        if leading_zero(s) {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {}",
                super::go_quote(s)
            ));
        }
        return parse_uint(s).map(Identifier::Numeric);
    }
    if alphanumeric(s) {
        return Ok(Identifier::Alphanumeric(s.to_string()));
    }
    Err(format!(
        "Invalid character(s) found in prerelease {}",
        super::go_quote(s)
    ))
}

/// blang's `semver.Parse`: `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`, checked in its
/// order, with its error texts.
fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let mut parts = s.splitn(3, '.');
    let (Some(major), Some(minor), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("No Major.Minor.Patch elements found".into());
    };
    let major = number(major, "major", "Major")?;
    let minor = number(minor, "minor", "Minor")?;
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, Some(pre)),
        None => (rest, None),
    };
    let patch = number(patch, "patch", "Patch")?;
    let pre = pre
        .into_iter()
        .flat_map(|p| p.split('.'))
        .map(prerelease)
        .collect::<Result<Vec<_>, _>>()?;
    for b in build.into_iter().flat_map(|b| b.split('.')) {
        if b.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !alphanumeric(b) {
            return Err(format!(
                "Invalid character(s) found in build meta data {}",
                super::go_quote(b)
            ));
        }
    }
    Ok(Semver {
        major,
        minor,
        patch,
        pre,
    })
}

/// semverlib.go's `normalizeAndParse`: one leading `v` removed, leading zeros of the
/// first three dot-separated parts removed, a missing minor or patch filled with `0`;
/// then [`parse`].
fn normalize_and_parse(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() <= 1 {
                return p.to_string();
            }
            let trimmed = p.trim_start_matches('0');
            if trimmed.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
                trimmed.to_string()
            } else {
                format!("0{trimmed}")
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".to_string());
    }
    parse(&parts.join("."))
}

/// The version `semver(s)` or `semver(s, normalize)` reads from `args`, or blang's (or
/// the normalization's) text.
fn read(args: &[Cel]) -> Result<Result<Semver, String>, ExecutionError> {
    let s = text(args, 0)?;
    let normalize = match args.get(1) {
        None => false,
        Some(Cel::Bool(b)) => *b,
        Some(other) => return Err(fail(format!("expected a bool, got {other:?}"))),
    };
    Ok(if normalize {
        normalize_and_parse(s)
    } else {
        parse(s)
    })
}

fn to_semver(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let version = read(args)?.map_err(fail)?;
    Ok(Cel::Opaque(Arc::new(version)))
}

fn is_semver(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(read(args)?.is_ok()))
}

/// The version at `at` of `args`.
fn version(args: &[Cel], at: usize) -> Result<&Semver, ExecutionError> {
    match args.get(at) {
        Some(value) => opaque::<Semver>(value),
        None => Err(fail(format!("expected a {SEMVER}"))),
    }
}

/// A version's number as Go's `types.Int(uint64)`: wrapped past `i64::MAX`.
fn int(n: u64) -> Cel {
    Cel::Int(n as i64)
}

fn major(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(int(version(args, 0)?.major))
}

fn minor(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(int(version(args, 0)?.minor))
}

fn patch(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(int(version(args, 0)?.patch))
}

/// The precedence of the receiver against the argument.
fn ordering(args: &[Cel]) -> Result<Ordering, ExecutionError> {
    Ok(version(args, 0)?.precedence(version(args, 1)?))
}

fn is_greater_than(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(ordering(args)? == Ordering::Greater))
}

fn is_less_than(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(ordering(args)? == Ordering::Less))
}

fn compare_to(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Int(ordering(args)? as i64))
}

#[cfg(test)]
mod tests {
    //! Every expectation here is what cel-go v0.29.2 with k8s.io/apiserver v0.37.2's
    //! `library.SemverLib(library.SemverVersion(1))` evaluates the same expression to.

    use serde_json::json;

    use super::{normalize_and_parse, parse};
    use crate::cel_rules::{evaluate, evaluate_value};

    #[test]
    fn valid_versions_parse_into_their_numbers() {
        for (source, want) in [
            ("semver('1.2.3').major()", 1),
            ("semver('1.2.3').minor()", 2),
            ("semver('1.2.3').patch()", 3),
            ("semver('10.20.30-rc.1+build.5').minor()", 20),
            // Go's types.Int(uint64) wraps.
            ("semver('18446744073709551615.0.0').major()", -1),
            ("semver('9223372036854775808.0.0').major()", i64::MIN),
        ] {
            assert_eq!(evaluate_value(source, &[]), Ok(json!(want)), "{source}");
        }
        for (source, want) in [
            ("isSemver('1.0.0')", true),
            ("isSemver('1.0.0-rc.1+b')", true),
            ("isSemver('1.0.0-a-b+c-d')", true),
            ("isSemver('1.0.0--')", true),
            ("isSemver('hello')", false),
            ("isSemver('v1.0')", false),
            ("isSemver('')", false),
            ("isSemver('1.0.0', false)", true),
        ] {
            assert_eq!(evaluate(source, &[]), Ok(want), "{source}");
        }
    }

    #[test]
    fn invalid_versions_fail_with_blangs_text() {
        for (s, want) in [
            ("", "Version string empty"),
            ("1", "No Major.Minor.Patch elements found"),
            ("1.0", "No Major.Minor.Patch elements found"),
            ("200K", "No Major.Minor.Patch elements found"),
            (
                "v1.0.0",
                r#"Invalid character(s) found in major number "v1""#,
            ),
            (
                " 1.0.0",
                r#"Invalid character(s) found in major number " 1""#,
            ),
            (
                "-1.0.0",
                r#"Invalid character(s) found in major number "-1""#,
            ),
            ("é.0.0", r#"Invalid character(s) found in major number "é""#),
            ("1.a.0", r#"Invalid character(s) found in minor number "a""#),
            ("1.0.a", r#"Invalid character(s) found in patch number "a""#),
            (
                "1.0.0.0",
                r#"Invalid character(s) found in patch number "0.0""#,
            ),
            (
                "1.0.0 ",
                r#"Invalid character(s) found in patch number "0 ""#,
            ),
            (
                "01.0.0",
                r#"Major number must not contain leading zeroes "01""#,
            ),
            (
                "1.01.0",
                r#"Minor number must not contain leading zeroes "01""#,
            ),
            (
                "1.0.01",
                r#"Patch number must not contain leading zeroes "01""#,
            ),
            ("..0", r#"strconv.ParseUint: parsing "": invalid syntax"#),
            ("1.0.", r#"strconv.ParseUint: parsing "": invalid syntax"#),
            (
                "99999999999999999999.0.0",
                r#"strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
            ),
            (
                "1.0.0-99999999999999999999",
                r#"strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
            ),
            (
                "1.0.0-01",
                r#"Numeric PreRelease version must not contain leading zeroes "01""#,
            ),
            ("1.0.0-", "Prerelease is empty"),
            ("1.0.0-a..b", "Prerelease is empty"),
            (
                "1.0.0-a_b",
                r#"Invalid character(s) found in prerelease "a_b""#,
            ),
            ("1.0.0+", "Build meta data is empty"),
            ("1.0.0+a..b", "Build meta data is empty"),
            (
                "1.0.0+a+b",
                r#"Invalid character(s) found in build meta data "a+b""#,
            ),
            (
                "1.0.0+é",
                r#"Invalid character(s) found in build meta data "é""#,
            ),
        ] {
            assert_eq!(parse(s).map(|_| ()), Err(want.to_string()), "{s:?}");
        }
        assert_eq!(
            evaluate("semver('Three').major() == 3", &[]),
            Err("No Major.Minor.Patch elements found".to_string())
        );
    }

    #[test]
    fn invalid_characters_are_quoted_as_go_quotes_them() {
        for (s, want) in [
            ("1.0.0-a\tb", r#""a\tb""#),
            ("1.0.0-a\u{a0}b", r#""a\u00a0b""#),
            ("1.0.0-a\u{200b}b", r#""a\u200bb""#),
            ("1.0.0-e\u{301}", "\"e\u{301}\""),
            ("1.0.0-\u{1f600}", "\"\u{1f600}\""),
            ("1.0.0-a\"b", r#""a\"b""#),
            ("1.0.0-a\\b", r#""a\\b""#),
            ("1.0.0-a\u{7f}b", r#""a\x7fb""#),
            ("1.0.0-a\u{1b}b", r#""a\x1bb""#),
            ("1.0.0-a\u{85}b", r#""a\u0085b""#),
            ("1.0.0-\u{feff}", r#""\ufeff""#),
            ("1.0.0-\u{e0001}", r#""\U000e0001""#),
            ("1.0.0-\u{e000}", r#""\ue000""#),
            ("1.0.0-\u{3000}", r#""\u3000""#),
        ] {
            let want = format!("Invalid character(s) found in prerelease {want}");
            assert_eq!(parse(s).map(|_| ()), Err(want), "{s:?}");
        }
    }

    #[test]
    fn normalize_strips_v_and_leading_zeros_and_fills_minor_and_patch() {
        for (source, want) in [
            ("semver('v1.0.0', true).major()", 1),
            ("semver('1.0', true).minor()", 0),
            ("semver('1', true).patch()", 0),
            ("semver('01.01.01', true).minor()", 1),
            ("semver('v01.02.003-alpha', true).patch()", 3),
            ("semver('1.2.00-alpha', true).patch()", 0),
            ("semver('00', true).major()", 0),
        ] {
            assert_eq!(evaluate_value(source, &[]), Ok(json!(want)), "{source}");
        }
        for (source, want) in [
            (
                "semver('v01.02.003-alpha', true) == semver('1.2.3-alpha')",
                true,
            ),
            ("isSemver('v1.0', true)", true),
            ("isSemver('v1.0', false)", false),
            ("isSemver('', true)", false),
        ] {
            assert_eq!(evaluate(source, &[]), Ok(want), "{source}");
        }
        let short = "short version cannot contain PreRelease/Build meta data";
        for (s, want) in [
            ("1.0-alpha", short),
            ("1-alpha", short),
            ("1.2+b", short),
            ("0-", short),
            ("", r#"strconv.ParseUint: parsing "": invalid syntax"#),
            ("v", r#"strconv.ParseUint: parsing "": invalid syntax"#),
            (
                "vv1.0.0",
                r#"Invalid character(s) found in major number "0v1""#,
            ),
            (
                "V1.0.0",
                r#"Invalid character(s) found in major number "0V1""#,
            ),
            (
                "00a.0.0",
                r#"Invalid character(s) found in major number "0a""#,
            ),
            ("é", r#"Invalid character(s) found in major number "0é""#),
            (
                "1.2.000-01",
                r#"Numeric PreRelease version must not contain leading zeroes "01""#,
            ),
        ] {
            let found = normalize_and_parse(s).map(|_| ());
            assert_eq!(found, Err(want.to_string()), "{s:?}");
        }
        assert_eq!(
            evaluate("semver('1-alpha', true).major() == 1", &[]),
            Err(short.to_string())
        );
    }

    #[test]
    fn comparisons_follow_precedence_with_prereleases_below_their_release() {
        // semver.org's example order, each below the next.
        let order = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.9.9",
            "1.10.0",
            "2.0.0",
        ];
        for pair in order.windows(2) {
            let [a, b] = pair else { continue };
            for (source, want) in [
                (format!("semver('{a}').isLessThan(semver('{b}'))"), true),
                (format!("semver('{b}').isGreaterThan(semver('{a}'))"), true),
                (format!("semver('{a}').isGreaterThan(semver('{b}'))"), false),
                (format!("semver('{a}') == semver('{b}')"), false),
            ] {
                assert_eq!(evaluate(&source, &[]), Ok(want), "{source}");
            }
        }
        for (source, want) in [
            ("semver('1.2.3').compareTo(semver('1.2.3'))", 0),
            ("semver('1.2.3').compareTo(semver('2.0.0'))", -1),
            ("semver('1.2.3').compareTo(semver('0.1.2'))", 1),
            // Uppercase sorts before lowercase; numeric identifiers before text.
            ("semver('1.0.0-Z').compareTo(semver('1.0.0-a'))", -1),
            ("semver('1.0.0-1').compareTo(semver('1.0.0-a'))", -1),
            ("semver('1.0.0--').compareTo(semver('1.0.0'))", -1),
        ] {
            assert_eq!(evaluate_value(source, &[]), Ok(json!(want)), "{source}");
        }
        for (source, want) in [
            ("semver('1.0.0').isLessThan(semver('1.0.0'))", false),
            ("semver('1.0.0').isGreaterThan(semver('1.0.0'))", false),
            ("semver('1.0.0') == semver('1.0.0-0')", false),
            ("semver('1.2.3') != semver('1.2.4')", true),
        ] {
            assert_eq!(evaluate(source, &[]), Ok(want), "{source}");
        }
    }

    #[test]
    fn build_metadata_is_ignored_by_comparisons_and_equality() {
        for (source, want) in [
            ("semver('1.2.3+a') == semver('1.2.3+b')", true),
            (
                "semver('1.2.3-alpha.1+build.5') == semver('1.2.3-alpha.1')",
                true,
            ),
            ("semver('1.2.3+a').isGreaterThan(semver('1.2.3'))", false),
            ("semver('1.0.0', true) == semver('1.0.0')", true),
            (
                "[semver('1.0.0'), semver('2.0.0')].exists(s, s == semver('2.0.0+x'))",
                true,
            ),
        ] {
            assert_eq!(evaluate(source, &[]), Ok(want), "{source}");
        }
        assert_eq!(
            evaluate_value(
                "semver('1.0.0-a-b+c-d').compareTo(semver('1.0.0-a-b'))",
                &[]
            ),
            Ok(json!(0))
        );
    }
}
