//! The `scale` subresource: an `autoscaling/v1` `Scale` read from, and written to, the
//! paths a resource's [`ScalePaths`] name (Deployments, ReplicaSets, StatefulSets: `spec.replicas`,
//! `status.replicas`, `spec.selector`; a custom resource: its CRD's `subresources.scale`).
//!
//! - `GET` answers the `Scale` of the object; `PUT` and `PATCH` (JSON, merge or strategic
//!   merge patches of the `Scale`) set the object's desired replicas and answer its new
//!   `Scale`. A `Scale` with a stale `metadata.resourceVersion` is a conflict; negative
//!   replicas are `422 Invalid`.

use serde_json::{Value, json};

use crate::resources::{ResourceInfo, ScalePaths, ScaleSelector};
use crate::status::{ApiError, ApiResult};

/// The `Scale` of `obj`, read at `paths`.
pub fn of(paths: &ScalePaths, obj: &Value) -> Value {
    let meta = &obj["metadata"];
    let mut metadata = json!({});
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(field) {
            metadata[field] = v.clone();
        }
    }
    let replicas = |path: &str| obj.pointer(path).cloned().unwrap_or(json!(0));
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    let selector = match &paths.selector {
        ScaleSelector::LabelSelector(path) => obj.pointer(path).and_then(selector_string),
        ScaleSelector::Text(path) => obj.pointer(path).and_then(Value::as_str).map(Into::into),
        ScaleSelector::None => None,
    };
    if let Some(selector) = selector.filter(|s| !s.is_empty()) {
        status["selector"] = json!(selector);
    }
    // `spec.replicas` is left out when zero, `status.replicas` never (as Go encodes them).
    let spec = match replicas(&paths.spec_replicas) {
        zero if zero == json!(0) => json!({}),
        wanted => json!({"replicas": wanted}),
    };
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// `obj` with the desired replicas of `scale`, checked: what to store.
pub fn apply(
    info: &ResourceInfo,
    paths: &ScalePaths,
    mut obj: Value,
    scale: &Value,
) -> ApiResult<Value> {
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if let Some(rv) = scale["metadata"]["resourceVersion"]
        .as_str()
        .filter(|rv| !rv.is_empty())
        && obj["metadata"]["resourceVersion"].as_str() != Some(rv)
    {
        return Err(ApiError::stale(info, &name));
    }
    let replicas = match &scale["spec"]["replicas"] {
        Value::Null => 0,
        v => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "spec.replicas of a Scale must be an integer, not {v}"
            ))
        })?,
    };
    if replicas < 0 {
        let scale_info = ResourceInfo {
            kind: "Scale".into(),
            group: "autoscaling".into(),
            ..info.clone()
        };
        let detail = format!("Invalid value: {replicas}: must be greater than or equal to 0");
        return Err(ApiError::invalid(
            &scale_info,
            &name,
            "spec.replicas",
            "FieldValueInvalid",
            &detail,
        ));
    }
    set(&mut obj, &paths.spec_replicas, json!(replicas));
    Ok(obj)
}

/// Sets the value at the JSON pointer `path` of `obj`, creating the objects on the way.
fn set(obj: &mut Value, path: &str, value: Value) {
    let mut at = obj;
    for key in path.split('/').skip(1) {
        if !at.is_object() {
            *at = json!({});
        }
        at = at
            .as_object_mut()
            .expect("made an object")
            .entry(key)
            .or_insert(Value::Null);
    }
    *at = value;
}

/// A `metav1.LabelSelector` as the string the real server puts in a `Scale`'s status:
/// requirements sorted by key, `key=value`, `key in (a,b)`, `key notin (a,b)`, `key`,
/// `!key`.
pub(crate) fn selector_string(selector: &Value) -> Option<String> {
    let mut requirements: Vec<(String, String)> = Vec::new();
    for (k, v) in selector["matchLabels"].as_object().into_iter().flatten() {
        requirements.push((k.clone(), format!("{k}={}", v.as_str()?)));
    }
    for e in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = e["key"].as_str()?;
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match e["operator"].as_str()? {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        };
        requirements.push((key.to_string(), text));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    Some(
        requirements
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join(","),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selectors_print_sorted_by_key_as_the_real_server_prints_them() {
        let selector = json!({
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "zone", "operator": "DoesNotExist"},
                {"key": "canary", "operator": "Exists"},
            ],
        });
        assert_eq!(
            selector_string(&selector).unwrap(),
            "app=shop,canary,env in (dev,prod),tier=web,!zone"
        );
    }

    #[test]
    fn replicas_are_set_at_a_path_whose_parents_may_be_missing() {
        let mut obj = json!({"metadata": {}});
        set(&mut obj, "/spec/replicas", json!(3));
        assert_eq!(obj, json!({"metadata": {}, "spec": {"replicas": 3}}));
    }
}
