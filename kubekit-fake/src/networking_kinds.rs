//! Checks of `networking.k8s.io` and `discovery.k8s.io` kinds as kube-apiserver 1.37
//! makes them (`pkg/apis/networking/validation`, `pkg/apis/discovery/validation`), with
//! its fields, reasons and messages, in its order; Ingresses' rules and NetworkPolicies'
//! ports are in `kinds`.
//!
//! # Contract
//!
//! - **Ingresses**: rules or a default backend; each backend a service (a DNS label, a
//!   port of a name or a number, not both) or a resource, not both; hosts (and TLS hosts)
//!   DNS subdomains or `*.` wildcards of one; rules with HTTP paths; a class name that
//!   is a DNS subdomain.
//! - **NetworkPolicies**: each peer of a pod selector, a namespace selector or an IP block
//!   (alone); IP blocks of a CIDR with exceptions strictly inside it; ports of a known
//!   protocol, a number or a port name, end ports only after a lower numeric port; known
//!   policy types; pod selectors of valid label keys.
//! - **IngressClasses**: a controller (a domain-prefixed path, never changed); parameters
//!   of a kind and a name, in the scope `Cluster` (the default, without a namespace) or
//!   `Namespace` (with one).
//! - **IPAddresses**: named by an IP in its canonical form, with a parent of a resource
//!   and a name, never changed. **ServiceCIDRs**: one or two CIDRs, one per family, each
//!   with no bits set beyond its prefix.
//! - **EndpointSlices**: an address type (`IPv4`, `IPv6`, `FQDN`, never changed);
//!   endpoints with addresses of that type, DNS-label hostnames, DNS-subdomain node names;
//!   ports of unique DNS-label names and known protocols.

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::core_kinds::{PROTOCOLS, endpoint_ip_errors, port_errors};
use crate::kinds::{
    Fault, duplicate, forbidden, immutable_declared, invalid, invalid_as, not_supported, required,
};

/// The faults of a `networking.k8s.io` or `discovery.k8s.io` object of `kind`, named
/// `name`, being created (`old` is `None`) or replacing `old`.
pub(crate) fn faults(kind: &str, name: &str, obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    match kind {
        "IngressClass" => ingress_class(&obj["spec"], old.map(|o| &o["spec"])),
        "IPAddress" => ip_address(name, obj, old),
        "ServiceCIDR" => service_cidr(&obj["spec"]),
        "EndpointSlice" => endpoint_slice(obj, old),
        _ => Vec::new(),
    }
}

/// Fills the defaults of `obj`, of `kind`: an IngressClass's parameters' scope, an
/// Ingress's empty load balancer status.
pub(crate) fn defaults(kind: &str, obj: &mut Value) {
    match kind {
        "IngressClass" => {
            let params = obj.pointer_mut("/spec/parameters");
            if let Some(params) = params.filter(|p| p.is_object())
                && params["scope"].is_null()
            {
                params["scope"] = json!("Cluster");
            }
        }
        "Ingress" if obj["status"].is_null() => obj["status"] = json!({"loadBalancer": {}}),
        "EndpointSlice" => {
            let endpoints = obj.get_mut("endpoints").and_then(Value::as_array_mut);
            for endpoint in endpoints.into_iter().flatten() {
                if endpoint.is_object() && endpoint["conditions"].is_null() {
                    endpoint["conditions"] = json!({});
                }
            }
        }
        _ => {}
    }
}

/// apimachinery's `IsValidPortName`.
pub(crate) fn port_name_errors(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 15 {
        errors.push("must be no more than 15 characters".to_string());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errors
            .push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errors.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errors.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errors.push("must not begin or end with a hyphen".into());
    }
    errors
}

/// The faults of an Ingress backend at `at`.
pub(crate) fn ingress_backend(backend: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let empty = Value::from("");
    let (service, resource) = (&backend["service"], &backend["resource"]);
    match (service.is_object(), resource.is_object()) {
        (true, true) => {
            faults.push(invalid(
                at,
                &empty,
                "cannot set both resource and service backends",
            ));
        }
        (false, true) => {}
        (true, false) => {
            match service["name"].as_str().unwrap_or_default() {
                "" => faults.push(required(&format!("{at}.service.name"), "")),
                name => {
                    for why in kubekit::validation::dns1123_label(name) {
                        faults.push(invalid(
                            format!("{at}.service.name"),
                            &service["name"],
                            &why,
                        ));
                    }
                }
            }
            let port = &service["port"];
            let name = port["name"].as_str().unwrap_or_default();
            let number = port["number"].as_i64().unwrap_or(0);
            match (name.is_empty(), number == 0) {
                (false, false) => {
                    faults.push(invalid(
                        at,
                        &empty,
                        "cannot set both port name & port number",
                    ));
                }
                (false, true) => {
                    for why in port_name_errors(name) {
                        faults.push(invalid(
                            format!("{at}.service.port.name"),
                            &port["name"],
                            &why,
                        ));
                    }
                }
                (true, false) => {
                    for why in port_errors(&port["number"]) {
                        faults.push(invalid(
                            format!("{at}.service.port.number"),
                            &port["number"],
                            &why,
                        ));
                    }
                }
                (true, true) => faults.push(required(at, "port name or number is required")),
            }
        }
        (false, false) => faults.push(invalid(
            at,
            &empty,
            "resource or service backend is required",
        )),
    }
    faults
}

/// apimachinery's `IsWildcardDNS1123Subdomain`.
fn wildcard_errors(host: &str) -> Vec<String> {
    let valid = host
        .strip_prefix("*.")
        .is_some_and(|rest| kubekit::validation::dns1123_subdomain(rest).is_empty());
    let mut errors = Vec::new();
    if host.len() > 253 {
        errors.push("must be no more than 253 characters".into());
    }
    if !valid {
        errors.push(r"a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into());
    }
    errors
}

/// The faults of a host of an Ingress rule or TLS entry.
pub(crate) fn host_errors(host: &str) -> Vec<String> {
    match host.contains('*') {
        true => wildcard_errors(host),
        false => kubekit::validation::dns1123_subdomain(host),
    }
}

/// The faults of an Ingress's spec that are not its rules' paths: before them, the
/// default backend; after them, TLS hosts and the class name.
pub(crate) fn ingress_spec_before_rules(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let no_rules = spec["rules"].as_array().is_none_or(Vec::is_empty);
    if no_rules && spec["defaultBackend"].is_null() {
        let shown = crate::defaults::go_json(&spec["rules"]);
        faults.push(invalid_as(
            "spec",
            &shown,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if spec["defaultBackend"].is_object() {
        faults.extend(ingress_backend(
            &spec["defaultBackend"],
            "spec.defaultBackend",
        ));
    }
    faults
}

/// See [`ingress_spec_before_rules`].
pub(crate) fn ingress_spec_after_rules(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    for (i, tls) in spec["tls"].as_array().into_iter().flatten().enumerate() {
        for (j, host) in tls["hosts"].as_array().into_iter().flatten().enumerate() {
            for why in host_errors(host.as_str().unwrap_or_default()) {
                faults.push(invalid(format!("spec.tls[{i}].hosts[{j}]"), host, &why));
            }
        }
    }
    if let Some(class) = spec["ingressClassName"].as_str() {
        for why in kubekit::validation::dns1123_subdomain(class) {
            faults.push(invalid(
                "spec.ingressClassName",
                &spec["ingressClassName"],
                &why,
            ));
        }
    }
    faults
}

/// A CIDR `text` as (address, prefix length), if it is one.
pub(crate) fn parse_cidr(text: &str) -> Option<(IpAddr, u8)> {
    let (ip, bits) = text.split_once('/')?;
    let ip: IpAddr = ip.parse().ok()?;
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((ip, bits))
}

/// `ip` as a number of 128 bits (an IPv4 address in the low 32), and its width.
fn ip_bits(ip: IpAddr) -> (u128, u8) {
    match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => (u128::from(v6), 128),
    }
}

/// The network of `ip`/`bits`: its address with the host bits cleared.
fn network(ip: IpAddr, bits: u8) -> u128 {
    let (n, width) = ip_bits(ip);
    let host = u32::from(width - bits);
    match host {
        128.. => 0,
        h => n >> h << h,
    }
}

const CIDR_ERROR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// The faults of a NetworkPolicy peer at `at`.
pub(crate) fn network_policy_peer(peer: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let block = &peer["ipBlock"];
    let count = ["podSelector", "namespaceSelector", "ipBlock"]
        .iter()
        .filter(|f| peer[**f].is_object())
        .count();
    if count == 0 {
        faults.push(required(at, "must specify a peer"));
    } else if block.is_object() && count > 1 {
        faults.push(forbidden(
            at,
            "may not specify both ipBlock and another peer",
        ));
    }
    for selector in ["podSelector", "namespaceSelector"] {
        faults.extend(crate::selectors::label_selector_faults(
            &peer[selector],
            &format!("{at}.{selector}"),
        ));
    }
    if !block.is_object() {
        return faults;
    }
    let cidr_text = block["cidr"].as_str().unwrap_or_default();
    if cidr_text.is_empty() {
        faults.push(required(&format!("{at}.ipBlock.cidr"), ""));
        return faults;
    }
    let Some((ip, bits)) = parse_cidr(cidr_text) else {
        faults.push(invalid(
            format!("{at}.ipBlock.cidr"),
            &block["cidr"],
            CIDR_ERROR,
        ));
        return faults;
    };
    for (i, except) in block["except"].as_array().into_iter().flatten().enumerate() {
        let field = format!("{at}.ipBlock.except[{i}]");
        let Some((e_ip, e_bits)) = parse_cidr(except.as_str().unwrap_or_default()) else {
            faults.push(invalid(field, except, CIDR_ERROR));
            continue;
        };
        let inside = e_ip.is_ipv4() == ip.is_ipv4()
            && e_bits > bits
            && network(e_ip, bits) == network(ip, bits);
        if !inside {
            faults.push(invalid(field, except, "must be a strict subset of `cidr`"));
        }
    }
    faults
}

/// The faults of a NetworkPolicy port at `at`.
pub(crate) fn network_policy_port(port: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let protocol = &port["protocol"];
    if protocol.as_str().is_some_and(|p| !PROTOCOLS.contains(&p)) {
        faults.push(not_supported(
            &format!("{at}.protocol"),
            protocol,
            &["TCP", "UDP", "SCTP"],
        ));
    }
    let (number, end) = (&port["port"], &port["endPort"]);
    match number {
        Value::Number(_) => {
            for why in port_errors(number) {
                faults.push(invalid(format!("{at}.port"), number, &why));
            }
        }
        Value::String(name) => {
            for why in port_name_errors(name) {
                faults.push(invalid(format!("{at}.port"), number, &why));
            }
        }
        _ => {}
    }
    if end.is_null() {
        return faults;
    }
    let field = format!("{at}.endPort");
    match number {
        Value::Null => {
            faults.push(invalid(
                field,
                end,
                "may not be specified when `port` is not specified",
            ));
        }
        Value::String(_) => {
            faults.push(invalid(
                field,
                end,
                "may not be specified when `port` is non-numeric",
            ));
        }
        _ if end.as_i64() < number.as_i64() => {
            faults.push(invalid(
                field,
                end,
                "must be greater than or equal to `port`",
            ));
        }
        _ => {}
    }
    faults
}

fn ingress_class(spec: &Value, old: Option<&Value>) -> Vec<Fault> {
    let mut faults = Vec::new();
    let controller = &spec["controller"];
    if let Some(old) = old
        && old["controller"] != *controller
    {
        faults.extend(crate::kinds::immutable("spec.controller", controller));
    }
    match controller.as_str().unwrap_or_default() {
        "" => faults.push(required("spec.controller", "")),
        c => {
            let prefixed = c.split_once('/').is_some_and(|(domain, path)| {
                kubekit::validation::dns1123_subdomain(domain).is_empty() && !path.is_empty()
            });
            if !prefixed {
                let why = "must be a domain-prefixed path (such as \"acme.io/foo\")";
                faults.push(invalid("spec.controller", controller, why));
            }
        }
    }
    let params = &spec["parameters"];
    if !params.is_object() {
        return faults;
    }
    let at = "spec.parameters";
    for field in ["kind", "name"] {
        if params[field].as_str().is_none_or(str::is_empty) {
            faults.push(required(&format!("{at}.{field}"), ""));
        }
    }
    match params["scope"].as_str() {
        None => faults.push(required(&format!("{at}.scope"), "")),
        Some("Namespace") if params["namespace"].is_null() => faults.push(required(
            &format!("{at}.namespace"),
            "`parameters.scope` is set to 'Namespace'",
        )),
        Some("Cluster") if !params["namespace"].is_null() => faults.push(forbidden(
            &format!("{at}.namespace"),
            "`parameters.scope` is set to 'Cluster'",
        )),
        Some("Namespace" | "Cluster") => {}
        Some(_) => faults.push(not_supported(
            &format!("{at}.scope"),
            &params["scope"],
            &["Cluster", "Namespace"],
        )),
    }
    faults
}

fn ip_address(name: &str, obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    let mut faults = Vec::new();
    let shown = Value::from(name);
    match name.parse::<IpAddr>() {
        Err(_) => faults.push(invalid(
            "metadata.name",
            &shown,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )),
        Ok(ip) if ip.to_string() != name => {
            let why = format!("must be in canonical form ({:?})", ip.to_string());
            faults.push(invalid("metadata.name", &shown, &why));
        }
        Ok(_) => {}
    }
    let parent = &obj["spec"]["parentRef"];
    if !parent.is_object() {
        faults.push(required("spec.parentRef", ""));
    } else {
        for field in ["resource", "name"] {
            if parent[field].as_str().is_none_or(str::is_empty) {
                faults.push(required(&format!("spec.parentRef.{field}"), ""));
            }
        }
    }
    if let Some(old) = old
        && old["spec"]["parentRef"] != *parent
    {
        faults.push(immutable_declared("spec.parentRef"));
    }
    faults
}

fn service_cidr(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let cidrs = spec["cidrs"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    match cidrs.len() {
        0 => faults.push(required("spec.cidrs", "at least one CIDR required")),
        1 | 2 => {}
        _ => {
            let shown = format!("{{\"CIDRs\":{}}}", crate::defaults::go_json(&spec["cidrs"]));
            faults.push(invalid_as(
                "spec.cidrs",
                &shown,
                "may only hold up to 2 values",
            ));
            return faults;
        }
    }
    let mut families = Vec::new();
    for (i, cidr) in cidrs.iter().enumerate() {
        let field = format!("spec.cidrs[{i}]");
        match parse_cidr(cidr.as_str().unwrap_or_default()) {
            None => faults.push(invalid(field, cidr, CIDR_ERROR)),
            Some((ip, bits)) => {
                if network(ip, bits) != ip_bits(ip).0 {
                    faults.push(invalid(
                        field,
                        cidr,
                        "must not have bits set beyond the prefix length",
                    ));
                }
                families.push(ip.is_ipv4());
            }
        }
    }
    if families.len() == 2 && families[0] == families[1] {
        let shown = crate::defaults::go_json(&spec["cidrs"]);
        let why = "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64";
        faults.push(invalid_as("spec.cidrs", &shown, why));
    }
    faults
}

fn endpoint_slice(obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    let mut faults = Vec::new();
    let kind = &obj["addressType"];
    let kinds = ["FQDN", "IPv4", "IPv6"];
    match kind.as_str() {
        None | Some("") => faults.push(required("addressType", "")),
        Some(k) if !kinds.contains(&k) => faults.push(not_supported("addressType", kind, &kinds)),
        Some(_) => {}
    }
    let mut names = Vec::new();
    for (i, port) in obj["ports"].as_array().into_iter().flatten().enumerate() {
        let at = format!("ports[{i}]");
        let name = port["name"].as_str().unwrap_or_default();
        if !name.is_empty() {
            for why in kubekit::validation::dns1123_label(name) {
                faults.push(invalid(format!("{at}.name"), &port["name"], &why));
            }
        }
        if names.contains(&name) {
            faults.push(duplicate(&format!("{at}.name"), &port["name"]));
        }
        names.push(name);
        let protocol = &port["protocol"];
        if protocol.as_str().is_some_and(|p| !PROTOCOLS.contains(&p)) {
            faults.push(not_supported(
                &format!("{at}.protocol"),
                protocol,
                PROTOCOLS,
            ));
        }
    }
    let kind = kind.as_str().unwrap_or_default();
    let mut endpoint_faults = Vec::new();
    for (i, endpoint) in obj["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("endpoints[{i}]");
        let addresses = endpoint["addresses"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if addresses.is_empty() {
            endpoint_faults.push(required(&format!("{at}.addresses"), ""));
        }
        for (j, address) in addresses.iter().enumerate() {
            let text = address.as_str().unwrap_or_default();
            let parsed = text.parse::<IpAddr>().ok();
            match kind {
                "IPv4" | "IPv6" => {
                    let field = format!("{at}.addresses[{j}]");
                    let family_ok = parsed.is_some_and(|ip| ip.is_ipv4() == (kind == "IPv4"));
                    if parsed.is_none() {
                        endpoint_faults.push(invalid(
                            &field,
                            address,
                            "must be a valid IP address",
                        ));
                    } else if !family_ok {
                        let why = format!("must be an {kind} address");
                        endpoint_faults.push(invalid(format!("{at}.addresses"), address, &why));
                    }
                    if let Some(ip) = parsed {
                        for why in endpoint_ip_errors(ip, text) {
                            endpoint_faults.push(invalid(&field, address, &why));
                        }
                    }
                }
                "FQDN" => {
                    for why in kubekit::validation::dns1123_subdomain(text) {
                        endpoint_faults.push(invalid(
                            format!("{at}.addresses[{j}]"),
                            address,
                            &why,
                        ));
                    }
                }
                _ => {}
            }
        }
        if let Some(node) = endpoint["nodeName"].as_str() {
            for why in kubekit::validation::dns1123_subdomain(node) {
                endpoint_faults.push(invalid(
                    format!("{at}.nodeName"),
                    &endpoint["nodeName"],
                    &why,
                ));
            }
        }
        if let Some(host) = endpoint["hostname"].as_str() {
            for why in kubekit::validation::dns1123_label(host) {
                endpoint_faults.push(invalid(
                    format!("{at}.hostname"),
                    &endpoint["hostname"],
                    &why,
                ));
            }
        }
    }
    // An update that leaves the endpoints as they were does not check them again.
    if old.is_none_or(|o| o["endpoints"] != obj["endpoints"]) {
        faults.extend(endpoint_faults);
    }
    if let Some(old) = old
        && old["addressType"] != obj["addressType"]
    {
        faults.push(immutable_declared("addressType"));
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_parse_and_exceptions_must_lie_strictly_inside() {
        assert_eq!(parse_cidr("10.0.0.0/8").map(|c| c.1), Some(8));
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0.0/+8",
            "fd00::/129",
            "x/1",
        ] {
            assert_eq!(parse_cidr(bad), None, "{bad}");
        }
        let peer = |except: &str| json!({"ipBlock": {"cidr": "10.0.0.0/16", "except": [except]}});
        assert!(network_policy_peer(&peer("10.0.1.0/24"), "p").is_empty());
        for outside in ["10.0.0.0/16", "10.1.0.0/24", "10.0.0.0/8", "fd00::/64"] {
            assert_eq!(
                network_policy_peer(&peer(outside), "p").len(),
                1,
                "{outside}"
            );
        }
    }

    #[test]
    fn service_cidrs_have_no_host_bits_and_one_range_per_family() {
        let faults = |cidrs: Value| service_cidr(&json!({"cidrs": cidrs})).len();
        assert_eq!(faults(json!(["10.96.0.0/16", "fd00::/108"])), 0);
        assert_eq!(faults(json!(["10.96.0.1/16"])), 1);
        assert_eq!(faults(json!(["10.96.0.0/16", "10.97.0.0/16"])), 1);
    }

    #[test]
    fn port_names_and_wildcard_hosts_are_checked_as_apimachinery_checks_them() {
        assert!(port_name_errors("http-alt").is_empty());
        assert_eq!(port_name_errors("HTTP_1").len(), 2);
        assert_eq!(
            port_name_errors("a--b"),
            ["must not contain consecutive hyphens"]
        );
        assert!(host_errors("*.example.com").is_empty());
        assert_eq!(host_errors("a.*.example.com").len(), 1);
    }
}
