//! What the real server adds to and checks of the objects written, for the built-in
//! types where the differential suite compares it (`object_defaults_and_immutability_
//! answer_alike`):
//!
//! - a Namespace gets the label `kubernetes.io/metadata.name` (its name, restored on every
//!   write), the finalizer `kubernetes` and `status.phase: Active` when created; an update
//!   keeps its finalizers;
//! - a built-in object's `null` fields are dropped, as the real server's decoding leaves
//!   them unset;
//! - a Secret's `stringData` is merged into its `data` (base64) and dropped, its `type` is
//!   `Opaque` when unset, an empty `data` is dropped;
//! - a Service gets its type (`ClusterIP`), session affinity, ports' protocol and target
//!   port, internal traffic policy, IP family fields, an empty load-balancer status, and
//!   (see [`allocate`]) a cluster IP from `10.0.0.0/24` and node ports from 30000, kept
//!   by an update that leaves them out;
//! - a ConfigMap's or Secret's empty `data` or `binaryData` is left out, a null value in a
//!   ConfigMap's `data` is `""`;
//! - a ConfigMap or Secret with `immutable: true` keeps its data and stays immutable; a
//!   Secret's type never changes (with the Secret's own faults, see `core_kinds`, in the
//!   same answer);
//! - a Pod has containers, each with a name of its own and an image; a Deployment's
//!   selector matches its template's labels and never changes;
//! - (in `stateful_sets_daemon_sets_jobs_and_revisions_are_defaulted_and_checked_alike`) a
//!   StatefulSet's or DaemonSet's selector is present (a DaemonSet's may be missing and
//!   then selects nothing), not empty, matches its template's labels and never changes, nor
//!   do a StatefulSet's service name and pod management policy; a Job restarts `OnFailure`
//!   or `Never`, its selector selects the labels the server generates (on create), its
//!   template's labels, and never changes; a CronJob has a schedule (read as
//!   [`cron`](crate::cron) reads it) that names no time zone, and its Jobs restart
//!   `OnFailure` or `Never` (also in `cron_job_schedules_are_parsed_alike`); a
//!   ControllerRevision has data, an object that never changes, and a revision of at
//!   least 0;
//! - Pods and the workloads with a Pod template get their defaults from
//!   [`workloads`](crate::workloads).

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

/// Drops `obj`'s `key` when it is an empty map, which Go does not write (`omitempty`).
fn drop_empty(obj: &mut Value, key: &str) {
    if obj[key].as_object().is_some_and(Map::is_empty)
        && let Some(m) = obj.as_object_mut()
    {
        m.remove(key);
    }
}

/// Fills in what the real server defaults in `obj`, an object of `info` being created
/// (`old` is `None`) or replacing `old`.
pub fn apply(info: &ResourceInfo, obj: &mut Value, old: Option<&Value>) {
    if !info.builtin {
        return;
    }
    if info.group.is_empty() && info.kind == "ConfigMap" {
        // A null value of its map of strings decodes as "" (a JSON patch may write one),
        // where other nulls leave their field unset.
        let data = obj.get_mut("data").and_then(Value::as_object_mut);
        for v in data.into_iter().flat_map(|m| m.values_mut()) {
            if v.is_null() {
                *v = json!("");
            }
        }
    }
    without_nulls(obj);
    crate::workloads::apply(&info.group, &info.kind, obj, old);
    if info.group == RBAC && info.kind.ends_with("RoleBinding") && obj.is_object() {
        binding(obj);
    }
    crate::kinds::defaults(info, obj, old);
    crate::admission_config::defaults(info, obj);
    if info.group == "scheduling.k8s.io"
        && info.kind == "PriorityClass"
        && obj.is_object()
        && obj["preemptionPolicy"].is_null()
    {
        obj["preemptionPolicy"] = json!("PreemptLowerPriority");
    }
    if !info.group.is_empty() || !obj.is_object() {
        return;
    }
    crate::core_kinds::defaults(&info.kind, obj);
    match info.kind.as_str() {
        "LimitRange" => crate::limit_ranges::default_items(obj),
        "ConfigMap" => {
            drop_empty(obj, "data");
            drop_empty(obj, "binaryData");
        }
        "Namespace" => {
            let name = obj["metadata"]["name"].clone();
            if !obj["metadata"]["labels"].is_object() {
                obj["metadata"]["labels"] = json!({});
            }
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
            // A spec that is not an object is left as it is (Go would not decode it).
            let spec_writable = obj["spec"].is_object() || obj["spec"].is_null();
            match old {
                None => {
                    if spec_writable && obj["spec"]["finalizers"].is_null() {
                        obj["spec"]["finalizers"] = json!(["kubernetes"]);
                    }
                    obj["status"] = json!({"phase": "Active"});
                }
                // Only the `finalize` subresource changes them.
                Some(old) if spec_writable => {
                    obj["spec"]["finalizers"] = old["spec"]["finalizers"].clone();
                }
                Some(_) => {}
            }
        }
        "Secret" => {
            if let Some(Value::Object(plain)) =
                obj.as_object_mut().and_then(|o| o.remove("stringData"))
            {
                if !obj["data"].is_object() {
                    obj["data"] = json!({});
                }
                for (k, v) in plain {
                    let text = v.as_str().unwrap_or_default();
                    obj["data"][k] = json!(base64::engine::general_purpose::STANDARD.encode(text));
                }
            }
            drop_empty(obj, "data");
            if obj["type"].as_str().is_none_or(str::is_empty) {
                obj["type"] = json!("Opaque");
            }
        }
        "Service" => service(obj, old),
        _ => {}
    }
}

/// Drops the fields of `value` (and of its objects, at any depth) that are `null`: a
/// built-in kind's decoder leaves them unset, and they are not shown.
fn without_nulls(value: &mut Value) {
    match value {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(without_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(without_nulls),
        _ => {}
    }
}

/// The RBAC group.
const RBAC: &str = "rbac.authorization.k8s.io";

/// What the real server defaults of a binding: the RBAC group of its `roleRef` and of its
/// users' and groups' subjects.
fn binding(obj: &mut Value) {
    if obj["roleRef"].is_object()
        && obj["roleRef"]["apiGroup"]
            .as_str()
            .is_none_or(str::is_empty)
    {
        obj["roleRef"]["apiGroup"] = json!(RBAC);
    }
    let subjects = obj.get_mut("subjects").and_then(Value::as_array_mut);
    for subject in subjects.into_iter().flatten() {
        let user_or_group = matches!(subject["kind"].as_str(), Some("User" | "Group"));
        if user_or_group && subject["apiGroup"].as_str().is_none_or(str::is_empty) {
            subject["apiGroup"] = json!(RBAC);
        }
    }
}

/// `field`'s `value` is not one of `supported`.
fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Fault {
    let supported: Vec<String> = supported.iter().map(|s| go_json(&json!(s))).collect();
    let detail = format!(
        "Unsupported value: {}: supported values: {}",
        go_json(value),
        supported.join(", ")
    );
    (field.into(), "FieldValueNotSupported", detail)
}

/// What the real server refuses of a RoleBinding or ClusterRoleBinding (`namespaced` for
/// a RoleBinding) replacing `old`, if any: in its order, the fields 1.37's declarative
/// validation checks (names required) last, subjects before the roleRef.
fn binding_faults(obj: &Value, old: Option<&Value>, namespaced: bool) -> Vec<Fault> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let role_ref = &obj["roleRef"];
    let mut faults = Vec::new();
    let mut declared = Vec::new();
    if text(&role_ref["apiGroup"]) != RBAC {
        faults.push(not_supported(
            "roleRef.apiGroup",
            &json!(text(&role_ref["apiGroup"])),
            &[RBAC],
        ));
    }
    let kind = text(&role_ref["kind"]);
    if kind != "Role" && kind != "ClusterRole" {
        faults.push(not_supported(
            "roleRef.kind",
            &json!(kind),
            &["Role", "ClusterRole"],
        ));
    }
    let role_name = text(&role_ref["name"]);
    for why in crate::store::path_segment(&role_name) {
        let detail = format!("Invalid value: {}: {why}", go_json(&json!(role_name)));
        faults.push(("roleRef.name".into(), "FieldValueInvalid", detail));
    }
    let subjects = obj["subjects"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, subject) in subjects.iter().enumerate() {
        let at = |field: &str| format!("subjects[{i}].{field}");
        let (name, group) = (text(&subject["name"]), text(&subject["apiGroup"]));
        if name.is_empty() {
            declared.push(required(&at("name")));
        }
        match subject["kind"].as_str().unwrap_or_default() {
            "ServiceAccount" => {
                if !name.is_empty() {
                    for why in kubekit::validation::dns1123_subdomain(&name) {
                        let detail = format!("Invalid value: {}: {why}", go_json(&json!(name)));
                        faults.push((at("name"), "FieldValueInvalid", detail));
                    }
                }
                if !group.is_empty() {
                    faults.push(not_supported(&at("apiGroup"), &json!(group), &[""]));
                }
                if !namespaced && text(&subject["namespace"]).is_empty() {
                    faults.push(required(&at("namespace")));
                }
            }
            "User" | "Group" if group != RBAC => {
                faults.push(not_supported(&at("apiGroup"), &json!(group), &[RBAC]));
            }
            "User" | "Group" => {}
            other => faults.push(not_supported(
                &at("kind"),
                &json!(other),
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    if role_name.is_empty() {
        declared.push(required("roleRef.name"));
    }
    if old.is_some_and(|old| old["roleRef"] != obj["roleRef"]) {
        // Shown as Go prints the internal type, which has no JSON names of its own.
        let shown =
            json!({"APIGroup": text(&role_ref["apiGroup"]), "Kind": kind, "Name": role_name});
        let detail = format!("Invalid value: {}: field is immutable", go_json(&shown));
        faults.push(("roleRef".into(), "FieldValueInvalid", detail));
    }
    faults.extend(declared);
    faults
}

/// What the real server defaults of a Service (`SetDefaults_Service`, and the allocated
/// fields an update leaves out taken from `old`).
fn service(obj: &mut Value, old: Option<&Value>) {
    let spec = &mut obj["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    if spec["type"].as_str().is_none_or(str::is_empty) {
        spec["type"] = json!("ClusterIP");
    }
    if spec["sessionAffinity"].as_str().is_none_or(str::is_empty) {
        spec["sessionAffinity"] = json!("None");
    }
    let kind = spec["type"].as_str().unwrap_or_default().to_string();
    let ports = spec["ports"].as_array_mut().into_iter().flatten();
    for port in ports.filter(|p| p.is_object()) {
        if port["protocol"].as_str().is_none_or(str::is_empty) {
            port["protocol"] = json!("TCP");
        }
        if port["targetPort"].is_null()
            || port["targetPort"] == json!(0)
            || port["targetPort"] == json!("")
        {
            port["targetPort"] = port["port"].clone();
        }
    }
    let external = matches!(kind.as_str(), "NodePort" | "LoadBalancer");
    if external && spec["externalTrafficPolicy"].is_null() {
        spec["externalTrafficPolicy"] = json!("Cluster");
    }
    if (external || kind == "ClusterIP") && spec["internalTrafficPolicy"].is_null() {
        spec["internalTrafficPolicy"] = json!("Cluster");
    }
    if kind == "LoadBalancer" && spec["allocateLoadBalancerNodePorts"].is_null() {
        spec["allocateLoadBalancerNodePorts"] = json!(true);
    }
    if let Some(old) = old {
        for kept in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if spec[kept].is_null() && !old["spec"][kept].is_null() {
                spec[kept] = old["spec"][kept].clone();
            }
        }
    }
    if kind != "ExternalName" {
        // A headless Service without a selector takes every family the cluster could have.
        let dual = spec["clusterIP"] == json!("None") && spec["selector"].is_null();
        if spec["ipFamilyPolicy"].is_null() {
            spec["ipFamilyPolicy"] = json!(if dual {
                "RequireDualStack"
            } else {
                "SingleStack"
            });
        }
        if spec["ipFamilies"].is_null() {
            spec["ipFamilies"] = if dual {
                json!(["IPv4", "IPv6"])
            } else {
                json!(["IPv4"])
            };
        }
    }
    if obj["status"].is_null() {
        obj["status"] = json!({"loadBalancer": {}});
    }
}

/// Gives a Service being created what the real server allocates: a cluster IP from
/// `10.0.0.0/24` (the lowest not in `used`, from `10.0.0.10`) unless it asked for one or
/// for none (`None`, `ExternalName`), and a node port (from 30000, not in `used_ports`)
/// for each port of a `NodePort` or `LoadBalancer` Service that has none.
pub fn allocate(obj: &mut Value, used: &[String], used_ports: &[i64]) {
    let spec = &mut obj["spec"];
    let kind = spec["type"].as_str().unwrap_or_default().to_string();
    if kind != "ExternalName" && spec["clusterIP"].as_str().is_none_or(str::is_empty) {
        let free = (10..255)
            .map(|n| format!("10.0.0.{n}"))
            .find(|ip| !used.contains(ip));
        if let Some(ip) = free {
            spec["clusterIP"] = json!(ip);
        }
    }
    if let Some(ip) = spec["clusterIP"].as_str().map(str::to_string)
        && spec["clusterIPs"].is_null()
    {
        spec["clusterIPs"] = json!([ip]);
    }
    if matches!(kind.as_str(), "NodePort" | "LoadBalancer") {
        let mut taken: Vec<i64> = used_ports.to_vec();
        let ports = spec["ports"].as_array_mut().into_iter().flatten();
        for port in ports.filter(|p| p.is_object()) {
            if port["nodePort"].as_i64().is_none_or(|p| p == 0) {
                let free = (30000..=32767).find(|p| !taken.contains(p)).unwrap_or(0);
                taken.push(free);
                port["nodePort"] = json!(free);
            }
        }
    }
}

/// Refuses a Service whose cluster IP or a node port another Service holds (`used`,
/// `used_ports`), with the real server's allocation errors.
pub fn check_allocations(
    info: &ResourceInfo,
    name: &str,
    svc: &Value,
    used: &[String],
    used_ports: &[i64],
) -> ApiResult<()> {
    let mut faults = Vec::new();
    let ip = svc["spec"]["clusterIP"].as_str().unwrap_or_default();
    if used.iter().any(|u| u == ip) && !matches!(ip, "" | "None") {
        faults.push((
            "spec.clusterIPs".to_string(),
            "FieldValueInvalid",
            format!(
                "Invalid value: []string{{{ip:?}}}: failed to allocate IP {ip}: provided IP is already allocated"
            ),
        ));
    }
    let ports = svc["spec"]["ports"].as_array().into_iter().flatten();
    for (i, port) in ports.enumerate() {
        if let Some(p) = port["nodePort"].as_i64().filter(|p| used_ports.contains(p)) {
            faults.push((
                format!("spec.ports[{i}].nodePort"),
                "FieldValueInvalid",
                format!("Invalid value: {p}: provided port is already allocated"),
            ));
        }
    }
    if faults.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(info, name, &faults))
}

/// Refuses an update of `old` to `new` that the real server refuses: the data of an
/// immutable ConfigMap or Secret, its `immutable` flag, a Secret's type, and a Pod's spec
/// beyond what `pod_update` allows.
pub fn check_update(info: &ResourceInfo, name: &str, old: &Value, new: &Value) -> ApiResult<()> {
    if !info.builtin || !info.group.is_empty() {
        return Ok(());
    }
    if info.kind == "Pod" {
        let faults = crate::pod_update::faults(old, new);
        return match faults.is_empty() {
            true => Ok(()),
            false => Err(ApiError::invalid_fields(info, name, &faults)),
        };
    }
    if !matches!(info.kind.as_str(), "ConfigMap" | "Secret") {
        return Ok(());
    }
    let mut faults = Vec::new();
    if info.kind == "Secret" && old["type"] != new["type"] {
        faults.push((
            "type",
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: field is immutable",
                go_json(&new["type"])
            ),
        ));
    }
    if old["immutable"] == json!(true) {
        let immutable = "Forbidden: field is immutable when `immutable` is set".to_string();
        if new["immutable"] != json!(true) {
            faults.push(("immutable", "FieldValueForbidden", immutable.clone()));
        }
        for field in ["data", "binaryData"] {
            let empty = |v: &Value| v.is_null() || v.as_object().is_some_and(|m| m.is_empty());
            if old[field] != new[field] && !(empty(&old[field]) && empty(&new[field])) {
                faults.push((field, "FieldValueForbidden", immutable.clone()));
            }
        }
    }
    if faults.is_empty() {
        return Ok(());
    }
    // The object's own checks follow, in one answer.
    let own = crate::core_kinds::faults(&info.kind, new, Some(old));
    let mut faults: Vec<Fault> = faults
        .into_iter()
        .map(|(f, r, d)| (f.to_string(), r, d))
        .collect();
    faults.extend(own);
    Err(ApiError::invalid_fields(info, name, &faults))
}

/// A check's fault: field, cause reason, detail.
type Fault = (String, &'static str, String);

/// `field` is required.
fn required(field: &str) -> Fault {
    (field.into(), "FieldValueRequired", "Required value".into())
}

/// A Job's spec (at `path`) whose Pods would restart `Always` (the default): they must
/// restart `OnFailure` or `Never`.
fn restart_policy(job_spec: &Value, path: &str) -> Option<Fault> {
    let restart = job_spec["template"]["spec"]["restartPolicy"].as_str();
    matches!(restart, None | Some("Always" | "")).then(|| {
        (
            format!("{path}.template.spec.restartPolicy"),
            "FieldValueRequired",
            "Required value: valid values: \"OnFailure\", \"Never\"".into(),
        )
    })
}

/// The fault of `spec`'s integer `key` if it is negative.
fn nonnegative(spec: &Value, key: &str) -> Option<Fault> {
    let value = &spec[key];
    value.as_i64().filter(|v| *v < 0).map(|_| {
        let why = "must be greater than or equal to 0";
        crate::kinds::invalid(format!("spec.{key}"), value, why)
    })
}

/// The faults of a workload's template (in `spec`) whose Pods would not restart `Always`
/// or would have a deadline; `kind` is the workload the message names.
fn always_restarting(spec: &Value, kind: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let pod = &spec["template"]["spec"];
    let restart = pod["restartPolicy"].as_str().unwrap_or("Always");
    if restart != "Always" {
        let field = "spec.template.spec.restartPolicy";
        faults.push(not_supported(field, &json!(restart), &["Always"]));
    }
    if !pod["activeDeadlineSeconds"].is_null() {
        faults.push((
            "spec.template.spec.activeDeadlineSeconds".into(),
            "FieldValueForbidden",
            format!("Forbidden: activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    faults
}

/// A strategy (`type` and `rollingUpdate`) shown as the real server shows its internal
/// struct in an `Unsupported value` at `field`, `supported` listed.
fn unsupported_strategy(field: &str, strategy: &Value, supported: &str) -> Fault {
    let rolling = &strategy["rollingUpdate"];
    let shown_rolling = match rolling {
        Value::Null => Value::Null,
        _ => json!({"MaxUnavailable": rolling["maxUnavailable"], "MaxSurge": rolling["maxSurge"]}),
    };
    let shown = json!({"Type": strategy["type"], "RollingUpdate": shown_rolling});
    let shown = crate::kinds::ordered(&shown, &["Type", "RollingUpdate"]);
    let detail = format!("Unsupported value: {shown}: supported values: {supported}");
    (field.into(), "FieldValueNotSupported", detail)
}

/// What the real server refuses of a DaemonSet's `spec` after its selector and template's
/// labels, in `ValidateDaemonSetSpec`'s order.
fn daemon_set_spec(spec: &Value) -> Vec<Fault> {
    use crate::kinds::{int_or_percent_value, not_above_100_percent, positive_int_or_percent};
    let mut faults = always_restarting(spec, "DaemonSet");
    faults.extend(nonnegative(spec, "minReadySeconds"));
    let strategy = &spec["updateStrategy"];
    let rolling = &strategy["rollingUpdate"];
    match strategy["type"].as_str() {
        Some("OnDelete") => {}
        Some("RollingUpdate") if rolling.is_null() => {
            faults.push(required("spec.updateStrategy.rollingUpdate"));
        }
        Some("RollingUpdate") => {
            let (unavailable, surge) = (&rolling["maxUnavailable"], &rolling["maxSurge"]);
            let at_unavailable = "spec.updateStrategy.rollingUpdate.maxUnavailable";
            let at_surge = "spec.updateStrategy.rollingUpdate.maxSurge";
            faults.extend(positive_int_or_percent(at_unavailable, unavailable));
            faults.extend(positive_int_or_percent(at_surge, surge));
            faults.extend(not_above_100_percent(at_unavailable, unavailable));
            faults.extend(not_above_100_percent(at_surge, surge));
            match (
                int_or_percent_value(unavailable) != 0,
                int_or_percent_value(surge) != 0,
            ) {
                (true, true) => {
                    let why = "may not be set when maxUnavailable is non-zero";
                    faults.push(crate::kinds::invalid(at_surge, surge, why));
                }
                (false, false) => faults.push((
                    at_unavailable.into(),
                    "FieldValueRequired",
                    "Required value: cannot be 0 when maxSurge is 0".into(),
                )),
                _ => {}
            }
        }
        _ => faults.push(unsupported_strategy(
            "spec.updateStrategy",
            strategy,
            "\"RollingUpdate\", \"OnDelete\"",
        )),
    }
    faults.extend(nonnegative(spec, "revisionHistoryLimit"));
    faults
}

/// What the real server refuses of a Deployment's `spec` after its selector and template's
/// labels, in `ValidateDeploymentSpec`'s order: the template's restart policy and deadline,
/// the strategy, the ready time, history limit and progress deadline.
fn deployment_spec(spec: &Value) -> Vec<Fault> {
    use crate::kinds::{int_or_percent_value, not_above_100_percent, positive_int_or_percent};
    let mut faults = always_restarting(spec, "ReplicaSet");
    let strategy = &spec["strategy"];
    let rolling = &strategy["rollingUpdate"];
    match strategy["type"].as_str() {
        Some("Recreate") if !rolling.is_null() => faults.push((
            "spec.strategy.rollingUpdate".into(),
            "FieldValueForbidden",
            "Forbidden: may not be specified when strategy `type` is 'Recreate'".into(),
        )),
        Some("Recreate") => {}
        Some("RollingUpdate") if rolling.is_null() => faults.push((
            "spec.strategy.rollingUpdate".into(),
            "FieldValueRequired",
            "Required value: this should be defaulted and never be nil".into(),
        )),
        Some("RollingUpdate") => {
            let (unavailable, surge) = (&rolling["maxUnavailable"], &rolling["maxSurge"]);
            let at = "spec.strategy.rollingUpdate.maxUnavailable";
            faults.extend(positive_int_or_percent(at, unavailable));
            faults.extend(positive_int_or_percent(
                "spec.strategy.rollingUpdate.maxSurge",
                surge,
            ));
            if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
                let why = "may not be 0 when `maxSurge` is 0";
                faults.push(crate::kinds::invalid(at, unavailable, why));
            }
            faults.extend(not_above_100_percent(at, unavailable));
        }
        _ => faults.push(unsupported_strategy(
            "spec.strategy",
            strategy,
            "\"Recreate\", \"RollingUpdate\"",
        )),
    }
    faults.extend(nonnegative(spec, "minReadySeconds"));
    faults.extend(nonnegative(spec, "revisionHistoryLimit"));
    let deadline = &spec["progressDeadlineSeconds"];
    if let Some(seconds) = deadline.as_i64() {
        faults.extend(nonnegative(spec, "progressDeadlineSeconds"));
        if seconds <= spec["minReadySeconds"].as_i64().unwrap_or(0) {
            let why = "must be greater than minReadySeconds";
            let field = "spec.progressDeadlineSeconds";
            faults.push(crate::kinds::invalid(field, deadline, why));
        }
    }
    faults
}

/// A workload's selector does not select its template's `labels`.
fn mismatch(labels: &Value) -> Fault {
    (
        "spec.template.metadata.labels".into(),
        "FieldValueInvalid",
        format!(
            "Invalid value: {}: `selector` does not match template `labels`",
            go_json(labels)
        ),
    )
}

/// The `fields` of `new` (at `path`, empty at the top) that are not as in `old`: each
/// immutable.
fn immutable(old: &Value, new: &Value, path: &str, fields: &[&str]) -> Vec<Fault> {
    fields
        .iter()
        .filter(|f| old[**f] != new[**f])
        .map(|f| {
            let detail = format!("Invalid value: {}: field is immutable", go_json(&new[*f]));
            let at = match path {
                "" => f.to_string(),
                p => format!("{p}.{f}"),
            };
            (at, "FieldValueInvalid", detail)
        })
        .collect()
}

/// Whether the `metav1.LabelSelector` `selector` selects `labels` (a Pod template's); a
/// missing or malformed selector selects nothing.
fn selects(selector: &Value, labels: &Value) -> bool {
    let Some(parsed) = crate::scale::selector_string(selector)
        .filter(|_| selector.is_object())
        .and_then(|s| s.parse::<kubekit::labels::Selector>().ok())
    else {
        return false;
    };
    let labels: BTreeMap<String, String> = labels
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    parsed.matches(&labels)
}

/// What the real server refuses of a PolicyRule at `path` (of a Role when `namespaced`),
/// but its verbs (see `check_workload`).
fn policy_rule(rule: &Value, namespaced: bool, path: &str) -> Vec<Fault> {
    let set = |key: &str| rule[key].as_array().is_some_and(|v| !v.is_empty());
    let at = |field: &str| format!("{path}.{field}");
    let need = |field: &str, why: &str| {
        (
            at(field),
            "FieldValueRequired",
            format!("Required value: {why}"),
        )
    };
    let mut faults = Vec::new();
    if set("nonResourceURLs") {
        let urls = go_json(&rule["nonResourceURLs"]);
        let invalid = |why: &str| {
            let detail = format!("Invalid value: {urls}: {why}");
            (at("nonResourceURLs"), "FieldValueInvalid", detail)
        };
        if namespaced {
            faults.push(invalid(
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if set("apiGroups") || set("resources") || set("resourceNames") {
            faults.push(invalid(
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return faults;
    }
    if !set("apiGroups") {
        faults.push(need(
            "apiGroups",
            "resource rules must supply at least one api group",
        ));
    }
    if !set("resources") {
        faults.push(need(
            "resources",
            "resource rules must supply at least one resource",
        ));
    }
    faults
}

/// `value` as Go's `json.Marshal` writes a bad value in a field error (maps sorted by key).
pub(crate) fn go_json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Refuses what the real server refuses of a Pod, a workload with a Pod template (a
/// Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob) or a ControllerRevision being
/// created (`old` is `None`) or replacing `old`.
pub fn check_workload(
    info: &ResourceInfo,
    name: &str,
    obj: &Value,
    old: Option<&Value>,
) -> ApiResult<()> {
    if !info.builtin {
        return Ok(());
    }
    let mut faults: Vec<Fault> = Vec::new();
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") if old.is_none() => {
            let containers = obj["spec"]["containers"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            if containers.is_empty() {
                faults.push(required("spec.containers"));
            }
            let mut seen = Vec::new();
            for (i, c) in containers.iter().enumerate() {
                let at = |field: &str| format!("spec.containers[{i}].{field}");
                match c["name"].as_str().filter(|n| !n.is_empty()) {
                    None => faults.push(required(&at("name"))),
                    Some(n) if seen.contains(&n) => faults.push((
                        at("name"),
                        "FieldValueDuplicate",
                        format!("Duplicate value: {}", go_json(&c["name"])),
                    )),
                    Some(n) => seen.push(n),
                }
                if c["image"].as_str().is_none_or(str::is_empty) {
                    faults.push(required(&at("image")));
                }
            }
            faults.extend(crate::pod_spec::faults(&obj["spec"]));
        }
        ("apps", kind @ ("Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")) => {
            let spec = &obj["spec"];
            if kind == "Deployment" {
                faults.extend(nonnegative(spec, "replicas"));
            }
            let selector = &spec["selector"];
            let labels = &spec["template"]["metadata"]["labels"];
            let empty = selector.is_object()
                && selector["matchLabels"]
                    .as_object()
                    .is_none_or(Map::is_empty)
                && selector["matchExpressions"]
                    .as_array()
                    .is_none_or(Vec::is_empty);
            // The workload the message names (a ReplicaSet's says `deployment`).
            let named = match kind {
                "StatefulSet" => "statefulset",
                "DaemonSet" => "daemonset",
                _ => "deployment",
            };
            let empty_fault = (
                "spec.selector".to_string(),
                "FieldValueInvalid",
                format!(
                    "Invalid value: {}: empty selector is invalid for {named}",
                    go_json(selector)
                ),
            );
            if kind == "DaemonSet" {
                // An empty selector selects everything; a missing one nothing.
                if !empty && !selects(selector, labels) {
                    faults.push(mismatch(labels));
                }
                if empty {
                    faults.push(empty_fault);
                }
            } else {
                if selector.is_null() {
                    faults.push(required("spec.selector"));
                }
                if empty {
                    faults.push(empty_fault);
                } else if !selects(selector, labels) {
                    faults.push(mismatch(labels));
                }
            }
            match kind {
                "Deployment" => faults.extend(deployment_spec(spec)),
                "DaemonSet" => faults.extend(daemon_set_spec(spec)),
                _ => {}
            }
            let kept: &[&str] = match kind {
                "StatefulSet" => &["selector", "serviceName", "podManagementPolicy"],
                _ => &["selector"],
            };
            if let Some(old) = old {
                faults.extend(immutable(&old["spec"], spec, "spec", kept));
            }
        }
        ("batch", "Job") => {
            let spec = &obj["spec"];
            if old.is_none() && spec["manualSelector"] != json!(true) {
                // The selector must select the labels the server generates.
                let uid = &obj["metadata"]["uid"];
                let generated = json!({
                    crate::workloads::CONTROLLER_UID: uid, crate::workloads::JOB_NAME: name,
                    "controller-uid": uid, "job-name": name,
                });
                if !selects(&spec["selector"], &generated) {
                    faults.push((
                        "spec.selector".into(),
                        "FieldValueInvalid",
                        format!(
                            "Invalid value: {}: `selector` not auto-generated",
                            go_json(&spec["selector"])
                        ),
                    ));
                }
            }
            faults.extend(restart_policy(spec, "spec"));
            let labels = &spec["template"]["metadata"]["labels"];
            if spec["selector"].is_null() {
                faults.push(required("spec.selector"));
            } else if !selects(&spec["selector"], labels) {
                faults.push(mismatch(labels));
            }
            if let Some(old) = old {
                faults.extend(immutable(&old["spec"], spec, "spec", &["selector"]));
            }
        }
        ("batch", "CronJob") => {
            let spec = &obj["spec"];
            let invalid_schedule = |why: &str| {
                let detail = format!("Invalid value: {}: {why}", go_json(&spec["schedule"]));
                ("spec.schedule".to_string(), "FieldValueInvalid", detail)
            };
            match spec["schedule"].as_str().unwrap_or_default() {
                "" => faults.push(required("spec.schedule")),
                schedule => {
                    if let Some(why) = crate::cron::error(schedule) {
                        faults.push(invalid_schedule(&why));
                    }
                    // An update may keep a time zone the old schedule named.
                    let old_zone = old.is_some_and(|o| {
                        o["spec"]["schedule"].as_str().unwrap_or("").contains("TZ")
                    });
                    if schedule.contains("TZ") && !old_zone {
                        faults.push(invalid_schedule(
                            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                        ));
                    }
                }
            }
            faults.extend(restart_policy(
                &spec["jobTemplate"]["spec"],
                "spec.jobTemplate.spec",
            ));
        }
        ("apps", "ControllerRevision") => {
            if let Some(revision) = obj["revision"].as_i64().filter(|r| *r < 0) {
                faults.push((
                    "revision".into(),
                    "FieldValueInvalid",
                    format!("Invalid value: {revision}: must be greater than or equal to 0"),
                ));
            }
            match (&obj["data"], old) {
                (Value::Null, None) => faults.push((
                    "data".into(),
                    "FieldValueRequired",
                    "Required value: data is mandatory".into(),
                )),
                (data, None) if !data.is_object() => faults.push((
                    "data".into(),
                    "FieldValueRequired",
                    "Required value: data must be a valid JSON object".into(),
                )),
                (_, Some(old)) => faults.extend(immutable(old, obj, "", &["data"])),
                _ => {}
            }
        }
        (RBAC, kind @ ("RoleBinding" | "ClusterRoleBinding")) => {
            faults.extend(binding_faults(obj, old, kind == "RoleBinding"));
        }
        (RBAC, kind @ ("Role" | "ClusterRole")) => {
            let rules = obj["rules"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            for (i, rule) in rules.iter().enumerate() {
                faults.extend(policy_rule(rule, kind == "Role", &format!("rules[{i}]")));
            }
            // Checked by 1.37's declarative validation, which reports after the rest.
            for (i, rule) in rules.iter().enumerate() {
                if rule["verbs"].as_array().is_none_or(Vec::is_empty) {
                    faults.push(required(&format!("rules[{i}].verbs")));
                }
            }
        }
        _ => {}
    }
    if faults.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(info, name, &faults))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(kind: &str) -> ResourceInfo {
        crate::resources::builtin_of("", kind)
    }

    #[test]
    fn malformed_specs_and_ports_are_left_as_they_are_without_a_panic() {
        let mut ns = json!({"metadata": {"name": "n"}, "spec": "x"});
        apply(&info("Namespace"), &mut ns, None);
        assert_eq!(ns["spec"], "x");
        apply(&info("Namespace"), &mut ns, Some(&json!({})));
        assert_eq!(ns["spec"], "x");
        let mut svc = json!({"metadata": {"name": "s"},
                             "spec": {"type": "NodePort", "ports": [1, {"port": 80}]}});
        apply(&info("Service"), &mut svc, None);
        allocate(&mut svc, &[], &[]);
        assert_eq!(svc["spec"]["ports"][0], 1);
        assert_eq!(svc["spec"]["ports"][1]["protocol"], "TCP");
        assert_eq!(svc["spec"]["ports"][1]["nodePort"], 30000);
        assert_eq!(svc["spec"]["clusterIP"], "10.0.0.10");
    }

    #[test]
    fn workloads_of_odd_shapes_are_checked_without_a_panic() {
        let odd = [
            json!("x"),
            json!({"spec": 1, "data": [], "revision": "r"}),
            json!({"metadata": {"uid": 3, "labels": "l"}, "spec": {"selector": "s",
                "template": {"metadata": {"labels": [1]}, "spec": "t"}, "jobTemplate": 2,
                "schedule": 5}}),
        ];
        for (group, kind) in [
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("apps", "ControllerRevision"),
            ("batch", "Job"),
            ("batch", "CronJob"),
        ] {
            let info = crate::resources::builtin_of(group, kind);
            for body in &odd {
                for old in [None, Some(&odd[1])] {
                    let _ = check_workload(&info, "n", body, old);
                }
            }
        }
    }
}
