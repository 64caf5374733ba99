//! The rules a write is validated against that belong to the store rather than to a kind:
//! the names of each resource's objects, a custom resource's `kind` and `apiVersion`, and
//! the CEL rules of a CRD's schemas.

use serde_json::Value;

use super::meta_str;
use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

/// A name that is one path segment (apimachinery's `IsValidPathSegmentName`): RBAC's
/// names, such as `system:discovery`.
pub(crate) fn path_segment(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name == "." || name == ".." {
        errs.push(format!("may not be '{name}'"));
    }
    for c in ['/', '%'] {
        if name.contains(c) {
            errs.push(format!("may not contain '{c}'"));
        }
    }
    errs
}

/// The name rules of `info`'s objects, as the real server's: a Namespace's and a
/// Service's name is a DNS-1123 label (1.37 accepts `1svc`), a CRD's `<plural>.<group>`,
/// an IPAddress's an IP (checked with its kind),
/// RBAC's roles' and bindings' and ClusterTrustBundles' one path segment, every other name a
/// DNS-1123 subdomain;
/// a `generateName` is checked as a prefix (a trailing `-` allowed), and the name
/// generated from it as a name.
pub(super) fn check_name(info: &ResourceInfo, obj: &Value, name: &str) -> ApiResult<()> {
    use kubekit::validation::{dns1123_label, dns1123_subdomain};
    let rule: fn(&str) -> Vec<String> = match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace" | "Service") => dns1123_label,
        ("rbac.authorization.k8s.io", _) => path_segment,
        // `<signer name, '/' as ':'>:<suffix>`, one path segment.
        ("certificates.k8s.io", "ClusterTrustBundle") => path_segment,
        // An IP, in its canonical form (see `networking_kinds`).
        ("networking.k8s.io", "IPAddress") => |_| Vec::new(),
        _ => dns1123_subdomain,
    };
    let invalid = |field: &'static str, value: &str, errs: Vec<String>| {
        let quoted = kubekit::validation::quote(value);
        errs.into_iter().map(move |e| {
            (
                field.to_string(),
                "FieldValueInvalid",
                format!("Invalid value: {quoted}: {e}"),
            )
        })
    };
    let mut faults = Vec::new();
    if let Some(prefix) = meta_str(obj, "generateName").filter(|p| !p.is_empty()) {
        let masked = prefix
            .strip_suffix('-')
            .filter(|p| !p.is_empty())
            .unwrap_or(prefix);
        faults.extend(invalid("metadata.generateName", prefix, rule(masked)));
    }
    faults.extend(invalid("metadata.name", name, rule(name)));
    if info.group == "apiextensions.k8s.io" && faults.is_empty() {
        let spec = |pointer: &str| {
            obj.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let wanted = format!("{}.{}", spec("/spec/names/plural"), spec("/spec/group"));
        if name != wanted {
            let why = "must be spec.names.plural+\".\"+spec.group".to_string();
            faults.extend(invalid("metadata.name", name, vec![why]));
        }
    }
    faults.extend(crate::object_meta::faults(obj, info.builtin));
    crate::kinds::refused(info, name, &faults)
}

/// Refuses a custom resource whose `kind` or `apiVersion` (changed by a patch) is not its
/// resource's, as the custom resource validator does: the refusal names the kind sent.
pub(super) fn check_type_meta(
    info: &ResourceInfo,
    name: &str,
    new: &Value,
    old: &Value,
) -> ApiResult<()> {
    let mut faults = Vec::new();
    for field in ["kind", "apiVersion"] {
        let (sent, wanted) = (&new[field], &old[field]);
        if !sent.is_null() && sent != wanted {
            let why = format!("must be {}", wanted.as_str().unwrap_or_default());
            let shown = crate::status::shown(sent);
            faults.push((
                field,
                "FieldValueInvalid",
                format!("Invalid value: {shown}: {why}"),
            ));
        }
    }
    if faults.is_empty() {
        return Ok(());
    }
    let sent = ResourceInfo {
        kind: new["kind"].as_str().unwrap_or(&info.kind).to_string(),
        ..info.clone()
    };
    Err(ApiError::invalid_fields(&sent, name, &faults))
}

/// Refuses a CRD whose CEL rules do not compile (see `cel_rules::compile`).
pub(super) fn check_crd_rules(info: &ResourceInfo, name: &str, crd: &Value) -> ApiResult<()> {
    if info.group != "apiextensions.k8s.io" {
        return Ok(());
    }
    let mut faults = Vec::new();
    let versions: Vec<&Value> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let schema = |v: &Value| v["schema"]["openAPIV3Schema"].clone();
    // The real server names one schema of every version as the CRD's own.
    if versions.windows(2).all(|w| schema(w[0]) == schema(w[1]))
        && let Some(first) = versions.first()
    {
        let at = "spec.validation.openAPIV3Schema";
        if !schema(first).is_null() {
            crate::crd_schema::structural_faults(&schema(first), at, &mut faults);
        }
        crate::cel_rules::compile_errors(&schema(first), at, &mut faults);
    } else {
        for (i, version) in versions.iter().enumerate() {
            let at = format!("spec.versions[{i}].schema.openAPIV3Schema");
            if !schema(version).is_null() {
                crate::crd_schema::structural_faults(&schema(version), &at, &mut faults);
            }
            crate::cel_rules::compile_errors(&schema(version), &at, &mut faults);
        }
    }
    if faults.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(info, name, &faults))
}
