//! [`ResourceClient<K>`]: the typed client of one resource, for built-in and custom types
//! alike (client-go's `PodInterface`, `DeploymentInterface`, … as one generic type).
//!
//! # Contract
//!
//! - `K` is any [`kube::Resource`] with static type information: every `k8s-openapi` type
//!   and every type made with `#[derive(CustomResource)]`. Its group, version and plural
//!   name make the URL.
//! - Scope is checked when the client is made: [`ResourceClient::namespaced`] accepts only
//!   namespaced types, [`ResourceClient::cluster`] only cluster-scoped ones.
//! - A namespaced client of namespace `""` covers every namespace: list, watch and
//!   delete_collection then span the cluster, and the verbs on one object fail on the
//!   server, as in client-go. Objects are written to the client's namespace, whatever
//!   their `metadata.namespace` says (the server refuses a mismatch).
//! - Every response is decoded once, into `K` (or [`ObjectList<K>`], whose malformed items
//!   are reported in `skipped`, not fatal). Errors are [`Error`]s with
//!   the API's `Status` and predicates (`is_not_found`, `is_conflict`, …).
//! - The client is cheap to clone and holds no lock; all clones share the
//!   [`RestClient`]'s rate limiter.
//!
//! ```no_run
//! # async fn demo(rest: kubekit::rest::RestClient) -> kubekit::rest::Result<()> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::clientset::{CreateOptions, ListOptions, PatchBody, PatchOptions, ResourceClient};
//! use serde_json::json;
//!
//! let config_maps = ResourceClient::<ConfigMap>::namespaced(rest, "demo");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! config_maps.create(&cm, &CreateOptions::default()).await?;
//!
//! let patch = PatchBody::Merge(json!({"data": {"mode": "fast"}}));
//! config_maps.patch("settings", &patch, &PatchOptions::default()).await?;
//!
//! for cm in config_maps.list(&ListOptions::default().labels("app=web")).await?.items {
//!     println!("{:?}", cm.metadata.name);
//! }
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::delete_response::{DeleteResponse, decode_delete};
use super::endpoint::{Accept, Endpoint, WatchStream};
use super::options::{
    CreateOptions, DeleteOptions, GetOptions, ListOptions, PatchOptions, UpdateOptions,
};
use super::patch::PatchBody;
use crate::meta::{GroupVersionResource, controller_ref};
use crate::rest::{Error, ListPage, ObjectList, RestClient, Result};
use kubekit_applyconfigurations::ApplyConfiguration;
use kubekit_applyconfigurations::apimachinery::pkg::apis::meta::v1 as ac;
use kubekit_protobuf::DecodeOptions;

pub use crate::meta::KnownScope;

/// A typed client of resource `K` in one namespace, all namespaces, or (cluster-scoped
/// types) none; see the [module docs](self).
pub struct ResourceClient<K> {
    endpoint: Endpoint,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Clone for ResourceClient<K> {
    fn clone(&self) -> Self {
        Self {
            endpoint: self.endpoint.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K> fmt::Debug for ResourceClient<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceClient")
            .field("resource", &self.endpoint.gvr().to_string())
            .field("namespace", &self.endpoint.namespace())
            .finish_non_exhaustive()
    }
}

impl<K: Resource<DynamicType = ()> + 'static> ResourceClient<K> {
    /// A client of namespaced `K` in `namespace`; `""` means all namespaces.
    pub fn namespaced(rest: RestClient, namespace: &str) -> Self
    where
        K: Resource<Scope = NamespaceResourceScope>,
    {
        Self::at(rest, namespace)
    }

    /// A client of cluster-scoped `K`.
    pub fn cluster(rest: RestClient) -> Self
    where
        K: Resource<Scope = ClusterResourceScope>,
    {
        Self::at(rest, "")
    }

    /// A client of `K` whatever its scope, for code generic over `K`: in `namespace` when
    /// `K` is namespaced (`""`: all namespaces); `namespace` is ignored when it is
    /// cluster-scoped.
    pub fn new(rest: RestClient, namespace: &str) -> Self
    where
        K::Scope: KnownScope,
    {
        Self::at(
            rest,
            if <K::Scope as KnownScope>::NAMESPACED {
                namespace
            } else {
                ""
            },
        )
    }

    fn at(rest: RestClient, namespace: &str) -> Self {
        // client-go's typed clients ask for protobuf; the server falls back to JSON for
        // what has no protobuf form, and kubekit asks only for types that have one.
        let protobuf = crate::rest::protobuf::protobuf_codec::<K>().is_some();
        let accept = Accept::preferred(&rest, protobuf);
        Self {
            endpoint: Endpoint::new(rest, GroupVersionResource::of::<K>(), namespace)
                .with_accept(accept),
            _kind: PhantomData,
        }
    }

    /// The same client, decoding lists and watch events without `metadata.managedFields`
    /// (for the informer factory's caches): skipped while decoding protobuf, cut from the
    /// JSON before it is decoded.
    pub fn skipping_managed_fields(mut self) -> Self {
        let options = DecodeOptions {
            skip_managed_fields: true,
        };
        self.endpoint = self.endpoint.with_decode_options(options);
        self
    }

    /// The namespace this client works in; `None` for all namespaces or a cluster-scoped
    /// type.
    pub fn namespace(&self) -> Option<&str> {
        self.endpoint.namespace()
    }

    /// The group, version and resource of `K`.
    pub fn gvr(&self) -> &GroupVersionResource {
        self.endpoint.gvr()
    }

    /// The REST client underneath.
    pub fn rest_client(&self) -> &RestClient {
        self.endpoint.rest()
    }
}

impl<K> ResourceClient<K>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
{
    /// Creates `obj` (POST) and returns it as stored: name generated from `generateName`,
    /// uid, resourceVersion and defaults filled in. With `dry_run`, nothing is stored.
    pub async fn create(&self, obj: &K, opts: &CreateOptions) -> Result<K> {
        self.written(self.endpoint.create(obj, opts).await?.decode())
    }

    /// `stored`, once the client's write observer is told of it.
    fn written(&self, stored: Result<K>) -> Result<K> {
        if let Ok(obj) = &stored {
            self.observe(obj.meta());
        }
        stored
    }

    /// Tells the client's write observer of the object whose metadata is `meta`.
    fn observe(&self, meta: &ObjectMeta) {
        self.endpoint.observe_write(
            meta.namespace.as_deref(),
            meta.name.as_deref(),
            meta.resource_version.as_deref(),
        );
    }

    /// The object named `name`.
    pub async fn get(&self, name: &str, opts: &GetOptions) -> Result<K> {
        self.endpoint.get(name, None, opts).await?.decode()
    }

    /// The object named `name`, `None` when it does not exist (a 404 `NotFound`); other
    /// errors are errors.
    pub async fn get_opt(&self, name: &str, opts: &GetOptions) -> Result<Option<K>> {
        crate::rest::error::found(self.get(name, opts).await)
    }

    /// The object named `name`, read through its `status` subresource.
    pub async fn get_status(&self, name: &str, opts: &GetOptions) -> Result<K> {
        self.endpoint
            .get(name, Some("status"), opts)
            .await?
            .decode()
    }

    /// The objects matching `opts`: one page of at most `limit` when a limit is set (fetch
    /// the next with the list's `metadata.continue_`), otherwise all of them. The list's
    /// `metadata.resource_version` is where a watch continues from.
    pub async fn list(&self, opts: &ListOptions) -> Result<ObjectList<K>> {
        self.endpoint
            .list(opts)
            .await?
            .decode_list_in_background()
            .await
    }

    /// One page of the objects matching `opts`, its metadata at hand before its items
    /// are decoded (on tokio's blocking pool, once awaited): see [`ListPage`].
    pub async fn list_page(&self, opts: &ListOptions) -> Result<ListPage<K>> {
        self.endpoint.list(opts).await?.into_list_page()
    }

    /// Watches the objects matching `opts` from `opts.resource_version` (unset: from now,
    /// starting with synthetic `ADDED` events for what exists, as the server does).
    pub async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<K>> {
        self.endpoint.watch(opts).await
    }

    /// Replaces the object (PUT) with `obj`, named by its `metadata.name`. The write is
    /// rejected with 409 Conflict (`is_conflict`) if `obj`'s resourceVersion is stale.
    /// Changes to the status are ignored for types with a status subresource.
    pub async fn update(&self, obj: &K, opts: &UpdateOptions) -> Result<K> {
        self.written(
            self.endpoint
                .update(obj.meta().name.as_deref(), None, obj, opts)
                .await?
                .decode(),
        )
    }

    /// Replaces the object's status (PUT to the `status` subresource); changes outside the
    /// status are ignored.
    pub async fn update_status(&self, obj: &K, opts: &UpdateOptions) -> Result<K> {
        self.written(
            self.endpoint
                .update(obj.meta().name.as_deref(), Some("status"), obj, opts)
                .await?
                .decode(),
        )
    }

    /// Patches the object named `name`; see [`PatchBody`] for the kinds of patch.
    pub async fn patch<P: Serialize>(
        &self,
        name: &str,
        patch: &PatchBody<P>,
        opts: &PatchOptions,
    ) -> Result<K> {
        self.written(self.endpoint.patch(name, None, patch, opts).await?.decode())
    }

    /// Server-side applies the child `name` of `owner` in this client's namespace, and
    /// returns it as stored: `fields` (a JSON object of what the caller decides: `spec`,
    /// `data`, `metadata.labels`…) completed with the child's `apiVersion`, `kind`, name,
    /// namespace and, as its only ownerReference, a controller reference to `owner` that
    /// blocks the owner's deletion until the child is gone (as
    /// `controllerutil.SetControllerReference` makes it), applied by the field manager
    /// `manager` with `force`: the fields `fields` sets are `manager`'s, whoever changed
    /// them since, and the fields others set that it does not are left theirs. The server
    /// refuses a child with another controller (422).
    ///
    /// Refused unsent ([`Error::Request`]) when `fields` (or
    /// its `metadata`) is not a JSON object, when `owner` has no uid (it was not read from
    /// the server), or when a namespaced `owner` is in another namespace than this client.
    ///
    /// ```no_run
    /// # async fn demo(clientset: kubekit::clientset::Clientset, owner: k8s_openapi::api::apps::v1::Deployment) -> kubekit::rest::Result<()> {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use serde_json::json;
    ///
    /// let config_maps = clientset.core_v1().config_maps("demo");
    /// let fields = json!({ "metadata": { "labels": { "app": "web" } }, "data": { "mode": "fast" } });
    /// let settings: ConfigMap = config_maps.apply_child(&owner, "web-settings", fields, "web-controller").await?;
    /// # let _ = settings;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn apply_child<O: Resource<DynamicType = ()>>(
        &self,
        owner: &O,
        name: &str,
        fields: serde_json::Value,
        manager: &str,
    ) -> Result<K> {
        let config = child_config::<K, O>(owner, self.namespace(), name, fields)?;
        let opts = PatchOptions::apply(manager).force();
        self.patch(name, &PatchBody::Apply(config), &opts).await
    }

    /// Server-side applies `config`, a typed apply configuration of `K` (client-go's
    /// `Apply`, controller-runtime's `client.Apply`), and returns the object as stored: the
    /// fields `config` sets become `opts`' field manager's, the others are left to whoever
    /// set them. `opts` is [`PatchOptions::apply`]'s, with [`force`](PatchOptions::force) to
    /// take over fields another manager set, as a controller does for what it owns.
    ///
    /// Refused unsent ([`Error::Request`]) when `config` configures another kind than `K`,
    /// has no `metadata.name`, or names another namespace than this client's.
    ///
    /// ```no_run
    /// # async fn demo(clientset: kubekit::clientset::Clientset) -> kubekit::rest::Result<()> {
    /// use kubekit::applyconfigurations::api::core::v1::ConfigMap;
    /// use kubekit::clientset::PatchOptions;
    ///
    /// let settings = ConfigMap::new("web-settings", "demo").data([("mode", "fast".to_string())]);
    /// let opts = PatchOptions::apply("web-controller").force();
    /// let stored = clientset.core_v1().config_maps("demo").apply(&settings, &opts).await?;
    /// # let _ = stored;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn apply<A: ApplyConfiguration>(&self, config: &A, opts: &PatchOptions) -> Result<K> {
        let name = applied_name::<K, A>(config, self.namespace())?;
        self.patch(name, &PatchBody::Apply(config), opts).await
    }

    /// Server-side applies `config`, a typed apply configuration of `K`, as a child of
    /// `owner`: [`apply_child`](Self::apply_child) with typed fields. Its ownerReferences are
    /// set to one controller reference to `owner` (blocking the owner's deletion), and it
    /// is applied by the field manager `manager` with `force`.
    ///
    /// Refused unsent ([`Error::Request`]) as [`apply`](Self::apply) refuses, and when
    /// `owner` has no uid or is namespaced in another namespace than this client.
    ///
    /// ```no_run
    /// # async fn demo(clientset: kubekit::clientset::Clientset, owner: k8s_openapi::api::apps::v1::Deployment) -> kubekit::rest::Result<()> {
    /// use kubekit::applyconfigurations::api::core::v1::ConfigMap;
    ///
    /// let settings = ConfigMap::new("web-settings", "demo").data([("mode", "fast".to_string())]);
    /// let config_maps = clientset.core_v1().config_maps("demo");
    /// let stored = config_maps.apply_owned(&owner, settings, "web-controller").await?;
    /// # let _ = stored;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn apply_owned<A, O>(&self, owner: &O, mut config: A, manager: &str) -> Result<K>
    where
        A: ApplyConfiguration,
        O: Resource<DynamicType = ()>,
    {
        let name = applied_name::<K, A>(&config, self.namespace())?.to_string();
        let reference = owner_reference(owner, self.namespace(), &name)?;
        let mut typed = ac::OwnerReference::default()
            .api_version(reference.api_version)
            .kind(reference.kind)
            .name(reference.name)
            .uid(reference.uid);
        typed.controller = reference.controller;
        typed.block_owner_deletion = reference.block_owner_deletion;
        config.metadata_mut().owner_references = Some(vec![typed]);
        self.apply(&config, &PatchOptions::apply(manager).force())
            .await
    }

    /// Server-side applies `config` to the `status` subresource (what a controller reports
    /// of its object), as [`apply`](Self::apply) does to the object.
    pub async fn apply_status<A: ApplyConfiguration>(
        &self,
        config: &A,
        opts: &PatchOptions,
    ) -> Result<K> {
        let name = applied_name::<K, A>(config, self.namespace())?;
        self.patch_status(name, &PatchBody::Apply(config), opts)
            .await
    }

    /// Server-side applies `config` to the `status` of `obj`, an object of this client, by
    /// the field manager `manager` with `force`: what a controller reports of the object it
    /// reconciles, as [`apply_owned`](Self::apply_owned) applies its children. `config`'s
    /// `apiVersion`, `kind`, name and namespace are `obj`'s, so a configuration that sets the
    /// status only (its `default()`) is enough.
    ///
    /// Refused unsent ([`Error::Request`]) when `config` configures another kind than `K`
    /// or names another object than `obj`, when `obj` has no name, or when it is in
    /// another namespace than this client's.
    ///
    /// ```no_run
    /// # async fn demo(clientset: kubekit::clientset::Clientset, web: k8s_openapi::api::apps::v1::Deployment) -> kubekit::rest::Result<()> {
    /// use kubekit::applyconfigurations::api::apps::v1::{Deployment, DeploymentStatus};
    ///
    /// let status = DeploymentStatus::default().observed_generation(3);
    /// let deployments = clientset.for_object(&web);
    /// let stored = deployments
    ///     .apply_status_of(&web, Deployment::default().status(status), "web-controller")
    ///     .await?;
    /// # let _ = stored;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn apply_status_of<A: ApplyConfiguration>(
        &self,
        obj: &K,
        mut config: A,
        manager: &str,
    ) -> Result<K> {
        let (meta, theirs) = (obj.meta(), config.metadata_mut());
        let names_another =
            |set: &Option<String>, ours: &Option<String>| set.is_some() && set != ours;
        if names_another(&theirs.name, &meta.name)
            || names_another(&theirs.namespace, &meta.namespace)
        {
            return Err(Error::Request(format!(
                "a status configuration of {} {:?} in namespace {:?} applied to the status of {:?} in namespace {:?}",
                A::KIND,
                theirs.name.as_deref().unwrap_or_default(),
                theirs.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default(),
                meta.namespace.as_deref().unwrap_or_default(),
            )));
        }
        theirs.name.clone_from(&meta.name);
        theirs.namespace.clone_from(&meta.namespace);
        let name = applied_name::<K, A>(&config, self.namespace())?.to_string();
        let mut body = serde_json::to_value(&config)
            .map_err(|e| Error::Request(format!("a status configuration of {}: {e}", A::KIND)))?;
        if let Some(fields) = body.as_object_mut() {
            fields.insert("apiVersion".into(), A::API_VERSION.into());
            fields.insert("kind".into(), A::KIND.into());
        }
        let opts = PatchOptions::apply(manager).force();
        self.patch_status(&name, &PatchBody::Apply(body), &opts)
            .await
    }

    /// Server-side applies `config` to the subresource `subresource` of the object it names
    /// and returns the subresource's answer: `scale` with an autoscaling/v1 `Scale`
    /// configuration (answered with a `Scale`), a Pod's `resize` or `ephemeralcontainers`
    /// with a Pod's (answered with the Pod), as client-go's `ApplyScale` and the like.
    /// What is applied is recorded in the object's `managedFields` under that subresource
    /// ([`extract_from`](kubekit_applyconfigurations::extract_from) reads it back).
    ///
    /// Refused unsent ([`Error::Request`]) when `config` has no `metadata.name` or names
    /// another namespace than this client's.
    ///
    /// ```no_run
    /// # async fn demo(clientset: kubekit::clientset::Clientset) -> kubekit::rest::Result<()> {
    /// use k8s_openapi::api::autoscaling::v1::Scale;
    /// use kubekit::applyconfigurations::api::autoscaling::v1 as autoscaling;
    /// use kubekit::clientset::PatchOptions;
    ///
    /// let scale = autoscaling::Scale::new("web", "demo")
    ///     .spec(autoscaling::ScaleSpec::default().replicas(3));
    /// let opts = PatchOptions::apply("autoscaler").force();
    /// let deployments = clientset.apps_v1().deployments("demo");
    /// let scaled: Scale = deployments.apply_subresource("scale", &scale, &opts).await?;
    /// # let _ = scaled;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn apply_subresource<A, R>(
        &self,
        subresource: &str,
        config: &A,
        opts: &PatchOptions,
    ) -> Result<R>
    where
        A: ApplyConfiguration,
        R: DeserializeOwned + k8s_openapi::Metadata<Ty = ObjectMeta> + 'static,
    {
        let name = checked_name(config, A::API_VERSION, None, self.namespace())?;
        let answer: R = self
            .endpoint
            .patch(name, Some(subresource), &PatchBody::Apply(config), opts)
            .await?
            .decode()?;
        // A subresource's answer carries its object's name and resourceVersion.
        self.observe(answer.metadata());
        Ok(answer)
    }

    /// Patches the status of the object named `name` (the `status` subresource).
    pub async fn patch_status<P: Serialize>(
        &self,
        name: &str,
        patch: &PatchBody<P>,
        opts: &PatchOptions,
    ) -> Result<K> {
        self.written(
            self.endpoint
                .patch(name, Some("status"), patch, opts)
                .await?
                .decode(),
        )
    }

    /// Deletes the object named `name`: the object (still being deleted, or as deleted) or
    /// the server's `Status`; see [`DeleteResponse`].
    pub async fn delete(&self, name: &str, opts: &DeleteOptions) -> Result<DeleteResponse<K>> {
        let response = self.endpoint.delete(name, opts).await?;
        decode_delete(&response, |r| r.decode())
    }

    /// Deletes every object matching `list`: the list of deleted objects, or the server's
    /// `Status`.
    pub async fn delete_collection(
        &self,
        opts: &DeleteOptions,
        list: &ListOptions,
    ) -> Result<DeleteResponse<ObjectList<K>>> {
        let response = self.endpoint.delete_collection(opts, list).await?;
        decode_delete(&response, |r| r.decode_list())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::Error;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Node, Pod};

    fn rest() -> RestClient {
        let config = kube::Config::new("https://127.0.0.1:1".parse().expect("url"));
        RestClient::new(&crate::rest::RestConfig::from_kube(config)).expect("client")
    }

    #[tokio::test]
    async fn scope_decides_whether_the_namespace_is_used() {
        let pods = ResourceClient::<Pod>::namespaced(rest(), "demo");
        assert_eq!(pods.namespace(), Some("demo"));
        assert_eq!(pods.gvr(), &GroupVersionResource::new("", "v1", "pods"));
        let all = ResourceClient::<Deployment>::namespaced(rest(), "");
        assert_eq!(all.namespace(), None);
        let nodes = ResourceClient::<Node>::cluster(rest());
        assert_eq!(nodes.namespace(), None);
        let generic = ResourceClient::<Namespace>::new(rest(), "ignored");
        assert_eq!(
            generic.namespace(),
            None,
            "a cluster-scoped type has no namespace"
        );
        let generic = ResourceClient::<Pod>::new(rest(), "demo");
        assert_eq!(generic.namespace(), Some("demo"));
    }

    #[tokio::test]
    async fn update_of_an_object_without_a_name_fails_before_sending() {
        let pods = ResourceClient::<Pod>::namespaced(rest(), "demo");
        let err = pods
            .update(&Pod::default(), &UpdateOptions::default())
            .await
            .expect_err("no name");
        assert!(matches!(err, Error::Request(_)), "{err}");
        assert!(err.to_string().contains("pods.v1"), "{err}");
    }

    #[tokio::test]
    async fn apply_without_a_field_manager_fails_before_sending() {
        let pods = ResourceClient::<Pod>::namespaced(rest(), "demo");
        let apply = PatchBody::Apply(serde_json::json!({"apiVersion": "v1", "kind": "Pod"}));
        let err = pods
            .patch("web", &apply, &PatchOptions::default())
            .await
            .expect_err("no manager");
        assert!(err.to_string().contains("field_manager"), "{err}");
        let merge = PatchBody::Merge(serde_json::json!({}));
        let err = pods
            .patch("web", &merge, &PatchOptions::default().force())
            .await
            .expect_err("force without apply");
        assert!(err.to_string().contains("force"), "{err}");
    }

    #[tokio::test]
    async fn writes_tell_the_write_observer_what_they_stored_and_reads_do_not() {
        use crate::rest::test_server::{Reply, TestServer};
        use crate::rest::{WriteObserver, Written};
        use k8s_openapi::api::core::v1::ConfigMap;
        let stored = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"demo","resourceVersion":"42"}}"#;
        let server = TestServer::start(move |_| Reply::json(200, stored)).await;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let observer: WriteObserver = {
            let seen = std::sync::Arc::clone(&seen);
            std::sync::Arc::new(move |w: &Written<'_>| {
                let Written {
                    group,
                    resource,
                    namespace,
                    name,
                    resource_version,
                } = *w;
                let line = format!("{group}/{resource} {namespace}/{name} {resource_version}");
                seen.lock().unwrap().push(line);
            })
        };
        let rest = server.client().with_write_observer(observer);
        let config_maps = ResourceClient::<ConfigMap>::namespaced(rest, "demo");
        config_maps.get("a", &GetOptions::default()).await.unwrap();
        let obj: ConfigMap = serde_json::from_str(stored).unwrap();
        config_maps
            .create(&obj, &CreateOptions::default())
            .await
            .unwrap();
        let merge = PatchBody::Merge(serde_json::json!({}));
        config_maps
            .patch_status("a", &merge, &PatchOptions::default())
            .await
            .unwrap();
        assert_eq!(*seen.lock().unwrap(), ["/configmaps demo/a 42"; 2]);
    }

    mod protobuf {
        use super::*;
        use crate::rest::WatchEvent;
        use crate::rest::test_server::{Reply, TestServer};
        use futures_util::StreamExt;
        use k8s_openapi::api::core::v1::ConfigMap;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

        const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

        fn reply(body: Vec<u8>, content_type: &str, status: u16) -> Reply {
            Reply::Full {
                status,
                headers: vec![("Content-Type", content_type.to_string())],
                body,
            }
        }

        /// A protobuf watch answer.
        fn watch_reply(body: Vec<u8>) -> Reply {
            reply(
                body,
                "application/vnd.kubernetes.protobuf;stream=watch",
                200,
            )
        }

        fn config_map(name: &str) -> ConfigMap {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some(name.into());
            cm.metadata.resource_version = Some("5".into());
            cm.data = Some([("k".to_string(), "v".to_string())].into());
            cm
        }

        /// Every event of a watch that opened.
        async fn collected<S: futures_util::Stream>(watch: Result<S>) -> Vec<S::Item> {
            watch.unwrap().collect().await
        }

        /// A watch body of `events`, each (type, enveloped object), as kube-apiserver frames it.
        fn frames(events: &[(&str, Vec<u8>)]) -> Vec<u8> {
            let mut out = Vec::new();
            for (kind, object) in events {
                kubekit_protobuf::WatchEvent {
                    event_type: kind.to_string(),
                    object,
                }
                .write_frame(&mut out);
            }
            out
        }

        #[tokio::test]
        async fn typed_clients_ask_for_protobuf_then_cbor_then_json_as_configured() {
            let server = TestServer::start(|_| {
                reply(kubekit_protobuf::encode(&config_map("a")), PROTOBUF, 200)
            })
            .await;
            let cms = ResourceClient::<ConfigMap>::namespaced(server.client(), "demo");
            assert_eq!(
                cms.get("a", &GetOptions::default()).await.unwrap(),
                config_map("a")
            );
            assert_eq!(
                server.accepts(),
                ["application/vnd.kubernetes.protobuf, application/json"]
            );

            let mut json_only = server.config();
            json_only.protobuf = false;
            let cms = ResourceClient::<ConfigMap>::namespaced(
                RestClient::new(&json_only).unwrap(),
                "demo",
            );
            let _ = cms.get("a", &GetOptions::default()).await;
            assert_eq!(
                server.accepts()[1],
                "application/cbor, application/json;q=0.9",
                "RestConfig::protobuf = false asks for CBOR first"
            );
            let json_only = json_only.with_cbor(false);
            let cms = ResourceClient::<ConfigMap>::namespaced(
                RestClient::new(&json_only).unwrap(),
                "demo",
            );
            let _ = cms.get("a", &GetOptions::default()).await;
            assert_eq!(
                server.accepts()[2],
                "application/json",
                "without protobuf and CBOR, JSON alone"
            );
        }

        #[tokio::test]
        async fn creates_and_updates_send_protobuf_bodies_unless_json_is_forced() {
            let server = TestServer::start(|_| {
                reply(kubekit_protobuf::encode(&config_map("a")), PROTOBUF, 200)
            })
            .await;
            let cms = ResourceClient::<ConfigMap>::namespaced(server.client(), "demo");
            let cm = config_map("a");
            cms.create(&cm, &CreateOptions::default()).await.unwrap();
            cms.update(&cm, &UpdateOptions::default()).await.unwrap();
            let mut json_only = server.config();
            json_only.protobuf = false;
            ResourceClient::<ConfigMap>::namespaced(RestClient::new(&json_only).unwrap(), "demo")
                .create(&cm, &CreateOptions::default())
                .await
                .unwrap();
            let bodies = server.bodies();
            assert_eq!(bodies.len(), 3);
            for (content_type, body) in &bodies[..2] {
                assert_eq!(content_type, PROTOBUF);
                assert_eq!(kubekit_protobuf::decode::<ConfigMap>(body).unwrap(), cm);
            }
            assert_eq!(bodies[2].0, "application/json");
            let sent: ConfigMap = serde_json::from_slice(&bodies[2].1).unwrap();
            assert_eq!(sent, cm);
        }

        #[tokio::test]
        async fn protobuf_lists_watches_errors_and_delete_statuses_decode() {
            let list = k8s_openapi::List {
                items: vec![config_map("a"), config_map("b")],
                metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta {
                    resource_version: Some("9".into()),
                    ..Default::default()
                },
            };
            let not_found = Status {
                code: Some(404),
                reason: Some("NotFound".into()),
                message: Some("configmaps \"x\" not found".into()),
                status: Some("Failure".into()),
                ..Default::default()
            };
            let success = Status {
                status: Some("Success".into()),
                ..Default::default()
            };
            let bookmark = {
                let mut cm = ConfigMap::default();
                cm.metadata.resource_version = Some("12".into());
                cm.metadata.annotations =
                    Some([("k8s.io/initial-events-end".to_string(), "true".to_string())].into());
                cm
            };
            let (list_body, status_body, success_body) = (
                kubekit_protobuf::encode(&list),
                kubekit_protobuf::encode_as("v1", "Status", &not_found),
                kubekit_protobuf::encode_as("v1", "Status", &success),
            );
            let watch_body = frames(&[
                ("ADDED", kubekit_protobuf::encode(&config_map("a"))),
                ("BOOKMARK", kubekit_protobuf::encode(&bookmark)),
                ("ERROR", status_body.clone()),
            ]);
            let server = TestServer::start(move |line| {
                if line.contains("watch=true") {
                    watch_reply(watch_body.clone())
                } else if line.starts_with("DELETE") {
                    reply(success_body.clone(), PROTOBUF, 200)
                } else if line.contains("/configmaps/x") {
                    reply(status_body.clone(), PROTOBUF, 404)
                } else {
                    reply(list_body.clone(), PROTOBUF, 200)
                }
            })
            .await;
            let cms = ResourceClient::<ConfigMap>::namespaced(server.client(), "demo");

            let got = cms.list(&ListOptions::default()).await.unwrap();
            assert_eq!(got.items, list.items);
            assert_eq!(got.metadata.resource_version.as_deref(), Some("9"));
            let page = cms.list_page(&ListOptions::default()).await.unwrap();
            assert_eq!(page.metadata.resource_version.as_deref(), Some("9"));
            assert_eq!(page.items.await.unwrap().items.len(), 2);

            let err = cms.get("x", &GetOptions::default()).await.unwrap_err();
            assert!(err.is_not_found(), "{err}");
            assert!(
                err.to_string().contains("configmaps \"x\" not found"),
                "{err}"
            );

            let deleted = cms.delete("a", &DeleteOptions::default()).await.unwrap();
            assert_eq!(
                deleted.status().and_then(|s| s.status.as_deref()),
                Some("Success")
            );

            let events = collected(cms.watch(&ListOptions::default()).await).await;
            assert!(
                matches!(&events[0], Ok(WatchEvent::Added(cm)) if cm == &config_map("a")),
                "{events:?}"
            );
            assert!(
                matches!(&events[1], Ok(WatchEvent::Bookmark(b)) if b.resource_version == "12" && b.is_initial_events_end()),
                "{events:?}"
            );
            assert!(
                matches!(&events[2], Ok(WatchEvent::Error(s)) if s.code == Some(404)),
                "{events:?}"
            );
            assert_eq!(events.len(), 3);
        }

        #[cfg(feature = "compact")]
        #[tokio::test]
        async fn compact_clients_of_built_in_types_read_protobuf_and_keep_the_messages() {
            use crate::compact::{Compact, Encoding};
            let list = k8s_openapi::List {
                items: vec![config_map("a"), config_map("b")],
                metadata: Default::default(),
            };
            let (list_body, object) = (
                kubekit_protobuf::encode(&list),
                kubekit_protobuf::encode(&config_map("c")),
            );
            let watch_body = frames(&[("MODIFIED", object.clone())]);
            let server = TestServer::start(move |line| {
                if line.contains("watch=true") {
                    watch_reply(watch_body.clone())
                } else if line.contains("/configmaps/c") {
                    reply(object.clone(), PROTOBUF, 200)
                } else {
                    reply(list_body.clone(), PROTOBUF, 200)
                }
            })
            .await;
            let cms = ResourceClient::<Compact<ConfigMap>>::namespaced(server.client(), "demo");
            let got = cms.list(&ListOptions::default()).await.unwrap();
            let names: Vec<_> = got.items.iter().map(|c| c.meta().name.clone()).collect();
            assert_eq!(names, [Some("a".into()), Some("b".into())]);
            assert_eq!(got.items[1].encoding(), Encoding::Protobuf);
            assert_eq!(*got.items[1].get().unwrap(), config_map("b"));
            let c = cms.get("c", &GetOptions::default()).await.unwrap();
            assert_eq!(*c.get().unwrap(), config_map("c"));
            let events = collected(cms.watch(&ListOptions::default()).await).await;
            assert!(
                matches!(&events[..], [Ok(WatchEvent::Modified(cm))] if *cm.get().unwrap() == config_map("c")),
                "{events:?}"
            );
            assert!(
                server.accepts().iter().all(|a| a.starts_with(PROTOBUF)),
                "{:?}",
                server.accepts()
            );
        }

        #[tokio::test]
        async fn a_malformed_protobuf_item_is_skipped_and_reported_and_a_cut_frame_ends_the_watch_with_an_error()
         {
            // A ConfigMapList whose second item holds a length running past its end.
            use kubekit_protobuf::runtime::{Encoder, Field, Message, WireType};
            let mut e = Encoder::new(kubekit_protobuf::MAGIC.to_vec());
            e.key(1, WireType::Len);
            e.nested(|e| {
                Field::encode(&"v1".to_string(), 1, e);
                Field::encode(&"ConfigMapList".to_string(), 2, e);
            });
            e.key(2, WireType::Len);
            e.nested(|e| {
                e.key(2, WireType::Len);
                e.nested(|e| config_map("a").encode_fields(e));
                e.key(2, WireType::Len);
                e.bytes(&[0x0a, 0x7f, 0x00]);
            });
            let list = e.into_bytes();
            let mut watch = frames(&[("ADDED", kubekit_protobuf::encode(&config_map("a")))]);
            watch.extend_from_slice(&[0, 0, 1, 0, 1, 2]);
            let (list2, watch2) = (list.clone(), watch.clone());
            let server = TestServer::start(move |line| {
                if line.contains("watch=true") {
                    watch_reply(watch2.clone())
                } else {
                    reply(list2.clone(), PROTOBUF, 200)
                }
            })
            .await;
            let cms = ResourceClient::<ConfigMap>::namespaced(server.client(), "demo");
            let got = cms.list(&ListOptions::default()).await.unwrap();
            assert_eq!(got.items, vec![config_map("a")]);
            assert_eq!(got.skipped.len(), 1);
            assert!(
                got.skipped[0].to_string().contains("item 1"),
                "{}",
                got.skipped[0]
            );

            let events = collected(cms.watch(&ListOptions::default()).await).await;
            assert!(matches!(&events[0], Ok(WatchEvent::Added(_))));
            let last = events.last().unwrap().as_ref().unwrap_err().to_string();
            assert!(last.contains("stream ended mid-event"), "{last}");
        }
    }
}

/// The controller reference to `owner` of its child `name` in `namespace`, or why `owner`
/// cannot own it: it has no uid (it was not read from the server), or it is namespaced in
/// another namespace.
fn owner_reference<O: Resource<DynamicType = ()>>(
    owner: &O,
    namespace: Option<&str>,
    name: &str,
) -> Result<OwnerReference> {
    let refuse = |why: String| Err(Error::Request(format!("applying child {name:?}: {why}")));
    let owner_meta = owner.meta();
    let owner_name = owner_meta.name.as_deref().unwrap_or_default();
    if owner_meta.uid.as_deref().unwrap_or_default().is_empty() {
        return refuse(format!(
            "its owner {} {owner_name:?} has no uid (read it from the server first)",
            O::kind(&())
        ));
    }
    if let (Some(theirs), Some(ours)) = (owner_meta.namespace.as_deref(), namespace)
        && theirs != ours
    {
        return refuse(format!(
            "its owner {} {owner_name:?} is in namespace {theirs:?}, not {ours:?} (an owner \
             must be in its children's namespace, or cluster-scoped)",
            O::kind(&())
        ));
    }
    Ok(controller_ref(owner))
}

/// The apply configuration of [`ResourceClient::apply_child`]: `fields` with the child's
/// type, name, namespace and controller reference to `owner`.
fn child_config<K, O>(
    owner: &O,
    namespace: Option<&str>,
    name: &str,
    fields: serde_json::Value,
) -> Result<serde_json::Value>
where
    K: Resource<DynamicType = ()>,
    O: Resource<DynamicType = ()>,
{
    let refuse = |why: String| Err(Error::Request(format!("applying child {name:?}: {why}")));
    let reference = owner_reference(owner, namespace, name)?;
    let serde_json::Value::Object(mut config) = fields else {
        return refuse(format!("its fields must be a JSON object, got {fields}"));
    };
    let metadata = config
        .entry("metadata")
        .or_insert_with(|| serde_json::json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return refuse(format!(
            "its metadata must be a JSON object, got {metadata}"
        ));
    };
    metadata.insert("name".into(), name.into());
    if let Some(namespace) = namespace {
        metadata.insert("namespace".into(), namespace.into());
    }
    let reference = serde_json::to_value(reference)
        .map_err(|e| Error::Request(format!("applying child {name:?}: {e}")))?;
    metadata.insert("ownerReferences".into(), vec![reference].into());
    config.insert("apiVersion".into(), K::api_version(&()).into());
    config.insert("kind".into(), K::kind(&()).into());
    Ok(config.into())
}

/// The name of the object `config` configures, or why a client of `K` in `namespace` must
/// not send it.
fn applied_name<'a, K, A>(config: &'a A, namespace: Option<&str>) -> Result<&'a str>
where
    K: Resource<DynamicType = ()>,
    A: ApplyConfiguration,
{
    checked_name(config, &K::api_version(&()), Some(&K::kind(&())), namespace)
}

/// The name `config` applies, refused unsent when `config` is of another `apiVersion` (or,
/// when given, another `kind`) than the client's, has no `metadata.name`, or names another
/// namespace than the client's `namespace`.
pub(crate) fn checked_name<'a, A: ApplyConfiguration>(
    config: &'a A,
    api_version: &str,
    kind: Option<&str>,
    namespace: Option<&str>,
) -> Result<&'a str> {
    if A::API_VERSION != api_version || kind.is_some_and(|k| k != A::KIND) {
        let target = match kind {
            Some(kind) => format!("{api_version} {kind}"),
            None => api_version.to_string(),
        };
        return Err(Error::Request(format!(
            "an apply configuration of {} {} sent to the client of {target}",
            A::API_VERSION,
            A::KIND
        )));
    }
    let kind = A::KIND;
    let name = config.name().filter(|n| !n.is_empty()).ok_or_else(|| {
        Error::Request(format!(
            "an apply configuration of {kind} without metadata.name"
        ))
    })?;
    if let (Some(theirs), Some(ours)) = (config.namespace(), namespace)
        && theirs != ours
    {
        return Err(Error::Request(format!(
            "the apply configuration of {kind} {name:?} in namespace {theirs:?} sent to a client of namespace {ours:?}"
        )));
    }
    Ok(name)
}

#[cfg(test)]
mod apply_tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kubekit_applyconfigurations::api::core::v1 as ac;

    use super::applied_name;
    use crate::rest::Error;

    fn refusal(result: crate::rest::Result<&str>) -> String {
        match result {
            Err(Error::Request(why)) => why,
            other => panic!("not refused unsent: {other:?}"),
        }
    }

    #[test]
    fn a_typed_apply_names_the_object_its_configuration_names() {
        let config = ac::ConfigMap::new("settings", "demo");
        assert_eq!(
            applied_name::<ConfigMap, _>(&config, Some("demo")).unwrap(),
            "settings"
        );
        assert_eq!(
            applied_name::<ConfigMap, _>(&config, None).unwrap(),
            "settings"
        );
    }

    #[test]
    fn a_typed_apply_of_another_kind_without_a_name_or_in_another_namespace_is_refused_unsent() {
        let config = ac::ConfigMap::new("settings", "demo");
        assert_eq!(
            refusal(applied_name::<Deployment, _>(&config, Some("demo"))),
            "an apply configuration of v1 ConfigMap sent to the client of apps/v1 Deployment"
        );
        assert_eq!(
            refusal(applied_name::<ConfigMap, _>(
                &ac::ConfigMap::default(),
                Some("demo")
            )),
            "an apply configuration of ConfigMap without metadata.name"
        );
        assert_eq!(
            refusal(applied_name::<ConfigMap, _>(&config, Some("other"))),
            "the apply configuration of ConfigMap \"settings\" in namespace \"demo\" sent to a client of namespace \"other\""
        );
    }
}

#[cfg(test)]
mod child_tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::child_config;
    use crate::rest::Error;

    fn owner(namespace: &str, uid: Option<&str>) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.name = Some("web".into());
        d.metadata.namespace = Some(namespace.into());
        d.metadata.uid = uid.map(str::to_string);
        d
    }

    #[test]
    fn a_child_config_has_the_type_name_namespace_and_only_a_controller_reference() {
        let fields = json!({ "metadata": { "labels": { "app": "web" },
            "ownerReferences": [{ "uid": "someone-else" }] }, "data": { "a": "b" } });
        let config =
            child_config::<ConfigMap, _>(&owner("demo", Some("u-1")), Some("demo"), "s", fields)
                .unwrap();
        assert_eq!(
            config,
            json!({ "apiVersion": "v1", "kind": "ConfigMap", "data": { "a": "b" },
                "metadata": { "name": "s", "namespace": "demo", "labels": { "app": "web" },
                    "ownerReferences": [{ "apiVersion": "apps/v1", "kind": "Deployment",
                        "name": "web", "uid": "u-1", "controller": true,
                        "blockOwnerDeletion": true }] } })
        );
    }

    #[test]
    fn a_child_config_is_refused_with_a_clear_error_for_bad_fields_or_owners() {
        let refused = |owner: Deployment, namespace: &str, fields| match child_config::<ConfigMap, _>(
            &owner,
            Some(namespace),
            "s",
            fields,
        ) {
            Err(Error::Request(message)) => message,
            other => panic!("not refused: {other:?}"),
        };
        let ok = || owner("demo", Some("u-1"));
        assert!(refused(ok(), "demo", json!([1])).contains("must be a JSON object"));
        let bad_meta = json!({ "metadata": "x" });
        assert!(refused(ok(), "demo", bad_meta).contains("metadata must be a JSON object"));
        assert!(refused(owner("demo", None), "demo", json!({})).contains("has no uid"));
        let elsewhere = refused(ok(), "other", json!({}));
        assert!(
            elsewhere.contains("in namespace \"demo\", not \"other\""),
            "{elsewhere}"
        );
    }
}
