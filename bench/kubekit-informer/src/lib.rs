//! kubekit's peers of the informer benchmark (`bench/run.sh informer`), in a program of
//! their own as client-go's and kube-rs's peers are: what a user's controller binary holds
//! (kubekit, tokio, the client), not the other benchmarks, the replay server and
//! kubekit-fake that `kubekit-bench` carries. Each reports on stdout in the protocol of
//! [`informer_protocol`].
//!
//! - [`informer_peer`]: the Pod informer of a `SharedInformerFactory`, typed, compact or
//!   metadata-only.
//! - [`floor_peer`]: the readers that make the informers' request and decode nothing, the
//!   benchmark's floor.

pub mod floor_peer;
pub mod informer_peer;
