//! The REST layer (client-go's `rest`, `util/flowcontrol`, `transport`): how kubekit talks
//! to the API server.
//!
//! - [`RestConfig`]: where to connect and how (kubeconfig, in-cluster, `--master`), plus
//!   client-side rate limiting, timeouts and the retry budget.
//! - [`RestClient`]: requests built from verb, group/version, namespace, resource, name,
//!   subresource, parameters and body; responses decoded into objects, lists or watch
//!   streams.
//! - [`Error`]: every failure, with the API's `Status` and client-go's predicates
//!   (`is_not_found`, `is_conflict`, …).
//! - [`leading`]: an object's or a list's `metadata`, read without scanning the rest.
//! - [`RestClientMetrics`]: client-go's `rest_client_*` metrics.
//!
//! Authentication, TLS and connection pooling are `kube`'s; credentials never appear in
//! logs, `Debug` output or errors.

pub(crate) mod cbor;
pub mod client;
pub mod config;
pub mod error;
mod gzip;
pub(crate) mod json;
pub mod leading;
mod list;
pub mod metrics;
pub(crate) mod protobuf;
mod refusal;
mod request;
mod response;
mod retry;
#[cfg(any(test, feature = "test-util"))]
pub mod test_server;
pub mod watch;
mod watch_stream;

pub use client::{
    ListPage, MAX_ERROR_BODY_BYTES, MAX_RETRY_AFTER, ObjectList, PatchType, Request, Response,
    RestClient, WarningHandler, WriteGuard, WriteObserver, Written, decode, decode_list,
};
pub use config::{
    DEFAULT_BURST, DEFAULT_CBOR, DEFAULT_COMPRESSION, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_RETRIES,
    DEFAULT_QPS, DEFAULT_TIMEOUT, RestConfig,
};
pub(crate) use request::valid_segment;

/// The former name of [`RestConfig`], renamed because it clashed with `kube::Config`.
///
/// ```
/// # #![allow(deprecated)]
/// let config: kubekit::rest::Config = kubekit::rest::Config::from_url("http://127.0.0.1:8001")?;
/// let _renamed: kubekit::rest::RestConfig = config;
/// # Ok::<(), kubekit::rest::Error>(())
/// ```
#[deprecated(note = "renamed `RestConfig` (the old name clashed with `kube::Config`)")]
pub type Config = RestConfig;
pub use error::{Error, MAX_MESSAGE_LEN, Result};
pub use metrics::RestClientMetrics;
pub use watch::{
    Bookmark, EVENT_TYPES, INITIAL_EVENTS_END_ANNOTATION, MAX_WATCH_EVENT_BYTES, WatchDecoder,
    WatchEvent, decode_event,
};
