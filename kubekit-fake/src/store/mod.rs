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
//!
//! # Writes
//!
//! A create or update goes through the phases of kube-apiserver's registry strategies,
//! each a function of its own, in the order the real server checks (which decides the
//! error a request with two problems gets): it is prepared (its name generated, the
//! metadata the server sets), validated, admitted by the admission plugins built in, and
//! stored (the table write, its event, and the side effects: garbage collection, a
//! Service's addresses, a CRD's resource served). The modules:
//!
//! - `strategy`: what create and update share: the [`Prepared`] write between its phases
//!   and its commit, the recording of managed fields, the validation both end with;
//! - `validate`: the rules of names, of a custom resource's type meta and of CRDs' CEL
//!   rules;
//! - `create` and `update`: the phases of each, and their commits;
//! - `admit`: the admission plugins NamespaceLifecycle, PriorityClass and LimitRanger;
//! - `quotas`: ResourceQuota's admission, and its usage kept up to date after each write;
//! - `delete`: deletion with preconditions and propagation policies, and a namespace's
//!   `finalize`;
//! - `garbage`: finalizers, and garbage collection through `ownerReferences`.

mod admit;
mod create;
mod delete;
mod garbage;
mod quotas;
mod strategy;
mod update;
mod validate;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::events;
use crate::resources::{self, ResourceInfo};
use crate::status::{ApiError, ApiResult};

pub use delete::{DeleteRequest, Deleted};
pub(crate) use strategy::Prepared;
pub(crate) use validate::path_segment;

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

    /// Every object of every resource, with its resource.
    fn all_objects(&self) -> Vec<(ResourceInfo, Arc<Value>)> {
        self.resources
            .iter()
            .filter_map(|info| self.table_ref(info).map(|t| (info, t)))
            .flat_map(|(info, t)| t.objects.values().map(move |o| (info.clone(), o.clone())))
            .collect()
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

fn key_of(obj: &Value) -> Key {
    (
        meta_str(obj, "namespace").unwrap_or("").to_string(),
        meta_str(obj, "name").unwrap_or("").to_string(),
    )
}

/// What the tests of the store's modules start from.
#[cfg(test)]
mod testing {
    use serde_json::json;

    use super::Store;
    use crate::resources::ResourceInfo;

    /// A store with the namespace `ns`, and the ConfigMaps' resource.
    pub(super) fn setup() -> (Store, ResourceInfo) {
        let mut s = Store::new();
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        s.create(&ns, "", json!({"metadata": {"name": "ns"}}), None)
            .unwrap();
        let cm = s.lookup("", "v1", "configmaps").unwrap();
        (s, cm)
    }

    /// Creates `cm-0` … `cm-<n-1>` in `ns`.
    pub(super) fn create_configmaps(s: &mut Store, cm: &ResourceInfo, n: usize) {
        for i in 0..n {
            let obj = json!({"metadata": {"name": format!("cm-{i}")}});
            s.create(cm, "ns", obj, None).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{create_configmaps, setup};
    use super::*;

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

    #[test]
    fn history_beyond_the_limit_expires_old_resource_versions() {
        let (mut s, cm) = setup();
        let start = s.resource_version();
        create_configmaps(&mut s, &cm, HISTORY_LIMIT + 1);
        assert_eq!(s.events_after(&cm, start).unwrap_err().code, 410);
        assert_eq!(s.events_after(&cm, start + 1).unwrap().len(), HISTORY_LIMIT);
    }
}
