//! kubekit's client layer: everything that talks to the API server and the object forms it
//! decodes, below the informers. Programs use it through the [`kubekit`] facade
//! (`kubekit::rest`, `kubekit::clientset`, …), whose paths are these modules'.
//!
//! [`kubekit`]: https://docs.rs/kubekit
//!
//! # Layers
//!
//! Imports flow one way, from the top of this table to the bottom; the crates above this
//! one (kubekit-runtime, kubekit-webhook, kubekit-manager) import it, never the reverse.
//!
//! | module | client-go package | what it holds |
//! |---|---|---|
//! | [`rest`] | `rest`, `util/flowcontrol` | configuration, the request builder, rate limiting, retries, API errors, the protobuf codecs it decodes with |
//! | [`discovery`] | `discovery`, `restmapper` | server version, groups and resources, cached discovery, GVK ↔ GVR |
//! | [`clientset`] | `kubernetes` | typed clients for built-in and custom resources |
//! | [`retry`] | `util/retry`, `wait.Backoff` | read-modify-writes retried on conflict, with backoff |
//! | [`dynamic`] | `dynamic` | unstructured objects by group/version/resource |
//! | [`metadata`] | `metadata` | the metadata of objects of any resource, negotiated as `PartialObjectMetadata` |
//! | [`scale`] | `scale` | the `scale` subresource of any scalable resource |
//! | [`pods`] | `Pods(ns).GetLogs`, `tools/remotecommand`, `tools/portforward` | a Pod's logs, exec, attach and port-forward |
//! | `compact` | — | objects kept compressed as the server sent them, decoded on access (the `compact` feature) |
//!
//! The base every layer reads: [`meta`] (group/version/kind and resource names, owner
//! references, [`meta::Object`] and [`meta::ObjectKey`]), [`meta_ref`] (an object's
//! metadata as caches read it, typed or packed), [`labels`] (label selectors),
//! [`validation`] (object names as the server checks them), [`conditions`]
//! (apimachinery's `api/meta` conditions helpers), [`flowcontrol`] (client-side rate
//! limiting), and the task helpers the other crates share: [`spawn`] (tokio's spawns,
//! boxed), [`panic`](mod@panic) (a caught panic's message) and [`serve`] (the HTTP/1 connection loop of
//! kubekit's servers).

pub mod clientset;
#[cfg(feature = "compact")]
pub mod compact;
pub mod conditions;
pub mod discovery;
pub mod dynamic;
pub mod flowcontrol;
#[cfg(test)]
mod fuzz;
pub mod labels;
pub mod meta;
pub mod meta_ref;
pub mod metadata;
pub mod panic;
mod per_type;
pub mod pods;
pub mod rest;
pub mod retry;
pub mod scale;
pub mod serve;
pub mod spawn;
pub mod validation;
