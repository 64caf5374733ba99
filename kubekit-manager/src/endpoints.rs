//! [`Endpoints`]: the metrics and health endpoints of a controller process, over HTTP.
//!
//! # Contract
//!
//! - `GET /metrics`: every metric of the [`Registry`] handed in, in the OpenMetrics text
//!   format (which Prometheus scrapes), encoded by `prometheus-client`.
//! - `GET /healthz` and `GET /readyz`: `200 ok` when every check of that kind passes,
//!   `500` otherwise, with one line per check in kube-apiserver's verbose format
//!   (`[+]name ok` / `[-]name failed: reason`). A check is a plain function, called on
//!   each request: keep it cheap (read a flag, ask an informer `has_synced`). With no
//!   check, the endpoint answers `200 ok`.
//! - Anything else: `404`; a method other than `GET` or `HEAD`: `405`.
//! - [`serve`](Endpoints::serve) binds its address before returning (so a port in use is
//!   an error at once, and port 0 gives a free port, returned) and serves until its
//!   cancellation token fires; each connection is served on a task of its own.
//!
//! ```
//! use kubekit::manager::Endpoints;
//! use prometheus_client::registry::Registry;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let registry = Registry::default(); // with the process's metrics registered
//! let endpoints = Endpoints::new(registry)
//!     .readyz("informers", || Ok(())); // e.g. || factory-synced check
//! let cancel = CancellationToken::new();
//! let served = endpoints.serve("127.0.0.1:0".parse().unwrap(), cancel.clone()).await.unwrap();
//! println!("metrics on http://{}/metrics", served.address());
//! cancel.cancel();
//! served.stopped().await;
//! # }
//! ```

use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use kubekit_client::serve::Served;
use kubekit_client::serve::{next_connection, serve_connection};

/// A health or readiness check: `Err(reason)` when failing.
pub type Check = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The content type of the OpenMetrics text format.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The metrics and health endpoints; see the [module docs](self).
#[derive(Clone)]
pub struct Endpoints {
    registry: Arc<Registry>,
    healthz: Vec<(String, Check)>,
    readyz: Vec<(String, Check)>,
}

impl fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |checks: &[(String, Check)]| -> Vec<String> {
            checks.iter().map(|(name, _)| name.clone()).collect()
        };
        f.debug_struct("Endpoints")
            .field("healthz", &names(&self.healthz))
            .field("readyz", &names(&self.readyz))
            .finish_non_exhaustive()
    }
}

/// What [`Endpoints`] are called in log lines.
const SERVER: &str = "metrics and health";

impl Endpoints {
    /// Endpoints serving `registry`'s metrics, with no health or readiness check yet.
    pub fn new(registry: Registry) -> Self {
        Self {
            registry: Arc::new(registry),
            healthz: Vec::new(),
            readyz: Vec::new(),
        }
    }

    /// Adds a liveness check to `/healthz`.
    pub fn healthz(
        mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.healthz.push((name.into(), Arc::new(check)));
        self
    }

    /// Adds a readiness check to `/readyz`.
    pub fn readyz(
        mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.readyz.push((name.into(), Arc::new(check)));
        self
    }

    /// Binds `address` and serves until `cancel` fires.
    pub async fn serve(
        self,
        address: SocketAddr,
        cancel: CancellationToken,
    ) -> std::io::Result<Served> {
        let listener = TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let endpoints = Arc::new(self);
        let task = tokio::spawn(async move {
            while let Some(stream) = next_connection(&listener, &cancel, SERVER).await {
                let (endpoints, cancel) = (endpoints.clone(), cancel.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let response = endpoints.respond(&req);
                        async move { Ok::<_, Infallible>(response) }
                    });
                    serve_connection(TokioIo::new(stream), service, &cancel, SERVER).await;
                });
            }
        });
        Ok(Served::new(address, task, SERVER))
    }

    fn respond(&self, req: &Request<Incoming>) -> Response<Full<Bytes>> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return text(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed\n".into(),
            );
        }
        match req.uri().path() {
            "/metrics" => {
                let mut body = String::new();
                match prometheus_client::encoding::text::encode(&mut body, &self.registry) {
                    Ok(()) => Response::builder()
                        .header(header::CONTENT_TYPE, OPENMETRICS)
                        .body(Full::new(Bytes::from(body)))
                        .unwrap_or_default(),
                    Err(e) => text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("encoding the metrics: {e}\n"),
                    ),
                }
            }
            "/healthz" => checked(&self.healthz, "healthz"),
            "/readyz" => checked(&self.readyz, "readyz"),
            _ => text(StatusCode::NOT_FOUND, "not found\n".into()),
        }
    }
}

/// Runs `checks`: `200 ok` when all pass, else `500` with each check's line.
fn checked(checks: &[(String, Check)], what: &str) -> Response<Full<Bytes>> {
    let mut failed = false;
    let mut lines = String::new();
    for (name, check) in checks {
        match check() {
            Ok(()) => lines.push_str(&format!("[+]{name} ok\n")),
            Err(reason) => {
                failed = true;
                lines.push_str(&format!("[-]{name} failed: {reason}\n"));
            }
        }
    }
    if failed {
        text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{lines}{what} check failed\n"),
        )
    } else {
        text(StatusCode::OK, "ok\n".into())
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use prometheus_client::metrics::counter::Counter;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// One HTTP/1.1 request on a fresh connection: the status code and the body.
    async fn request(address: SocketAddr, method: &str, path: &str) -> (u16, String) {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let request =
            format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        let status = response[9..12].parse().unwrap();
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default();
        (status, body)
    }

    #[tokio::test]
    async fn metrics_are_served_and_checks_decide_health_and_readiness() {
        let mut registry = Registry::default();
        let requests = Counter::<u64>::default();
        registry.register("demo_requests", "Requests seen", requests.clone());
        requests.inc_by(3);
        let ready = Arc::new(AtomicBool::new(false));
        let endpoints = Endpoints::new(registry)
            .healthz("alive", || Ok(()))
            .readyz("informers", {
                let ready = ready.clone();
                move || match ready.load(Ordering::SeqCst) {
                    true => Ok(()),
                    false => Err("caches not synced".into()),
                }
            });
        let cancel = CancellationToken::new();
        let served = endpoints
            .serve("127.0.0.1:0".parse().unwrap(), cancel.clone())
            .await
            .unwrap();
        let address = served.address();

        let (status, body) = request(address, "GET", "/metrics").await;
        assert_eq!(status, 200);
        assert!(body.contains("demo_requests_total 3"), "{body}");
        assert_eq!(
            request(address, "GET", "/healthz").await,
            (200, "ok\n".into())
        );
        let (status, body) = request(address, "GET", "/readyz").await;
        assert_eq!(status, 500);
        assert!(
            body.contains("[-]informers failed: caches not synced"),
            "{body}"
        );
        ready.store(true, Ordering::SeqCst);
        assert_eq!(
            request(address, "GET", "/readyz").await,
            (200, "ok\n".into())
        );
        assert_eq!(request(address, "GET", "/other").await.0, 404);
        assert_eq!(request(address, "POST", "/metrics").await.0, 405);

        cancel.cancel();
        served.stopped().await;
        assert!(
            tokio::net::TcpStream::connect(address).await.is_err(),
            "the listener is closed once stopped"
        );
    }

    #[tokio::test]
    async fn a_port_in_use_is_an_error_at_once() {
        let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = taken.local_addr().unwrap();
        let result = Endpoints::new(Registry::default())
            .serve(address, CancellationToken::new())
            .await;
        assert!(result.is_err());
    }
}
