//! [`DynamicClient`]: objects of any resource, named by group/version/resource at run time
//! (client-go's `dynamic.Interface`).
//!
//! # Contract
//!
//! - `dynamic.resource(&gvr)` is the resource across the cluster: cluster-scoped
//!   resources, or every namespace of a namespaced one (list, watch, delete_collection);
//!   `.namespace(ns)` narrows it to one namespace. The client does not know the
//!   resource's scope: using the wrong form fails on the server (404), as in client-go.
//! - The verbs, options and errors are those of the typed
//!   [`ResourceClient`](crate::clientset::ResourceClient); objects are [`Unstructured`].
//! - Objects are decoded once. Items of a list carry `apiVersion` and `kind` even when the
//!   server left them out (it does for built-in types): they are taken from the list.
//!
//! ```no_run
//! # async fn demo(rest: kubekit::rest::RestClient) -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::Pod;
//! use kubekit::clientset::ListOptions;
//! use kubekit::dynamic::DynamicClient;
//! use kubekit::meta::GroupVersionResource;
//!
//! let dynamic = DynamicClient::from_rest_client(rest);
//! let pods = GroupVersionResource::new("", "v1", "pods");
//! let list = dynamic.resource(&pods).namespace("default").list(&ListOptions::default()).await?;
//! for obj in list.items {
//!     let pod: Pod = obj.into_typed()?;
//!     println!("{:?}", pod.metadata.name);
//! }
//! # Ok(())
//! # }
//! ```

use kubekit_applyconfigurations::ApplyConfiguration;
use serde::Serialize;

use super::unstructured::Unstructured;
use crate::clientset::resource_client::checked_name;
use crate::clientset::{
    CreateOptions, DeleteOptions, DeleteResponse, GetOptions, ListOptions, PatchBody, PatchOptions,
    TypeHead, UpdateOptions, WatchStream, decode_delete,
};
use crate::rest::{ObjectList, Response, Result};

/// Defines the two clients of a client by group/version/resource (the dynamic client, the
/// metadata client): `$Client`, the entry point over a `RestClient`, and
/// `$ResourceClient`, one resource cluster-wide or in one namespace, over an `Endpoint`
/// asking for what `$accept` gives for the client's `RestClient`, with its namespace and
/// resource accessors. The verbs are the
/// caller's, in an `impl $ResourceClient` of its own.
macro_rules! resource_clients {
    (
        $(#[$client_doc:meta])*
        client: $Client:ident,
        $(#[$resource_doc:meta])*
        resource_client: $ResourceClient:ident,
        accept: $accept:expr,
        name: $name:literal $(,)?
    ) => {
        $(#[$client_doc])*
        #[derive(Clone, Debug)]
        pub struct $Client {
            rest: $crate::rest::RestClient,
        }

        impl $Client {
            #[doc = concat!("A ", $name, " client with a new [`RestClient`](crate::rest::RestClient) for `config`.")]
            pub fn new(config: &$crate::rest::RestConfig) -> $crate::rest::Result<Self> {
                $crate::rest::RestClient::new(config).map(Self::from_rest_client)
            }

            #[doc = concat!("A ", $name, " client on top of `rest` (sharing its rate limiter).")]
            pub fn from_rest_client(rest: $crate::rest::RestClient) -> Self {
                Self { rest }
            }

            /// The REST client underneath.
            pub fn rest_client(&self) -> &$crate::rest::RestClient {
                &self.rest
            }

            #[doc = concat!("The resource `gvr`, cluster-wide; call [`", stringify!($ResourceClient), "::namespace`] for one namespace.")]
            pub fn resource(&self, gvr: &$crate::meta::GroupVersionResource) -> $ResourceClient {
                let endpoint = $crate::clientset::Endpoint::new(self.rest.clone(), gvr.clone(), "");
                $ResourceClient {
                    endpoint: endpoint.with_accept(($accept)(&self.rest)),
                }
            }
        }

        impl From<$crate::rest::RestClient> for $Client {
            fn from(rest: $crate::rest::RestClient) -> Self {
                Self::from_rest_client(rest)
            }
        }

        $(#[$resource_doc])*
        #[derive(Clone)]
        pub struct $ResourceClient {
            endpoint: $crate::clientset::Endpoint,
        }

        impl std::fmt::Debug for $ResourceClient {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.endpoint.debug(stringify!($ResourceClient), f)
            }
        }

        impl $ResourceClient {
            /// The same resource in `namespace` (`""`: cluster-wide again).
            pub fn namespace(&self, namespace: &str) -> Self {
                Self {
                    endpoint: self.endpoint.in_namespace(namespace),
                }
            }

            /// The group, version and resource.
            pub fn gvr(&self) -> &$crate::meta::GroupVersionResource {
                self.endpoint.gvr()
            }

            /// The namespace this client works in; `None` for cluster-wide.
            pub fn namespace_name(&self) -> Option<&str> {
                self.endpoint.namespace()
            }
        }
    };
}
pub(crate) use resource_clients;

resource_clients! {
    /// The entry point of the dynamic client; see the [module docs](self).
    client: DynamicClient,
    /// The verbs on one resource, cluster-wide or in one namespace; see the
    /// [module docs](self).
    resource_client: DynamicResourceClient,
    accept: |rest| crate::clientset::Accept::preferred(rest, false),
    name: "dynamic",
}

impl DynamicResourceClient {
    /// Creates `obj` in this client's namespace and returns it as stored.
    pub async fn create(&self, obj: &Unstructured, opts: &CreateOptions) -> Result<Unstructured> {
        self.written(self.endpoint.create(obj, opts).await?.decode())
    }

    /// `stored`, once the client's write observer is told of it.
    fn written(&self, stored: Result<Unstructured>) -> Result<Unstructured> {
        if let Ok(obj) = &stored {
            self.endpoint
                .observe_write(obj.namespace(), obj.name(), obj.resource_version());
        }
        stored
    }

    /// The object named `name`.
    pub async fn get(&self, name: &str, opts: &GetOptions) -> Result<Unstructured> {
        self.endpoint.get(name, None, opts).await?.decode()
    }

    /// The object named `name`, read through its `status` subresource.
    pub async fn get_status(&self, name: &str, opts: &GetOptions) -> Result<Unstructured> {
        self.endpoint
            .get(name, Some("status"), opts)
            .await?
            .decode()
    }

    /// The objects matching `opts` (one page when `limit` is set), each with its
    /// `apiVersion` and `kind`.
    pub async fn list(&self, opts: &ListOptions) -> Result<ObjectList<Unstructured>> {
        let response = self.endpoint.list(opts).await?;
        self.decode_list(&response)
    }

    /// Watches the objects matching `opts`.
    pub async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<Unstructured>> {
        self.endpoint.watch(opts).await
    }

    /// Replaces the object named by `obj.metadata.name` with `obj`; 409 Conflict if its
    /// resourceVersion is stale.
    pub async fn update(&self, obj: &Unstructured, opts: &UpdateOptions) -> Result<Unstructured> {
        self.written(
            self.endpoint
                .update(obj.name(), None, obj, opts)
                .await?
                .decode(),
        )
    }

    /// Replaces the object's status (the `status` subresource).
    pub async fn update_status(
        &self,
        obj: &Unstructured,
        opts: &UpdateOptions,
    ) -> Result<Unstructured> {
        self.written(
            self.endpoint
                .update(obj.name(), Some("status"), obj, opts)
                .await?
                .decode(),
        )
    }

    /// Patches the object named `name`.
    pub async fn patch<P: Serialize>(
        &self,
        name: &str,
        patch: &PatchBody<P>,
        opts: &PatchOptions,
    ) -> Result<Unstructured> {
        self.written(self.endpoint.patch(name, None, patch, opts).await?.decode())
    }

    /// Server-side applies `config`, a typed apply configuration of this resource's
    /// kind (a generated one, or a custom resource's derived one), as
    /// [`ResourceClient::apply`](crate::clientset::ResourceClient::apply) does. Refused
    /// unsent ([`Error::Request`](crate::rest::Error::Request)) when `config` is of
    /// another group version than the resource, has no `metadata.name`, or names another
    /// namespace than this client's.
    pub async fn apply<A: ApplyConfiguration>(
        &self,
        config: &A,
        opts: &PatchOptions,
    ) -> Result<Unstructured> {
        let name = self.applied_name(config)?;
        self.patch(name, &PatchBody::Apply(config), opts).await
    }

    /// Server-side applies `config` to the `status` subresource, as
    /// [`apply`](Self::apply) does to the object.
    pub async fn apply_status<A: ApplyConfiguration>(
        &self,
        config: &A,
        opts: &PatchOptions,
    ) -> Result<Unstructured> {
        let name = self.applied_name(config)?;
        self.patch_status(name, &PatchBody::Apply(config), opts)
            .await
    }

    /// Server-side applies `config` to the subresource `subresource` of the object it names
    /// (`scale` with an autoscaling/v1 `Scale` configuration), as
    /// [`ResourceClient::apply_subresource`](crate::clientset::ResourceClient::apply_subresource)
    /// does, and returns the answer as it comes.
    pub async fn apply_subresource<A: ApplyConfiguration>(
        &self,
        subresource: &str,
        config: &A,
        opts: &PatchOptions,
    ) -> Result<Unstructured> {
        let name = checked_name(config, A::API_VERSION, None, self.namespace_name())?;
        self.written(
            self.endpoint
                .patch(name, Some(subresource), &PatchBody::Apply(config), opts)
                .await?
                .decode(),
        )
    }

    /// The name `config` applies, checked against this client's group version and
    /// namespace.
    fn applied_name<'a, A: ApplyConfiguration>(&self, config: &'a A) -> Result<&'a str> {
        let api_version = self.endpoint.gvr().api_version();
        checked_name(config, &api_version, None, self.namespace_name())
    }

    /// Patches the status of the object named `name`.
    pub async fn patch_status<P: Serialize>(
        &self,
        name: &str,
        patch: &PatchBody<P>,
        opts: &PatchOptions,
    ) -> Result<Unstructured> {
        self.written(
            self.endpoint
                .patch(name, Some("status"), patch, opts)
                .await?
                .decode(),
        )
    }

    /// Deletes the object named `name`; see [`DeleteResponse`].
    pub async fn delete(
        &self,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteResponse<Unstructured>> {
        let response = self.endpoint.delete(name, opts).await?;
        decode_delete(&response, |r| r.decode())
    }

    /// Deletes every object matching `list`.
    pub async fn delete_collection(
        &self,
        opts: &DeleteOptions,
        list: &ListOptions,
    ) -> Result<DeleteResponse<ObjectList<Unstructured>>> {
        let response = self.endpoint.delete_collection(opts, list).await?;
        decode_delete(&response, |r| self.decode_list(r))
    }

    /// Decodes a list, giving items without `apiVersion`/`kind` those of the list
    /// (`ConfigMapList` → `ConfigMap`).
    fn decode_list(&self, response: &Response) -> Result<ObjectList<Unstructured>> {
        let mut list = response.decode_list::<Unstructured>()?;
        let head = TypeHead::of(response.body());
        let api_version = head
            .api_version
            .as_deref()
            .map_or_else(|| self.endpoint.gvr().api_version(), str::to_string);
        let kind = head
            .kind
            .as_deref()
            .and_then(|k| k.strip_suffix("List"))
            .unwrap_or("");
        fill_type(&mut list.items, &api_version, kind);
        Ok(list)
    }
}

/// Sets `apiVersion` and `kind` on the objects that have none.
fn fill_type(items: &mut [Unstructured], api_version: &str, kind: &str) {
    for item in items {
        if item.api_version.is_empty() {
            item.api_version = api_version.to_string();
        }
        if item.kind.is_empty() {
            item.kind = kind.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::GroupVersionResource;
    use crate::rest::RestConfig;

    #[test]
    fn list_items_without_type_take_the_lists() {
        let mut items: Vec<Unstructured> = vec![
            serde_json::from_str(r#"{"metadata":{"name":"a"}}"#).expect("item"),
            serde_json::from_str(r#"{"apiVersion":"v2","kind":"Other","metadata":{"name":"b"}}"#)
                .expect("item"),
        ];
        fill_type(&mut items, "v1", "ConfigMap");
        assert_eq!(
            (items[0].api_version.as_str(), items[0].kind.as_str()),
            ("v1", "ConfigMap")
        );
        assert_eq!(
            (items[1].api_version.as_str(), items[1].kind.as_str()),
            ("v2", "Other")
        );
    }

    #[tokio::test]
    async fn namespace_narrows_and_widens_the_resource() {
        let config = kube::Config::new("https://127.0.0.1:1".parse().expect("url"));
        let dynamic = DynamicClient::new(&RestConfig::from_kube(config)).expect("client");
        let gvr = GroupVersionResource::new("apps", "v1", "deployments");
        let all = dynamic.resource(&gvr);
        assert_eq!(all.endpoint.namespace(), None);
        let one = all.namespace("demo");
        assert_eq!(one.endpoint.namespace(), Some("demo"));
        assert_eq!(one.namespace("").endpoint.namespace(), None);
        assert_eq!(one.gvr(), &gvr);
    }
}
