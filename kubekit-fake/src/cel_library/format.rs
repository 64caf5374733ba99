//! Kubernetes' named-format library (k8s.io/apiserver/pkg/cel/library/format.go):
//! `format.named(name)` (an optional format, none for a name the library lacks),
//! `format.<name>()` for each of its formats, and `<format>.validate(string)`, on opaque
//! `kubernetes.NamedFormat` values.
//!
//! # Contract
//!
//! - The formats are format.go's: `dns1123Label`, `dns1123Subdomain`, `dns1035Label`
//!   and their `...Prefix` forms (a name to which a suffix is added: a trailing `-` is
//!   allowed, as apimachinery's `maskTrailingDash` allows it), `qualifiedName` (a label
//!   key), `labelValue`, `uri` (Go's `url.ParseRequestURI`), `uuid`, `byte` (padded
//!   base64), `date` and `datetime` (kube-openapi's `strfmt`, as CRD schemas check them,
//!   by [`crate::formats::valid`]).
//! - `validate(s)` is `optional.none()` when `s` is of the format, else
//!   `optional.of(errors)`, apimachinery's texts (`must be no more than 63 characters`,
//!   `a lowercase RFC 1123 label must consist of ...`) or format.go's (`invalid date`);
//!   for `uri`, Go's error (`parse "x": invalid URI for request`).
//! - Two formats are equal when they are the same format.
//!
//! Not done: the cost estimates (format.go's `MaxRegexSize`). Not matched: a `datetime`
//! with `İ` (U+0130) where strfmt reads any character: [`crate::formats`] lower-cases it
//! to two characters, Go to `i`, so `2021-01-01T00:00:00İ5Z` is refused here only.

use std::sync::{Arc, LazyLock};

use cel::common::types::STRING_TYPE;
use cel::objects::{Opaque, OptionalValue};
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};
use regex::bytes::Regex;

use super::{fail, opaque, opaque_type, overloads, text};

/// The functions [`register`] declares, as a program's references name them (without
/// their namespace: `format.named` is `named`).
pub(super) const FUNCTIONS: &[&str] = &[
    "named",
    "validate",
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// The type name of the library's format values, as cel-go names it.
const TYPE_NAME: &str = "kubernetes.NamedFormat";

/// Declares the library's overloads on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    overloads!(env,
        global "format.named" "format-named" (STRING_TYPE) => named;
        global "format.dns1123Label" "format.dns1123Label" () => dns1123_label;
        global "format.dns1123Subdomain" "format.dns1123Subdomain" () => dns1123_subdomain;
        global "format.dns1035Label" "format.dns1035Label" () => dns1035_label;
        global "format.qualifiedName" "format.qualifiedName" () => qualified_name;
        global "format.dns1123LabelPrefix" "format.dns1123LabelPrefix" () => dns1123_label_prefix;
        global "format.dns1123SubdomainPrefix" "format.dns1123SubdomainPrefix" () => dns1123_subdomain_prefix;
        global "format.dns1035LabelPrefix" "format.dns1035LabelPrefix" () => dns1035_label_prefix;
        global "format.labelValue" "format.labelValue" () => label_value;
        global "format.uri" "format.uri" () => uri;
        global "format.uuid" "format.uuid" () => uuid;
        global "format.byte" "format.byte" () => byte;
        global "format.date" "format.date" () => date;
        global "format.datetime" "format.datetime" () => datetime;
        member "validate" "format-validate" (opaque_type(TYPE_NAME), STRING_TYPE) => validate;
    )
}

/// One of format.go's named formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Dns1123Label,
    Dns1123Subdomain,
    Dns1035Label,
    QualifiedName,
    Dns1123LabelPrefix,
    Dns1123SubdomainPrefix,
    Dns1035LabelPrefix,
    LabelValue,
    Uri,
    Uuid,
    Byte,
    Date,
    Datetime,
}

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// The formats by the names `format.named` takes.
const NAMED: &[(&str, Format)] = &[
    ("dns1123Label", Format::Dns1123Label),
    ("dns1123Subdomain", Format::Dns1123Subdomain),
    ("dns1035Label", Format::Dns1035Label),
    ("qualifiedName", Format::QualifiedName),
    ("dns1123LabelPrefix", Format::Dns1123LabelPrefix),
    ("dns1123SubdomainPrefix", Format::Dns1123SubdomainPrefix),
    ("dns1035LabelPrefix", Format::Dns1035LabelPrefix),
    ("labelValue", Format::LabelValue),
    ("uri", Format::Uri),
    ("uuid", Format::Uuid),
    ("byte", Format::Byte),
    ("date", Format::Date),
    ("datetime", Format::Datetime),
];

fn named(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let name = text(args, 0)?;
    let found = NAMED.iter().find(|(n, _)| *n == name);
    Ok(Cel::Opaque(Arc::new(match found {
        Some((_, format)) => OptionalValue::of(Cel::Opaque(Arc::new(*format))),
        None => OptionalValue::none(),
    })))
}

/// Declares the overload giving each constant format (`format.dns1123Label()`, ...).
macro_rules! constants {
    ($($function:ident => $format:ident),+ $(,)?) => {$(
        fn $function(_: &[Cel]) -> Result<Cel, ExecutionError> {
            Ok(Cel::Opaque(Arc::new(Format::$format)))
        }
    )+};
}

constants!(
    dns1123_label => Dns1123Label,
    dns1123_subdomain => Dns1123Subdomain,
    dns1035_label => Dns1035Label,
    qualified_name => QualifiedName,
    dns1123_label_prefix => Dns1123LabelPrefix,
    dns1123_subdomain_prefix => Dns1123SubdomainPrefix,
    dns1035_label_prefix => Dns1035LabelPrefix,
    label_value => LabelValue,
    uri => Uri,
    uuid => Uuid,
    byte => Byte,
    date => Date,
    datetime => Datetime,
);

fn validate(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let format = opaque::<Format>(args.first().ok_or_else(|| fail("a format is needed"))?)?;
    let errors = format.errors(text(args, 1)?);
    Ok(Cel::Opaque(Arc::new(if errors.is_empty() {
        OptionalValue::none()
    } else {
        let errors = errors
            .into_iter()
            .map(|e| Cel::String(Arc::new(e)))
            .collect();
        OptionalValue::of(Cel::List(Arc::new(errors)))
    })))
}

impl Format {
    /// Why `value` is not of the format, as format.go's validator says; none if it is.
    fn errors(self, value: &str) -> Vec<String> {
        let strfmt = |name: &str, error: &str| {
            if crate::formats::valid(name, value) {
                Vec::new()
            } else {
                vec![error.to_string()]
            }
        };
        let bytes = value.as_bytes();
        match self {
            Format::Dns1123Label => dns1123_label_errors(bytes),
            Format::Dns1123Subdomain => dns1123_subdomain_errors(bytes, CHARACTERS),
            Format::Dns1035Label => dns1035_label_errors(bytes),
            Format::QualifiedName => label_key_errors(value),
            Format::Dns1123LabelPrefix => dns1123_label_errors(&mask_trailing_dash(bytes)),
            Format::Dns1123SubdomainPrefix => {
                dns1123_subdomain_errors(&mask_trailing_dash(bytes), CHARACTERS)
            }
            Format::Dns1035LabelPrefix => dns1035_label_errors(&mask_trailing_dash(bytes)),
            Format::LabelValue => label_value_errors(bytes),
            Format::Uri => super::url::request_uri_error(value).into_iter().collect(),
            Format::Uuid => strfmt("uuid", "does not match the UUID format"),
            Format::Byte => strfmt("byte", "invalid base64"),
            Format::Date => strfmt("date", "invalid date"),
            Format::Datetime => strfmt("datetime", "invalid datetime"),
        }
    }
}

/// apimachinery's `maskTrailingDash`, for a name a suffix is added to: a trailing `-`
/// and the byte before it become `a` (Go slices bytes).
fn mask_trailing_dash(name: &[u8]) -> Vec<u8> {
    match name.strip_suffix(b"-") {
        Some(rest) if !rest.is_empty() => {
            let mut masked = rest[..rest.len() - 1].to_vec();
            masked.push(b'a');
            masked
        }
        _ => name.to_vec(),
    }
}

/// The unit of util/validation's `MaxLenError`.
const CHARACTERS: &str = "characters";
/// The unit of api/validate/content's `MaxLenError`.
const BYTES: &str = "bytes";

/// apimachinery's `MaxLenError`.
fn max_len_error(length: usize, unit: &str) -> String {
    format!("must be no more than {length} {unit}")
}

/// apimachinery's `RegexError`, with examples (as every caller here gives).
fn regex_error(message: &str, pattern: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{pattern}')",
        examples.join(" or ")
    )
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// A pattern matching all of a text (`^<pattern>$`, as apimachinery compiles it).
struct Whole(LazyLock<Option<Regex>>);

impl Whole {
    /// Whether all of `text` matches (bytes that are not UTF-8 match no class here, as
    /// in Go).
    fn matches(&self, text: &[u8]) -> bool {
        self.0.as_ref().is_some_and(|re| re.is_match(text))
    }
}

/// Compiles `^<pattern>$`: it compiles, being one of the constants above.
fn whole(pattern: &str) -> Option<Regex> {
    Regex::new(&format!("^{pattern}$")).ok()
}

static DNS1123_LABEL: Whole = Whole(LazyLock::new(|| whole(DNS1123_LABEL_FMT)));
static DNS1123_SUBDOMAIN: Whole = Whole(LazyLock::new(|| whole(DNS1123_SUBDOMAIN_FMT)));
static DNS1035_LABEL: Whole = Whole(LazyLock::new(|| whole(DNS1035_LABEL_FMT)));
static LABEL_KEY: Whole = Whole(LazyLock::new(|| whole(LABEL_KEY_FMT)));
static LABEL_VALUE: Whole = Whole(LazyLock::new(|| whole(LABEL_VALUE_FMT)));

/// util/validation's `IsDNS1123Label`.
fn dns1123_label_errors(value: &[u8]) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_error(63, CHARACTERS));
    }
    if !DNS1123_LABEL.matches(value) {
        errors.push(if DNS1123_SUBDOMAIN.matches(value) {
            "must not contain dots".to_string()
        } else {
            regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            )
        });
    }
    errors
}

/// `IsDNS1123Subdomain`, util/validation's (lengths in `characters`) or
/// api/validate/content's (in `bytes`).
fn dns1123_subdomain_errors(value: &[u8], unit: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push(max_len_error(253, unit));
    }
    if !DNS1123_SUBDOMAIN.matches(value) {
        errors.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errors
}

/// util/validation's `IsDNS1035Label`.
fn dns1035_label_errors(value: &[u8]) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_error(63, CHARACTERS));
    }
    if !DNS1035_LABEL.matches(value) {
        errors.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// api/validate/content's `IsLabelKey` (util/validation's `IsQualifiedName`): a name,
/// optionally after a DNS subdomain and `/`.
pub(crate) fn label_key_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                let prefix_errors = dns1123_subdomain_errors(prefix.as_bytes(), BYTES);
                errors.extend(
                    prefix_errors
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_ERR,
                    LABEL_KEY_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_len_error(63, BYTES)));
    }
    if !LABEL_KEY.matches(name.as_bytes()) {
        errors.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// api/validate/content's `IsLabelValue` (util/validation's `IsValidLabelValue`).
pub(crate) fn label_value_errors(value: &[u8]) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_error(63, BYTES));
    }
    if !LABEL_VALUE.matches(value) {
        errors.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    //! Expected values and texts are cel-go's (v0.29.2, with k8s.io/apiserver v0.37.2's
    //! `library.Format()`).

    use serde_json::{Value, json};

    use crate::cel_rules::{evaluate, evaluate_value};

    /// What `format.<format>().validate(value)` gives: its errors, or `None` for
    /// `optional.none()`.
    fn errors(format: &str, value: &str) -> Option<Vec<String>> {
        let call = format!("format.{format}().validate(v)");
        let v = json!(value);
        let found = evaluate_value(
            &format!("{call}.hasValue() ? {call}.value() : null"),
            &[("v", &v)],
        )
        .unwrap_or_else(|e| panic!("{call} of {value:?}: {e}"));
        match found {
            Value::Null => None,
            Value::Array(items) => Some(
                items
                    .iter()
                    .map(|i| i.as_str().unwrap_or_default().to_string())
                    .collect(),
            ),
            other => panic!("{call} of {value:?} gave {other}"),
        }
    }

    /// Checks each `(value, errors)` of `format` (`[]` for valid).
    fn check(format: &str, cases: &[(&str, &[&str])]) {
        for (value, want) in cases {
            let want = (!want.is_empty()).then(|| want.iter().map(|w| w.to_string()).collect());
            assert_eq!(errors(format, value), want, "{format} of {value:?}");
        }
    }

    const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const SUBDOMAIN: &str = r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    const KEY_NAME: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn named_gives_the_library_s_formats_and_none_for_other_names() {
        for name in [
            "dns1123Label",
            "dns1123Subdomain",
            "dns1035Label",
            "qualifiedName",
            "dns1123LabelPrefix",
            "dns1123SubdomainPrefix",
            "dns1035LabelPrefix",
            "labelValue",
            "uri",
            "uuid",
            "byte",
            "date",
            "datetime",
        ] {
            let source = format!("format.named('{name}').value() == format.{name}()");
            assert_eq!(evaluate(&source, &[]), Ok(true), "{source}");
        }
        for name in ["DNS1123Label", "dns1123-label", "ipv4", ""] {
            let source = format!("format.named('{name}').hasValue()");
            assert_eq!(evaluate(&source, &[]), Ok(false), "{source}");
        }
        assert_eq!(
            evaluate(
                "format.named('dns1123Label').value().validate('a') == optional.none()",
                &[]
            ),
            Ok(true)
        );
    }

    #[test]
    fn formats_are_equal_when_they_are_the_same_format() {
        assert_eq!(evaluate("format.uri() == format.uri()", &[]), Ok(true));
        assert_eq!(evaluate("format.uri() == format.uuid()", &[]), Ok(false));
        assert_eq!(
            evaluate("format.named('uri') == optional.of(format.uri())", &[]),
            Ok(true)
        );
    }

    #[test]
    fn dns_formats_give_util_validation_s_errors() {
        let long = "a".repeat(64);
        let dotted = format!("{}a", "a.".repeat(32));
        let long_subdomain = "a".repeat(254);
        let long_labels = format!("{}a", format!("{}.", "a".repeat(63)).repeat(4));
        check(
            "dns1123Label",
            &[
                ("my-label-name", &[]),
                ("A", &[LABEL]),
                ("-a", &[LABEL]),
                ("ab-", &[LABEL]),
                ("a_b", &[LABEL]),
                ("é", &[LABEL]),
                ("", &[LABEL]),
                ("a.b", &["must not contain dots"]),
                (&long, &["must be no more than 63 characters"]),
                (
                    &dotted,
                    &[
                        "must be no more than 63 characters",
                        "must not contain dots",
                    ],
                ),
            ],
        );
        check(
            "dns1123Subdomain",
            &[
                ("apiextensions.k8s.io", &[]),
                ("Example.com", &[SUBDOMAIN]),
                ("a..b", &[SUBDOMAIN]),
                ("a-", &[SUBDOMAIN]),
                ("", &[SUBDOMAIN]),
                (&long_subdomain, &["must be no more than 253 characters"]),
                (&long_labels, &["must be no more than 253 characters"]),
            ],
        );
        check(
            "dns1035Label",
            &[
                ("my-label-name", &[]),
                ("1abc", &[DNS1035]),
                ("A", &[DNS1035]),
                ("", &[DNS1035]),
                (&long, &["must be no more than 63 characters"]),
            ],
        );
    }

    #[test]
    fn prefix_formats_mask_a_trailing_dash_and_the_byte_before_it() {
        let long = format!("{}-", "a".repeat(64));
        let longest = format!("{}-", "a".repeat(63));
        check(
            "dns1123LabelPrefix",
            &[
                ("my-label-prefix-", &[]),
                ("ab-", &[]),
                ("a-", &[]),
                // `--` and `A-` become `a`.
                ("--", &[]),
                ("A-", &[]),
                (&longest, &[]),
                ("-", &[LABEL]),
                // Go cuts `é` in two: the byte left is no character.
                ("é-", &[LABEL]),
                ("aé-", &[LABEL]),
                (&long, &["must be no more than 63 characters"]),
            ],
        );
        check(
            "dns1123SubdomainPrefix",
            &[
                ("mysubdomain.prefix.-", &[]),
                ("a.-", &[]),
                ("a.b-", &[]),
                ("-", &[SUBDOMAIN]),
            ],
        );
        check(
            "dns1035LabelPrefix",
            &[
                ("my-label-prefix-", &[]),
                ("1-", &[]),
                ("a1-", &[]),
                ("1a", &[DNS1035]),
            ],
        );
    }

    #[test]
    fn qualified_name_and_label_value_give_content_errors_in_bytes() {
        let long = "a".repeat(64);
        let long_name = format!("x/{long}");
        let long_prefix = format!("{}/b", "a".repeat(254));
        let prefixed_subdomain = format!("prefix part {SUBDOMAIN}");
        check(
            "qualifiedName",
            &[
                ("apiextensions.k8s.io/v1beta1", &[]),
                ("MyName", &[]),
                ("a_b.c-d", &[]),
                (
                    "a/b/c",
                    &[
                        "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                    ],
                ),
                ("/a", &["prefix part must be non-empty"]),
                ("a/", &["name part must be non-empty", KEY_NAME]),
                ("", &["name part must be non-empty", KEY_NAME]),
                ("Example.com/x", &[&prefixed_subdomain]),
                ("-a", &[KEY_NAME]),
                (&long, &["name part must be no more than 63 bytes"]),
                (&long_name, &["name part must be no more than 63 bytes"]),
                (
                    &long_prefix,
                    &["prefix part must be no more than 253 bytes"],
                ),
            ],
        );
        check(
            "labelValue",
            &[
                ("", &[]),
                ("MyValue", &[]),
                ("my_value", &[]),
                (&"a".repeat(63), &[]),
                ("-a", &[LABEL_VALUE]),
                ("a b", &[LABEL_VALUE]),
                (&long, &["must be no more than 63 bytes"]),
            ],
        );
    }

    #[test]
    fn uri_gives_go_s_parse_request_uri_error() {
        check(
            "uri",
            &[
                ("http://example.com", &[]),
                ("/p", &[]),
                // ParseRequestURI reads a fragment into the query.
                ("http://x/a?q#%zz", &[]),
                ("foo", &[r#"parse "foo": invalid URI for request"#]),
                ("", &[r#"parse "": empty url"#]),
                (
                    "https://a:b:c/",
                    &[r#"parse "https://a:b:c/": invalid port ":b:c" after host"#],
                ),
            ],
        );
    }

    #[test]
    fn strfmt_formats_give_format_go_s_messages() {
        let uuid: &[&str] = &["does not match the UUID format"];
        check(
            "uuid",
            &[
                ("123e4567-e89b-12d3-a456-426614174000", &[]),
                ("123E4567E89B12D3A456426614174000", &[]),
                ("123e4567-e89b-12d3-a456-42661417400", uuid),
                ("123e4567-e89b-12d3-a456-426614174000 ", uuid),
                ("not-a-uuid", uuid),
            ],
        );
        let base64: &[&str] = &["invalid base64"];
        check(
            "byte",
            &[
                ("aGVsbG8=", &[]),
                ("aGVsbA==", &[]),
                ("aGVsbG8", base64),
                ("", base64),
                ("aGVs bG8=", base64),
                ("aGVsbG8=\n", base64),
                ("a-_b", base64),
            ],
        );
        let date: &[&str] = &["invalid date"];
        check(
            "date",
            &[
                ("2021-01-01", &[]),
                ("2020-02-29", &[]),
                ("0000-02-29", &[]),
                ("2021-02-29", date),
                ("1900-02-29", date),
                ("2021-04-31", date),
                ("2021-13-01", date),
                ("2021-00-10", date),
                ("2021-01-00", date),
                ("2021-1-01", date),
                ("21-01-01", date),
                ("2021-01-01x", date),
            ],
        );
        let datetime: &[&str] = &["invalid datetime"];
        check(
            "datetime",
            &[
                ("2021-01-01T00:00:00Z", &[]),
                ("2021-01-01t00:00:00z", &[]),
                ("2021-01-01T00:00:00.123+01:00", &[]),
                // strfmt reads what is between the first `t` and the next.
                ("2021-01-01T00:00:00Zt", &[]),
                // Any character before the fraction's digits.
                ("2021-01-01T00:00:00x5Z", &[]),
                ("2021-01-01T24:00:00Z", datetime),
                ("2021-01-01T00:00:60Z", datetime),
                ("2021-01-01T00:00:00", datetime),
                ("2021-01-01 00:00:00Z", datetime),
                ("2021-02-30T00:00:00Z", datetime),
                ("abc", datetime),
            ],
        );
    }

    #[test]
    fn the_format_namespace_leaves_the_strings_format_function_alone() {
        assert_eq!(
            evaluate_value("'%s and %d'.format(['a', 1])", &[]),
            Ok(json!("a and 1"))
        );
    }

    #[test]
    fn a_rule_can_report_the_errors_as_its_message() {
        assert_eq!(
            evaluate_value(
                "format.dns1123Label().validate('A').value().join('; ')",
                &[]
            ),
            Ok(json!(LABEL))
        );
    }
}
