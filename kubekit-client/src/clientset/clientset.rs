//! [`Clientset`]: every typed client, grouped by API group and version (client-go's
//! `kubernetes.Clientset`).
//!
//! # Contract
//!
//! - One [`RestClient`] underneath: every group client and resource client made from a
//!   clientset shares its connection pool and its rate limiter.
//! - Built-in resources are reached through their group
//!   (`clientset.apps_v1().deployments(ns)`, see [`groups`](super::groups)); any other
//!   type, custom resources included, through [`Clientset::resource`] or
//!   [`Clientset::cluster_resource`], which give the same [`ResourceClient`].
//! - [`Clientset::for_object`] gives the client of an object's own kind in its own
//!   namespace (what a reconcile writes its object back with), whatever the kind's scope.
//!
//! ```no_run
//! # async fn demo() -> kubekit::rest::Result<()> {
//! use kubekit::clientset::{Clientset, ListOptions};
//! use kubekit::rest::RestConfig;
//!
//! let config = RestConfig::infer().await?;
//! let clientset = Clientset::new(&config)?;
//! let deployments = clientset
//!     .apps_v1()
//!     .deployments("default")
//!     .list(&ListOptions::default().limit(500))
//!     .await?;
//! for d in &deployments.items {
//!     println!("{:?}", d.metadata.name);
//! }
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::Resource;

use super::resource_client::{KnownScope, ResourceClient};
use super::{GetOptions, PatchBody, PatchOptions};
use crate::meta_ref::meta_ref;
use crate::rest::{Error, RestClient, RestConfig, Result};

/// How long [`Clientset::install_crd`] waits for the API server to serve a
/// CustomResourceDefinition's resource.
pub const CRD_ESTABLISHED_TIMEOUT: Duration = Duration::from_secs(60);

/// How often [`Clientset::install_crd`] reads the CustomResourceDefinition while it waits.
const CRD_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Typed clients for the built-in API groups and for any typed resource.
///
/// One [`RestClient`] underneath: every group client and resource client made from a
/// clientset shares its connection pool and its rate limiter. Built-in resources are
/// reached through their group (`clientset.apps_v1().deployments(ns)`, see
/// [`groups`](super::groups)); any other type, custom resources included, through
/// [`Clientset::resource`] or [`Clientset::cluster_resource`], which give the same
/// [`ResourceClient`].
#[derive(Clone, Debug)]
pub struct Clientset {
    rest: RestClient,
}

impl Clientset {
    /// A clientset with a new [`RestClient`] for `config`.
    pub fn new(config: &RestConfig) -> Result<Self> {
        RestClient::new(config).map(Self::from_rest_client)
    }

    /// A clientset on top of `rest` (sharing its rate limiter).
    pub fn from_rest_client(rest: RestClient) -> Self {
        Self { rest }
    }

    /// The REST client underneath.
    pub fn rest_client(&self) -> &RestClient {
        &self.rest
    }

    /// A discovery client sharing this clientset's REST client (client-go's
    /// `clientset.Discovery()`).
    pub fn discovery(&self) -> crate::discovery::DiscoveryClient {
        crate::discovery::DiscoveryClient::new(self.rest.clone())
    }

    /// A client of namespaced `K` (built-in or custom) in `namespace`; `""` means all
    /// namespaces.
    pub fn resource<K>(&self, namespace: &str) -> ResourceClient<K>
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + 'static,
    {
        ResourceClient::namespaced(self.rest.clone(), namespace)
    }

    /// A client of cluster-scoped `K` (built-in or custom).
    pub fn cluster_resource<K>(&self) -> ResourceClient<K>
    where
        K: Resource<DynamicType = (), Scope = ClusterResourceScope> + 'static,
    {
        ResourceClient::cluster(self.rest.clone())
    }

    /// The client of `obj`'s own kind in `obj`'s own namespace: what a reconcile writes
    /// its object (or its status) back with. Cluster-wide when `K` is cluster-scoped
    /// (decided by `K::Scope`, see [`KnownScope`]), so generic code works for both
    /// scopes. For a namespaced `obj` it is
    /// [`resource::<K>(obj's namespace)`](Self::resource); an object without a namespace
    /// (one neither read from the server nor given one) gives the all-namespaces client,
    /// whose verbs on one object the server refuses.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # async fn demo(clientset: kubekit::clientset::Clientset, cm: Arc<ConfigMap>) -> kubekit::rest::Result<()> {
    /// use kubekit::clientset::{PatchBody, PatchOptions};
    /// use kube::ResourceExt;
    ///
    /// // The ConfigMaps of `cm`'s namespace, not `config_maps(&cm.namespace().unwrap_or_default())`.
    /// let config_maps = clientset.for_object(&*cm);
    /// let mark = PatchBody::Merge(serde_json::json!({ "metadata": { "labels": { "seen": "yes" } } }));
    /// config_maps.patch(&cm.name_any(), &mark, &PatchOptions::default()).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn for_object<K>(&self, obj: &K) -> ResourceClient<K>
    where
        K: Resource<DynamicType = (), Scope: KnownScope> + 'static,
    {
        let namespace = meta_ref(obj).namespace().unwrap_or_default();
        ResourceClient::new(self.rest.clone(), namespace)
    }
}

impl Clientset {
    /// Installs `crd` and waits until the API server serves its resource: what an operator
    /// does at start for the custom resources it reconciles, before its informers list
    /// them. The CustomResourceDefinition is server-side applied by `field_manager` with
    /// force, so starting again changes nothing and a newer program's definition replaces
    /// an older one. It is then read every 100 ms until its `Established` condition is
    /// `True`, and each served version is listed (one object) until the server answers
    /// something other than 404: the API server serves a resource a moment after it
    /// marks it established. Returns the definition as stored.
    ///
    /// Errors: refused unsent ([`Error::Request`]) when `crd` has no name; the apply's
    /// error as the server gave it (403 without the right to write
    /// CustomResourceDefinitions, 422 for an invalid one); [`Error::Request`] naming the
    /// server's reason when it did not accept the names (`NamesAccepted` `False`: another
    /// definition of the group has the kind, say), as it then never serves the resource;
    /// [`Error::Timeout`] when it is not served within [`CRD_ESTABLISHED_TIMEOUT`].
    ///
    /// ```no_run
    /// # use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    /// # async fn demo(clientset: kubekit::clientset::Clientset, crd: CustomResourceDefinition) -> kubekit::rest::Result<()> {
    /// // `crd`: e.g. `Greeting::crd()` of a `#[derive(kube::CustomResource)]` type.
    /// let installed = clientset.install_crd(crd, "greeting-controller").await?;
    /// println!("serving {}", installed.spec.names.plural);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn install_crd(
        &self,
        crd: CustomResourceDefinition,
        field_manager: &str,
    ) -> Result<CustomResourceDefinition> {
        let Some(name) = crd.metadata.name.clone().filter(|n| !n.is_empty()) else {
            return Err(Error::Request(
                "a CustomResourceDefinition to install needs a metadata.name".into(),
            ));
        };
        let crds = self.apiextensions_v1().custom_resource_definitions();
        let apply = PatchOptions::apply(field_manager).force();
        let mut current = crds.patch(&name, &PatchBody::Apply(crd), &apply).await?;
        let deadline = tokio::time::Instant::now() + CRD_ESTABLISHED_TIMEOUT;
        let waited_too_long = || {
            (tokio::time::Instant::now() >= deadline).then(|| Error::Timeout {
                verb: "GET".into(),
                url: format!("customresourcedefinitions/{name} (waiting for it to be served)"),
                after: CRD_ESTABLISHED_TIMEOUT,
            })
        };
        while !crd_established(&name, &current)? {
            if let Some(e) = waited_too_long() {
                return Err(e);
            }
            tokio::time::sleep(CRD_POLL_INTERVAL).await;
            current = crds.get(&name, &GetOptions::default()).await?;
        }
        let spec = &current.spec;
        for version in spec.versions.iter().filter(|v| v.served) {
            // A list of at most one object (not decoded): whether the version is served yet.
            let list = || {
                self.rest
                    .get()
                    .group_version(&spec.group, &version.name)
                    .resource(&spec.names.plural)
                    .param("limit", "1")
            };
            loop {
                match list().send().await {
                    Err(e) if e.is_not_found() => {}
                    _ => break,
                }
                if let Some(e) = waited_too_long() {
                    return Err(e);
                }
                tokio::time::sleep(CRD_POLL_INTERVAL).await;
            }
        }
        Ok(current)
    }
}

/// Whether the CustomResourceDefinition `name` is established; an error when the server
/// did not accept its names.
fn crd_established(name: &str, crd: &CustomResourceDefinition) -> Result<bool> {
    let conditions = crd
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten());
    let mut established = false;
    for c in conditions {
        match (c.type_.as_str(), c.status.as_str()) {
            ("Established", "True") => established = true,
            ("NamesAccepted", "False") => {
                return Err(Error::Request(format!(
                    "the API server did not accept the names of CustomResourceDefinition {name}: {}: {}",
                    c.reason.as_deref().unwrap_or("no reason"),
                    c.message.as_deref().unwrap_or("no message"),
                )));
            }
            _ => {}
        }
    }
    Ok(established)
}

impl From<RestClient> for Clientset {
    fn from(rest: RestClient) -> Self {
        Self::from_rest_client(rest)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    use super::*;
    use crate::rest::test_server::{Reply, TestServer};

    #[tokio::test]
    async fn for_object_is_the_client_of_the_objects_kind_in_its_namespace_or_cluster_wide() {
        let server = TestServer::start(|_| Reply::status(404, "NotFound")).await;
        let clientset = Clientset::from_rest_client(server.client());
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("settings".into());
        cm.metadata.namespace = Some("demo".into());
        let config_maps = clientset.for_object(&cm);
        assert_eq!(config_maps.namespace(), Some("demo"));
        let get = GetOptions::default();
        assert!(
            config_maps
                .get_opt("settings", &get)
                .await
                .unwrap()
                .is_none()
        );
        let mut ns = Namespace::default();
        ns.metadata.name = Some("demo".into());
        // A namespace stamped on a cluster-scoped object changes nothing.
        ns.metadata.namespace = Some("elsewhere".into());
        let namespaces = clientset.for_object(&ns);
        assert_eq!(namespaces.namespace(), None);
        assert!(namespaces.get_opt("demo", &get).await.unwrap().is_none());
        let requests = server.requests();
        let paths: Vec<_> = requests
            .iter()
            .map(|r| r.split('?').next().unwrap_or(r))
            .collect();
        assert_eq!(
            paths,
            [
                "GET /api/v1/namespaces/demo/configmaps/settings",
                "GET /api/v1/namespaces/demo",
            ]
        );
    }
}
