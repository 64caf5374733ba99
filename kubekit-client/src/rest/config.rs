//! Where a client connects and how: client-go's `rest.Config`.
//!
//! Loading kubeconfig files, in-cluster service accounts, authentication plugins and TLS
//! are `kube`'s (its [`kube::Config`] sits inside); this type adds what client-go adds on
//! top: client-side rate limiting (QPS 5, burst 10 unless set; a negative QPS disables it),
//! a default request timeout (60 s; watches have their own), a cap on response bodies,
//! the retry budget and the user agent.
//!
//! ```no_run
//! # async fn demo() -> kubekit::rest::Result<()> {
//! use kubekit::rest::RestConfig;
//!
//! // Like clientcmd.BuildConfigFromFlags(masterURL, kubeconfigPath).
//! let config = RestConfig::from_flags(None, Some("/path/to/kubeconfig".as_ref()))
//!     .await?
//!     .with_rate_limit(50.0, 100);
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::path::Path;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

use super::error::{Error, Result};
use super::metrics::RestClientMetrics;

/// Default client-side queries per second (client-go's `DefaultQPS`).
pub const DEFAULT_QPS: f32 = 5.0;
/// Default client-side burst (client-go's `DefaultBurst`).
pub const DEFAULT_BURST: u32 = 10;
/// Default number of retries of a throttled (429) or unavailable (5xx) request.
pub const DEFAULT_MAX_RETRIES: u32 = 10;
/// Whether requests ask for gzip-compressed responses unless set
/// ([`RestConfig::compression`]): as client-go, which asks unless `DisableCompression`.
pub const DEFAULT_COMPRESSION: bool = true;
/// Whether requests for what has no protobuf form ask for CBOR first unless set
/// ([`RestConfig::cbor`]).
pub const DEFAULT_CBOR: bool = true;
/// Default timeout of every request but watches: kube-apiserver's own default request
/// timeout (`--request-timeout`, 60 s), after which it would have given up anyway. A
/// request accepted and never answered fails with [`Error::Timeout`] instead of hanging.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default largest response body read whole (every request but watches, whose events are
/// bounded one by one): 1 GiB. client-go has no limit; kubekit needs one so that a server
/// sending without end costs an error, not the process. It is generous because a whole
/// list legitimately gets large: kube-apiserver's watch cache answers a list at
/// resourceVersion "0" in one piece whatever the page size, and 100k ~7 KiB Pods (the
/// benchmarks' largest case) are ~700 MiB of JSON.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 30;

/// Connection settings for a [`RestClient`](super::RestClient).
///
/// `Debug` shows where and how the client connects, never a credential.
#[derive(Clone)]
pub struct RestConfig {
    kube: kube::Config,
    /// Requests per second allowed on average; `0` means the default (5), a negative value
    /// disables client-side rate limiting.
    pub qps: f32,
    /// Requests allowed at once above the average rate.
    pub burst: u32,
    /// Timeout of each request but watches, unless the request sets its own
    /// ([`DEFAULT_TIMEOUT`], 60 s, unless set); `None` waits as long as the server does.
    /// Watches are bounded by their `timeoutSeconds` instead.
    pub timeout: Option<Duration>,
    /// How many times a request refused with 429, or a 5xx carrying `Retry-After`, is retried.
    pub max_retries: u32,
    /// The `User-Agent` header sent with every request.
    pub user_agent: String,
    /// The largest response body read whole ([`DEFAULT_MAX_BODY_BYTES`] unless set); a
    /// larger one is an [`Error::TooLarge`]. Watch events have their own limit
    /// ([`MAX_WATCH_EVENT_BYTES`](super::MAX_WATCH_EVENT_BYTES)).
    pub max_body_bytes: usize,
    /// Where the client's requests are counted and timed, if anywhere.
    pub metrics: Option<RestClientMetrics>,
    /// Whether typed clients of built-in types ask for protobuf
    /// (`application/vnd.kubernetes.protobuf, application/json`, as client-go's do); `true`
    /// unless set. `false` makes every request ask for JSON. Custom resources, the dynamic
    /// and metadata clients ask as [`cbor`](Self::cbor) says.
    pub protobuf: bool,
    /// Whether requests for what has no protobuf form (custom resources, the dynamic
    /// client's objects, built-in types when [`protobuf`](Self::protobuf) is off) ask for
    /// CBOR first (`application/cbor, application/json;q=0.9`, as client-go's dynamic
    /// client does with its `ClientsAllowCBOR` feature). kube-apiserver serves CBOR with
    /// its `CBORServingAndStorage` feature (alpha in 1.37) and answers JSON without it,
    /// so asking costs nothing where it is not served. [`DEFAULT_CBOR`] unless set. Only
    /// answers are CBOR: request bodies stay JSON (and apply patches YAML), so a server
    /// that does not understand CBOR never sees any (client-go's fallback after a 415
    /// has nothing to undo).
    pub cbor: bool,
    /// Whether requests ask for responses compressed with gzip (`Accept-Encoding: gzip`,
    /// client-go's `DisableCompression: false`); a compressed response is decompressed as
    /// it arrives. [`DEFAULT_COMPRESSION`] unless set, `false` if the kubeconfig's cluster
    /// says `disable-compression: true`. kube-apiserver compresses responses of over
    /// 128 KiB (large lists and their streams): fewer bytes on the network, more CPU on
    /// both ends (bench/README.md has what it costs an informer's sync).
    pub compression: bool,
}

impl fmt::Debug for RestConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestConfig")
            .field("host", &self.kube.cluster_url.to_string())
            .field("auth", &self.auth_method())
            .field("insecure", &self.kube.accept_invalid_certs)
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("user_agent", &self.user_agent)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("protobuf", &self.protobuf)
            .field("cbor", &self.cbor)
            .field("compression", &self.compression)
            .finish()
    }
}

impl RestConfig {
    /// How requests authenticate, for `Debug` and warnings: `"none"` without credentials.
    fn auth_method(&self) -> &'static str {
        let auth = &self.kube.auth_info;
        if auth.token.is_some() || auth.token_file.is_some() {
            "bearer token"
        } else if auth.client_certificate.is_some() || auth.client_certificate_data.is_some() {
            "client certificate"
        } else if auth.username.is_some() {
            "basic auth"
        } else if auth.exec.is_some() {
            "exec plugin"
        } else if auth.auth_provider.is_some() {
            "auth provider"
        } else {
            "none"
        }
    }

    /// Why requests of this configuration expose credentials, if they do: a credential
    /// sent over plain `http://` to a host other than loopback. A client made from it
    /// logs this as a warning.
    pub(crate) fn cleartext_credentials(&self) -> Option<String> {
        let url = &self.kube.cluster_url;
        let method = self.auth_method();
        let loopback = url.host().is_some_and(|h| {
            h == "localhost"
                || h.trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        (url.scheme_str() == Some("http") && method != "none" && !loopback).then(|| {
            format!("credentials ({method}) are sent in clear text to {url}: use https://")
        })
    }

    /// Wraps a `kube` configuration with client-go's defaults (QPS 5, burst 10, 10 retries)
    /// and kubekit's bounds ([`DEFAULT_TIMEOUT`], [`DEFAULT_MAX_BODY_BYTES`]).
    ///
    /// User information in the server URL (`https://user:password@host`) is dropped, with
    /// a warning: kube never sends it, and it would show wherever the URL is printed.
    pub fn from_kube(mut kube: kube::Config) -> Self {
        // kubekit retries on its own terms (Retry-After, a budget of `max_retries`);
        // kube's retry layer would retry the same requests a second time.
        kube.default_retry = false;
        kube.cluster_url = without_userinfo(kube.cluster_url);
        Self {
            qps: DEFAULT_QPS,
            burst: DEFAULT_BURST,
            timeout: Some(DEFAULT_TIMEOUT),
            max_retries: DEFAULT_MAX_RETRIES,
            user_agent: format!("kubekit/{}", env!("CARGO_PKG_VERSION")),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            metrics: None,
            protobuf: true,
            cbor: DEFAULT_CBOR,
            compression: DEFAULT_COMPRESSION && !kube.disable_compression,
            kube,
        }
    }

    /// Loads the current context of the kubeconfig file at `path`.
    pub async fn from_kubeconfig(path: &Path) -> Result<Self> {
        Self::from_kubeconfig_context(path, None).await
    }

    /// Loads context `context` (or the current one) of the kubeconfig file at `path`.
    pub async fn from_kubeconfig_context(path: &Path, context: Option<&str>) -> Result<Self> {
        let kc = Kubeconfig::read_from(path)
            .map_err(|e| Error::Config(format!("reading kubeconfig {}: {e}", path.display())))?;
        Self::from_kubeconfig_value(kc, context, &path.display().to_string()).await
    }

    async fn from_kubeconfig_value(
        kc: Kubeconfig,
        context: Option<&str>,
        from: &str,
    ) -> Result<Self> {
        let options = KubeConfigOptions {
            context: context.map(str::to_string),
            ..Default::default()
        };
        let kube = kube::Config::from_custom_kubeconfig(kc, &options)
            .await
            .map_err(|e| Error::Config(format!("kubeconfig {from}: {e}")))?;
        Ok(Self::from_kube(kube))
    }

    /// A server reached at `url` with no kubeconfig and no credentials (client-go's
    /// `rest.Config{Host: url}`): an `http://` URL for a plain-text server (a local proxy
    /// such as `kubectl proxy`, a test server), or `https://` verified against the system's
    /// roots. Credentials and CA data come only through a kubeconfig or in-cluster.
    ///
    /// ```
    /// let config = kubekit::rest::RestConfig::from_url("http://127.0.0.1:8001").unwrap();
    /// assert_eq!(config.host().to_string(), "http://127.0.0.1:8001/");
    /// assert!(kubekit::rest::RestConfig::from_url("127.0.0.1:8001").is_err());
    /// ```
    pub fn from_url(url: &str) -> Result<Self> {
        Ok(Self::from_kube(kube::Config::new(parse_url(url)?)))
    }

    /// The service account of the pod this process runs in (`KUBERNETES_SERVICE_HOST`,
    /// `/var/run/secrets/kubernetes.io/serviceaccount`).
    pub fn in_cluster() -> Result<Self> {
        kube::Config::incluster()
            .map(Self::from_kube)
            .map_err(|e| Error::Config(format!("in-cluster configuration: {e}")))
    }

    /// The default loading rules: `$KUBECONFIG` (files merged as kubectl does), then
    /// `~/.kube/config`, then the in-cluster service account.
    ///
    /// Unlike `kube::Config::infer`, this never reads kube's debugging variables
    /// (`KUBE_RS_DEBUG_OVERRIDE_URL`, which would send the credentials to another server,
    /// and `KUBE_RS_DEBUG_IMPERSONATE_*`): whoever sets a process's environment does not
    /// get to redirect its token. Opt in with
    /// [`with_kube_debug_overrides`](Self::with_kube_debug_overrides).
    pub async fn infer() -> Result<Self> {
        let kubeconfig = match kube::Config::from_kubeconfig(&KubeConfigOptions::default()).await {
            Ok(config) => return Ok(Self::from_kube(config)),
            Err(e) => e,
        };
        kube::Config::incluster()
            .map(Self::from_kube)
            .map_err(|in_cluster| {
                Error::Config(format!(
                    "no kubeconfig ({kubeconfig}) and not in a cluster ({in_cluster})"
                ))
            })
    }

    /// The same configuration with kube's debugging overrides applied, read from the
    /// environment: `KUBE_RS_DEBUG_OVERRIDE_URL` replaces the server URL (the credentials
    /// go there), `KUBE_RS_DEBUG_IMPERSONATE_USER` / `_GROUP` impersonate. For debugging
    /// only (e.g. through `kubectl proxy`); kubekit never applies them on its own.
    pub fn with_kube_debug_overrides(mut self) -> Self {
        self.kube.apply_debug_overrides();
        self.kube.cluster_url = without_userinfo(std::mem::take(&mut self.kube.cluster_url));
        self
    }

    /// client-go's `BuildConfigFromFlags(masterURL, kubeconfigPath)`, as controllers' flags
    /// `--master` and `--kubeconfig` use it:
    ///
    /// - neither given: in-cluster, falling back to the default loading rules;
    /// - a kubeconfig path: that file (the default loading rules otherwise);
    /// - a master URL: overrides the kubeconfig's server; with no kubeconfig to be found,
    ///   the master URL alone (no credentials).
    pub async fn from_flags(master_url: Option<&str>, kubeconfig: Option<&Path>) -> Result<Self> {
        let master_url = master_url.filter(|m| !m.is_empty());
        let kubeconfig = kubeconfig.filter(|p| !p.as_os_str().is_empty());
        let mut config = match (master_url, kubeconfig) {
            (None, None) => match Self::in_cluster() {
                Ok(c) => return Ok(c),
                Err(in_cluster) => Self::infer().await.map_err(|e| {
                    Error::Config(format!(
                        "no --kubeconfig or --master given; {in_cluster}; default loading rules: {e}"
                    ))
                })?,
            },
            (_, Some(path)) => Self::from_kubeconfig(path).await?,
            (Some(master), None) => match Kubeconfig::read() {
                Ok(kc) => Self::from_kubeconfig_value(kc, None, "from $KUBECONFIG or ~/.kube/config").await?,
                Err(_) => Self::from_url(master)?,
            },
        };
        if let Some(master) = master_url {
            config.kube.cluster_url = without_userinfo(parse_url(master)?);
        }
        Ok(config)
    }

    /// Sets client-side rate limiting; a negative `qps` disables it.
    pub fn with_rate_limit(mut self, qps: f32, burst: u32) -> Self {
        self.qps = qps;
        self.burst = burst;
        self
    }

    /// Sets the default timeout of every request but watches.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets whether requests ask for gzip-compressed responses ([`Self::compression`]).
    pub fn with_compression(mut self, compression: bool) -> Self {
        self.compression = compression;
        self
    }

    /// Sets whether requests for what has no protobuf form ask for CBOR first
    /// ([`Self::cbor`]).
    pub fn with_cbor(mut self, cbor: bool) -> Self {
        self.cbor = cbor;
        self
    }

    /// Sets the largest response body read whole.
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The rate limit a client made from this configuration applies, as client-go reads
    /// `QPS`/`Burst`: zero (or non-finite) QPS means [`DEFAULT_QPS`], zero burst means
    /// [`DEFAULT_BURST`], a negative QPS means no limit (`None`).
    pub fn effective_rate_limit(&self) -> Option<(f32, u32)> {
        let qps = match self.qps {
            q if q < 0.0 => return None,
            q if q == 0.0 || !q.is_finite() => DEFAULT_QPS,
            q => q,
        };
        let burst = if self.burst == 0 {
            DEFAULT_BURST
        } else {
            self.burst
        };
        Some((qps, burst))
    }

    /// The same configuration, its clients' requests counted and timed in `metrics`.
    pub fn with_metrics(mut self, metrics: &RestClientMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// The API server's URL.
    pub fn host(&self) -> &http::Uri {
        &self.kube.cluster_url
    }

    /// The namespace of the kubeconfig's context (or the pod's, in-cluster), `default`
    /// otherwise.
    pub fn default_namespace(&self) -> &str {
        &self.kube.default_namespace
    }

    /// The `kube` configuration underneath (TLS, authentication, proxies).
    pub fn kube_config(&self) -> &kube::Config {
        &self.kube
    }
}

/// `url` without its user information (`user:password@`), which is logged as dropped.
fn without_userinfo(url: http::Uri) -> http::Uri {
    let Some(host) = url
        .authority()
        .and_then(|a| a.as_str().rsplit_once('@'))
        .map(|(_, host)| host.to_string())
    else {
        return url;
    };
    let mut parts = url.into_parts();
    match host.parse() {
        Ok(authority) => parts.authority = Some(authority),
        Err(_) => parts.authority = None,
    }
    tracing::warn!(
        "the server URL's user information is dropped: kube does not send it and kubekit does not print credentials"
    );
    http::Uri::from_parts(parts).unwrap_or_default()
}

fn parse_url(url: &str) -> Result<http::Uri> {
    url.parse::<http::Uri>()
        .ok()
        .filter(|u| u.scheme().is_some() && u.host().is_some())
        .ok_or_else(|| Error::Config(format!("server URL {url:?} is not an absolute http(s) URL")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "s3cr3t-token-value";

    fn kubeconfig_file(test: &str, server: &str) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("kubekit-config-{test}-{}.yaml", std::process::id()));
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: RestConfig\nclusters:\n- name: c\n  cluster:\n    server: {server}\n\
                 users:\n- name: u\n  user:\n    token: {TOKEN}\ncontexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\n    namespace: team\n\
                 current-context: ctx\n"
            ),
        )
        .unwrap();
        path
    }

    #[tokio::test]
    async fn kubeconfig_loads_with_client_go_defaults_and_debug_hides_the_token() {
        let path = kubeconfig_file("defaults", "https://127.0.0.1:1");
        let config = RestConfig::from_kubeconfig(&path).await.unwrap();
        assert_eq!(
            (config.qps, config.burst, config.max_retries),
            (5.0, 10, 10)
        );
        assert_eq!(config.default_namespace(), "team");
        assert_eq!(config.host().to_string(), "https://127.0.0.1:1/");
        let debug = format!("{config:?}");
        assert!(!debug.contains(TOKEN), "{debug}");
        assert!(debug.contains("bearer token"), "{debug}");
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn zero_qps_means_the_default_and_negative_means_unlimited() {
        let base = RestConfig::from_kube(kube::Config::new("https://127.0.0.1:1".parse().unwrap()));
        assert_eq!(base.effective_rate_limit(), Some((5.0, 10)));
        assert_eq!(
            base.clone().with_rate_limit(0.0, 0).effective_rate_limit(),
            Some((5.0, 10))
        );
        assert_eq!(
            base.clone()
                .with_rate_limit(50.0, 100)
                .effective_rate_limit(),
            Some((50.0, 100))
        );
        assert_eq!(base.with_rate_limit(-1.0, 10).effective_rate_limit(), None);
    }

    #[tokio::test]
    async fn master_flag_overrides_the_kubeconfig_server() {
        let path = kubeconfig_file("master", "https://127.0.0.1:2");
        let config = RestConfig::from_flags(Some("https://10.1.2.3:6443"), Some(&path))
            .await
            .unwrap();
        assert_eq!(config.host().to_string(), "https://10.1.2.3:6443/");
        assert!(
            format!("{config:?}").contains("bearer token"),
            "credentials kept"
        );
        let err = RestConfig::from_flags(Some("not a url"), Some(&path))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a url"), "{err}");
        std::fs::remove_file(path).unwrap();
    }

    #[tokio::test]
    async fn missing_kubeconfig_is_a_config_error_naming_the_file() {
        let err = RestConfig::from_kubeconfig(Path::new("/nonexistent/kubeconfig"))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Config(_)));
        assert!(err.to_string().contains("/nonexistent/kubeconfig"), "{err}");
    }

    #[tokio::test]
    async fn a_password_in_the_server_url_is_neither_printed_nor_kept() {
        let config = RestConfig::from_url("http://admin:hunter2@127.0.0.1:8001").unwrap();
        assert_eq!(config.host().to_string(), "http://127.0.0.1:8001/");
        assert!(!format!("{config:?}").contains("hunter2"));
        let path = kubeconfig_file("userinfo", "https://admin:hunter2@127.0.0.1:1");
        let config = RestConfig::from_kubeconfig(&path).await.unwrap();
        assert_eq!(config.host().to_string(), "https://127.0.0.1:1/");
        let debug = format!("{config:?}");
        assert!(
            !debug.contains("hunter2") && !debug.contains(TOKEN),
            "{debug}"
        );
        let config = RestConfig::from_flags(Some("https://u:hunter2@10.1.2.3:6443"), Some(&path))
            .await
            .unwrap();
        assert_eq!(config.host().to_string(), "https://10.1.2.3:6443/");
        std::fs::remove_file(path).unwrap();
    }

    #[tokio::test]
    async fn credentials_over_plain_http_to_a_remote_host_are_flagged() {
        for (server, flagged) in [
            ("http://10.1.2.3:8080", true),
            ("http://api.example.com", true),
            ("http://127.0.0.1:8080", false),
            ("http://localhost:8080", false),
            ("http://[::1]:8080", false),
            ("https://10.1.2.3:6443", false),
        ] {
            let path = kubeconfig_file("cleartext", server);
            let config = RestConfig::from_kubeconfig(&path).await.unwrap();
            let warning = config.cleartext_credentials();
            assert_eq!(warning.is_some(), flagged, "{server}: {warning:?}");
            if let Some(w) = warning {
                assert!(w.contains("bearer token") && !w.contains(TOKEN), "{w}");
            }
            std::fs::remove_file(path).unwrap();
        }
        let anonymous = RestConfig::from_url("http://10.1.2.3:8080").unwrap();
        assert_eq!(
            anonymous.cleartext_credentials(),
            None,
            "no credential to expose"
        );
    }

    /// Set in the child process of the test below: the environment a process inherits.
    const CHILD: &str = "KUBEKIT_TEST_DEBUG_OVERRIDE_CHILD";

    #[tokio::test]
    async fn kube_debug_override_url_is_ignored_unless_opted_in() {
        if std::env::var_os(CHILD).is_some() {
            let inferred = RestConfig::infer().await.unwrap();
            assert_eq!(inferred.host().to_string(), "https://127.0.0.1:1/");
            let flags = RestConfig::from_flags(None, None).await.unwrap();
            assert_eq!(flags.host().to_string(), "https://127.0.0.1:1/");
            let opted = inferred.with_kube_debug_overrides();
            assert_eq!(opted.host().to_string(), "http://attacker.example:8001/");
            return;
        }
        // The environment is the input: a child process gets it (setting variables in
        // this multi-threaded process would be unsound).
        let path = kubeconfig_file("override", "https://127.0.0.1:1");
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "rest::config::tests::kube_debug_override_url_is_ignored_unless_opted_in",
            ])
            .env(CHILD, "1")
            .env("KUBECONFIG", &path)
            .env("KUBE_RS_DEBUG_OVERRIDE_URL", "http://attacker.example:8001")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .unwrap();
        std::fs::remove_file(path).unwrap();
        let out = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{out}");
        assert!(out.contains("1 passed"), "the child ran the test: {out}");
    }

    #[tokio::test]
    async fn transport_errors_do_not_leak_the_token() {
        // Nothing listens on port 1: the request fails in the transport layer.
        let path = kubeconfig_file("transport", "https://127.0.0.1:1");
        let config = RestConfig::from_kubeconfig(&path).await.unwrap();
        let mut config = config.with_timeout(Duration::from_secs(5));
        config.max_retries = 0;
        let client = crate::rest::RestClient::new(&config).unwrap();
        let err = client.get().abs_path("/version").send().await.unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(TOKEN), "{shown}");
        std::fs::remove_file(path).unwrap();
    }
}
