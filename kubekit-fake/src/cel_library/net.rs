//! Kubernetes' IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library's ip.go and
//! cidr.go): `ip(s)`, `isIP(s)`, `ip.isCanonical(s)`, `ip.family()`,
//! `ip.isUnspecified()`, `isLoopback()`, `isLinkLocalMulticast()`, `isLinkLocalUnicast()`,
//! `isGlobalUnicast()`, `cidr(s)`, `isCIDR(s)`, `cidr.containsIP(ip or string)`,
//! `containsCIDR(cidr or string)`, `ip()`, `prefixLength()`, `masked()`, and `string(ip)`
//! / `string(cidr)`.
//!
//! Addresses parse as Go's `netip.ParseAddr` parses them, with its error texts: no leading
//! zeros in IPv4 octets, IPv6 with `::` and an embedded IPv4 tail; a zone or an
//! IPv4-mapped IPv6 address is refused as the library refuses it. Addresses print as Go
//! prints them (RFC 5952 for IPv6). Two IPs are equal when their addresses are, two CIDRs
//! when their addresses and prefix lengths are.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use super::{fail, go_quote, go_quote_bytes, opaque, opaque_type, overloads, text};

/// The functions [`register`] declares (`ip.isCanonical` as `isCanonical`).
pub(super) const FUNCTIONS: &[&str] = &[
    "ip",
    "isIP",
    "isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "prefixLength",
    "masked",
];

/// The type name of [`Ip`] values.
const IP: &str = "net.IP";
/// The type name of [`Cidr`] values.
const CIDR: &str = "net.CIDR";

fn ip_type() -> Type {
    opaque_type(IP)
}

fn cidr_type() -> Type {
    opaque_type(CIDR)
}

/// Declares the library's overloads on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    overloads!(env,
        global "ip" "string_to_ip" (STRING_TYPE) => to_ip;
        global "isIP" "is_ip" (STRING_TYPE) => is_ip;
        global "ip.isCanonical" "ip_is_canonical" (STRING_TYPE) => is_canonical;
        global "string" "ip_to_string" (ip_type()) => ip_string;
        member "family" "ip_family" (ip_type()) => family;
        member "isUnspecified" "ip_is_unspecified" (ip_type()) => is_unspecified;
        member "isLoopback" "ip_is_loopback" (ip_type()) => is_loopback;
        member "isLinkLocalMulticast" "ip_is_link_local_multicast" (ip_type()) => is_link_local_multicast;
        member "isLinkLocalUnicast" "ip_is_link_local_unicast" (ip_type()) => is_link_local_unicast;
        member "isGlobalUnicast" "ip_is_global_unicast" (ip_type()) => is_global_unicast;
        global "cidr" "string_to_cidr" (STRING_TYPE) => to_cidr;
        global "isCIDR" "is_cidr" (STRING_TYPE) => is_cidr;
        global "string" "cidr_to_string" (cidr_type()) => cidr_string;
        member "containsIP" "cidr_contains_ip_string" (cidr_type(), STRING_TYPE) => contains_ip;
        member "containsIP" "cidr_contains_ip_ip" (cidr_type(), ip_type()) => contains_ip;
        member "containsCIDR" "cidr_contains_cidr_string" (cidr_type(), STRING_TYPE) => contains_cidr;
        member "containsCIDR" "cidr_contains_cidr" (cidr_type(), cidr_type()) => contains_cidr;
        member "ip" "cidr_ip" (cidr_type()) => cidr_ip;
        member "prefixLength" "cidr_prefix_length" (cidr_type()) => prefix_length;
        member "masked" "cidr_masked" (cidr_type()) => masked;
    )
}

/// An `ip(...)` value.
#[derive(Debug, PartialEq, Eq)]
struct Ip(IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP
    }
}

/// A `cidr(...)` value: an address and a prefix length within its size.
#[derive(Debug, PartialEq, Eq)]
struct Cidr(IpAddr, u8);

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR
    }
}

fn ip_value(ip: IpAddr) -> Cel {
    Cel::Opaque(Arc::new(Ip(ip)))
}

fn cidr_value(cidr: Cidr) -> Cel {
    Cel::Opaque(Arc::new(cidr))
}

/// A Go `netip.ParseAddr` error: `ParseAddr("<in>"): <msg>[ (at "<at>")]`.
fn addr_error(input: &[u8], msg: &str, at: &[u8]) -> String {
    let mut text = format!("ParseAddr({}): {msg}", go_quote_bytes(input));
    if !at.is_empty() {
        text.push_str(&format!(" (at {})", go_quote_bytes(at)));
    }
    text
}

/// `address` as Go's `netip.ParseAddr` reads it: the address and its zone (empty when
/// none), or its error text. Bytes, as a URL's unescaped host may hold any.
pub(super) fn parse_addr(address: &[u8]) -> Result<(IpAddr, &[u8]), String> {
    for &c in address {
        match c {
            b'.' => return parse_v4(address, address).map(|ip| (IpAddr::V4(ip), &b""[..])),
            b':' => return parse_v6(address).map(|(ip, zone)| (IpAddr::V6(ip), zone)),
            b'%' => return Err(addr_error(address, "missing IPv6 address", b"")),
            _ => {}
        }
    }
    Err(addr_error(address, "unable to parse IP", b""))
}

/// The IPv4 address `s` (part of `input`, for the error texts), as Go's
/// `parseIPv4Fields` reads it.
fn parse_v4(input: &[u8], s: &[u8]) -> Result<Ipv4Addr, String> {
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for (i, &c) in s.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 1 && val == 0 {
                let msg = "IPv4 field has octet with leading zero";
                return Err(addr_error(input, msg, b""));
            }
            val = val * 10 + u32::from(c - b'0');
            digits += 1;
            if val > 255 {
                return Err(addr_error(input, "IPv4 field has value >255", b""));
            }
        } else if c == b'.' {
            if i == 0 || i == s.len() - 1 || s[i - 1] == b'.' {
                let msg = "IPv4 field must have at least one digit";
                return Err(addr_error(input, msg, &s[i..]));
            }
            if pos == 3 {
                return Err(addr_error(input, "IPv4 address too long", b""));
            }
            fields[pos] = val as u8;
            (pos, val, digits) = (pos + 1, 0, 0);
        } else {
            return Err(addr_error(input, "unexpected character", &s[i..]));
        }
    }
    if pos < 3 {
        return Err(addr_error(input, "IPv4 address too short", b""));
    }
    fields[3] = val as u8;
    Ok(Ipv4Addr::from(fields))
}

/// The IPv6 address `input` and its zone, as Go's `parseIPv6` reads them.
fn parse_v6(input: &[u8]) -> Result<(Ipv6Addr, &[u8]), String> {
    let err = |msg: &str, at: &[u8]| Err(addr_error(input, msg, at));
    let (mut s, zone): (&[u8], &[u8]) = match input.iter().position(|&c| c == b'%') {
        Some(i) if i + 1 == input.len() => return err("zone must be a non-empty string", b""),
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, b""),
    };
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if let Some(rest) = s.strip_prefix(b"::") {
        ellipsis = Some(0);
        s = rest;
        if s.is_empty() {
            return Ok((Ipv6Addr::UNSPECIFIED, zone));
        }
    }
    let mut i = 0;
    while i < 16 {
        let mut off = 0;
        let mut acc = 0u32;
        while let Some(digit) = s.get(off).and_then(|&c| char::from(c).to_digit(16)) {
            acc = (acc << 4) + digit;
            if off > 3 {
                return err("each group must have 4 or less digits", s);
            }
            if acc > u32::from(u16::MAX) {
                return err("IPv6 field has value >=2^16", s);
            }
            off += 1;
        }
        if off == 0 {
            return err("each colon-separated field must have at least one digit", s);
        }
        if s.get(off) == Some(&b'.') {
            if ellipsis.is_none() && i != 12 {
                let msg = "embedded IPv4 address must replace the final 2 fields of the address";
                return err(msg, s);
            }
            if i + 4 > 16 {
                let msg = "too many hex fields to fit an embedded IPv4 at the end of the address";
                return err(msg, s);
            }
            ip[i..i + 4].copy_from_slice(&parse_v4(input, s)?.octets());
            s = b"";
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' {
            return err("unexpected character, want colon", s);
        } else if s.len() == 1 {
            return err("colon must be followed by more characters", s);
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return err("multiple :: in address", s);
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return err("trailing garbage after address", s);
    }
    match ellipsis {
        Some(at) if i < 16 => {
            let n = 16 - i;
            ip.copy_within(at..i, at + n);
            ip[at..at + n].fill(0);
        }
        None if i < 16 => return err("address string too short", b""),
        Some(_) => return err("the :: must expand to at least one field of zeros", b""),
        None => {}
    }
    Ok((Ipv6Addr::from(ip), zone))
}

/// `raw` as the library's `parseIPAddr` takes it: no zone, no IPv4-mapped IPv6.
fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    let (ip, zone) = parse_addr(raw.as_bytes()).map_err(|e| {
        format!(
            "IP Address {} parse error during conversion from string: {e}",
            go_quote(raw)
        )
    })?;
    if !zone.is_empty() {
        return Err(format!(
            "IP address {} with zone value is not allowed",
            go_quote(raw)
        ));
    }
    if is_4in6(&ip) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(ip)
}

fn is_4in6(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// `raw` as the library's `parseCIDR` takes it (Go's `netip.ParsePrefix`).
fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let prefix_error = |msg: &str| {
        format!(
            "network address parse error during conversion from string: netip.ParsePrefix({}): {msg}",
            go_quote(raw)
        )
    };
    let Some((addr, bits)) = raw.rsplit_once('/') else {
        return Err(prefix_error("no '/'"));
    };
    let (ip, zone) = parse_addr(addr.as_bytes()).map_err(|e| prefix_error(&e))?;
    if ip.is_ipv6() && !zone.is_empty() {
        return Err(prefix_error("IPv6 zones cannot be present in a prefix"));
    }
    let bad_bits = || prefix_error(&format!("bad bits after slash: {}", go_quote(bits)));
    if bits.len() > 1 && !matches!(bits.as_bytes()[0], b'1'..=b'9') {
        return Err(bad_bits());
    }
    // Go's Atoi takes a sign; the check above leaves only a lone "+" or "-" to refuse.
    let bits: i64 = bits.parse().map_err(|_| bad_bits())?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let Some(bits) = u8::try_from(bits).ok().filter(|b| *b <= max) else {
        return Err(prefix_error("prefix length out of range"));
    };
    if is_4in6(&ip) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(Cidr(ip, bits))
}

fn to_ip(args: &[Cel]) -> Result<Cel, ExecutionError> {
    parse_ip(text(args, 0)?).map(ip_value).map_err(fail)
}

fn is_ip(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(parse_ip(text(args, 0)?).is_ok()))
}

fn is_canonical(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let raw = text(args, 0)?;
    let ip = parse_ip(raw).map_err(fail)?;
    Ok(Cel::Bool(ip.to_string() == raw))
}

/// The [`Ip`] receiver of a member function.
fn this_ip(args: &[Cel]) -> Result<IpAddr, ExecutionError> {
    let value = args.first().ok_or_else(|| fail("an IP is needed"))?;
    opaque::<Ip>(value).map(|ip| ip.0)
}

/// The [`Cidr`] receiver of a member function.
fn this_cidr(args: &[Cel]) -> Result<&Cidr, ExecutionError> {
    opaque::<Cidr>(args.first().ok_or_else(|| fail("a CIDR is needed"))?)
}

fn ip_string(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::String(Arc::new(this_ip(args)?.to_string())))
}

fn family(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Int(if this_ip(args)?.is_ipv4() { 4 } else { 6 }))
}

fn is_unspecified(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(this_ip(args)?.is_unspecified()))
}

fn is_loopback(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(this_ip(args)?.is_loopback()))
}

fn is_link_local_multicast(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(link_local_multicast(this_ip(args)?)))
}

/// 224.0.0.0/24 and ff02::/16 (with any flags), as Go's `IsLinkLocalMulticast`.
fn link_local_multicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => matches!(v4.octets(), [224, 0, 0, _]),
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn is_link_local_unicast(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(link_local_unicast(this_ip(args)?)))
}

/// 169.254.0.0/16 and fe80::/10, as Go's `IsLinkLocalUnicast`.
fn link_local_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => matches!(v4.octets(), [169, 254, _, _]),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_global_unicast(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let ip = this_ip(args)?;
    let broadcast = ip == IpAddr::V4(Ipv4Addr::BROADCAST);
    Ok(Cel::Bool(
        !ip.is_unspecified()
            && !broadcast
            && !ip.is_loopback()
            && !ip.is_multicast()
            && !link_local_unicast(ip),
    ))
}

fn to_cidr(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let raw = text(args, 0)?;
    parse_cidr(raw).map(cidr_value).map_err(|e| {
        fail(format!(
            "network address parse error during conversion from string: {e}"
        ))
    })
}

fn is_cidr(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(parse_cidr(text(args, 0)?).is_ok()))
}

fn cidr_string(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let Cidr(ip, bits) = this_cidr(args)?;
    Ok(Cel::String(Arc::new(format!("{ip}/{bits}"))))
}

/// `ip` with every bit after the first `bits` cleared.
fn mask(ip: IpAddr, bits: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let keep = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & keep))
        }
        IpAddr::V6(v6) => {
            let keep = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & keep))
        }
    }
}

/// Whether `cidr` holds `ip` (of the same family), as Go's `Prefix.Contains`.
fn holds(cidr: &Cidr, ip: IpAddr) -> bool {
    ip.is_ipv4() == cidr.0.is_ipv4() && mask(ip, cidr.1) == mask(cidr.0, cidr.1)
}

fn contains_ip(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let cidr = this_cidr(args)?;
    let ip = match args.get(1) {
        Some(Cel::String(raw)) => parse_ip(raw).map_err(fail)?,
        Some(other) => opaque::<Ip>(other)?.0,
        None => return Err(fail("an IP is needed")),
    };
    Ok(Cel::Bool(holds(cidr, ip)))
}

fn contains_cidr(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let cidr = this_cidr(args)?;
    let parsed;
    let other = match args.get(1) {
        Some(Cel::String(raw)) => {
            parsed = parse_cidr(raw).map_err(|e| {
                fail(format!(
                    "network address parse error during conversion from string: {e}"
                ))
            })?;
            &parsed
        }
        Some(other) => opaque::<Cidr>(other)?,
        None => return Err(fail("a CIDR is needed")),
    };
    // Go: the prefixes overlap and the receiver's is no longer.
    let overlap = other.0.is_ipv4() == cidr.0.is_ipv4()
        && mask(cidr.0, cidr.1.min(other.1)) == mask(other.0, cidr.1.min(other.1));
    Ok(Cel::Bool(overlap && cidr.1 <= other.1))
}

fn cidr_ip(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(ip_value(this_cidr(args)?.0))
}

fn prefix_length(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Int(i64::from(this_cidr(args)?.1)))
}

fn masked(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let Cidr(ip, bits) = this_cidr(args)?;
    Ok(cidr_value(Cidr(mask(*ip, *bits), *bits)))
}

#[cfg(test)]
mod tests {
    use crate::cel_rules::evaluate_value;
    use serde_json::{Value, json};

    fn eval(source: &str) -> Result<Value, String> {
        evaluate_value(source, &[])
    }

    #[test]
    fn ips_parse_as_go_netip_with_its_error_texts() {
        for (source, want) in [
            ("isIP('192.168.0.1')", json!(true)),
            ("isIP('2001:db8::68')", json!(true)),
            ("isIP('::1.2.3.4')", json!(true)),
            ("isIP('010.0.0.1')", json!(false)),
            ("isIP('fe80::1%eth0')", json!(false)),
            ("isIP('::ffff:1.2.3.4')", json!(false)),
            ("string(ip('2001:DB8:0:0:0::1'))", json!("2001:db8::1")),
            ("string(ip('::1.2.3.4'))", json!("::102:304")),
            ("ip.isCanonical('2001:db8::1')", json!(true)),
            ("ip.isCanonical('2001:DB8::1')", json!(false)),
            ("ip('10.0.0.1') == ip('10.0.0.1')", json!(true)),
            ("ip('10.0.0.1').family()", json!(4)),
            ("ip('::1').family()", json!(6)),
        ] {
            assert_eq!(eval(source), Ok(want), "{source}");
        }
        for (source, want) in [
            (
                "ip('1.2.3')",
                r#"IP Address "1.2.3" parse error during conversion from string: ParseAddr("1.2.3"): IPv4 address too short"#,
            ),
            (
                "ip('1.02.3.4')",
                r#"ParseAddr("1.02.3.4"): IPv4 field has octet with leading zero"#,
            ),
            ("ip('nope')", r#"ParseAddr("nope"): unable to parse IP"#),
            (
                "ip('1::2::3')",
                r#"ParseAddr("1::2::3"): multiple :: in address (at ":3")"#,
            ),
            (
                "ip('fe80::1%eth0')",
                r#"IP address "fe80::1%eth0" with zone value is not allowed"#,
            ),
            (
                "ip('::ffff:1.2.3.4')",
                r#"IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed"#,
            ),
        ] {
            let got = eval(source).expect_err(source);
            assert!(got.ends_with(want), "{source}: {got}");
        }
    }

    #[test]
    fn ip_predicates_follow_go_netip() {
        for (source, want) in [
            ("ip('0.0.0.0').isUnspecified()", true),
            ("ip('::').isUnspecified()", true),
            ("ip('127.0.0.5').isLoopback()", true),
            ("ip('::1').isLoopback()", true),
            ("ip('224.0.0.9').isLinkLocalMulticast()", true),
            ("ip('ff12::2').isLinkLocalMulticast()", true),
            ("ip('ff05::2').isLinkLocalMulticast()", false),
            ("ip('169.254.1.1').isLinkLocalUnicast()", true),
            ("ip('fe80::1').isLinkLocalUnicast()", true),
            ("ip('10.0.0.1').isGlobalUnicast()", true),
            ("ip('255.255.255.255').isGlobalUnicast()", false),
            ("ip('239.1.1.1').isGlobalUnicast()", false),
        ] {
            assert_eq!(eval(source), Ok(json!(want)), "{source}");
        }
    }

    #[test]
    fn cidrs_contain_addresses_and_narrower_cidrs_of_their_family() {
        for (source, want) in [
            ("cidr('10.0.0.0/8').containsIP('10.1.2.3')", json!(true)),
            (
                "cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))",
                json!(false),
            ),
            ("cidr('::/0').containsIP('10.0.0.1')", json!(false)),
            (
                "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')",
                json!(true),
            ),
            (
                "cidr('10.1.0.0/16').containsCIDR(cidr('10.0.0.0/8'))",
                json!(false),
            ),
            ("cidr('10.0.0.0/8').containsCIDR('10.0.0.0/8')", json!(true)),
            ("cidr('192.168.1.5/24').prefixLength()", json!(24)),
            (
                "string(cidr('192.168.1.5/24').masked())",
                json!("192.168.1.0/24"),
            ),
            ("string(cidr('2001:db8::1/32').ip())", json!("2001:db8::1")),
            ("cidr('10.0.0.0/8') == cidr('10.0.0.0/8')", json!(true)),
            ("cidr('10.0.0.0/8') == cidr('10.0.0.0/9')", json!(false)),
            ("isCIDR('10.0.0.0/33')", json!(false)),
            ("isCIDR('10.0.0.0/08')", json!(false)),
            ("isCIDR('10.0.0.0')", json!(false)),
            ("isCIDR('::ffff:1.2.3.4/96')", json!(false)),
        ] {
            assert_eq!(eval(source), Ok(want), "{source}");
        }
        let got = eval("cidr('10.0.0.0/33')").expect_err("out of range");
        let want = r#"network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range"#;
        assert!(got.ends_with(want), "{got}");
    }
}
