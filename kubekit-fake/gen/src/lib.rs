//! The generator of kubekit-fake's discovery (`kubekit-fake/src/discovery.json`, see
//! [`generate_discovery`]), and of `kubekit-fake/src/apply_schema.json`: what server-side
//! apply needs to know of the built-in types kubekit-fake serves (the [`stored_kinds`] of
//! that discovery and [`EXTRA_ROOTS`]), read from the OpenAPI v3 documents of
//! the pinned Kubernetes release (`api/openapi-spec/v3` of `k8s.io/kubernetes` at the
//! version `testenv/go/go.mod` pins, fetched through the Go module proxy): for every type
//! reachable from a served kind, its fields, and for each field whether it is a scalar, a
//! struct, a map or a list, with the list's type (`atomic`, `set`, `map` and its keys) and
//! whether a struct or map is atomic (`x-kubernetes-map-type`).
//!
//! The output is JSON, `{"pinned": …, "roots": {"<apiVersion>/<kind>": type},
//! "types": {name: type}}`, where a type is `"scalar"`, `"untyped"` (an object of any
//! shape: maps granular, lists atomic), the name of another type, `{"struct": {field:
//! type}, "atomic": bool, "zero": {field: "struct" | null | {"value": v}}}` (`zero`: the
//! fields the Go type's zero value has, as the API server's field manager compares a
//! created object with it: a struct that is no pointer, `{}` by default in the document,
//! and its own zero; a scalar whose default is Go's zero, `""`, `0` or `false`, that
//! value; another required field, null), `{"map": type, "atomic": bool}` or `{"list": type, "type":
//! "atomic"|"set"|"map", "keys": [...], "defaults": {key: value}}` (the defaults of key
//! fields, which an item may omit).
//!
//! It also writes `kubekit-fake/src/openapi_schemas.json`, `{"pinned": …, "documents":
//! {"<group-version path>": {name: schema}}}`: the schemas of the served kinds, and of
//! every type they refer to, descriptions included, as the pinned release's kube-apiserver
//! serves them at `/openapi/v3/<group-version path>` (`api/v1`, `apis/<group>/<version>`)
//! — read from testenv's real control plane, since the served documents carry the enums
//! (and their descriptions) that `api/openapi-spec/v3` leaves out. That is what
//! kubekit-fake's OpenAPI v3 documents carry for `kubectl explain`. Under
//! `"customResources"` it holds the schemas the server puts in a custom resource's
//! document besides the resource's own (`ObjectMeta`, `ListMeta`, `Status`, ...), and
//! the resource's and its list's (`kind`, `list`) for a CRD whose schema is an empty
//! object, read from the document of a CRD it creates for that.
//!
//! `cargo run -p kubekit-fake-gen` writes the files; its test fails when a file differs
//! from what the pinned documents give.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// Kinds kubekit-fake serves that [`stored_kinds`] does not give, by the OpenAPI document
/// that defines them: document, apiVersion, kind.
#[rustfmt::skip]
pub const EXTRA_ROOTS: &[(&str, &str, &str)] = &[
    ("apis__authorization.k8s.io__v1_openapi.json", "authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    // Defined where the subresource is served.
    ("apis__apps__v1_openapi.json", "autoscaling/v1", "Scale"),
];

/// The verbs with which a built-in resource is served with storage by kubekit-fake (its
/// `resources::builtin` keeps the same rule).
const STORED_VERBS: [&str; 7] = [
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// The kinds kubekit-fake stores, as (apiVersion, kind), from the generated discovery
/// ([`generate_discovery`]): every resource whose discovery lists all of `STORED_VERBS`
/// at the first version of its group that lists it.
pub fn stored_kinds(discovery: &Value) -> Vec<(String, String)> {
    let mut lists = vec![("", "v1".to_string(), &discovery["resources"]["api/v1"])];
    for group in discovery["groups"]["groups"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = group["name"].as_str().unwrap_or_default();
        for version in group["versions"].as_array().into_iter().flatten() {
            let gv = version["groupVersion"].as_str().unwrap_or_default();
            lists.push((
                name,
                gv.to_string(),
                &discovery["resources"][format!("apis/{gv}")],
            ));
        }
    }
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut kinds = Vec::new();
    for (group, api_version, list) in lists {
        for entry in list["resources"].as_array().into_iter().flatten() {
            let plural = entry["name"].as_str().unwrap_or_default();
            let verbs = entry["verbs"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            let stored = STORED_VERBS
                .iter()
                .all(|v| verbs.iter().any(|have| have == v));
            if plural.contains('/') || !stored || seen.contains(&(group, plural)) {
                continue;
            }
            seen.push((group, plural));
            let kind = entry["kind"].as_str().unwrap_or_default();
            kinds.push((api_version.clone(), kind.to_string()));
        }
    }
    kinds
}

/// The kinds kubekit-fake serves whose objects can be applied, by the OpenAPI document
/// that defines them (document, apiVersion, kind): [`stored_kinds`] of the repository's
/// generated discovery, and [`EXTRA_ROOTS`].
fn roots(repo: &Path) -> Result<Vec<(String, String, String)>, String> {
    let path = discovery_output_path(repo);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let discovery: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let document = |api_version: &str| match api_version.rsplit_once('/') {
        Some((group, version)) => format!("apis__{group}__{version}_openapi.json"),
        None => format!("api__{api_version}_openapi.json"),
    };
    let mut roots: Vec<(String, String, String)> = stored_kinds(&discovery)
        .into_iter()
        .map(|(api_version, kind)| (document(&api_version), api_version, kind))
        .collect();
    roots.extend(EXTRA_ROOTS.iter().map(|(file, api_version, kind)| {
        (file.to_string(), api_version.to_string(), kind.to_string())
    }));
    Ok(roots)
}

/// The type the field manager holds atomic whatever its schema says (kube-openapi's
/// `schemaconv` hard-codes it).
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

/// The ObjectMeta type's name: custom resources' metadata.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The generated apply schema's path in the repository.
pub fn output_path(repo: &Path) -> PathBuf {
    repo.join("kubekit-fake/src/apply_schema.json")
}

/// The generated OpenAPI schemas' path in the repository.
pub fn openapi_output_path(repo: &Path) -> PathBuf {
    repo.join("kubekit-fake/src/openapi_schemas.json")
}

/// The generated discovery's path in the repository.
pub fn discovery_output_path(repo: &Path) -> PathBuf {
    repo.join("kubekit-fake/src/discovery.json")
}

/// The discovery file, `{"pinned": …, "version": …, "groups": …, "resources": {"<path>":
/// …}}`, as testenv's real control plane (started, see the crate's docs) serves it:
/// `/version`, the `APIGroupList` of `/apis`, and the `APIResourceList` of `/api/v1` and
/// of every `/apis/<group>/<version>` it lists, by path (`api/v1`, `apis/apps/v1`). The
/// build's own fields of `/version` (`gitCommit`, `gitTreeState`, `buildDate`,
/// `goVersion`, `compiler`, `platform`) depend on the machine that built the binaries,
/// not on the release: they are left out. kubekit-fake serves the rest as it is, and its
/// built-in resources are the ones these lists describe.
pub fn generate_discovery(repo: &Path) -> Result<String, String> {
    let module = "k8s.io/kubernetes";
    let pinned = kubekit_protobuf_gen::sources::pinned_version(repo, module)?;
    let raw = |path: &str| -> Result<Value, String> {
        let mut kubectl = testenv::control_plane().kubectl();
        kubectl.args(["get", "--raw", path]);
        kubekit_protobuf_gen::sources::json_output(
            &mut kubectl,
            &format!("kubectl get --raw {path}"),
        )
    };
    let mut version = raw("/version")?;
    if let Some(fields) = version.as_object_mut() {
        for build in [
            "gitCommit",
            "gitTreeState",
            "buildDate",
            "goVersion",
            "compiler",
            "platform",
        ] {
            fields.remove(build);
        }
    }
    let groups = raw("/apis")?;
    let mut resources = Map::new();
    resources.insert("api/v1".into(), raw("/api/v1")?);
    for group in groups["groups"].as_array().into_iter().flatten() {
        for version in group["versions"].as_array().into_iter().flatten() {
            let gv = version["groupVersion"]
                .as_str()
                .ok_or("/apis: a version without groupVersion")?;
            // The probe CRD of `generate_openapi` is no built-in group.
            if gv.starts_with(PROBE_GROUP) {
                continue;
            }
            resources.insert(format!("apis/{gv}"), raw(&format!("/apis/{gv}"))?);
        }
    }
    let mut groups = groups;
    if let Some(list) = groups["groups"].as_array_mut() {
        list.retain(|g| g["name"].as_str() != Some(PROBE_GROUP));
    }
    let out = json!({"pinned": format!("{module} {pinned}"), "version": version,
        "groups": groups, "resources": resources});
    serde_json::to_string_pretty(&out)
        .map(|s| s + "\n")
        .map_err(|e| e.to_string())
}

/// One root of [`roots`] found in its document: the document's file, its schemas, and
/// the name of the root's schema.
struct Root {
    file: String,
    api_version: String,
    kind: String,
    schemas: std::rc::Rc<Map<String, Value>>,
    name: String,
}

/// The pinned release (`k8s.io/kubernetes vX.Y.Z`) and the roots, read from its
/// documents (each document read once).
fn read_roots(repo: &Path) -> Result<(String, Vec<Root>), String> {
    let module = "k8s.io/kubernetes";
    let version = kubekit_protobuf_gen::sources::pinned_version(repo, module)?;
    let dir =
        kubekit_protobuf_gen::sources::go_module_dir(module, &version)?.join("api/openapi-spec/v3");
    let mut documents: BTreeMap<String, std::rc::Rc<Map<String, Value>>> = BTreeMap::new();
    let mut found = Vec::new();
    for (file, api_version, kind) in roots(repo)? {
        let path = dir.join(&file);
        let schemas = match documents.get(&file) {
            Some(s) => s.clone(),
            None => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let doc: Value =
                    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                let schemas = doc["components"]["schemas"]
                    .as_object()
                    .cloned()
                    .ok_or_else(|| format!("{}: no components.schemas", path.display()))?;
                let schemas = std::rc::Rc::new(schemas);
                documents.insert(file.clone(), schemas.clone());
                schemas
            }
        };
        // A kind's schema names its kind; `Scale`, a subresource's type, names none.
        let (group, _) = api_version.rsplit_once('/').unwrap_or_default();
        let name = schemas
            .iter()
            .find(|(name, s)| {
                is_kind(s, &api_version, &kind) || name.ends_with(&format!("{group}.v1.{kind}"))
            })
            .map(|(name, _)| name.clone())
            .ok_or_else(|| format!("{}: no schema of {api_version} {kind}", path.display()))?;
        found.push(Root {
            file,
            api_version,
            kind,
            schemas,
            name,
        });
    }
    let roots = found;
    Ok((format!("{module} {version}"), roots))
}

/// The OpenAPI schemas file of the roots of the repository at `repo`, as the real
/// control plane serves them (it is started, see the crate's docs): for each group-version
/// document, the schemas of its roots and of every schema they refer to.
pub fn generate_openapi(repo: &Path) -> Result<String, String> {
    let (pinned, roots) = read_roots(repo)?;
    let mut served: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut documents: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for root in &roots {
        // `api__v1_openapi.json` is served at `api/v1`.
        let path = root
            .file
            .trim_end_matches("_openapi.json")
            .replace("__", "/");
        if !served.contains_key(&path) {
            served.insert(path.clone(), served_schemas(&path)?);
        }
        let schemas = &served[&path];
        let kept = documents.entry(path.clone()).or_default();
        each_reachable(vec![root.name.clone()], |name, pending| {
            let schema = schemas
                .get(name)
                .ok_or_else(|| format!("/openapi/v3/{path}: no schema named {name}"))?;
            collect_references(schema, pending);
            kept.insert(name.to_string(), schema.clone());
            Ok(())
        })?;
    }
    let out = json!({"pinned": pinned, "documents": documents,
        "customResources": custom_resource_schemas()?});
    serde_json::to_string_pretty(&out)
        .map(|s| s + "\n")
        .map_err(|e| e.to_string())
}

/// The group of the CRD whose document shows what a custom resource's document holds.
const PROBE_GROUP: &str = "kubekit-fake-gen.example.com";

/// The schemas the real control plane puts in a custom resource's group-version document
/// besides the resource's own (`ObjectMeta`, `ListMeta`, `Status`, ...), and as `kind`
/// and `list` the resource's own of a CRD whose schema is `{"type": "object"}`: read from
/// the document of a CRD created for it.
fn custom_resource_schemas() -> Result<Map<String, Value>, String> {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("probes.{PROBE_GROUP}")},
        "spec": {"group": PROBE_GROUP, "scope": "Namespaced",
            "names": {"plural": "probes", "singular": "probe", "kind": "Probe"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]},
    });
    let file = std::env::temp_dir().join(format!("kubekit-fake-gen-{}.json", std::process::id()));
    std::fs::write(&file, crd.to_string()).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut apply = testenv::control_plane().kubectl();
    apply.args(["apply", "-o", "json", "-f"]).arg(&file);
    let applied =
        kubekit_protobuf_gen::sources::json_output(&mut apply, "kubectl apply the probe CRD");
    let _ = std::fs::remove_file(&file);
    applied?;
    // The CRD's document is published a moment after it is established.
    let own_prefix = "com.example.kubekit-fake-gen.";
    for _ in 0..120 {
        if let Ok(schemas) = served_schemas(&format!("apis/{PROBE_GROUP}/v1"))
            && schemas.keys().any(|n| n.starts_with(own_prefix))
        {
            // The probe's own, as templates: `kind` and `list`.
            return Ok(schemas
                .into_iter()
                .map(|(name, schema)| match name.strip_prefix(own_prefix) {
                    Some("v1.Probe") => ("kind".to_string(), schema),
                    Some("v1.ProbeList") => ("list".to_string(), schema),
                    _ => (name, schema),
                })
                .collect());
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    Err(format!(
        "the probe CRD's document was not published at /openapi/v3/apis/{PROBE_GROUP}/v1"
    ))
}

/// The schemas of the document the real control plane serves at `/openapi/v3/<path>`.
fn served_schemas(path: &str) -> Result<Map<String, Value>, String> {
    let url = format!("/openapi/v3/{path}");
    let mut kubectl = testenv::control_plane().kubectl();
    kubectl.args(["get", "--raw", &url]);
    let doc = kubekit_protobuf_gen::sources::json_output(
        &mut kubectl,
        &format!("kubectl get --raw {url}"),
    )?;
    doc["components"]["schemas"]
        .as_object()
        .cloned()
        .ok_or_else(|| format!("{url}: no components.schemas"))
}

/// Visits each name reachable from `start` once, last found first: `visit` handles a name
/// and pushes the names it leads to.
fn each_reachable(
    start: Vec<String>,
    mut visit: impl FnMut(&str, &mut Vec<String>) -> Result<(), String>,
) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut pending = start;
    while let Some(name) = pending.pop() {
        if seen.insert(name.clone()) {
            visit(&name, &mut pending)?;
        }
    }
    Ok(())
}

/// The names of the schemas `schema` refers to (`#/components/schemas/<name>`), anywhere
/// in it, pushed on `out`.
fn collect_references(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            if let Some(name) = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
            {
                out.push(name.to_string());
            }
            m.values().for_each(|v| collect_references(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_references(v, out)),
        _ => {}
    }
}

/// The apply schema file from the pinned OpenAPI documents of the repository at `repo`.
pub fn generate(repo: &Path) -> Result<String, String> {
    let (pinned, found) = read_roots(repo)?;
    let mut definitions = Map::new();
    let mut roots = Vec::new();
    for root in &found {
        roots.push((
            format!("{}/{}", root.api_version, root.kind),
            root.name.clone(),
        ));
        for (name, schema) in root.schemas.iter() {
            definitions.entry(name.clone()).or_insert(schema.clone());
        }
    }
    let mut types = BTreeMap::new();
    let mut start: Vec<String> = roots.iter().map(|(_, r)| r.clone()).collect();
    start.push(OBJECT_META.to_string());
    each_reachable(start, |name, pending| {
        let schema = definitions
            .get(name)
            .ok_or_else(|| format!("no schema named {name}"))?;
        let ty = convert(schema, &definitions, pending)?;
        types.insert(name.to_string(), ty);
        Ok(())
    })?;
    // Named types that are scalars or untyped are written in place, not by name.
    let out = json!({
        "pinned": pinned,
        "roots": roots.into_iter().map(|(k, v)| (k, Value::String(v))).collect::<Map<_, _>>(),
        "types": types.into_iter().filter(|(_, t)| !t.is_string()).collect::<Map<_, _>>(),
    });
    serde_json::to_string_pretty(&out)
        .map(|s| s + "\n")
        .map_err(|e| e.to_string())
}

fn is_kind(schema: &Value, api_version: &str, kind: &str) -> bool {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    schema["x-kubernetes-group-version-kind"]
        .as_array()
        .is_some_and(|gvks| {
            gvks.iter()
                .any(|g| g["group"] == group && g["version"] == version && g["kind"] == kind)
        })
}

/// The name a schema refers to (`$ref`, or a single `allOf` of one).
fn reference(schema: &Value) -> Option<&str> {
    let r = schema["$ref"]
        .as_str()
        .or_else(|| match schema["allOf"].as_array()?.as_slice() {
            [one] => one["$ref"].as_str(),
            _ => None,
        })?;
    r.rsplit('/').next()
}

/// The type of `schema`; named types it refers to are queued on `pending`, and referred to
/// by name unless they are scalars or untyped.
fn convert(
    schema: &Value,
    definitions: &Map<String, Value>,
    pending: &mut Vec<String>,
) -> Result<Value, String> {
    if let Some(name) = reference(schema) {
        // The field manager holds a RawExtension (a ControllerRevision's `data`) atomic,
        // whatever it holds: one leaf, as a scalar.
        if name == RAW_EXTENSION {
            return Ok(json!("scalar"));
        }
        let target = definitions
            .get(name)
            .ok_or_else(|| format!("a reference to {name}, which no document defines"))?;
        return Ok(match shape(target) {
            Shape::Struct => {
                pending.push(name.to_string());
                json!(name)
            }
            Shape::Scalar => json!("scalar"),
            _ => convert(target, definitions, pending)?,
        });
    }
    let atomic = schema["x-kubernetes-map-type"] == "atomic";
    Ok(match shape(schema) {
        Shape::Scalar => json!("scalar"),
        Shape::Untyped => json!("untyped"),
        Shape::List => {
            let element = convert(&schema["items"], definitions, pending)?;
            let list_type = schema["x-kubernetes-list-type"]
                .as_str()
                .unwrap_or("atomic");
            let keys = schema["x-kubernetes-list-map-keys"].clone();
            let mut list = json!({"list": element, "type": list_type});
            if let Some(keys) = keys.as_array() {
                // A key field the schema defaults need not be sent: apply keys the item
                // by the default (`protocol: TCP` of a Service port).
                let item = reference(&schema["items"]).and_then(|n| definitions.get(n));
                let defaults: Map<String, Value> = keys
                    .iter()
                    .filter_map(Value::as_str)
                    .filter_map(|k| {
                        let d = item?["properties"][k].get("default")?;
                        Some((k.to_string(), d.clone()))
                    })
                    .collect();
                list["keys"] = json!(keys);
                if !defaults.is_empty() {
                    list["defaults"] = Value::Object(defaults);
                }
            }
            list
        }
        Shape::Map => {
            let element = convert(&schema["additionalProperties"], definitions, pending)?;
            json!({"map": element, "atomic": atomic})
        }
        Shape::Struct => {
            let mut fields = Map::new();
            let mut zero = Map::new();
            let required = schema["required"].as_array();
            if let Some(props) = schema["properties"].as_object() {
                for (name, prop) in props {
                    fields.insert(name.clone(), convert(prop, definitions, pending)?);
                    let default = &prop["default"];
                    let go_zero = [json!(""), json!(0), json!(false)];
                    if go_zero.contains(default) {
                        zero.insert(name.clone(), json!({"value": default}));
                    } else if default.as_object().is_some_and(Map::is_empty) {
                        zero.insert(name.clone(), json!("struct"));
                    } else if required.is_some_and(|r| r.iter().any(|f| f == name)) {
                        zero.insert(name.clone(), Value::Null);
                    }
                }
            }
            let mut t = json!({"struct": fields, "atomic": atomic});
            if !zero.is_empty() {
                t["zero"] = Value::Object(zero);
            }
            t
        }
    })
}

/// What a schema describes.
enum Shape {
    Scalar,
    Untyped,
    List,
    Map,
    Struct,
}

fn shape(schema: &Value) -> Shape {
    match schema["type"].as_str() {
        Some("array") => Shape::List,
        Some("object") if schema["properties"].is_object() => Shape::Struct,
        Some("object") if schema["additionalProperties"].is_object() => Shape::Map,
        Some("object") => Shape::Untyped,
        None if schema["properties"].is_object() => Shape::Struct,
        None if schema.get("x-kubernetes-preserve-unknown-fields").is_some() => Shape::Untyped,
        _ => Shape::Scalar,
    }
}
