//! kubekit's runtime layer: what keeps a process's view of the cluster and works through
//! its changes, on top of kubekit-client. Programs use it through the [`kubekit`] facade
//! (`kubekit::cache`, `kubekit::informers`, …), whose paths are these modules'.
//!
//! [`kubekit`]: https://docs.rs/kubekit
//!
//! # Layers
//!
//! Imports flow one way, from the top of this table to the bottom, and from kubekit-client
//! into this crate; kubekit-webhook and kubekit-manager sit above it.
//!
//! | module | client-go package | what it holds |
//! |---|---|---|
//! | [`cache`] | `tools/cache` | Reflector, DeltaFifo, Indexer, SharedIndexInformer |
//! | [`watch`] | `tools/watch` | a watch restarted from its last resourceVersion; waiting for conditions |
//! | [`informers`], [`listers`] | `informers`, `listers` | the shared informer factory (typed, dynamic and metadata informers) and listers |
//! | [`workqueue`] | `util/workqueue` | work queues with per-item backoff and metrics |
//! | [`controller`] | sample-controller's `Run`/`runWorker` pattern | workers over a work queue: retries, panics caught, graceful shutdown |
//! | [`finalizer`] | controller-runtime `controllerutil` finalizers | clean-up before an object is deleted, guarded patches of the finalizer list |
//! | [`record`] | `tools/record` | event broadcaster, recorder and correlator |
//! | [`leaderelection`] | `tools/leaderelection` | Lease-based leader election |

pub mod cache;
pub mod controller;
pub mod finalizer;
pub mod informers;
pub mod leaderelection;
pub mod listers;
pub mod record;
pub mod watch;
pub mod workqueue;
