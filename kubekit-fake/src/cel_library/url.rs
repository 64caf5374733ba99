//! Kubernetes' URL library (k8s.io/apiserver/pkg/cel/library/urls.go): `url(string)`,
//! `isURL(string)` and a URL's `getScheme()`, `getHost()`, `getHostname()`, `getPort()`,
//! `getEscapedPath()` and `getQuery()`, on opaque `kubernetes.URL` values.
//!
//! # Contract
//!
//! - URLs are read as Go's `net/url` reads them (Go 1.26, which kube-apiserver 1.37 is
//!   built with, with its go1.26 defaults: an `http` or `https` host may have no colon
//!   but its port's). `isURL(s)` is whether `url.ParseRequestURI` accepts `s`: an
//!   absolute URL (`scheme:opaque` included) or an absolute path. `url(s)` checks `s`
//!   the same way, then keeps what `url.Parse` reads of it, so a `#fragment` is one;
//!   either refusing it fails the evaluation with urls.go's text, `URL parse error
//!   during conversion from string: parse "<s>": <Go's reason>`.
//! - `getScheme()` is lower-cased; `getHost()` is `host[:port]` (IPv6 in brackets),
//!   `getHostname()` without the port and brackets, `getPort()` the port (empty if
//!   none); `getEscapedPath()` is Go's `EscapedPath` (the path as written when it is a
//!   valid escaping, else escaped); `getQuery()` maps each key to its values, decoded
//!   (`+` is a space), skipping pairs Go's `URL.Query` skips (a `;`, a bad escape), and
//!   is empty beyond Go's 10000 parameters. Each is empty when the URL lacks it.
//! - Two URLs are equal when Go writes them the same (`URL.String`).
//!
//! Not done: the cost estimates. Decoded text that is not UTF-8 (an escaped byte of 0x80
//! or more that starts no character, as `%ff`) is given with U+FFFD in its place, where
//! Go keeps the byte; Go's error texts quote characters by Go's Unicode tables, here by
//! the `regex` crate's, which may be a later Unicode version.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use super::{fail, go_quote_bytes, opaque, opaque_type, overloads, text};

/// The functions [`register`] declares, as a program's references name them.
pub(super) const FUNCTIONS: &[&str] = &[
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
];

/// The type name of the library's URL values, as cel-go names it.
const TYPE_NAME: &str = "kubernetes.URL";

/// Declares the library's overloads on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let url: fn() -> Type = || opaque_type(TYPE_NAME);
    overloads!(env,
        global "url" "string_to_url" (STRING_TYPE) => to_url;
        global "isURL" "is_url_string" (STRING_TYPE) => is_url;
        member "getScheme" "url_get_scheme" (url()) => get_scheme;
        member "getHost" "url_get_host" (url()) => get_host;
        member "getHostname" "url_get_hostname" (url()) => get_hostname;
        member "getPort" "url_get_port" (url()) => get_port;
        member "getEscapedPath" "url_get_escaped_path" (url()) => get_escaped_path;
        member "getQuery" "url_get_query" (url()) => get_query;
    )
}

/// Why Go's `url.ParseRequestURI` refuses `raw` (its error's text), if it does.
pub(super) fn request_uri_error(raw: &str) -> Option<String> {
    parse_request_uri(raw).err()
}

fn to_url(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let raw = text(args, 0)?;
    let refused = |why: String| {
        fail(format!(
            "URL parse error during conversion from string: {why}"
        ))
    };
    parse_request_uri(raw).map_err(refused)?;
    let url = parse_reference(raw).map_err(refused)?;
    Ok(Cel::Opaque(Arc::new(url)))
}

fn is_url(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(parse_request_uri(text(args, 0)?).is_ok()))
}

/// The URL a member overload was called on.
fn receiver(args: &[Cel]) -> Result<&Url, ExecutionError> {
    opaque::<Url>(args.first().ok_or_else(|| fail("a URL is needed"))?)
}

/// A CEL string of Go's bytes (U+FFFD for what is not UTF-8).
fn string(bytes: &[u8]) -> Cel {
    Cel::String(Arc::new(String::from_utf8_lossy(bytes).into_owned()))
}

fn get_scheme(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::String(Arc::new(receiver(args)?.scheme.clone())))
}

fn get_host(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(string(&receiver(args)?.host))
}

fn get_hostname(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(string(split_host_port(&receiver(args)?.host).0))
}

fn get_port(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(string(split_host_port(&receiver(args)?.host).1))
}

fn get_escaped_path(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::String(Arc::new(receiver(args)?.escaped_path())))
}

fn get_query(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let raw = &receiver(args)?.raw_query;
    let mut query: HashMap<String, Vec<Cel>> = HashMap::new();
    // Go's `ParseQuery` refuses more parameters, and `URL.Query` gives no values then.
    if raw.matches('&').count() < MAX_QUERY_PARAMS {
        for pair in raw.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(key), Ok(value)) = (
                unescape(key.as_bytes(), Mode::QueryComponent),
                unescape(value.as_bytes(), Mode::QueryComponent),
            ) else {
                continue;
            };
            query
                .entry(String::from_utf8_lossy(&key).into_owned())
                .or_default()
                .push(string(&value));
        }
    }
    let query: HashMap<String, Cel> = query
        .into_iter()
        .map(|(k, values)| (k, Cel::List(Arc::new(values))))
        .collect();
    Ok(Cel::from(query))
}

/// The most query parameters Go's `ParseQuery` reads (its `urlmaxqueryparams` default).
const MAX_QUERY_PARAMS: usize = 10000;

/// A URL as Go's `url.URL` holds it: the decoded parts as bytes (decoding may give bytes
/// that are not UTF-8), the others as written.
#[derive(Debug, Default)]
struct Url {
    scheme: String,
    opaque: String,
    /// The user name and, if there is one (even empty), the password.
    user: Option<(Vec<u8>, Option<Vec<u8>>)>,
    host: Vec<u8>,
    path: Vec<u8>,
    raw_path: String,
    force_query: bool,
    raw_query: String,
    fragment: Vec<u8>,
    raw_fragment: String,
    omit_host: bool,
}

impl PartialEq for Url {
    /// As urls.go compares them: by their `URL.String`.
    fn eq(&self, other: &Self) -> bool {
        self.go_string() == other.go_string()
    }
}

impl Eq for Url {}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

impl Url {
    /// Go's `URL.EscapedPath`: the path as written when that is a valid escaping of it,
    /// else the path escaped.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(self.raw_path.as_bytes(), Mode::Path)
            && unescape(self.raw_path.as_bytes(), Mode::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == b"*" {
            return "*".to_string();
        }
        escape(&self.path, Mode::Path)
    }

    /// Go's `URL.EscapedFragment`, as [`Url::escaped_path`] for the fragment.
    fn escaped_fragment(&self) -> String {
        if !self.raw_fragment.is_empty()
            && valid_encoded(self.raw_fragment.as_bytes(), Mode::Fragment)
            && unescape(self.raw_fragment.as_bytes(), Mode::Fragment)
                .is_ok_and(|f| f == self.fragment)
        {
            return self.raw_fragment.clone();
        }
        escape(&self.fragment, Mode::Fragment)
    }

    /// Go's `URL.String`.
    fn go_string(&self) -> String {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            let authority = !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some();
            let omitted = self.omit_host && self.host.is_empty() && self.user.is_none();
            if authority && !omitted {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    out.push_str("//");
                }
                if let Some((name, password)) = &self.user {
                    out.push_str(&escape(name, Mode::UserPassword));
                    if let Some(password) = password {
                        out.push(':');
                        out.push_str(&escape(password, Mode::UserPassword));
                    }
                    out.push('@');
                }
                out.push_str(&escape(&self.host, Mode::Host));
            }
            let path = self.escaped_path();
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() && path.split('/').next().is_some_and(|s| s.contains(':')) {
                out.push_str("./");
            }
            out.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&self.escaped_fragment());
        }
        out
    }

    /// Go's `URL.setPath`: the path decoded, and as written when Go would write it
    /// otherwise.
    fn set_path(&mut self, written: &str) -> Result<(), String> {
        self.path = unescape(written.as_bytes(), Mode::Path)?;
        self.raw_path = if escape(&self.path, Mode::Path) == written {
            String::new()
        } else {
            written.to_string()
        };
        Ok(())
    }

    /// Go's `URL.setFragment`, as [`Url::set_path`] for the fragment.
    fn set_fragment(&mut self, written: &str) -> Result<(), String> {
        self.fragment = unescape(written.as_bytes(), Mode::Fragment)?;
        self.raw_fragment = if escape(&self.fragment, Mode::Fragment) == written {
            String::new()
        } else {
            written.to_string()
        };
        Ok(())
    }
}

/// Go's `url.ParseRequestURI`: `raw` as an absolute URL or an absolute path, or Go's
/// `*url.Error` text.
fn parse_request_uri(raw: &str) -> Result<Url, String> {
    parse(raw, true).map_err(|why| url_error(raw, &why))
}

/// Go's `url.Parse`: `raw` as a URL reference, with a `#fragment`.
fn parse_reference(raw: &str) -> Result<Url, String> {
    let (reference, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse(reference, false).map_err(|why| url_error(reference, &why))?;
    if !fragment.is_empty() {
        url.set_fragment(fragment)
            .map_err(|why| url_error(raw, &why))?;
    }
    Ok(url)
}

/// A Go `*url.Error` of the `parse` operation, as its `Error()` writes it.
fn url_error(raw: &str, why: &str) -> String {
    format!("parse {}: {why}", go_quote_bytes(raw.as_bytes()))
}

/// Go's `url.parse`: a request's URL (absolute URL or absolute path) when `via_request`,
/// else any reference (without its fragment).
fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = b"*".to_vec();
        return Ok(url);
    }
    let (scheme, mut rest) = split_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        url.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        rest = before;
        url.raw_query = query.to_string();
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // A rootless path is opaque.
            url.opaque = rest.to_string();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        if rest.split('/').next().is_some_and(|s| s.contains(':')) {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
        && rest.starts_with("//")
    {
        let authority = &rest[2..];
        let (authority, path) = authority.split_at(authority.find('/').unwrap_or(authority.len()));
        rest = path;
        let (user, host) = parse_authority(&url.scheme, authority)?;
        url.user = user;
        url.host = host;
    } else if !url.scheme.is_empty() && rest.starts_with('/') {
        url.omit_host = true;
    }
    url.set_path(rest)?;
    Ok(url)
}

/// Go's `getScheme`: the scheme (`[a-zA-Z][a-zA-Z0-9+.-]*` before a colon) and the rest,
/// or no scheme and all of `raw`.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// A user name and its optional password, decoded.
type User = (Vec<u8>, Option<Vec<u8>>);

/// Go's `parseAuthority`: the user information (before the last `@`) and the host.
fn parse_authority(scheme: &str, authority: &str) -> Result<(Option<User>, Vec<u8>), String> {
    let at = authority.rfind('@');
    let host = parse_host(scheme, at.map_or(authority, |i| &authority[i + 1..]))?;
    let Some(at) = at else {
        return Ok((None, host));
    };
    let info = &authority[..at];
    if !valid_userinfo(info) {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match info.split_once(':') {
        None => (unescape(info.as_bytes(), Mode::UserPassword)?, None),
        Some((name, password)) => (
            unescape(name.as_bytes(), Mode::UserPassword)?,
            Some(unescape(password.as_bytes(), Mode::UserPassword)?),
        ),
    };
    Ok((Some(user), host))
}

/// Go's `validUserinfo`: RFC 3986's userinfo characters, `%` and `@`.
fn valid_userinfo(info: &str) -> bool {
    info.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    })
}

/// Go's `parseHost`: `host[:port]`, an IPv6 address (with an optional zone) in brackets,
/// decoded.
fn parse_host(scheme: &str, host: &str) -> Result<Vec<u8>, String> {
    match host.rfind('[') {
        Some(open) if open > 0 => Err("invalid IP-literal".into()),
        Some(_) => {
            let close = host.rfind(']').ok_or("missing ']' in host")?;
            let colon_port = &host[close + 1..];
            if !valid_optional_port(colon_port.as_bytes()) {
                return Err(format!(
                    "invalid port {} after host",
                    go_quote_bytes(colon_port.as_bytes())
                ));
            }
            let colon_port = unescape(colon_port.as_bytes(), Mode::Host)?;
            let name = &host[1..close];
            // `%25` starts a zone, which may escape more than a host.
            let mut address = match name.find("%25") {
                Some(zone) => {
                    let mut address = unescape(&name.as_bytes()[..zone], Mode::Host)?;
                    address.extend(unescape(&name.as_bytes()[zone..], Mode::Zone)?);
                    address
                }
                None => unescape(name.as_bytes(), Mode::Host)?,
            };
            let (ip, _) =
                super::net::parse_addr(&address).map_err(|why| format!("invalid host: {why}"))?;
            if ip.is_ipv4() {
                return Err("invalid IP-literal".into());
            }
            address.insert(0, b'[');
            address.push(b']');
            address.extend(colon_port);
            Ok(address)
        }
        None => {
            if let Some(first) = host.find(':') {
                // A second colon is refused in an http(s) host, where the first is the
                // port's; elsewhere the last one is.
                let last = host.rfind(':').unwrap_or(first);
                let colon = if scheme == "http" || scheme == "https" {
                    first
                } else {
                    last
                };
                let colon_port = &host[colon..];
                if !valid_optional_port(colon_port.as_bytes()) {
                    return Err(format!(
                        "invalid port {} after host",
                        go_quote_bytes(colon_port.as_bytes())
                    ));
                }
            }
            unescape(host.as_bytes(), Mode::Host)
        }
    }
}

/// Go's `validOptionalPort`: empty, or a colon and digits.
fn valid_optional_port(port: &[u8]) -> bool {
    match port.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    }
}

/// Go's `splitHostPort`: the host without a valid port and without brackets, and the
/// port.
fn split_host_port(host_port: &[u8]) -> (&[u8], &[u8]) {
    let (mut host, mut port): (&[u8], &[u8]) = (host_port, &[]);
    if let Some(colon) = host.iter().rposition(|&b| b == b':')
        && valid_optional_port(&host[colon..])
    {
        (host, port) = (&host_port[..colon], &host_port[colon + 1..]);
    }
    if let Some(inner) = host.strip_prefix(b"[").and_then(|h| h.strip_suffix(b"]")) {
        host = inner;
    }
    (host, port)
}

/// The part of a URL text is escaped or decoded for (Go's `encoding` modes).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`: whether `c` is escaped in `mode`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return c == b'?',
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            Mode::Host | Mode::Zone => {}
        },
        _ => {}
    }
    !(mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*'))
}

/// Go's `escape` (for every mode but the query's, which is never escaped here).
fn escape(bytes: &[u8], mode: Mode) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(bytes.len());
    for &c in bytes {
        if should_escape(c, mode) {
            out.push('%');
            out.push(char::from(HEX[usize::from(c >> 4)]));
            out.push(char::from(HEX[usize::from(c & 15)]));
        } else {
            out.push(char::from(c));
        }
    }
    out
}

/// Go's `validEncoded`: whether `text` has no byte `mode` escapes but sub-delimiters,
/// `:`, `@`, brackets and `%`.
fn valid_encoded(text: &[u8], mode: Mode) -> bool {
    text.iter().all(|&c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, mode)
    })
}

/// The value of a hexadecimal digit.
fn unhex(c: u8) -> Option<u8> {
    char::from(c)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Go's `unescape`: `text` with its `%XX` escapes decoded (and `+` as a space in a query
/// component), or Go's error for a bad escape or a host's character.
fn unescape(text: &[u8], mode: Mode) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while let Some(&c) = text.get(i) {
        match c {
            b'%' => {
                let (Some(high), Some(low)) = (
                    text.get(i + 1).copied().and_then(unhex),
                    text.get(i + 2).copied().and_then(unhex),
                ) else {
                    let bad = &text[i..text.len().min(i + 3)];
                    return Err(format!("invalid URL escape {}", go_quote_bytes(bad)));
                };
                let escaped = &text[i..i + 3];
                let byte = high << 4 | low;
                // A host escapes only bytes that are not ASCII (and `%25`, a zone's `%`);
                // a zone no byte a host could not have written (or a space).
                let refused = match mode {
                    Mode::Host => high < 8 && escaped != b"%25",
                    Mode::Zone => {
                        escaped != b"%25" && byte != b' ' && should_escape(byte, Mode::Host)
                    }
                    _ => false,
                };
                if refused {
                    return Err(format!("invalid URL escape {}", go_quote_bytes(escaped)));
                }
                out.push(byte);
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote_bytes(&[c])
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    //! Expected values and texts are cel-go's (v0.29.2, with k8s.io/apiserver v0.37.2's
    //! `library.URLs()`, built with Go 1.26 and `godebug default=go1.26` as
    //! kube-apiserver 1.37.2 is).

    use serde_json::{Value, json};

    use crate::cel_rules::{evaluate, evaluate_value};

    fn value(source: &str) -> Value {
        evaluate_value(source, &[]).unwrap_or_else(|e| panic!("{source}: {e}"))
    }

    /// The text the evaluation error of `source` carries (what a rule's fault reports).
    fn error(source: &str) -> String {
        let program = crate::cel_rules::compile(source).unwrap_or_else(|e| panic!("{source}: {e}"));
        let mut env = cel::Env::stdlib();
        env.add_extension(crate::cel_library::register)
            .unwrap_or_else(|e| panic!("{e:?}"));
        match program.execute(&cel::Context::with_env(std::sync::Arc::new(env))) {
            Err(e) => crate::cel_library::message(&e),
            Ok(v) => panic!("{source}: no error but {v:?}"),
        }
    }

    /// urls.go's refusal of `raw`.
    fn refused(raw: &str, why: &str) -> String {
        format!("URL parse error during conversion from string: parse {raw}: {why}")
    }

    #[test]
    fn is_url_accepts_absolute_urls_and_absolute_paths_only() {
        for (url, want) in [
            (
                "https://user:pass@example.com:80/path?query=val#fragment",
                true,
            ),
            ("/absolute-path", true),
            ("*", true),
            ("mailto:someone@example.com", true),
            ("http://[::1]:80/", true),
            ("http://[fe80::1%25en0]/", true),
            // The fragment is part of the query for ParseRequestURI.
            ("http://x/a?q#%zz", true),
            ("https://a:b:c/", false),
            ("redis://a:b:c/", false),
            ("../relative-path", false),
            ("", false),
            ("http://[1.2.3.4]/", false),
        ] {
            assert_eq!(evaluate(&format!("isURL('{url}')"), &[]), Ok(want), "{url}");
        }
    }

    #[test]
    fn url_refusals_fail_with_go_parse_errors() {
        for (url, why) in [
            (r#""https://a:b:c/""#, r#"invalid port ":b:c" after host"#),
            (r#""HTTP://a:b:c/""#, r#"invalid port ":b:c" after host"#),
            (r#""redis://a:b:c/""#, r#"invalid port ":c" after host"#),
            (r#""http://a@b:c/""#, r#"invalid port ":c" after host"#),
            (r#""http://x:port/""#, r#"invalid port ":port" after host"#),
            (r#""../relative-path""#, "invalid URI for request"),
            (r#""%""#, "invalid URI for request"),
            (r#""""#, "empty url"),
            (r#"":foo""#, "missing protocol scheme"),
            (r#""http://x/a?q#%zz""#, r#"invalid URL escape "%zz""#),
            (r#""http://x/%e""#, r#"invalid URL escape "%e""#),
            (r#""http://%41/""#, r#"invalid URL escape "%41""#),
            (r#""http://a b/""#, r#"invalid character " " in host name"#),
            (r#""http://us er@x/""#, "net/url: invalid userinfo"),
            (r#""http://[::1/""#, "missing ']' in host"),
            (r#""http://a[b]/""#, "invalid IP-literal"),
            (r#""http://[1.2.3.4]/""#, "invalid IP-literal"),
            (r#""http://[::1]x/""#, r#"invalid port "x" after host"#),
            (r#""http://[fe80::1%]/""#, r#"invalid URL escape "%""#),
            (r#""http://[::1%25%0a]/""#, r#"invalid URL escape "%0a""#),
            (
                r#""http://x/a\tb""#,
                "net/url: invalid control character in URL",
            ),
        ] {
            let source = format!("url('{}') == url('/')", &url[1..url.len() - 1]);
            assert_eq!(error(&source), refused(url, why), "{source}");
        }
    }

    #[test]
    fn bracketed_hosts_must_be_ipv6_addresses_as_netip_parses_them() {
        for (host, why) in [
            (
                "fe80::1%25",
                r#"ParseAddr("fe80::1%"): zone must be a non-empty string"#,
            ),
            (
                "12345::1",
                r#"ParseAddr("12345::1"): each group must have 4 or less digits (at "12345::1")"#,
            ),
            (
                "1:2:3:4:5:6:7:8:9",
                r#"ParseAddr("1:2:3:4:5:6:7:8:9"): trailing garbage after address (at "9")"#,
            ),
            ("::1.2.3", r#"ParseAddr("::1.2.3"): IPv4 address too short"#),
            (
                "::1.2.3.4.5",
                r#"ParseAddr("::1.2.3.4.5"): IPv4 address too long"#,
            ),
            (
                "::01.2.3.4",
                r#"ParseAddr("::01.2.3.4"): IPv4 field has octet with leading zero"#,
            ),
            (
                "::256.2.3.4",
                r#"ParseAddr("::256.2.3.4"): IPv4 field has value >255"#,
            ),
            (
                "::1..2.3",
                r#"ParseAddr("::1..2.3"): IPv4 field must have at least one digit (at ".2.3")"#,
            ),
            (
                "::1.2.3.x",
                r#"ParseAddr("::1.2.3.x"): unexpected character (at "x")"#,
            ),
            (
                "1:2:3:4:5:6:7:1.2.3.4",
                r#"ParseAddr("1:2:3:4:5:6:7:1.2.3.4"): embedded IPv4 address must replace the final 2 fields of the address (at "1.2.3.4")"#,
            ),
            (
                "1:2:3:4:5:6:1.2.3.4:5",
                r#"ParseAddr("1:2:3:4:5:6:1.2.3.4:5"): unexpected character (at ":5")"#,
            ),
            (
                "1::2::3",
                r#"ParseAddr("1::2::3"): multiple :: in address (at ":3")"#,
            ),
            (
                "g::1",
                r#"ParseAddr("g::1"): each colon-separated field must have at least one digit (at "g::1")"#,
            ),
            (
                "1:",
                r#"ParseAddr("1:"): colon must be followed by more characters (at ":")"#,
            ),
            (
                "1:2:3:4:5:6:7",
                r#"ParseAddr("1:2:3:4:5:6:7"): address string too short"#,
            ),
            (
                "1:2:3:4:5:6:7:8::",
                r#"ParseAddr("1:2:3:4:5:6:7:8::"): the :: must expand to at least one field of zeros"#,
            ),
            ("1", r#"ParseAddr("1"): unable to parse IP"#),
            ("", r#"ParseAddr(""): unable to parse IP"#),
        ] {
            let url = format!("http://[{host}]/");
            assert_eq!(
                error(&format!("url('{url}') == url('/')")),
                refused(&format!("\"{url}\""), &format!("invalid host: {why}")),
                "{host}"
            );
        }
        assert_eq!(
            value("url('http://[::ffff:1.2.3.4]/').getHostname()"),
            "::ffff:1.2.3.4"
        );
    }

    #[test]
    fn error_texts_quote_the_url_as_go_does() {
        // Characters Go does not print as \u, bytes that are not UTF-8 as \x.
        assert_eq!(
            error("url('\\u200b') == url('/')"),
            refused(r#""\u200b""#, "invalid URI for request")
        );
        assert_eq!(
            error("url('http://x/a\\u200bb\\u00a0c\\x01') == url('/')"),
            refused(
                r#""http://x/a\u200bb\u00a0c\x01""#,
                "net/url: invalid control character in URL"
            )
        );
        assert_eq!(
            error("url('http://[%ff::1]/') == url('/')"),
            refused(
                r#""http://[%ff::1]/""#,
                r#"invalid host: ParseAddr("\xff::1"): each colon-separated field must have at least one digit (at "\xff::1")"#
            )
        );
        assert_eq!(
            error("url('http://[%c3%a9::1]/') == url('/')"),
            refused(
                r#""http://[%c3%a9::1]/""#,
                r#"invalid host: ParseAddr("é::1"): each colon-separated field must have at least one digit (at "é::1")"#
            )
        );
    }

    #[test]
    fn getters_give_the_scheme_host_hostname_and_port() {
        for (source, want) in [
            ("url('/path').getScheme()", ""),
            ("url('HTTPS://example.com/').getScheme()", "https"),
            ("url('mailto:someone@example.com').getScheme()", "mailto"),
            ("url('https://example.com:80/').getHost()", "example.com:80"),
            ("url('https://[::1]:80/').getHost()", "[::1]:80"),
            ("url('https://[::1]/').getHost()", "[::1]"),
            (
                "url('https://[fe80::1%25en0]:80/').getHost()",
                "[fe80::1%en0]:80",
            ),
            ("url('https://u:p@example.com/').getHost()", "example.com"),
            ("url('http://a:b@c@d/').getHost()", "d"),
            ("url('HTTP://X/').getHost()", "X"),
            ("url('http://é/').getHost()", "é"),
            ("url('/path').getHost()", ""),
            ("url('mailto:someone@example.com').getHost()", ""),
            // Not a host for ParseRequestURI, but one for Parse.
            ("url('//host/path').getHost()", "host"),
            (
                "url('https://example.com:80/').getHostname()",
                "example.com",
            ),
            ("url('https://127.0.0.1:80/').getHostname()", "127.0.0.1"),
            ("url('https://[::1]:80/').getHostname()", "::1"),
            (
                "url('https://[fe80::1%25en0]:80/').getHostname()",
                "fe80::1%en0",
            ),
            ("url('https://example.com:/').getHostname()", "example.com"),
            ("url('redis://a:b:7/').getHostname()", "a:b"),
            ("url('/path').getHostname()", ""),
            ("url('https://example.com:80/').getPort()", "80"),
            ("url('http://[::1]:80/x?y#z').getPort()", "80"),
            ("url('redis://a:b:7/').getPort()", "7"),
            ("url('https://example.com/').getPort()", ""),
            ("url('https://example.com:/').getPort()", ""),
            ("url('/path').getPort()", ""),
        ] {
            assert_eq!(value(source), want, "{source}");
        }
    }

    #[test]
    fn get_escaped_path_keeps_a_valid_escaping_else_escapes_the_path() {
        for (source, want) in [
            ("url('https://example.com/path').getEscapedPath()", "/path"),
            (
                "url('https://example.com/path with spaces/').getEscapedPath()",
                "/path%20with%20spaces/",
            ),
            ("url('https://example.com').getEscapedPath()", ""),
            (
                "url('https://example.com/a%2fb').getEscapedPath()",
                "/a%2fb",
            ),
            (
                "url('https://example.com/a%2Fb#c').getEscapedPath()",
                "/a%2Fb",
            ),
            (
                "url('https://example.com/a%41b').getEscapedPath()",
                "/a%41b",
            ),
            ("url('https://example.com/é').getEscapedPath()", "/%C3%A9"),
            (
                "url('https://example.com/a%20b?x').getEscapedPath()",
                "/a%20b",
            ),
            ("url('https://example.com/a#b c').getEscapedPath()", "/a"),
            ("url('http://x/%ff').getEscapedPath()", "/%ff"),
            (r#"url('http://x/"a"\\b').getEscapedPath()"#, "/%22a%22%5Cb"),
            ("url('x:/a b').getEscapedPath()", "/a%20b"),
            ("url('http:///path').getEscapedPath()", "/path"),
            ("url('mailto:someone@example.com').getEscapedPath()", ""),
            ("url('*').getEscapedPath()", "*"),
        ] {
            assert_eq!(value(source), want, "{source}");
        }
    }

    #[test]
    fn get_query_decodes_each_key_s_values_skipping_pairs_go_skips() {
        for (source, want) in [
            (
                "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()",
                json!({"k1": ["a"], "k2": ["b", "c"]}),
            ),
            (
                "url('https://example.com/path?key with spaces=value with spaces').getQuery()",
                json!({"key with spaces": ["value with spaces"]}),
            ),
            (
                "url('https://example.com/path?a=1;b=2&c=%zz&d=%41+x&e&=f&g=h=i&&').getQuery()",
                json!({"": ["f"], "d": ["A x"], "e": [""], "g": ["h=i"]}),
            ),
            (
                "url('https://example.com/path?a=1#b=2').getQuery()",
                json!({"a": ["1"]}),
            ),
            (
                "url('mailto:someone@example.com?x=1').getQuery()",
                json!({"x": ["1"]}),
            ),
            ("url('/a?b?c').getQuery()", json!({"b?c": [""]})),
            ("url('/a?b?').getQuery()", json!({"b?": [""]})),
            ("url('https://example.com/path?').getQuery()", json!({})),
            ("url('https://example.com/path').getQuery()", json!({})),
        ] {
            assert_eq!(value(source), want, "{source}");
        }
        // At most 10000 parameters, else none.
        let many = |n: usize| format!("url('http://x/?{}b').getQuery()", "a&".repeat(n));
        assert_eq!(value(&format!("{}['a'].size()", many(9999))), 9999);
        assert_eq!(value(&format!("{}.size()", many(10000))), 0);
    }

    #[test]
    fn urls_are_equal_when_go_writes_them_the_same() {
        for (source, want) in [
            (
                "url('https://example.com/') == url('https://example.com/')",
                true,
            ),
            (
                "url('https://example.com/') == url('https://example.com')",
                false,
            ),
            ("url('http://u@x/') == url('http://%75@x/')", true),
            (
                "url('https://example.com/a%2fb') == url('https://example.com/a/b')",
                false,
            ),
            ("url('http://x/a#%41') == url('http://x/a#A')", false),
            ("url('http://x/a?#') == url('http://x/a?')", true),
            ("url('/a') == url('/a#')", true),
            (
                "url('http://x/\\u00ad\\U000E0001\\u0378') == url('http://x/%C2%AD%F3%A0%80%81%CD%B8')",
                true,
            ),
        ] {
            assert_eq!(evaluate(source, &[]), Ok(want), "{source}");
        }
    }

    #[test]
    fn decoded_bytes_that_are_not_utf8_are_replacement_characters() {
        // Go gives the bytes themselves ("\xff"); a CEL string here is UTF-8.
        assert_eq!(value("url('http://%ff/').getHost()"), "\u{fffd}");
        assert_eq!(
            value("url('http://x/?a=%ff').getQuery()"),
            json!({"a": ["\u{fffd}"]})
        );
    }
}
