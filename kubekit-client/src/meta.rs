//! Names of API types (apimachinery's `schema` package): group/version, group/version/kind,
//! group/version/resource; controller ownerReferences (`metav1.GetControllerOf`,
//! `IsControlledBy`, `NewControllerRef`); the types a controller works on ([`Object`]) and
//! the names of their objects ([`ObjectKey`], `types.NamespacedName`).
//!
//! The core group is the empty string: Pods are `("", "v1", "pods")`, Deployments
//! `("apps", "v1", "deployments")`.
//!
//! ```
//! use kubekit::meta::GroupVersionResource;
//!
//! let gvr = GroupVersionResource::new("apps", "v1", "deployments");
//! assert_eq!(gvr.api_version(), "apps/v1");
//! assert_eq!(gvr.to_string(), "deployments.v1.apps");
//! let pods = GroupVersionResource::new("", "v1", "pods");
//! assert_eq!(pods.api_version(), "v1");
//! ```

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::meta_ref::meta_ref;

/// A resource scope known when compiling: whether objects of the type live in a
/// namespace. Implemented for `k8s-openapi`'s two scopes, which every built-in and
/// derived custom type uses.
pub trait KnownScope {
    /// Whether objects of this scope live in a namespace.
    const NAMESPACED: bool;
}

impl KnownScope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl KnownScope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// A type a controller can watch: any typed resource the informer factory can serve
/// (built-in types and `#[derive(CustomResource)]` types alike).
pub trait Object:
    Resource<DynamicType = (), Scope: KnownScope>
    + Serialize
    + DeserializeOwned
    + Clone
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<T> Object for T where
    T: Resource<DynamicType = (), Scope: KnownScope>
        + Serialize
        + DeserializeOwned
        + Clone
        + fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// The name of an object to reconcile (controller-runtime's `types.NamespacedName`); its
/// `Display` is the work queue key, `namespace/name` (or `name` when cluster-scoped).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The namespace; `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// The key of `name` in `namespace`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// The key of `obj`; `None` when it has no name.
    pub fn of<K: Resource + 'static>(obj: &K) -> Option<Self> {
        let meta = meta_ref(obj);
        Some(Self {
            namespace: meta.namespace().filter(|ns| !ns.is_empty()).map(Into::into),
            name: meta.name().filter(|n| !n.is_empty())?.into(),
        })
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// The ownerReference of `obj` marked `controller: true`, if any (`metav1.GetControllerOf`).
pub fn controller_of(obj: &ObjectMeta) -> Option<&OwnerReference> {
    obj.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// Whether `obj`'s controller is the object `owner` (same UID; `metav1.IsControlledBy`).
pub fn is_controlled_by(obj: &ObjectMeta, owner: &ObjectMeta) -> bool {
    controller_of(obj).is_some_and(|r| Some(&r.uid) == owner.uid.as_ref())
}

/// A controller ownerReference to `owner`, blocking its deletion until the dependent is
/// gone (`metav1.NewControllerRef`).
pub fn controller_ref<K: Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: owner.meta().name.clone().unwrap_or_default(),
        uid: owner.meta().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// An API group and version, e.g. `apps/v1` or (core) `v1`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersion {
    /// API group; empty for the core group.
    pub group: String,
    /// Version within the group.
    pub version: String,
}

impl GroupVersion {
    /// A group/version.
    pub fn new(group: &str, version: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
        }
    }

    /// Parses an `apiVersion` string: `apps/v1` or `v1`.
    pub fn parse_api_version(api_version: &str) -> Self {
        match api_version.split_once('/') {
            Some((group, version)) => Self::new(group, version),
            None => Self::new("", api_version),
        }
    }

    /// The `apiVersion` string: `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.api_version())
    }
}

/// A kind of object in an API group and version, e.g. `apps/v1 Deployment`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersionKind {
    /// API group; empty for the core group.
    pub group: String,
    /// Version within the group.
    pub version: String,
    /// Kind, in CamelCase.
    pub kind: String,
}

impl GroupVersionKind {
    /// A group/version/kind.
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// The kind of a typed resource.
    pub fn of<K: kube::Resource<DynamicType = ()>>() -> Self {
        Self::new(&K::group(&()), &K::version(&()), &K::kind(&()))
    }

    /// The `apiVersion` string of this kind.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }
}

impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Kind={}", self.api_version(), self.kind)
    }
}

/// A resource (the plural name in URLs) in an API group and version, e.g.
/// `deployments.v1.apps`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupVersionResource {
    /// API group; empty for the core group.
    pub group: String,
    /// Version within the group.
    pub version: String,
    /// Resource name: lowercase plural, e.g. `deployments`.
    pub resource: String,
}

impl GroupVersionResource {
    /// A group/version/resource.
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// The resource of a typed resource.
    pub fn of<K: kube::Resource<DynamicType = ()>>() -> Self {
        Self::new(&K::group(&()), &K::version(&()), &K::plural(&()))
    }

    /// The `apiVersion` string of this resource's group and version.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    /// The group and version.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }
}

impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}.{}", self.resource, self.version)
        } else {
            write!(f, "{}.{}.{}", self.resource, self.version, self.group)
        }
    }
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn a_controller_ref_names_its_owner_and_controls_the_dependent() {
        let mut owner = Deployment::default();
        owner.metadata.name = Some("web".into());
        owner.metadata.uid = Some("uid-1".into());
        let reference = controller_ref(&owner);
        assert_eq!(
            (
                reference.api_version.as_str(),
                reference.kind.as_str(),
                reference.name.as_str()
            ),
            ("apps/v1", "Deployment", "web")
        );
        let mut dependent = Pod::default();
        assert!(controller_of(&dependent.metadata).is_none());
        let mut other = reference.clone();
        other.controller = None;
        other.uid = "uid-2".into();
        dependent.metadata.owner_references = Some(vec![other, reference]);
        assert!(is_controlled_by(&dependent.metadata, &owner.metadata));
        owner.metadata.uid = Some("uid-2".into());
        assert!(
            !is_controlled_by(&dependent.metadata, &owner.metadata),
            "uid-2 is not the controller"
        );
    }

    #[test]
    fn typed_resources_name_their_kind_and_resource() {
        assert_eq!(
            GroupVersionKind::of::<Pod>(),
            GroupVersionKind::new("", "v1", "Pod")
        );
        assert_eq!(
            GroupVersionResource::of::<Deployment>(),
            GroupVersionResource::new("apps", "v1", "deployments")
        );
        assert_eq!(
            GroupVersionKind::of::<Deployment>().to_string(),
            "apps/v1, Kind=Deployment"
        );
    }

    #[test]
    fn api_version_round_trips_through_parse() {
        for s in ["v1", "apps/v1", "appcontroller.k8s.io/v1"] {
            assert_eq!(GroupVersion::parse_api_version(s).api_version(), s);
        }
    }
}
