//! [`RestClient`]: requests to the API server, built like client-go's `rest.Request`.
//!
//! A request names its verb, API group/version, namespace, resource, name, subresource,
//! query parameters and body, then is sent:
//!
//! ```no_run
//! # async fn demo(client: kubekit::rest::RestClient) -> kubekit::rest::Result<()> {
//! use k8s_openapi::api::core::v1::Pod;
//!
//! let pods = client
//!     .get()
//!     .group_version("", "v1")
//!     .namespace("default")
//!     .resource("pods")
//!     .param("limit", "10")
//!     .send()
//!     .await?
//!     .decode_list::<Pod>()?;
//! for pod in &pods.items {
//!     println!("{:?}", pod.metadata.name);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # What every request gets
//!
//! - **Rate limiting**: a token bucket shared by all clones of the client (QPS 5, burst 10
//!   unless configured; negative QPS disables it). A request that waited more than a second
//!   for it is logged.
//! - **Retries**: a response 429, or 5xx with `Retry-After`, is retried after the time the
//!   server asked for (1 s if it named none for a 429), at most `max_retries` times (10);
//!   a GET whose connection failed is retried the same way.
//! - **Errors**: a refused request becomes [`Error::Api`] with the server's `Status`.
//! - **Warnings**: each `Warning` header is passed to the warning handler (by default
//!   logged) and kept on the [`Response`].
//! - **Timeouts**: [`Request::timeout`] bounds the request on both sides: it is sent as the
//!   `timeout` query parameter and enforced by the client. Without one, the configuration's
//!   ([`DEFAULT_TIMEOUT`](super::config::DEFAULT_TIMEOUT), 60 s, unless set) applies to
//!   every request but watches, which end at their `timeoutSeconds`.
//! - **Bounded reads**: a response body is read whole only up to
//!   [`RestConfig::max_body_bytes`] (1 GiB unless set; a larger one is an [`Error::TooLarge`]),
//!   the body of a refusal up to [`MAX_ERROR_BODY_BYTES`] (the rest is not read, and the
//!   cut is logged); a watch is read one event at a time, each of at most
//!   [`MAX_WATCH_EVENT_BYTES`](super::MAX_WATCH_EVENT_BYTES).

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use http::header::HeaderValue;
use kubekit_protobuf::DecodeOptions;

use super::config::RestConfig;
use super::error::{Error, Result};
pub use super::list::{ListPage, ObjectList};
use super::metrics::RestClientMetrics;
pub use super::refusal::MAX_ERROR_BODY_BYTES;
pub use super::request::{PatchType, Request};
pub use super::response::{Response, decode, decode_list};
pub use super::retry::MAX_RETRY_AFTER;
use crate::flowcontrol::TokenBucket;

/// Called with the text of every `Warning` header the server sends.
pub type WarningHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// Asked before each write (any request but `GET` and `HEAD`) waits for the rate limit,
/// every 50 ms while it waits, and right before it goes on the wire: `Err(reason)`
/// refuses it with [`Error::Fenced`], unsent. See
/// [`RestClient::with_write_guard`].
pub type WriteGuard = Arc<dyn Fn() -> std::result::Result<(), String> + Send + Sync>;

/// Told of each object a write through the typed, generic or dynamic clients stored (the
/// answer to a create, update or patch, of the object or a subresource), before the
/// caller gets it. See [`RestClient::with_write_observer`].
pub type WriteObserver = Arc<dyn Fn(&Written<'_>) + Send + Sync>;

/// An object a write stored, as a [`WriteObserver`] is told of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written<'a> {
    /// The resource's API group (`""`: the core group).
    pub group: &'a str,
    /// The resource (plural, `deployments`).
    pub resource: &'a str,
    /// The object's namespace (`""`: cluster-scoped).
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The resourceVersion the server stored it at.
    pub resource_version: &'a str,
}

/// Rate-limit waits longer than this are logged, as client-go does.
const LONG_THROTTLE: Duration = Duration::from_secs(1);

/// A client for the API server's REST interface. Cheap to clone; clones share the rate
/// limiter and the connection pool.
#[derive(Clone)]
pub struct RestClient {
    pub(super) inner: Arc<Inner>,
}

#[derive(Clone)]
pub(super) struct Inner {
    pub(super) http: kube::Client,
    limiter: Option<Arc<TokenBucket>>,
    pub(super) max_retries: u32,
    pub(super) timeout: Option<Duration>,
    pub(super) max_body_bytes: usize,
    protobuf: bool,
    /// Whether what has no protobuf form is asked for in CBOR first.
    cbor: bool,
    /// Whether requests ask for gzip (`Accept-Encoding: gzip`).
    pub(super) compression: bool,
    pub(super) user_agent: HeaderValue,
    pub(super) warnings: WarningHandler,
    pub(super) write_guard: Option<WriteGuard>,
    write_observer: Option<WriteObserver>,
    /// Where exchanges are counted and timed, with the `host` label to give them.
    pub(super) metrics: Option<(RestClientMetrics, String)>,
}

impl std::fmt::Debug for RestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestClient")
            .field("qps", &self.inner.limiter.as_deref().map(TokenBucket::qps))
            .field(
                "burst",
                &self.inner.limiter.as_deref().map(TokenBucket::burst),
            )
            .field("max_retries", &self.inner.max_retries)
            .finish_non_exhaustive()
    }
}

impl RestClient {
    /// A client for `config`.
    pub fn new(config: &RestConfig) -> Result<Self> {
        let http = kube::Client::try_from(config.kube_config().clone())
            .map_err(|e| Error::Config(format!("building the HTTP client: {e}")))?;
        let limiter = config
            .effective_rate_limit()
            .map(|(qps, burst)| Arc::new(TokenBucket::new(f64::from(qps), burst)));
        if let Some(warning) = config.cleartext_credentials() {
            tracing::warn!("{warning}");
        }
        let user_agent = HeaderValue::from_str(&config.user_agent).map_err(|_| {
            Error::Config(format!(
                "user agent {:?} is not a valid header",
                config.user_agent
            ))
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                limiter,
                max_retries: config.max_retries,
                timeout: config.timeout,
                max_body_bytes: config.max_body_bytes,
                protobuf: config.protobuf,
                cbor: config.cbor,
                compression: config.compression,
                user_agent,
                warnings: Arc::new(|w| tracing::warn!(warning = w, "API server warning")),
                write_guard: None,
                write_observer: None,
                metrics: config
                    .metrics
                    .clone()
                    .map(|m| (m, metrics_host(config.host()))),
            }),
        })
    }

    /// The same client (sharing its rate limiter), with `handler` receiving the server's
    /// warnings instead of the log.
    pub fn with_warning_handler(&self, handler: WarningHandler) -> Self {
        let mut inner = (*self.inner).clone();
        inner.warnings = handler;
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The same client (sharing its rate limiter and connections), asking `guard` before
    /// every write it sends; a refused write is [`Error::Fenced`] and never reaches the
    /// server. Reads and watches are not asked.
    ///
    /// The manager gives its controllers a client guarded by the leader elector's
    /// `kubekit::leaderelection::LeaderElector::fence`: a leader that was paused
    /// past its renew deadline (stopped, swapped out) and resumes finds its writes refused
    /// before its timers have even fired.
    pub fn with_write_guard(&self, guard: WriteGuard) -> Self {
        let mut inner = (*self.inner).clone();
        inner.write_guard = Some(guard);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The same client (sharing its rate limiter and connections), telling `observer` of
    /// every object a write through a typed, generic or dynamic client on it stored.
    ///
    /// The manager tells its read-your-own-writes tracker: a reconcile does not start
    /// before the informers have seen what the key's last reconcile wrote.
    pub fn with_write_observer(&self, observer: WriteObserver) -> Self {
        let mut inner = (*self.inner).clone();
        inner.write_observer = Some(observer);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Tells the write observer, if any, of `written`.
    pub(crate) fn observe_write(&self, written: &Written<'_>) {
        if let Some(observer) = &self.inner.write_observer {
            observer(written);
        }
    }

    /// Whether typed clients of built-in types ask this client's server for protobuf
    /// ([`RestConfig::protobuf`]).
    pub fn protobuf(&self) -> bool {
        self.inner.protobuf
    }

    /// Whether requests for what has no protobuf form ask this client's server for CBOR
    /// first ([`RestConfig::cbor`]).
    pub fn cbor(&self) -> bool {
        self.inner.cbor
    }

    /// The HTTP client underneath, for the streaming protocols built on kube's websocket
    /// support (exec, attach, port-forward).
    #[cfg(feature = "ws")]
    pub(crate) fn http(&self) -> &kube::Client {
        &self.inner.http
    }

    /// Waits for the client-side rate limiter, as every request does before it is sent.
    pub(crate) async fn throttle(&self, method: &str, url: &str) {
        if let Some(limiter) = &self.inner.limiter {
            let waited = limiter.acquire().await;
            if waited > LONG_THROTTLE {
                tracing::info!(
                    method, url, waited = ?waited,
                    "waited for client-side throttling (not priority-and-fairness)"
                );
            }
        }
    }

    /// The client-side rate limiter, unless disabled.
    pub fn rate_limiter(&self) -> Option<&TokenBucket> {
        self.inner.limiter.as_deref()
    }

    /// A request with HTTP method `method`.
    pub fn request(&self, method: Method) -> Request {
        Request {
            client: self.clone(),
            method,
            prefix: String::new(),
            namespace: None,
            resource: None,
            name: None,
            subresource: None,
            params: String::new(),
            body: None,
            content_type: "application/json",
            accept: "application/json",
            decode_options: DecodeOptions::default(),
            timeout: None,
            error: None,
        }
    }

    /// A GET request.
    pub fn get(&self) -> Request {
        self.request(Method::GET)
    }

    /// A POST request (create).
    pub fn post(&self) -> Request {
        self.request(Method::POST)
    }

    /// A PUT request (update).
    pub fn put(&self) -> Request {
        self.request(Method::PUT)
    }

    /// A PATCH request whose body is of patch type `patch`.
    pub fn patch(&self, patch: PatchType) -> Request {
        let mut r = self.request(Method::PATCH);
        r.content_type = patch.content_type();
        r
    }

    /// A DELETE request.
    pub fn delete(&self) -> Request {
        self.request(Method::DELETE)
    }
}

/// The `host` label of a server's requests: `host:port` of its URL.
fn metrics_host(url: &http::Uri) -> String {
    match (url.host(), url.port_u16()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        _ => url.to_string(),
    }
}
