//! The fake's storage: schema-less JSON objects keyed by resource, namespace and name, one
//! global resourceVersion counter, and a bounded history of changes per resource.
//!
//! # Contract
//!
//! - Every write (create, a changing update, delete, a deletion mark) takes the next
//!   resourceVersion of one counter shared by all resources, like etcd's revision. An
//!   update that changes nothing writes nothing and keeps the resourceVersion.
//! - Each resource keeps its last [`HISTORY_LIMIT`] changes (the object before and after).
//!   From them the store answers watches from a resourceVersion and lists at an exact
//!   resourceVersion (so `continue` pages are one consistent snapshot). A resourceVersion
//!   older than what the history still covers is `410 Expired`, as on the real server
//!   after etcd's compaction; [`Store::compact`] drops the history on demand.
//! - Deletion honours finalizers (`deletionTimestamp` set, the object kept until they are
//!   gone), preconditions, and garbage collection through `ownerReferences` (background,
//!   foreground and orphan), done at once rather than by a controller. A deleted
//!   namespace's objects are deleted with it.
//! - A create checks every object's metadata (see `object_meta`), cuts a `generateName`
//!   to 58 bytes before its random suffix, keeps a client's `generation` for a kind that
//!   has none of its own, and refuses a `resourceVersion` (a bare `500`, as etcd's store
//!   does); a name held by an object being deleted is `409 AlreadyExists` saying so. An
//!   update checks the metadata too, and refuses a changed `uid`, `deletionTimestamp` or
//!   `deletionGracePeriodSeconds`, a finalizer added while deleting, a custom resource's
//!   changed `kind` or `apiVersion`, and a `resourceVersion` that does not parse (`500`).
//!   A CRD is defaulted (list kind, conversion `None`), its scope, group, plural and kind
//!   never change, a stored version stays among its versions, and its storage version is
//!   added to `status.storedVersions`.
//! - Deleting an object already being deleted with a propagation policy switches the
//!   garbage collector's finalizer (`orphan` or `foregroundDeletion`).
//! - The store is synchronous and is used under one lock that no caller holds across an
//!   `.await`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::crd_schema;
use crate::defaults;
use crate::events;
use crate::managed::Write;
use crate::resources::{self, ResourceInfo};
use crate::status::{ApiError, ApiResult};

/// How many changes of each resource are kept for watches and exact lists.
pub const HISTORY_LIMIT: usize = 1000;

/// The message of a watch from a resourceVersion older than the history (etcd's, after
/// a compaction).
pub const WATCH_EXPIRED: &str = "The resourceVersion for the provided watch is too old.";

/// The type of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Changed.
    Modified,
    /// Deleted.
    Deleted,
}

/// One change of one object.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion of the change.
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (for a deletion: its last state, at `rv`).
    pub object: Arc<Value>,
    /// The object before the change, if it existed.
    pub previous: Option<Arc<Value>>,
}

type Key = (String, String);
type Objects = BTreeMap<Key, Arc<Value>>;

#[derive(Debug, Default, Clone)]
struct Table {
    objects: Objects,
    events: VecDeque<Event>,
    /// The history covers every change after this resourceVersion.
    compacted: u64,
}

/// How a delete should go.
#[derive(Debug, Clone, Default)]
pub struct DeleteRequest {
    /// `dryRun: [All]` (or the query's): answer as if deleted, delete nothing.
    pub dry_run: bool,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `propagationPolicy`: `Orphan`, `Background` or `Foreground`.
    pub propagation: Option<String>,
}

/// A create or update checked, defaulted and ready to store (what validating admission
/// sees): made by [`Store::prepare_create`] or [`Store::prepare_update`], stored by
/// [`Store::commit_create`] or [`Store::commit_update`].
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    info: ResourceInfo,
    /// The object as it would be stored.
    pub(crate) object: Value,
    /// The stored object an update replaces.
    pub(crate) previous: Option<Arc<Value>>,
    /// The resource a CRD's create serves.
    crd: Option<ResourceInfo>,
}

/// What a delete did.
#[derive(Debug, Clone)]
pub enum Deleted {
    /// The object is gone; this was its last stored state (the real server answers a
    /// delete with it, at its last resourceVersion; the `DELETED` event carries the
    /// deletion's).
    Gone(Arc<Value>),
    /// The object is marked for deletion and waits for its finalizers.
    Pending(Arc<Value>),
}

/// All objects and their history (cloned for a dry run: the clone is written and dropped).
#[derive(Debug, Clone)]
pub struct Store {
    rv: u64,
    resources: Vec<ResourceInfo>,
    tables: HashMap<(String, String), Table>,
    /// Garbage collection is running: the deletes and updates it makes do not start it
    /// again (its loop goes on until nothing changes), so it never recurses.
    collecting: bool,
    /// Whether the store collects garbage and empties deleted namespaces itself (see
    /// [`set_own_garbage_collection`](Self::set_own_garbage_collection)).
    own_garbage_collection: bool,
    /// ResourceQuotas' statuses are being written (see `refresh_quotas`): those writes do
    /// not refresh them again.
    refreshing_quotas: bool,
}

const FOREGROUND: &str = "foregroundDeletion";
const ORPHAN: &str = "orphan";

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
fn check_name(info: &ResourceInfo, obj: &Value, name: &str) -> ApiResult<()> {
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
fn check_type_meta(info: &ResourceInfo, name: &str, new: &Value, old: &Value) -> ApiResult<()> {
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
fn check_crd_rules(info: &ResourceInfo, name: &str, crd: &Value) -> ApiResult<()> {
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

/// The current time as the API server writes timestamps.
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn meta(obj: &Value) -> &Value {
    &obj["metadata"]
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj).get(field).and_then(Value::as_str)
}

/// `metadata` of `obj` as a mutable map (created if missing).
fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"]
        .as_object_mut()
        .expect("metadata was just made an object")
}

/// Drops empty maps and lists and nulls from `metadata`, as Go's `ObjectMeta` omits them.
fn omit_empty_metadata(obj: &mut Value) {
    meta_mut(obj).retain(|_, v| match v {
        Value::Object(o) => !o.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Null => false,
        _ => true,
    });
}

fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)["finalizers"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn set_finalizers(obj: &mut Value, list: &[String]) {
    let m = meta_mut(obj);
    if list.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert("finalizers".into(), json!(list));
    }
}

fn owner_uids(obj: &Value) -> Vec<&str> {
    meta(obj)["ownerReferences"]
        .as_array()
        .map(|refs| refs.iter().filter_map(|r| r["uid"].as_str()).collect())
        .unwrap_or_default()
}

/// `obj` without metadata and status: what bumps `generation` when it changes.
fn spec_of(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        for k in ["metadata", "status", "apiVersion", "kind"] {
            m.remove(k);
        }
    }
    v
}

/// The longest prefix of a generated name: 63 bytes with the random suffix.
const MAX_GENERATED_PREFIX: usize = 58;

fn random_suffix() -> String {
    // The alphabet of apimachinery's `utilrand.String` (no vowels, no confusable digits).
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

pub(crate) fn new_uid() -> String {
    let n = fastrand::u128(..);
    let hex = format!("{n:032x}");
    format!(
        "{}-{}-4{}-{}{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        ["8", "9", "a", "b"][fastrand::usize(..4)],
        &hex[17..20],
        &hex[20..32]
    )
}

impl Store {
    /// A store serving the built-in resources, empty.
    pub fn new() -> Self {
        Self {
            rv: 1,
            resources: resources::builtin(),
            tables: HashMap::new(),
            collecting: false,
            own_garbage_collection: true,
            refreshing_quotas: false,
        }
    }

    /// The current resourceVersion (of the last write).
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Every served resource.
    pub fn resources(&self) -> &[ResourceInfo] {
        &self.resources
    }

    /// The resource served as `plural` in `group/version`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<ResourceInfo> {
        self.resources
            .iter()
            .find(|r| {
                r.group == group && r.plural == plural && r.versions.iter().any(|v| v == version)
            })
            .cloned()
    }

    fn table(&mut self, info: &ResourceInfo) -> &mut Table {
        self.tables.entry(events::storage(info)).or_default()
    }

    fn table_ref(&self, info: &ResourceInfo) -> Option<&Table> {
        self.tables.get(&events::storage(info))
    }

    /// Whether any object of `plural` in `group` is stored (without a lookup of its
    /// resource: asked at every write).
    pub(crate) fn holds_any(&self, group: &str, plural: &str) -> bool {
        self.tables
            .get(&(group.to_string(), plural.to_string()))
            .is_some_and(|table| !table.objects.is_empty())
    }

    /// The object `name` in `ns` (`""` for cluster-scoped).
    pub fn get(&self, info: &ResourceInfo, ns: &str, name: &str) -> ApiResult<Arc<Value>> {
        self.table_ref(info)
            .and_then(|t| t.objects.get(&(ns.to_string(), name.to_string())))
            .cloned()
            .ok_or_else(|| ApiError::not_found(info, name))
    }

    /// The objects of `info` (in `ns`, or all when `None`) as they were at resourceVersion
    /// `at` (now, when `None`), in key order, with that resourceVersion.
    pub fn snapshot(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        at: Option<u64>,
    ) -> ApiResult<(u64, Vec<Arc<Value>>)> {
        let empty = Table::default();
        let table = self.table_ref(info).unwrap_or(&empty);
        let in_ns = |k: &Key| ns.is_none_or(|ns| k.0 == ns);
        let at = match at {
            Some(at) if at < self.rv => at,
            _ => {
                let objs = table
                    .objects
                    .iter()
                    .filter(|(k, _)| in_ns(k))
                    .map(|(_, v)| v.clone())
                    .collect();
                return Ok((self.rv, objs));
            }
        };
        if at < table.compacted {
            return Err(ApiError::expired(
                "The resourceVersion for the provided list is too old.",
            ));
        }
        let mut objects: Objects = table.objects.clone();
        for e in table.events.iter().rev().take_while(|e| e.rv > at) {
            let key = key_of(&e.object);
            match &e.previous {
                Some(prev) if e.kind != EventType::Added => {
                    objects.insert(key, prev.clone());
                }
                _ => {
                    objects.remove(&key);
                }
            }
        }
        Ok((
            at,
            objects
                .into_iter()
                .filter(|(k, _)| in_ns(k))
                .map(|(_, v)| v)
                .collect(),
        ))
    }

    /// The changes of `info` after resourceVersion `after`, or `410 Expired` when the
    /// history no longer reaches back that far.
    pub fn events_after(&self, info: &ResourceInfo, after: u64) -> ApiResult<Vec<Event>> {
        let Some(table) = self.table_ref(info) else {
            return Ok(Vec::new());
        };
        if after < table.compacted {
            return Err(ApiError::expired(WATCH_EXPIRED));
        }
        let start = table.events.partition_point(|e| e.rv <= after);
        Ok(table.events.range(start..).cloned().collect())
    }

    /// Drops the history of every resource up to the current resourceVersion, as etcd's
    /// compaction does: watches and exact lists from an older resourceVersion get
    /// `410 Expired`.
    pub fn compact(&mut self) {
        let rv = self.rv;
        for t in self.tables.values_mut() {
            t.events.clear();
            t.compacted = rv;
        }
    }

    /// Stores a change at a new resourceVersion and returns the stored object.
    fn write(
        &mut self,
        info: &ResourceInfo,
        kind: EventType,
        mut object: Value,
        previous: Option<Arc<Value>>,
    ) -> Arc<Value> {
        self.rv += 1;
        let rv = self.rv;
        omit_empty_metadata(&mut object);
        meta_mut(&mut object).insert("resourceVersion".into(), json!(rv.to_string()));
        let object = Arc::new(object);
        let key = key_of(&object);
        let table = self.table(info);
        if kind == EventType::Deleted {
            table.objects.remove(&key);
        } else {
            table.objects.insert(key, object.clone());
        }
        table.events.push_back(Event {
            rv,
            kind,
            object: object.clone(),
            previous,
        });
        if table.events.len() > HISTORY_LIMIT
            && let Some(old) = table.events.pop_front()
        {
            table.compacted = old.rv;
        }
        if info.namespaced && !self.refreshing_quotas && self.holds_any("", "resourcequotas") {
            let ns = meta_str(&object, "namespace")
                .unwrap_or_default()
                .to_string();
            self.refresh_quotas(&ns);
        }
        object
    }

    /// Creates `obj` in `ns` (`""` for cluster-scoped): the server-set metadata, and for a
    /// `CustomResourceDefinition`, its resource served from now on. `write` records the
    /// fields in managedFields; `None` keeps `obj`'s (server-side apply made them).
    pub(crate) fn create(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        obj: Value,
        write: Option<&Write>,
    ) -> ApiResult<Arc<Value>> {
        let prepared = self.prepare_create(info, ns, obj, write)?;
        self.commit_create(prepared)
    }

    /// Whether objects may be created in namespace `ns` (kube-apiserver's
    /// `NamespaceLifecycle`): it exists and is not being deleted.
    pub(crate) fn namespace_admits(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
    ) -> ApiResult<()> {
        if !info.namespaced {
            return Ok(());
        }
        let namespaces = self
            .lookup("", "v1", "namespaces")
            .expect("namespaces are built in");
        let namespace = self.get(&namespaces, "", ns)?;
        if meta(&namespace).get("deletionTimestamp").is_some() {
            // With the cause clients look for (kube-controller-manager's root-CA publisher
            // does not retry on it).
            let mut details = crate::status::details(info, name);
            details["causes"] = json!([{"reason": "NamespaceTerminating",
                "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]);
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                    info.qualified()
                ),
            )
            .with_details(details));
        }
        Ok(())
    }

    /// What creating `obj` in `ns` would store, checked and defaulted (the strategy's
    /// prepare and validate), without storing it: see [`commit_create`](Self::commit_create).
    pub(crate) fn prepare_create(
        &self,
        info: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        write: Option<&Write>,
    ) -> ApiResult<Prepared> {
        let generate = meta_str(&obj, "generateName").map(str::to_string);
        let name = match (meta_str(&obj, "name"), generate) {
            (Some(n), _) if !n.is_empty() => n.to_string(),
            (_, Some(prefix)) if !prefix.is_empty() => {
                // apimachinery's generator cuts the prefix so that the name has 63 bytes.
                let mut cut = prefix.len().min(MAX_GENERATED_PREFIX);
                while !prefix.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}{}", &prefix[..cut], random_suffix())
            }
            _ => {
                return Err(ApiError::invalid(
                    info,
                    "",
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                ));
            }
        };
        self.namespace_admits(info, ns, &name)?;
        self.check_free(info, ns, &name)?;
        let crd = if info.group == "apiextensions.k8s.io" {
            resources::default_crd(&mut obj);
            let faults = resources::crd_spec_faults(&obj);
            if !faults.is_empty() {
                return Err(ApiError::invalid_fields(info, &name, &faults));
            }
            let invalid =
                |e: String| ApiError::invalid(info, &name, "spec", "FieldValueInvalid", &e);
            let crd = resources::from_crd(&obj).map_err(invalid)?;
            if self
                .resources
                .iter()
                .any(|r| r.builtin && r.group == crd.group && r.plural == crd.plural)
            {
                return Err(invalid(format!(
                    "spec.names.plural: Invalid value: \"{}\": {}.{} is a built-in resource",
                    crd.plural, crd.plural, crd.group
                )));
            }
            Some(crd)
        } else {
            None
        };
        check_name(info, &obj, &name)?;
        if info.status
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        obj["apiVersion"] = json!(info.api_version(&info.versions[0]));
        obj["kind"] = json!(info.kind);
        let m = meta_mut(&mut obj);
        m.insert("name".into(), json!(name));
        if info.namespaced {
            m.insert("namespace".into(), json!(ns));
        } else {
            m.remove("namespace");
        }
        m.insert("uid".into(), json!(new_uid()));
        m.insert("creationTimestamp".into(), json!(now()));
        for server_set in [
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            m.remove(server_set);
        }
        // A kind without a generation of its own keeps the client's, as on the real server.
        if info.generation {
            m.insert("generation".into(), json!(1));
        }
        defaults::apply(info, &mut obj, None);
        crd_schema::default_and_validate(info, &name, (&mut obj, None), false)?;
        if let Some(w) = write {
            omit_empty_metadata(&mut obj);
            w.track_update(None, &mut obj);
        }
        if info.builtin {
            let is_pod = info.group.is_empty() && info.kind == "Pod";
            let classes = if is_pod {
                self.priority_classes()
            } else {
                Vec::new()
            };
            crate::workloads::admit(&info.group, &info.kind, &mut obj, &classes).map_err(
                |why| {
                    let message = format!("{} \"{name}\" is forbidden: {why}", info.qualified());
                    ApiError::new(403, "Forbidden", message)
                        .with_details(json!({"kind": info.plural, "name": name}))
                },
            )?;
            crate::kinds::prepare_for_create(info, &mut obj);
        }
        if info.builtin
            && info.group.is_empty()
            && matches!(info.kind.as_str(), "Pod" | "PersistentVolumeClaim")
        {
            self.limit_ranges_admit(info, ns, &name, &mut obj)?;
        }
        self.quotas_admit(info, ns, &name, &obj, None)?;
        if info.builtin && info.group.is_empty() && info.kind == "ResourceQuota" {
            obj["status"] = crate::quotas::status(&obj, &self.objects_in(ns));
        }
        if info.builtin && info.group.is_empty() && info.kind == "Service" {
            let (ips, ports) = self.allocated_to_services(info);
            defaults::allocate(&mut obj, &ips, &ports);
        }
        defaults::check_workload(info, &name, &obj, None)?;
        if info.builtin {
            crate::kinds::check(info, &name, &obj, None)?;
        }
        crate::admission_config::check_configuration(info, &name, &obj)?;
        crate::policy_validation::check(info, &name, &obj)?;
        check_crd_rules(info, &name, &obj)?;
        if meta_str(&obj, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
            // The storage's refusal, after validation and admission: a bare 500.
            return Err(ApiError::new(
                500,
                "",
                "resourceVersion should not be set on objects to be created",
            ));
        }
        if let Some(crd) = &crd {
            // Served at once: its names accepted and established, as the real server's
            // controllers report a moment after the create.
            obj["status"] = resources::established_crd_status(&obj, crd, &now());
        }
        Ok(Prepared {
            info: info.clone(),
            object: obj,
            previous: None,
            crd,
        })
    }

    /// `409 AlreadyExists` when `name` is taken (saying so when the object holding it is
    /// being deleted, as the real server does).
    fn check_free(&self, info: &ResourceInfo, ns: &str, name: &str) -> ApiResult<()> {
        match self.get(info, ns, name) {
            Ok(held) => {
                let mut e = ApiError::already_exists(info, name);
                if meta(&held).get("deletionTimestamp").is_some() {
                    e.message = format!("object is being deleted: {}", e.message);
                }
                Err(e)
            }
            Err(_) => Ok(()),
        }
    }

    /// Stores what [`prepare_create`](Self::prepare_create) made, unless the store changed
    /// meanwhile so that it may no longer be (its name taken, its namespace gone or being
    /// deleted, a Service's cluster IP or node port taken).
    pub(crate) fn commit_create(&mut self, prepared: Prepared) -> ApiResult<Arc<Value>> {
        let Prepared {
            info, object, crd, ..
        } = prepared;
        let (ns, name) = key_of(&object);
        self.namespace_admits(&info, &ns, &name)?;
        self.check_free(&info, &ns, &name)?;
        if info.builtin && info.group.is_empty() && info.kind == "Service" {
            let (ips, ports) = self.allocated_to_services(&info);
            defaults::check_allocations(&info, &name, &object, &ips, &ports)?;
        }
        if let Some(crd) = crd {
            self.resources
                .retain(|r| !(r.group == crd.group && r.plural == crd.plural));
            self.resources.push(crd);
        }
        let owned = !owner_uids(&object).is_empty();
        let obj = events::stored(&info, object);
        let created = self.write(&info, EventType::Added, obj, None);
        if owned {
            // An object created with owners that no longer exist is collected, as the
            // real garbage collector does a moment later.
            self.collect_garbage();
        }
        Ok(created)
    }

    /// Replaces `name` with `new` (the main resource), or only its status (`status_only`).
    /// A stale `metadata.resourceVersion` is a conflict; a missing one updates
    /// unconditionally. `write` records the change in managedFields; `None` keeps `new`'s
    /// (server-side apply made them).
    pub(crate) fn update(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        new: Value,
        status_only: bool,
        write: Option<&Write>,
    ) -> ApiResult<Arc<Value>> {
        let prepared = self.prepare_update(info, ns, name, new, status_only, write)?;
        Ok(self
            .commit_update(prepared)
            .expect("nothing changed between prepare and commit"))
    }

    /// What replacing `name` with `new` would store, checked and defaulted, without storing
    /// it: see [`commit_update`](Self::commit_update).
    pub(crate) fn prepare_update(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        mut new: Value,
        status_only: bool,
        write: Option<&Write>,
    ) -> ApiResult<Prepared> {
        let stored_old = self.get(info, ns, name)?;
        // Compared and changed in the form of the request's API (see `events`).
        let old = match events::is_event(info) {
            true => Arc::new(events::shown(info, &stored_old)),
            false => stored_old.clone(),
        };
        match meta_str(&new, "name").filter(|n| !n.is_empty()) {
            None => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({name} based on URL) was undeterminable: name must be provided"
                )));
            }
            Some(n) if n != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            Some(_) => {}
        }
        if !info.builtin {
            check_type_meta(info, name, &new, &old)?;
        }
        // An empty resourceVersion is none: an unconditional update, which the real server
        // allows for built-in resources only.
        match meta_str(&new, "resourceVersion").filter(|rv| !rv.is_empty()) {
            Some(rv) if rv.parse::<u64>().is_err() => {
                let quoted = kubekit::validation::quote(rv);
                let why = format!("strconv.ParseUint: parsing {quoted}: invalid syntax");
                return Err(ApiError::new(500, "", why));
            }
            Some(rv) if meta_str(&old, "resourceVersion") != Some(rv) => {
                return Err(ApiError::stale(info, name));
            }
            None if !info.builtin => {
                let detail = "Invalid value: 0: must be specified for an update";
                let field = "metadata.resourceVersion";
                let mut e = ApiError::invalid(info, name, field, "FieldValueInvalid", detail);
                // Here the real server names a custom resource by its resource, not its kind.
                e.message = format!(
                    "{} \"{name}\" is invalid: {field}: {detail}",
                    info.qualified()
                );
                if let Some(details) = e.details.as_mut() {
                    details["kind"] = json!(info.plural);
                }
                return Err(e);
            }
            _ => {}
        }
        let take_status = |into: &mut Value, from: &Value| {
            if let Some(m) = into.as_object_mut() {
                match from.get("status") {
                    Some(s) => m.insert("status".into(), s.clone()),
                    None => m.remove("status"),
                };
            }
        };
        let mut result = if status_only {
            let mut r = (*old).clone();
            take_status(&mut r, &new);
            if info.builtin && info.group == "apiextensions.k8s.io" {
                resources::record_storage_version(&mut r);
            }
            crd_schema::default_and_validate(info, name, (&mut r, Some(&old)), true)?;
            match write {
                Some(w) => w.track_update(Some(&old), &mut r),
                None => {
                    let applied = new["metadata"]["managedFields"].clone();
                    meta_mut(&mut r).insert("managedFields".into(), applied);
                }
            }
            r
        } else {
            if info.status {
                take_status(&mut new, &old);
            }
            let update_faults = crate::object_meta::update_faults(&new, &old);
            let m = meta_mut(&mut new);
            for kept in [
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ] {
                match meta(&old).get(kept) {
                    Some(v) => m.insert(kept.into(), v.clone()),
                    None => m.remove(kept),
                };
            }
            let mut faults = crate::object_meta::faults(&new, info.builtin);
            faults.extend(update_faults);
            if info.builtin && info.group == "apiextensions.k8s.io" {
                resources::default_crd(&mut new);
                faults.extend(resources::crd_spec_faults(&new));
                faults.extend(resources::crd_update_faults(&new, &old));
                resources::record_storage_version(&mut new);
            }
            if !faults.is_empty() {
                return Err(ApiError::invalid_fields(info, name, &faults));
            }
            defaults::apply(info, &mut new, Some(&old));
            if info.builtin {
                crate::workloads::admit_update(&info.group, &info.kind, &mut new);
            }
            crd_schema::default_and_validate(info, name, (&mut new, Some(&old)), false)?;
            defaults::check_update(info, name, &old, &new)?;
            self.quotas_admit(info, ns, name, &new, Some(&old))?;
            defaults::check_workload(info, name, &new, Some(&old))?;
            if info.builtin {
                crate::kinds::check(info, name, &new, Some(&old))?;
            }
            crate::admission_config::check_configuration(info, name, &new)?;
            crate::policy_validation::check(info, name, &new)?;
            check_crd_rules(info, name, &new)?;
            if let Some(w) = write {
                omit_empty_metadata(&mut new);
                w.track_update(Some(&old), &mut new);
            }
            if (info.generation || crate::kinds::generation_from_first_change(info))
                && spec_of(&old) != spec_of(&new)
                && !crate::kinds::keeps_first_generation(info)
            {
                let g = meta(&old)["generation"].as_i64().unwrap_or(0) + 1;
                meta_mut(&mut new).insert("generation".into(), json!(g));
            }
            new
        };
        for k in ["apiVersion", "kind"] {
            result[k] = old[k].clone();
        }
        meta_mut(&mut result).insert(
            "resourceVersion".into(),
            meta(&old)["resourceVersion"].clone(),
        );
        omit_empty_metadata(&mut result);
        Ok(Prepared {
            info: info.clone(),
            object: result,
            previous: Some(stored_old),
            crd: None,
        })
    }

    /// Stores what [`prepare_update`](Self::prepare_update) made; `None` when the object
    /// changed (or went) meanwhile: then it is to be prepared again.
    pub(crate) fn commit_update(&mut self, prepared: Prepared) -> Option<Arc<Value>> {
        let Prepared {
            info,
            object,
            previous,
            ..
        } = prepared;
        let stored_old = previous.expect("an update has an old object");
        let (ns, name) = key_of(&stored_old);
        match self.get(&info, &ns, &name) {
            Ok(now) if Arc::ptr_eq(&now, &stored_old) => {}
            _ => return None,
        }
        let result = events::stored(&info, object);
        if result == *stored_old {
            return Some(stored_old);
        }
        // A namespace also waits for the finalizers of its spec (kube-controller-manager's
        // namespace controller removes `kubernetes` through `finalize`).
        let spec_finalizing = info.builtin
            && info.plural == "namespaces"
            && result["spec"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty());
        if meta(&result).get("deletionTimestamp").is_some()
            && finalizers(&result).is_empty()
            && !spec_finalizing
        {
            // The update deletes the object; like the real server, it answers with the
            // object at its last stored resourceVersion.
            self.write(&info, EventType::Deleted, result.clone(), Some(stored_old));
            self.collect_garbage();
            return Some(Arc::new(result));
        }
        let terminating = meta(&result).get("deletionTimestamp").is_some();
        let written = self.write(&info, EventType::Modified, result, Some(stored_old));
        if terminating {
            // A finalizer gone may let garbage collection finish (a namespace's removal).
            self.collect_garbage();
        }
        Some(written)
    }

    /// A Namespace's `finalize` subresource: its `spec.finalizers` set to `spec_finalizers`
    /// (`resource_version`, when given, must be the stored one); a namespace being deleted
    /// that has no finalizer left is removed. With `dry_run`, the answer without a write.
    pub(crate) fn finalize_namespace(
        &mut self,
        info: &ResourceInfo,
        name: &str,
        spec_finalizers: Value,
        resource_version: Option<&str>,
        dry_run: bool,
    ) -> ApiResult<Arc<Value>> {
        let old = self.get(info, "", name)?;
        if resource_version.is_some_and(|rv| meta_str(&old, "resourceVersion") != Some(rv)) {
            return Err(ApiError::stale(info, name));
        }
        let mut new = (*old).clone();
        // No list, or an empty one (which the real server does not store either).
        if spec_finalizers.as_array().is_none_or(Vec::is_empty) {
            if let Some(spec) = new["spec"].as_object_mut() {
                spec.remove("finalizers");
            }
        } else {
            new["spec"]["finalizers"] = spec_finalizers;
        }
        if new == *old {
            return Ok(old);
        }
        if dry_run {
            return Ok(Arc::new(new));
        }
        let none_left = new["spec"]["finalizers"]
            .as_array()
            .is_none_or(Vec::is_empty)
            && finalizers(&new).is_empty();
        if meta(&new).get("deletionTimestamp").is_some() && none_left {
            self.write(info, EventType::Deleted, new.clone(), Some(old));
            return Ok(Arc::new(new));
        }
        Ok(self.write(info, EventType::Modified, new, Some(old)))
    }

    /// Deletes `name`, or marks it for deletion when finalizers (its own, or those the
    /// propagation policy adds) must run first.
    pub fn delete(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        req: &DeleteRequest,
    ) -> ApiResult<Deleted> {
        if info.builtin && crate::kinds::is_system_priority_class(info, name) {
            let message = format!(
                "{} \"{name}\" is forbidden: this is a system priority class and cannot be deleted",
                info.qualified()
            );
            return Err(ApiError::new(403, "Forbidden", message)
                .with_details(json!({"name": name, "group": info.group, "kind": info.plural})));
        }
        let old = self.get(info, ns, name)?;
        let check = |label: &str, want: &Option<String>, field: &str| match want {
            Some(want) if meta_str(&old, field) != Some(want.as_str()) => {
                Err(ApiError::precondition_failed(
                    info,
                    name,
                    label,
                    want,
                    meta_str(&old, field).unwrap_or(""),
                ))
            }
            _ => Ok(()),
        };
        check("UID", &req.uid, "uid")?;
        check("ResourceVersion", &req.resource_version, "resourceVersion")?;
        let mut fins = finalizers(&old);
        let added = match req.propagation.as_deref() {
            Some("Foreground") => Some(FOREGROUND),
            Some("Orphan") => Some(ORPHAN),
            _ => None,
        };
        if let Some(f) = added
            && !fins.iter().any(|x| x == f)
            && meta(&old).get("deletionTimestamp").is_none()
        {
            fins.push(f.to_string());
        }
        // A namespace always waits for its content to be deleted first.
        let is_namespace = info.builtin && info.plural == "namespaces";
        let result = if fins.is_empty() && !is_namespace {
            self.write(info, EventType::Deleted, (*old).clone(), Some(old.clone()));
            Deleted::Gone(old)
        } else if meta(&old).get("deletionTimestamp").is_some() {
            // A policy given again switches the garbage collector's finalizer, as the real
            // server's graceful deletion does.
            let mut switched = fins.clone();
            match req.propagation.as_deref() {
                Some("Foreground") => switched.retain(|f| f != ORPHAN),
                Some("Orphan") => switched.retain(|f| f != FOREGROUND),
                Some(_) => switched.retain(|f| f != ORPHAN && f != FOREGROUND),
                None => {}
            }
            if let Some(f) = added
                && !switched.iter().any(|x| x == f)
            {
                switched.push(f.to_string());
            }
            if switched == fins {
                Deleted::Pending(old)
            } else if switched.is_empty() && !is_namespace {
                self.write(info, EventType::Deleted, (*old).clone(), Some(old.clone()));
                Deleted::Gone(old)
            } else {
                let mut marked = (*old).clone();
                set_finalizers(&mut marked, &switched);
                Deleted::Pending(self.write(info, EventType::Modified, marked, Some(old)))
            }
        } else {
            let mut marked = (*old).clone();
            set_finalizers(&mut marked, &fins);
            let m = meta_mut(&mut marked);
            m.insert("deletionTimestamp".into(), json!(now()));
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
            if let Some(g) = m.get("generation").and_then(Value::as_i64) {
                m.insert("generation".into(), json!(g + 1));
            }
            if is_namespace {
                marked["status"] = json!({"phase": "Terminating"});
            }
            Deleted::Pending(self.write(info, EventType::Modified, marked, Some(old)))
        };
        if info.group == "apiextensions.k8s.io"
            && let Deleted::Gone(crd) = &result
            && let Ok(defined) = resources::from_crd(crd)
        {
            self.resources
                .retain(|r| !(r.group == defined.group && r.plural == defined.plural));
            self.tables.remove(&(defined.group, defined.plural));
        }
        self.collect_garbage();
        Ok(result)
    }

    /// The LimitRanger admission plugin on `obj`, a Pod or PersistentVolumeClaim `name`
    /// being created in `ns` (see `limit_ranges`): its defaults set, or the real server's
    /// `403` for what breaches the namespace's LimitRanges.
    fn limit_ranges_admit(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        obj: &mut Value,
    ) -> ApiResult<()> {
        let Some(limit_ranges) = self.lookup("", "v1", "limitranges") else {
            return Ok(());
        };
        let ranges: Vec<Value> = self
            .table_ref(&limit_ranges)
            .map(|t| {
                t.objects
                    .iter()
                    .filter(|((namespace, _), _)| namespace == ns)
                    .map(|(_, lr)| (**lr).clone())
                    .collect()
            })
            .unwrap_or_default();
        if ranges.is_empty() {
            return Ok(());
        }
        let breaches = crate::limit_ranges::admit(&info.kind, obj, &ranges);
        if breaches.is_empty() {
            return Ok(());
        }
        let message = format!(
            "{} \"{name}\" is forbidden: {}",
            info.qualified(),
            crate::limit_ranges::refusal(&breaches)
        );
        Err(ApiError::new(403, "Forbidden", message)
            .with_details(json!({"kind": info.plural, "name": name})))
    }

    /// The stored PriorityClasses.
    fn priority_classes(&self) -> Vec<Value> {
        self.lookup("scheduling.k8s.io", "v1", "priorityclasses")
            .and_then(|info| {
                self.table_ref(&info)
                    .map(|t| t.objects.values().map(|c| (**c).clone()).collect())
            })
            .unwrap_or_default()
    }

    /// The ResourceQuotas of namespace `ns`.
    fn quotas_in(&self, ns: &str) -> Vec<Value> {
        let Some(quotas) = self.lookup("", "v1", "resourcequotas") else {
            return Vec::new();
        };
        self.table_ref(&quotas)
            .map(|t| {
                t.objects
                    .iter()
                    .filter(|((namespace, _), _)| namespace == ns)
                    .map(|(_, q)| (**q).clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every object of namespace `ns`, with its resource.
    fn objects_in(&self, ns: &str) -> Vec<(ResourceInfo, Arc<Value>)> {
        self.all_objects()
            .into_iter()
            .filter(|(info, o)| info.namespaced && meta_str(o, "namespace") == Some(ns))
            .collect()
    }

    /// The ResourceQuota admission plugin on `obj`, `name` of `info` being created in
    /// `ns` (`old` is `None`) or replacing `old` (see `quotas`): the real server's `403`
    /// when a quota of the namespace refuses it.
    fn quotas_admit(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        obj: &Value,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        if !info.namespaced || !self.holds_any("", "resourcequotas") {
            return Ok(());
        }
        let quotas = self.quotas_in(ns);
        match crate::quotas::refusal(info, obj, old, &quotas) {
            None => Ok(()),
            Some(why) => {
                let message = format!("{} \"{name}\" is forbidden: {why}", info.qualified());
                Err(ApiError::new(403, "Forbidden", message)
                    .with_details(json!({"kind": info.plural, "name": name})))
            }
        }
    }

    /// Brings the status of namespace `ns`'s ResourceQuotas up to date with its objects,
    /// as kube-controller-manager's quota controller does.
    fn refresh_quotas(&mut self, ns: &str) {
        let Some(info) = self.lookup("", "v1", "resourcequotas") else {
            return;
        };
        let quotas = self.quotas_in(ns);
        if quotas.is_empty() {
            return;
        }
        let objects = self.objects_in(ns);
        // The status writes change no usage: they need no refresh of their own.
        self.refreshing_quotas = true;
        for quota in quotas {
            let status = crate::quotas::status(&quota, &objects);
            if quota["status"] != status {
                let old = Arc::new(quota.clone());
                let mut updated = quota;
                updated["status"] = status;
                self.write(&info, EventType::Modified, updated, Some(old));
            }
        }
        self.refreshing_quotas = false;
    }

    /// The cluster IPs and node ports the stored Services hold.
    fn allocated_to_services(&self, services: &ResourceInfo) -> (Vec<String>, Vec<i64>) {
        let all: Vec<&Arc<Value>> = self
            .table_ref(services)
            .map(|t| t.objects.values().collect())
            .unwrap_or_default();
        let ips = all
            .iter()
            .filter_map(|s| s["spec"]["clusterIP"].as_str().map(str::to_string))
            .collect();
        let ports = all
            .iter()
            .flat_map(|s| s["spec"]["ports"].as_array().into_iter().flatten())
            .filter_map(|p| p["nodePort"].as_i64())
            .collect();
        (ips, ports)
    }

    /// Every object of every resource, with its resource.
    fn all_objects(&self) -> Vec<(ResourceInfo, Arc<Value>)> {
        self.resources
            .iter()
            .filter_map(|info| self.table_ref(info).map(|t| (info, t)))
            .flat_map(|(info, t)| t.objects.values().map(move |o| (info.clone(), o.clone())))
            .collect()
    }

    /// What kube-controller-manager's garbage collector and namespace controller do, at
    /// once: deletes objects whose owners are all gone, empties namespaces and objects
    /// being deleted in the foreground, orphans the dependents of objects deleted with
    /// `Orphan`, and removes their finalizers when done. Runs until nothing changes.
    fn collect_garbage(&mut self) {
        if !self.own_garbage_collection || std::mem::replace(&mut self.collecting, true) {
            return;
        }
        self.collect_garbage_steps();
        self.collecting = false;
    }

    /// Turns the store's own garbage collection and namespace emptying on (the default) or
    /// off, for a kube-controller-manager running beside it to do them as in a cluster.
    pub(crate) fn set_own_garbage_collection(&mut self, on: bool) {
        self.own_garbage_collection = on;
        self.collect_garbage();
    }

    /// The loop of [`collect_garbage`](Self::collect_garbage).
    fn collect_garbage_steps(&mut self) {
        loop {
            let all = self.all_objects();
            let uids: HashSet<&str> = all.iter().filter_map(|(_, o)| meta_str(o, "uid")).collect();
            let terminating: HashMap<&str, Vec<String>> = all
                .iter()
                .filter(|(_, o)| meta(o).get("deletionTimestamp").is_some())
                .filter_map(|(_, o)| Some((meta_str(o, "uid")?, finalizers(o))))
                .collect();
            let terminating_ns: HashSet<&str> = all
                .iter()
                .filter(|(i, o)| {
                    i.builtin
                        && i.plural == "namespaces"
                        && meta(o).get("deletionTimestamp").is_some()
                })
                .filter_map(|(_, o)| meta_str(o, "name"))
                .collect();
            let action = all.iter().find_map(|(info, obj)| {
                let owners = owner_uids(obj);
                let pending = meta(obj).get("deletionTimestamp").is_some();
                let in_dying_ns = info.namespaced
                    && meta_str(obj, "namespace").is_some_and(|ns| terminating_ns.contains(ns));
                let gc_owner = !owners.is_empty() && owners.iter().all(|u| !uids.contains(u));
                let owner_finalizing = |finalizer: &str| {
                    owners.iter().copied().find(|u| {
                        terminating
                            .get(u)
                            .is_some_and(|f| f.iter().any(|f| f == finalizer))
                    })
                };
                let uid = meta_str(obj, "uid").unwrap_or("");
                let has_dependents = || all.iter().any(|(_, d)| owner_uids(d).contains(&uid));
                let own_finalizer = [FOREGROUND, ORPHAN]
                    .into_iter()
                    .find(|f| finalizers(obj).iter().any(|x| x == f));
                let action = if let Some(owner) = owner_finalizing(ORPHAN) {
                    Action::Disown(owner.to_string())
                } else if !pending
                    && (gc_owner || in_dying_ns || owner_finalizing(FOREGROUND).is_some())
                {
                    Action::Delete
                } else if pending
                    && let Some(finalizer) = own_finalizer
                    && !has_dependents()
                {
                    Action::Finish(finalizer)
                } else if pending
                    && info.builtin
                    && info.plural == "namespaces"
                    && finalizers(obj).is_empty()
                    && !all.iter().any(|(i, o)| {
                        i.namespaced && meta_str(o, "namespace") == meta_str(obj, "name")
                    })
                {
                    Action::Remove
                } else {
                    return None;
                };
                Some((info.clone(), obj.clone(), action))
            });
            let Some((info, obj, action)) = action else {
                return;
            };
            let ns = meta_str(&obj, "namespace").unwrap_or("").to_string();
            let name = meta_str(&obj, "name").unwrap_or("").to_string();
            match action {
                Action::Delete => {
                    let _ = self.delete(&info, &ns, &name, &DeleteRequest::default());
                }
                Action::Remove => {
                    self.write(&info, EventType::Deleted, (*obj).clone(), Some(obj));
                }
                Action::Finish(finalizer) => {
                    let mut done = (*obj).clone();
                    let rest: Vec<String> = finalizers(&obj)
                        .into_iter()
                        .filter(|f| f != finalizer)
                        .collect();
                    set_finalizers(&mut done, &rest);
                    let _ = self.update(&info, &ns, &name, done, false, None);
                }
                Action::Disown(owner) => {
                    let mut disowned = (*obj).clone();
                    if let Some(refs) = disowned["metadata"]["ownerReferences"].as_array_mut() {
                        refs.retain(|r| r["uid"].as_str() != Some(owner.as_str()));
                        if refs.is_empty() {
                            meta_mut(&mut disowned).remove("ownerReferences");
                        }
                    }
                    let _ = self.update(&info, &ns, &name, disowned, false, None);
                }
            }
        }
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

/// One step of garbage collection.
enum Action {
    /// Delete the object (its owners are gone, or being deleted in the foreground, or its
    /// namespace is being deleted).
    Delete,
    /// Remove an emptied namespace.
    Remove,
    /// Remove this finalizer: the dependents it waited for are gone or orphaned.
    Finish(&'static str),
    /// Remove the owner reference to this uid (its owner is deleted with `Orphan`).
    Disown(String),
}

fn key_of(obj: &Value) -> Key {
    (
        meta_str(obj, "namespace").unwrap_or("").to_string(),
        meta_str(obj, "name").unwrap_or("").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm_info(store: &Store) -> ResourceInfo {
        store.lookup("", "v1", "configmaps").unwrap()
    }

    fn setup() -> (Store, ResourceInfo) {
        let mut s = Store::new();
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        s.create(&ns, "", json!({"metadata": {"name": "ns"}}), None)
            .unwrap();
        let cm = cm_info(&s);
        (s, cm)
    }

    #[test]
    fn an_exact_snapshot_undoes_later_changes() {
        let (mut s, cm) = setup();
        s.create(
            &cm,
            "ns",
            json!({"metadata": {"name": "a"}, "data": {"k": "1"}}),
            None,
        )
        .unwrap();
        let at = s.resource_version();
        s.update(
            &cm,
            "ns",
            "a",
            json!({"metadata": {"name": "a"}, "data": {"k": "2"}}),
            false,
            None,
        )
        .unwrap();
        s.create(&cm, "ns", json!({"metadata": {"name": "b"}}), None)
            .unwrap();
        let (rv, objs) = s.snapshot(&cm, Some("ns"), Some(at)).unwrap();
        assert_eq!(rv, at);
        assert_eq!(objs.len(), 1);
        assert_eq!(objs[0]["data"]["k"], "1");
        s.compact();
        assert_eq!(s.snapshot(&cm, Some("ns"), Some(at)).unwrap_err().code, 410);
    }

    /// Creates `cm-0` … `cm-<n-1>` in `ns`.
    fn create_configmaps(s: &mut Store, cm: &ResourceInfo, n: usize) {
        for i in 0..n {
            let obj = json!({"metadata": {"name": format!("cm-{i}")}});
            s.create(cm, "ns", obj, None).unwrap();
        }
    }

    #[test]
    fn history_beyond_the_limit_expires_old_resource_versions() {
        let (mut s, cm) = setup();
        let start = s.resource_version();
        create_configmaps(&mut s, &cm, HISTORY_LIMIT + 1);
        assert_eq!(s.events_after(&cm, start).unwrap_err().code, 410);
        assert_eq!(s.events_after(&cm, start + 1).unwrap().len(), HISTORY_LIMIT);
    }

    #[test]
    fn deleting_a_namespace_of_many_objects_collects_every_one() {
        let (mut s, cm) = setup();
        create_configmaps(&mut s, &cm, 1_000);
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        s.delete(&ns, "", "ns", &DeleteRequest::default()).unwrap();
        assert!(s.snapshot(&cm, Some("ns"), None).unwrap().1.is_empty());
        assert_eq!(s.get(&ns, "", "ns").unwrap_err().code, 404);
    }

    #[test]
    fn a_namespace_held_by_its_own_finalizer_goes_once_it_is_removed() {
        let mut s = Store::new();
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
        s.create(&ns, "", held, None).unwrap();
        s.delete(&ns, "", "held", &DeleteRequest::default())
            .unwrap();
        let mut terminating = (*s.get(&ns, "", "held").unwrap()).clone();
        assert_eq!(terminating["status"]["phase"], "Terminating");
        terminating["metadata"]["finalizers"] = json!([]);
        s.update(&ns, "", "held", terminating, false, None).unwrap();
        assert_eq!(s.get(&ns, "", "held").unwrap_err().code, 404);
    }

    #[test]
    fn without_its_own_collection_a_namespace_waits_for_finalize() {
        let (mut s, cm) = setup();
        s.set_own_garbage_collection(false);
        create_configmaps(&mut s, &cm, 1);
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        s.delete(&ns, "", "ns", &DeleteRequest::default()).unwrap();
        assert_eq!(s.snapshot(&cm, Some("ns"), None).unwrap().1.len(), 1);
        s.delete(&cm, "ns", "cm-0", &DeleteRequest::default())
            .unwrap();
        assert_eq!(
            s.get(&ns, "", "ns").unwrap()["status"]["phase"],
            "Terminating"
        );
        s.finalize_namespace(&ns, "ns", json!([]), None, false)
            .unwrap();
        assert_eq!(s.get(&ns, "", "ns").unwrap_err().code, 404);
    }

    #[test]
    fn crds_that_would_break_the_server_are_refused_as_invalid() {
        let mut s = Store::new();
        let crds = s
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .unwrap();
        let crd = |group: &str, plural: &str, versions: Value| {
            json!({
                "metadata": {"name": format!("{plural}.{group}")},
                "spec": {"group": group, "scope": "Namespaced", "versions": versions,
                         "names": {"plural": plural, "kind": "Thing"}},
            })
        };
        let unnamed = json!([{"served": true}, {"name": "v1", "served": true, "storage": true}]);
        let schema = json!({"openAPIV3Schema": {"type": "object"}});
        let one = json!([{"name": "v1", "served": true, "storage": true, "schema": schema}]);
        for (obj, why) in [
            (
                crd("example.com", "things", unnamed),
                "spec.versions[0].name",
            ),
            (crd("", "namespaces", one.clone()), "spec.group"),
            (crd("apps", "deployments", one.clone()), "spec.group"),
            (
                crd("coordination.k8s.io", "leases", one),
                "built-in resource",
            ),
        ] {
            let refused = s.create(&crds, "", obj, None).unwrap_err();
            assert_eq!(refused.code, 422);
            assert!(refused.message.contains(why), "{}", refused.message);
        }
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        s.create(&ns, "", json!({"metadata": {"name": "still-served"}}), None)
            .unwrap();
    }

    #[test]
    fn an_update_that_changes_nothing_keeps_the_resource_version() {
        let (mut s, cm) = setup();
        let a = s
            .create(&cm, "ns", json!({"metadata": {"name": "a"}}), None)
            .unwrap();
        let same = s.update(&cm, "ns", "a", (*a).clone(), false, None).unwrap();
        assert_eq!(a, same);
    }
}
