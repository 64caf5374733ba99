//! The scale client (client-go's `scale`): read and change the `scale` subresource of any
//! resource that has one — Deployments, ReplicaSets, StatefulSets, ReplicationControllers,
//! and custom resources whose CRD declares a scale subresource — without knowing its type.
//!
//! # Contract
//!
//! - A resource is named by its group and plural name ([`GroupResource`]); the client picks
//!   the version from discovery (the group's most preferred version that serves the
//!   resource with a `scale` subresource). A resource the server does not serve, or serves
//!   without a scale subresource, is a [`ScaleError::NoScale`] before any request.
//! - Every scale subresource kube-apiserver serves speaks `autoscaling/v1` `Scale`, which
//!   is what this client reads and writes.
//! - `update` carries the `Scale`'s resourceVersion when it has one: a stale one is a 409
//!   Conflict, as for any update; without one the server applies it unconditionally.
//! - The discovery snapshot is taken when the client is made; a CRD installed later needs a
//!   new client ([`ScaleClient::discover`] again).
//!
//! ```no_run
//! # async fn demo(clientset: kubekit::clientset::Clientset) -> Result<(), kubekit::scale::ScaleError> {
//! use kubekit::scale::{GroupResource, ScaleClient};
//!
//! let scales = ScaleClient::discover(clientset.rest_client().clone()).await?;
//! let deployments = GroupResource::new("apps", "deployments");
//! let mut scale = scales.get(&deployments, "demo", "web").await?;
//! scale.spec.get_or_insert_with(Default::default).replicas = Some(3);
//! scales.update(&deployments, "demo", &scale).await?;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt;

use k8s_openapi::api::autoscaling::v1::Scale;

use crate::clientset::endpoint::Endpoint;
use crate::clientset::{GetOptions, PatchBody, PatchOptions, UpdateOptions};
use crate::discovery::{ApiDiscovery, DiscoveryClient};
use crate::meta::GroupVersionResource;
use crate::rest::{Error, RestClient};

/// A resource by group and plural name, e.g. `apps` + `deployments` (the core group is
/// `""`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupResource {
    /// API group; empty for the core group.
    pub group: String,
    /// Plural resource name.
    pub resource: String,
}

impl GroupResource {
    /// `group` and plural `resource`.
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            group: group.into(),
            resource: resource.into(),
        }
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// Why a scale request failed.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    /// The server does not serve the resource with a `scale` subresource.
    #[error(
        "{0} has no scale subresource on this server (is its CRD installed, with spec.versions[].subresources.scale?)"
    )]
    NoScale(GroupResource),
    /// The request failed (discovery, or the scale request itself).
    #[error(transparent)]
    Request(#[from] Error),
}

impl ScaleError {
    /// Whether the object does not exist (404).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ScaleError::Request(e) if e.is_not_found())
    }

    /// Whether the update carried a stale resourceVersion (409).
    pub fn is_conflict(&self) -> bool {
        matches!(self, ScaleError::Request(e) if e.is_conflict())
    }
}

/// Reads and changes `scale` subresources; see the [module docs](self).
#[derive(Clone)]
pub struct ScaleClient {
    rest: RestClient,
    /// Each scalable resource, at the version to use.
    scalable: HashMap<GroupResource, GroupVersionResource>,
}

impl fmt::Debug for ScaleClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<String> = self.scalable.keys().map(ToString::to_string).collect();
        names.sort();
        f.debug_struct("ScaleClient")
            .field("scalable", &names)
            .finish()
    }
}

impl ScaleClient {
    /// A client for the scalable resources of `discovery`.
    pub fn new(rest: RestClient, discovery: &ApiDiscovery) -> Self {
        let mut scalable = HashMap::new();
        // Groups list their versions most preferred first: keep the first that scales.
        for group in &discovery.groups {
            for version in &group.versions {
                for r in discovery.resources.iter().filter(|r| {
                    r.group == group.name
                        && r.version == *version
                        && r.subresources.iter().any(|s| s == "scale")
                }) {
                    scalable
                        .entry(GroupResource::new(&r.group, &r.name))
                        .or_insert_with(|| r.gvr());
                }
            }
        }
        Self { rest, scalable }
    }

    /// A client for what the server serves now.
    pub async fn discover(rest: RestClient) -> Result<Self, ScaleError> {
        let discovery = DiscoveryClient::new(rest.clone())
            .server_groups_and_resources()
            .await?;
        Ok(Self::new(rest, &discovery))
    }

    /// The resources this client can scale, sorted.
    pub fn scalable(&self) -> Vec<&GroupResource> {
        let mut all: Vec<_> = self.scalable.keys().collect();
        all.sort_by_key(|gr| (&gr.group, &gr.resource));
        all
    }

    fn endpoint(&self, resource: &GroupResource, namespace: &str) -> Result<Endpoint, ScaleError> {
        let gvr = self
            .scalable
            .get(resource)
            .ok_or_else(|| ScaleError::NoScale(resource.clone()))?;
        Ok(Endpoint::new(self.rest.clone(), gvr.clone(), namespace))
    }

    /// The scale of object `name` (namespace `""` for a cluster-scoped resource).
    pub async fn get(
        &self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<Scale, ScaleError> {
        let endpoint = self.endpoint(resource, namespace)?;
        let res = endpoint
            .get(name, Some("scale"), &GetOptions::default())
            .await?;
        Ok(res.decode()?)
    }

    /// Writes `scale` (its `metadata.name` names the object); returns the server's.
    pub async fn update(
        &self,
        resource: &GroupResource,
        namespace: &str,
        scale: &Scale,
    ) -> Result<Scale, ScaleError> {
        let endpoint = self.endpoint(resource, namespace)?;
        let mut body = scale.clone();
        body.metadata.namespace = (!namespace.is_empty()).then(|| namespace.to_string());
        let res = endpoint
            .update(
                body.metadata.name.as_deref(),
                Some("scale"),
                &body,
                &UpdateOptions::default(),
            )
            .await?;
        Ok(res.decode()?)
    }

    /// Patches the scale of object `name` (e.g. a merge patch
    /// `{"spec":{"replicas":3}}`); returns the server's.
    pub async fn patch(
        &self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
        patch: &PatchBody,
    ) -> Result<Scale, ScaleError> {
        let endpoint = self.endpoint(resource, namespace)?;
        let res = endpoint
            .patch(name, Some("scale"), patch, &PatchOptions::default())
            .await?;
        Ok(res.decode()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::{ApiGroup, ApiResource};

    fn resource(group: &str, version: &str, name: &str, subresources: &[&str]) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: version.into(),
            name: name.into(),
            singular: String::new(),
            kind: "Kind".into(),
            namespaced: true,
            verbs: vec!["get".into()],
            short_names: vec![],
            categories: vec![],
            subresources: subresources.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn client(discovery: &ApiDiscovery) -> ScaleClient {
        let config = crate::rest::RestConfig::from_url("http://127.0.0.1:1").unwrap();
        ScaleClient::new(RestClient::new(&config).unwrap(), discovery)
    }

    #[tokio::test]
    async fn each_resource_scales_at_the_most_preferred_version_that_has_a_scale_subresource() {
        let discovery = ApiDiscovery {
            groups: vec![
                ApiGroup {
                    name: "apps".into(),
                    versions: vec!["v1".into()],
                },
                ApiGroup {
                    name: "example.com".into(),
                    versions: vec!["v2".into(), "v1".into()],
                },
            ],
            resources: vec![
                resource("apps", "v1", "deployments", &["status", "scale"]),
                resource("apps", "v1", "controllerrevisions", &[]),
                // v2 is preferred but has no scale subresource; v1 has one.
                resource("example.com", "v2", "widgets", &["status"]),
                resource("example.com", "v1", "widgets", &["scale"]),
            ],
            failed: vec![],
        };
        let scales = client(&discovery);
        assert_eq!(
            scales.scalable(),
            [
                &GroupResource::new("apps", "deployments"),
                &GroupResource::new("example.com", "widgets")
            ]
        );
        let widgets = &scales.scalable[&GroupResource::new("example.com", "widgets")];
        assert_eq!(widgets.version, "v1");
    }

    #[tokio::test]
    async fn a_resource_without_a_scale_subresource_is_refused_before_any_request() {
        let scales = client(&ApiDiscovery::default());
        let err = scales
            .get(&GroupResource::new("", "configmaps"), "ns", "x")
            .await
            .unwrap_err();
        assert!(matches!(err, ScaleError::NoScale(_)), "{err}");
        assert!(
            err.to_string()
                .starts_with("configmaps has no scale subresource")
        );
    }
}
