//! Defaults and checks of everyday built-in kinds outside the core group, as
//! kube-apiserver 1.37 has them: Leases (`leaseDurationSeconds` above 0,
//! `leaseTransitions` not negative), PodDisruptionBudgets (one of `minAvailable` and
//! `maxUnavailable`, each a count or a percentage up to 100%), HorizontalPodAutoscalers
//! (`minReplicas` 1 and a CPU utilization target of 80% by default, `maxReplicas` at
//! least `minReplicas`), Ingresses (a `pathType` on each path, absolute paths, hosts that
//! are DNS names) and NetworkPolicies (ports in 1..65535, `TCP` and the policy types by
//! default). Each fault with the real server's field, reason and text.
//!
//! Not done: the other checks of these kinds (metrics of autoscalers, Ingress backends and
//! TLS, NetworkPolicy peers and CIDRs, selectors' own syntax).

use serde_json::{Value, json};

use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

/// A failed check: field, cause reason, detail.
type Fault = (String, &'static str, String);

/// Fills the defaults of `obj`, of `info`'s kind.
pub(crate) fn defaults(info: &ResourceInfo, obj: &mut Value) {
    if !obj.is_object() {
        return;
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("autoscaling", "HorizontalPodAutoscaler")
            if info.versions.first().is_some_and(|v| v == "v2") =>
        {
            let spec = &mut obj["spec"];
            if !spec.is_object() {
                return;
            }
            if spec["minReplicas"].is_null() {
                spec["minReplicas"] = json!(1);
            }
            if spec["metrics"].as_array().is_none_or(Vec::is_empty) {
                spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]);
            }
        }
        ("networking.k8s.io", "NetworkPolicy") => {
            let spec = &mut obj["spec"];
            if !spec.is_object() {
                return;
            }
            for direction in ["ingress", "egress"] {
                let rules = spec.get_mut(direction).and_then(Value::as_array_mut);
                for rule in rules.into_iter().flatten() {
                    let ports = rule.get_mut("ports").and_then(Value::as_array_mut);
                    for port in ports.into_iter().flatten() {
                        if port.is_object() && port["protocol"].is_null() {
                            port["protocol"] = json!("TCP");
                        }
                    }
                }
            }
            if spec["policyTypes"].as_array().is_none_or(Vec::is_empty) {
                let egress = spec["egress"].as_array().is_some_and(|e| !e.is_empty());
                spec["policyTypes"] = match egress {
                    true => json!(["Ingress", "Egress"]),
                    false => json!(["Ingress"]),
                };
            }
        }
        _ => {}
    }
}

/// Refuses `obj` (named `name`, of `info`'s kind) with the real server's `422` where it
/// breaks a check of its kind.
pub(crate) fn check(info: &ResourceInfo, name: &str, obj: &Value) -> ApiResult<()> {
    let spec = &obj["spec"];
    let faults = match (info.group.as_str(), info.kind.as_str()) {
        ("coordination.k8s.io", "Lease") => lease(spec),
        ("policy", "PodDisruptionBudget") => budget(spec),
        ("autoscaling", "HorizontalPodAutoscaler") => autoscaler(spec),
        ("networking.k8s.io", "Ingress") => ingress(spec),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(spec),
        ("", "ConfigMap") => config_map(obj),
        _ => return Ok(()),
    };
    match faults.is_empty() {
        true => Ok(()),
        false => Err(ApiError::invalid_fields(info, name, &faults)),
    }
}

/// The most bytes a ConfigMap's data and binary data may hold together.
const CONFIG_MAP_MAX_BYTES: usize = 1024 * 1024;

/// A ConfigMap holds at most 1 MiB (its values, binary data decoded); the real server
/// names the whole object as the field, `[]`.
fn config_map(obj: &Value) -> Vec<Fault> {
    let text: usize = obj["data"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, v)| v.as_str().map_or(0, str::len))
        .sum();
    let binary: usize = obj["binaryData"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, v)| {
            let b64 = v.as_str().unwrap_or_default().trim_end_matches('=');
            b64.len() * 3 / 4
        })
        .sum();
    if text + binary <= CONFIG_MAP_MAX_BYTES {
        return Vec::new();
    }
    vec![(
        "[]".into(),
        "FieldValueTooLong",
        format!("Too long: may not be more than {CONFIG_MAP_MAX_BYTES} bytes"),
    )]
}

fn invalid(field: impl Into<String>, value: &Value, why: &str) -> Fault {
    let shown = match value {
        Value::String(s) => kubekit::validation::quote(s),
        other => other.to_string(),
    };
    (
        field.into(),
        "FieldValueInvalid",
        format!("Invalid value: {shown}: {why}"),
    )
}

fn lease(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let duration = &spec["leaseDurationSeconds"];
    if duration.as_i64().is_some_and(|d| d <= 0) {
        faults.push(invalid(
            "spec.leaseDurationSeconds",
            duration,
            "must be greater than 0",
        ));
    }
    let transitions = &spec["leaseTransitions"];
    if transitions.as_i64().is_some_and(|t| t < 0) {
        let why = "must be greater than or equal to 0";
        faults.push(invalid("spec.leaseTransitions", transitions, why));
    }
    faults
}

/// The faults of an int-or-percent count at `field`: a count not negative, or a
/// percentage (`[0-9]+%`) up to 100%.
fn count_or_percent(field: &str, value: &Value) -> Vec<Fault> {
    match value {
        Value::Number(n) if n.as_i64().is_some_and(|n| n < 0) => {
            vec![invalid(field, value, "must be greater than or equal to 0")]
        }
        Value::String(s) => {
            let digits = s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
            match digits {
                None => vec![invalid(
                    field,
                    value,
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )],
                Some(d) if d.parse::<u64>().map_or(true, |p| p > 100) => {
                    vec![invalid(field, value, "must not be greater than 100%")]
                }
                Some(_) => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

fn budget(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let (min, max) = (&spec["minAvailable"], &spec["maxUnavailable"]);
    if !min.is_null() && !max.is_null() {
        // The real server shows its internal struct, by Go field names.
        let shown = json!({"MinAvailable": min, "Selector": spec["selector"], "MaxUnavailable": max,
            "UnhealthyPodEvictionPolicy": spec["unhealthyPodEvictionPolicy"]});
        let detail = format!(
            "Invalid value: {}: minAvailable and maxUnavailable cannot be both set",
            ordered(
                &shown,
                &[
                    "MinAvailable",
                    "Selector",
                    "MaxUnavailable",
                    "UnhealthyPodEvictionPolicy"
                ]
            )
        );
        faults.push(("spec".into(), "FieldValueInvalid", detail));
    }
    for (field, value) in [("spec.minAvailable", min), ("spec.maxUnavailable", max)] {
        faults.extend(count_or_percent(field, value));
    }
    faults
}

/// `object`'s fields as JSON in `order` (Go marshals a struct's fields in their order).
fn ordered(object: &Value, order: &[&str]) -> String {
    let fields: Vec<String> = order
        .iter()
        .map(|k| format!("{}:{}", Value::from(*k), object[*k]))
        .collect();
    format!("{{{}}}", fields.join(","))
}

fn autoscaler(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let (min, max) = (&spec["minReplicas"], &spec["maxReplicas"]);
    if min.as_i64().is_some_and(|m| m < 1) {
        faults.push(invalid(
            "spec.minReplicas",
            min,
            "must be greater than or equal to 1",
        ));
    }
    match max.as_i64().unwrap_or_default() {
        0 => faults.push((
            "spec.maxReplicas".into(),
            "FieldValueRequired",
            "Required value: must be set and greater than 0".into(),
        )),
        m if m < 0 => faults.push(invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to 1",
        )),
        _ => {}
    }
    if let (Some(lo), Some(hi)) = (min.as_i64(), max.as_i64())
        && hi < lo
    {
        faults.push(invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    faults
}

fn ingress(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    for (i, rule) in spec["rules"].as_array().into_iter().flatten().enumerate() {
        let at = format!("spec.rules[{i}]");
        if let Some(host) = rule["host"].as_str().filter(|h| !h.is_empty()) {
            let field = format!("{at}.host");
            if host.parse::<std::net::IpAddr>().is_ok() {
                faults.push(invalid(
                    &field,
                    &rule["host"],
                    "must be a DNS name, not an IP address",
                ));
            } else if !host.contains('*') {
                for why in kubekit::validation::dns1123_subdomain(host) {
                    faults.push(invalid(&field, &rule["host"], &why));
                }
            }
        }
        for (j, path) in rule["http"]["paths"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("{at}.http.paths[{j}]");
            match path["pathType"].as_str() {
                None => faults.push((
                    format!("{at}.pathType"),
                    "FieldValueRequired",
                    "Required value: pathType must be specified".into(),
                )),
                Some("Exact" | "Prefix") => {
                    if !path["path"].as_str().is_some_and(|p| p.starts_with('/')) {
                        faults.push(invalid(format!("{at}.path"), &path["path"], "must be an absolute path"));
                    }
                }
                Some("ImplementationSpecific") => {
                    let p = path["path"].as_str().unwrap_or_default();
                    if !p.is_empty() && !p.starts_with('/') {
                        faults.push(invalid(format!("{at}.path"), &path["path"], "must be an absolute path"));
                    }
                }
                Some(other) => faults.push((
                    format!("{at}.pathType"),
                    "FieldValueNotSupported",
                    format!(
                        "Unsupported value: {}: supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\"",
                        kubekit::validation::quote(other)
                    ),
                )),
            }
        }
    }
    faults
}

fn network_policy(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    for direction in ["ingress", "egress"] {
        for (i, rule) in spec[direction].as_array().into_iter().flatten().enumerate() {
            for (j, port) in rule["ports"].as_array().into_iter().flatten().enumerate() {
                let value = &port["port"];
                if value.as_i64().is_some_and(|p| !(1..=65535).contains(&p)) {
                    let field = format!("spec.{direction}[{i}].ports[{j}].port");
                    faults.push(invalid(
                        field,
                        value,
                        "must be between 1 and 65535, inclusive",
                    ));
                }
            }
        }
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_percentages_are_checked_as_the_real_server_checks_them() {
        assert!(count_or_percent("f", &json!(3)).is_empty());
        assert!(count_or_percent("f", &json!("100%")).is_empty());
        assert_eq!(
            count_or_percent("f", &json!(-1))[0].2,
            "Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            count_or_percent("f", &json!("101%"))[0].2,
            "Invalid value: \"101%\": must not be greater than 100%"
        );
        assert!(
            count_or_percent("f", &json!("ten%"))[0]
                .2
                .contains("a valid percent string")
        );
    }

    #[test]
    fn an_autoscaler_needs_a_maximum_no_lower_than_its_minimum() {
        let found = autoscaler(&json!({"minReplicas": 0, "maxReplicas": 0}));
        let fields: Vec<&str> = found.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(fields, ["spec.minReplicas", "spec.maxReplicas"]);
    }
}
