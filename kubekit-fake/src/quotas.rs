//! ResourceQuotas: the status kube-controller-manager's resource quota controller keeps,
//! and kube-apiserver 1.37's ResourceQuota admission plugin.
//!
//! - **Status**: a quota's `status.hard` is its `spec.hard`, its `status.used` what the
//!   objects of its namespace use of each: recomputed whenever one of them is written
//!   (the real controller does it a moment later; its admission counts a create at once).
//! - **Usage**: `count/<resource>[.<group>]` counts any resource's objects; `pods`,
//!   `services`, `configmaps`, `secrets`, `persistentvolumeclaims`,
//!   `replicationcontrollers` and `resourcequotas` count theirs (Pods neither `Succeeded`
//!   nor `Failed`); a Pod uses its containers' requests and limits (summed, an init
//!   container's where larger) as `requests.cpu` (and `cpu`), `limits.cpu`, likewise
//!   memory and ephemeral storage; a Service `services.loadbalancers` and
//!   `services.nodeports`; a claim `requests.storage`.
//! - **Admission** of a create or update: a Pod lacking a request or limit a quota of its
//!   namespace bounds is refused (`failed quota: <quota>: must specify limits.cpu for:
//!   <containers>; ...`), and so is what would take a quota past its hard limits
//!   (`exceeded quota: <quota>, requested: pods=1, used: pods=2, limited: pods=2`), with
//!   the real server's `403`.
//!
//! Not done: quota `scopes` and `scopeSelector` (a scoped quota is kept up to date but not
//! enforced), per-storage-class claims, extended resources, and the plugin's
//! configuration (`limitedResources`).

use std::collections::BTreeMap;

use num_bigint::BigInt;
use serde_json::{Map, Value, json};

use crate::cel_library::quantity::canonical_of_milli;
use crate::limit_ranges::{pod_resources, thousandths};
use crate::resources::ResourceInfo;

/// A resource's usage: thousandths, and whether written in binary SI.
type Usage = BTreeMap<String, (BigInt, bool)>;

/// The core resources whose objects a quota counts by their plural alone.
const COUNTED: &[&str] = &[
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

fn one() -> (BigInt, bool) {
    (BigInt::from(1000), false)
}

/// What `obj` (of `info`) uses of every quota resource it counts toward.
pub(crate) fn usage(info: &ResourceInfo, obj: &Value) -> Usage {
    let mut used = Usage::new();
    let counted = match info.group.as_str() {
        "" => format!("count/{}", info.plural),
        group => format!("count/{}.{group}", info.plural),
    };
    used.insert(counted, one());
    if !info.builtin || !info.group.is_empty() {
        return used;
    }
    let kind = info.kind.as_str();
    let pod_counts = kind != "Pod"
        || !matches!(
            obj["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        );
    if COUNTED.contains(&info.plural.as_str()) && pod_counts {
        used.insert(info.plural.clone(), one());
    }
    match kind {
        "Pod" if pod_counts => {
            for (key, prefix) in [("requests", "requests."), ("limits", "limits.")] {
                for (resource, amount) in pod_resources(obj, key) {
                    if !matches!(resource.as_str(), "cpu" | "memory" | "ephemeral-storage") {
                        continue;
                    }
                    if key == "requests" {
                        used.insert(resource.clone(), amount.clone());
                    }
                    used.insert(format!("{prefix}{resource}"), amount);
                }
            }
        }
        "Service" => {
            let kind = obj["spec"]["type"].as_str().unwrap_or("ClusterIP");
            if kind == "LoadBalancer" {
                used.insert("services.loadbalancers".into(), one());
            }
            if matches!(kind, "NodePort" | "LoadBalancer") {
                let ports = obj["spec"]["ports"].as_array().map_or(0, Vec::len);
                let count = (BigInt::from(ports) * 1000, false);
                used.insert("services.nodeports".into(), count);
            }
        }
        "PersistentVolumeClaim" => {
            let storage = &obj["spec"]["resources"]["requests"]["storage"];
            if let Some(amount) = thousandths(storage) {
                let binary = storage
                    .as_str()
                    .is_some_and(crate::cel_library::quantity::is_binary);
                used.insert("requests.storage".into(), (amount, binary));
            }
        }
        _ => {}
    }
    used
}

/// A quota's `spec.hard`, in thousandths.
fn hard(quota: &Value) -> Usage {
    quota["spec"]["hard"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let binary = v
                .as_str()
                .is_some_and(crate::cel_library::quantity::is_binary);
            Some((k.clone(), (thousandths(v)?, binary)))
        })
        .collect()
}

/// Whether a quota is scoped (and so not enforced here).
fn scoped(quota: &Value) -> bool {
    quota["spec"]["scopes"]
        .as_array()
        .is_some_and(|s| !s.is_empty())
        || quota["spec"]["scopeSelector"].is_object()
}

fn written(usage: &Usage) -> Map<String, Value> {
    usage
        .iter()
        .map(|(k, (v, binary))| (k.clone(), json!(canonical_of_milli(v, *binary))))
        .collect()
}

/// The status of `quota` whose namespace holds `objects` (each with its resource).
pub(crate) fn status(quota: &Value, objects: &[(ResourceInfo, std::sync::Arc<Value>)]) -> Value {
    let hard = hard(quota);
    let mut used: Usage = hard
        .keys()
        .map(|k| (k.clone(), (BigInt::default(), false)))
        .collect();
    for (info, obj) in objects {
        for (resource, (amount, binary)) in usage(info, obj) {
            if let Some((sum, sum_binary)) = used.get_mut(&resource) {
                if *sum == BigInt::default() {
                    *sum_binary = binary;
                }
                *sum += amount;
            }
        }
    }
    json!({"hard": written(&hard), "used": written(&used)})
}

/// The ResourceQuota admission plugin: why a create (`old` is `None`) or update of `obj`
/// (of `info`) is refused by the namespace's `quotas` (whose `status.used` is current),
/// if it is.
pub(crate) fn refusal(
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
    quotas: &[Value],
) -> Option<String> {
    let new_usage = usage(info, obj);
    let old_usage = old.map(|o| usage(info, o)).unwrap_or_default();
    let mut delta = Usage::new();
    for (resource, (amount, binary)) in &new_usage {
        let before = old_usage
            .get(resource)
            .map(|(a, _)| a.clone())
            .unwrap_or_default();
        if *amount > before {
            delta.insert(resource.clone(), (amount - before, *binary));
        }
    }
    for quota in quotas.iter().filter(|q| !scoped(q)) {
        let name = quota["metadata"]["name"].as_str().unwrap_or_default();
        let hard = hard(quota);
        let is_pod = info.builtin && info.group.is_empty() && info.kind == "Pod";
        if is_pod && let Some(missing) = missing(obj, &hard) {
            return Some(format!("failed quota: {name}: must specify {missing}"));
        }
        let used = &quota["status"]["used"];
        let mut exceeded = Vec::new();
        for (resource, (requested, binary)) in &delta {
            let Some((limit, _)) = hard.get(resource) else {
                continue;
            };
            let already = thousandths(&used[resource]).unwrap_or_default();
            if &already + requested > *limit {
                exceeded.push((resource, requested, *binary, already));
            }
        }
        if exceeded.is_empty() {
            continue;
        }
        let print = |pairs: Vec<(&String, String)>| {
            pairs
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let requested = exceeded
            .iter()
            .map(|(k, v, binary, _)| (*k, canonical_of_milli(v, *binary)))
            .collect();
        let used_now = exceeded
            .iter()
            .map(|(k, _, _, _)| (*k, used[k.as_str()].as_str().unwrap_or("0").to_string()))
            .collect();
        let limited = exceeded
            .iter()
            .map(|(k, _, _, _)| {
                let (v, binary) = &hard[k.as_str()];
                (*k, canonical_of_milli(v, *binary))
            })
            .collect();
        return Some(format!(
            "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
            print(requested),
            print(used_now),
            print(limited)
        ));
    }
    None
}

/// The compute resources a quota bounds (of `hard`) that a container of `pod` does not
/// set: `limits.cpu for: a; requests.cpu for: a,b`.
fn missing(pod: &Value, hard: &Usage) -> Option<String> {
    const BOUND: &[&str] = &[
        "cpu",
        "memory",
        "requests.cpu",
        "requests.memory",
        "limits.cpu",
        "limits.memory",
    ];
    let required: Vec<&str> = BOUND
        .iter()
        .copied()
        .filter(|r| hard.contains_key(*r))
        .collect();
    let mut lacking: BTreeMap<&str, std::collections::BTreeSet<String>> = BTreeMap::new();
    for list in ["containers", "initContainers"] {
        for container in pod["spec"][list].as_array().into_iter().flatten() {
            let resources = &container["resources"];
            let sets = |resource: &str| match resource.split_once('.') {
                Some(("limits", r)) => resources["limits"].get(r).is_some(),
                Some((_, r)) => resources["requests"].get(r).is_some(),
                None => resources["requests"].get(resource).is_some(),
            };
            for resource in required.iter().filter(|r| !sets(r)) {
                let name = container["name"].as_str().unwrap_or_default().to_string();
                lacking.entry(resource).or_default().insert(name);
            }
        }
    }
    if lacking.is_empty() {
        return None;
    }
    let parts: Vec<String> = lacking
        .into_iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names.into_iter().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    Some(parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods_info() -> ResourceInfo {
        crate::store::Store::new()
            .lookup("", "v1", "pods")
            .expect("pods are built in")
    }

    #[test]
    fn a_pod_uses_its_count_and_its_containers_requests_and_limits() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}}]}});
        let used = written(&usage(&pods_info(), &pod));
        assert_eq!(used["pods"], "1");
        assert_eq!(used["requests.cpu"], "500m");
        assert_eq!(used["cpu"], "500m");
        assert_eq!(used["limits.memory"], "2Gi");
        assert_eq!(used["count/pods"], "1");
        let done = json!({"spec": pod["spec"], "status": {"phase": "Succeeded"}});
        assert!(!usage(&pods_info(), &done).contains_key("pods"));
    }

    #[test]
    fn a_pod_past_a_quota_or_without_what_it_bounds_is_refused() {
        let quota = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1", "limits.cpu": "1"}},
            "status": {"used": {"pods": "1", "limits.cpu": "500m"}}});
        let bare = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            refusal(&pods_info(), &bare, None, std::slice::from_ref(&quota)).as_deref(),
            Some("failed quota: q: must specify limits.cpu for: a,b")
        );
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "600m"}}}]}});
        assert_eq!(
            refusal(&pods_info(), &pod, None, &[quota]).as_deref(),
            Some(
                "exceeded quota: q, requested: limits.cpu=600m,pods=1, used: limits.cpu=500m,pods=1, limited: limits.cpu=1,pods=1"
            )
        );
    }
}
