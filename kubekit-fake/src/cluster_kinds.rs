//! Defaults and checks of `certificates.k8s.io`, `flowcontrol.apiserver.k8s.io` and
//! `resource.k8s.io` kinds as kube-apiserver 1.37 has them, with its fields, reasons and
//! messages, in its order.
//!
//! # Contract
//!
//! - **CertificateSigningRequests**: a request that is a PEM `CERTIFICATE REQUEST` block,
//!   a signer name (`<domain>/<path>`), usages (at least one, each known and once), an
//!   expiration of at least 600 seconds; an update keeps the spec as it was, and a new
//!   request starts with an empty status. The requester's `username`, `uid`, `groups` and
//!   `extra`, which the real server records in the spec, are not set.
//! - **PriorityLevelConfigurations**: the type `Exempt` only for `exempt` (and the
//!   `Limited` fields for `Limited`), a limit response of a type (`Queue` with its
//!   queuing), a hand no larger than the queues, a lendable percent of 0..100; a limited
//!   level's shares (30) and lendable percent (0), a queuing's queues (64), hand (8) and
//!   queue length (50) by default.
//! - **FlowSchemas**: a precedence of at most 10000 (1000 by default), a priority level,
//!   a distinguisher `ByUser` or `ByNamespace`, rules with subjects; an empty status.
//! - **DeviceClasses**: selectors with a CEL expression that compiles (the compiler's
//!   words are the `cel` crate's, not cel-go's). **ResourceClaims**: requests of
//!   unique DNS-label names, each `exactly` (a device class; `ExactCount`, count 1, by
//!   default; no count with `All`) or `firstAvailable`; the spec never changes; an empty
//!   status.
//! - **The `approval` subresource** of a CertificateSigningRequest changes its conditions
//!   only (see [`approve`]).
//! - Not done: the CEL selectors' type checking and cost, the CSR's parsing beyond its
//!   PEM block.

use base64::Engine;
use serde_json::{Value, json};

use crate::kinds::{Fault, duplicate, immutable_declared, invalid, not_supported, required};
use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

/// Fills the defaults of `obj`, of `kind`, being created (`old` is `None`) or replacing
/// `old`.
pub(crate) fn defaults(kind: &str, obj: &mut Value, old: Option<&Value>) {
    match kind {
        "CertificateSigningRequest" => match old {
            // The spec is the requester's and is never changed.
            Some(old) => obj["spec"] = old["spec"].clone(),
            None => obj["status"] = json!({}),
        },
        "FlowSchema" | "ResourceClaim" => {
            let spec = obj.get_mut("spec").filter(|s| s.is_object());
            if let Some(spec) = spec.filter(|_| kind == "FlowSchema")
                && spec["matchingPrecedence"].as_i64().unwrap_or(0) == 0
            {
                spec["matchingPrecedence"] = json!(1000);
            }
            if obj["status"].is_null() {
                obj["status"] = json!({});
            }
        }
        "PriorityLevelConfiguration" => {
            let Some(limited) = obj.pointer_mut("/spec/limited").filter(|l| l.is_object()) else {
                return;
            };
            for (field, value) in [("nominalConcurrencyShares", 30), ("lendablePercent", 0)] {
                if limited[field].is_null() {
                    limited[field] = json!(value);
                }
            }
            let queuing = limited.pointer_mut("/limitResponse/queuing");
            if let Some(queuing) = queuing.filter(|q| q.is_object()) {
                for (field, value) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                    if queuing[field].as_i64().unwrap_or(0) == 0 {
                        queuing[field] = json!(value);
                    }
                }
            }
        }
        _ => {}
    }
    if kind == "ResourceClaim" {
        let requests = obj
            .pointer_mut("/spec/devices/requests")
            .and_then(Value::as_array_mut);
        for request in requests.into_iter().flatten() {
            let Some(exactly) = request.get_mut("exactly").filter(|e| e.is_object()) else {
                continue;
            };
            if exactly["allocationMode"].is_null() {
                exactly["allocationMode"] = json!("ExactCount");
            }
            if exactly["allocationMode"] == "ExactCount"
                && exactly["count"].as_i64().unwrap_or(0) == 0
            {
                exactly["count"] = json!(1);
            }
        }
    }
}

/// The faults of an object of `kind`, named `name`, being created (`old` is `None`) or
/// replacing `old`.
pub(crate) fn faults(kind: &str, name: &str, obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    match kind {
        "CertificateSigningRequest" => csr(&obj["spec"]),
        "PriorityLevelConfiguration" => priority_level(name, &obj["spec"]),
        "FlowSchema" => flow_schema(&obj["spec"]),
        "DeviceClass" => device_class(&obj["spec"]),
        "ResourceClaim" => {
            let mut faults = resource_claim(&obj["spec"]);
            if old.is_some_and(|o| o["spec"] != obj["spec"]) {
                faults.push(immutable_declared("spec"));
            }
            faults
        }
        _ => Vec::new(),
    }
}

/// A write `sent` of the `approval` subresource of `old`, a CertificateSigningRequest
/// named `name`, as the real server's approval strategy makes it: `old` with the sent
/// conditions (each dated: `lastUpdateTime` when unset, `lastTransitionTime` when new or
/// changed) and resourceVersion; refused when a condition has no type or status, an
/// `Approved` and a `Denied` condition come together, a type repeats, or an `Approved`,
/// `Denied` or `Failed` condition is removed. The object keeps no managedFields, as on
/// the real server.
pub(crate) fn approve(
    info: &ResourceInfo,
    name: &str,
    old: &Value,
    sent: &Value,
) -> ApiResult<Value> {
    let mut new = old.clone();
    let empty = Vec::new();
    let before = old["status"]["conditions"].as_array().unwrap_or(&empty);
    let now = crate::store::now();
    let mut conditions = sent["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for condition in conditions.iter_mut().filter(|c| c.is_object()) {
        let previous = before.iter().find(|b| b["type"] == condition["type"]);
        if condition["lastUpdateTime"]
            .as_str()
            .is_none_or(str::is_empty)
        {
            condition["lastUpdateTime"] = json!(now);
        }
        if condition["lastTransitionTime"]
            .as_str()
            .is_none_or(str::is_empty)
        {
            condition["lastTransitionTime"] = match previous {
                Some(p) if p["status"] == condition["status"] => p["lastTransitionTime"].clone(),
                _ => json!(now),
            };
        }
    }
    let faults = condition_faults(&conditions, before);
    if !faults.is_empty() {
        return Err(ApiError::invalid_fields(info, name, &faults));
    }
    if !new["status"].is_object() {
        new["status"] = json!({});
    }
    new["status"]["conditions"] = Value::Array(conditions);
    new["metadata"]["resourceVersion"] = sent["metadata"]["resourceVersion"].clone();
    // The real server records no manager of it, and drops the object's managedFields.
    if let Some(meta) = new["metadata"].as_object_mut() {
        meta.remove("managedFields");
    }
    Ok(new)
}

/// The faults of a request's `conditions` replacing those `before`.
fn condition_faults(conditions: &[Value], before: &[Value]) -> Vec<Fault> {
    let mut faults = Vec::new();
    let at = "status.conditions";
    let mut seen: Vec<&Value> = Vec::new();
    let (mut approved, mut denied) = (false, false);
    for (i, condition) in conditions.iter().enumerate() {
        let kind = &condition["type"];
        if kind.as_str().is_none_or(str::is_empty) {
            faults.push(required(&format!("{at}[{i}].type"), ""));
        }
        let status = &condition["status"];
        let only_true = matches!(kind.as_str(), Some("Approved" | "Denied" | "Failed"));
        let allowed: &[&str] = match only_true {
            true => &["True"],
            false => &["False", "True", "Unknown"],
        };
        match status.as_str().unwrap_or_default() {
            "" => faults.push(required(&format!("{at}[{i}].status"), "")),
            s if !allowed.contains(&s) => {
                faults.push(not_supported(&format!("{at}[{i}].status"), status, allowed));
            }
            _ => {}
        }
        approved |= kind == "Approved";
        denied |= kind == "Denied";
        if seen.contains(&kind) {
            faults.push(duplicate(&format!("{at}[{i}].type"), kind));
        }
        seen.push(kind);
    }
    if approved && denied {
        // As declarative validation reports it.
        let detail = r#"Invalid value: "{conditions[{\"type\": \"Approved\"}], conditions[{\"type\": \"Denied\"}]}": must specify at most one of: `conditions[{"type": "Approved"}]`, `conditions[{"type": "Denied"}]`"#;
        faults.push((at.into(), "FieldValueInvalid", detail.into()));
    }
    for kind in ["Approved", "Denied", "Failed"] {
        let count = |list: &[Value]| list.iter().filter(|c| c["type"] == kind).count();
        if count(conditions) < count(before) {
            let why = format!("updates may not remove a condition of type {kind:?}");
            faults.push(crate::kinds::forbidden(at, &why));
        }
    }
    faults
}

/// The key usages a certificate may ask for.
const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

fn csr(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let request = &spec["request"];
    let pem = base64::engine::general_purpose::STANDARD
        .decode(request.as_str().unwrap_or_default())
        .unwrap_or_default();
    let pem = String::from_utf8_lossy(&pem);
    let block = pem
        .trim_start()
        .strip_prefix("-----BEGIN CERTIFICATE REQUEST-----");
    if block.is_none_or(|b| !b.contains("-----END CERTIFICATE REQUEST-----")) {
        faults.push(invalid(
            "spec.request",
            request,
            "PEM block type must be CERTIFICATE REQUEST",
        ));
    }
    let signer = &spec["signerName"];
    match signer.as_str().unwrap_or_default() {
        "" => faults.push(required("spec.signerName", "")),
        s if !s.contains('/') => faults.push(invalid(
            "spec.signerName",
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )),
        _ => {}
    }
    let usages = spec["usages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if usages.is_empty() {
        faults.push(required("spec.usages", ""));
    }
    for (i, usage) in usages.iter().enumerate() {
        let field = format!("spec.usages[{i}]");
        if !usage.as_str().is_some_and(|u| USAGES.contains(&u)) {
            faults.push(not_supported(&field, usage, USAGES));
        } else if usages[..i].contains(usage) {
            faults.push(duplicate(&field, usage));
        }
    }
    let seconds = &spec["expirationSeconds"];
    if seconds.as_i64().is_some_and(|s| s < 600) {
        let why = "may not specify a duration less than 600 seconds (10 minutes)";
        faults.push(invalid("spec.expirationSeconds", seconds, why));
    }
    faults
}

fn priority_level(name: &str, spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let kind = &spec["type"];
    if (kind == "Exempt") != (name == "exempt") {
        let why = "must be 'Exempt' if and only if `name` is 'exempt'";
        faults.push(invalid("spec.type", kind, why));
    }
    if kind != "Limited" {
        return faults;
    }
    let limited = &spec["limited"];
    if !limited.is_object() {
        faults.push(required("spec.limited", ""));
        return faults;
    }
    let at = "spec.limited";
    let lendable = &limited["lendablePercent"];
    if lendable.as_i64().is_some_and(|p| !(0..=100).contains(&p)) {
        let why = "must be between 0 and 100, inclusive";
        faults.push(invalid(format!("{at}.lendablePercent"), lendable, why));
    }
    let response = &limited["limitResponse"];
    match response["type"].as_str().unwrap_or_default() {
        "" => faults.push(required(&format!("{at}.limitResponse.type"), "")),
        "Queue" => {
            let queuing = &response["queuing"];
            if !queuing.is_object() {
                faults.push(required(&format!("{at}.limitResponse.queuing"), ""));
            } else if queuing["handSize"].as_i64() > queuing["queues"].as_i64() {
                let why = format!("should not be greater than queues ({})", queuing["queues"]);
                let field = format!("{at}.limitResponse.queuing.handSize");
                faults.push(invalid(field, &queuing["handSize"], &why));
            }
        }
        _ => {}
    }
    faults
}

fn flow_schema(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let precedence = &spec["matchingPrecedence"];
    if precedence.as_i64().is_some_and(|p| p > 10000) {
        faults.push(invalid(
            "spec.matchingPrecedence",
            precedence,
            "must not be greater than 10000",
        ));
    }
    let method = &spec["distinguisherMethod"];
    if method.is_object() && !matches!(method["type"].as_str(), Some("ByUser" | "ByNamespace")) {
        let shown = format!("{{\"Type\":{}}}", crate::defaults::go_json(&method["type"]));
        let detail =
            format!("Unsupported value: {shown}: supported values: \"ByNamespace\", \"ByUser\"");
        faults.push((
            "spec.distinguisherMethod.type".into(),
            "FieldValueNotSupported",
            detail,
        ));
    }
    if spec["priorityLevelConfiguration"]["name"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        let field = "spec.priorityLevelConfiguration.name";
        faults.push(required(field, "must reference a priority level"));
    }
    for (i, rule) in spec["rules"].as_array().into_iter().flatten().enumerate() {
        if rule["subjects"].as_array().is_none_or(Vec::is_empty) {
            let field = format!("spec.rules[{i}].subjects");
            faults.push(required(&field, "subjects must contain at least one value"));
        }
    }
    faults
}

fn device_class(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    for (i, selector) in spec["selectors"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let cel = &selector["cel"];
        if !cel.is_object() {
            faults.push(required(&format!("spec.selectors[{i}].cel"), ""));
        } else if let Some(expression) = cel["expression"].as_str()
            && let Err(why) = crate::cel_rules::compile(expression)
        {
            let field = format!("spec.selectors[{i}].cel.expression");
            faults.push(invalid(field, &cel["expression"], &why));
        }
    }
    faults
}

fn resource_claim(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let requests = spec["devices"]["requests"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut names = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        let at = format!("spec.devices.requests[{i}]");
        let name = request["name"].as_str().unwrap_or_default();
        if names.contains(&name) {
            // The real server shows the request as Go marshals it, fields in their order.
            let shown = json_in_order(request);
            faults.push((
                at,
                "FieldValueDuplicate",
                format!("Duplicate value: {shown}"),
            ));
            continue;
        }
        names.push(name);
        for why in kubekit::validation::dns1123_label(name) {
            faults.push(invalid(format!("{at}.name"), &request["name"], &why));
        }
        let exactly = &request["exactly"];
        match (exactly.is_object(), request["firstAvailable"].is_array()) {
            (true, false) => {
                let at = format!("{at}.exactly");
                if exactly["deviceClassName"]
                    .as_str()
                    .is_none_or(str::is_empty)
                {
                    faults.push(required(&format!("{at}.deviceClassName"), ""));
                }
                let mode = &exactly["allocationMode"];
                match mode.as_str() {
                    Some("ExactCount") => {}
                    Some("All") if exactly["count"].as_i64().unwrap_or(0) != 0 => {
                        let why = "must not be specified when allocationMode is 'All'";
                        faults.push(invalid(format!("{at}.count"), &exactly["count"], why));
                    }
                    Some("All") => {}
                    _ => faults.push(not_supported(
                        &format!("{at}.allocationMode"),
                        mode,
                        &["All", "ExactCount"],
                    )),
                }
            }
            (false, true) => {}
            _ => faults.push(required(
                &at,
                "exactly one of `exactly` or `firstAvailable` is required",
            )),
        }
    }
    faults
}

/// A device request as Go marshals it: `name`, then `exactly` with its class, allocation
/// mode and count.
fn json_in_order(request: &Value) -> String {
    let exactly = &request["exactly"];
    let fields: Vec<String> = ["deviceClassName", "allocationMode", "count"]
        .iter()
        .filter(|f| !exactly[**f].is_null())
        .map(|f| format!("\"{f}\":{}", exactly[*f]))
        .collect();
    format!(
        "{{\"name\":{},\"exactly\":{{{}}}}}",
        request["name"],
        fields.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_date_their_conditions_and_never_remove_a_decision() {
        let info = crate::resources::builtin_of("certificates.k8s.io", "CertificateSigningRequest");
        let old = json!({"metadata": {"resourceVersion": "1"}, "spec": {"usages": ["a"]}, "status": {"certificate": "c"}});
        let sent = json!({"metadata": {"resourceVersion": "1"}, "spec": {"usages": ["b"]},
            "status": {"certificate": "x", "conditions": [{"type": "Approved", "status": "True"}]}});
        let approved = approve(&info, "r", &old, &sent).expect("approved");
        assert_eq!(approved["spec"], old["spec"]);
        assert_eq!(approved["status"]["certificate"], "c");
        let condition = &approved["status"]["conditions"][0];
        assert!(
            condition["lastUpdateTime"].is_string() && condition["lastTransitionTime"].is_string()
        );
        let odd = json!({"status": {"conditions": [{"type": "Maybe", "status": "True"}]}});
        let refused = approve(&info, "r", &approved, &odd).expect_err("refused");
        assert!(
            refused
                .message
                .contains("may not remove a condition of type \"Approved\"")
        );
        let both = json!({"status": {"conditions": [{"type": "Approved", "status": "True"},
            {"type": "Denied", "status": "False"}]}});
        let faults = condition_faults(
            both["status"]["conditions"].as_array().expect("a list"),
            &[],
        );
        let fields: Vec<&str> = faults.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(fields, ["status.conditions[1].status", "status.conditions"]);
    }

    #[test]
    fn a_repeated_device_request_is_shown_as_go_marshals_it() {
        let request = json!({"exactly": {"count": 1, "allocationMode": "ExactCount", "deviceClassName": "gpu"}, "name": "a"});
        assert_eq!(
            json_in_order(&request),
            r#"{"name":"a","exactly":{"deviceClassName":"gpu","allocationMode":"ExactCount","count":1}}"#
        );
    }

    #[test]
    fn claims_get_one_device_by_default_and_levels_their_queuing() {
        let mut claim = json!({"spec": {"devices": {"requests": [{"name": "a", "exactly": {"count": 0}}, {"name": "b"}]}}});
        defaults("ResourceClaim", &mut claim, None);
        assert_eq!(
            claim["spec"]["devices"]["requests"][0]["exactly"],
            json!({"allocationMode": "ExactCount", "count": 1})
        );
        assert_eq!(claim["status"], json!({}));
        let mut level = json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 2}}}}});
        defaults("PriorityLevelConfiguration", &mut level, None);
        assert_eq!(
            level["spec"]["limited"]["limitResponse"]["queuing"],
            json!({"queues": 2, "handSize": 8, "queueLengthLimit": 50})
        );
        assert_eq!(level["spec"]["limited"]["nominalConcurrencyShares"], 30);
        let mut odd = json!({"spec": 1});
        defaults("PriorityLevelConfiguration", &mut odd, None);
        defaults("ResourceClaim", &mut odd, None);
        assert_eq!(odd["spec"], 1);
    }
}
