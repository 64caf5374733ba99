//! Defaults and checks of built-in kinds outside the core group, as kube-apiserver 1.37
//! has them, and the dispatch to the modules of the others (`core_kinds`, `pod_spec`,
//! `storage_kinds`, `networking_kinds`, `cluster_kinds`):
//!
//! - Leases (`leaseDurationSeconds` above 0, `leaseTransitions` not negative; the fields
//!   of coordinated leader election, off on the real server, dropped after the fields
//!   are recorded);
//! - PodDisruptionBudgets (one of `minAvailable` and `maxUnavailable`, each a count or a
//!   percentage up to 100%);
//! - HorizontalPodAutoscalers (`minReplicas` 1 and a CPU utilization target of 80% by
//!   default, `maxReplicas` at least `minReplicas`);
//! - Ingresses (a `pathType` on each path, absolute paths, hosts that are DNS names or
//!   wildcards, and see `networking_kinds`) and NetworkPolicies (ports, peers, policy
//!   types: see `networking_kinds`; `TCP` and the policy types by default);
//! - PriorityClasses (a value up to 10^9 unless a system class, the `system-` prefix
//!   reserved, a known preemption policy; value and preemption policy immutable; the
//!   system classes never deleted; the generation of the create kept);
//! - RuntimeClasses (a DNS-label handler that never changes, an overhead not negative,
//!   valid node selectors and tolerations);
//! - the defaults of StorageClasses, CSIDrivers, VolumeAttachments and EndpointSlices.
//!
//! Each fault with the real server's field, reason and text; the immutable fields that
//! declarative validation guards are reported without their value (`Invalid value:
//! null`), as there. Not done: the metrics of autoscalers, selectors' own syntax.

use serde_json::{Value, json};

use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

/// A failed check: field, cause reason, detail.
pub(crate) type Fault = (String, &'static str, String);

/// Fills the defaults of `obj`, of `info`'s kind, being created (`old` is `None`) or
/// replacing `old`.
pub(crate) fn defaults(info: &ResourceInfo, obj: &mut Value, old: Option<&Value>) {
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
        ("networking.k8s.io", kind @ ("IngressClass" | "Ingress")) => {
            crate::networking_kinds::defaults(kind, obj)
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            crate::networking_kinds::defaults("EndpointSlice", obj);
            let ports = obj.get_mut("ports").and_then(Value::as_array_mut);
            for port in ports.into_iter().flatten() {
                set_default(port, "name", json!(""));
                set_default(port, "protocol", json!("TCP"));
            }
        }
        ("storage.k8s.io", "VolumeAttachment") if obj["status"].is_null() => {
            obj["status"] = json!({"attached": false});
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            set_default(obj, "value", json!(0));
            // `globalDefault: false` is not kept (Go omits it).
            if obj["globalDefault"] == json!(false)
                && let Some(m) = obj.as_object_mut()
            {
                m.remove("globalDefault");
            }
        }
        // On create, after the fields are recorded (see `prepare_for_create`).
        ("coordination.k8s.io", "Lease") if old.is_some() => without_disabled_lease_fields(obj),
        ("storage.k8s.io", "StorageClass") => {
            set_default(obj, "reclaimPolicy", json!("Delete"));
            set_default(obj, "volumeBindingMode", json!("Immediate"));
        }
        ("storage.k8s.io", "CSIDriver") => {
            if obj["spec"].is_null() {
                obj["spec"] = json!({});
            }
            let spec = &mut obj["spec"];
            for (field, value) in [
                ("attachRequired", json!(true)),
                ("podInfoOnMount", json!(false)),
                ("storageCapacity", json!(false)),
                ("fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
                ("requiresRepublish", json!(false)),
                ("seLinuxMount", json!(false)),
                ("preventPodSchedulingIfMissing", json!(false)),
            ] {
                set_default(spec, field, value);
            }
            if spec["volumeLifecycleModes"]
                .as_array()
                .is_none_or(Vec::is_empty)
                && spec.is_object()
            {
                spec["volumeLifecycleModes"] = json!(["Persistent"]);
            }
        }
        ("certificates.k8s.io" | "flowcontrol.apiserver.k8s.io" | "resource.k8s.io", kind) => {
            crate::cluster_kinds::defaults(kind, obj, old)
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

/// Drops a Lease's fields of coordinated leader election, a feature the real server has
/// off.
fn without_disabled_lease_fields(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("strategy");
        spec.remove("preferredHolder");
    }
}

/// What the real server's strategies change in `obj`, of `info`'s kind, being created,
/// after its fields are recorded in managedFields (so the fields they drop stay recorded,
/// and those they add are not): core kinds' (see `core_kinds::admit`), a Lease's disabled
/// fields dropped.
pub(crate) fn prepare_for_create(info: &ResourceInfo, obj: &mut Value) {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", kind) => crate::core_kinds::admit(kind, obj),
        ("coordination.k8s.io", "Lease") => without_disabled_lease_fields(obj),
        _ => {}
    }
}

/// Sets `obj[field]` to `value` where it is missing or null (and `obj` is an object).
fn set_default(obj: &mut Value, field: &str, value: Value) {
    if obj.is_object() && obj[field].is_null() {
        obj[field] = value;
    }
}

/// Refuses `obj` (named `name`, of `info`'s kind), being created (`old` is `None`) or
/// replacing `old`, with the real server's `422` where it breaks a check of its kind.
pub(crate) fn check(
    info: &ResourceInfo,
    name: &str,
    obj: &Value,
    old: Option<&Value>,
) -> ApiResult<()> {
    let spec = &obj["spec"];
    let faults = match (info.group.as_str(), info.kind.as_str()) {
        ("", kind) => crate::core_kinds::faults(kind, obj, old),
        ("events.k8s.io", "Event") => {
            let core = crate::events::stored(info, obj.clone());
            let old = old.map(|o| crate::events::stored(info, o.clone()));
            crate::core_kinds::events_v1_faults(&core, old.as_ref())
        }
        ("storage.k8s.io", kind) => crate::storage_kinds::faults(kind, obj, old),
        ("certificates.k8s.io" | "flowcontrol.apiserver.k8s.io" | "resource.k8s.io", kind) => {
            crate::cluster_kinds::faults(kind, name, obj, old)
        }
        (
            "networking.k8s.io" | "discovery.k8s.io",
            kind @ ("IngressClass" | "IPAddress" | "ServiceCIDR" | "EndpointSlice"),
        ) => crate::networking_kinds::faults(kind, name, obj, old),
        ("scheduling.k8s.io", "PriorityClass") => priority_class(name, obj, old),
        ("node.k8s.io", "RuntimeClass") => runtime_class(obj, old),
        ("coordination.k8s.io", "Lease") => lease(spec),
        ("policy", "PodDisruptionBudget") => budget(spec),
        ("autoscaling", "HorizontalPodAutoscaler") => autoscaler(spec),
        ("networking.k8s.io", "Ingress") => ingress(spec),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(spec),
        _ => return Ok(()),
    };
    refused(info, name, &faults)
}

/// The `422` of `faults` of an object of `info` (none when there are none), an
/// `events.k8s.io` Event refused as the core Event it is kept as.
pub(crate) fn refused(info: &ResourceInfo, name: &str, faults: &[Fault]) -> ApiResult<()> {
    if faults.is_empty() {
        return Ok(());
    }
    let mut info = info.clone();
    if crate::events::is_events_v1(&info) {
        info.group = String::new();
    }
    Err(ApiError::invalid_fields(&info, name, faults))
}

/// `field`'s `value` is invalid for `why` (`field.Invalid`; a string is shown quoted).
pub(crate) fn invalid(field: impl Into<String>, value: &Value, why: &str) -> Fault {
    invalid_as(field, &shown(value), why)
}

/// `field`'s value, shown as `shown` (a map or struct as the real server prints it), is
/// invalid for `why`.
pub(crate) fn invalid_as(field: impl Into<String>, shown: &str, why: &str) -> Fault {
    (
        field.into(),
        "FieldValueInvalid",
        format!("Invalid value: {shown}: {why}"),
    )
}

/// `field` is required (`field.Required`), for `why` if it is not empty.
pub(crate) fn required(field: &str, why: &str) -> Fault {
    let detail = match why {
        "" => "Required value".to_string(),
        why => format!("Required value: {why}"),
    };
    (field.into(), "FieldValueRequired", detail)
}

/// `field` may not be set, for `why` (`field.Forbidden`).
pub(crate) fn forbidden(field: &str, why: &str) -> Fault {
    (
        field.into(),
        "FieldValueForbidden",
        format!("Forbidden: {why}"),
    )
}

/// `field`'s `value` is not one of `supported` (`field.NotSupported`).
pub(crate) fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Fault {
    let supported: Vec<String> = supported
        .iter()
        .map(|s| kubekit::validation::quote(s))
        .collect();
    let detail = format!(
        "Unsupported value: {}: supported values: {}",
        shown(value),
        supported.join(", ")
    );
    (field.into(), "FieldValueNotSupported", detail)
}

/// `field`'s `value` repeats an earlier one (`field.Duplicate`).
pub(crate) fn duplicate(field: &str, value: &Value) -> Fault {
    (
        field.into(),
        "FieldValueDuplicate",
        format!("Duplicate value: {}", shown(value)),
    )
}

/// `field`, now `value`, may not change (`ValidateImmutableField`).
pub(crate) fn immutable(field: &str, value: &Value) -> Vec<Fault> {
    let detail = format!(
        "Invalid value: {}: field is immutable",
        crate::defaults::go_json(value)
    );
    vec![(field.into(), "FieldValueInvalid", detail)]
}

/// `field` may not change, as declarative validation reports it (without the value).
pub(crate) fn immutable_declared(field: &str) -> Fault {
    (
        field.into(),
        "FieldValueInvalid",
        "Invalid value: null: field is immutable".into(),
    )
}

/// `value` as `field.Error` shows a bad value: a string quoted, anything else as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => kubekit::validation::quote(s),
        other => other.to_string(),
    }
}

/// apimachinery's `IsQualifiedName`: a label key, an annotation's name.
pub(crate) fn qualified_name_errors(value: &str) -> Vec<String> {
    crate::cel_library::qualified_name_errors(value)
}

/// The system PriorityClasses: name, value.
const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// Whether `info`'s objects keep the generation 1 of their create whatever changes: the
/// real server's strategy of PriorityClasses never bumps it.
pub(crate) fn keeps_first_generation(info: &ResourceInfo) -> bool {
    info.group == "scheduling.k8s.io" && info.plural == "priorityclasses"
}

/// Whether `info`'s objects are created without a generation and get one when their spec
/// changes (1, then bumped): CSIDrivers.
pub(crate) fn generation_from_first_change(info: &ResourceInfo) -> bool {
    info.group == "storage.k8s.io" && info.plural == "csidrivers"
}

/// Whether `name` of `info` is one of the system PriorityClasses, which are never deleted.
pub(crate) fn is_system_priority_class(info: &ResourceInfo, name: &str) -> bool {
    info.group == "scheduling.k8s.io"
        && info.plural == "priorityclasses"
        && SYSTEM_PRIORITY_CLASSES.iter().any(|(n, _)| *n == name)
}

fn priority_class(name: &str, obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    let mut faults = Vec::new();
    let value = obj["value"].as_i64().unwrap_or(0);
    let global = obj["globalDefault"].as_bool().unwrap_or(false);
    if name.starts_with("system-") {
        let why = match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, v)) if *v != value => {
                Some(format!("value of {name} PriorityClass must be {v}"))
            }
            Some(_) if global => Some(format!(
                "globalDefault of {name} PriorityClass must be false"
            )),
            Some(_) => None,
        };
        if let Some(why) = why {
            let why = format!(
                "priority class names with 'system-' prefix are reserved for system use only. error: {why}"
            );
            faults.push(forbidden("metadata.name", &why));
        }
    } else if value > 1_000_000_000 {
        let why = "maximum allowed value of a user defined priority is 1000000000";
        faults.push(forbidden("value", why));
    }
    let policy = &obj["preemptionPolicy"];
    match policy.as_str() {
        None | Some("PreemptLowerPriority" | "Never") => {}
        Some("") => faults.push(required("preemptionPolicy", "")),
        Some(_) => faults.push(not_supported(
            "preemptionPolicy",
            policy,
            &["PreemptLowerPriority", "Never"],
        )),
    }
    if let Some(old) = old {
        if old["value"] != obj["value"] {
            faults.push(forbidden("value", "may not be changed in an update."));
        }
        if old["preemptionPolicy"] != *policy {
            faults.extend(immutable("preemptionPolicy", policy));
        }
    }
    faults
}

fn runtime_class(obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    let mut faults = Vec::new();
    let handler = &obj["handler"];
    match handler.as_str().unwrap_or_default() {
        "" => faults.push(required("handler", "")),
        h => {
            for why in kubekit::validation::dns1123_label(h) {
                faults.push(invalid("handler", handler, &why));
            }
        }
    }
    for (resource, quantity) in obj["overhead"]["podFixed"]
        .as_object()
        .into_iter()
        .flatten()
    {
        if quantity.as_str().is_some_and(|q| q.starts_with('-')) {
            let field = format!("overhead.limits[{resource}]");
            faults.push(invalid(
                field,
                quantity,
                "must be greater than or equal to 0",
            ));
        }
    }
    let scheduling = &obj["scheduling"];
    for key in scheduling["nodeSelector"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
    {
        for why in qualified_name_errors(key) {
            faults.push(invalid(
                "scheduling.nodeSelector",
                &Value::from(key.as_str()),
                &why,
            ));
        }
    }
    let tolerations = scheduling["tolerations"].as_array().into_iter().flatten();
    for (i, toleration) in tolerations.enumerate() {
        faults.extend(toleration_faults(
            toleration,
            &format!("scheduling.tolerations[{i}]"),
        ));
    }
    if let Some(old) = old
        && old["handler"] != *handler
    {
        faults.push(immutable_declared("handler"));
    }
    faults
}

/// The faults of a toleration at `at` (`ValidateTolerations`).
pub(crate) fn toleration_faults(toleration: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let key = toleration["key"].as_str().unwrap_or_default();
    if !key.is_empty() {
        for why in qualified_name_errors(key) {
            faults.push(invalid(format!("{at}.key"), &toleration["key"], &why));
        }
    }
    let value = toleration["value"].as_str().unwrap_or_default();
    match toleration["operator"].as_str().unwrap_or_default() {
        "" | "Equal" => {}
        "Exists" if !value.is_empty() => {
            let why = "value must be empty when `operator` is 'Exists'";
            faults.push(invalid(format!("{at}.operator"), &toleration["value"], why));
        }
        "Exists" => {}
        _ => faults.push(not_supported(
            &format!("{at}.operator"),
            &toleration["operator"],
            &["Equal", "Exists"],
        )),
    }
    faults
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
    let mut faults = positive_int_or_percent(field, value);
    faults.extend(not_above_100_percent(field, value));
    faults
}

/// The digits of a well-formed percentage (`[0-9]+%`), if `value` is one.
fn percent_digits(value: &Value) -> Option<&str> {
    value
        .as_str()?
        .strip_suffix('%')
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The faults of an int-or-percent at `field` as apps' `ValidatePositiveIntOrPercent`: a
/// count not negative, or a well-formed percentage (of any size).
pub(crate) fn positive_int_or_percent(field: &str, value: &Value) -> Vec<Fault> {
    match value {
        Value::Number(n) if n.as_i64().is_some_and(|n| n < 0) => {
            vec![invalid(field, value, "must be greater than or equal to 0")]
        }
        Value::String(_) if percent_digits(value).is_none() => vec![invalid(
            field,
            value,
            "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        )],
        _ => Vec::new(),
    }
}

/// A well-formed percentage at `field` above 100% (`IsNotMoreThan100Percent`).
pub(crate) fn not_above_100_percent(field: &str, value: &Value) -> Option<Fault> {
    percent_digits(value)
        .filter(|d| d.parse::<u64>().map_or(true, |p| p > 100))
        .map(|_| invalid(field, value, "must not be greater than 100%"))
}

/// The count an int-or-percent stands for as apps' `getIntOrPercentValue` reads it: a
/// percentage's number, a count itself, anything else 0.
pub(crate) fn int_or_percent_value(value: &Value) -> i64 {
    percent_digits(value)
        .map(|d| d.parse().unwrap_or(i64::MAX))
        .or_else(|| value.as_i64())
        .unwrap_or(0)
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
pub(crate) fn ordered(object: &Value, order: &[&str]) -> String {
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
    let mut faults = crate::networking_kinds::ingress_spec_before_rules(spec);
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
            }
            for why in crate::networking_kinds::host_errors(host) {
                faults.push(invalid(&field, &rule["host"], &why));
            }
        }
        if !rule["http"].is_object() {
            continue;
        }
        let paths = rule["http"]["paths"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if paths.is_empty() {
            faults.push(required(&format!("{at}.http.paths"), ""));
        }
        for (j, path) in paths.iter().enumerate() {
            let at = format!("{at}.http.paths[{j}]");
            match path["pathType"].as_str() {
                None => {
                    faults.push(required(
                        &format!("{at}.pathType"),
                        "pathType must be specified",
                    ));
                    continue;
                }
                Some("Exact" | "Prefix") => {
                    if !path["path"].as_str().is_some_and(|p| p.starts_with('/')) {
                        faults.push(invalid(
                            format!("{at}.path"),
                            &path["path"],
                            "must be an absolute path",
                        ));
                    }
                }
                Some("ImplementationSpecific") => {
                    let p = path["path"].as_str().unwrap_or_default();
                    if !p.is_empty() && !p.starts_with('/') {
                        faults.push(invalid(
                            format!("{at}.path"),
                            &path["path"],
                            "must be an absolute path",
                        ));
                    }
                }
                Some(_) => faults.push(not_supported(
                    &format!("{at}.pathType"),
                    &path["pathType"],
                    &["Exact", "ImplementationSpecific", "Prefix"],
                )),
            }
            let backend = &path["backend"];
            faults.extend(crate::networking_kinds::ingress_backend(
                backend,
                &format!("{at}.backend"),
            ));
        }
    }
    faults.extend(crate::networking_kinds::ingress_spec_after_rules(spec));
    faults
}

fn network_policy(spec: &Value) -> Vec<Fault> {
    let mut faults =
        crate::selectors::label_selector_faults(&spec["podSelector"], "spec.podSelector");
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in spec[direction].as_array().into_iter().flatten().enumerate() {
            let at = format!("spec.{direction}[{i}]");
            for (j, port) in rule["ports"].as_array().into_iter().flatten().enumerate() {
                let at = format!("{at}.ports[{j}]");
                faults.extend(crate::networking_kinds::network_policy_port(port, &at));
            }
            for (j, peer) in rule[peers].as_array().into_iter().flatten().enumerate() {
                let at = format!("{at}.{peers}[{j}]");
                faults.extend(crate::networking_kinds::network_policy_peer(peer, &at));
            }
        }
    }
    let types = spec["policyTypes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, kind) in types.iter().enumerate() {
        if !matches!(kind.as_str(), Some("Ingress" | "Egress")) {
            let field = format!("spec.policyTypes[{i}]");
            faults.push(not_supported(&field, kind, &["Ingress", "Egress"]));
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
