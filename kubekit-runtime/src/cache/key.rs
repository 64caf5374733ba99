//! Key functions: how the cache names objects.
//!
//! An object's key is `namespace/name`, or `name` for cluster-scoped objects
//! ([`meta_namespace_key`]); [`split_meta_namespace_key`] takes it apart again. Deletions
//! may arrive as a [`DeletedFinalStateUnknown`] tombstone (the cache missed the delete
//! event and learned of it from a relist); [`deletion_handling_meta_namespace_key`] gives
//! the key of either form.

use std::sync::Arc;

use kube::Resource;

use super::MetaRef;

/// An object the cache knew that was deleted while the watch was down: its last known
/// state, which may be stale. Handlers receive it in place of the object on delete.
#[derive(Debug)]
pub struct DeletedFinalStateUnknown<K: ?Sized> {
    /// The object's key.
    pub key: String,
    /// The last state the cache saw.
    pub obj: Arc<K>,
}

/// An object, or a tombstone for one whose final state is unknown.
#[derive(Debug)]
pub enum MaybeTombstone<K: ?Sized> {
    /// The object as deleted.
    Object(Arc<K>),
    /// A tombstone: the object disappeared while the cache was not watching.
    Tombstone(DeletedFinalStateUnknown<K>),
}

// Clones share the object: no `K: Clone` needed.
impl<K: ?Sized> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            obj: self.obj.clone(),
        }
    }
}

impl<K: ?Sized> Clone for MaybeTombstone<K> {
    fn clone(&self) -> Self {
        match self {
            MaybeTombstone::Object(o) => MaybeTombstone::Object(o.clone()),
            MaybeTombstone::Tombstone(t) => MaybeTombstone::Tombstone(t.clone()),
        }
    }
}

impl<K: ?Sized> MaybeTombstone<K> {
    /// The object, or the tombstone's last known state.
    pub fn object(&self) -> &Arc<K> {
        match self {
            MaybeTombstone::Object(o) => o,
            MaybeTombstone::Tombstone(t) => &t.obj,
        }
    }
}

/// The error of a key function: the object has no name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("object has no metadata.name, so it has no cache key")]
pub struct KeyError;

/// `namespace/name`, or `name` for objects without a namespace.
pub fn meta_namespace_key<K: Resource + 'static>(obj: &K) -> Result<String, KeyError> {
    key_of(super::meta_ref(obj))
}

/// [`meta_namespace_key`] of an object's metadata.
pub(crate) fn key_of(meta: MetaRef<'_>) -> Result<String, KeyError> {
    let name = meta.name().filter(|n| !n.is_empty()).ok_or(KeyError)?;
    Ok(match meta.namespace() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    })
}

/// The key of an object or of a tombstone (the tombstone's own key).
pub fn deletion_handling_meta_namespace_key<K: Resource + 'static>(
    obj: &MaybeTombstone<K>,
) -> Result<String, KeyError> {
    match obj {
        MaybeTombstone::Object(o) => meta_namespace_key(o.as_ref()),
        MaybeTombstone::Tombstone(t) => Ok(t.key.clone()),
    }
}

/// Splits a key into `(namespace, name)`; the namespace is empty for cluster-scoped keys.
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), String> {
    let mut parts = key.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) if !name.is_empty() => Ok(("", name)),
        (Some(ns), Some(name), None) if !name.is_empty() => Ok((ns, name)),
        _ => Err(format!("unexpected key format: {key:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use kube::api::ObjectMeta;

    fn pod(ns: &str, name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn namespaced_objects_key_as_namespace_slash_name_and_split_back() {
        let key = meta_namespace_key(&pod("demo", "web")).unwrap();
        assert_eq!(key, "demo/web");
        assert_eq!(split_meta_namespace_key(&key).unwrap(), ("demo", "web"));
    }

    #[test]
    fn cluster_scoped_objects_key_as_their_name() {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("kube-system".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(meta_namespace_key(&ns).unwrap(), "kube-system");
        assert_eq!(
            split_meta_namespace_key("kube-system").unwrap(),
            ("", "kube-system")
        );
    }

    #[test]
    fn malformed_keys_and_nameless_objects_are_errors() {
        for bad in ["", "a/b/c", "ns/", "/"] {
            assert!(split_meta_namespace_key(bad).is_err(), "{bad:?}");
        }
        assert_eq!(meta_namespace_key(&Pod::default()), Err(KeyError));
    }

    #[test]
    fn tombstones_key_by_their_recorded_key() {
        let t = MaybeTombstone::Tombstone(DeletedFinalStateUnknown {
            key: "old/key".into(),
            obj: Arc::new(pod("demo", "web")),
        });
        assert_eq!(deletion_handling_meta_namespace_key(&t).unwrap(), "old/key");
        let o = MaybeTombstone::Object(Arc::new(pod("demo", "web")));
        assert_eq!(
            deletion_handling_meta_namespace_key(&o).unwrap(),
            "demo/web"
        );
        assert_eq!(t.object().metadata.name.as_deref(), Some("web"));
    }
}
