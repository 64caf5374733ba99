//! The string `format`s of a CRD's structural schema, checked as kube-apiserver 1.37
//! checks them (kube-openapi's `strfmt` registry, limited to the formats
//! apiextensions-apiserver supports; a format name is compared without its dashes, as
//! go-openapi normalises it, so `date-time` is `datetime`):
//!
//! - `date` (`2006-01-02`, a day of that month), `date-time` (such a date, `T` or `t`,
//!   `hh:mm:ss`, a fraction, `Z` or an offset), `uuid`, `uuid3`, `uuid4`, `uuid5` (dashes
//!   optional, any case), `ipv4` (leading zeros allowed; an IPv6 address with a dot, such
//!   as `::ffff:1.2.3.4`, passes too), `ipv6`, `cidr`, `hostname` (RFC 1034 labels,
//!   Unicode letters and symbols allowed, at most 255 bytes, labels at most 63), `mac`
//!   (6, 8 or 20 octets: `:`- or `-`-separated pairs, `.`-separated quads, or bare hex),
//!   `byte` (padded standard base64), `hexcolor`, `rgbcolor`, `ssn`, `k8s-short-name`
//!   (a lower-case DNS label), `k8s-long-name` (a lower-case DNS subdomain of at most 253
//!   characters), `password` (anything);
//! - not checked (accepted as the real server may refuse them): `bsonobjectid`, `uri`,
//!   `email`, `duration`, `isbn`, `isbn10`, `isbn13`, `creditcard`. Formats the real
//!   server does not support are ignored there as here.

use std::net::Ipv6Addr;
use std::sync::LazyLock;

use regex::Regex;

/// Whether `text` is of `format`; `true` for a format not checked.
pub(crate) fn valid(format: &str, text: &str) -> bool {
    let format = format.replace('-', "");
    match format.as_str() {
        "date" => is_date(text),
        "datetime" => is_date_time(text),
        "ipv4" => sloppy_ip(text).is_some() && text.contains('.'),
        "ipv6" => text.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(text),
        "hostname" => {
            matches("hostname", text) && text.len() <= 255 && text.split('.').all(|p| p.len() <= 63)
        }
        "mac" => is_mac(text.as_bytes()),
        "ssn" => text.len() == 11 && matches("ssn", text),
        "k8sshortname" => text.len() <= 63 && matches("k8sshortname", text),
        "k8slongname" => text.len() <= 253 && matches("k8slongname", text),
        pattern_only
        @ ("uuid" | "uuid3" | "uuid4" | "uuid5" | "byte" | "hexcolor" | "rgbcolor") => {
            matches(pattern_only, text)
        }
        _ => true,
    }
}

/// The patterns of the formats checked by a pattern (some with more checks in
/// [`valid`]), and of a date-time's time (`time`), as strfmt writes them.
const PATTERN_TEXTS: &[(&str, &str)] = &[
    (
        "uuid",
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    ),
    (
        "uuid3",
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    ),
    (
        "uuid4",
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    ),
    (
        "uuid5",
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    ),
    (
        "byte",
        "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$",
    ),
    ("hexcolor", "^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"),
    (
        "rgbcolor",
        r"^rgb\(\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*,\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*,\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*\)$",
    ),
    ("ssn", "^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"),
    ("k8sshortname", "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"),
    (
        "k8slongname",
        r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    ),
    (
        "hostname",
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    ),
    (
        "time",
        r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$",
    ),
];

/// [`PATTERN_TEXTS`], compiled (a pattern that does not compile matches nothing).
static PATTERNS: LazyLock<Vec<(&str, Option<Regex>)>> = LazyLock::new(|| {
    PATTERN_TEXTS
        .iter()
        .map(|(name, pattern)| (*name, Regex::new(pattern).ok()))
        .collect()
});

/// The compiled pattern of `name`.
/// Where Go's `base64.StdEncoding.Decode` finds `src` corrupt (its `CorruptInputError`,
/// the byte offset it reports), or `None` when it decodes: what Go's JSON decoder says of
/// a `[]byte` field such as a Secret's data. Newlines are skipped, as Go skips them.
pub(crate) fn go_base64_error(src: &[u8]) -> Option<usize> {
    let alphabet = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let skip_newlines = |mut si: usize| {
        while si < src.len() && newline(src[si]) {
            si += 1;
        }
        si
    };
    let mut si = 0;
    loop {
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                // A quantum cut short: fine only at its start.
                return (j != 0).then_some(si - j);
            }
            let c = src[si];
            si += 1;
            if alphabet(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(si - 1);
            }
            // Padding: `==` after two characters, `=` after three, then only newlines.
            if j == 2 {
                si = skip_newlines(si);
                if si == src.len() {
                    return Some(src.len());
                }
                if src[si] != b'=' {
                    return Some(si - 1);
                }
                si += 1;
            }
            si = skip_newlines(si);
            return (si < src.len()).then_some(si);
        }
    }
}

fn pattern(name: &str) -> Option<&'static Regex> {
    PATTERNS
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, re)| re.as_ref())
}

/// Whether `text` matches the pattern of `name`.
fn matches(name: &str, text: &str) -> bool {
    pattern(name).is_some_and(|re| re.is_match(text))
}

/// A full date, `2006-01-02`, of a day the month has (Go's `time.Parse`).
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// A date-time as strfmt's `IsDateTime` reads it: lower-cased, split at `t`, a date, then
/// a time whose hours, minutes and seconds are in range.
fn is_date_time(text: &str) -> bool {
    if text.len() < 4 {
        return false;
    }
    let lower = text.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(time) = pattern("time").and_then(|re| re.captures(parts[1])) else {
        return false;
    };
    let at = |i: usize| time.get(i).map_or("", |m| m.as_str());
    at(1) <= "23" && at(2) <= "59" && at(3) <= "59"
}

/// The address `text` names as k8s.io/utils' `ParseIPSloppy` reads it (IPv4 parts may
/// have leading zeros), with its length in bytes: 4 or 16.
fn sloppy_ip(text: &str) -> Option<usize> {
    if text.contains(':') {
        return text.parse::<Ipv6Addr>().ok().map(|_| 16);
    }
    let parts: Vec<&str> = text.split('.').collect();
    let octet = |p: &&str| {
        !p.is_empty()
            && p.bytes().all(|c| c.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| n <= 255)
    };
    (parts.len() == 4 && parts.iter().all(octet)).then_some(4)
}

/// A CIDR as `ParseCIDRSloppy` reads it: an address, `/`, a prefix length in range.
fn is_cidr(text: &str) -> bool {
    let Some((address, prefix)) = text.split_once('/') else {
        return false;
    };
    let Some(bytes) = sloppy_ip(address) else {
        return false;
    };
    !prefix.is_empty()
        && prefix.bytes().all(|c| c.is_ascii_digit())
        && prefix.parse::<usize>().is_ok_and(|n| n <= bytes * 8)
}

/// A hardware address as Go's `net.ParseMAC` reads it.
fn is_mac(s: &[u8]) -> bool {
    let hex = |pair: &[u8]| pair.len() == 2 && pair.iter().all(u8::is_ascii_hexdigit);
    let octets_ok = |n: usize| matches!(n, 6 | 8 | 20);
    if s.len() < 12 {
        return false;
    }
    if s[2] == b':' || s[2] == b'-' {
        let sep = s[2];
        (s.len() + 1).is_multiple_of(3)
            && octets_ok((s.len() + 1) / 3)
            && s.chunks(3)
                .all(|c| hex(&c[..2]) && (c.len() == 2 || c[2] == sep))
    } else if s[4] == b'.' {
        (s.len() + 1).is_multiple_of(5)
            && octets_ok(2 * (s.len() + 1) / 5)
            && s.chunks(5).all(|c| {
                c.len() >= 4 && hex(&c[..2]) && hex(&c[2..4]) && (c.len() == 4 || c[4] == b'.')
            })
    } else {
        s.len().is_multiple_of(2) && octets_ok(s.len() / 2) && s.chunks(2).all(hex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_errors_are_at_the_offsets_go_reports() {
        for (text, at) in [
            ("aGk=", None),
            ("aGVsbG8=\n", None),
            ("aG==", None),
            ("", None),
            ("not base64!", Some(3)),
            ("aGk", Some(0)),
            ("a===", Some(1)),
            ("aG=", Some(3)),
            ("aG=x", Some(2)),
            ("aGk=x", Some(4)),
        ] {
            assert_eq!(go_base64_error(text.as_bytes()), at, "{text:?}");
        }
    }

    #[test]
    fn formats_accept_and_refuse_as_strfmt_does() {
        for (format, good, bad) in [
            ("date-time", "2024-02-29T10:20:30Z", "2024-01-01T10:00:00"),
            ("date", "2024-02-29", "2023-02-29"),
            ("ipv4", "010.0.0.1", "1.2.3"),
            ("ipv6", "::ffff:1.2.3.4", "fe80::1%eth0"),
            ("cidr", "2001:db8::/32", "10.0.0.0/33"),
            ("hostname", "example.com", "under_score.com"),
            ("mac", "001a.2b3c.4d5e", "00:1a:2b:3c:4d"),
            ("byte", "aGk=", ""),
            ("k8s-long-name", "a.b-c", "a."),
            ("not-a-format", "x", "x"),
        ] {
            assert!(valid(format, good), "{format} {good}");
            assert!(
                valid(format, bad) == (format == "not-a-format"),
                "{format} {bad}"
            );
        }
    }

    #[test]
    fn every_pattern_compiles_and_a_time_is_no_format() {
        assert!(PATTERNS.iter().all(|(_, re)| re.is_some()));
        assert!(valid("time", "not a time"));
    }

    #[test]
    fn odd_strings_are_no_panic() {
        for text in [
            "",
            "t",
            "é",
            "ttttt",
            "ab:",
            "a.b.c.d/",
            "/",
            "::::",
            "\u{1F600}x.y",
        ] {
            for format in [
                "date-time",
                "date",
                "ipv4",
                "cidr",
                "mac",
                "hostname",
                "uuid",
            ] {
                let _ = valid(format, text);
            }
        }
    }
}
