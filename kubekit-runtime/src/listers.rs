//! Listers: read-only, typed views of an informer's cache (client-go's `listers`).
//!
//! # Contract
//!
//! - A lister reads the [`Indexer`] directly and returns the cache's own `Arc`s: nothing
//!   is copied and nothing is sent to the server. What it returns is as fresh as the
//!   informer; check the informer has synced before trusting an absence.
//! - [`Lister::get`] and [`NamespaceLister::get`] report a missing object with the same
//!   error the API server gives ([`Error::is_not_found`](kubekit_client::rest::Error::is_not_found)
//!   is true), so code can move between a lister and a client unchanged;
//!   [`Lister::get_opt`] and [`NamespaceLister::get_opt`] give `Ok(None)` instead, as
//!   [`ResourceClient::get_opt`](kubekit_client::clientset::ResourceClient::get_opt) does.
//! - Namespaced listing uses the namespace index; it never scans the whole cache.
//!
//! ```no_run
//! # fn demo(lister: kubekit::listers::Lister<k8s_openapi::api::core::v1::Pod>) -> Result<(), Box<dyn std::error::Error>> {
//! use kubekit::labels::Selector;
//!
//! let web = lister.namespaced("demo").list(&"app=web".parse()?);
//! let pod = lister.namespaced("demo").get("web-0")?;
//! let all = lister.list(&Selector::everything());
//! # let _ = (web, pod, all);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::Arc;

use kube::Resource;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::cache::{CONTROLLER_UID_INDEX, Indexer, NAMESPACE_INDEX, meta_ref};
use kubekit_client::labels::Selector;
use kubekit_client::meta::GroupVersionResource;
use kubekit_client::metadata::PartialObjectMetadata;
use kubekit_client::rest::Error;

/// A lister over the metadata of objects (client-go's `metadatalister`), from
/// [`SharedInformerFactory::for_metadata`](crate::informers::SharedInformerFactory::for_metadata).
pub type MetadataLister = Lister<PartialObjectMetadata>;

/// A lister over every object of an informer; see the [module docs](self).
pub struct Lister<K> {
    indexer: Arc<Indexer<K>>,
    gvr: Arc<GroupVersionResource>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: self.indexer.clone(),
            gvr: self.gvr.clone(),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("resource", &self.gvr.to_string())
            .finish_non_exhaustive()
    }
}

fn select<K: Resource + 'static>(objects: Vec<Arc<K>>, selector: &Selector) -> Vec<Arc<K>> {
    if selector.is_empty() {
        return objects;
    }
    objects
        .into_iter()
        .filter(|o| selector.matches(&meta_ref(&**o)))
        .collect()
}

impl<K: Resource + 'static> Lister<K> {
    /// A lister of `gvr` (used in not-found errors) over `indexer`.
    pub fn new(indexer: Arc<Indexer<K>>, gvr: GroupVersionResource) -> Self {
        Self {
            indexer,
            gvr: Arc::new(gvr),
        }
    }

    /// Every cached object whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        select(self.indexer.list(), selector)
    }

    /// A cluster-scoped object by name (for namespaced objects use
    /// [`namespaced`](Self::namespaced)).
    pub fn get(&self, name: &str) -> Result<Arc<K>, Error> {
        self.indexer
            .get(name)
            .ok_or_else(|| Error::not_found(&self.gvr.group, &self.gvr.resource, name))
    }

    /// A cluster-scoped object by name, `None` when the cache has none (the shape of
    /// [`get`](Self::get) that code reading an optional object wants).
    pub fn get_opt(&self, name: &str) -> Result<Option<Arc<K>>, Error> {
        kubekit_client::rest::error::found(self.get(name))
    }

    /// The cached objects whose index `index_name` has `value` (client-go's
    /// `Indexer.ByIndex`): a secondary index added to the informer
    /// ([`SharedIndexInformer::add_indexers`](crate::cache::SharedIndexInformer::add_indexers)),
    /// read without scanning the cache. An index that was never added is an error.
    pub fn by_index(
        &self,
        index_name: &str,
        value: &str,
    ) -> Result<Vec<Arc<K>>, crate::cache::Error> {
        self.indexer.by_index(index_name, value)
    }

    /// The cached objects whose controller is `owner` (the ownerReference marked
    /// `controller` has its uid; `metav1.IsControlledBy`): read from the
    /// [`CONTROLLER_UID_INDEX`] when the informer has it (a manager's controller adds it to
    /// the types it `kubekit::manager::ControllerBuilder::owns`), else by scanning
    /// the cache.
    pub fn controlled_by(&self, owner: &ObjectMeta) -> Vec<Arc<K>> {
        let uid = owner.uid.as_deref().unwrap_or_default();
        if uid.is_empty() {
            return Vec::new(); // an object not yet stored controls nothing
        }
        match self.indexer.by_index(CONTROLLER_UID_INDEX, uid) {
            Ok(objects) => objects,
            Err(_) => (self.indexer.list().into_iter())
                .filter(|o| meta_ref(&**o).controller().is_some_and(|r| r.uid == uid))
                .collect(),
        }
    }

    /// The objects of one namespace.
    pub fn namespaced(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            lister: self.clone(),
            namespace: namespace.to_string(),
        }
    }
}

/// A lister over one namespace; see the [module docs](self).
pub struct NamespaceLister<K> {
    lister: Lister<K>,
    namespace: String,
}

impl<K> fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("resource", &self.lister.gvr.to_string())
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + 'static> NamespaceLister<K> {
    /// The namespace's cached objects whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let objects = self
            .lister
            .indexer
            .by_index(NAMESPACE_INDEX, &self.namespace)
            .unwrap_or_default();
        select(objects, selector)
    }

    /// The object `name` of this namespace.
    pub fn get(&self, name: &str) -> Result<Arc<K>, Error> {
        let gvr = &self.lister.gvr;
        self.lister
            .indexer
            .get(&format!("{}/{name}", self.namespace))
            .ok_or_else(|| Error::not_found(&gvr.group, &gvr.resource, name))
    }

    /// The object `name` of this namespace, `None` when the cache has none.
    pub fn get_opt(&self, name: &str) -> Result<Option<Arc<K>>, Error> {
        kubekit_client::rest::error::found(self.get(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::collections::BTreeMap;

    fn cm(ns: &str, name: &str, app: &str) -> Arc<ConfigMap> {
        let mut c = ConfigMap::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some(name.into());
        c.metadata.labels = Some(BTreeMap::from([("app".into(), app.into())]));
        Arc::new(c)
    }

    fn lister() -> Lister<ConfigMap> {
        let indexer = Arc::new(Indexer::new());
        for (ns, name, app) in [("a", "one", "web"), ("a", "two", "db"), ("b", "one", "web")] {
            indexer.add(cm(ns, name, app)).unwrap();
        }
        Lister::new(indexer, GroupVersionResource::new("", "v1", "configmaps"))
    }

    #[test]
    fn list_filters_by_selector_and_namespace() {
        let l = lister();
        assert_eq!(l.list(&Selector::everything()).len(), 3);
        assert_eq!(l.list(&"app=web".parse().unwrap()).len(), 2);
        let in_a = l.namespaced("a").list(&"app=web".parse().unwrap());
        assert_eq!(in_a.len(), 1);
        assert_eq!(in_a[0].metadata.name.as_deref(), Some("one"));
        assert!(l.namespaced("c").list(&Selector::everything()).is_empty());
    }

    #[test]
    fn controlled_by_finds_the_owners_children_with_or_without_the_controller_uid_index() {
        use crate::cache::controller_uid_index;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

        let l = lister();
        let owner = |uid: &str, controller| OwnerReference {
            uid: uid.into(),
            controller: Some(controller),
            ..Default::default()
        };
        for (name, owner) in [
            ("child", owner("uid-1", true)),
            ("other-child", owner("uid-2", true)),
            ("not-controlled", owner("uid-1", false)),
        ] {
            let mut c = ConfigMap::clone(&cm("a", name, "web"));
            c.metadata.owner_references = Some(vec![owner]);
            l.indexer.add(Arc::new(c)).unwrap();
        }
        let app = ObjectMeta {
            uid: Some("uid-1".into()),
            ..Default::default()
        };
        let names = |l: &Lister<ConfigMap>| -> Vec<_> {
            let children = l.controlled_by(&app);
            children
                .iter()
                .map(|c| c.metadata.name.clone().unwrap())
                .collect()
        };
        assert_eq!(names(&l), ["child"], "scanned");
        l.indexer.add_indexers([controller_uid_index()]).unwrap();
        assert_eq!(names(&l), ["child"], "indexed");
        let nobody = ObjectMeta::default();
        assert!(
            l.controlled_by(&nobody).is_empty(),
            "an owner without uid controls nothing"
        );
    }

    #[test]
    fn by_index_reads_a_secondary_index_and_refuses_an_unknown_one() {
        let l = lister();
        let by_app: crate::cache::IndexFunc<ConfigMap> = Arc::new(|c: &ConfigMap| {
            let labels = c.metadata.labels.iter().flatten();
            labels
                .filter(|(k, _)| *k == "app")
                .map(|(_, v)| v.clone())
                .collect()
        });
        l.indexer
            .add_indexers([("app".to_string(), by_app)])
            .unwrap();
        let mut web: Vec<_> = (l.by_index("app", "web").unwrap().iter())
            .map(|c| c.metadata.namespace.clone().unwrap_or_default())
            .collect();
        web.sort();
        assert_eq!(web, ["a", "b"]);
        assert!(l.by_index("app", "none").unwrap().is_empty());
        assert_eq!(
            l.by_index("owner", "x").unwrap_err(),
            crate::cache::Error::UnknownIndex("owner".into())
        );
    }

    #[test]
    fn get_returns_the_cached_arc_and_not_found_like_the_api() {
        let l = lister();
        let first = l.namespaced("b").get("one").unwrap();
        let second = l.namespaced("b").get("one").unwrap();
        assert!(Arc::ptr_eq(&first, &second), "no copy is made");
        let err = l.namespaced("b").get("two").unwrap_err();
        assert!(err.is_not_found());
        assert!(
            err.to_string().contains("configmaps \"two\" not found"),
            "{err}"
        );
        assert!(l.get("one").unwrap_err().is_not_found());
    }

    #[test]
    fn get_opt_gives_none_for_a_missing_object_and_the_cached_arc_for_a_present_one() {
        let l = lister();
        let got = l.namespaced("b").get_opt("one").unwrap();
        let cached = l.namespaced("b").get("one").unwrap();
        assert!(got.is_some_and(|got| Arc::ptr_eq(&got, &cached)));
        assert!(l.namespaced("b").get_opt("two").unwrap().is_none());
        assert!(l.namespaced("c").get_opt("one").unwrap().is_none());
        assert!(
            l.get_opt("one").unwrap().is_none(),
            "namespaced, not cluster-scoped"
        );
    }

    #[cfg(feature = "compact")]
    #[test]
    fn the_cache_reads_compact_metadata_without_building_an_object_meta() {
        use crate::cache::{
            Compact, Indexer, controller_uid_index, meta_namespace_key, strip_managed_fields,
        };
        use k8s_openapi::api::core::v1::Pod;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        use kubekit_client::meta::GroupVersionResource;
        use kubekit_protobuf::DecodeOptions;

        const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"demo","uid":"u1","resourceVersion":"42","labels":{"app":"web"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u0","controller":true}],"managedFields":[{"manager":"kubectl","operation":"Update"}]},"spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;
        // A Pod as kube-apiserver sends it in protobuf: the message, without envelope.
        let message_of = |json: &str| {
            let pod: Pod = serde_json::from_str(json).unwrap();
            let bytes = kubekit_protobuf::encode(&pod);
            kubekit_protobuf::Unknown::read(&bytes)
                .unwrap()
                .raw
                .to_vec()
        };
        let skip = DecodeOptions {
            skip_managed_fields: true,
        };
        let pods: Vec<Arc<Compact<Pod>>> = ["web", "db"]
            .map(|name| {
                let json = POD.replace(r#""name":"web""#, &format!(r#""name":"{name}""#));
                let json = json.replace(r#""app":"web""#, &format!(r#""app":"{name}""#));
                let pod = Compact::from_protobuf(&message_of(&json), skip).unwrap();
                Arc::new(strip_managed_fields(pod))
            })
            .into();
        let indexer = Arc::new(Indexer::new());
        indexer.add_indexers([controller_uid_index()]).unwrap();
        for pod in &pods {
            indexer.add(Arc::clone(pod)).unwrap();
        }
        let lister = Lister::new(indexer, GroupVersionResource::of::<Pod>());
        let selected = lister.namespaced("demo").list(&"app=db".parse().unwrap());
        assert_eq!(meta_namespace_key(&*selected[0]).unwrap(), "demo/db");
        let owner = ObjectMeta {
            uid: Some("u0".into()),
            ..Default::default()
        };
        assert_eq!(lister.controlled_by(&owner).len(), 2);
        assert!(
            pods.iter().all(|p| !p.has_object_meta()),
            "the transform, keys, indexes, selectors and owners read the packed metadata"
        );
        let name = pods[0].meta().name.clone();
        assert_eq!(name.as_deref(), Some("web"), "an ObjectMeta on demand");
    }
}
