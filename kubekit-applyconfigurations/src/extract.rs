//! Extract (client-go's `ExtractDeployment`, `ExtractDeploymentStatus`,
//! `ExtractDeploymentFrom`): the apply configuration a field manager owns in an object,
//! rebuilt from the object's `managedFields`, so a controller can read what it applied
//! last, change it and apply it again without taking over anything else.
//!
//! The object's `fieldsV1` entry of the manager's `Apply` operation on the subresource is
//! a tree of path elements (structured-merge-diff's): `f:<name>` a field, `k:{…}` the item
//! of an associative list with those keys, `v:<json>` the item of a set, `i:<n>` the item
//! at an index, `.` the node itself. The object is cut down to that tree: a field whose
//! element has no children is taken whole (a scalar, an atomic list or map), and so is an
//! item whose element has none (the item of a list of atomic objects, as an owner
//! reference); of other items only the owned fields are kept, their keys too when owned
//! (a key the server defaulted, as a Service port's `protocol`, is not), as client-go's
//! extract does; the items stay in the object's order. The
//! configuration also gets the object's `apiVersion`, `kind`, name and namespace, as
//! client-go's does; a manager that owns nothing gets only those.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::{ApplyConfiguration, Configurable};

/// Why an extract failed: the object does not serialize, its `managedFields` are not
/// structured-merge-diff's, or what the manager owns does not fit the configuration.
#[derive(Debug)]
pub struct ExtractError(String);

impl std::fmt::Display for ExtractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExtractError {}

/// The configuration `manager` applied to `object` (not to a subresource): client-go's
/// `Extract<Kind>(obj, fieldManager)`.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubekit_applyconfigurations::extract;
///
/// let stored: ConfigMap = serde_json::from_value(serde_json::json!({
///     "metadata": {
///         "name": "settings", "namespace": "demo",
///         "managedFields": [{
///             "manager": "web-controller", "operation": "Apply", "fieldsType": "FieldsV1",
///             "fieldsV1": { "f:data": { "f:mode": {} } }
///         }]
///     },
///     "data": { "mode": "fast", "added-by-someone-else": "yes" }
/// })).unwrap();
/// let config = extract(&stored, "web-controller").unwrap();
/// assert_eq!(
///     serde_json::to_value(&config).unwrap(),
///     serde_json::json!({
///         "apiVersion": "v1", "kind": "ConfigMap",
///         "metadata": { "name": "settings", "namespace": "demo" },
///         "data": { "mode": "fast" }
///     })
/// );
/// ```
pub fn extract<K>(object: &K, manager: &str) -> Result<K::Configuration, ExtractError>
where
    K: Configurable + Serialize,
    K::Configuration: ApplyConfiguration,
{
    extract_from(object, manager, "")
}

/// The configuration `manager` applied to `object`'s `status` subresource: client-go's
/// `Extract<Kind>Status`.
pub fn extract_status<K>(object: &K, manager: &str) -> Result<K::Configuration, ExtractError>
where
    K: Configurable + Serialize,
    K::Configuration: ApplyConfiguration,
{
    extract_from(object, manager, "status")
}

/// The configuration `manager` applied to `object` through `subresource` (`""` for the
/// object itself): client-go's `Extract<Kind>From`.
pub fn extract_from<K>(
    object: &K,
    manager: &str,
    subresource: &str,
) -> Result<K::Configuration, ExtractError>
where
    K: Configurable + Serialize,
    K::Configuration: ApplyConfiguration,
{
    let fail = |what: String| ExtractError(format!("extract of {manager}'s fields: {what}"));
    let value = serde_json::to_value(object).map_err(|e| fail(format!("the object: {e}")))?;
    let mut owned = Map::new();
    for entry in managed_entries(&value, manager, subresource) {
        let set = entry
            .get("fieldsV1")
            .and_then(Value::as_object)
            .ok_or_else(|| fail("an Apply entry without fieldsV1".into()))?;
        union(&mut owned, set);
    }
    let mut config = match filter(&value, &owned).map_err(fail)? {
        Value::Object(fields) => fields,
        _ => return Err(fail("the object is not a JSON object".into())),
    };
    identify::<K::Configuration>(&mut config, &value);
    serde_json::from_value(Value::Object(config)).map_err(|e| fail(e.to_string()))
}

/// Sets what identifies the object in a configuration: its `apiVersion` and `kind` (the
/// configuration's), its name and namespace (the object's).
fn identify<C: ApplyConfiguration>(config: &mut Map<String, Value>, object: &Value) {
    config.insert("apiVersion".into(), C::API_VERSION.into());
    config.insert("kind".into(), C::KIND.into());
    let meta = config
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        for key in ["name", "namespace"] {
            if let Some(v) = object.pointer(&format!("/metadata/{key}")) {
                meta.insert(key.into(), v.clone());
            }
        }
    }
}

/// The `managedFields` entries of `manager`'s `Apply` operations on `subresource`.
fn managed_entries<'a>(
    object: &'a Value,
    manager: &'a str,
    subresource: &'a str,
) -> impl Iterator<Item = &'a Map<String, Value>> + 'a {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .filter(move |e| {
            let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
            text("manager") == manager
                && text("operation") == "Apply"
                && text("subresource") == subresource
        })
}

/// Adds the set `more` to `set`.
fn union(set: &mut Map<String, Value>, more: &Map<String, Value>) {
    for (key, children) in more {
        match (set.get_mut(key), children) {
            (Some(Value::Object(mine)), Value::Object(theirs)) => union(mine, theirs),
            _ => {
                set.insert(key.clone(), children.clone());
            }
        }
    }
}

/// Whether a set's node has children besides itself (`.`).
fn has_children(set: &Map<String, Value>) -> bool {
    set.keys().any(|k| k != ".")
}

/// `value` cut down to the fields `set` names.
fn filter(value: &Value, set: &Map<String, Value>) -> Result<Value, String> {
    match value {
        Value::Object(fields) => {
            let mut out = Map::new();
            for (key, children) in set {
                if key == "." {
                    continue;
                }
                let name = key
                    .strip_prefix("f:")
                    .ok_or_else(|| format!("{key:?} names an item of an object"))?;
                let Some(field) = fields.get(name) else {
                    continue;
                };
                out.insert(name.to_string(), pick(field, children, key)?);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            for (index, item) in items.iter().enumerate() {
                for (key, children) in set {
                    if let Some(picked) = pick_item(item, index, key, children)? {
                        out.push(picked);
                        break;
                    }
                }
            }
            Ok(Value::Array(out))
        }
        scalar => Ok(scalar.clone()),
    }
}

/// The set that follows the path element `key`.
fn set_after<'a>(key: &str, children: &'a Value) -> Result<&'a Map<String, Value>, String> {
    children
        .as_object()
        .ok_or_else(|| format!("{key:?} is not followed by a set"))
}

/// What of `value` the set node `children` (at `key`) names: all of it for a node without
/// children.
fn pick(value: &Value, children: &Value, key: &str) -> Result<Value, String> {
    let children = set_after(key, children)?;
    if has_children(children) {
        filter(value, children).map_err(|e| format!("{key}: {e}"))
    } else {
        Ok(value.clone())
    }
}

/// The part of the list item `item` (at `index`) that the path element `key` names, or
/// `None` when `key` is another item.
fn pick_item(
    item: &Value,
    index: usize,
    key: &str,
    children: &Value,
) -> Result<Option<Value>, String> {
    if let Some(keys) = key.strip_prefix("k:") {
        let keys: Map<String, Value> =
            serde_json::from_str(keys).map_err(|e| format!("{key:?}: {e}"))?;
        let Some(fields) = item.as_object() else {
            return Ok(None);
        };
        if !keys.iter().all(|(k, v)| fields.get(k) == Some(v)) {
            return Ok(None);
        }
        return pick(item, children, key).map(Some);
    }
    if let Some(v) = key.strip_prefix("v:") {
        let v: Value = serde_json::from_str(v).map_err(|e| format!("{key:?}: {e}"))?;
        return Ok((*item == v).then(|| item.clone()));
    }
    if let Some(i) = key.strip_prefix("i:") {
        let i: usize = i.parse().map_err(|e| format!("{key:?}: {e}"))?;
        return if i == index {
            pick(item, children, key).map(Some)
        } else {
            Ok(None)
        };
    }
    Err(format!("{key:?} names a field of a list"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn associative_list_items_keep_only_the_owned_fields_and_atomic_items_whole() {
        let object = json!({ "containers": [
            { "name": "a", "image": "x", "args": ["1", "2"] },
            { "name": "b", "image": "y" },
            { "name": "c", "image": "z" },
            { "name": "d", "image": "w" },
        ]});
        let set = json!({ "f:containers": {
            "k:{\"name\":\"c\"}": { ".": {}, "f:image": {} },
            "k:{\"name\":\"a\"}": { ".": {}, "f:name": {}, "f:args": {} },
            "k:{\"name\":\"d\"}": {},
        }});
        assert_eq!(
            filter(&object, set.as_object().unwrap()).unwrap(),
            json!({ "containers": [
                { "name": "a", "args": ["1", "2"] },
                { "image": "z" },
                { "name": "d", "image": "w" },
            ]})
        );
    }

    #[test]
    fn a_list_keyed_by_several_fields_matches_on_all_of_them() {
        let object = json!({ "ports": [
            { "containerPort": 80, "protocol": "TCP", "name": "http" },
            { "containerPort": 80, "protocol": "UDP", "name": "quic" },
        ]});
        let set = json!({ "f:ports": {
            "k:{\"containerPort\":80,\"protocol\":\"UDP\"}": { ".": {}, "f:name": {} },
        }});
        assert_eq!(
            filter(&object, set.as_object().unwrap()).unwrap(),
            json!({ "ports": [{ "name": "quic" }] })
        );
    }

    #[test]
    fn sets_and_indexed_items_and_atomic_fields() {
        let object = json!({
            "finalizers": ["a", "b", "c"],
            "matrix": [[1, 2], [3, 4]],
            "selector": { "matchLabels": { "app": "web", "tier": "x" } },
        });
        let set = json!({
            "f:finalizers": { "v:\"c\"": {}, "v:\"a\"": {} },
            "f:matrix": { "i:1": {} },
            "f:selector": {},
        });
        assert_eq!(
            filter(&object, set.as_object().unwrap()).unwrap(),
            json!({
                "finalizers": ["a", "c"],
                "matrix": [[3, 4]],
                "selector": { "matchLabels": { "app": "web", "tier": "x" } },
            })
        );
    }

    #[test]
    fn a_set_that_is_not_structured_merge_diffs_is_an_error_naming_the_element() {
        let object = json!({ "spec": { "replicas": 3 } });
        let set = json!({ "f:spec": { "k:{\"name\":\"a\"}": {} } });
        let err = filter(&object, set.as_object().unwrap()).unwrap_err();
        assert!(
            err.contains("f:spec") && err.contains("item of an object"),
            "{err}"
        );
        let set = json!({ "f:spec": "owned" });
        let err = filter(&object, set.as_object().unwrap()).unwrap_err();
        assert!(err.contains("not followed by a set"), "{err}");
    }
}
