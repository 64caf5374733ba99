//! The HTTPS client admission webhooks are called with, as kube-apiserver calls them: a
//! `POST` of JSON to the webhook's URL (with `?timeout=<n>s` added), verified against the
//! configuration's `caBundle` (the system's roots when it is empty), HTTP/1.1.
//!
//! # Contract
//!
//! - A `clientConfig.url` must be `https://`; a `clientConfig.service` is reached at the
//!   Service's cluster IP and port (443 unless set) with the server name
//!   `<name>.<namespace>.svc`, as kube-apiserver's default resolver does (nothing routes
//!   cluster IPs here, as nothing does beside a control plane without kube-proxy).
//! - Failures are described in the words of Go's HTTP client (`Post "<url>": dial tcp
//!   <addr>: connect: connection refused`, `... context deadline exceeded`, `x509:
//!   certificate signed by unknown authority`), which kube-apiserver puts in its errors.
//! - The whole call (connect, TLS, request and body) is bounded by the webhook's timeout.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;

/// The largest answer read from a webhook (kube-apiserver reads at most 3 MiB too).
const MAX_RESPONSE_BYTES: usize = 3 << 20;

/// A webhook's answer: its HTTP status, content type and body.
pub(crate) type Answer = (u16, String, Bytes);

/// Where a webhook is called, resolved from its `clientConfig`.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The URL as Go's errors print it, `?timeout=<n>s` included.
    pub(crate) url: String,
    /// The host and port dialed.
    host: String,
    port: u16,
    /// The path and query sent.
    path: String,
    /// The name the certificate is verified for.
    server_name: String,
    /// The `Host` sent: the server name, and the port unless 443.
    authority: String,
    /// The `caBundle`, PEM; empty for the system's roots.
    ca_bundle: Vec<u8>,
}

impl Endpoint {
    /// The endpoint of an `https://` URL (`clientConfig.url`), with `?timeout=` added.
    pub(crate) fn from_url(
        url: &str,
        ca_bundle: Vec<u8>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("invalid webhook URL {url:?}: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!("webhook URL {url:?} is not https"));
        }
        let host = uri
            .host()
            .ok_or_else(|| format!("webhook URL {url:?} has no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        Ok(Self::new(
            host.clone(),
            uri.port_u16().unwrap_or(443),
            path,
            host,
            ca_bundle,
            timeout,
        ))
    }

    /// The endpoint of a Service (`clientConfig.service`) at `cluster_ip`.
    pub(crate) fn for_service(
        (namespace, name): (&str, &str),
        cluster_ip: &str,
        (port, path): (u16, &str),
        ca_bundle: Vec<u8>,
        timeout: Duration,
    ) -> Self {
        let server_name = format!("{name}.{namespace}.svc");
        let mut endpoint = Self::new(
            cluster_ip.to_string(),
            port,
            if path.is_empty() { "/" } else { path },
            server_name,
            ca_bundle,
            timeout,
        );
        // Go's client names a Service's port even when it is 443.
        endpoint.authority = format!("{}:{port}", endpoint.server_name);
        endpoint.url = format!("https://{}{}", endpoint.authority, endpoint.path);
        endpoint
    }

    fn new(
        host: String,
        port: u16,
        path: &str,
        server_name: String,
        ca_bundle: Vec<u8>,
        timeout: Duration,
    ) -> Self {
        let separator = if path.contains('?') { '&' } else { '?' };
        let path = format!("{path}{separator}timeout={}s", timeout.as_secs());
        let authority = match port {
            443 => server_name.clone(),
            _ if server_name.contains(':') => format!("[{server_name}]:{port}"),
            _ => format!("{server_name}:{port}"),
        };
        Self {
            url: format!("https://{authority}{path}"),
            authority,
            host,
            port,
            path,
            server_name,
            ca_bundle,
        }
    }

    /// `POST`s `body` (JSON) and returns the answer's status, content type and body,
    /// within `timeout`.
    pub(crate) async fn post(&self, body: Vec<u8>, timeout: Duration) -> Result<Answer, String> {
        let failed = |why: String| format!("Post \"{}\": {why}", self.url);
        match tokio::time::timeout(timeout, self.exchange(body)).await {
            Ok(result) => result.map_err(failed),
            Err(_) => Err(failed("context deadline exceeded".into())),
        }
    }

    async fn exchange(&self, body: Vec<u8>) -> Result<Answer, String> {
        let address = match self.host.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V6(ip)) => format!("[{ip}]:{}", self.port),
            _ => format!("{}:{}", self.host, self.port),
        };
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| format!("dial tcp {address}: {}", go_dial_error(&e)))?;
        let name = ServerName::try_from(self.server_name.clone())
            .map_err(|e| format!("invalid server name {:?}: {e}", self.server_name))?;
        let tls = tokio_rustls::TlsConnector::from(self.tls_config()?)
            .connect(name, tcp)
            .await
            .map_err(|e| go_tls_error(&e))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        let connection = tokio::spawn(connection);
        let request = Request::post(self.path.as_str())
            .header(header::HOST, self.authority.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, */*")
            .header(header::USER_AGENT, "kube-apiserver-admission")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string());
        let answer = match response {
            Ok(response) => {
                let status = response.status().as_u16();
                let content_type = response
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                    .collect()
                    .await
                    .map(|b| (status, content_type, b.to_bytes()))
                    .map_err(|e| format!("reading the response body: {e}"))
            }
            Err(e) => Err(e),
        };
        connection.abort();
        answer
    }

    /// TLS with the `caBundle`'s certificates as the only roots (the system's when empty),
    /// built once per bundle: parsing the roots (the system's above all) costs more than a
    /// webhook call.
    fn tls_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        static CONFIGS: std::sync::LazyLock<
            parking_lot::Mutex<std::collections::HashMap<Vec<u8>, Arc<rustls::ClientConfig>>>,
        > = std::sync::LazyLock::new(Default::default);
        if let Some(config) = CONFIGS.lock().get(&self.ca_bundle) {
            return Ok(config.clone());
        }
        let config = self.build_tls_config()?;
        let mut configs = CONFIGS.lock();
        if configs.len() >= CACHED_TLS_CONFIGS {
            configs.clear();
        }
        configs.insert(self.ca_bundle.clone(), config.clone());
        Ok(config)
    }

    fn build_tls_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        let mut roots = rustls::RootCertStore::empty();
        if self.ca_bundle.iter().all(u8::is_ascii_whitespace) {
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        } else {
            let certs: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(&self.ca_bundle)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("unable to load root certificates: {e}"))?;
            roots.add_parsable_certificates(certs);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }
}

/// How many TLS configurations (one per distinct `caBundle`) are kept.
const CACHED_TLS_CONFIGS: usize = 64;

/// A failed dial in Go's words (`connect: connection refused`).
fn go_dial_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".into(),
        std::io::ErrorKind::TimedOut => "i/o timeout".into(),
        _ => format!("connect: {e}"),
    }
}

/// A failed TLS handshake in Go's words where they are the same failure.
fn go_tls_error(e: &std::io::Error) -> String {
    let unknown = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match unknown {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::Expired)) => {
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
                .into()
        }
        _ => format!("tls: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gets_the_timeout_in_its_query_as_kube_apiserver_sends_it() {
        let e = Endpoint::from_url(
            "https://127.0.0.1:9443/validate",
            Vec::new(),
            Duration::from_secs(7),
        )
        .unwrap();
        assert_eq!(e.url, "https://127.0.0.1:9443/validate?timeout=7s");
        assert_eq!(e.path, "/validate?timeout=7s");
        let e = Endpoint::from_url(
            "https://hooks.example/v?x=1",
            Vec::new(),
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(e.url, "https://hooks.example/v?x=1&timeout=10s");
        assert_eq!((e.host.as_str(), e.port), ("hooks.example", 443));
    }

    #[test]
    fn a_url_that_is_not_https_is_refused() {
        let e = Endpoint::from_url("http://127.0.0.1/x", Vec::new(), Duration::from_secs(1));
        assert!(e.unwrap_err().contains("is not https"));
    }

    #[test]
    fn a_service_is_dialed_at_its_cluster_ip_and_verified_by_its_dns_name() {
        let e = Endpoint::for_service(
            ("ops", "hooks"),
            "10.0.0.7",
            (443, "/mutate"),
            Vec::new(),
            Duration::from_secs(10),
        );
        assert_eq!(e.url, "https://hooks.ops.svc:443/mutate?timeout=10s");
        assert_eq!(
            (e.host.as_str(), e.server_name.as_str()),
            ("10.0.0.7", "hooks.ops.svc")
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_described_as_go_describes_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = format!("https://127.0.0.1:{port}/v");
        let e = Endpoint::from_url(&url, Vec::new(), Duration::from_secs(5)).unwrap();
        let err = e
            .post(b"{}".to_vec(), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            format!(
                "Post \"{url}?timeout=5s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            )
        );
    }
}
