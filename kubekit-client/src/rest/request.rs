//! [`Request`]: one request to the API server, built and sent. Sending waits for the rate
//! limit (asking the write guard), retries what the server asks to be retried
//! ([`MAX_RETRY_AFTER`](super::MAX_RETRY_AFTER) at most), reads the body up to its limit and turns a refusal into
//! an [`Error::Api`] with the server's `Status`.

use std::fmt;
use std::fmt::Write as _;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use http::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, USER_AGENT};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use kubekit_protobuf::DecodeOptions;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cbor;
use super::client::{RestClient, WriteGuard};
use super::error::{Error, Result};
use super::gzip::ResponseBody;
use super::protobuf::is_protobuf;
use super::refusal::{MAX_ERROR_BODY_BYTES, ReadBody, api_error, read_body};
use super::response::Response;
use super::retry::with_retries;
use super::watch::{WatchDecoder, WatchEvent};
use super::watch_stream::DecodedWatch;

/// How often a write waiting for the rate limit asks its [`WriteGuard`] again.
const GUARD_POLL: Duration = Duration::from_millis(50);

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

/// One request being built; see the [module docs](super::client). Send it with
/// [`Request::send`] or [`Request::watch`]. `Debug` shows the method, URL and the body's
/// size, never the body (it may be a Secret).
#[must_use = "a request does nothing until it is sent"]
pub struct Request {
    pub(super) client: RestClient,
    pub(super) method: Method,
    pub(super) prefix: String,
    pub(super) namespace: Option<String>,
    pub(super) resource: Option<String>,
    pub(super) name: Option<String>,
    pub(super) subresource: Option<String>,
    pub(super) params: String,
    pub(super) body: Option<Bytes>,
    pub(super) content_type: &'static str,
    pub(super) accept: &'static str,
    /// What decoding the answer leaves out.
    pub(super) decode_options: DecodeOptions,
    /// The timeout set on this request; without one, the client's applies (watches
    /// excepted).
    pub(super) timeout: Option<Duration>,
    pub(super) error: Option<String>,
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::rest::RestConfig;

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
    fn warning_header_text_is_unquoted() {
        assert_eq!(
            warning_text(r#"299 - "v1 ComponentStatus is deprecated""#),
            "v1 ComponentStatus is deprecated"
        );
        assert_eq!(warning_text(r#"299 - "say \"hi\"""#), r#"say "hi""#);
        assert_eq!(warning_text("plain"), "plain");
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
}
