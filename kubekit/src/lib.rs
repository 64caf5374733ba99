//! kubekit is client-go for Rust: the pieces a Kubernetes controller is built from,
//! natively on tokio.
//!
//! # Getting started
//!
//! A controller is an `async fn` that brings one object's world in line with it, run by a
//! [`Manager`](manager::Manager) that watches the objects and their children, queues the
//! changes and retries failures. This one gives every Deployment a ConfigMap of settings,
//! owned by the Deployment (so it goes away with it), written with server-side apply (so
//! fields set by others are left alone: [`apply_child`](clientset::ResourceClient::apply_child));
//! a change to either enqueues the Deployment:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use kubekit::k8s_openapi::api::apps::v1::Deployment;
//! use kubekit::k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::prelude::*;
//! use serde_json::json;
//!
//! const MANAGER: &str = "settings-controller";
//!
//! struct Ctx {
//!     clientset: Clientset,
//! }
//!
//! async fn reconcile(deploy: Arc<Deployment>, ctx: Arc<Ctx>) -> Result<ReconcileAction, ReconcileError> {
//!     let name = format!("{}-settings", deploy.name_any());
//!     let replicas = deploy.spec.replicas.unwrap_or(1);
//!     let settings = json!({ "data": { "replicas": replicas.to_string() } });
//!     let config_maps = ctx.clientset.core_v1().config_maps(&deploy.namespace().unwrap_or_default());
//!     // Applied with a controller reference to the Deployment, by MANAGER, forcing its fields.
//!     config_maps.apply_child(&*deploy, &name, settings, MANAGER).await?;
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
//! repository's README has the whole `[dependencies]` block.
//!
//! Cargo features on by default: `compact` (`cache::Compact` and zstd), `ws` (exec, attach
//! and port-forward in [`pods`]), `protobuf-writes` (creates and updates of built-in types
//! in protobuf; JSON without it) and `prebuilt-common` (the typed informer accessors of the
//! core kinds most controllers read, compiled in kubekit). Off by default:
//! `prebuilt-<group>` (a whole group's accessors compiled in kubekit: `prebuilt-core`,
//! `prebuilt-apps`, …, `prebuilt-all`) and `simd-json` (JSON decoded by simd-json first).
//! A program that needs none of the first three compiles less without them: see the
//! README's "Build time".
//!
//! # Layers
//!
//! The library is layered the way client-go is; data and imports flow one way, from the
//! top of this list to the bottom:
//!
//! | module | client-go package | what it holds |
//! |---|---|---|
//! | [`rest`] | `rest`, `util/flowcontrol` | configuration, the request builder, rate limiting, retries, API errors |
//! | [`discovery`] | `discovery`, `restmapper` | server version, groups and resources, cached discovery, GVK ↔ GVR |
//! | [`clientset`] | `kubernetes` | typed clients for built-in and custom resources |
//! | [`retry`] | `util/retry`, `wait.Backoff` | read-modify-writes retried on conflict, with backoff |
//! | [`dynamic`] | `dynamic` | unstructured objects by group/version/resource |
//! | [`metadata`] | `metadata`, `metadatainformer`, `metadatalister` | the metadata of objects of any resource, negotiated as `PartialObjectMetadata` |
//! | [`scale`] | `scale` | the `scale` subresource of any scalable resource |
//! | [`pods`] | `Pods(ns).GetLogs`, `tools/remotecommand`, `tools/portforward` | a Pod's logs, exec, attach and port-forward |
//! | [`cache`] | `tools/cache` | Reflector, DeltaFifo, Indexer, SharedIndexInformer |
//! | [`watch`] | `tools/watch` | a watch restarted from its last resourceVersion; waiting for conditions |
//! | [`informers`], [`listers`] | `informers`, `listers` | the shared informer factory (typed, dynamic and metadata informers) and listers |
//! | [`labels`] | `apimachinery/pkg/labels` | label selectors |
//! | [`validation`] | `apimachinery/pkg/util/validation` | object names as the server checks them |
//! | [`workqueue`] | `util/workqueue` | work queues with per-item backoff and metrics |
//! | [`controller`] | sample-controller's `Run`/`runWorker` pattern | workers over a work queue: retries, panics caught, graceful shutdown |
//! | [`record`] | `tools/record` | event broadcaster, recorder and correlator |
//! | [`leaderelection`] | `tools/leaderelection` | Lease-based leader election |
//! | [`webhook`] | controller-runtime `pkg/webhook` | admission (validating, defaulting) and conversion webhooks over HTTPS, with reloaded or generated certificates |
//! | [`manager`] | controller-runtime `manager`, `builder` | the manager (shared clientset, informers, events, metrics, health, leader election) and the controller builder |
//! | [`finalizer`] | controller-runtime `controllerutil` finalizers | clean-up before an object is deleted, guarded patches of the finalizer list |
//!
//! Beside the layers: [`meta`] (group/version/kind and resource names, owner references,
//! [`meta::Object`] and [`meta::ObjectKey`]), [`conditions`] (apimachinery's
//! `api/meta` conditions helpers for `status.conditions`), [`flowcontrol`] (client-side
//! rate limiting) and [`prelude`] (the names a controller uses, in one `use`).

pub use k8s_openapi;
pub use kube;

pub mod prelude;

pub use kubekit_client::{
    clientset, conditions, discovery, dynamic, flowcontrol, labels, meta, metadata, pods, rest,
    retry, scale, validation,
};
pub use kubekit_manager as manager;
pub use kubekit_runtime::{
    cache, controller, finalizer, informers, leaderelection, listers, record, watch, workqueue,
};
pub use kubekit_webhook as webhook;
