//! The resources the fake serves: the built-in ones of the pinned release's discovery
//! (generated into `discovery.json` by `kubekit-fake-gen`), and the custom resources of
//! every `CustomResourceDefinition` created through it.
//!
//! # Contract
//!
//! - A resource is stored under its group and plural name, whatever the version it is
//!   reached through: the versions of one CRD share their objects, unconverted (the fake
//!   rewrites `apiVersion` only). `events` (core) and `events.events.k8s.io` share one
//!   store, as on the real server (see `events`).
//! - A CRD's resources are served from the moment the CRD is created (the real server
//!   takes a moment to establish them) and stop being served when it is deleted; its
//!   objects are deleted with it.

use std::sync::LazyLock;

use serde_json::{Value, json};

/// What the fake knows about one served resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group; empty for the core group.
    pub group: String,
    /// Served versions; the first is the storage version.
    pub versions: Vec<String>,
    /// Kind, e.g. `ConfigMap`.
    pub kind: String,
    /// Lowercase plural, e.g. `configmaps`.
    pub plural: String,
    /// Lowercase singular, e.g. `configmap`.
    pub singular: String,
    /// Short names kubectl accepts, e.g. `cm`.
    pub short_names: Vec<String>,
    /// Categories the resource belongs to, e.g. `all` (`kubectl get all`).
    pub categories: Vec<String>,
    /// The verbs discovery lists, in its order.
    pub verbs: Vec<String>,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Whether the type has a `status` subresource (status ignored on the main resource,
    /// everything but status ignored on `/status`).
    pub status: bool,
    /// Whether `metadata.generation` is kept (1 on create, bumped when anything other than
    /// metadata and status changes).
    pub generation: bool,
    /// Whether a delete answers with the deleted object (else with a `Success` Status).
    pub returns_deleted_object: bool,
    /// Whether this is a built-in type (list items carry no `kind`/`apiVersion`, as in the
    /// real server's typed lists) rather than a custom resource.
    pub builtin: bool,
    /// Where the `scale` subresource reads and writes, if the type has one.
    pub scale: Option<ScalePaths>,
    /// Whether this is a review (`SelfSubjectAccessReview`, `SelfSubjectRulesReview`):
    /// only created, never stored, answered with its status.
    pub review: bool,
    /// A custom resource's type for server-side apply, from its CRD's storage version's
    /// schema (built-in types have theirs generated).
    pub schema: Option<std::sync::Arc<Value>>,
    /// A custom resource's structural schema (`openAPIV3Schema` of the CRD's storage
    /// version), which prunes, defaults and validates its objects.
    pub validation: Option<std::sync::Arc<Value>>,
}

/// Where a `scale` subresource reads and writes: JSON pointers into the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// The desired replicas (`/spec/replicas`), read and written.
    pub spec_replicas: String,
    /// The observed replicas (`/status/replicas`).
    pub status_replicas: String,
    /// Where the label selector is.
    pub selector: ScaleSelector,
}

/// Where a `scale` subresource finds its label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScaleSelector {
    /// A `metav1.LabelSelector` (built-in types: `/spec/selector`), printed as a string.
    LabelSelector(String),
    /// A string (a custom resource's `labelSelectorPath`).
    Text(String),
    /// None.
    None,
}

impl ScalePaths {
    /// The scale of a Deployment, a ReplicaSet or a StatefulSet.
    fn of_workloads() -> Self {
        Self {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            selector: ScaleSelector::LabelSelector("/spec/selector".into()),
        }
    }

    /// The scale a CRD version declares (`subresources.scale`, with JSON paths such as
    /// `.spec.replicas`).
    fn of_crd(scale: &Value) -> Result<Self, String> {
        let path = |field: &str| -> Result<Option<String>, String> {
            match scale.get(field).and_then(Value::as_str) {
                None => Ok(None),
                Some(p) if p.starts_with('.') && p.len() > 1 => Ok(Some(p.replace('.', "/"))),
                Some(p) => Err(format!(
                    "spec.versions[].subresources.scale.{field}: Invalid value: \"{p}\": should be a json path under .spec or .status"
                )),
            }
        };
        let required = |field: &str| {
            path(field)?.ok_or_else(|| {
                format!("spec.versions[].subresources.scale.{field}: Required value")
            })
        };
        Ok(Self {
            spec_replicas: required("specReplicasPath")?,
            status_replicas: required("statusReplicasPath")?,
            selector: path("labelSelectorPath")?.map_or(ScaleSelector::None, ScaleSelector::Text),
        })
    }
}

impl ResourceInfo {
    /// `group/version` for the API, or `version` for the core group.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// `plural.group` (or `plural` for the core group), as in status messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// The pinned release's `/version` (its build's own fields aside) and discovery, as
/// `kubekit-fake-gen` read them from the real control plane.
const DISCOVERY: &str = include_str!("discovery.json");

/// `DISCOVERY`, parsed.
fn discovery() -> &'static Value {
    static PARSED: LazyLock<Value> = LazyLock::new(|| {
        // Generated and checked by kubekit-fake-gen's test: a failure here is a bug.
        serde_json::from_str(DISCOVERY).expect("kubekit-fake's generated discovery.json")
    });
    &PARSED
}

/// The pinned release's `/version` document, without its build's own fields.
pub fn version_document() -> &'static Value {
    &discovery()["version"]
}

/// The verbs of a resource served with storage: a built-in resource listing all of
/// these in the pinned release's discovery is served (others, such as `bindings` or
/// `componentstatuses`, are not).
const STORED_VERBS: [&str; 7] = [
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// The reviews the fake answers (created, never stored).
const REVIEWS: [(&str, &str); 5] = [
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
];

/// What the fake knows of a built-in resource's behaviour beyond its discovery entry:
/// group, plural, keeps `metadata.generation`, a delete answers the deleted object.
/// Resources not listed keep no generation and answer a delete with a `Success` Status.
#[rustfmt::skip]
const BEHAVIOUR: &[(&str, &str, bool, bool)] = &[
    ("", "namespaces", false, true),
    ("", "pods", true, true),
    ("", "services", false, true),
    ("apps", "deployments", true, false),
    ("apps", "replicasets", true, false),
    ("apps", "statefulsets", true, false),
    ("apps", "daemonsets", true, false),
    ("batch", "jobs", true, false),
    ("batch", "cronjobs", true, false),
    ("apiextensions.k8s.io", "customresourcedefinitions", true, true),
    ("", "replicationcontrollers", true, false),
    ("networking.k8s.io", "ingresses", true, false),
    ("networking.k8s.io", "ingressclasses", true, false),
    ("networking.k8s.io", "networkpolicies", true, false),
    ("discovery.k8s.io", "endpointslices", true, false),
    ("flowcontrol.apiserver.k8s.io", "flowschemas", true, false),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", true, false),
    ("resource.k8s.io", "deviceclasses", true, false),
    ("scheduling.k8s.io", "priorityclasses", true, false),
];

/// The built-in resources: every one the pinned release serves with the verbs of
/// storage (see `STORED_VERBS`), at its group's preferred version (the first its
/// discovery lists), and the `REVIEWS`, with their discovery entries' names, scope and
/// verbs.
pub fn builtin() -> Vec<ResourceInfo> {
    let d = discovery();
    let mut lists = vec![("", "v1", &d["resources"]["api/v1"])];
    for group in d["groups"]["groups"].as_array().into_iter().flatten() {
        let name = group["name"].as_str().unwrap_or_default();
        for version in group["versions"].as_array().into_iter().flatten() {
            let gv = version["groupVersion"].as_str().unwrap_or_default();
            let v = version["version"].as_str().unwrap_or_default();
            lists.push((name, v, &d["resources"][format!("apis/{gv}")]));
        }
    }
    let mut out: Vec<ResourceInfo> = Vec::new();
    for (group, version, list) in lists {
        let entries = list["resources"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        for entry in entries {
            let plural = entry["name"].as_str().unwrap_or_default();
            if plural.contains('/') || out.iter().any(|r| r.group == group && r.plural == plural) {
                continue;
            }
            let verbs = strings(&entry["verbs"]);
            let review = REVIEWS.contains(&(group, plural));
            if !review
                && !STORED_VERBS
                    .iter()
                    .all(|v| verbs.iter().any(|have| have == v))
            {
                continue;
            }
            let has = |sub: &str| {
                entries
                    .iter()
                    .any(|e| e["name"] == format!("{plural}/{sub}"))
            };
            let behaviour = BEHAVIOUR.iter().find(|b| b.0 == group && b.1 == plural);
            out.push(ResourceInfo {
                group: group.into(),
                versions: vec![version.into()],
                kind: entry["kind"].as_str().unwrap_or_default().into(),
                plural: plural.into(),
                singular: entry["singularName"].as_str().unwrap_or_default().into(),
                short_names: strings(&entry["shortNames"]),
                categories: strings(&entry["categories"]),
                verbs,
                namespaced: entry["namespaced"].as_bool().unwrap_or_default(),
                status: !review && has("status"),
                generation: behaviour.is_some_and(|b| b.2),
                returns_deleted_object: behaviour.is_some_and(|b| b.3),
                builtin: true,
                scale: (group == "apps" && has("scale")).then(ScalePaths::of_workloads),
                review,
                schema: None,
                validation: None,
            });
        }
    }
    out
}

/// The built-in resource of `group` and `kind`, for tests.
#[cfg(test)]
pub(crate) fn builtin_of(group: &str, kind: &str) -> ResourceInfo {
    builtin()
        .into_iter()
        .find(|r| r.group == group && r.kind == kind)
        .expect("a built-in kind")
}

/// The resource a `CustomResourceDefinition` object defines, or why it defines none.
/// One fault of a CRD: its field, its cause's reason and its message.
pub(crate) type CrdFault = (String, &'static str, String);

/// The faults of a CRD's spec that the real server checks before anything else of it: a
/// group without a dot, an unknown scope or conversion strategy, a webhook conversion
/// without its configuration, a list kind that is the kind, short names, categories and
/// version names that are not DNS-1035 labels, a version without a schema, a scale path
/// that is not a path, printer columns without a JSON path or of an unknown type.
pub(crate) fn crd_spec_faults(crd: &Value) -> Vec<CrdFault> {
    let spec = &crd["spec"];
    let text = |p: &str| spec.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let quoted = |v: &str| crate::status::shown(&Value::String(v.to_string()));
    let mut out = Vec::new();
    let group = text("/group");
    if !group.is_empty() && !group.contains('.') {
        let detail = format!(
            "Invalid value: {}: should be a domain with at least one dot",
            quoted(group)
        );
        out.push(("spec.group".to_string(), "FieldValueInvalid", detail));
    }
    let scope = text("/scope");
    if !scope.is_empty() && scope != "Cluster" && scope != "Namespaced" {
        let detail = format!(
            "Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"",
            quoted(scope)
        );
        out.push(("spec.scope".to_string(), "FieldValueNotSupported", detail));
    }
    let (kind, list_kind) = (text("/names/kind"), text("/names/listKind"));
    if !kind.is_empty() && kind == list_kind {
        let detail = format!(
            "Invalid value: {}: kind and listKind may not be the same",
            quoted(list_kind)
        );
        out.push((
            "spec.names.listKind".to_string(),
            "FieldValueInvalid",
            detail,
        ));
    }
    let strategy = text("/conversion/strategy");
    if !strategy.is_empty() && strategy != "None" && strategy != "Webhook" {
        let detail = format!(
            "Unsupported value: {}: supported values: \"None\", \"Webhook\"",
            quoted(strategy)
        );
        out.push((
            "spec.conversion.strategy".to_string(),
            "FieldValueNotSupported",
            detail,
        ));
    }
    if strategy == "Webhook" {
        let conversion = &spec["conversion"];
        if conversion["webhook"]["clientConfig"].is_null() {
            let detail = "Required value: required when strategy is set to Webhook".to_string();
            out.push((
                "spec.conversion.webhookClientConfig".to_string(),
                "FieldValueRequired",
                detail,
            ));
        }
        if conversion["webhook"]["conversionReviewVersions"].is_null() {
            let field = "spec.conversion.conversionReviewVersions".to_string();
            out.push((field, "FieldValueRequired", "Required value".to_string()));
        }
    }
    let label = |field: String, value: &Value, out: &mut Vec<CrdFault>| {
        let text = value.as_str().unwrap_or_default();
        for why in kubekit::validation::dns1035_label(text) {
            let detail = format!("Invalid value: {}: {why}", quoted(text));
            out.push((field.clone(), "FieldValueInvalid", detail));
        }
    };
    for list in ["shortNames", "categories"] {
        let names = spec["names"][list].as_array().into_iter().flatten();
        for (i, name) in names.enumerate() {
            label(format!("spec.names.{list}[{i}]"), name, &mut out);
        }
    }
    let versions: Vec<&Value> = spec["versions"].as_array().into_iter().flatten().collect();
    for (i, version) in versions.iter().enumerate() {
        label(
            format!("spec.versions[{i}].name"),
            &version["name"],
            &mut out,
        );
        if i == 0 {
            // The internal form's single version is named too.
            label("spec.version".to_string(), &version["name"], &mut out);
        }
        if version["schema"]["openAPIV3Schema"].is_null() {
            let field = format!("spec.versions[{i}].schema.openAPIV3Schema");
            out.push((field, "FieldValueRequired", "Required value".to_string()));
        }
    }
    // Subresources and columns every version shares are the spec's own in the internal form.
    let shared = |pointer: &str| -> Option<&Value> {
        let first = versions.first()?.pointer(pointer)?;
        versions
            .iter()
            .all(|v| v.pointer(pointer) == Some(first))
            .then_some(first)
    };
    if let Some(scale) = shared("/subresources/scale") {
        for path in ["specReplicasPath", "statusReplicasPath"] {
            if let Some(p) = scale[path].as_str()
                && !p.starts_with('.')
            {
                let detail = format!(
                    "Invalid value: {}: must be a simple json path starting with .",
                    quoted(p)
                );
                out.push((
                    format!("spec.subresources.scale.{path}"),
                    "FieldValueInvalid",
                    detail,
                ));
            }
        }
    }
    if let Some(columns) = shared("/additionalPrinterColumns").and_then(Value::as_array) {
        for (i, column) in columns.iter().enumerate() {
            let at = format!("spec.additionalPrinterColumns[{i}]");
            let ty = column["type"].as_str().unwrap_or_default();
            if !["boolean", "date", "integer", "number", "string"].contains(&ty) {
                let detail = format!(
                    "Invalid value: {}: must be one of boolean,date,integer,number,string",
                    quoted(ty)
                );
                out.push((format!("{at}.type"), "FieldValueInvalid", detail));
            }
            if column["jsonPath"].as_str().is_none_or(str::is_empty) {
                out.push((
                    format!("{at}.JSONPath"),
                    "FieldValueRequired",
                    "Required value".to_string(),
                ));
            }
        }
    }
    out
}

/// The faults of an update of a CRD from `old` to `new`: its group, scope, plural and
/// kind never change, and a version once stored stays in its versions.
pub(crate) fn crd_update_faults(new: &Value, old: &Value) -> Vec<CrdFault> {
    let mut out = Vec::new();
    for (pointer, field) in [
        ("/spec/group", "spec.group"),
        ("/spec/scope", "spec.scope"),
        ("/spec/names/plural", "spec.names.plural"),
        ("/spec/names/kind", "spec.names.kind"),
    ] {
        let (n, o) = (new.pointer(pointer), old.pointer(pointer));
        if let Some(n) = n
            && n != o.unwrap_or(&Value::Null)
        {
            let detail = format!(
                "Invalid value: {}: field is immutable",
                crate::status::shown(n)
            );
            out.push((field.to_string(), "FieldValueInvalid", detail));
        }
    }
    let versions: Vec<&str> = new["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .collect();
    let stored = old["status"]["storedVersions"]
        .as_array()
        .into_iter()
        .flatten();
    for (i, v) in stored.filter_map(Value::as_str).enumerate() {
        if !versions.contains(&v) {
            let detail = format!(
                "Invalid value: \"{v}\": missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            );
            out.push((
                format!("status.storedVersions[{i}]"),
                "FieldValueInvalid",
                detail,
            ));
        }
    }
    out
}

/// A CRD's defaults: its list kind (`<Kind>List`) and conversion strategy (`None`).
pub(crate) fn default_crd(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut)
        && names
            .get("listKind")
            .is_none_or(|l| l.as_str().is_none_or(str::is_empty))
        && let Some(kind) = names
            .get("kind")
            .and_then(Value::as_str)
            .map(str::to_string)
    {
        names.insert("listKind".into(), json!(format!("{kind}List")));
    }
}

/// `crd`'s status after an update: the storage version of its spec added to the versions
/// it has stored.
pub(crate) fn record_storage_version(crd: &mut Value) {
    let storage = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == json!(true))
        .and_then(|v| v["name"].as_str())
        .map(str::to_string);
    if let Some(storage) = storage
        && let Some(stored) = crd["status"]["storedVersions"].as_array_mut()
        && !stored.iter().any(|v| v == &json!(storage))
    {
        stored.push(json!(storage));
    }
}

pub fn from_crd(crd: &Value) -> Result<ResourceInfo, String> {
    let spec = crd.get("spec").ok_or("spec: Required value")?;
    let text = |v: &Value, path: &str| -> Result<String, String> {
        path.split('.')
            .try_fold(v, |v, k| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("spec.{path}: Required value"))
    };
    let group = text(spec, "group")?;
    if !group.contains('.') {
        return Err(format!(
            "spec.group: Invalid value: \"{group}\": should be a domain with at least one dot"
        ));
    }
    let plural = text(spec, "names.plural")?;
    let kind = text(spec, "names.kind")?;
    let singular = text(spec, "names.singular").unwrap_or_else(|_| kind.to_ascii_lowercase());
    let names = |field: &str| -> Vec<String> {
        spec.pointer(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let short_names = names("/names/shortNames");
    let categories = names("/names/categories");
    let namespaced = text(spec, "scope")? == "Namespaced";
    // (name, storage, has a status subresource) of each served version.
    let mut served = Vec::new();
    let mut scale = None;
    let all = spec.get("versions").and_then(Value::as_array);
    for (i, v) in all.into_iter().flatten().enumerate() {
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("spec.versions[{i}].name: Required value"))?;
        if v.get("served").and_then(Value::as_bool) != Some(false) {
            let storage = v.get("storage").and_then(Value::as_bool) == Some(true);
            if let Some(s) = v.pointer("/subresources/scale")
                && scale.is_none()
            {
                scale = Some(ScalePaths::of_crd(s)?);
            }
            served.push((
                name.to_string(),
                storage,
                v.pointer("/subresources/status").is_some(),
            ));
        }
    }
    if served.is_empty() {
        return Err(
            "spec.versions: Invalid value: must have exactly one version marked as storage version"
                .into(),
        );
    }
    let status = served.iter().any(|(_, _, status)| *status);
    let storage = served
        .iter()
        .position(|(_, storage, _)| *storage)
        .unwrap_or(0);
    let mut versions: Vec<String> = served.into_iter().map(|(name, ..)| name).collect();
    versions.swap(0, storage);
    let validation = all.into_iter().flatten().find_map(|v| {
        (v.get("name")?.as_str()? == versions[0])
            .then(|| v.pointer("/schema/openAPIV3Schema").cloned())
            .flatten()
    });
    let schema = validation
        .as_ref()
        .map(|s| std::sync::Arc::new(crate::managed::crd_type(s)));
    // The real server lists a custom resource's verbs in this order.
    let verbs = [
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "create",
        "update",
        "watch",
    ];
    Ok(ResourceInfo {
        group,
        versions,
        kind,
        plural,
        singular,
        short_names,
        categories,
        verbs: verbs.map(str::to_string).to_vec(),
        namespaced,
        status,
        generation: true,
        returns_deleted_object: false,
        builtin: false,
        scale,
        review: false,
        schema,
        validation: validation.map(std::sync::Arc::new),
    })
}

/// The status of a CRD whose resource `info` is served: its names accepted
/// (`NamesAccepted`, `Established` conditions at `now`, with the real server's reasons and
/// messages), its storage version stored.
pub fn established_crd_status(crd: &Value, info: &ResourceInfo, now: &str) -> Value {
    let mut accepted = json!({
        "plural": info.plural,
        "singular": info.singular,
        "kind": info.kind,
        "listKind": crd
            .pointer("/spec/names/listKind")
            .and_then(Value::as_str)
            .map_or_else(|| format!("{}List", info.kind), str::to_string),
    });
    if !info.short_names.is_empty() {
        accepted["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        accepted["categories"] = json!(info.categories);
    }
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({
            "type": kind, "status": "True", "lastTransitionTime": now,
            "reason": reason, "message": message,
        })
    };
    json!({
        "acceptedNames": accepted,
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition(
                "Established",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            ),
        ],
        "storedVersions": [info.versions[0]],
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_crd_defines_its_served_versions_with_the_storage_version_first() {
        let crd = json!({"spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget", "singular": "widget"},
        "versions": [
            {"name": "v1alpha1", "served": true, "storage": false},
            {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
            {"name": "v0", "served": false, "storage": false},
        ]}});
        let info = from_crd(&crd).unwrap();
        assert_eq!(info.versions, ["v1", "v1alpha1"]);
        assert!(info.namespaced && info.status && info.generation && !info.builtin);
        assert_eq!(info.qualified(), "widgets.example.com");
    }

    #[test]
    fn a_crd_without_names_defines_nothing() {
        assert!(from_crd(&json!({"spec": {"group": "example.com"}})).is_err());
    }
}
