//! Name validation as the API server does it (apimachinery's `util/validation`): what an
//! object's name must be, with the server's messages, so a controller can check a name it
//! makes up before it sends it.
//!
//! Each function returns every fault of the value, empty when it is valid.
//!
//! ```
//! use kubekit::validation::{dns1035_label, dns1123_subdomain};
//!
//! assert!(dns1123_subdomain("web-1.example").is_empty());
//! assert!(dns1035_label("1st").iter().any(|e| e.contains("start with an alphabetic")));
//! ```

/// The longest DNS-1123 subdomain (an object's name, a label key's prefix).
pub const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;
/// The longest DNS-1123 or DNS-1035 label (a Namespace's name, a Service's).
pub const DNS_LABEL_MAX_LEN: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `RegexError`: `msg`, its examples and the regex (spaced as there:
/// `(e.g. 'a',  or 'b', regex used …)`).
pub(crate) fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{re}')",
        examples.join(" or ")
    )
}

/// A string as Go's `%q` prints it: how the API server shows a bad value in a field error
/// (`metadata.name: Invalid value: "Bad_Name": …`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Lowercase alphanumerics and `-` between an alphanumeric first and last character.
fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// Dot-separated DNS-1123 labels.
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(is_dns1123_label)
}

/// The subdomain message of a value that is not one, as a label key's prefix reports it.
pub(crate) fn dns1123_subdomain_regex_error() -> String {
    regex_error(
        DNS1123_SUBDOMAIN_ERR,
        DNS1123_SUBDOMAIN_FMT,
        &["example.com"],
    )
}

fn max_len_error(len: usize) -> String {
    format!("must be no more than {len} characters")
}

/// apimachinery's `IsDNS1123Subdomain`: the name of most objects.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LEN {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LEN));
    }
    if !is_dns1123_subdomain(value) {
        errs.push(dns1123_subdomain_regex_error());
    }
    errs
}

/// apimachinery's `IsDNS1123Label`: a Namespace's name.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS_LABEL_MAX_LEN {
        errs.push(max_len_error(DNS_LABEL_MAX_LEN));
    }
    if !is_dns1123_label(value) {
        if is_dns1123_subdomain(value) {
            errs.push("must not contain dots".into());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// apimachinery's `IsDNS1035Label`: a Service's name.
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS_LABEL_MAX_LEN {
        errs.push(max_len_error(DNS_LABEL_MAX_LEN));
    }
    if !(is_dns1123_label(value) && value.as_bytes()[0].is_ascii_lowercase()) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "abc-123"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_with_the_servers_messages() {
        assert!(dns1123_subdomain("a.b-c.d1").is_empty());
        assert_eq!(
            dns1123_subdomain("Bad_Name"),
            [
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            dns1123_subdomain(&"a".repeat(254)),
            ["must be no more than 253 characters"]
        );
        assert_eq!(dns1123_label("a.b"), ["must not contain dots"]);
        assert!(dns1123_label("1-a").is_empty());
        assert!(dns1035_label("a-1").is_empty());
        assert_eq!(dns1035_label("1a").len(), 1);
        assert_eq!(dns1035_label(&format!("{}_", "a".repeat(63))).len(), 2);
        assert_eq!(dns1035_label("").len(), 1);
    }

    #[test]
    fn values_are_quoted_as_go_quotes_them() {
        assert_eq!(quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
    }
}
