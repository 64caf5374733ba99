//! What the real server defaults in Pods and in the workloads the fake serves that hold a
//! Pod template (Deployments, ReplicaSets), as the differential suite compares it
//! (`pods_and_workloads_are_defaulted_alike`):
//!
//! - every Pod spec: `dnsPolicy`, `restartPolicy`, `schedulerName`, `securityContext`,
//!   `terminationGracePeriodSeconds`; each container's and init container's
//!   `imagePullPolicy` (from the image's tag), termination message path and policy,
//!   `resources`, ports' protocol, probes' periods, thresholds and HTTP path and scheme,
//!   `fieldRef.apiVersion`; volumes' `defaultMode` and a host path's `type`;
//! - a Pod itself also: `enableServiceLinks`, requests copied from limits, and on create
//!   a status of `phase: Pending` with its QoS class; and on create, after its fields are
//!   recorded in managedFields as admission comes after them on the real server
//!   ([`admit`]): the priority and preemption policy of the default priority class and the
//!   two `NoExecute` tolerations the `DefaultTolerationSeconds` admission plugin adds;
//! - the workloads' own fields (replicas, strategy, history limit, progress deadline)
//!   and, on create, the empty status the real server starts them with.
//!
//! Values that are not of the expected shape are left as they are (the server would
//! refuse to decode them); nothing here panics on a body.

use serde_json::{Map, Value, json};

/// Fills in what the real server defaults in `obj`, a built-in object of `group`/`kind`;
/// `creating` resets the status the way the real server does on create.
pub fn apply(group: &str, kind: &str, obj: &mut Value, creating: bool) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match (group, kind) {
        ("", "Pod") => {
            if let Some(spec) = object(root, "spec") {
                pod_spec(spec);
                pod_only(spec);
                if creating {
                    let qos = qos_class(spec);
                    root.insert(
                        "status".into(),
                        json!({"phase": "Pending", "qosClass": qos}),
                    );
                }
            }
        }
        ("apps", "Deployment") => workload(root, creating, json!({}), |spec| {
            default(spec, "replicas", json!(1));
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "progressDeadlineSeconds", json!(600));
            if let Some(strategy) = object_or_new(spec, "strategy") {
                default(strategy, "type", json!("RollingUpdate"));
                if strategy.get("type") == Some(&json!("RollingUpdate"))
                    && let Some(rolling) = object_or_new(strategy, "rollingUpdate")
                {
                    default(rolling, "maxUnavailable", json!("25%"));
                    default(rolling, "maxSurge", json!("25%"));
                }
            }
        }),
        ("apps", "ReplicaSet") => workload(root, creating, json!({"replicas": 0}), |spec| {
            default(spec, "replicas", json!(1));
        }),
        _ => {}
    }
}

/// A workload: its spec's own defaults (`defaults`), its Pod template's, and on create
/// `status`.
fn workload(
    root: &mut Map<String, Value>,
    creating: bool,
    status: Value,
    defaults: impl FnOnce(&mut Map<String, Value>),
) {
    if creating {
        root.insert("status".into(), status);
    }
    if let Some(spec) = object(root, "spec") {
        defaults(spec);
        template(spec);
    }
}

/// The Pod template of a workload's spec.
fn template(spec: &mut Map<String, Value>) {
    if let Some(template) = object(spec, "template") {
        default(template, "metadata", json!({}));
        if let Some(pod) = object(template, "spec") {
            pod_spec(pod);
        }
    }
}

/// `SetDefaults_PodSpec` and what it defaults in containers and volumes.
fn pod_spec(spec: &mut Map<String, Value>) {
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "securityContext", json!({}));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    for list in ["containers", "initContainers"] {
        for container in objects(spec, list) {
            self::container(container);
        }
    }
    for volume in objects(spec, "volumes") {
        for source in ["configMap", "secret", "projected", "downwardAPI"] {
            if let Some(source) = object(volume, source) {
                default(source, "defaultMode", json!(420));
            }
        }
        if let Some(items) = object(volume, "downwardAPI") {
            for item in objects(items, "items") {
                field_ref(item);
            }
        }
        if let Some(host_path) = object(volume, "hostPath") {
            default(host_path, "type", json!(""));
        }
    }
}

/// What the real server defaults in a container.
fn container(c: &mut Map<String, Value>) {
    if let Some(image) = c.get("image").and_then(Value::as_str) {
        let policy = if image_tag(image) == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        default(c, "imagePullPolicy", json!(policy));
    }
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default(c, "terminationMessagePolicy", json!("File"));
    default(c, "resources", json!({}));
    for port in objects(c, "ports") {
        default(port, "protocol", json!("TCP"));
    }
    for env in objects(c, "env") {
        if let Some(from) = object(env, "valueFrom") {
            field_ref(from);
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = object(c, probe) {
            default(probe, "timeoutSeconds", json!(1));
            default(probe, "periodSeconds", json!(10));
            default(probe, "successThreshold", json!(1));
            default(probe, "failureThreshold", json!(3));
            if let Some(http) = object(probe, "httpGet") {
                default(http, "path", json!("/"));
                default(http, "scheme", json!("HTTP"));
            }
        }
    }
}

/// A `fieldRef`'s `apiVersion` (`v1`) in `holder`.
fn field_ref(holder: &mut Map<String, Value>) {
    if let Some(field) = object(holder, "fieldRef") {
        default(field, "apiVersion", json!("v1"));
    }
}

/// The tag an image reference pulls: its own, none for a digest, `latest` when it names
/// neither (how the real server picks the pull policy).
fn image_tag(image: &str) -> Option<&str> {
    if image.contains('@') {
        return None;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    Some(last.split_once(':').map_or("latest", |(_, tag)| tag))
}

/// What admission adds to a Pod being created, after the write's fields are recorded (so
/// no manager owns them): the default priority class's priority and preemption policy,
/// and the `DefaultTolerationSeconds` tolerations.
pub fn admit(group: &str, kind: &str, obj: &mut Value) {
    if (group, kind) != ("", "Pod") {
        return;
    }
    let Some(spec) = obj.as_object_mut().and_then(|root| object(root, "spec")) else {
        return;
    };
    if spec.get("priorityClassName").is_none_or(Value::is_null) {
        default(spec, "priority", json!(0));
        default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
    if let Some(tolerations) = array_or_new(spec, "tolerations") {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = tolerations.iter().any(|t| {
                let exists = t["operator"] == json!("Exists");
                (t["key"] == json!(key) || (t["key"].is_null() && exists))
                    && (t["effect"].is_null() || t["effect"] == json!("NoExecute"))
            });
            if !tolerated {
                tolerations.push(json!({"key": key, "operator": "Exists",
                                        "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
}

/// What a Pod's spec gets beyond a template's defaults: service links and requests
/// copied from limits.
fn pod_only(spec: &mut Map<String, Value>) {
    default(spec, "enableServiceLinks", json!(true));
    for list in ["containers", "initContainers"] {
        for container in objects(spec, list) {
            let Some(resources) = object(container, "resources") else {
                continue;
            };
            let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
                continue;
            };
            if let Some(requests) = object_or_new(resources, "requests") {
                for (name, limit) in limits {
                    requests.entry(name).or_insert(limit);
                }
            }
        }
    }
}

/// The QoS class of a Pod spec (apimachinery's `ComputePodQOS` over CPU and memory).
fn qos_class(spec: &Map<String, Value>) -> &'static str {
    let mut requests: Vec<(&str, f64)> = Vec::new();
    let mut limits: Vec<(&str, f64)> = Vec::new();
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .into_iter()
        .filter_map(|list| spec.get(list).and_then(Value::as_array))
        .flatten();
    for c in containers {
        let resources = &c["resources"];
        for (name, amount) in compute_resources(&resources["requests"]) {
            add(&mut requests, name, amount);
        }
        let found = compute_resources(&resources["limits"]);
        let has = |n: &str| found.iter().any(|(name, _)| *name == n);
        if !(has("cpu") && has("memory")) {
            guaranteed = false;
        }
        for (name, amount) in found {
            add(&mut limits, name, amount);
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let equal = requests
        .iter()
        .all(|(name, r)| limits.iter().any(|(n, l)| n == name && l == r));
    if guaranteed && equal && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The positive CPU and memory amounts of a resource list.
fn compute_resources(list: &Value) -> Vec<(&'static str, f64)> {
    ["cpu", "memory"]
        .into_iter()
        .filter_map(|name| {
            let amount = quantity(list[name].as_str()?)?;
            (amount > 0.0).then_some((name, amount))
        })
        .collect()
}

fn add(sums: &mut Vec<(&'static str, f64)>, name: &'static str, amount: f64) {
    match sums.iter_mut().find(|(n, _)| *n == name) {
        Some((_, sum)) => *sum += amount,
        None => sums.push((name, amount)),
    }
}

/// The value of a resource quantity (`100m`, `1Gi`, `1e3`, `0.5`), if it is one.
fn quantity(text: &str) -> Option<f64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent => 10f64.powi(exponent.strip_prefix(['e', 'E'])?.parse().ok()?),
    };
    Some(number * scale)
}

/// Sets `key` to `value` unless it holds something other than `null`.
fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    let slot = map.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = value;
    }
}

/// `map[key]` when it is an object.
fn object<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// `map[key]`, made an empty object when it is absent or `null`; `None` when it is
/// something else.
fn object_or_new<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    default(map, key, json!({}));
    object(map, key)
}

/// `map[key]`, made an empty array when it is absent or `null`.
fn array_or_new<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Vec<Value>> {
    default(map, key, json!([]));
    map.get_mut(key).and_then(Value::as_array_mut)
}

/// The objects of the array `map[key]`.
fn objects<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags_pick_the_pull_policy_like_the_real_server() {
        assert_eq!(image_tag("nginx"), Some("latest"));
        assert_eq!(image_tag("nginx:1.27"), Some("1.27"));
        assert_eq!(image_tag("localhost:5000/app"), Some("latest"));
        assert_eq!(image_tag("localhost:5000/app:v2"), Some("v2"));
        assert_eq!(image_tag("app@sha256:00"), None);
    }

    #[test]
    fn quantities_are_read_with_their_suffixes() {
        assert_eq!(quantity("100m"), Some(0.1));
        assert_eq!(quantity("1Gi"), Some(1073741824.0));
        assert_eq!(quantity("1e3"), Some(1000.0));
        assert_eq!(quantity("0.5"), Some(0.5));
        assert_eq!(quantity("1x"), None);
        assert_eq!(quantity(""), None);
    }

    #[test]
    fn qos_classes_follow_requests_and_limits() {
        let pod = |resources: Value| {
            let spec = json!({"containers": [{"name": "c", "resources": resources}]});
            spec.as_object().cloned().unwrap()
        };
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        let both = json!({"cpu": "1", "memory": "1Gi"});
        let guaranteed =
            pod(json!({"limits": both, "requests": {"cpu": "1000m", "memory": "1Gi"}}));
        assert_eq!(qos_class(&guaranteed), "Guaranteed");
        assert_eq!(qos_class(&pod(json!({"requests": both}))), "Burstable");
        assert_eq!(
            qos_class(&pod(json!({"limits": {"cpu": "1"}}))),
            "Burstable"
        );
        assert_eq!(
            qos_class(&pod(json!({"requests": {"cpu": "0"}}))),
            "BestEffort"
        );
    }

    #[test]
    fn bodies_of_the_wrong_shape_are_left_as_they_are() {
        for body in [
            json!("x"),
            json!({"spec": 1}),
            json!({"spec": {"containers": [1, "c", null], "volumes": {"a": 1},
                            "tolerations": "all", "template": []}}),
        ] {
            for (group, kind) in [("", "Pod"), ("apps", "Deployment"), ("apps", "ReplicaSet")] {
                let mut obj = body.clone();
                apply(group, kind, &mut obj, true);
                admit(group, kind, &mut obj);
            }
        }
        let mut pod = json!({"spec": {"containers": [1], "tolerations": "all"}});
        apply("", "Pod", &mut pod, true);
        admit("", "Pod", &mut pod);
        assert_eq!(pod["spec"]["containers"], json!([1]));
        assert_eq!(pod["spec"]["tolerations"], "all");
        assert_eq!(pod["status"]["qosClass"], "BestEffort");
    }
}
