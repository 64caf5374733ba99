//! kubekit is client-go for Rust: the pieces a Kubernetes controller is built from,
//! natively on tokio.
//!
//! # Getting started
//!
//! A controller is an `async fn` that brings one object's world in line with it, run by a
//! [`Manager`](manager::Manager) that watches the objects and their children, queues the
//! changes and retries failures. This one gives every Deployment a ConfigMap of settings,
//! owned by the Deployment (so it goes away with it), written with typed server-side apply
//! (so it owns exactly the fields it sets, and fields set by others are left alone:
//! [`apply_owned`](clientset::ResourceClient::apply_owned) and [`applyconfigurations`]);
//! a change to either enqueues the Deployment:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use kubekit::applyconfigurations::api::core::v1 as core;
//! use kubekit::k8s_openapi::api::apps::v1::Deployment;
//! use kubekit::k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::prelude::*;
//!
//! const MANAGER: &str = "settings-controller";
//!
//! struct Ctx {
//!     clientset: Clientset,
//! }
//!
//! async fn reconcile(deploy: Arc<Deployment>, ctx: Arc<Ctx>) -> Result<ReconcileAction, ReconcileError> {
//!     let ns = deploy.namespace().unwrap_or_default();
//!     let replicas = deploy.spec.replicas.unwrap_or(1);
//!     let settings = core::ConfigMap::new(format!("{}-settings", deploy.name_any()), &ns)
//!         .data([("replicas", replicas.to_string())]);
//!     // Applied with a controller reference to the Deployment, by MANAGER, forcing its fields.
//!     let config_maps = ctx.clientset.core_v1().config_maps(&ns);
//!     config_maps.apply_owned(&*deploy, settings, MANAGER).await?;
//!     Ok(ReconcileAction::Done)
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let mut mgr = Manager::builder(RestConfig::infer().await?).build()?;
//!     let ctx = Arc::new(Ctx { clientset: mgr.clientset().clone() });
//!     mgr.controller::<Deployment>(MANAGER)
//!         .owns::<ConfigMap>()
//!         .build(reconcile, ctx)?;
//!     mgr.start(shutdown_signal()).await?; // until SIGINT or SIGTERM
//!     Ok(())
//! }
//! ```
//!
//! [`prelude`] brings in what a controller like this uses; [`finalizer`] cleans up what
//! cannot be owned (objects elsewhere, outside resources) before an object goes, and
//! [`conditions`] keeps a status's conditions as the API conventions ask. The repository's
//! `examples/` crate has runnable programs, `config-map-generator` among them, a custom
//! resource with a finalizer and a `Ready` condition.
//!
//! # Dependencies
//!
//! [`kube`] and [`k8s_openapi`] are re-exported, at the versions kubekit is built with:
//! `kubekit::k8s_openapi::api::core::v1::Pod` is the type kubekit's clients take. A
//! program still lists `k8s-openapi` among its own dependencies, at the same version, to
//! enable the one feature that picks the Kubernetes version (`v1_37`): a library must not
//! pick it, or two libraries picking different ones would not build together. The
//! repository's README has the whole `[dependencies]` block, and its guide (`docs/`) a
//! chapter per part of kubekit, starting with `docs/getting-started.md`.
//!
//! Cargo features on by default: `protobuf-writes` (creates and updates of built-in types
//! in protobuf; JSON without it), `prebuilt-common` (the typed informer accessors of the
//! core kinds most controllers read, compiled in kubekit) and `apply-apps` (the apply
//! configurations of the `apps` and core groups; `apply-<group>` adds another group's,
//! `apply-all` every group's). Off by default: `compact` (`cache::Compact` and zstd's C
//! library), `ws` (exec, attach and port-forward in [`pods`]), `prebuilt-<group>` (a whole
//! group's accessors compiled in kubekit: `prebuilt-core`, `prebuilt-apps`, …,
//! `prebuilt-all`) and `simd-json` (JSON decoded by simd-json first). A program that needs
//! none of the defaults compiles less without them: see "Cargo features and build time" in
//! the guide's `docs/getting-started.md`.
//!
//! # Layers
//!
//! The library is layered the way client-go is, one crate per layer; data and imports flow
//! one way, from the top of this list to the bottom, and Cargo keeps them so. kubekit
//! re-exports each layer's modules under the paths below, so a program depends on
//! `kubekit` alone; an edit of an upper layer rebuilds only the crates above it.
//!
//! | crate | modules | client-go / controller-runtime |
//! |---|---|---|
//! | `kubekit-client` | [`rest`], [`discovery`], [`clientset`], [`retry`], [`dynamic`], [`metadata`], [`scale`], [`pods`]; the base: [`meta`], [`labels`], [`validation`], [`conditions`], [`flowcontrol`], `cache::meta_ref` and `cache::Compact` | `rest`, `discovery`, `kubernetes`, `util/retry`, `dynamic`, `metadata`, `scale`, `tools/remotecommand`; apimachinery's `labels`, `util/validation`, `api/meta` |
//! | `kubekit-runtime` | [`cache`], [`watch`], [`informers`], [`listers`], [`workqueue`], [`controller`], [`finalizer`], [`record`], [`leaderelection`] | `tools/cache`, `tools/watch`, `informers`, `listers`, `util/workqueue`, `tools/record`, `tools/leaderelection`; controller-runtime's finalizer helpers |
//! | `kubekit-webhook` | [`webhook`] | controller-runtime `pkg/webhook` |
//! | `kubekit-manager` | [`manager`] | controller-runtime `manager`, `builder` |
//!
//! What each module holds:
//!
//! | module | what it holds |
//! |---|---|
//! | [`rest`] | configuration, the request builder, rate limiting, retries, API errors |
//! | [`discovery`] | server version, groups and resources, cached discovery, GVK ↔ GVR |
//! | [`clientset`] | typed clients for built-in and custom resources |
//! | [`retry`] | read-modify-writes retried on conflict, with backoff |
//! | [`dynamic`] | unstructured objects by group/version/resource |
//! | [`metadata`] | the metadata of objects of any resource, negotiated as `PartialObjectMetadata` |
//! | [`scale`] | the `scale` subresource of any scalable resource |
//! | [`pods`] | a Pod's logs, exec, attach and port-forward |
//! | [`cache`] | Reflector, DeltaFifo, Indexer, SharedIndexInformer, compact objects |
//! | [`watch`] | a watch restarted from its last resourceVersion; waiting for conditions |
//! | [`informers`], [`listers`] | the shared informer factory (typed, dynamic and metadata informers) and listers |
//! | [`workqueue`] | work queues with per-item backoff and metrics |
//! | [`controller`] | workers over a work queue: retries, panics caught, graceful shutdown |
//! | [`finalizer`] | clean-up before an object is deleted, guarded patches of the finalizer list |
//! | [`record`] | event broadcaster, recorder and correlator |
//! | [`leaderelection`] | Lease-based leader election |
//! | [`webhook`] | admission (validating, defaulting) and conversion webhooks over HTTPS, with reloaded or generated certificates |
//! | [`manager`] | the manager (shared clientset, informers, events, metrics, health, leader election, sharding) and the controller builder |
//!
//! Beside the layers: [`meta`] (group/version/kind and resource names, owner references,
//! [`meta::Object`] and [`meta::ObjectKey`]), [`conditions`] (apimachinery's
//! `api/meta` conditions helpers for `status.conditions`), [`flowcontrol`] (client-side
//! rate limiting) and [`prelude`] (the names a controller uses, in one `use`).

pub use k8s_openapi;
pub use kube;

pub mod prelude;

/// The README and the guide in `docs/`, whose Rust examples are compiled (and run where
/// they need no cluster) as doc tests. Only in doc tests: `docs/` lies outside the crate's
/// package.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../docs/README.md")]
    pub struct Contents;
    #[doc = include_str!("../../docs/getting-started.md")]
    pub struct GettingStarted;
    #[doc = include_str!("../../docs/coming-from.md")]
    pub struct ComingFrom;
    #[doc = include_str!("../../docs/clients.md")]
    pub struct Clients;
    #[doc = include_str!("../../docs/informers-and-caches.md")]
    pub struct InformersAndCaches;
    #[doc = include_str!("../../docs/manager.md")]
    pub struct Manager;
    #[doc = include_str!("../../docs/webhooks.md")]
    pub struct Webhooks;
    #[doc = include_str!("../../docs/testing.md")]
    pub struct Testing;
    #[doc = include_str!("../../docs/operations.md")]
    pub struct Operations;
    #[doc = include_str!("../../docs/reliability.md")]
    pub struct Reliability;
    #[doc = include_str!("../../docs/performance.md")]
    pub struct Performance;
}

#[doc(inline)]
pub use kubekit_applyconfigurations as applyconfigurations;
#[doc(inline)]
pub use kubekit_client::{
    clientset, conditions, discovery, dynamic, flowcontrol, labels, meta, metadata, pods, rest,
    retry, scale, validation,
};
#[doc(inline)]
pub use kubekit_manager as manager;
#[doc(inline)]
pub use kubekit_runtime::{
    cache, controller, finalizer, informers, leaderelection, listers, record, watch, workqueue,
};
#[doc(inline)]
pub use kubekit_webhook as webhook;
