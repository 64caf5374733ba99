//! The checks of `metadata` every kind shares, as apimachinery's
//! `ValidateObjectMetaAccessor` makes them on a create and an update.
//!
//! # Contract
//!
//! - [`faults`] lists, in the real server's order: a negative `generation`; each label
//!   whose key is not a qualified name (`[prefix/]name`, the prefix a DNS-1123 subdomain,
//!   the name at most 63 bytes of alphanumerics, `-`, `_`, `.`) or whose value is not a
//!   label value; each annotation key that is not a qualified name once lower-cased, and
//!   annotations of more than 256 KiB (keys and values together); each owner reference
//!   without `apiVersion`, `kind`, `name` or `uid`, with an `apiVersion` that is not
//!   `<group>/<version>` or `<version>`, or naming a core `v1` Event; a second controller
//!   reference; each finalizer that is not a qualified name, and `orphan` with
//!   `foregroundDeletion`.
//! - Labels and annotations are walked in key order (the real server walks Go's map order,
//!   which varies: one fault per request compares alike).
//! - [`finalizer_warnings`] are the warnings the real server gives for the finalizers a
//!   write of a custom resource adds: a name without a `/` that is not one of Kubernetes'
//!   own.

use serde_json::{Value, json};

use crate::cel_library::{label_value_errors, qualified_name_errors as label_key_errors};
use crate::status::shown;

/// The most bytes an object's annotations may hold, keys and values together.
pub const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

/// One fault: its field, its cause's reason and its message (without the field).
pub(crate) type Fault = (String, &'static str, String);

fn invalid(field: &str, value: &Value, why: &str) -> Fault {
    (
        field.to_string(),
        "FieldValueInvalid",
        format!("Invalid value: {}: {why}", shown(value)),
    )
}

fn required(field: String, why: &str) -> Fault {
    (
        field,
        "FieldValueRequired",
        format!("Required value: {why}"),
    )
}

/// The faults of `obj`'s metadata (see the module's contract); a built-in kind's
/// finalizers without a `/` must also be one of Kubernetes' own.
pub(crate) fn faults(obj: &Value, builtin: bool) -> Vec<Fault> {
    let meta = &obj["metadata"];
    let mut out = Vec::new();
    if let Some(g) = meta["generation"].as_i64().filter(|g| *g < 0) {
        out.push(invalid(
            "metadata.generation",
            &json!(g),
            "must be greater than or equal to 0",
        ));
    }
    for (key, value) in meta["labels"].as_object().into_iter().flatten() {
        for e in label_key_errors(key) {
            out.push(invalid("metadata.labels", &json!(key), &e));
        }
        let text = value.as_str().unwrap_or_default();
        for e in label_value_errors(text) {
            out.push(invalid("metadata.labels", value, &e));
        }
    }
    let annotations = meta["annotations"].as_object();
    let mut size = 0;
    for (key, value) in annotations.into_iter().flatten() {
        for e in label_key_errors(&key.to_lowercase()) {
            out.push(invalid("metadata.annotations", &json!(key), &e));
        }
        size += key.len() + value.as_str().map_or(0, str::len);
    }
    if size > ANNOTATIONS_MAX_BYTES {
        out.push((
            "metadata.annotations".into(),
            "FieldValueTooLong",
            format!("Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes"),
        ));
    }
    out.extend(owner_reference_faults(&meta["ownerReferences"]));
    out.extend(finalizer_faults(&meta["finalizers"]));
    if builtin {
        let finalizers = meta["finalizers"].as_array().into_iter().flatten();
        for (i, name) in finalizers.enumerate() {
            let text = name.as_str().unwrap_or_default();
            if !text.contains('/') && !STANDARD_FINALIZERS.contains(&text) {
                out.push(invalid(
                    &format!("metadata.finalizers[{i}]"),
                    name,
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
    out
}

/// The faults of an update of `old`'s metadata to `new`'s that the update's own checks
/// find (after [`faults`]): finalizers added to an object being deleted (twice, as the
/// real server's two checks of it report), a `deletionTimestamp` or
/// `deletionGracePeriodSeconds` set or changed, a `uid` changed.
pub(crate) fn update_faults(new: &Value, old: &Value) -> Vec<Fault> {
    let (new_meta, old_meta) = (&new["metadata"], &old["metadata"]);
    let mut out = Vec::new();
    if old_meta.get("deletionTimestamp").is_some() {
        let names = |m: &Value| -> std::collections::BTreeSet<String> {
            m["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        };
        let added: Vec<String> = names(new_meta)
            .difference(&names(old_meta))
            .cloned()
            .collect();
        if !added.is_empty() {
            let quoted: Vec<String> = added
                .iter()
                .map(|a| kubekit::validation::quote(a))
                .collect();
            let fault = (
                "metadata.finalizers".to_string(),
                "FieldValueForbidden",
                format!(
                    "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
            );
            out.push(fault.clone());
            out.push(fault);
        }
    }
    for k in ["uid", "deletionTimestamp", "deletionGracePeriodSeconds"] {
        let (n, o) = (&new_meta[k], &old_meta[k]);
        // The server keeps an object's deletionTimestamp whatever an update says.
        let kept = k == "deletionTimestamp" && !o.is_null();
        if !n.is_null() && n != o && !kept {
            out.push(invalid(&format!("metadata.{k}"), n, "field is immutable"));
        }
    }
    out
}

/// The faults of a list of owner references (apimachinery's `ValidateOwnerReferences`).
fn owner_reference_faults(refs: &Value) -> Vec<Fault> {
    let mut out = Vec::new();
    let mut first_controller = None;
    for (i, r) in refs.as_array().into_iter().flatten().enumerate() {
        let at = format!("metadata.ownerReferences[{i}]");
        let text = |k: &str| r[k].as_str().unwrap_or_default();
        let api_version = text("apiVersion");
        let version = match api_version.split('/').collect::<Vec<_>>()[..] {
            [v] => Some(v),
            [_, v] => Some(v),
            _ => None,
        };
        if api_version.is_empty() {
            out.push(required(format!("{at}.apiVersion"), "must not be empty"));
        } else if version.is_none_or(str::is_empty) {
            out.push(invalid(
                &format!("{at}.apiVersion"),
                &json!(api_version),
                "must be <group>/<version> or <version>",
            ));
        }
        for k in ["kind", "name", "uid"] {
            if text(k).is_empty() {
                out.push(required(format!("{at}.{k}"), "must not be empty"));
            }
        }
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if group.is_empty() && version == Some("v1") && text("kind") == "Event" {
            out.push(invalid_json(
                &at,
                &owner_reference_shown(r),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r["controller"] == json!(true) {
            let this = format!("{}/{}", text("kind"), text("name"));
            match &first_controller {
                Some(first) => {
                    let refs_shown: Vec<String> = refs
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(owner_reference_shown)
                        .collect();
                    out.push(invalid_json(
                        "metadata.ownerReferences",
                        &format!("[{}]", refs_shown.join(",")),
                        &format!("Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"),
                    ));
                }
                None => first_controller = Some(this),
            }
        }
    }
    out
}

/// An owner reference as Go encodes a `metav1.OwnerReference`: its fields in their
/// declared order, the optional ones only when set.
fn owner_reference_shown(r: &Value) -> String {
    let mut fields = Vec::new();
    for k in ["apiVersion", "kind", "name", "uid"] {
        fields.push(format!(
            "\"{k}\":{}",
            json!(r[k].as_str().unwrap_or_default())
        ));
    }
    for k in ["controller", "blockOwnerDeletion"] {
        if let Some(b) = r[k].as_bool() {
            fields.push(format!("\"{k}\":{b}"));
        }
    }
    format!("{{{}}}", fields.join(","))
}

/// A fault whose value is shown as `json` (Go's encoding of a struct).
fn invalid_json(field: &str, json: &str, why: &str) -> Fault {
    (
        field.to_string(),
        "FieldValueInvalid",
        format!("Invalid value: {json}: {why}"),
    )
}

/// The faults of a list of finalizers (apimachinery's `ValidateFinalizers`).
fn finalizer_faults(finalizers: &Value) -> Vec<Fault> {
    let names: Vec<&str> = finalizers
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut out = Vec::new();
    for name in &names {
        for e in label_key_errors(name) {
            out.push(invalid("metadata.finalizers", &json!(name), &e));
        }
    }
    if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
        out.push(invalid(
            "metadata.finalizers",
            &json!(names),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    out
}

/// Kubernetes' own finalizers, which need no domain.
const STANDARD_FINALIZERS: [&str; 3] = ["orphan", "foregroundDeletion", "kubernetes"];

/// The warnings of the finalizers of `new` that `old` did not have (a custom resource's
/// write, as the real server's custom resource strategy gives them), in name order.
pub(crate) fn finalizer_warnings(new: &Value, old: Option<&Value>) -> Vec<String> {
    let names = |o: &Value| -> std::collections::BTreeSet<String> {
        o["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect()
    };
    let mut added = names(new);
    if let Some(old) = old {
        added = added.difference(&names(old)).cloned().collect();
    }
    let at = "metadata.finalizers";
    let mut out = Vec::new();
    for name in added {
        let quoted = kubekit::validation::quote(&name);
        out.extend(
            label_key_errors(&name)
                .into_iter()
                .map(|e| format!("{at}: {quoted}: {e}")),
        );
        if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name.as_str()) {
            let path = if name.contains('.') {
                " including a path (/)"
            } else {
                ""
            };
            out.push(format!("{at}: {quoted}: prefer a domain-qualified finalizer name{path} to avoid accidental conflicts with other finalizer writers"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_annotations_owners_and_finalizers_are_checked_in_the_servers_order() {
        let obj = json!({"metadata": {
            "generation": -1,
            "labels": {"a/b/c": "ok", "app": "no good"},
            "annotations": {"Big": "x".repeat(ANNOTATIONS_MAX_BYTES)},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}],
            "finalizers": ["orphan", "foregroundDeletion"],
        }});
        let fields: Vec<String> = faults(&obj, false).into_iter().map(|(f, _, _)| f).collect();
        assert_eq!(
            fields,
            [
                "metadata.generation",
                "metadata.labels",
                "metadata.labels",
                "metadata.annotations",
                "metadata.ownerReferences[0]",
                "metadata.finalizers",
            ]
        );
    }

    #[test]
    fn a_second_controller_names_both() {
        let refs = json!([
            {"apiVersion": "apps/v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "apps/v1", "kind": "B", "name": "b", "uid": "2", "controller": true},
        ]);
        let faults = owner_reference_faults(&refs);
        assert_eq!(faults.len(), 1);
        assert!(
            faults[0].2.ends_with("references for A/a and B/b"),
            "{}",
            faults[0].2
        );
    }

    #[test]
    fn finalizers_without_a_domain_are_warned_about_once_added() {
        let new = json!({"metadata": {"finalizers": ["hold", "a.b", "kubernetes", "x.dev/y"]}});
        assert_eq!(
            finalizer_warnings(&new, None),
            [
                "metadata.finalizers: \"a.b\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers",
                "metadata.finalizers: \"hold\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
            ]
        );
        assert!(finalizer_warnings(&new, Some(&new)).is_empty());
    }
}
