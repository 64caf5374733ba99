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
//!   media types. It has no schemas (`components.schemas` is empty).
//! - kubectl then leaves validation to the server, and for a client-side `apply` builds
//!   its strategic merge patch from its own compiled-in types (built-in kinds) or sends a
//!   JSON merge patch (custom resources). `/openapi/v2` is `404`: kubectl's fallbacks to it
//!   end there.

use serde_json::{Map, Value, json};

use crate::discovery::served_at;
use crate::resources::ResourceInfo;
use crate::server::EMULATED_VERSION;
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
        let hash = document(store, &path)
            .map(|d| digest(&d.to_string()))
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
    // A review is only created: it has no patch operation.
    for r in served.into_iter().filter(|r| !r.review) {
        let at = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{prefix}/{}/{{name}}", r.plural)
        };
        paths.insert(at, json!({"patch": patch_operation(r, version)}));
    }
    let (major, minor) = EMULATED_VERSION;
    Ok(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v{major}.{minor}.0+kubekit-fake")},
        "paths": paths,
        "components": {"schemas": {}},
    }))
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
    fn the_index_points_at_each_group_version_document_with_its_hash() {
        let store = Store::new();
        let index = index(&store);
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        let doc = document(&store, "apis/apps/v1").unwrap();
        assert_eq!(
            url,
            format!("/openapi/v3/apis/apps/v1?hash={}", digest(&doc.to_string()))
        );
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
