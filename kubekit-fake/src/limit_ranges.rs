//! The LimitRanger admission plugin of kube-apiserver 1.37, and the defaults of a
//! LimitRange's items.
//!
//! - **A LimitRange's `Container` items** are defaulted when written, as the real server
//!   does: `default` from `max`, `defaultRequest` from `default`, then from `min`.
//! - **A Pod being created** gets, in each container and init container, the `default`
//!   limits and `defaultRequest` requests of the namespace's `Container` items that it
//!   does not set, and the annotation `kubernetes.io/limit-ranger` saying what was set.
//!   Then its containers are checked against `min`, `max` and `maxLimitRequestRatio` of
//!   the `Container` items, and the Pod's summed requests and limits against those of the
//!   `Pod` items; a PersistentVolumeClaim being created, its storage request against the
//!   `PersistentVolumeClaim` items. A breach refuses the create with the real server's
//!   `403` and texts (`pods "p" is forbidden: maximum cpu usage per Container is 1, but
//!   limit is 2`, several as `[..., ...]`).
//! - Quantities compare in thousandths, as Go's `MilliValue` does, and are written as the
//!   real server writes them back.
//!
//! Not done: pod-level resources (`spec.resources`) and Pod overhead in the `Pod` sums;
//! the checks of PersistentVolumeClaim updates; and the plugin's place in the admission
//! chain: it runs when the object is stored, after MutatingAdmissionPolicies and mutating
//! webhooks, where the real server runs it before them (they do not see its defaults).

use std::collections::BTreeMap;

use num_bigint::BigInt;
use serde_json::{Map, Value, json};

use crate::cel_library::quantity::{canonical, canonical_of_milli, is_binary, milli};

/// The annotation that says what LimitRanger set.
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The defaults of a LimitRange's `Container` items (`SetDefaults_LimitRangeItem`); a map
/// that stays empty is not written, as the real server does not store one.
pub(crate) fn default_items(limit_range: &mut Value) {
    let items = limit_range
        .get_mut("spec")
        .and_then(|spec| spec.get_mut("limits"))
        .and_then(Value::as_array_mut);
    for item in items.into_iter().flatten() {
        let Some(item) = item
            .as_object_mut()
            .filter(|i| i.get("type") == Some(&json!("Container")))
        else {
            continue;
        };
        for (from, to) in [
            ("max", "default"),
            ("default", "defaultRequest"),
            ("min", "defaultRequest"),
        ] {
            let source = item
                .get(from)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if !item.get(to).is_none_or(Value::is_object) {
                continue;
            }
            for (resource, quantity) in source {
                let target = item.entry(to).or_insert_with(|| json!({}));
                if let Some(target) = target.as_object_mut() {
                    target.entry(resource).or_insert(quantity);
                }
            }
        }
    }
}

/// LimitRanger on `obj` (a Pod or PersistentVolumeClaim being created) with the
/// namespace's `limit_ranges`: the Pod's defaults set, then every breach, in the real
/// server's words (none: admitted).
pub(crate) fn admit(kind: &str, obj: &mut Value, limit_ranges: &[Value]) -> Vec<String> {
    if kind == "Pod" {
        for limit_range in limit_ranges {
            set_defaults(obj, limit_range);
        }
    }
    // The first LimitRange with breaches refuses, as Go's plugin returns there.
    for limit_range in limit_ranges {
        let items = limit_range["spec"]["limits"]
            .as_array()
            .into_iter()
            .flatten();
        let mut breaches = Vec::new();
        for item in items {
            match kind {
                "Pod" => breaches.extend(pod_breaches(obj, item)),
                "PersistentVolumeClaim" if item["type"] == "PersistentVolumeClaim" => {
                    let requests = &obj["spec"]["resources"]["requests"];
                    let kind = "PersistentVolumeClaim";
                    for (resource, bound) in entries(&item["min"]) {
                        breaches.extend(min(kind, resource, bound, requests, &Value::Null));
                    }
                    for (resource, bound) in entries(&item["max"]) {
                        breaches.extend(max_request(kind, resource, bound, requests));
                    }
                }
                _ => {}
            }
        }
        if !breaches.is_empty() {
            return breaches;
        }
    }
    Vec::new()
}

fn entries(v: &Value) -> impl Iterator<Item = (&str, &Value)> {
    v.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v))
}

/// A quantity's text, written back as the real server writes it.
fn shown(q: &Value) -> String {
    let text = q
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| q.to_string());
    canonical(&text).unwrap_or(text)
}

/// A quantity in thousandths (numbers as written in JSON too).
pub(crate) fn thousandths(q: &Value) -> Option<BigInt> {
    match q {
        Value::String(s) => milli(s),
        Value::Number(n) => milli(&n.to_string()),
        _ => None,
    }
}

/// `mergePodResourceRequirements` of one LimitRange's `Container` defaults.
fn set_defaults(pod: &mut Value, limit_range: &Value) {
    let mut limits = Map::new();
    let mut requests = Map::new();
    for item in limit_range["spec"]["limits"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if item["type"] == "Container" {
            limits.extend(item["default"].as_object().cloned().unwrap_or_default());
            requests.extend(
                item["defaultRequest"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            );
        }
    }
    let mut notes = Vec::new();
    for (list, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let containers = pod
            .get_mut("spec")
            .and_then(|spec| spec.get_mut(list))
            .and_then(Value::as_array_mut);
        for container in containers.into_iter().flatten() {
            let Some(container) = container.as_object_mut() else {
                continue;
            };
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let resources = container.entry("resources").or_insert_with(|| json!({}));
            let Some(resources) = resources.as_object_mut() else {
                continue;
            };
            let mut set = |key: &str, defaults: &Map<String, Value>| {
                let mut added: Vec<&str> = Vec::new();
                for (k, v) in defaults {
                    let list = resources.entry(key).or_insert_with(|| json!({}));
                    let Some(list) = list.as_object_mut() else {
                        break;
                    };
                    if !list.contains_key(k) {
                        list.insert(k.clone(), v.clone());
                        added.push(k);
                    }
                }
                added.sort_unstable();
                added.join(", ")
            };
            let (set_requests, set_limits) = (set("requests", &requests), set("limits", &limits));
            if !set_requests.is_empty() {
                notes.push(format!("{set_requests} request for {what} {name}"));
            }
            if !set_limits.is_empty() {
                notes.push(format!("{set_limits} limit for {what} {name}"));
            }
        }
    }
    let metadata = pod
        .as_object_mut()
        .map(|p| p.entry("metadata").or_insert_with(|| json!({})));
    if let Some(metadata) = metadata.and_then(Value::as_object_mut)
        && !notes.is_empty()
    {
        let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
        if let Some(annotations) = annotations.as_object_mut() {
            let note = format!("LimitRanger plugin set: {}", notes.join("; "));
            annotations.insert(ANNOTATION.into(), json!(note));
        }
    }
}

/// The breaches of a Pod of one LimitRange item.
fn pod_breaches(pod: &Value, item: &Value) -> Vec<String> {
    let mut breaches = Vec::new();
    let mut check = |kind: &str, requests: &Value, limits: &Value| {
        for (resource, bound) in entries(&item["min"]) {
            breaches.extend(min(kind, resource, bound, requests, limits));
        }
        for (resource, bound) in entries(&item["max"]) {
            breaches.extend(max(kind, resource, bound, requests, limits));
        }
        for (resource, bound) in entries(&item["maxLimitRequestRatio"]) {
            breaches.extend(ratio(kind, resource, bound, requests, limits));
        }
    };
    match item["type"].as_str() {
        Some("Container") => {
            for list in ["containers", "initContainers"] {
                for container in pod["spec"][list].as_array().into_iter().flatten() {
                    let resources = &container["resources"];
                    check("Container", &resources["requests"], &resources["limits"]);
                }
            }
        }
        Some("Pod") => {
            let (requests, limits) = (pod_total(pod, "requests"), pod_total(pod, "limits"));
            check("Pod", &requests, &limits);
        }
        _ => {}
    }
    breaches
}

/// A Pod's requests or limits (`key`) per resource, in thousandths: its containers' and
/// sidecars' summed, or an init container's (with the sidecars before it) where larger;
/// with whether each is written in binary SI (the format of the quantity it took first,
/// as a Go quantity sum keeps it).
pub(crate) fn pod_resources(pod: &Value, key: &str) -> BTreeMap<String, (BigInt, bool)> {
    type Total = BTreeMap<String, (BigInt, bool)>;
    // Adds `container`'s resources to `total`; a first one gives a sum its format.
    let add = |total: &mut Total, container: &Value| {
        for (resource, q) in entries(&container["resources"][key]) {
            let (sum, binary) = total.entry(resource.to_string()).or_default();
            if *sum == BigInt::default() {
                *binary = q.as_str().is_some_and(is_binary);
            }
            *sum += thousandths(q).unwrap_or_default();
        }
    };
    let mut total = Total::new();
    for container in pod["spec"]["containers"].as_array().into_iter().flatten() {
        add(&mut total, container);
    }
    // Sidecars (init containers that restart) run beside the rest; each other init
    // container runs alone beside the sidecars started before it (Go's `PodRequests`).
    let mut sidecars = Total::new();
    let mut init_peak = Total::new();
    for container in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if container["restartPolicy"] == "Always" {
            add(&mut total, container);
            add(&mut sidecars, container);
        } else {
            let mut running = sidecars.clone();
            add(&mut running, container);
            for (resource, (value, binary)) in running {
                let (peak, peak_binary) = init_peak.entry(resource).or_default();
                if value > *peak {
                    (*peak, *peak_binary) = (value, binary);
                }
            }
        }
    }
    for (resource, (value, binary)) in init_peak {
        let (sum, sum_binary) = total.entry(resource).or_default();
        if value > *sum {
            (*sum, *sum_binary) = (value, binary);
        }
    }
    total
}

/// [`pod_resources`] as quantities written back.
fn pod_total(pod: &Value, key: &str) -> Value {
    Value::Object(
        pod_resources(pod, key)
            .into_iter()
            .map(|(k, (v, binary))| (k, json!(canonical_of_milli(&v, binary))))
            .collect(),
    )
}

fn min(
    kind: &str,
    resource: &str,
    bound: &Value,
    requests: &Value,
    limits: &Value,
) -> Option<String> {
    let enforced = thousandths(bound)?;
    let b = shown(bound);
    let Some(request) = requests.get(resource) else {
        return Some(format!(
            "minimum {resource} usage per {kind} is {b}.  No request is specified"
        ));
    };
    if thousandths(request)? < enforced {
        return Some(format!(
            "minimum {resource} usage per {kind} is {b}, but request is {}",
            shown(request)
        ));
    }
    let limit = limits.get(resource)?;
    (thousandths(limit)? < enforced).then(|| {
        format!(
            "minimum {resource} usage per {kind} is {b}, but limit is {}",
            shown(limit)
        )
    })
}

fn max_request(kind: &str, resource: &str, bound: &Value, requests: &Value) -> Option<String> {
    let enforced = thousandths(bound)?;
    let b = shown(bound);
    let Some(request) = requests.get(resource) else {
        return Some(format!(
            "maximum {resource} usage per {kind} is {b}.  No request is specified"
        ));
    };
    (thousandths(request)? > enforced).then(|| {
        format!(
            "maximum {resource} usage per {kind} is {b}, but request is {}",
            shown(request)
        )
    })
}

fn max(
    kind: &str,
    resource: &str,
    bound: &Value,
    requests: &Value,
    limits: &Value,
) -> Option<String> {
    let enforced = thousandths(bound)?;
    let b = shown(bound);
    let Some(limit) = limits.get(resource) else {
        return Some(format!(
            "maximum {resource} usage per {kind} is {b}.  No limit is specified"
        ));
    };
    if thousandths(limit)? > enforced {
        return Some(format!(
            "maximum {resource} usage per {kind} is {b}, but limit is {}",
            shown(limit)
        ));
    }
    let request = requests.get(resource)?;
    (thousandths(request)? > enforced).then(|| {
        format!(
            "maximum {resource} usage per {kind} is {b}, but request is {}",
            shown(request)
        )
    })
}

fn ratio(
    kind: &str,
    resource: &str,
    bound: &Value,
    requests: &Value,
    limits: &Value,
) -> Option<String> {
    let b = shown(bound);
    let zero = BigInt::default();
    let request = requests
        .get(resource)
        .and_then(thousandths)
        .filter(|r| *r != zero);
    let Some(request) = request else {
        return Some(format!(
            "{resource} max limit to request ratio per {kind} is {b}, but no request is specified or request is 0"
        ));
    };
    let limit = limits
        .get(resource)
        .and_then(thousandths)
        .filter(|l| *l != zero);
    let Some(limit) = limit else {
        return Some(format!(
            "{resource} max limit to request ratio per {kind} is {b}, but no limit is specified or limit is 0"
        ));
    };
    let as_float = |v: &BigInt| v.to_string().parse::<f64>().unwrap_or(f64::INFINITY);
    let observed = as_float(&limit) / as_float(&request);
    let enforced = as_float(&thousandths(bound)?) / 1000.0;
    (observed > enforced).then(|| {
        format!("{resource} max limit to request ratio per {kind} is {b}, but provided ratio is {observed:.6}")
    })
}

/// The real server's refusal message of `breaches` (Go's aggregate error: each distinct
/// message once; one, or `[a, b]`).
pub(crate) fn refusal(breaches: &[String]) -> String {
    let mut distinct: Vec<&String> = Vec::new();
    for b in breaches {
        if !distinct.contains(&b) {
            distinct.push(b);
        }
    }
    match distinct.as_slice() {
        [one] => (*one).clone(),
        all => format!(
            "[{}]",
            all.iter()
                .map(|b| b.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(limits: Value) -> Value {
        let mut lr = json!({"spec": {"limits": limits}});
        default_items(&mut lr);
        lr
    }

    #[test]
    fn container_items_default_limits_from_max_and_requests_from_limits_then_min() {
        let lr =
            range(json!([{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}}]));
        assert_eq!(lr["spec"]["limits"][0]["default"], json!({"cpu": "2"}));
        assert_eq!(
            lr["spec"]["limits"][0]["defaultRequest"],
            json!({"cpu": "2", "memory": "64Mi"})
        );
    }

    #[test]
    fn pods_get_the_defaults_they_lack_and_an_annotation_saying_so() {
        let lr = range(
            json!([{"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"},
            "defaultRequest": {"cpu": "250m"}}]),
        );
        let mut pod = json!({"metadata": {}, "spec": {"containers": [
            {"name": "a", "resources": {"limits": {"memory": "1Gi"}}}]}});
        assert_eq!(admit("Pod", &mut pod, &[lr]), Vec::<String>::new());
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"memory": "1Gi", "cpu": "500m"}, "requests": {"cpu": "250m", "memory": "128Mi"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container a; cpu limit for container a"
        );
    }

    #[test]
    fn breaches_name_the_bound_and_what_was_asked_in_canonical_form() {
        let lr = range(
            json!([{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "100m"},
            "maxLimitRequestRatio": {"cpu": "2"}}]),
        );
        let mut pod = json!({"metadata": {}, "spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "2000m"}, "requests": {"cpu": "0.5"}}}]}});
        assert_eq!(
            admit("Pod", &mut pod, &[lr]),
            [
                "maximum cpu usage per Container is 1, but limit is 2",
                "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
            ]
        );
    }
}
