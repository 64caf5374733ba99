//! A minimal OpenAPI v3: what kubectl needs to create, patch and apply through the fake.
//!
//! # Contract
//!
//! - `/openapi/v3` lists one document per served group-version (`api/v1`,
//!   `apis/<group>/<version>`), each at `/openapi/v3/<path>?hash=<hash of the document>`.
//! - A group-version's document has one path per served resource, `.../{name}`, with its
//!   `patch` operation only: `x-kubernetes-group-version-kind`, the query parameters
//!   `fieldManager` (the writer's name in managedFields) and `fieldValidation` (what
//!   to do with unknown fields), and the patch types the fake applies to the resource as the request body's
//!   media types. Its `components.schemas` are the pinned release's schemas of the
//!   built-in kinds served there and of every type they refer to, descriptions included
//!   (generated into `openapi_schemas.json` by `kubekit-fake-gen`), so that `kubectl
//!   explain` shows what it shows on the real server. A custom resource's are its CRD's
//!   schema of that version (an `x-kubernetes-int-or-string` field also says `anyOf`
//!   integer or string) with the real server's `apiVersion`, `kind` and `metadata`
//!   properties and group-version-kind, its list's, and the metadata types they refer to
//!   (their templates generated from a CRD's document on the real server).
//! - kubectl then leaves validation to the server, and for a client-side `apply` sends a
//!   strategic merge patch (built-in kinds) or a JSON merge patch (custom resources).
//!   `/openapi/v2` is `404`: kubectl's fallbacks to it end there.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::discovery::served_at;
use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};
use crate::store::Store;

/// The path (under `/openapi/v3/`) of every served group-version's document.
fn group_version_paths(store: &Store) -> Vec<String> {
    let mut paths = Vec::new();
    for r in store.resources() {
        for v in &r.versions {
            let path = gv_path(&r.group, v);
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// A short hex digest of `text` (FNV-1a, 64 bits): the document's version in its URL.
fn digest(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016X}")
}

/// The `/openapi/v3` index.
pub fn index(store: &Store) -> Value {
    let mut paths = Map::new();
    for path in group_version_paths(store) {
        // The static schemas by their digest, computed once: the rest by its text.
        let hash = operations(store, &path)
            .map(|d| digest(&format!("{d}{}", schemas(&path).1)))
            .unwrap_or_default();
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// The document of group-version `path` (`api/v1`, `apis/<group>/<version>`).
pub fn document(store: &Store, path: &str) -> ApiResult<Value> {
    let mut doc = operations(store, path)?;
    if let Some(all) = doc["components"]["schemas"].as_object_mut() {
        for (name, schema) in schemas(path).0.as_object().into_iter().flatten() {
            all.insert(name.clone(), schema.clone());
        }
    }
    Ok(doc)
}

/// The document of group-version `path` without the static schemas of its built-in kinds
/// (custom resources' are there).
fn operations(store: &Store, path: &str) -> ApiResult<Value> {
    let (group, version) = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", version] => ("", *version),
        ["apis", group, version] => (*group, *version),
        _ => return Err(ApiError::no_route()),
    };
    let served = served_at(store, group, version);
    if served.is_empty() {
        return Err(ApiError::no_route());
    }
    let prefix = format!("/{}", gv_path(group, version));
    let mut paths = Map::new();
    let mut schemas = Map::new();
    // A review is only created: it has no patch operation.
    for r in served.into_iter().filter(|r| !r.review) {
        let at = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{prefix}/{}/{{name}}", r.plural)
        };
        paths.insert(at, json!({"patch": patch_operation(r, version)}));
        if !r.builtin {
            custom_resource_schemas(store, r, version, &mut schemas);
        }
    }
    let release = &crate::resources::version_document()["gitVersion"];
    Ok(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": release},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// Adds to `out` the schemas the real server publishes for custom resource `r` at
/// `version`: its CRD's schema of that version (an `x-kubernetes-int-or-string` field
/// also says `anyOf` integer or string) with `apiVersion`, `kind`, `metadata` and its
/// group-version-kind, its list's, and the metadata types they refer to. Nothing for a
/// version without a schema.
fn custom_resource_schemas(
    store: &Store,
    r: &ResourceInfo,
    version: &str,
    out: &mut Map<String, Value>,
) {
    let crd = store
        .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .and_then(|crds| store.get(&crds, "", &r.qualified()).ok());
    let versions = crd
        .as_ref()
        .and_then(|c| c.pointer("/spec/versions")?.as_array().cloned());
    let Some(schema) = versions
        .into_iter()
        .flatten()
        .find(|v| v["name"] == version)
        .and_then(|v| v.pointer("/schema/openAPIV3Schema").cloned())
    else {
        return;
    };
    let templates = &generated().custom_resources;
    for (name, meta) in templates.as_object().into_iter().flatten() {
        if name.starts_with("io.k8s.") {
            out.insert(name.clone(), meta.clone());
        }
    }
    let reversed: Vec<&str> = r.group.split('.').rev().collect();
    let name = format!("{}.{version}.{}", reversed.join("."), r.kind);
    let gvk = |kind: &str| json!([{"group": r.group, "kind": kind, "version": version}]);
    let mut kind = templates["kind"].clone();
    let mut published = with_int_or_string_any_of(schema);
    if let Some(props) = published
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        for (field, s) in templates["kind"]["properties"]
            .as_object()
            .into_iter()
            .flatten()
        {
            props.insert(field.clone(), s.clone());
        }
    }
    for (field, value) in published.as_object().into_iter().flatten() {
        kind[field] = value.clone();
    }
    kind["x-kubernetes-group-version-kind"] = gvk(&r.kind);
    let mut list = templates["list"].clone();
    list["description"] = json!(format!("{0}List is a list of {0}", r.kind));
    let items = &mut list["properties"]["items"];
    let about = items["description"].as_str().unwrap_or_default();
    items["description"] = json!(about.replacen("probes", &r.plural, 1));
    items["items"]["$ref"] = json!(format!("#/components/schemas/{name}"));
    list["x-kubernetes-group-version-kind"] = gvk(&format!("{}List", r.kind));
    out.insert(format!("{name}List"), list);
    out.insert(name, kind);
}

/// `schema` with every `x-kubernetes-int-or-string` field also saying `anyOf` integer or
/// string, as the real server publishes it.
fn with_int_or_string_any_of(mut schema: Value) -> Value {
    match &mut schema {
        Value::Object(m) => {
            for v in m.values_mut() {
                *v = with_int_or_string_any_of(v.take());
            }
            if m.get("x-kubernetes-int-or-string") == Some(&json!(true)) && !m.contains_key("anyOf")
            {
                m.insert(
                    "anyOf".into(),
                    json!([{"type": "integer"}, {"type": "string"}]),
                );
            }
        }
        Value::Array(a) => {
            for v in a.iter_mut() {
                *v = with_int_or_string_any_of(v.take());
            }
        }
        _ => {}
    }
    schema
}

/// What `openapi_schemas.json` (generated by `kubekit-fake-gen` from what the real server
/// serves) holds.
struct Generated {
    /// By group-version path: the schemas of the built-in kinds served there and of the
    /// types they refer to, with their digest.
    documents: BTreeMap<String, (Value, String)>,
    /// What a custom resource's document holds besides its own schemas, and the templates
    /// of those (`kind`, `list`).
    custom_resources: Value,
}

fn generated() -> &'static Generated {
    static GENERATED: OnceLock<Generated> = OnceLock::new();
    GENERATED.get_or_init(|| {
        let file: Value = serde_json::from_str(include_str!("openapi_schemas.json"))
            .unwrap_or_else(|_| json!({}));
        let documents = file["documents"].as_object().cloned().unwrap_or_default();
        Generated {
            documents: documents
                .into_iter()
                .map(|(path, schemas)| {
                    let hash = digest(&schemas.to_string());
                    (path, (schemas, hash))
                })
                .collect(),
            custom_resources: file["customResources"].clone(),
        }
    })
}

/// The schemas of the built-in kinds served at group-version `path` and of the types they
/// refer to, with their digest; none for custom resources.
fn schemas(path: &str) -> &'static (Value, String) {
    static NONE: OnceLock<(Value, String)> = OnceLock::new();
    generated()
        .documents
        .get(path)
        .unwrap_or_else(|| NONE.get_or_init(|| (json!({}), String::new())))
}

fn patch_operation(r: &ResourceInfo, version: &str) -> Value {
    let mut media = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    if r.builtin {
        media.push("application/strategic-merge-patch+json");
    }
    let content: Map<String, Value> = media
        .into_iter()
        .map(|m| (m.to_string(), json!({"schema": {"type": "object"}})))
        .collect();
    let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
    json!({
        "description": format!("partially update the specified {}", r.kind),
        "operationId": format!("patch{}", r.kind),
        "parameters": [query("fieldManager"), query("fieldValidation")],
        "requestBody": {"content": content, "required": true},
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": {"group": r.group, "version": version, "kind": r.kind},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_points_at_each_group_version_document_with_its_schemas() {
        let store = Store::new();
        let index = index(&store);
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        let doc = document(&store, "apis/apps/v1").unwrap();
        let hash = url.strip_prefix("/openapi/v3/apis/apps/v1?hash=").unwrap();
        assert_eq!(hash.len(), 16);
        assert_eq!(index, super::index(&store), "the hash is stable");
        assert!(doc["components"]["schemas"]["io.k8s.api.apps.v1.StatefulSet"].is_object());
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        assert!(
            patch["requestBody"]["content"]["application/strategic-merge-patch+json"].is_object()
        );
        assert_eq!(
            document(&store, "apis/nothing.example/v1")
                .unwrap_err()
                .code,
            404
        );
    }
}
