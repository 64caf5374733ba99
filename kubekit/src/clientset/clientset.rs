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

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::Resource;

use super::resource_client::ResourceClient;
use crate::rest::{RestClient, RestConfig, Result};

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
}

impl From<RestClient> for Clientset {
    fn from(rest: RestClient) -> Self {
        Self::from_rest_client(rest)
    }
}
