//! Strategic merge patch (`application/strategic-merge-patch+json`) of the built-in types,
//! as kube-apiserver applies it.
//!
//! # Contract
//!
//! - Maps merge key by key; `null` deletes a key (and is dropped where there is nothing to
//!   delete); a value of another JSON type replaces.
//! - A list field merges only where the built-in type declares it (the `patchStrategy` /
//!   `patchMergeKey` tags of the Kubernetes API types, in [`FIELDS`]): lists of objects by
//!   their merge key (`containers` by `name`, container `ports` by `containerPort`, Service
//!   `ports` by `port`, ...), lists of scalars (`finalizers`) as a set. Every other list
//!   is replaced, as an atomic list is.
//! - Directives: `$patch: replace | delete` in a map, `$patch: replace | delete` as an
//!   element of a merged list, `$deleteFromPrimitiveList/<field>`,
//!   `$setElementOrder/<field>` and `$retainKeys`. Merged lists keep the real server's
//!   order: the patch's items in the patch's (or `$setElementOrder`'s) order, interleaved
//!   with the items only the server had, in the server's order.
//! - A value set where there is nothing to merge with loses its maps that hold a `$patch`
//!   directive; a replaced list is kept as sent. Then `$`-keys and `null` values are
//!   dropped, as decoding into the typed object drops them on the real server.
//! - A malformed patch is an error with the real server's code (400 or 422, 500 for what
//!   the real server reports as an internal error), never a panic.

use serde_json::{Map, Value};

use crate::status::ApiError;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// The built-in types (or parts of them) whose fields declare a patch strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    /// A top-level object of a kind without list fields to merge (only its metadata).
    Object,
    /// A workload with a Pod template at `spec.template`: a Deployment, ReplicaSet,
    /// StatefulSet, DaemonSet or Job.
    Workload,
    /// A CronJob.
    CronJob,
    /// A Pod.
    Pod,
    /// A Service.
    Service,
    /// A Namespace.
    Namespace,
    /// A ServiceAccount.
    ServiceAccount,
    /// `metadata` (ObjectMeta).
    Meta,
    /// A workload's `spec` (or a CronJob's Job template's).
    WorkloadSpec,
    /// A CronJob's `spec`.
    CronJobSpec,
    /// A CronJob's `jobTemplate`.
    JobTemplate,
    /// A PodTemplateSpec.
    PodTemplate,
    /// A PodSpec.
    PodSpec,
    /// A container (or init or ephemeral container).
    Container,
    /// A ServiceSpec.
    ServiceSpec,
    /// A status whose `conditions` merge by `type`.
    Status,
    /// A Pod's status: its `conditions` by `type`, its IPs by `ip`, its claims by `name`.
    PodStatus,
    /// Anything else: maps merge, lists are replaced.
    Other,
}

impl Ty {
    /// The type of the top-level object of built-in kind `kind`.
    pub(crate) fn of_kind(kind: &str) -> Self {
        match kind {
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" => Self::Workload,
            "CronJob" => Self::CronJob,
            "Pod" => Self::Pod,
            "Service" => Self::Service,
            "Namespace" => Self::Namespace,
            "ServiceAccount" => Self::ServiceAccount,
            _ => Self::Object,
        }
    }
}

/// How a list field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListMerge {
    /// Replaced by the patch's list (no `patchStrategy`: atomic).
    Replace,
    /// A set of scalars (`patchStrategy:"merge"` without a merge key).
    Scalars,
    /// Objects merged by this key (`patchStrategy:"merge"`, `patchMergeKey`).
    By(&'static str),
}

impl ListMerge {
    /// The merge key of a list of objects merged by key.
    fn key(self) -> Option<&'static str> {
        match self {
            By(k) => Some(k),
            _ => None,
        }
    }
}

use ListMerge::{By, Replace, Scalars};

/// The fields that declare a patch strategy or lead to one: (type, field, the field's
/// (element) type, how the field merges when it is a list).
const FIELDS: &[(Ty, &str, Ty, ListMerge)] = &[
    (Ty::Meta, "ownerReferences", Ty::Other, By("uid")),
    (Ty::Meta, "finalizers", Ty::Other, Scalars),
    (Ty::Workload, "spec", Ty::WorkloadSpec, Replace),
    (Ty::Workload, "status", Ty::Status, Replace),
    (Ty::CronJob, "spec", Ty::CronJobSpec, Replace),
    (Ty::CronJobSpec, "jobTemplate", Ty::JobTemplate, Replace),
    (Ty::JobTemplate, "metadata", Ty::Meta, Replace),
    (Ty::JobTemplate, "spec", Ty::WorkloadSpec, Replace),
    (Ty::Pod, "spec", Ty::PodSpec, Replace),
    (Ty::Pod, "status", Ty::PodStatus, Replace),
    (Ty::Service, "spec", Ty::ServiceSpec, Replace),
    (Ty::Service, "status", Ty::Status, Replace),
    (Ty::Namespace, "status", Ty::Status, Replace),
    (Ty::ServiceAccount, "secrets", Ty::Other, By("name")),
    (Ty::WorkloadSpec, "template", Ty::PodTemplate, Replace),
    (Ty::PodTemplate, "metadata", Ty::Meta, Replace),
    (Ty::PodTemplate, "spec", Ty::PodSpec, Replace),
    (Ty::PodSpec, "volumes", Ty::Other, By("name")),
    (Ty::PodSpec, "initContainers", Ty::Container, By("name")),
    (Ty::PodSpec, "containers", Ty::Container, By("name")),
    (
        Ty::PodSpec,
        "ephemeralContainers",
        Ty::Container,
        By("name"),
    ),
    (Ty::PodSpec, "imagePullSecrets", Ty::Other, By("name")),
    (Ty::PodSpec, "hostAliases", Ty::Other, By("ip")),
    (
        Ty::PodSpec,
        "topologySpreadConstraints",
        Ty::Other,
        By("topologyKey"),
    ),
    (Ty::PodSpec, "resourceClaims", Ty::Other, By("name")),
    (Ty::PodSpec, "schedulingGates", Ty::Other, By("name")),
    (Ty::Container, "ports", Ty::Other, By("containerPort")),
    (Ty::Container, "env", Ty::Other, By("name")),
    (Ty::Container, "volumeMounts", Ty::Other, By("mountPath")),
    (Ty::Container, "volumeDevices", Ty::Other, By("devicePath")),
    (Ty::ServiceSpec, "ports", Ty::Other, By("port")),
    (Ty::Status, "conditions", Ty::Other, By("type")),
    (Ty::PodStatus, "conditions", Ty::Other, By("type")),
    (Ty::PodStatus, "podIPs", Ty::Other, By("ip")),
    (Ty::PodStatus, "hostIPs", Ty::Other, By("ip")),
    (
        Ty::PodStatus,
        "resourceClaimStatuses",
        Ty::Other,
        By("name"),
    ),
];

/// The type of field `name` of `ty` and how it merges as a list.
fn field(ty: Ty, name: &str) -> (Ty, ListMerge) {
    if name == "metadata"
        && matches!(
            ty,
            Ty::Object
                | Ty::Workload
                | Ty::CronJob
                | Ty::Pod
                | Ty::Service
                | Ty::Namespace
                | Ty::ServiceAccount
        )
    {
        return (Ty::Meta, Replace);
    }
    FIELDS
        .iter()
        .find(|(t, f, ..)| *t == ty && *f == name)
        .map_or((Ty::Other, Replace), |&(_, _, child, merge)| (child, merge))
}

/// A patch the real server cannot apply and reports as a bare `500` (a `Status` without a
/// reason), in its words.
fn failed(message: impl Into<String>) -> ApiError {
    ApiError::new(500, "", message)
}

/// The real server's `400` for a malformed `$retainKeys`.
fn bad_retain_keys() -> ApiError {
    ApiError::bad_request("invalid patch format of retainKeys")
}

/// A JSON value as Go's `%v` prints the generic value it decodes to: `map[k:v ...]` with
/// sorted keys, `[a b]`, strings unquoted, `<nil>` for null.
fn go_format(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(go_format).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by_key(|(k, _)| *k);
            let entries: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{k}:{}", go_format(v)))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
        other => other.to_string(),
    }
}

/// The Go type a JSON value decodes to, as `%s` of its `reflect.Type` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// A value where a list was expected.
fn not_a_list(v: &Value) -> ApiError {
    failed(format!(
        "expected a []interface {{}}, but received a {}",
        go_type(v)
    ))
}

fn unknown_patch_type(directive: &Value, map: &Value) -> ApiError {
    failed(format!(
        "unknown patch type: {} in map: {}",
        go_format(directive),
        go_format(map)
    ))
}

/// Applies strategic merge patch `patch` to `original`, an object of type `ty`.
pub(crate) fn apply(original: Value, patch: Value, ty: Ty) -> Result<Value, ApiError> {
    let patch = match patch {
        Value::Object(p) => p,
        Value::Null => Map::new(),
        other => {
            let what = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Bool(_) => "bool",
                _ => "number",
            };
            return Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {what} into Go value of type map[string]interface {{}}"
            )));
        }
    };
    let Value::Object(original) = original else {
        return Err(ApiError::internal("the stored object is not a JSON object"));
    };
    let mut merged = Value::Object(merge_map(original, patch, ty)?);
    strip_directives(&mut merged);
    Ok(merged)
}

/// Removes what decoding into the typed object would not keep: every `$`-key and `null`
/// values in maps (left in values the patch added or in lists it replaced).
fn strip_directives(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, v| !k.starts_with('$') && !v.is_null());
            m.values_mut().for_each(strip_directives);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_directives),
        _ => {}
    }
}

/// A value the patch sets where there is nothing to merge with: maps holding a `$patch`
/// directive are dropped (`None` for the value itself), inside maps and lists.
fn without_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) if m.contains_key(DIRECTIVE) => None,
        Value::Object(m) => Some(Value::Object(
            m.into_iter()
                .filter_map(|(k, v)| without_directives(v).map(|v| (k, v)))
                .collect(),
        )),
        Value::Array(a) => Some(Value::Array(
            a.into_iter().filter_map(without_directives).collect(),
        )),
        other => Some(other),
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    ty: Ty,
) -> Result<Map<String, Value>, ApiError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(unknown_patch_type(directive, &Value::Object(patch.clone()))),
        };
    }
    retain_keys(&mut original, &mut patch)?;
    set_element_orders(&mut original, &mut patch, ty)?;
    for (key, patch_value) in patch {
        let (key, delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            Some(field) => (field.to_string(), true),
            None => (key, false),
        };
        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(current) = original.remove(&key) else {
            if !delete_list && let Some(v) = without_directives(patch_value) {
                original.insert(key, v);
            }
            continue;
        };
        let (child, list) = field(ty, &key);
        let merged = match (current, patch_value) {
            (Value::Object(c), Value::Object(p)) => Some(Value::Object(merge_map(c, p, child)?)),
            (Value::Array(c), Value::Array(p)) => {
                Some(Value::Array(merge_list(c, p, child, list, delete_list)?))
            }
            // A deletion list meets something else: nothing to delete from.
            (current, patch_value) if delete_list && !same_type(&current, &patch_value) => {
                Some(current)
            }
            (_, patch_value) => without_directives(patch_value),
        };
        if let Some(v) = merged {
            original.insert(key, v);
        }
    }
    Ok(original)
}

fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// `$retainKeys`: keys of `original` not listed are cleared; every key the patch sets must
/// be listed.
fn retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    let Some(keys) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = bad_retain_keys;
    let keys: Vec<&str> = keys
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|k| k.as_str().ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    let listed = patch.iter().all(|(k, v)| {
        v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
            || keys.contains(&k.as_str())
    });
    if !listed {
        return Err(bad());
    }
    original.retain(|k, _| keys.contains(&k.as_str()));
    Ok(())
}

/// `$setElementOrder/<field>`: merges `<field>` (if the patch has it) and orders the
/// result by the directive's list.
fn set_element_orders(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    ty: Ty,
) -> Result<(), ApiError> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in keys {
        let order = match patch.remove(&key) {
            Some(Value::Array(order)) => order,
            other => return Err(not_a_list(&other.unwrap_or(Value::Null))),
        };
        let name = &key[SET_ELEMENT_ORDER.len()..];
        let as_list = |v: Option<Value>| match v {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(other) => Err(not_a_list(&other)),
        };
        let from_original = as_list(original.remove(name))?;
        let from_patch = as_list(patch.remove(name))?;
        let (child, list) = field(ty, name);
        let key = list.key();
        if let Some(p) = &from_patch {
            check_order(p, &order, key)?;
        }
        let server_order = from_original.clone().unwrap_or_default();
        let merged = match (from_original, from_patch) {
            (Some(o), None) => o,
            (None, Some(p)) => p.into_iter().filter_map(without_directives).collect(),
            (Some(o), Some(p)) => merge_list(o, p, child, list, false)?,
            (None, None) => continue,
        };
        let (in_order, server_only) = partition(merged, &order, key)?;
        original.insert(
            name.to_string(),
            Value::Array(normalize_order(
                in_order,
                server_only,
                &order,
                &server_order,
                key,
            )),
        );
    }
    Ok(())
}

/// Checks that the items of `patch` (but `$patch: delete` ones) come in the order of
/// `$setElementOrder` list `order`.
fn check_order(patch: &[Value], order: &[Value], key: Option<&str>) -> Result<(), ApiError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let kept: Vec<&Value> = patch
        .iter()
        .filter(|i| key.is_none() || i.get(DIRECTIVE).is_none_or(|d| d != "delete"))
        .collect();
    let same = |item: &Value, listed: &Value| -> Result<bool, ApiError> {
        let Some(k) = key else {
            return Ok(item == listed);
        };
        let value = |v: &Value| v.get(k).cloned().ok_or_else(|| no_merge_key(v, k));
        Ok(value(item)? == value(listed)?)
    };
    let (mut p, mut o) = (0, 0);
    while p < kept.len() && o < order.len() {
        if kept[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if same(kept[p], &order[o])? {
            p += 1;
        }
        o += 1;
    }
    if p < kept.len() {
        return Err(failed(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            go_format(&Value::Array(patch.to_vec())),
            go_format(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    child: Ty,
    list: ListMerge,
    delete_list: bool,
) -> Result<Vec<Value>, ApiError> {
    if list == Replace {
        return Ok(patch);
    }
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    // All elements must be of one Go type, and not lists.
    let mut elements = original.iter().chain(&patch);
    let first = elements.next().map(go_type);
    if first == Some("[]interface {}") {
        return Err(failed("lists of lists are not supported"));
    }
    if elements.any(|e| Some(go_type(e)) != first) {
        return Err(failed(format!(
            "list element types are not identical: [{} {}]",
            go_format(&Value::Array(original)),
            go_format(&Value::Array(patch))
        )));
    }
    let scalars = first != Some("map[string]interface {}");
    let key = list.key();
    let (server, patch, merged) = if scalars {
        if delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut both = original.clone();
        for v in &patch {
            if !both.contains(v) {
                both.push(v.clone());
            }
        }
        (original, patch, both)
    } else {
        let Some(key) = key else {
            return Err(failed("cannot merge lists without merge key"));
        };
        let (server, patch) = special_elements(original, patch, key)?;
        let merged = merge_by_key(server.clone(), &patch, key, child)?;
        (server, patch, merged)
    };
    let (from_patch, server_only) = partition(merged, &patch, key.filter(|_| !scalars))?;
    Ok(normalize_order(
        from_patch,
        server_only,
        &patch,
        &server,
        key.filter(|_| !scalars),
    ))
}

/// Applies the `$patch` elements of a merged list of objects: `delete` removes the items
/// with its key, `replace` makes the patch's other items the whole list. Returns the list
/// and the patch without those elements.
fn special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
    let mut plain_items = Vec::new();
    let mut replace = false;
    for item in patch {
        match item.get(DIRECTIVE) {
            None => plain_items.push(item),
            Some(d) if d == "delete" => {
                let Some(value) = item.get(key) else {
                    return Err(no_merge_key(&item, key));
                };
                original.retain(|o| o.get(key) != Some(value));
            }
            Some(d) if d == "replace" => replace = true,
            Some(d) if d == "merge" => {
                return Err(failed("merging lists cannot yet be specified in the patch"));
            }
            Some(d) => return Err(unknown_patch_type(d, &item)),
        }
    }
    Ok(if replace {
        (plain_items, Vec::new())
    } else {
        (original, plain_items)
    })
}

fn no_merge_key(item: &Value, key: &str) -> ApiError {
    failed(format!(
        "map: {} does not contain declared merge key: {key}",
        go_format(item)
    ))
}

/// Merges each patch item into the original item with the same key, or appends it.
fn merge_by_key(
    mut original: Vec<Value>,
    patch: &[Value],
    key: &str,
    child: Ty,
) -> Result<Vec<Value>, ApiError> {
    for item in patch {
        let value = item.get(key).ok_or_else(|| no_merge_key(item, key))?;
        match original.iter().position(|o| o.get(key) == Some(value)) {
            Some(i) => {
                original[i] = match (original[i].take(), item) {
                    (Value::Object(o), Value::Object(p)) => {
                        Value::Object(merge_map(o, p.clone(), child)?)
                    }
                    (_, other) => other.clone(),
                };
            }
            None => original.push(item.clone()),
        }
    }
    Ok(original)
}

/// Where `item` is in `list`: by merge key for objects, by value for scalars.
fn index_in(list: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    match key {
        Some(k) => {
            let value = item.get(k)?;
            list.iter().position(|o| o.get(k) == Some(value))
        }
        None => list.iter().position(|o| o == item),
    }
}

/// Splits `merged` into the items found in `by` and the others, each in `merged`'s order.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
    let mut found = Vec::new();
    let mut others = Vec::new();
    for item in merged {
        if let Some(k) = key
            && item.get(k).is_none()
        {
            return Err(no_merge_key(&item, k));
        }
        if index_in(by, &item, key).is_some() {
            found.push(item);
        } else {
            others.push(item);
        }
    }
    Ok((found, others))
}

/// The real server's order of a merged list: the patch's items sorted by `patch_order`,
/// the server-only items by `server_order`, interleaved so that a server-only item goes
/// before the first patch item that comes after it on the server.
fn normalize_order(
    mut from_patch: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let rank = |order: &[Value], v: &Value| index_in(order, v, key).unwrap_or(usize::MAX);
    from_patch.sort_by_key(|v| rank(patch_order, v));
    server_only.sort_by_key(|v| rank(server_order, v));
    let mut out = Vec::with_capacity(from_patch.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = from_patch.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (index_in(server_order, l, key), index_in(server_order, r, key)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(containers: Value) -> Value {
        json!({"spec": {"template": {"spec": {"containers": containers}}}})
    }

    fn patched(original: Value, patch: Value) -> Value {
        apply(original, patch, Ty::Workload).expect("patch applies")
    }

    #[test]
    fn containers_merge_by_name_and_env_entries_by_name() {
        let original = deployment(json!([
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
            {"name": "b", "image": "b:1"},
        ]));
        let patch = deployment(json!([
            {"name": "a", "image": "a:2", "env": [{"name": "X", "$patch": "delete"}, {"name": "Z", "value": "3"}]},
        ]));
        // Without `$setElementOrder`, an added item goes before the server's items that
        // the patch does not name (the real server's order too).
        assert_eq!(
            patched(original, patch),
            deployment(json!([
                {"name": "a", "image": "a:2", "env": [{"name": "Z", "value": "3"}, {"name": "Y", "value": "2"}]},
                {"name": "b", "image": "b:1"},
            ]))
        );
    }

    #[test]
    fn set_element_order_orders_the_merged_list() {
        let original = deployment(json!([{"name": "a"}, {"name": "b"}]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}],
            "containers": [{"name": "c", "image": "c"}],
        }}}});
        assert_eq!(
            patched(original, patch),
            deployment(json!([{"name": "c", "image": "c"}, {"name": "b"}, {"name": "a"}]))
        );
    }

    #[test]
    fn a_list_replace_directive_keeps_only_the_patch_items() {
        let original = deployment(json!([{"name": "a"}, {"name": "b"}]));
        let patch = deployment(json!([{"$patch": "replace"}, {"name": "c"}]));
        assert_eq!(patched(original, patch), deployment(json!([{"name": "c"}])));
    }

    #[test]
    fn primitive_lists_merge_as_sets_and_lose_listed_values_by_directive() {
        let original = json!({"metadata": {"finalizers": ["a", "b"]}});
        let added = apply(
            original.clone(),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
            Ty::Object,
        )
        .unwrap();
        assert_eq!(added, json!({"metadata": {"finalizers": ["c", "a", "b"]}}));
        let removed = apply(
            original,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
            Ty::Object,
        )
        .unwrap();
        assert_eq!(removed, json!({"metadata": {"finalizers": ["b"]}}));
    }

    #[test]
    fn lists_without_a_strategy_are_replaced() {
        let original = json!({"spec": {"template": {"spec": {"tolerations": [{"key": "a"}]}}}});
        let patch = json!({"spec": {"template": {"spec": {"tolerations": [{"key": "b"}]}}}});
        assert_eq!(patched(original, patch.clone()), patch);
    }

    #[test]
    fn added_values_lose_directive_maps_and_replaced_lists_keep_their_items() {
        let original = json!({"spec": {"template": {"spec": {"tolerations": [{"key": "a"}]}}}});
        let patch = json!({"spec": {"template": {"spec": {
            "tolerations": [{"$patch": "delete", "key": "a"}],
            "affinity": {"nodeAffinity": {"$patch": "delete"}},
            "volumes": [{"$patch": "replace"}, {"name": "v", "x": null}],
        }}}});
        assert_eq!(
            patched(original, patch),
            json!({"spec": {"template": {"spec": {
                "tolerations": [{"key": "a"}],
                "affinity": {},
                "volumes": [{"name": "v"}],
            }}}})
        );
    }

    #[test]
    fn map_directives_replace_delete_and_retain_keys() {
        let original = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}, "x": {"a": 1, "b": 2}}});
        let patch = json!({"spec": {
            "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            "x": {"$patch": "replace", "c": 3},
        }});
        assert_eq!(
            patched(original.clone(), patch),
            json!({"spec": {"strategy": {"type": "Recreate"}, "x": {"c": 3}}})
        );
        assert_eq!(
            patched(original, json!({"spec": {"x": {"$patch": "delete"}}}))["spec"]["x"],
            json!({})
        );
    }

    #[test]
    fn malformed_patches_are_errors_not_panics() {
        let original = deployment(json!([{"name": "a"}]));
        for patch in [
            deployment(json!([{"image": "no name"}])),
            deployment(json!([{"name": "a", "$patch": "merge"}])),
            json!({"spec": {"$patch": "sideways"}}),
            json!({"spec": {"$retainKeys": "x"}}),
            json!({"spec": {"template": {"spec": {"$setElementOrder/containers": 1}}}}),
            deployment(json!(["a"])),
        ] {
            let e = apply(original.clone(), patch.clone(), Ty::Workload).unwrap_err();
            assert!(e.code >= 400, "{patch}: {e:?}");
        }
    }
}
