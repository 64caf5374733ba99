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

use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use futures_util::future::BoxFuture;
use http::header::{
    ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, HeaderValue, RETRY_AFTER, USER_AGENT,
};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, Status};
use kubekit_protobuf::DecodeOptions;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::cbor;
use super::config::RestConfig;
use super::error::{Error, Result};
use super::gzip::ResponseBody;
use super::leading::read_metadata;
use super::metrics::RestClientMetrics;
use super::watch::{WatchDecoder, WatchEvent};
use super::watch_stream::{DecodedWatch, decoders};
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

/// How often a write waiting for the rate limit asks its [`WriteGuard`] again.
const GUARD_POLL: Duration = Duration::from_millis(50);

/// A client for the API server's REST interface. Cheap to clone; clones share the rate
/// limiter and the connection pool.
#[derive(Clone)]
pub struct RestClient {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    http: kube::Client,
    limiter: Option<Arc<TokenBucket>>,
    max_retries: u32,
    timeout: Option<Duration>,
    max_body_bytes: usize,
    protobuf: bool,
    /// Whether what has no protobuf form is asked for in CBOR first.
    cbor: bool,
    /// Whether requests ask for gzip (`Accept-Encoding: gzip`).
    compression: bool,
    user_agent: HeaderValue,
    warnings: WarningHandler,
    write_guard: Option<WriteGuard>,
    write_observer: Option<WriteObserver>,
    /// Where exchanges are counted and timed, with the `host` label to give them.
    metrics: Option<(RestClientMetrics, String)>,
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

/// How a PATCH body is to be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902 JSON patch: a list of operations.
    Json,
    /// RFC 7386 JSON merge patch.
    Merge,
    /// Kubernetes strategic merge patch (built-in types only).
    StrategicMerge,
    /// Server-side apply: the body is the caller's whole intent for the fields it manages.
    Apply,
}

impl PatchType {
    /// The `Content-Type` of a body of this patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
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

/// One request being built; see the [module docs](self). Send it with [`Request::send`]
/// or [`Request::watch`]. `Debug` shows the method, URL and the body's size, never the
/// body (it may be a Secret).
#[must_use = "a request does nothing until it is sent"]
pub struct Request {
    client: RestClient,
    method: Method,
    prefix: String,
    namespace: Option<String>,
    resource: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
    params: String,
    body: Option<Bytes>,
    content_type: &'static str,
    accept: &'static str,
    /// What decoding the answer leaves out.
    decode_options: DecodeOptions,
    /// The timeout set on this request; without one, the client's applies (watches
    /// excepted).
    timeout: Option<Duration>,
    error: Option<String>,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("url", &self.url())
            .field("body_bytes", &self.body.as_ref().map(Bytes::len))
            .field("content_type", &self.content_type)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// A path segment must be non-empty and free of `/`, `%` and `..` tricks.
pub(crate) fn valid_segment(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '%', '?', '#'])
}

impl Request {
    fn segment(mut self, what: &str, value: &str, set: impl FnOnce(&mut Self, String)) -> Self {
        if valid_segment(value) {
            set(&mut self, value.to_string());
        } else if self.error.is_none() {
            self.error = Some(format!("invalid {what} {value:?}"));
        }
        self
    }

    /// The API group and version: `("", "v1")` is the core group at `/api/v1`, others are
    /// at `/apis/<group>/<version>`.
    pub fn group_version(mut self, group: &str, version: &str) -> Self {
        self.prefix = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        self
    }

    /// An absolute path prefix, for paths outside the resource layout (`/version`,
    /// `/apis`, `/openapi/v3`, …).
    pub fn abs_path(mut self, path: &str) -> Self {
        self.prefix = path.trim_end_matches('/').to_string();
        self
    }

    /// The namespace of the resource; an empty string means all namespaces.
    pub fn namespace(self, namespace: &str) -> Self {
        if namespace.is_empty() {
            return self;
        }
        self.segment("namespace", namespace, |r, v| r.namespace = Some(v))
    }

    /// The resource (plural name, e.g. `pods`).
    pub fn resource(self, resource: &str) -> Self {
        self.segment("resource", resource, |r, v| r.resource = Some(v))
    }

    /// The object's name.
    pub fn name(self, name: &str) -> Self {
        self.segment("name", name, |r, v| r.name = Some(v))
    }

    /// A subresource of the object (`status`, `scale`, `log`, …).
    pub fn subresource(self, subresource: &str) -> Self {
        self.segment("subresource", subresource, |r, v| r.subresource = Some(v))
    }

    /// Adds a query parameter (may repeat).
    pub fn param(mut self, key: &str, value: &str) -> Self {
        let mut ser = form_urlencoded::Serializer::for_suffix(std::mem::take(&mut self.params), 0);
        ser.append_pair(key, value);
        self.params = ser.finish();
        self
    }

    /// Sets a raw body with its content type.
    pub fn body_bytes(mut self, body: impl Into<Bytes>, content_type: &'static str) -> Self {
        self.body = Some(body.into());
        self.content_type = content_type;
        self
    }

    /// Sets the body to `value` as JSON, keeping the content type (JSON, or the patch type).
    pub fn body<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(b) => self.body = Some(b.into()),
            Err(e) => self.error = Some(format!("request body does not serialize: {e}")),
        }
        self
    }

    /// What decoding the answer leaves out (nothing unless set): skipped while decoding
    /// protobuf; cut from JSON lists and watch events before they are decoded.
    pub(crate) fn decode_options(mut self, options: DecodeOptions) -> Self {
        self.decode_options = options;
        self
    }

    /// Sets the `Accept` header (by default `application/json`), e.g. to ask for
    /// aggregated discovery documents.
    pub fn accept(mut self, accept: &'static str) -> Self {
        self.accept = accept;
        self
    }

    /// Bounds the request to `timeout`, on the server (`timeout` parameter) and here.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The path and query this request will be sent to by [`send`](Self::send).
    pub fn url(&self) -> String {
        self.url_with_timeout(self.send_timeout())
    }

    /// The timeout of [`send`](Self::send): the request's, or the client's default.
    fn send_timeout(&self) -> Option<Duration> {
        self.timeout.or(self.client.inner.timeout)
    }

    /// The path and query, with `timeout` as the `timeout` parameter.
    fn url_with_timeout(&self, timeout: Option<Duration>) -> String {
        let mut url = self.prefix.clone();
        if let Some(ns) = &self.namespace {
            let _ = write!(url, "/namespaces/{ns}");
        }
        for part in [&self.resource, &self.name, &self.subresource]
            .into_iter()
            .flatten()
        {
            let _ = write!(url, "/{part}");
        }
        if url.is_empty() {
            url.push('/');
        }
        let mut query = self.params.clone();
        if let Some(t) = timeout.filter(|t| !t.is_zero()) {
            let mut ser = form_urlencoded::Serializer::for_suffix(query, 0);
            ser.append_pair("timeout", &format!("{}s", t.as_secs().max(1)));
            query = ser.finish();
        }
        if !query.is_empty() {
            url.push('?');
            url.push_str(&query);
        }
        url
    }

    /// What the request is about, for error messages: `pods "web" in namespace "demo"`.
    fn describe(&self) -> String {
        let mut d = self.resource.clone().unwrap_or_else(|| self.prefix.clone());
        if let Some(name) = &self.name {
            let _ = write!(d, " {name:?}");
        }
        if let Some(sub) = &self.subresource {
            let _ = write!(d, " ({sub})");
        }
        if let Some(ns) = &self.namespace {
            let _ = write!(d, " in namespace {ns:?}");
        }
        d
    }

    /// Sends the request (with rate limiting and retries) and reads the whole response.
    /// A non-success status is an [`Error::Api`].
    pub async fn send(self) -> Result<Response> {
        let url = self.url();
        let what = self.describe();
        let exchange = async {
            let res = self.exchange(&url).await?;
            let status = res.status();
            let warnings = self.take_warnings(&res);
            let content_type = res
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let content_encoding = res
                .headers()
                .get(CONTENT_ENCODING)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            if !status.is_success() {
                return Err(self.refusal(&url, status, res.into_body()).await);
            }
            let limit = self.client.inner.max_body_bytes;
            let body = match read_body(res.into_body(), limit).await {
                Ok(ReadBody::Whole(body)) => body,
                Ok(ReadBody::Cut(_)) => {
                    let e = Error::TooLarge {
                        what: format!("the response to {} {url}", self.method),
                        limit,
                    };
                    tracing::warn!("{e}");
                    return Err(e);
                }
                Err(e) => return Err(self.transport_error(&url, e)),
            };
            Ok(Response {
                status,
                content_type,
                content_encoding,
                body,
                warnings,
                what: format!("{what} from {} {url}", self.method),
                decode_options: self.decode_options,
            })
        };
        self.bounded(&url, exchange).await
    }

    /// Starts a watch (`watch=true` is added) and returns its events as they arrive. The
    /// stream ends when the server closes it (at its `timeoutSeconds`) or the connection
    /// drops; a malformed event is an `Err` item and the stream goes on. Events that
    /// arrive together (a streaming list, a burst) are decoded on every core, in order.
    /// The client's default timeout does not apply (a timeout set on the request does, on
    /// the server).
    pub async fn watch<K: DeserializeOwned + Send + 'static>(
        self,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>>> + Send + use<K>> {
        let (this, url, res) = self.open_watch().await?;
        let content_type = res
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let decoder = if content_type.is_some_and(is_protobuf) {
            WatchDecoder::<K>::protobuf(this.describe())
        } else if content_type.is_some_and(cbor::is_cbor) {
            WatchDecoder::<K>::cbor(this.describe())
        } else {
            WatchDecoder::<K>::new(this.describe())
        };
        let decoder = decoder.with_decode_options(this.decode_options);
        Ok(DecodedWatch::new(res.into_body(), decoder, move |e| {
            this.transport_error(&url, e)
        }))
    }

    /// Opens the watch of [`watch`](Self::watch): the request, its URL and the accepted
    /// response. Not generic, so compiled once for every type watched.
    async fn open_watch(self) -> Result<(Self, String, http::Response<ResponseBody>)> {
        let this = self.param("watch", "true");
        let url = this.url_with_timeout(this.timeout);
        let res = this.exchange(&url).await?;
        let res = this.accepted(&url, res).await?;
        Ok((this, url, res))
    }

    /// Sends the request and returns its response body as it arrives, chunk by chunk: for
    /// responses that never end or that are read as they come (a followed container log,
    /// client-go's `Request.Stream`). A non-success status is an [`Error::Api`]. The
    /// timeout (the request's, else the client's default) bounds the wait for the
    /// response's head only; the body is read until the server ends it or the stream is
    /// dropped. A broken connection is an `Err` item, the last one.
    pub async fn stream(self) -> Result<impl Stream<Item = Result<Bytes>> + Send + use<>> {
        // Only a timeout set on this request is sent: the client's default is for
        // requests that end, and must not cut a followed stream on the server.
        let url = self.url_with_timeout(self.timeout);
        let res = self.bounded(&url, self.exchange(&url)).await?;
        let res = self.accepted(&url, res).await?;
        let body = res.into_body().into_data_stream();
        Ok(futures_util::StreamExt::map(body, move |chunk| {
            chunk.map_err(|e| self.transport_error(&url, e))
        }))
    }

    /// `work` bounded by the request's timeout, else the client's default (none if zero).
    async fn bounded<T>(
        &self,
        url: &str,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        match self.send_timeout() {
            Some(t) if !t.is_zero() => tokio::time::timeout(t, work)
                .await
                .unwrap_or_else(|_| Err(self.timeout_error(url, t))),
            _ => work.await,
        }
    }

    /// `res` when the server accepted the request (its warnings passed on), else the
    /// error of its refusal: for responses read as they arrive.
    async fn accepted(
        &self,
        url: &str,
        res: http::Response<ResponseBody>,
    ) -> Result<http::Response<ResponseBody>> {
        let status = res.status();
        if !status.is_success() {
            return Err(self.refusal(url, status, res.into_body()).await);
        }
        self.take_warnings(&res);
        Ok(res)
    }

    /// Sends the request until it succeeds, fails for good, or the retry budget is spent.
    async fn exchange(&self, url: &str) -> Result<http::Response<ResponseBody>> {
        if let Some(e) = &self.error {
            return Err(Error::Request(format!("{} {url}: {e}", self.method)));
        }
        let inner = &self.client.inner;
        let retry_transport = self.method == Method::GET;
        let send = || async {
            self.throttle_guarded(url).await?;
            let started = std::time::Instant::now();
            let res = inner
                .http
                .send(self.build(url)?)
                .await
                .map(ResponseBody::of);
            if let Some((metrics, host)) = &inner.metrics {
                let code = res.as_ref().ok().map(|r| r.status().as_u16());
                metrics.observe(code, self.method.as_str(), host, started.elapsed());
            }
            res.map_err(|e| self.transport_error(url, e))
        };
        with_retries(inner.max_retries, retry_transport, send).await
    }

    /// Waits for the rate limit, asking the client's write guard (if this is a write)
    /// before, every [`GUARD_POLL`] while waiting, and at the end: a write the guard starts
    /// refusing meanwhile fails then, unsent, rather than after its turn.
    async fn throttle_guarded(&self, url: &str) -> Result<()> {
        self.check_write_guard(url)?;
        let guarded = self.guard().is_some();
        let throttle = self.client.throttle(self.method.as_str(), url);
        tokio::pin!(throttle);
        loop {
            tokio::select! {
                biased;
                () = &mut throttle => return self.check_write_guard(url),
                () = tokio::time::sleep(GUARD_POLL), if guarded => self.check_write_guard(url)?,
            }
        }
    }

    /// The client's write guard, if it has one and this request is a write.
    fn guard(&self) -> Option<&WriteGuard> {
        let read = self.method == Method::GET || self.method == Method::HEAD;
        self.client.inner.write_guard.as_ref().filter(|_| !read)
    }

    /// Refuses a write the client's guard does not allow, now.
    fn check_write_guard(&self, url: &str) -> Result<()> {
        let Some(guard) = self.guard() else {
            return Ok(());
        };
        guard().map_err(|reason| {
            tracing::warn!(method = %self.method, url, %reason, "write refused before it was sent");
            Error::Fenced {
                verb: self.method.to_string(),
                url: url.to_string(),
                reason,
            }
        })
    }

    fn build(&self, url: &str) -> Result<http::Request<kube::client::Body>> {
        let body = self.body.clone().unwrap_or_default();
        let mut req = http::Request::builder()
            .method(self.method.clone())
            .uri(url)
            .header(ACCEPT, self.accept)
            .header(USER_AGENT, self.client.inner.user_agent.clone());
        if self.body.is_some() {
            req = req.header(CONTENT_TYPE, self.content_type);
        }
        if self.client.inner.compression {
            req = req.header(ACCEPT_ENCODING, "gzip");
        }
        req.body(kube::client::Body::from(body))
            .map_err(|e| Error::Request(format!("{} {url}: {e}", self.method)))
    }

    /// The error for a refusal: the API error its body (read up to
    /// [`MAX_ERROR_BODY_BYTES`]) describes.
    async fn refusal(&self, url: &str, status: StatusCode, body: ResponseBody) -> Error {
        let body = match read_body(body, MAX_ERROR_BODY_BYTES).await {
            Ok(ReadBody::Whole(body)) => body,
            Ok(ReadBody::Cut(start)) => {
                tracing::warn!(
                    "{} {url}: the body of the {status} response is over {MAX_ERROR_BODY_BYTES} bytes; reading only those",
                    self.method
                );
                start
            }
            // The code is the answer; a body cut short only loses the details.
            Err(_) => Bytes::new(),
        };
        api_error(self.method.as_str(), url, status, &body)
    }

    fn take_warnings<B>(&self, res: &http::Response<B>) -> Vec<String> {
        let warnings: Vec<String> = res
            .headers()
            .get_all("warning")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(warning_text)
            .collect();
        for w in &warnings {
            (self.client.inner.warnings)(w);
        }
        warnings
    }

    fn transport_error(
        &self,
        url: &str,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Transport {
            verb: self.method.to_string(),
            url: url.to_string(),
            source: Box::new(e),
        }
    }

    fn timeout_error(&self, url: &str, after: Duration) -> Error {
        Error::Timeout {
            verb: self.method.to_string(),
            url: url.to_string(),
            after,
        }
    }
}

/// The most of a refusal's body (a 4xx or 5xx response, a failed watch) that is read:
/// enough for any `metav1.Status`, whose message is then cut at
/// [`MAX_MESSAGE_LEN`](super::MAX_MESSAGE_LEN) anyway.
pub const MAX_ERROR_BODY_BYTES: usize = 1 << 20;

/// A body read up to a limit.
enum ReadBody {
    /// The whole body.
    Whole(Bytes),
    /// The body went past the limit: its first `limit` bytes (the rest is not read).
    Cut(Bytes),
}

/// Reads `body` up to `limit` bytes; a body whose announced length is over the limit is
/// not read at all. The frames are joined once at the end (no copy for a body of one
/// frame), as `collect` does.
async fn read_body<B>(mut body: B, limit: usize) -> Result<ReadBody, B::Error>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    if usize::try_from(body.size_hint().lower()).map_or(true, |n| n > limit) {
        return Ok(ReadBody::Cut(Bytes::new()));
    }
    let mut frames = Vec::new();
    let mut total = 0;
    let mut cut = false;
    while let Some(frame) = body.frame().await {
        let Ok(mut data) = frame?.into_data() else {
            continue;
        };
        if total + data.len() > limit {
            data.truncate(limit - total);
            cut = true;
        }
        total += data.len();
        frames.push(data);
        if cut {
            break;
        }
    }
    let bytes = match <[Bytes; 1]>::try_from(frames) {
        Ok([one]) => one,
        Err(frames) => {
            let mut joined = bytes::BytesMut::with_capacity(total);
            frames.iter().for_each(|f| joined.extend_from_slice(f));
            joined.freeze()
        }
    };
    Ok(if cut {
        ReadBody::Cut(bytes)
    } else {
        ReadBody::Whole(bytes)
    })
}

/// The `host` label of a server's requests: `host:port` of its URL.
fn metrics_host(url: &http::Uri) -> String {
    match (url.host(), url.port_u16()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        _ => url.to_string(),
    }
}

/// Calls `send` until its response needs no retry or `max_retries` retries are spent,
/// sleeping as [`retry_after`] says between attempts. A transport error is retried (after
/// 1 s) only when `retry_transport` is set, i.e. for idempotent reads.
async fn with_retries<B, F, Fut>(
    max_retries: u32,
    retry_transport: bool,
    mut send: F,
) -> Result<http::Response<B>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<http::Response<B>>>,
{
    let mut attempt = 0;
    loop {
        let result = send().await;
        let delay = match &result {
            Ok(res) => retry_after(res),
            Err(Error::Transport { .. }) if retry_transport => Some(Duration::from_secs(1)),
            Err(_) => None,
        };
        match delay {
            Some(delay) if attempt < max_retries => {
                attempt += 1;
                tracing::debug!(attempt, ?delay, "retrying a throttled or failed request");
                tokio::time::sleep(delay).await;
            }
            _ => return result,
        }
    }
}

/// The longest `Retry-After` honoured: a server asking for more gets this (logged).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// When the response asks to be retried: a 429, or a 5xx with `Retry-After`, after the
/// delay the server named (1 s for a 429 that named none), at most [`MAX_RETRY_AFTER`];
/// a wait over 5 s is logged when it begins.
fn retry_after<B>(res: &http::Response<B>) -> Option<Duration> {
    let status = res.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let header = res
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match header {
        Some(secs) if secs > MAX_RETRY_AFTER.as_secs() => {
            tracing::warn!(
                "the server asked to retry after {secs} s; waiting {MAX_RETRY_AFTER:?}, kubekit's cap"
            );
            Some(MAX_RETRY_AFTER)
        }
        Some(secs) if secs > 5 => {
            tracing::info!("the server asked to retry after {secs} s; waiting");
            Some(Duration::from_secs(secs))
        }
        Some(secs) => Some(Duration::from_secs(secs.max(1))),
        None if status == StatusCode::TOO_MANY_REQUESTS => Some(Duration::from_secs(1)),
        None => None,
    }
}

/// The text of a `Warning` header: `299 - "text"` → `text`.
fn warning_text(header: &str) -> String {
    let rest = header.trim();
    let rest = rest
        .strip_prefix("299")
        .map(str::trim_start)
        .unwrap_or(rest);
    let rest = rest.strip_prefix('-').map(str::trim_start).unwrap_or(rest);
    match rest
        .strip_prefix('"')
        .and_then(|r| r.rfind('"').map(|end| &r[..end]))
    {
        Some(quoted) => quoted.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => rest.to_string(),
    }
}

/// The error for a non-success response: the server's `Status` when the body is one,
/// otherwise a status made from the HTTP code and the start of the body.
fn api_error(verb: &str, url: &str, code: StatusCode, body: &[u8]) -> Error {
    let status = status_of(body)
        .filter(|s| s.code.is_some() || s.reason.is_some())
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(&body[..body.len().min(512)])
                .trim()
                .to_string();
            Status {
                code: Some(i32::from(code.as_u16())),
                reason: Some(reason_for_code(code).into()),
                status: Some("Failure".into()),
                message: Some(if text.is_empty() {
                    code.canonical_reason().unwrap_or("unknown").to_string()
                } else {
                    text
                }),
                ..Default::default()
            }
        });
    Error::from_status(verb, url, status)
}

/// The `metav1.Status` a body holds, as JSON or (answering a request that asked for
/// protobuf or CBOR) enveloped protobuf or self-described CBOR.
pub(crate) fn status_of(body: &[u8]) -> Option<Status> {
    if body.starts_with(kubekit_protobuf::MAGIC) {
        let unknown = kubekit_protobuf::Unknown::read(body).ok()?;
        return (unknown.kind == "Status")
            .then(|| unknown.decode().ok())
            .flatten();
    }
    if body.starts_with(&cbor::SELF_DESCRIBED) {
        return cbor::from_slice(body).ok();
    }
    serde_json::from_slice(body).ok()
}

/// The `metav1.StatusReason` the API would give for a bare HTTP code.
fn reason_for_code(code: StatusCode) -> &'static str {
    match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

/// A successful response, read whole.
#[derive(Debug, Clone)]
pub struct Response {
    status: StatusCode,
    content_type: String,
    /// The `Content-Encoding` the body came in (`gzip`); `body` is decoded already.
    content_encoding: Option<String>,
    body: Bytes,
    warnings: Vec<String>,
    what: String,
    decode_options: DecodeOptions,
}

/// A list of objects: the `items` of a `*List` response and its list metadata (the
/// resourceVersion to watch from, the `continue` token of the next page).
#[derive(Debug)]
pub struct ObjectList<K> {
    /// `metadata` of the list.
    pub metadata: ListMeta,
    /// `metadata.shardInfo.selector`: the shard selector the server applied to the list
    /// (see `kubekit::cache::ShardSelector`); `None` when it applied none —
    /// none was asked for, or the server ignores the parameter. Read whatever Kubernetes
    /// version k8s-openapi was built for (its `ListMeta` has the field from 1.36 on).
    pub shard_selector: Option<String>,
    /// The objects that decoded.
    pub items: Vec<K>,
    /// Items that did not decode, each with the reason; they are left out of `items`.
    pub skipped: Vec<Error>,
}

impl<K> Default for ObjectList<K> {
    fn default() -> Self {
        Self {
            metadata: ListMeta::default(),
            shard_selector: None,
            items: Vec::new(),
            skipped: Vec::new(),
        }
    }
}

/// A page of a list whose items may still be decoding: its metadata (the resourceVersion,
/// the `continue` token of the next page) is at hand at once, so the next page can be
/// asked for while this one decodes.
pub struct ListPage<K> {
    /// `metadata` of the list.
    pub metadata: ListMeta,
    /// The shard selector the server applied, as in [`ObjectList::shard_selector`].
    pub shard_selector: Option<String>,
    /// The page's objects, once decoded.
    pub items: BoxFuture<'static, Result<ObjectList<K>>>,
}

impl<K> fmt::Debug for ListPage<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListPage")
            .field("metadata", &self.metadata)
            .field("shard_selector", &self.shard_selector)
            .finish_non_exhaustive()
    }
}

impl<K: Send + 'static> ListPage<K> {
    /// A page already decoded.
    pub fn ready(list: ObjectList<K>) -> Self {
        Self {
            metadata: list.metadata.clone(),
            shard_selector: list.shard_selector.clone(),
            items: Box::pin(std::future::ready(Ok(list))),
        }
    }
}

#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

/// What a list's `metadata` holds beside [`ListMeta`]: the `shardInfo` the server echoes.
#[derive(Deserialize)]
struct Echo {
    #[serde(rename = "shardInfo")]
    shard_info: Option<ShardInfo>,
}

#[derive(Deserialize)]
struct ShardInfo {
    selector: Option<String>,
}

/// A list's metadata and its non-empty `shardInfo.selector`, from both as decoded.
fn list_metadata(metadata: Option<ListMeta>, echo: Option<Echo>) -> (ListMeta, Option<String>) {
    let selector = echo
        .and_then(|e| e.shard_info?.selector)
        .filter(|s| !s.is_empty());
    (metadata.unwrap_or_default(), selector)
}

/// A JSON list's `metadata` and its `shardInfo.selector` (see
/// [`ObjectList::shard_selector`]), from the raw `metadata` value.
fn json_list_metadata(raw: Option<&RawValue>) -> serde_json::Result<(ListMeta, Option<String>)> {
    let Some(raw) = raw else {
        return Ok((ListMeta::default(), None));
    };
    Ok(list_metadata(
        serde_json::from_str(raw.get())?,
        serde_json::from_str(raw.get())?,
    ))
}

/// A CBOR `*List` body, its items not decoded yet.
struct CborList<'a> {
    metadata: ListMeta,
    shard_selector: Option<String>,
    /// Each item's bytes.
    items: Vec<&'a [u8]>,
}

/// A CBOR list's `metadata` and `shardInfo.selector`, and its items' bytes.
fn cbor_list_parts<'a>(body: &'a [u8], what: &str) -> Result<CborList<'a>> {
    let list_error = |e| cbor_error(format!("list of {what}"), e, body);
    let entries = cbor::map_entries(body).map_err(list_error)?;
    let (metadata, selector) = match cbor::entry(&entries, "metadata") {
        Some(raw) => list_metadata(
            cbor::from_slice(raw).map_err(list_error)?,
            cbor::from_slice(raw).map_err(list_error)?,
        ),
        None => (ListMeta::default(), None),
    };
    let items = match cbor::entry(&entries, "items") {
        Some(raw) if raw != [0xf6] => cbor::array_items(raw).map_err(list_error)?,
        _ => Vec::new(),
    };
    Ok(CborList {
        metadata,
        shard_selector: selector,
        items,
    })
}

/// A CBOR decoding error as an [`Error::Decode`].
pub(crate) fn cbor_error(what: impl Into<String>, e: cbor::Error, body: &[u8]) -> Error {
    Error::decode(what, serde::de::Error::custom(e), body)
}

impl Response {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The `Content-Type` the server sent (empty if none).
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// The `Content-Encoding` the server sent the body in (`gzip` when it compressed it,
    /// see [`RestConfig::compression`]); [`body`](Self::body) is decompressed already.
    pub fn content_encoding(&self) -> Option<&str> {
        self.content_encoding.as_deref()
    }

    /// The raw body.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The server's warnings about this request (the text of each `Warning` header).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What the response answers, for messages: `pods "web" in namespace "demo" from GET
    /// /api/v1/...`.
    pub(crate) fn what(&self) -> &str {
        &self.what
    }

    /// Whether the body is protobuf (`application/vnd.kubernetes.protobuf`), which the
    /// server sends when the request asked for it and the type has a protobuf form.
    pub fn is_protobuf(&self) -> bool {
        is_protobuf(&self.content_type)
    }

    /// Whether the body is CBOR (`application/cbor`), which kube-apiserver sends with its
    /// `CBORServingAndStorage` feature when the request asked for it
    /// ([`RestConfig::cbor`](super::RestConfig::cbor)).
    pub fn is_cbor(&self) -> bool {
        cbor::is_cbor(&self.content_type)
    }

    /// Decodes the body as one `T`, from JSON, protobuf or CBOR as the server sent it.
    pub fn decode<T: DeserializeOwned + 'static>(&self) -> Result<T> {
        if self.is_protobuf() {
            return decode_protobuf(&self.body, &self.what, self.decode_options);
        }
        if self.is_cbor() {
            return cbor::from_slice(&self.body).map_err(|e| cbor_error(&self.what, e, &self.body));
        }
        decode(&self.body, &self.what)
    }

    /// Decodes the body as a list of `K`, from JSON, protobuf or CBOR as the server sent
    /// it. Items are decoded one by one: an item that does not decode is reported in
    /// [`ObjectList::skipped`] (and logged) and the others are kept; a body that is not a
    /// list at all is an error.
    pub fn decode_list<K: DeserializeOwned + Send + 'static>(&self) -> Result<ObjectList<K>> {
        if self.is_protobuf() {
            return decode_protobuf_list(&self.body, &self.what, self.decode_options);
        }
        if self.is_cbor() {
            return decode_cbor_list(&self.body, &self.what, self.decode_options);
        }
        decode_json_list(&self.body, &self.what, self.decode_options)
    }

    /// A `*List` response as a [`ListPage`]: its metadata read at once (without scanning
    /// the items), its items decoded on tokio's blocking pool once awaited.
    pub fn into_list_page<K>(self) -> Result<ListPage<K>>
    where
        K: DeserializeOwned + Send + 'static,
    {
        let (metadata, shard_selector) = if self.is_protobuf() {
            let codec = codec_for::<K>(&self.what)?;
            let parts = protobuf_list_parts(codec, &self.body, &self.what)?;
            (parts.metadata, parts.shard_selector)
        } else if self.is_cbor() {
            let list = cbor_list_parts(&self.body, &self.what)?;
            (list.metadata, list.shard_selector)
        } else {
            read_metadata::<Box<RawValue>>(&self.body)
                .and_then(|raw| json_list_metadata(raw.as_deref()))
                .map_err(|e| Error::decode(format!("list of {}", self.what), e, &self.body))?
        };
        Ok(ListPage {
            metadata,
            shard_selector,
            items: Box::pin(self.decode_list_in_background()),
        })
    }

    /// [`decode_list`](Self::decode_list) on tokio's blocking pool, so that decoding a
    /// large page (tens of milliseconds) holds up no task of the runtime.
    pub async fn decode_list_in_background<K>(self) -> Result<ObjectList<K>>
    where
        K: DeserializeOwned + Send + 'static,
    {
        let what = self.what.clone();
        let runtime = tokio::runtime::Handle::current();
        crate::spawn::spawn_blocking(&runtime, move || self.decode_list())
            .await
            .unwrap_or_else(|e| Err(Error::Request(format!("decoding {what}: {e}"))))
    }
}

/// Decodes one object of `K` as kubekit's clients, watches and informers do, with
/// serde_json's error naming `what` when it does not decode. With kubekit's `simd-json`
/// feature, in one pass with every array allocated at its exact length (about a tenth less
/// heap for a Pod than `serde_json::from_slice`, and faster).
pub fn decode<K: DeserializeOwned>(json: &[u8], what: &str) -> Result<K> {
    super::json::from_slice(json).map_err(|e| Error::decode(what, e, json))
}

/// Decodes a JSON `*List` body item by item, on every core; see
/// [`Response::decode_list`].
pub fn decode_list<K: DeserializeOwned + Send>(body: &[u8], what: &str) -> Result<ObjectList<K>> {
    decode_json_list(body, what, DecodeOptions::default())
}

/// [`decode_list`], each item without `metadata.managedFields` when `options` skip them.
fn decode_json_list<K: DeserializeOwned + Send>(
    body: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<ObjectList<K>> {
    let list_error = |e| Error::decode(format!("list of {what}"), e, body);
    let raw: RawList<'_> = serde_json::from_slice(body).map_err(list_error)?;
    let (metadata, shard_selector) = json_list_metadata(raw.metadata).map_err(list_error)?;
    let items: Vec<&[u8]> = raw
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|item| item.get().as_bytes())
        .collect();
    Ok(decode_items(
        metadata,
        shard_selector,
        &items,
        &|item, i| {
            let json = json_without(item, &[], options);
            super::json::from_slice(&json)
                .map_err(|e| Error::decode(format!("item {i} of {what}"), e, &json))
        },
    ))
}

/// Decodes a CBOR `*List` body item by item, on every core like [`decode_list`].
fn decode_cbor_list<K: DeserializeOwned + Send>(
    body: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<ObjectList<K>> {
    let list = cbor_list_parts(body, what)?;
    Ok(decode_items(
        list.metadata,
        list.shard_selector,
        &list.items,
        &|item, i| {
            cbor::from_slice_with(item, options)
                .map_err(|e| cbor_error(format!("item {i} of {what}"), e, item))
        },
    ))
}

/// `json`, which holds an object at `path`, without what `options` leave out (see
/// `rest::json::without_managed_fields`).
pub(crate) fn json_without<'a>(
    json: &'a [u8],
    path: &[&[u8]],
    options: DecodeOptions,
) -> Cow<'a, [u8]> {
    if options.skip_managed_fields {
        super::json::without_managed_fields(json, path)
    } else {
        Cow::Borrowed(json)
    }
}

/// Whether a `Content-Type` is kube-apiserver's protobuf (an object, a list or a watch).
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type.starts_with(kubekit_protobuf::CONTENT_TYPE)
}

/// A protobuf decoding error as an [`Error::Decode`].
pub(crate) fn protobuf_error(
    what: impl Into<String>,
    e: kubekit_protobuf::Error,
    body: &[u8],
) -> Error {
    Error::decode(what, serde::de::Error::custom(e), body)
}

/// The protobuf codec of `K`: of a built-in type, or of a [`Compact`](crate::compact::Compact)
/// one.
#[cfg(feature = "compact")]
pub(crate) fn protobuf_codec<K: 'static>() -> Option<&'static kubekit_protobuf::Codec> {
    kubekit_protobuf::codec::<K>().or_else(crate::compact::protobuf_codec::<K>)
}

/// The protobuf codec of `K`, a built-in type (there are no compact types without the
/// `compact` feature).
#[cfg(not(feature = "compact"))]
pub(crate) fn protobuf_codec<K: 'static>() -> Option<&'static kubekit_protobuf::Codec> {
    kubekit_protobuf::codec::<K>()
}

/// The protobuf codec of `K`, or the error of a protobuf body for a type that has none.
pub(crate) fn codec_for<K: 'static>(what: &str) -> Result<&'static kubekit_protobuf::Codec> {
    protobuf_codec::<K>().ok_or_else(|| {
        let e = kubekit_protobuf::Error::new(format!(
            "{} has no protobuf form, and the server answered in protobuf",
            std::any::type_name::<K>()
        ));
        protobuf_error(what, e, &[])
    })
}

/// Decodes an enveloped protobuf object as a `K`.
fn decode_protobuf<K: 'static>(body: &[u8], what: &str, options: DecodeOptions) -> Result<K> {
    codec_for::<K>(what)?
        .decode_with(body, options)
        .map_err(|e| protobuf_error(what, e, body))
}

/// A protobuf `*List` body's metadata and item messages, checking that it is a list of
/// `codec`'s kind.
fn protobuf_list_parts<'a>(
    codec: &kubekit_protobuf::Codec,
    body: &'a [u8],
    what: &str,
) -> Result<kubekit_protobuf::ListParts<'a>> {
    let list_error = |e| protobuf_error(format!("list of {what}"), e, body);
    let unknown = kubekit_protobuf::Unknown::read(body).map_err(list_error)?;
    unknown
        .expect(codec.api_version(), &format!("{}List", codec.kind()))
        .map_err(list_error)?;
    kubekit_protobuf::split_list(unknown.raw).map_err(list_error)
}

/// Decodes a protobuf `*List` body item by item, on every core like [`decode_list`].
pub(crate) fn decode_protobuf_list<K: Send + 'static>(
    body: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<ObjectList<K>> {
    let codec = codec_for::<K>(what)?;
    let parts = protobuf_list_parts(codec, body, what)?;
    Ok(decode_items(
        parts.metadata,
        parts.shard_selector,
        &parts.items,
        &|item, i| {
            codec
                .decode_message_with(item, options)
                .map_err(|e| protobuf_error(format!("item {i} of {what}"), e, item))
        },
    ))
}

/// Items per thread below which a page is decoded on one thread: a thread costs tens of
/// microseconds, one Pod about as much.
const ITEMS_PER_DECODE_THREAD: usize = 64;

fn decode_threads(items: usize) -> usize {
    decoders().min(items / ITEMS_PER_DECODE_THREAD).max(1)
}

/// Decodes a list's `items` with `decode_one` (given an item and its index).
///
/// A large page is decoded on every core: building typed objects (allocation) costs far
/// more than reading the encoding, so the items are split into one run per core, decoded
/// on short-lived scoped threads, and put back in order. An item that does not decode is
/// logged and kept in [`ObjectList::skipped`].
fn decode_items<K: Send>(
    metadata: ListMeta,
    shard_selector: Option<String>,
    items: &[&[u8]],
    // Not generic: one copy of this function per type, whatever decodes the items.
    decode_one: &(dyn Fn(&[u8], usize) -> Result<K> + Sync),
) -> ObjectList<K> {
    let run = items.len().div_ceil(decode_threads(items.len())).max(1);
    let runs: Vec<&[&[u8]]> = items.chunks(run).collect();
    // The first run's list becomes the whole list: room for every item.
    let parts: Vec<parking_lot::Mutex<ObjectList<K>>> = (0..runs.len())
        .map(|i| {
            let capacity = if i == 0 { items.len() } else { 0 };
            parking_lot::Mutex::new(ObjectList {
                items: Vec::with_capacity(capacity),
                ..ObjectList::default()
            })
        })
        .collect();
    on_threads(runs.len(), &|i| {
        let mut part = parts[i].lock();
        for (j, item) in runs[i].iter().enumerate() {
            match decode_one(item, i * run + j) {
                Ok(obj) => part.items.push(obj),
                Err(err) => {
                    tracing::warn!(error = %err, "skipping an object that does not decode");
                    part.skipped.push(err);
                }
            }
        }
    });
    let mut parts = parts.into_iter().map(parking_lot::Mutex::into_inner);
    let mut list = parts.next().unwrap_or_default();
    for part in parts {
        list.items.extend(part.items);
        list.skipped.extend(part.skipped);
    }
    list.metadata = metadata;
    list.shard_selector = shard_selector;
    list
}

/// Calls `work` with `0..runs`: `work(0)` on this thread, the others on short-lived scoped
/// threads (on this one too, after `work(0)`, if a thread cannot be started). A panic in
/// any is resumed here. Not generic, so compiled once rather than for every type decoded.
fn on_threads(runs: usize, work: &(dyn Fn(usize) + Sync)) {
    if runs <= 1 {
        (0..runs).for_each(work);
        return;
    }
    std::thread::scope(|scope| {
        let spawned: Vec<_> = (1..runs)
            .map(|i| {
                let thread = std::thread::Builder::new().name("kubekit-decode".into());
                (i, thread.spawn_scoped(scope, move || work(i)))
            })
            .collect();
        work(0);
        for (i, thread) in spawned {
            match thread {
                Ok(handle) => {
                    if let Err(panic) = handle.join() {
                        std::panic::resume_unwind(panic);
                    }
                }
                Err(e) => {
                    tracing::debug!("no decode thread ({e}); decoding on this one");
                    work(i);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[tokio::test]
    async fn request_debug_omits_the_body() {
        let secret = serde_json::json!({"kind": "Secret", "stringData": {"password": "hunter2"}});
        let client = RestClient::new(&RestConfig::from_url("http://127.0.0.1:1").unwrap()).unwrap();
        let request = client
            .post()
            .group_version("", "v1")
            .namespace("demo")
            .resource("secrets")
            .body(&secret);
        let debug = format!("{request:?}");
        assert!(
            !debug.contains("hunter2") && !debug.contains("stringData"),
            "{debug}"
        );
        assert!(debug.contains("/api/v1/namespaces/demo/secrets"), "{debug}");
        let len = serde_json::to_vec(&secret).unwrap().len();
        assert!(
            debug.contains(&format!("body_bytes: Some({len})")),
            "{debug}"
        );
    }

    #[test]
    fn a_json_list_gives_the_shard_selector_the_server_echoed() {
        let selector =
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
        let body = format!(
            r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"7","shardInfo":{{"selector":"{selector}"}}}},"items":[{{"metadata":{{"name":"a"}}}}]}}"#
        );
        let list =
            decode_list::<k8s_openapi::api::core::v1::ConfigMap>(body.as_bytes(), "cms").unwrap();
        assert_eq!(list.shard_selector.as_deref(), Some(selector));
        assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(list.items.len(), 1);
        // The page path reads the metadata alone.
        let (metadata, echoed) = read_metadata::<Box<RawValue>>(body.as_bytes())
            .and_then(|raw| json_list_metadata(raw.as_deref()))
            .unwrap();
        assert_eq!(
            (metadata.resource_version.as_deref(), echoed.as_deref()),
            (Some("7"), Some(selector))
        );
        for plain in [
            r#"{"metadata":{"resourceVersion":"7"},"items":[]}"#,
            r#"{"metadata":{"shardInfo":{"selector":""}},"items":[]}"#,
            r#"{"metadata":null,"items":[]}"#,
            r#"{"items":[]}"#,
        ] {
            let list =
                decode_list::<k8s_openapi::api::core::v1::ConfigMap>(plain.as_bytes(), "cms")
                    .unwrap();
            assert_eq!(list.shard_selector, None, "{plain}");
        }
        let bad = r#"{"metadata":{"shardInfo":{"selector":5}},"items":[]}"#;
        assert!(
            decode_list::<k8s_openapi::api::core::v1::ConfigMap>(bad.as_bytes(), "cms").is_err()
        );
    }

    #[test]
    fn warning_header_text_is_unquoted() {
        assert_eq!(
            warning_text(r#"299 - "v1 ComponentStatus is deprecated""#),
            "v1 ComponentStatus is deprecated"
        );
        assert_eq!(warning_text(r#"299 - "say \"hi\"""#), r#"say "hi""#);
        assert_eq!(warning_text("plain"), "plain");
    }

    #[test]
    fn status_body_becomes_an_api_error_with_its_reason() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}"#;
        let err = api_error(
            "GET",
            "/api/v1/namespaces/d/pods/x",
            StatusCode::NOT_FOUND,
            body,
        );
        assert!(err.is_not_found());
        assert!(!err.is_conflict());
        assert_eq!(
            err.to_string(),
            "GET /api/v1/namespaces/d/pods/x: pods \"x\" not found (404 NotFound)"
        );
    }

    #[test]
    fn non_status_error_body_is_reported_by_http_code() {
        let err = api_error("GET", "/x", StatusCode::TOO_MANY_REQUESTS, b"slow down\n");
        assert!(err.is_too_many_requests());
        assert!(err.to_string().contains("slow down"), "{err}");
        let err = api_error("GET", "/x", StatusCode::CONFLICT, b"<html>");
        assert!(err.is_conflict() && !err.is_already_exists());
        let err = api_error("GET", "/x", StatusCode::GATEWAY_TIMEOUT, b"");
        assert!(err.is_timeout());
    }

    #[test]
    fn retry_only_on_429_or_5xx_with_retry_after() {
        let res = |code: u16, after: Option<&str>| {
            let mut b = http::Response::builder().status(code);
            if let Some(a) = after {
                b = b.header(RETRY_AFTER, a);
            }
            b.body(()).unwrap()
        };
        assert_eq!(
            retry_after(&res(429, Some("3"))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(retry_after(&res(429, None)), Some(Duration::from_secs(1)));
        assert_eq!(
            retry_after(&res(503, Some("2"))),
            Some(Duration::from_secs(2))
        );
        assert_eq!(retry_after(&res(500, None)), None);
        assert_eq!(retry_after(&res(409, Some("2"))), None);
        assert_eq!(retry_after(&res(200, Some("2"))), None);
        assert_eq!(
            retry_after(&res(429, Some("1000000000"))),
            Some(MAX_RETRY_AFTER),
            "31 years asked, the cap waited"
        );
        assert_eq!(
            retry_after(&res(429, Some("30"))),
            Some(Duration::from_secs(30))
        );
    }

    fn response(code: u16, retry_after: Option<&str>) -> http::Response<()> {
        let mut b = http::Response::builder().status(code);
        if let Some(a) = retry_after {
            b = b.header(RETRY_AFTER, a);
        }
        b.body(()).unwrap()
    }

    /// Runs [`with_retries`] over scripted responses; returns the outcome's HTTP code, the
    /// number of attempts and the (paused) time it took.
    async fn run_retries(max: u32, script: Vec<http::Response<()>>) -> (u16, usize, Duration) {
        let script = std::sync::Mutex::new(script.into_iter());
        let attempts = std::sync::atomic::AtomicUsize::new(0);
        let start = tokio::time::Instant::now();
        let res = with_retries(max, true, || {
            attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let next = script.lock().unwrap().next().expect("script long enough");
            async move { Ok(next) }
        })
        .await
        .unwrap();
        (
            res.status().as_u16(),
            attempts.into_inner(),
            start.elapsed(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn throttled_request_is_retried_after_retry_after_until_it_succeeds() {
        let script = vec![
            response(429, Some("2")),
            response(503, Some("3")),
            response(429, None),
            response(200, None),
        ];
        assert_eq!(
            run_retries(10, script).await,
            (200, 4, Duration::from_secs(2 + 3 + 1))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stop_at_max_retries_and_return_the_last_refusal() {
        let script = (0..20).map(|_| response(429, Some("1"))).collect();
        assert_eq!(
            run_retries(10, script).await,
            (429, 11, Duration::from_secs(10))
        );
        let script = vec![response(500, None), response(200, None)];
        assert_eq!(
            run_retries(10, script).await,
            (500, 1, Duration::ZERO),
            "5xx without Retry-After is final"
        );
    }

    #[tokio::test]
    async fn a_response_body_over_the_limit_is_too_large_whether_announced_or_endless() {
        use crate::rest::test_server::{Reply, TestServer};
        let server = TestServer::start(|line| match line {
            l if l.contains("/announced") => Reply::json(200, vec![b' '; 64 << 10]),
            l if l.contains("/small") => Reply::json(200, "{}"),
            _ => Reply::Endless { status: 200 },
        })
        .await;
        let client = RestClient::new(&server.config().with_max_body_bytes(1024)).unwrap();
        for path in ["/announced", "/endless"] {
            let err = client.get().abs_path(path).send().await.unwrap_err();
            assert!(matches!(err, Error::TooLarge { limit: 1024, .. }), "{err}");
            assert!(
                err.to_string()
                    .starts_with(&format!("the response to GET {path}")),
                "{err}"
            );
        }
        let small = client.get().abs_path("/small").send().await.unwrap();
        assert_eq!(small.body().as_ref(), b"{}");
    }

    #[tokio::test]
    async fn a_write_guard_refuses_writes_unsent_and_lets_reads_through() {
        use crate::rest::test_server::{Reply, TestServer};
        use std::sync::atomic::Ordering;
        let server = TestServer::start(|_| Reply::json(200, "{}")).await;
        let (allowed, guard) = switchable_guard(false, "not leading");
        let client = server.client().with_write_guard(guard);
        let writes = [Method::POST, Method::PUT, Method::PATCH, Method::DELETE];
        for method in writes.clone() {
            let err = client
                .request(method.clone())
                .abs_path("/api/v1/namespaces/demo/configmaps")
                .send()
                .await
                .unwrap_err();
            assert!(
                matches!(&err, Error::Fenced { verb, reason, .. } if *verb == method.as_str() && reason == "not leading"),
                "{err}"
            );
        }
        client
            .get()
            .abs_path("/api/v1/configmaps")
            .send()
            .await
            .unwrap();
        assert_eq!(
            server.requests().len(),
            1,
            "only the read reached the server: {:?}",
            server.requests()
        );
        allowed.store(true, Ordering::SeqCst);
        client
            .post()
            .abs_path("/api/v1/namespaces/demo/configmaps")
            .send()
            .await
            .unwrap();
        assert_eq!(server.requests().len(), 2, "an allowed write is sent");
    }

    /// A write guard that allows writes while the flag returned is set (at first:
    /// `allowed`) and refuses them with `reason` otherwise.
    fn switchable_guard(
        allowed: bool,
        reason: &'static str,
    ) -> (Arc<std::sync::atomic::AtomicBool>, WriteGuard) {
        use std::sync::atomic::{AtomicBool, Ordering};
        let allowed = Arc::new(AtomicBool::new(allowed));
        let flag = Arc::clone(&allowed);
        let guard: WriteGuard = Arc::new(move || match flag.load(Ordering::SeqCst) {
            true => Ok(()),
            false => Err(reason.into()),
        });
        (allowed, guard)
    }

    /// A test server and a client of it guarded by `guard`, allowed one request per 1000 s,
    /// whose only token a read has just taken.
    async fn client_without_a_token(
        guard: WriteGuard,
    ) -> (crate::rest::test_server::TestServer, RestClient) {
        use crate::rest::test_server::{Reply, TestServer};
        let server = TestServer::start(|_| Reply::json(200, "{}")).await;
        let config = server.config().with_rate_limit(0.001, 1);
        let client = RestClient::new(&config).unwrap().with_write_guard(guard);
        client
            .get()
            .abs_path("/api/v1/configmaps")
            .send()
            .await
            .unwrap();
        (server, client)
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_write_fails_at_once_without_waiting_for_the_rate_limit() {
        let refuse: WriteGuard = Arc::new(|| Err("shutting down".into()));
        let (server, client) = client_without_a_token(refuse).await;
        let before = tokio::time::Instant::now();
        let err = client
            .delete()
            .abs_path("/api/v1/namespaces/demo/configmaps/a")
            .send()
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Fenced { .. }), "{err}");
        assert_eq!(
            tokio::time::Instant::now(),
            before,
            "no wait for a token on the paused clock"
        );
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_waiting_for_the_rate_limit_is_refused_as_soon_as_its_guard_refuses() {
        use std::sync::atomic::Ordering;
        let (allowed, guard) = switchable_guard(true, "shutting down");
        let (server, client) = client_without_a_token(guard).await;
        let waiting = tokio::spawn({
            let client = client.clone();
            async move {
                let delete = client.delete();
                delete
                    .abs_path("/api/v1/namespaces/demo/configmaps/a")
                    .send()
                    .await
            }
        });
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(!waiting.is_finished(), "waiting for its token (1000 s)");
        let refused_at = tokio::time::Instant::now();
        allowed.store(false, Ordering::SeqCst);
        let err = waiting.await.unwrap().unwrap_err();
        assert!(matches!(err, Error::Fenced { .. }), "{err}");
        assert!(tokio::time::Instant::now() - refused_at <= GUARD_POLL);
        assert_eq!(server.requests().len(), 1, "the write was never sent");
    }

    #[tokio::test]
    async fn a_refusal_with_an_endless_body_is_read_up_to_the_cap_and_reported_by_code() {
        use crate::rest::test_server::{Reply, TestServer};
        let server = TestServer::start(|_| Reply::Endless { status: 500 }).await;
        let client = server.client();
        let err = client
            .get()
            .abs_path("/api/v1/pods")
            .watch::<Pod>()
            .await
            .err()
            .expect("a refused watch");
        assert_eq!(err.code(), Some(500), "{err}");
        assert!(
            err.to_string().len() < 1024,
            "the message is the body's start"
        );
        let err = client
            .get()
            .abs_path("/api/v1/pods")
            .send()
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(500), "{err}");
    }

    #[test]
    fn a_list_decoded_in_runs_keeps_its_order_and_skips_only_the_bad_items() {
        let texts: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
        let items: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        let metadata = ListMeta {
            resource_version: Some("7".into()),
            ..ListMeta::default()
        };
        let list = decode_items(metadata, Some("shard".into()), &items, &|item, index| {
            let item: usize = std::str::from_utf8(item).unwrap().parse().unwrap();
            assert_eq!(item, index, "each item comes with its own index");
            match item % 100 {
                7 => Err(Error::Request(format!("item {item}"))),
                _ => Ok(item * 2),
            }
        });
        let kept: Vec<usize> = (0..1000).filter(|i| i % 100 != 7).map(|i| i * 2).collect();
        assert_eq!(list.items, kept);
        let skipped: Vec<String> = list.skipped.iter().map(|e| e.to_string()).collect();
        assert_eq!(skipped.len(), 10, "{skipped:?}");
        assert!(skipped.iter().all(|e| e.contains("item ")), "{skipped:?}");
        assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(list.shard_selector.as_deref(), Some("shard"));
    }

    #[test]
    fn on_threads_works_every_run_exactly_once() {
        for runs in [0, 1, 2, 5] {
            let seen = parking_lot::Mutex::new(Vec::new());
            on_threads(runs, &|i| seen.lock().push(i));
            let mut seen = seen.into_inner();
            seen.sort_unstable();
            assert_eq!(seen, (0..runs).collect::<Vec<_>>());
        }
    }

    #[test]
    fn list_with_a_malformed_item_keeps_the_others_and_reports_it() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"abc"},
            "items":[{"metadata":{"name":"a"}},{"metadata":{"name":["not","a","string"]}},{"metadata":{"name":"c"}}]}"#;
        let list = decode_list::<Pod>(body, "pods in namespace \"demo\"")
            .expect("the list itself is valid");
        let names: Vec<_> = list
            .items
            .iter()
            .filter_map(|p| p.metadata.name.as_deref())
            .collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(list.metadata.continue_.as_deref(), Some("abc"));
        assert_eq!(list.skipped.len(), 1);
        let msg = list.skipped[0].to_string();
        assert!(
            msg.contains("item 1 of pods in namespace \"demo\""),
            "{msg}"
        );
    }

    #[test]
    fn truncated_or_garbage_bodies_are_errors_naming_the_resource() {
        let full = br#"{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"}}]}"#;
        for cut in [0, 1, 10, full.len() / 2, full.len() - 1] {
            let err = decode_list::<Pod>(&full[..cut], "pods").expect_err("truncated body");
            assert!(
                err.to_string().starts_with("decoding list of pods"),
                "{err}"
            );
        }
        let response = Response {
            status: StatusCode::OK,
            content_type: "application/json".into(),
            content_encoding: None,
            body: Bytes::from_static(b"{\"metadata\":{\"name\":\"web\"},\"spec\":"),
            warnings: vec![],
            what: "pods \"web\" in namespace \"demo\" from GET /api/v1/namespaces/demo/pods/web"
                .into(),
            decode_options: DecodeOptions::default(),
        };
        let err = response.decode::<Pod>().expect_err("truncated object");
        assert!(
            err.to_string()
                .contains("pods \"web\" in namespace \"demo\""),
            "{err}"
        );
        let err = decode_list::<Pod>(b"\xff\xfe\x00garbage", "pods").expect_err("binary garbage");
        assert!(matches!(err, Error::Decode { .. }));
    }
}
