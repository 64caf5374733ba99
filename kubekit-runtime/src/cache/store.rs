//! [`Indexer`]: the informer's local cache — a thread-safe map from key to object, with
//! named secondary indexes (client-go's `ThreadSafeStore` + `Indexer`).
//!
//! # Contract
//!
//! - Objects are stored as `Arc<K>` and handed out as clones of the same `Arc`: reading the
//!   cache never copies an object.
//! - Every write updates every index in the same critical section, so a reader never sees
//!   an object without its index entries or the reverse. Locks are held only for the map
//!   operations, never across `.await`.
//! - An index function maps an object to zero or more index values; [`Indexer::by_index`]
//!   returns the objects with a given value. The namespace index ([`NAMESPACE_INDEX`]) is
//!   built in. Index values whose last object is removed are dropped, so indexes do not
//!   grow with churn.
//! - Indexes can be added at any time ([`Indexer::add_indexers`]); existing objects are
//!   indexed at once. Adding a name twice is an error.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kubekit::cache::{Indexer, IndexFunc};
//!
//! let store = Indexer::<Pod>::new();
//! let by_node: IndexFunc<Pod> = Arc::new(|p: &Pod| {
//!     p.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
//! });
//! store.add_indexers([("node".to_string(), by_node)]).unwrap();
//!
//! let mut pod = Pod::default();
//! pod.metadata.namespace = Some("demo".into());
//! pod.metadata.name = Some("web".into());
//! pod.spec = Some(Default::default());
//! pod.spec.as_mut().unwrap().node_name = Some("node-1".into());
//! store.add(Arc::new(pod)).unwrap();
//!
//! assert_eq!(store.by_index("node", "node-1").unwrap().len(), 1);
//! assert_eq!(store.index_keys("namespace", "demo").unwrap(), ["demo/web"]);
//! ```

use hashbrown::{HashMap, HashSet};
use std::sync::Arc;

use kube::Resource;
use parking_lot::RwLock;

use super::key::{KeyError, meta_namespace_key};

/// Maps an object to its values in one index.
pub type IndexFunc<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Name of the built-in index by namespace.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Name of the index by controller uid ([`controller_uid_index`]).
pub const CONTROLLER_UID_INDEX: &str = "controller-uid";

/// The index of objects by the uid of their controller (the ownerReference marked
/// `controller`), to add to an informer: then `by_index(CONTROLLER_UID_INDEX, uid)` is
/// everything the owner with `uid` controls, read without scanning the cache
/// ([`Lister::controlled_by`](crate::listers::Lister::controlled_by) reads it). A
/// manager's controller adds it to the informer of every type it
/// `kubekit::manager::ControllerBuilder::owns`.
pub fn controller_uid_index<K: Resource + 'static>() -> (String, IndexFunc<K>) {
    let uid = |obj: &K| {
        let controller = super::meta_ref(obj).controller();
        controller.map(|r| r.uid.to_owned()).into_iter().collect()
    };
    (CONTROLLER_UID_INDEX.to_string(), Arc::new(uid))
}

/// The namespace index function: the object's namespace (none for cluster-scoped ones).
pub fn namespace_index_func<K: Resource + 'static>(obj: &K) -> Vec<String> {
    let namespace = super::meta_ref(obj).namespace();
    namespace
        .filter(|ns| !ns.is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect()
}

/// Errors of the cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No index of that name.
    #[error("index with name {0:?} does not exist")]
    UnknownIndex(String),
    /// An index of that name exists already.
    #[error("an indexer named {0:?} already exists")]
    IndexerConflict(String),
    /// The object has no key.
    #[error(transparent)]
    Key(#[from] KeyError),
}

struct Inner<K> {
    items: HashMap<String, Arc<K>>,
    indexers: HashMap<String, IndexFunc<K>>,
    /// index name → index value → keys.
    indices: HashMap<String, HashMap<String, HashSet<String>>>,
}

impl<K> Inner<K> {
    fn index_add(&mut self, key: &str, obj: &K) {
        for (name, f) in &self.indexers {
            let index = self.indices.entry(name.clone()).or_default();
            for value in f(obj) {
                index.entry(value).or_default().insert(key.to_string());
            }
        }
    }

    fn index_remove(&mut self, key: &str, obj: &K) {
        for (name, f) in &self.indexers {
            let Some(index) = self.indices.get_mut(name) else {
                continue;
            };
            for value in f(obj) {
                if let Some(keys) = index.get_mut(&value) {
                    keys.remove(key);
                    if keys.is_empty() {
                        index.remove(&value);
                    }
                }
            }
        }
    }
}

/// A thread-safe, indexed object cache; see the [module docs](self).
pub struct Indexer<K> {
    inner: RwLock<Inner<K>>,
}

impl<K> std::fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("Indexer")
            .field("len", &inner.items.len())
            .field("indexes", &inner.indexers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<K: Resource + 'static> Default for Indexer<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Resource + 'static> Indexer<K> {
    /// An empty cache with the namespace index.
    pub fn new() -> Self {
        let namespace: IndexFunc<K> = Arc::new(namespace_index_func::<K>);
        let store = Self::without_indexes();
        store
            .inner
            .write()
            .indexers
            .insert(NAMESPACE_INDEX.to_string(), namespace);
        store
    }

    /// An empty cache with no index at all.
    pub fn without_indexes() -> Self {
        Self {
            inner: RwLock::new(Inner {
                items: HashMap::new(),
                indexers: HashMap::new(),
                indices: HashMap::new(),
            }),
        }
    }

    /// Adds named indexes and indexes every object already stored. Fails, adding none, if
    /// a name is taken.
    pub fn add_indexers(
        &self,
        indexers: impl IntoIterator<Item = (String, IndexFunc<K>)>,
    ) -> Result<(), Error> {
        let new: Vec<_> = indexers.into_iter().collect();
        let mut inner = self.inner.write();
        if let Some((name, _)) = new.iter().find(|(n, _)| inner.indexers.contains_key(n)) {
            return Err(Error::IndexerConflict(name.clone()));
        }
        for (name, f) in new {
            let mut index: HashMap<String, HashSet<String>> = HashMap::new();
            for (key, obj) in &inner.items {
                for value in f(obj) {
                    index.entry(value).or_default().insert(key.clone());
                }
            }
            inner.indices.insert(name.clone(), index);
            inner.indexers.insert(name, f);
        }
        Ok(())
    }

    /// Stores `obj` under its key, replacing (and re-indexing) what was there.
    pub fn add(&self, obj: Arc<K>) -> Result<(), KeyError> {
        let key = meta_namespace_key(obj.as_ref())?;
        self.add_with_key(key, obj);
        Ok(())
    }

    /// Stores `obj` under `key`, replacing (and re-indexing) what was there; returns the
    /// previous object.
    pub fn add_with_key(&self, key: String, obj: Arc<K>) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        let old = inner.items.insert(key.clone(), obj.clone());
        if let Some(old) = &old {
            inner.index_remove(&key, old);
        }
        inner.index_add(&key, &obj);
        old
    }

    /// Removes the object stored under `key` and returns it.
    pub fn delete(&self, key: &str) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        let old = inner.items.remove(key)?;
        inner.index_remove(key, &old);
        Some(old)
    }

    /// Replaces the whole content with `items` (keyed), rebuilding every index.
    pub fn replace(&self, items: impl IntoIterator<Item = (String, Arc<K>)>) {
        let items: HashMap<String, Arc<K>> = items.into_iter().collect();
        let mut inner = self.inner.write();
        inner.items = items;
        let mut indices: HashMap<String, HashMap<String, HashSet<String>>> = HashMap::new();
        for (name, f) in &inner.indexers {
            let index = indices.entry(name.clone()).or_default();
            for (key, obj) in &inner.items {
                for value in f(obj) {
                    index.entry(value).or_default().insert(key.clone());
                }
            }
        }
        inner.indices = indices;
    }

    /// The object stored under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.inner.read().items.get(key).cloned()
    }

    /// Whether an object is stored under `key`.
    pub fn contains(&self, key: &str) -> bool {
        self.inner.read().items.contains_key(key)
    }

    /// Every object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.read().items.values().cloned().collect()
    }

    /// Every key with its object, in no particular order, read in one critical section.
    pub fn list_entries(&self) -> Vec<(String, Arc<K>)> {
        let inner = self.inner.read();
        inner
            .items
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.inner.read().items.keys().cloned().collect()
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.inner.read().items.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Objects whose index `index_name` has value `value`.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, Error> {
        let inner = self.inner.read();
        let index = Self::index_of(&inner, index_name)?;
        Ok(index
            .get(value)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| inner.items.get(k).cloned())
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Keys of the objects whose index `index_name` has value `value`.
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>, Error> {
        let inner = self.inner.read();
        let index = Self::index_of(&inner, index_name)?;
        Ok(index
            .get(value)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default())
    }

    /// Every value index `index_name` currently has.
    pub fn list_index_func_values(&self, index_name: &str) -> Result<Vec<String>, Error> {
        let inner = self.inner.read();
        Ok(Self::index_of(&inner, index_name)?
            .keys()
            .cloned()
            .collect())
    }

    /// Objects sharing at least one value of index `index_name` with `obj`.
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, Error> {
        let inner = self.inner.read();
        let f = inner
            .indexers
            .get(index_name)
            .ok_or_else(|| Error::UnknownIndex(index_name.into()))?;
        let index = Self::index_of(&inner, index_name)?;
        let keys: HashSet<&String> = f(obj)
            .iter()
            .filter_map(|v| index.get(v))
            .flatten()
            .collect();
        Ok(keys
            .into_iter()
            .filter_map(|k| inner.items.get(k).cloned())
            .collect())
    }

    fn index_of<'a>(
        inner: &'a Inner<K>,
        name: &str,
    ) -> Result<&'a HashMap<String, HashSet<String>>, Error> {
        if !inner.indexers.contains_key(name) {
            return Err(Error::UnknownIndex(name.into()));
        }
        static EMPTY: std::sync::OnceLock<HashMap<String, HashSet<String>>> =
            std::sync::OnceLock::new();
        Ok(inner
            .indices
            .get(name)
            .unwrap_or_else(|| EMPTY.get_or_init(HashMap::new)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    fn pod(ns: &str, name: &str, node: &str) -> Arc<Pod> {
        let mut p = Pod {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(Default::default()),
            ..Default::default()
        };
        p.spec.as_mut().unwrap().node_name = Some(node.into());
        Arc::new(p)
    }

    #[test]
    fn controller_uid_index_files_objects_under_their_controller_only() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let owned = |name: &str, uid: &str, controller: bool| {
            let mut p = Pod::clone(&pod("ns", name, "n"));
            p.metadata.owner_references = Some(vec![OwnerReference {
                uid: uid.into(),
                controller: Some(controller),
                ..Default::default()
            }]);
            Arc::new(p)
        };
        let store = Indexer::new();
        store.add_indexers([controller_uid_index()]).unwrap();
        store.add(owned("a", "rs-1", true)).unwrap();
        store.add(owned("b", "rs-1", false)).unwrap();
        store.add(owned("c", "rs-2", true)).unwrap();
        store.add(pod("ns", "d", "n")).unwrap();
        let names = |uid: &str| {
            let found = store.by_index(CONTROLLER_UID_INDEX, uid).unwrap();
            let mut names: Vec<_> = found
                .iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect();
            names.sort();
            names
        };
        assert_eq!(
            names("rs-1"),
            ["a"],
            "a non-controller owner does not count"
        );
        assert_eq!(names("rs-2"), ["c"]);
        store.delete("ns/c");
        assert!(names("rs-2").is_empty());
    }

    fn by_node() -> (String, IndexFunc<Pod>) {
        (
            "node".into(),
            Arc::new(|p: &Pod| {
                p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.clone())
                    .into_iter()
                    .collect()
            }),
        )
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    #[test]
    fn update_moves_the_object_between_index_values_and_drops_empty_ones() {
        let store = Indexer::new();
        store.add_indexers([by_node()]).unwrap();
        store.add(pod("a", "p1", "n1")).unwrap();
        store.add(pod("a", "p2", "n1")).unwrap();
        store.add(pod("a", "p1", "n2")).unwrap();
        assert_eq!(store.index_keys("node", "n1").unwrap(), ["a/p2"]);
        assert_eq!(store.index_keys("node", "n2").unwrap(), ["a/p1"]);
        store.delete("a/p2");
        assert_eq!(
            store.list_index_func_values("node").unwrap(),
            ["n2"],
            "n1 has no objects left"
        );
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn objects_are_shared_not_copied() {
        let store = Indexer::new();
        let p = pod("a", "p1", "n1");
        store.add(p.clone()).unwrap();
        assert!(Arc::ptr_eq(&store.get("a/p1").unwrap(), &p));
        assert!(Arc::ptr_eq(
            &store.by_index(NAMESPACE_INDEX, "a").unwrap()[0],
            &p
        ));
    }

    #[test]
    fn indexers_added_later_index_existing_objects_and_names_are_unique() {
        let store = Indexer::new();
        store.add(pod("a", "p1", "n1")).unwrap();
        store.add(pod("b", "p2", "n1")).unwrap();
        store.add_indexers([by_node()]).unwrap();
        assert_eq!(
            sorted(store.index_keys("node", "n1").unwrap()),
            ["a/p1", "b/p2"]
        );
        assert_eq!(
            store.add_indexers([by_node()]),
            Err(Error::IndexerConflict("node".into()))
        );
        assert_eq!(
            store.by_index("zone", "x").unwrap_err(),
            Error::UnknownIndex("zone".into())
        );
    }

    #[test]
    fn replace_rebuilds_every_index() {
        let store = Indexer::new();
        store.add_indexers([by_node()]).unwrap();
        store.add(pod("a", "old", "n1")).unwrap();
        store.replace([("b/new".to_string(), pod("b", "new", "n2"))]);
        assert_eq!(store.list_keys(), ["b/new"]);
        assert!(store.index_keys("node", "n1").unwrap().is_empty());
        assert_eq!(store.index_keys(NAMESPACE_INDEX, "b").unwrap(), ["b/new"]);
        assert!(store.by_index(NAMESPACE_INDEX, "a").unwrap().is_empty());
    }

    #[test]
    fn index_finds_objects_sharing_a_value_with_a_given_object() {
        let store = Indexer::new();
        store.add_indexers([by_node()]).unwrap();
        store.add(pod("a", "p1", "n1")).unwrap();
        store.add(pod("b", "p2", "n1")).unwrap();
        store.add(pod("c", "p3", "n2")).unwrap();
        let mut names: Vec<_> = store
            .index("node", &pod("z", "probe", "n1"))
            .unwrap()
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["p1", "p2"]);
    }
}
