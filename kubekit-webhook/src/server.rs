//! [`WebhookServer`]: the HTTPS server (rustls, HTTP/1.1) that routes reviews to handlers,
//! with the limits, panic handling and metrics the [module docs](super) promise.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::FutureExt as _;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use kube::Resource;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use kubekit_client::serve::{Served, next_connection, serve_connection};

use super::admission::Admit;
use super::conversion::{Conversion, Convert};
use super::review::{
    ADMISSION_API_VERSION, AdmissionReviewIn, AdmissionReviewOut, CONVERSION_API_VERSION,
    ConversionResponse, ConversionResult, ConversionReviewIn, ConversionReviewOut, TypeMeta,
};
use super::webhooks::{FailurePolicy, Route, WebhookEndpoint, Webhooks};
use super::{Certificates, Defaulter, Error, Validator, Verdict};
use kubekit_client::rest::RestClient;

/// How long a client has to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The first wait before installing the manifests again after a refusal that may pass,
/// doubled after each up to [`INSTALL_BACKOFF_MAX`].
const INSTALL_BACKOFF: Duration = Duration::from_secs(1);

/// The longest wait between two attempts to install the manifests.
const INSTALL_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// An HTTPS server for admission and conversion webhooks; see the [module docs](super).
///
/// Build it with its [`Certificates`], register handlers, then [`serve`](Self::serve).
pub struct WebhookServer {
    certificates: Certificates,
    webhooks: Webhooks,
    max_request_bytes: usize,
    timeout: Duration,
    metrics: WebhookMetrics,
    ready: Readiness,
    client: Option<RestClient>,
    install: Option<(String, WebhookEndpoint)>,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("webhooks", &self.webhooks)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// A server with these certificates and no handler yet.
    pub fn new(certificates: Certificates) -> Self {
        Self {
            certificates,
            webhooks: Webhooks::default(),
            max_request_bytes: 7 << 20,
            timeout: Duration::from_secs(9),
            metrics: WebhookMetrics::default(),
            ready: Readiness::default(),
            client: None,
            install: None,
        }
    }

    /// Serves `webhooks` too (replacing handlers at the same paths), with the settings
    /// they were registered with.
    pub fn webhooks(mut self, webhooks: Webhooks) -> Self {
        self.webhooks.merge(webhooks);
        self
    }

    /// The client the server writes with: the manifests it
    /// [installs](Self::install_manifests) and the `caBundle`s of
    /// [generated](Certificates::generated) certificates.
    pub fn client(mut self, client: RestClient) -> Self {
        self.client = Some(client);
        self
    }

    /// Installs the [manifests](Webhooks::manifests) named `name` of its handlers when
    /// it starts serving, calling it at `endpoint` (a URL's port 0 is the port the server
    /// listens on), before its certificate is loaded; with
    /// [generated](Certificates::generated) certificates, their `caBundle` is written into
    /// everything installed. Needs a [`client`](Self::client).
    ///
    /// A refusal that may pass is retried, with a warning, after 1 s, doubling to 30 s,
    /// until [`serve`](Self::serve)'s `cancel` fires: 403 (the RBAC that grants the writes
    /// may be applied after the server starts, or not yet seen by the authorizer), 404 (a
    /// CRD to convert not yet installed), 429, 5xx and failed connections. Others (a
    /// manifest the server finds invalid, say) are returned at once.
    pub fn install_manifests(mut self, name: &str, endpoint: WebhookEndpoint) -> Self {
        self.install = Some((name.to_string(), endpoint));
        self
    }

    /// Serves `validator` for `K` at [`validate_path::<K>()`](super::validate_path), with
    /// the default settings (see [`Webhooks::add`] for others).
    pub fn validator<K, V>(mut self, validator: V) -> Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        V: Validator<K>,
    {
        self.webhooks.add::<K>().validator(validator);
        self
    }

    /// Serves `defaulter` for `K` at [`mutate_path::<K>()`](super::mutate_path), with the
    /// default settings (see [`Webhooks::add`] for others).
    pub fn defaulter<K, D>(mut self, defaulter: D) -> Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Serialize + Send + Sync + 'static,
        D: Defaulter<K>,
    {
        self.webhooks.add::<K>().defaulter(defaulter);
        self
    }

    /// Serves `conversion` at `path` (`/convert` is what controller-runtime uses), the
    /// path to name in the CRD's `spec.conversion.webhook.clientConfig`.
    pub fn conversion<H>(mut self, path: impl Into<String>, conversion: Conversion<H>) -> Self
    where
        H: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        self.webhooks.add_conversion(path.into(), conversion);
        self
    }

    /// The largest request body served (7 MiB unless set); larger ones get `413`.
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// How long reading a request and running its handler may take (9 s unless set).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Records into these metric families (shared with other servers, or registered
    /// with [`WebhookMetrics::register`]) instead of the server's own.
    pub fn metrics(mut self, metrics: &WebhookMetrics) -> Self {
        self.metrics = metrics.clone();
        self
    }

    /// The readiness of this server, for `/readyz` (ready while it serves).
    pub fn readiness(&self) -> Readiness {
        self.ready.clone()
    }

    /// Binds `address`, installs the manifests (when [asked](Self::install_manifests),
    /// retrying what may pass until `cancel` fires), loads the certificate and serves until
    /// `cancel` fires.
    pub async fn serve(
        self,
        address: SocketAddr,
        cancel: CancellationToken,
    ) -> Result<Served, Error> {
        // Bound first, so that a port in use starts no certificate reloading.
        let listener = TcpListener::bind(address).await.map_err(Error::Bind)?;
        let address = listener.local_addr().map_err(Error::Bind)?;
        let mut targets = Vec::new();
        if let Some((name, endpoint)) = &self.install {
            let client = self
                .client
                .as_ref()
                .ok_or(Error::NoClient("installing the manifests"))?;
            let manifests = self
                .webhooks
                .manifests(name, &endpoint.listening_on(address.port()));
            let mut backoff = INSTALL_BACKOFF;
            while let Err(e) = manifests.install(client, name).await {
                let Error::Api(refusal) = &e else {
                    return Err(e);
                };
                if !(refusal.is_transient() || refusal.is_forbidden() || refusal.is_not_found()) {
                    return Err(e);
                }
                tracing::warn!(error = %e, retry_in = ?backoff,
                    "installing the webhook manifests failed; retrying (the webhook server is \
                     not ready until they are installed)");
                tokio::select! {
                    () = cancel.cancelled() => return Err(e),
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(INSTALL_BACKOFF_MAX);
            }
            targets = manifests.ca_bundle_targets();
        }
        let resolver = self
            .certificates
            .load(cancel.clone(), self.client.as_ref(), targets)
            .await?;
        let mut tls = rustls::ServerConfig::builder_with_provider(super::certs::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Certificate(format!("TLS configuration: {e}")))?
            .with_no_client_auth()
            .with_cert_resolver(resolver);
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(tls));
        let ready = self.ready.clone();
        let server = Arc::new(self);
        ready.0.store(true, Ordering::Release);
        let task = tokio::spawn(async move {
            while let Some(stream) = next_connection(&listener, &cancel, "webhook").await {
                let (server, acceptor, cancel) = (server.clone(), acceptor.clone(), cancel.clone());
                tokio::spawn(async move {
                    let stream = match tokio::time::timeout(
                        HANDSHAKE_TIMEOUT,
                        acceptor.accept(stream),
                    )
                    .await
                    {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(e)) => return tracing::debug!("webhook server: TLS handshake: {e}"),
                        Err(_) => {
                            return tracing::debug!("webhook server: TLS handshake timed out");
                        }
                    };
                    let service = service_fn(move |req| {
                        let server = server.clone();
                        async move { Ok::<_, Infallible>(server.respond(req).await) }
                    });
                    serve_connection(TokioIo::new(stream), service, &cancel, "webhook").await;
                });
            }
            ready.0.store(false, Ordering::Release);
        });
        Ok(Served::new(address, task, "webhook"))
    }

    /// The response to one request, measured.
    async fn respond(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = req.uri().path().to_owned();
        let Some(entry) = self.webhooks.entries.get(&path) else {
            return text(StatusCode::NOT_FOUND, format!("no webhook at {path}"));
        };
        let label = WebhookLabel { webhook: path };
        let in_flight = InFlight::enter(self.metrics.in_flight.get_or_create(&label).clone());
        let start = Instant::now();
        let response = self
            .handle(&entry.route, entry.options.failure_policy, req)
            .await;
        drop(in_flight);
        self.metrics
            .latency
            .get_or_create(&label)
            .observe(start.elapsed().as_secs_f64());
        self.metrics
            .requests
            .get_or_create(&RequestLabel {
                webhook: label.webhook,
                code: response.status().as_u16().to_string(),
            })
            .inc();
        response
    }

    /// Reads the body within the limits and runs the route's handler on it.
    async fn handle(
        &self,
        route: &Route,
        policy: FailurePolicy,
        req: Request<Incoming>,
    ) -> Response<Full<Bytes>> {
        if req.method() != Method::POST {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only POST is served".into());
        }
        let json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|t| t.trim() == "application/json")
            });
        if !json {
            return text(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the Content-Type must be application/json".into(),
            );
        }
        let deadline = tokio::time::Instant::now() + self.timeout;
        let body = Limited::new(req.into_body(), self.max_request_bytes);
        let body = match tokio::time::timeout_at(deadline, body.collect()).await {
            Ok(Ok(body)) => body.to_bytes(),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body is over {} bytes", self.max_request_bytes),
                );
            }
            Ok(Err(e)) => return text(StatusCode::BAD_REQUEST, format!("reading the body: {e}")),
            Err(_) => {
                return text(
                    StatusCode::REQUEST_TIMEOUT,
                    "the body did not arrive in time".into(),
                );
            }
        };
        let answer = match route {
            Route::Admission(admit) => self.admit(admit.as_ref(), policy, &body, deadline).await,
            Route::Conversion(convert) => self.convert(convert.clone(), &body, deadline).await,
        };
        match answer {
            Ok(json) => Response::builder()
                .header(header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(json)))
                .unwrap_or_default(),
            Err(message) => text(StatusCode::BAD_REQUEST, message),
        }
    }

    /// Answers an `AdmissionReview`; `Err` is a body that is not one.
    async fn admit(
        &self,
        admit: &dyn Admit,
        policy: FailurePolicy,
        body: &[u8],
        deadline: tokio::time::Instant,
    ) -> Result<Vec<u8>, String> {
        expect_kind(body, ADMISSION_API_VERSION, "AdmissionReview")?;
        let review: AdmissionReviewIn = serde_json::from_slice(body)
            .map_err(|e| format!("the AdmissionReview does not decode: {e}"))?;
        let request = review.request.ok_or("the AdmissionReview has no request")?;
        let (verdict, patch) = match guarded(admit.admit(&request), deadline, self.timeout).await {
            Ok(answer) => answer,
            Err(failure) => (failure.verdict(policy), None),
        };
        let out = AdmissionReviewOut {
            api_version: ADMISSION_API_VERSION,
            kind: "AdmissionReview",
            response: verdict.into_response(request.uid, patch),
        };
        serde_json::to_vec(&out).map_err(|e| format!("encoding the response: {e}"))
    }

    /// Answers a `ConversionReview`; `Err` is a body that is not one. Conversions are
    /// synchronous (`From`), so they run on the blocking pool, where a large review does not
    /// hold up the runtime and the time limit can answer while one is still running.
    async fn convert(
        &self,
        convert: Arc<dyn Convert>,
        body: &[u8],
        deadline: tokio::time::Instant,
    ) -> Result<Vec<u8>, String> {
        expect_kind(body, CONVERSION_API_VERSION, "ConversionReview")?;
        let review: ConversionReviewIn = serde_json::from_slice(body)
            .map_err(|e| format!("the ConversionReview does not decode: {e}"))?;
        let request = review
            .request
            .ok_or("the ConversionReview has no request")?;
        let (objects, desired) = (request.objects, request.desired_api_version);
        let task = tokio::task::spawn_blocking(move || convert.convert(&objects, &desired));
        let converted = match tokio::time::timeout_at(deadline, task).await {
            Ok(Ok(converted)) => converted,
            Ok(Err(e)) if e.is_panic() => Err(format!(
                "the conversion panicked: {}",
                kubekit_client::panic::message(e.into_panic().as_ref())
            )),
            Ok(Err(e)) => Err(format!("the conversion did not run: {e}")),
            Err(_) => Err(format!(
                "the conversion did not finish within {:?}",
                self.timeout
            )),
        };
        let (converted_objects, result) = match converted {
            Ok(objects) => (
                objects,
                ConversionResult {
                    status: "Success",
                    message: String::new(),
                },
            ),
            Err(message) => (
                Vec::new(),
                ConversionResult {
                    status: "Failure",
                    message,
                },
            ),
        };
        let out = ConversionReviewOut {
            api_version: CONVERSION_API_VERSION,
            kind: "ConversionReview",
            response: ConversionResponse {
                uid: request.uid,
                converted_objects,
                result,
            },
        };
        serde_json::to_vec(&out).map_err(|e| format!("encoding the response: {e}"))
    }
}

/// Checks a review's `apiVersion` and `kind` before decoding the rest.
fn expect_kind(body: &[u8], api_version: &str, kind: &str) -> Result<(), String> {
    let meta: TypeMeta =
        serde_json::from_slice(body).map_err(|e| format!("the body is not a JSON object: {e}"))?;
    if meta.api_version == api_version && meta.kind == kind {
        return Ok(());
    }
    Err(format!(
        "this webhook serves {api_version} {kind}, not {:?} {:?}",
        meta.api_version, meta.kind
    ))
}

/// Why a handler gave no answer.
enum Failure {
    Panicked(String),
    TimedOut(String),
}

impl Failure {
    /// The answer under `policy`: a denial saying what happened under `Fail`; under
    /// `Ignore`, an admission with that as a warning (what kube-apiserver does when it
    /// cannot call a webhook with that policy).
    fn verdict(self, policy: FailurePolicy) -> Verdict {
        let (message, code, reason) = match self {
            Self::Panicked(message) => (
                format!("the webhook panicked: {message}"),
                500,
                "InternalError",
            ),
            Self::TimedOut(message) => (message, 504, "Timeout"),
        };
        match policy {
            FailurePolicy::Fail => Verdict::deny(message).with_code(code).with_reason(reason),
            FailurePolicy::Ignore => Verdict::allow()
                .with_warning(format!("{message}; admitted under failurePolicy Ignore")),
        }
    }
}

/// Runs a handler's future to `deadline`, catching a panic.
async fn guarded<T>(
    handler: impl Future<Output = T>,
    deadline: tokio::time::Instant,
    timeout: Duration,
) -> Result<T, Failure> {
    match tokio::time::timeout_at(deadline, AssertUnwindSafe(handler).catch_unwind()).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(payload)) => Err(Failure::Panicked(
            kubekit_client::panic::message(payload.as_ref()).to_owned(),
        )),
        Err(_) => Err(Failure::TimedOut(format!(
            "the webhook did not answer within {timeout:?}"
        ))),
    }
}

/// A plain-text response.
fn text(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(message + "\n")))
        .unwrap_or_default()
}

/// Whether a [`WebhookServer`] serves: ready from the moment it listens with its
/// certificate loaded until it stops. Cheap to clone.
///
/// ```
/// use kubekit::manager::Endpoints;
/// use kubekit::webhook::{CertificateAuthority, Certificates, WebhookServer};
/// use prometheus_client::registry::Registry;
///
/// let ca = CertificateAuthority::generate("demo-ca").unwrap();
/// let server = WebhookServer::new(Certificates::issued_by(&ca, &["127.0.0.1"]).unwrap());
/// let readiness = server.readiness();
/// let endpoints = Endpoints::new(Registry::default()).readyz("webhook", move || readiness.check());
/// assert!(server.readiness().check().is_err()); // not serving yet
/// ```
#[derive(Clone, Debug, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// `Ok` while the server serves; the reason otherwise.
    pub fn check(&self) -> Result<(), String> {
        if self.0.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err("the webhook server is not serving".into())
        }
    }
}

/// One request counted in flight until dropped (also when its connection goes away
/// mid-request and the request's future with it).
struct InFlight(Gauge);

impl InFlight {
    fn enter(gauge: Gauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The label of the latency and in-flight metrics: the webhook's path.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabel {
    webhook: String,
}

/// The label of the request counter: the webhook's path and the HTTP code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabel {
    webhook: String,
    code: String,
}

/// Histogram of request latencies, controller-runtime's default buckets (5 ms … 10 s).
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 12))
}

/// The webhook servers' metric families, under controller-runtime's names. Register them
/// into the registry your `/metrics` serves and pass them to each server with
/// [`WebhookServer::metrics`].
#[derive(Clone)]
pub struct WebhookMetrics {
    requests: Family<RequestLabel, Counter>,
    latency: Family<WebhookLabel, Histogram, fn() -> Histogram>,
    in_flight: Family<WebhookLabel, Gauge>,
}

impl Default for WebhookMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            in_flight: Family::default(),
        }
    }
}

impl std::fmt::Debug for WebhookMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookMetrics").finish_non_exhaustive()
    }
}

impl WebhookMetrics {
    /// Registers the three families: `controller_runtime_webhook_requests_total`,
    /// `controller_runtime_webhook_latency_seconds` and
    /// `controller_runtime_webhook_requests_in_flight`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code.",
            self.requests.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            self.latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            self.in_flight.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_or_a_timeout_is_a_denial_under_fail_and_an_admission_with_a_warning_under_ignore() {
        let panicked = || Failure::Panicked("boom".into());
        let denied = panicked().verdict(FailurePolicy::Fail);
        assert!(!denied.is_allowed());
        assert_eq!(denied.message(), "the webhook panicked: boom");
        let admitted = panicked().verdict(FailurePolicy::Ignore);
        assert!(admitted.is_allowed());
        let response = admitted.into_response("u".into(), None);
        assert_eq!(
            response.warnings,
            ["the webhook panicked: boom; admitted under failurePolicy Ignore"]
        );
        let timed_out = Failure::TimedOut("too slow".into()).verdict(FailurePolicy::Fail);
        assert_eq!(
            timed_out
                .into_response("u".into(), None)
                .status
                .map(|s| s.code),
            Some(504)
        );
    }
}
