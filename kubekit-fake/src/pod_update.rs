//! What an update of a Pod may change, as kube-apiserver 1.37's `ValidatePodUpdate` has
//! it: the images of its containers and init containers, `activeDeadlineSeconds` (set, or
//! lowered), `tolerations` (added to; an existing one's `tolerationSeconds` changed),
//! `schedulingGates` (removed), `terminationGracePeriodSeconds` (to 1 from a negative
//! value) and, while the Pod is gated, additions to its `nodeSelector` and its node
//! affinity. Anything else in the spec is refused with the real server's first line, `pod
//! updates may not change fields other than ...`, followed by the spec's fields that
//! differ (the real server prints a Go diff of its internal types there).
//!
//! Not done: the finer rules on a gated Pod's node affinity (it may change freely here).

use serde_json::{Map, Value, json};

use crate::defaults::go_json;

/// A check's fault: field, cause reason, detail.
type Fault = (String, &'static str, String);

/// The fields the refusal names, in the real server's words.
const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The faults of an update of a Pod from `old` to `new` (both defaulted).
pub(crate) fn faults(old: &Value, new: &Value) -> Vec<Fault> {
    let (old_spec, new_spec) = (&old["spec"], &new["spec"]);
    let mut faults = Vec::new();
    for list in ["containers", "initContainers"] {
        let path = format!("spec.{list}");
        let (olds, news) = (items(&old_spec[list]), items(&new_spec[list]));
        if olds.len() != news.len() {
            let detail = "Forbidden: pod updates may not add or remove containers".to_string();
            faults.push((path, "FieldValueForbidden", detail));
            return faults;
        }
        for (i, container) in news.iter().enumerate() {
            let image = container["image"].as_str().unwrap_or_default();
            if image.is_empty() {
                let at = format!("{path}[{i}].image");
                faults.push((at, "FieldValueRequired", "Required value".into()));
            }
            if image.trim() != image {
                faults.push((
                    format!("{path}[{i}].image"),
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {}: must not have leading or trailing whitespace",
                        go_json(&container["image"])
                    ),
                ));
            }
        }
    }
    let deadline = "spec.activeDeadlineSeconds".to_string();
    match (
        old_spec["activeDeadlineSeconds"].as_i64(),
        &new_spec["activeDeadlineSeconds"],
    ) {
        (_, Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(-1);
            if !(0..=i64::from(i32::MAX)).contains(&n) {
                let detail = format!(
                    "Invalid value: {n}: must be between 0 and {}, inclusive",
                    i32::MAX
                );
                faults.push((deadline, "FieldValueInvalid", detail));
                return faults;
            }
            if old_spec["activeDeadlineSeconds"]
                .as_i64()
                .is_some_and(|o| o < n)
            {
                let detail =
                    format!("Invalid value: {n}: must be less than or equal to previous value");
                faults.push((deadline, "FieldValueInvalid", detail));
                return faults;
            }
        }
        (Some(_), _) => {
            let detail =
                "Invalid value: null: must not update from a positive integer to nil value";
            faults.push((deadline, "FieldValueInvalid", detail.to_string()));
        }
        (None, _) => {}
    }
    if let Some(fault) = tolerations(old_spec, new_spec) {
        faults.push(fault);
    }
    faults.extend(added_gates(old_spec, new_spec));
    if pruned(old_spec) == pruned(new_spec) {
        return faults;
    }
    // A spec or container that is not an object is refused by the schema checks.
    if !new_spec.is_object() {
        return faults;
    }
    let mut munged = new_spec.clone();
    for list in ["containers", "initContainers"] {
        let old_items = items(&old_spec[list]);
        let new_items = munged.get_mut(list).and_then(Value::as_array_mut);
        for (container, old) in new_items.into_iter().flatten().zip(old_items) {
            if let Some(container) = container.as_object_mut() {
                container.insert("image".into(), old["image"].clone());
            }
        }
    }
    for field in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        munged[field] = old_spec[field].clone();
    }
    let grace = "terminationGracePeriodSeconds";
    if old_spec[grace].as_i64().is_some_and(|g| g < 0) && munged[grace] == json!(1) {
        munged[grace] = old_spec[grace].clone();
    }
    if !items(&old_spec["schedulingGates"]).is_empty() {
        faults.extend(node_selector_additions(old_spec, &munged));
        munged["nodeSelector"] = old_spec["nodeSelector"].clone();
        match &old_spec["affinity"]["nodeAffinity"] {
            Value::Null => {
                if let Some(affinity) = munged["affinity"].as_object_mut() {
                    affinity.remove("nodeAffinity");
                    if affinity.is_empty() && old_spec["affinity"].is_null() {
                        munged["affinity"] = Value::Null;
                    }
                }
            }
            kept => match munged["affinity"].as_object_mut() {
                Some(affinity) => {
                    affinity.insert("nodeAffinity".into(), kept.clone());
                }
                None => munged["affinity"] = json!({"nodeAffinity": kept}),
            },
        }
    }
    let (before, after) = (pruned(old_spec), pruned(&munged));
    if before != after {
        let detail = format!(
            "Forbidden: pod updates may not change fields other than {UPDATABLE}\n{}",
            differences(&before, &after)
        );
        faults.push(("spec".into(), "FieldValueForbidden", detail));
    }
    faults
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// `validateOnlyAddedTolerations`: every old toleration is still there (its
/// `tolerationSeconds` aside).
fn tolerations(old: &Value, new: &Value) -> Option<Fault> {
    let without_seconds = |t: &Value| {
        let mut t = pruned(t);
        if let Some(fields) = t.as_object_mut() {
            fields.remove("tolerationSeconds");
        }
        t
    };
    let news: Vec<Value> = items(&new["tolerations"])
        .iter()
        .map(without_seconds)
        .collect();
    let kept = items(&old["tolerations"])
        .iter()
        .all(|t| news.contains(&without_seconds(t)));
    (!kept).then(|| {
        (
            "spec.tolerations".into(),
            "FieldValueForbidden",
            "Forbidden: existing toleration can not be modified except its tolerationSeconds"
                .into(),
        )
    })
}

/// `validateOnlyDeletedSchedulingGates`: no gate the Pod did not have.
fn added_gates(old: &Value, new: &Value) -> Vec<Fault> {
    let had: Vec<&Value> = items(&old["schedulingGates"])
        .iter()
        .map(|g| &g["name"])
        .collect();
    items(&new["schedulingGates"])
        .iter()
        .enumerate()
        .filter(|(_, g)| !had.contains(&&g["name"]))
        .map(|(i, g)| {
            (
                format!("spec.schedulingGates[{i}].name"),
                "FieldValueForbidden",
                format!(
                    "Forbidden: only deletion is allowed, but found new scheduling gate '{}'",
                    g["name"].as_str().unwrap_or_default()
                ),
            )
        })
        .collect()
}

/// `validateNodeSelectorMutation` of a gated Pod: only additions.
fn node_selector_additions(old: &Value, new: &Value) -> Option<Fault> {
    let kept = old["nodeSelector"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| new["nodeSelector"].get(k) == Some(v));
    (!kept).then(|| {
        (
            "spec.nodeSelector".into(),
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                go_json(&new["nodeSelector"])
            ),
        )
    })
}

/// `v` without its nulls, empty lists and empty maps, which Go's semantic equality does
/// not tell from absent fields (but the structs a pointer holds, which it does).
fn pruned(v: &Value) -> Value {
    const POINTED: &[&str] = &[
        "securityContext",
        "affinity",
        "nodeAffinity",
        "podAffinity",
        "podAntiAffinity",
        "dnsConfig",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
    ];
    let empty = |k: &str, v: &Value| {
        v.is_null()
            || v.as_array().is_some_and(Vec::is_empty)
            || (v.as_object().is_some_and(Map::is_empty) && !POINTED.contains(&k))
    };
    match v {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(k, v)| !empty(k, v))
                .map(|(k, v)| (k.clone(), pruned(v)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(pruned).collect()),
        other => other.clone(),
    }
}

/// The spec's top-level fields that differ, a line each for the old and the new value.
fn differences(before: &Value, after: &Value) -> String {
    let empty = Map::new();
    let (b, a) = (
        before.as_object().unwrap_or(&empty),
        after.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut lines = Vec::new();
    for key in keys {
        let (old, new) = (b.get(key), a.get(key));
        if old != new {
            if let Some(old) = old {
                lines.push(format!("- {key}: {old}"));
            }
            if let Some(new) = new {
                lines.push(format!("+ {key}: {new}"));
            }
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Value {
        json!({"spec": spec})
    }

    fn fields(found: &[Fault]) -> Vec<(&str, &str)> {
        found.iter().map(|(f, r, _)| (f.as_str(), *r)).collect()
    }

    #[test]
    fn images_deadlines_tolerations_and_gates_may_change_as_the_real_server_allows() {
        let old = pod(json!({"containers": [{"name": "a", "image": "nginx:1"}],
            "activeDeadlineSeconds": 100, "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 5}],
            "schedulingGates": [{"name": "g1"}, {"name": "g2"}], "terminationGracePeriodSeconds": -1}));
        let new = pod(json!({"containers": [{"name": "a", "image": "nginx:2"}],
            "activeDeadlineSeconds": 50, "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 9},
                {"key": "new", "operator": "Exists"}],
            "schedulingGates": [{"name": "g2"}], "terminationGracePeriodSeconds": 1,
            "nodeSelector": {"disk": "ssd"}}));
        assert_eq!(faults(&old, &new), Vec::new());
    }

    #[test]
    fn other_spec_changes_are_forbidden_with_the_fields_that_differ() {
        let old = pod(
            json!({"containers": [{"name": "a", "image": "nginx"}], "restartPolicy": "Always"}),
        );
        let new = pod(
            json!({"containers": [{"name": "a", "image": "nginx", "env": [{"name": "X", "value": "1"}]}],
            "restartPolicy": "Always"}),
        );
        let found = faults(&old, &new);
        assert_eq!(fields(&found), [("spec", "FieldValueForbidden")]);
        let detail = &found[0].2;
        assert!(
            detail.starts_with(
                "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
            ),
            "{detail}"
        );
        assert!(detail.contains("+ containers: "), "{detail}");
    }

    #[test]
    fn containers_added_deadlines_raised_tolerations_and_gates_changed_are_refused() {
        let old = pod(json!({"containers": [{"name": "a", "image": "nginx"}]}));
        let added = pod(
            json!({"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "x"}]}),
        );
        assert_eq!(
            fields(&faults(&old, &added)),
            [("spec.containers", "FieldValueForbidden")]
        );
        let old = pod(
            json!({"containers": [{"name": "a", "image": "nginx"}], "activeDeadlineSeconds": 10,
            "tolerations": [{"key": "k", "operator": "Exists"}]}),
        );
        let raised =
            pod(json!({"containers": [{"name": "a", "image": ""}], "activeDeadlineSeconds": 20}));
        assert_eq!(
            fields(&faults(&old, &raised)),
            [
                ("spec.containers[0].image", "FieldValueRequired"),
                ("spec.activeDeadlineSeconds", "FieldValueInvalid")
            ]
        );
        let untolerated = pod(
            json!({"containers": [{"name": "a", "image": "nginx"}], "activeDeadlineSeconds": 10,
            "schedulingGates": [{"name": "late"}]}),
        );
        assert_eq!(
            fields(&faults(&old, &untolerated)),
            [
                ("spec.tolerations", "FieldValueForbidden"),
                ("spec.schedulingGates[0].name", "FieldValueForbidden")
            ]
        );
    }
}
