//! [`Request`]: one request to the API server, built and sent. Sending waits for the rate
//! limit (asking the write guard), retries what the server asks to be retried
//! ([`MAX_RETRY_AFTER`] at most), reads the body up to its limit and turns a refusal into
//! an [`Error::Api`] with the server's `Status`.

use std::fmt;
use std::fmt::Write as _;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use http::header::{
    ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER, USER_AGENT,
};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kubekit_protobuf::DecodeOptions;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cbor;
use super::client::{RestClient, WriteGuard};
use super::error::{Error, Result};
use super::gzip::ResponseBody;
use super::protobuf::is_protobuf;
use super::response::Response;
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::rest::RestConfig;
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
}
