//! The generator of kubekit-applyconfigurations: reads the OpenAPI v3 documents of the
//! pinned kube-apiserver (`api/openapi-spec/v3/` of the `k8s.io/kubernetes` Go module the
//! control plane is built from, at the version `testenv/go/go.mod` pins) and writes one
//! apply configuration per type a server-side apply can send.
//!
//! # What is generated
//!
//! - **Roots**: every kind the server can patch (an OpenAPI `patch` operation on a path
//!   ending in `{name}`, or on a subresource of one: autoscaling/v1 `Scale` is the kind
//!   of `scale`), with a constructor that sets its `apiVersion`, `kind` and
//!   `metadata.name` (and `metadata.namespace` when its path has `{namespace}`).
//! - **Nested types**: every object type reachable from a root through its properties,
//!   except `ObjectMeta`'s `managedFields` and `selfLink` (written by the server, as
//!   client-go's `ObjectMetaApplyConfiguration` leaves them out).
//! - **Leaves** kept as k8s-openapi's types, as client-go keeps apimachinery's: `Quantity`,
//!   `IntOrString`, `Time`, `MicroTime`, `FieldsV1`, `RawExtension`, and apiextensions'
//!   `JSON` and `JSONSchemaPropsOr*`.
//! - Every field is an `Option` and serialized only when set; lists are `Vec`s, maps
//!   `BTreeMap`s. Each field's docs name its list or map semantics
//!   (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`),
//!   which is how the server merges what two managers apply.
//! - One Cargo feature per API group (`apps`, `core`, …) compiles its modules; a group
//!   whose types name another's turns that one on. `apimachinery`'s meta types are always
//!   compiled.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The module the roots' types come from.
const KUBERNETES: &str = "k8s.io/kubernetes";

/// Types written as k8s-openapi's own (by OpenAPI name), never generated.
const LEAVES: &[&str] = &[
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
];

/// `ObjectMeta` fields that only the server writes.
const SERVER_ONLY: &[(&str, &str)] = &[
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "managedFields",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "selfLink",
    ),
];

/// A kind the server can patch.
#[derive(Debug, Clone)]
pub struct Root {
    /// Its API group (`""` for the core group).
    pub group: String,
    /// Its version.
    pub version: String,
    /// Its kind.
    pub kind: String,
    /// Whether its objects live in a namespace.
    pub namespaced: bool,
}

impl Root {
    /// Its `apiVersion`: `version` for the core group, `group/version` for the others.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// Everything the generator reads.
pub struct Sources {
    /// `k8s.io/kubernetes v1.37.2`.
    pub module: String,
    /// Every schema of every document, by OpenAPI name (the first document's wins).
    pub schemas: BTreeMap<String, Value>,
    /// The kinds the server can patch, by OpenAPI name of their schema.
    pub roots: BTreeMap<String, Root>,
    /// The k8s-openapi path (`api::core::v1::Pod`) of each OpenAPI name that every
    /// Kubernetes version of k8s-openapi has a type for, at that one path: those types'
    /// `Configurable` is their configuration.
    pub k8s_openapi: BTreeMap<String, String>,
}

impl Sources {
    /// Reads the documents of the `k8s.io/kubernetes` version the repository at `repo` pins.
    pub fn read(repo: &Path) -> Result<Self, String> {
        let version = kubekit_protobuf_gen::sources::pinned_version(repo, KUBERNETES)?;
        let dir = kubekit_protobuf_gen::sources::go_module_dir(KUBERNETES, &version)?
            .join("api/openapi-spec/v3");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut documents = Vec::new();
        for file in &files {
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            let doc: Value = serde_json::from_str(&text)
                .map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
            documents.push(doc);
        }
        let mut sources = Self::from_documents(format!("{KUBERNETES} {version}"), &documents)?;
        let (_, versions) = kubekit_protobuf_gen::sources::k8s_openapi_types(repo)?;
        sources.k8s_openapi = in_every_version(&versions);
        Ok(sources)
    }

    /// The sources of already parsed OpenAPI v3 documents.
    pub fn from_documents(module: String, documents: &[Value]) -> Result<Self, String> {
        let mut schemas = BTreeMap::new();
        let mut patchable = Vec::new();
        for doc in documents {
            if let Some(s) = doc
                .pointer("/components/schemas")
                .and_then(Value::as_object)
            {
                for (name, schema) in s {
                    schemas
                        .entry(name.clone())
                        .or_insert_with(|| schema.clone());
                }
            }
            for (path, item) in doc
                .get("paths")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let Some(gvk) = item.pointer("/patch/x-kubernetes-group-version-kind") else {
                    continue;
                };
                // A subresource's kind is its object's (`status`, `resize`) or its own
                // (`scale`: autoscaling/v1 `Scale`), a root either way.
                let action = item.pointer("/patch/x-kubernetes-action");
                let subresource = path
                    .rsplit_once("/{name}/")
                    .is_some_and(|(_, sub)| !sub.contains('/') && !sub.contains('{'));
                if action != Some(&Value::from("patch"))
                    || !(path.ends_with("/{name}") || subresource)
                {
                    continue; // a proxy (`connect`), or a path below a subresource
                }
                let field = |f: &str| gvk.get(f).and_then(Value::as_str).unwrap_or("").to_string();
                patchable.push(Root {
                    group: field("group"),
                    version: field("version"),
                    kind: field("kind"),
                    namespaced: path.contains("/namespaces/{namespace}/"),
                });
            }
        }
        let mut roots = BTreeMap::new();
        for root in patchable {
            let name = schemas
                .iter()
                .find(|(_, s)| has_gvk(s, &root))
                .map(|(n, _)| n.clone())
                .ok_or_else(|| format!("no schema has the kind of {root:?}"))?;
            roots.insert(name, root);
        }
        if roots.is_empty() {
            return Err("the documents name no kind that can be patched".into());
        }
        Ok(Self {
            module,
            schemas,
            roots,
            k8s_openapi: BTreeMap::new(),
        })
    }
}

/// The OpenAPI names (`io.k8s.api.core.v1.Pod`) of the types every version of k8s-openapi
/// has, at the same path, with that path.
fn in_every_version(
    versions: &BTreeMap<String, kubekit_protobuf_gen::openapi::Types>,
) -> BTreeMap<String, String> {
    let mut each = versions.values();
    let Some(first) = each.next() else {
        return BTreeMap::new();
    };
    let rest: Vec<_> = each.collect();
    first
        .iter()
        .filter(|(def, ty)| {
            rest.iter()
                .all(|v| v.get(*def).is_some_and(|t| t.path == ty.path))
        })
        .map(|(def, ty)| {
            // k8s-openapi's definitions write the `-` of apiextensions-apiserver as `_`.
            let name = def.replace("apiextensions_apiserver", "apiextensions-apiserver");
            (name, ty.path.clone())
        })
        .collect()
}

/// Whether `schema` is of `root`'s group, version and kind.
fn has_gvk(schema: &Value, root: &Root) -> bool {
    let gvks = schema
        .get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array);
    gvks.into_iter().flatten().any(|g| {
        let is = |f: &str, v: &str| g.get(f).and_then(Value::as_str) == Some(v);
        is("group", &root.group) && is("version", &root.version) && is("kind", &root.kind)
    })
}

/// What one generation gave.
#[derive(Debug, Default)]
pub struct Output {
    /// `kubekit-applyconfigurations/src/generated.rs`.
    pub code: String,
    /// The `[features]` lines of kubekit-applyconfigurations' manifest, between its markers.
    pub features: String,
    /// The `apply-<group>` features of kubekit's manifest, between its markers.
    pub facade_features: String,
    /// How many types were generated, of which roots.
    pub types: usize,
    /// How many of them are roots.
    pub roots: usize,
}

/// Where the generated code goes, under the repository at `repo`.
pub fn output_path(repo: &Path) -> PathBuf {
    repo.join("kubekit-applyconfigurations/src/generated.rs")
}

/// Where the crate's manifest is, under the repository at `repo`.
pub fn manifest_path(repo: &Path) -> PathBuf {
    repo.join("kubekit-applyconfigurations/Cargo.toml")
}

/// Where kubekit's manifest is (its `apply-<group>` features turn on the crate's), under the
/// repository at `repo`.
pub fn facade_manifest_path(repo: &Path) -> PathBuf {
    repo.join("kubekit/Cargo.toml")
}

/// The line before the generated features in the manifest.
pub const FEATURES_BEGIN: &str = "# Generated by kubekit-applyconfigurations-gen: begin";
/// The line after them.
pub const FEATURES_END: &str = "# Generated by kubekit-applyconfigurations-gen: end";

/// `manifest` with its generated features replaced by `features`.
pub fn with_features(manifest: &str, features: &str) -> Result<String, String> {
    let begin = manifest
        .find(FEATURES_BEGIN)
        .ok_or_else(|| format!("the manifest has no line {FEATURES_BEGIN:?}"))?;
    let end = manifest
        .find(FEATURES_END)
        .ok_or_else(|| format!("the manifest has no line {FEATURES_END:?}"))?;
    let after_begin = begin + FEATURES_BEGIN.len() + 1;
    if end < after_begin {
        return Err("the manifest's generated features end before they begin".into());
    }
    Ok(format!(
        "{}{features}{}",
        &manifest[..after_begin],
        &manifest[end..]
    ))
}

/// A schema's place in Rust: its module path (`api::apps::v1`), its type name and the
/// feature that compiles it (none for apimachinery's).
struct Place {
    module: Vec<String>,
    name: String,
    feature: Option<String>,
}

fn place(openapi_name: &str) -> Result<Place, String> {
    let rest = openapi_name
        .strip_prefix("io.k8s.")
        .ok_or_else(|| format!("{openapi_name}: not a Kubernetes type"))?;
    let mut parts: Vec<String> = rest.split('.').map(|s| s.replace('-', "_")).collect();
    let name = parts
        .pop()
        .ok_or_else(|| format!("{openapi_name}: no type name"))?;
    let feature = feature_of(&parts)
        .ok_or_else(|| format!("{openapi_name}: an API this generator does not know"))?;
    Ok(Place {
        module: parts,
        name,
        feature,
    })
}

/// The OpenAPI name a property refers to, if it refers to a schema.
fn reference(property: &Value) -> Option<&str> {
    let r = property
        .get("$ref")
        .or_else(|| property.pointer("/allOf/0/$ref"))?
        .as_str()?;
    r.strip_prefix("#/components/schemas/")
}

/// The schemas a property's type names (itself, its items, its values).
fn referenced(property: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = property;
    loop {
        if let Some(r) = reference(at) {
            out.push(r);
            return out;
        }
        match at.get("items").or_else(|| at.get("additionalProperties")) {
            Some(inner) => at = inner,
            None => return out,
        }
    }
}

/// The properties of `schema` that an apply configuration of `name` has.
fn properties<'a>(name: &str, schema: &'a Value) -> Vec<(&'a str, &'a Value)> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(p, _)| !SERVER_ONLY.contains(&(name, p.as_str())))
        .map(|(p, v)| (p.as_str(), v))
        .collect()
}

/// Generates the apply configurations of `sources`, formatted by rustfmt.
pub fn render(sources: &Sources) -> Result<Output, String> {
    let leaves: BTreeSet<&str> = LEAVES.iter().copied().collect();
    // Every type reachable from a root.
    let mut types = BTreeSet::new();
    let mut todo: Vec<&str> = sources.roots.keys().map(String::as_str).collect();
    while let Some(name) = todo.pop() {
        if leaves.contains(name) || !types.insert(name) {
            continue;
        }
        let schema = sources
            .schemas
            .get(name)
            .ok_or_else(|| format!("{name} is referred to but has no schema"))?;
        for (_, p) in properties(name, schema) {
            todo.extend(referenced(p));
        }
    }
    let places: BTreeMap<&str, Place> = types
        .iter()
        .chain(leaves.iter())
        .map(|n| place(n).map(|p| (*n, p)))
        .collect::<Result<_, _>>()?;
    let boxed = direct_cycles(sources, &types);

    // Modules, each with its types, and the features' dependencies.
    let mut modules: BTreeMap<Vec<String>, Vec<&str>> = BTreeMap::new();
    let mut needs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for name in &types {
        let here = &places[name];
        modules.entry(here.module.clone()).or_default().push(name);
        if let Some(f) = &here.feature {
            let deps = needs.entry(f.clone()).or_default();
            for (_, p) in properties(name, &sources.schemas[*name]) {
                for r in referenced(p) {
                    if let Some(other) = places.get(r).and_then(|p| p.feature.as_ref())
                        && other != f
                        && !leaves.contains(r)
                    {
                        deps.insert(other.clone());
                    }
                }
            }
        }
    }

    let mut code = String::new();
    writeln!(
        code,
        "// Generated by `cargo run -p kubekit-applyconfigurations-gen` from the OpenAPI v3\n\
         // documents of {}; do not edit.\n",
        sources.module
    )
    .unwrap();
    for leaf in LEAVES {
        let p = &places[leaf];
        writeln!(
            code,
            "impl crate::Configurable for k8s_openapi::{}::{} {{\n    \
             type Configuration = Self;\n}}\n",
            p.module.join("::"),
            p.name
        )
        .unwrap();
    }
    let mut count = Output::default();
    render_tree(&mut code, &modules, &[], &mut |code, module, names| {
        for name in names {
            let root = sources.roots.get(*name);
            render_type(
                code,
                name,
                &sources.schemas[*name],
                root,
                &places,
                &boxed,
                module,
            )?;
            if let Some(path) = sources.k8s_openapi.get(*name) {
                writeln!(
                    code,
                    "impl crate::Configurable for k8s_openapi::{path} {{\n    \
                     type Configuration = {};\n}}\n",
                    places[name].name
                )
                .unwrap();
            }
            count.types += 1;
            count.roots += usize::from(root.is_some());
        }
        Ok(())
    })?;

    let mut features = String::new();
    for (feature, deps) in &needs {
        let deps: Vec<String> = deps.iter().map(|d| format!("{d:?}")).collect();
        writeln!(features, "{feature} = [{}]", deps.join(", ")).unwrap();
    }
    let all: Vec<String> = needs.keys().map(|f| format!("    {f:?},")).collect();
    writeln!(features, "all = [\n{}\n]", all.join("\n")).unwrap();
    let mut facade_features = String::new();
    for feature in needs.keys().map(String::as_str).chain(["all"]) {
        writeln!(
            facade_features,
            "apply-{feature} = [\"kubekit-applyconfigurations/{feature}\"]"
        )
        .unwrap();
    }
    Ok(Output {
        code: kubekit_protobuf_gen::rustfmt(&code)?,
        features,
        facade_features,
        ..count
    })
}

/// What writes one module's types: the code so far, the module's path, its types.
type ModuleBody<'a> = dyn FnMut(&mut String, &[String], &[&str]) -> Result<(), String> + 'a;

/// Writes the module tree of `modules` under `prefix`, calling `body` for each module's
/// types.
fn render_tree(
    code: &mut String,
    modules: &BTreeMap<Vec<String>, Vec<&str>>,
    prefix: &[String],
    body: &mut ModuleBody<'_>,
) -> Result<(), String> {
    if let Some(names) = modules.get(prefix) {
        body(code, prefix, names)?;
    }
    let children: BTreeSet<&String> = modules
        .keys()
        .filter(|m| m.len() > prefix.len() && m.starts_with(prefix))
        .map(|m| &m[prefix.len()])
        .collect();
    for child in children {
        let mut path = prefix.to_vec();
        path.push(child.clone());
        if let Some(f) = feature_of(&path).flatten()
            && path.len() == 2
        {
            writeln!(code, "#[cfg(feature = {f:?})]").unwrap();
        }
        writeln!(code, "/// `{}`.", path.join("::")).unwrap();
        writeln!(code, "pub mod {child} {{").unwrap();
        render_tree(code, modules, &path, body)?;
        writeln!(code, "}}").unwrap();
    }
    Ok(())
}

/// The feature that compiles the module `path` (`api::apps::v1` → `apps`): `Some(None)`
/// for apimachinery's, which is always compiled, `None` for an API this generator does not
/// know.
fn feature_of(path: &[String]) -> Option<Option<String>> {
    match path.first()?.as_str() {
        "api" => Some(path.get(1).cloned()),
        "apiextensions_apiserver" => Some(Some("apiextensions".into())),
        "kube_aggregator" => Some(Some("apiregistration".into())),
        "apimachinery" => Some(None),
        _ => None,
    }
}

/// The types that refer to themselves through plain (not list or map) fields, directly or
/// through others: such a field is boxed.
fn direct_cycles<'a>(
    sources: &'a Sources,
    types: &BTreeSet<&'a str>,
) -> BTreeSet<(&'a str, &'a str)> {
    let direct = |name: &str| -> Vec<&'a str> {
        let (name, schema) = sources.schemas.get_key_value(name).expect("a known type");
        properties(name, schema)
            .into_iter()
            .filter_map(|(_, p)| reference(p))
            .filter(|r| types.contains(r))
            .collect()
    };
    let mut boxed = BTreeSet::new();
    for &from in types {
        for to in direct(from) {
            // Does `to` reach `from` through plain fields?
            let mut seen = BTreeSet::new();
            let mut todo = vec![to];
            while let Some(at) = todo.pop() {
                if at == from {
                    boxed.insert((from, to));
                    break;
                }
                if seen.insert(at) {
                    todo.extend(direct(at));
                }
            }
        }
    }
    boxed
}

/// A Rust identifier for the JSON field `json` (`podIPs` → `pod_ips`, `type` → `type_`,
/// `default` → `default_`).
pub fn field_ident(json: &str) -> String {
    let chars: Vec<char> = json.chars().filter(|c| *c != '$').collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c == '-' || c == '.' {
            out.push('_');
            continue;
        }
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next = chars.get(i + 1).copied();
            // `IPs`: a plural of an acronym stays one word.
            let plural_end =
                next == Some('s') && chars.get(i + 2).is_none_or(|c| c.is_ascii_uppercase());
            let starts_word = prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase()
                    && next.is_some_and(|n| n.is_ascii_lowercase())
                    && !plural_end);
            if starts_word && !out.ends_with('_') {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    if KEYWORDS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "box", "break", "const", "continue", "crate", "do", "dyn", "else",
    "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop",
    "macro", "match", "mod", "move", "mut", "new", "override", "priv", "pub", "ref", "return",
    "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof", "unsafe",
    "unsized", "use", "virtual", "where", "while", "yield", "abstract", "become",
    // Not a keyword, but a builder method of that name would hide `Default::default`,
    // what every configuration starts from (`LimitRangeItem::default()` would name the
    // builder of its `default` field).
    "default",
];

/// What a field holds, as its builder method takes it.
enum Shape {
    /// One value of this type.
    One(String),
    /// One value of this type, boxed in the field (a type that contains itself).
    Boxed(String),
    /// A list of items of this type: the builder appends.
    List(String),
    /// A map from strings to values of this type: the builder adds entries.
    Map(String),
}

impl Shape {
    /// The field's Rust type (without the `Option`).
    fn rust(&self) -> String {
        match self {
            Shape::One(t) => t.clone(),
            Shape::Boxed(t) => format!("Box<{t}>"),
            Shape::List(t) => format!("Vec<{t}>"),
            Shape::Map(t) => format!("std::collections::BTreeMap<String, {t}>"),
        }
    }
}

/// The shape of a property's field; `boxed` when its type contains the field's own type.
fn shape(property: &Value, places: &BTreeMap<&str, Place>, boxed: bool) -> Result<Shape, String> {
    let ty = property.get("type").and_then(Value::as_str);
    Ok(match (reference(property), ty) {
        (Some(_), _) if boxed => Shape::Boxed(rust_type(property, places)?),
        (None, Some("array")) => {
            let items = property.get("items").ok_or("an array without items")?;
            Shape::List(rust_type(items, places)?)
        }
        (None, Some("object")) if property.get("additionalProperties").is_some() => {
            Shape::Map(rust_type(&property["additionalProperties"], places)?)
        }
        _ => Shape::One(rust_type(property, places)?),
    })
}

/// The Rust type of a property (without the `Option`).
fn rust_type(property: &Value, places: &BTreeMap<&str, Place>) -> Result<String, String> {
    if let Some(r) = reference(property) {
        let p = places.get(r).ok_or_else(|| format!("{r}: no place"))?;
        let root = if LEAVES.contains(&r) {
            "k8s_openapi"
        } else {
            "crate"
        };
        return Ok(format!("{root}::{}::{}", p.module.join("::"), p.name));
    }
    let ty = property.get("type").and_then(Value::as_str);
    let format = property.get("format").and_then(Value::as_str);
    Ok(match (ty, format) {
        (Some("string"), Some("byte")) => "k8s_openapi::ByteString".into(),
        (Some("string"), _) => "String".into(),
        (Some("boolean"), _) => "bool".into(),
        (Some("integer"), Some("int32")) => "i32".into(),
        (Some("integer"), _) => "i64".into(),
        (Some("number"), _) => "f64".into(),
        (Some("array"), _) => {
            let items = property.get("items").ok_or("an array without items")?;
            format!("Vec<{}>", rust_type(items, places)?)
        }
        (Some("object"), _) => match property.get("additionalProperties") {
            Some(values) => format!(
                "std::collections::BTreeMap<String, {}>",
                rust_type(values, places)?
            ),
            None => "serde_json::Value".into(),
        },
        _ => {
            return Err(format!(
                "a property of no type this generator knows: {property}"
            ));
        }
    })
}

/// `text` as doc comment lines at `indent`, each line trimmed (so no description becomes a
/// code block).
fn doc(code: &mut String, indent: &str, text: &str) {
    for line in text.lines() {
        let line = line.trim().replace('\t', "    ");
        if line.is_empty() {
            writeln!(code, "{indent}///").unwrap();
        } else {
            writeln!(code, "{indent}/// {line}").unwrap();
        }
    }
}

/// The merge semantics of a property, as the server applies them, for its docs.
fn semantics(property: &Value) -> Option<String> {
    let list = property
        .get("x-kubernetes-list-type")
        .and_then(Value::as_str);
    let keys: Vec<&str> = property
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let map = property
        .get("x-kubernetes-map-type")
        .and_then(Value::as_str);
    match (list, map) {
        (Some("map"), _) => Some(format!(
            "A list-map keyed by `{}`: applied items merge with others' by key.",
            keys.join("`, `")
        )),
        (Some("set"), _) => Some("A set: applied items merge with others' by value.".into()),
        (Some("atomic"), _) => Some("Atomic: the applied list replaces the whole list.".into()),
        (_, Some("atomic")) => Some("Atomic: the applied map replaces the whole map.".into()),
        (_, Some("granular")) => Some("Granular: applied entries merge with others'.".into()),
        _ => None,
    }
}

/// One apply configuration: its struct, builder methods and, for a root, its constructor
/// and [`ApplyConfiguration`] impl.
#[allow(clippy::too_many_arguments)]
fn render_type(
    code: &mut String,
    name: &str,
    schema: &Value,
    root: Option<&Root>,
    places: &BTreeMap<&str, Place>,
    boxed: &BTreeSet<(&str, &str)>,
    module: &[String],
) -> Result<(), String> {
    let ty = &places[name].name;
    let description = schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    writeln!(
        code,
        "/// The apply configuration of `{}::{ty}`.",
        module.join("::")
    )
    .unwrap();
    if !description.is_empty() {
        writeln!(code, "///").unwrap();
        doc(code, "", description);
    }
    writeln!(
        code,
        "#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]"
    )
    .unwrap();
    writeln!(code, "pub struct {ty} {{").unwrap();
    let mut fields = Vec::new();
    let mut idents = BTreeSet::new();
    for (json, p) in properties(name, schema) {
        let ident = field_ident(json);
        if !idents.insert(ident.clone()) {
            return Err(format!("{name}: two fields are `{ident}`"));
        }
        let is_boxed = reference(p).is_some_and(|r| boxed.contains(&(name, r)));
        let field = shape(p, places, is_boxed)?;
        let text = p.get("description").and_then(Value::as_str).unwrap_or("");
        if text.is_empty() {
            writeln!(code, "    /// `{json}`.").unwrap();
        } else {
            doc(code, "    ", text);
        }
        if let Some(s) = semantics(p) {
            writeln!(code, "    ///\n    /// {s}").unwrap();
        }
        writeln!(
            code,
            "    #[serde(rename = {json:?}, skip_serializing_if = \"Option::is_none\")]"
        )
        .unwrap();
        writeln!(code, "    pub {ident}: Option<{}>,", field.rust()).unwrap();
        fields.push((json, ident, field));
    }
    writeln!(code, "}}\n").unwrap();

    // Deserialized through a JSON object, field by field: a fraction of the code serde's
    // derive writes for each type, for what is no hot path (reading a configuration back).
    let takes: String = fields
        .iter()
        .map(|(json, ident, _)| format!("            {ident}: fields.take({json:?})?,\n"))
        .collect();
    let fields_binding = if fields.is_empty() { "_" } else { "mut fields" };
    writeln!(
        code,
        "impl<'de> serde::Deserialize<'de> for {ty} {{\n    \
         fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {{\n        \
         let {fields_binding} = crate::de::Fields::deserialize(deserializer)?;\n        \
         Ok(Self {{\n{takes}        }})\n    }}\n}}\n"
    )
    .unwrap();

    writeln!(code, "impl {ty} {{").unwrap();
    if let Some(root) = root {
        let api_version = root.api_version();
        let meta = "crate::apimachinery::pkg::apis::meta::v1::ObjectMeta";
        let (what, params, set) = if root.namespaced {
            (
                "`name` in `namespace`: its\n    /// `apiVersion`, `kind`, name and namespace set, nothing else.",
                "name: impl Into<String>, namespace: impl Into<String>",
                ".name(name).namespace(namespace)",
            )
        } else {
            (
                "`name`: its `apiVersion`, `kind`\n    /// and name set, nothing else.",
                "name: impl Into<String>",
                ".name(name)",
            )
        };
        writeln!(
            code,
            "    /// The apply configuration of the {kind} {what}\n    \
             pub fn new({params}) -> Self {{\n        \
             Self {{\n            api_version: Some({api_version:?}.into()),\n            \
             kind: Some({kind:?}.into()),\n            \
             metadata: Some({meta}::default(){set}),\n            \
             ..Self::default()\n        }}\n    }}\n",
            kind = root.kind
        )
        .unwrap();
    }
    if root.is_some() {
        for map in ["labels", "annotations"] {
            writeln!(
                code,
                "    /// Adds `entries` to `metadata.{map}`.\n    \
                 #[must_use]\n    \
                 pub fn {map}<K: Into<String>>(mut self, entries: impl IntoIterator<Item = (K, String)>) -> Self {{\n        \
                 let meta = self.metadata.take().unwrap_or_default();\n        \
                 self.metadata = Some(meta.{map}(entries));\n        self\n    }}"
            )
            .unwrap();
        }
    }
    for (json, ident, field) in &fields {
        writeln!(code, "    /// Sets `{json}`.").unwrap();
        writeln!(code, "    #[must_use]").unwrap();
        let method = match field {
            Shape::List(item) => format!(
                "    pub fn {ident}(mut self, items: impl IntoIterator<Item = {item}>) -> Self {{\n        \
                 self.{ident}.get_or_insert_with(Vec::new).extend(items);\n        self\n    }}"
            ),
            Shape::Map(value) => format!(
                "    pub fn {ident}<K: Into<String>>(mut self, entries: impl IntoIterator<Item = (K, {value})>) -> Self {{\n        \
                 self.{ident}\n            .get_or_insert_with(Default::default)\n            \
                 .extend(entries.into_iter().map(|(k, v)| (k.into(), v)));\n        self\n    }}"
            ),
            Shape::One(t) if t == "String" => format!(
                "    pub fn {ident}(mut self, value: impl Into<String>) -> Self {{\n        \
                 self.{ident} = Some(value.into());\n        self\n    }}"
            ),
            Shape::Boxed(inner) => format!(
                "    pub fn {ident}(mut self, value: {inner}) -> Self {{\n        \
                 self.{ident} = Some(Box::new(value));\n        self\n    }}"
            ),
            Shape::One(t) => format!(
                "    pub fn {ident}(mut self, value: {t}) -> Self {{\n        \
                 self.{ident} = Some(value);\n        self\n    }}"
            ),
        };
        writeln!(code, "{method}").unwrap();
    }
    writeln!(code, "}}\n").unwrap();

    if let Some(root) = root {
        let api_version = root.api_version();
        writeln!(
            code,
            "impl crate::ApplyConfiguration for {ty} {{\n    \
             const API_VERSION: &'static str = {api_version:?};\n    \
             const KIND: &'static str = {kind:?};\n    \
             const NAMESPACED: bool = {namespaced};\n\n    \
             fn metadata(&self) -> Option<&crate::apimachinery::pkg::apis::meta::v1::ObjectMeta> {{\n        \
             self.metadata.as_ref()\n    }}\n\n    \
             fn metadata_mut(&mut self) -> &mut crate::apimachinery::pkg::apis::meta::v1::ObjectMeta {{\n        \
             self.metadata.get_or_insert_with(Default::default)\n    }}\n}}\n",
            kind = root.kind,
            namespaced = root.namespaced
        )
        .unwrap();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_become_the_snake_case_rust_names_of_k8s_openapi() {
        for (json, rust) in [
            ("apiVersion", "api_version"),
            ("podIPs", "pod_ips"),
            ("hostIPC", "host_ipc"),
            ("podIP", "pod_ip"),
            ("type", "type_"),
            ("default", "default_"),
            ("$ref", "ref_"),
            ("x-kubernetes-list-type", "x_kubernetes_list_type"),
            (
                "terminationGracePeriodSeconds",
                "termination_grace_period_seconds",
            ),
            ("URL", "url"),
            (
                "targetCPUUtilizationPercentage",
                "target_cpu_utilization_percentage",
            ),
        ] {
            assert_eq!(field_ident(json), rust, "{json}");
        }
    }

    #[test]
    fn the_generated_features_replace_what_stands_between_the_markers() {
        let manifest = format!("[features]\n{FEATURES_BEGIN}\nold = []\n{FEATURES_END}\n");
        let updated = with_features(&manifest, "apps = [\"core\"]\n").unwrap();
        assert_eq!(
            updated,
            format!("[features]\n{FEATURES_BEGIN}\napps = [\"core\"]\n{FEATURES_END}\n")
        );
        assert!(with_features("[features]\n", "").is_err());
    }
}
