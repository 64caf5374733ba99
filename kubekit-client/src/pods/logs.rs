//! A container's log: `GET pods/<name>/log`.

use bytes::Bytes;
use futures_util::Stream;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::clientset::ResourceClient;
use crate::rest::{Error, Request, Result};

/// Which part of which container's log to read: client-go's `PodLogOptions`. The default
/// reads the whole log of the Pod's only container.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogOptions {
    /// The container; may be left out when the Pod has one container.
    pub container: Option<String>,
    /// Keep the stream open and send lines as the container writes them.
    pub follow: bool,
    /// The log of the container's previous instance (before its last restart).
    pub previous: bool,
    /// Only lines written in the last this-many seconds.
    pub since_seconds: Option<i64>,
    /// Only lines written at or after this time (exclusive with `since_seconds`).
    pub since_time: Option<Time>,
    /// Only the last this-many lines (then, when following, the new ones).
    pub tail_lines: Option<i64>,
    /// Prefix every line with its RFC 3339 timestamp.
    pub timestamps: bool,
    /// Stop after this many bytes (the last line may be cut).
    pub limit_bytes: Option<i64>,
    /// Let the API server skip verifying the kubelet's serving certificate.
    pub insecure_skip_tls_verify_backend: bool,
}

impl LogOptions {
    /// The request's query parameters, set on `req`.
    fn apply(&self, mut req: Request) -> Result<Request> {
        if self.since_seconds.is_some() && self.since_time.is_some() {
            return Err(Error::Request(
                "log options: at most one of since_seconds and since_time may be set".into(),
            ));
        }
        if let Some(c) = &self.container {
            req = req.param("container", c);
        }
        for (key, on) in [
            ("follow", self.follow),
            ("previous", self.previous),
            ("timestamps", self.timestamps),
            (
                "insecureSkipTLSVerifyBackend",
                self.insecure_skip_tls_verify_backend,
            ),
        ] {
            if on {
                req = req.param(key, "true");
            }
        }
        for (key, value) in [
            ("sinceSeconds", self.since_seconds),
            ("tailLines", self.tail_lines),
            ("limitBytes", self.limit_bytes),
        ] {
            if let Some(v) = value {
                req = req.param(key, &v.to_string());
            }
        }
        if let Some(t) = &self.since_time {
            let text = serde_json::to_value(t)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .ok_or_else(|| Error::Request(format!("log options: since_time {t:?}")))?;
            req = req.param("sinceTime", &text);
        }
        Ok(req)
    }
}

impl ResourceClient<Pod> {
    fn log_request(&self, name: &str, opts: &LogOptions) -> Result<Request> {
        let namespace = self.pod_namespace("log", name)?;
        let req = self
            .rest_client()
            .get()
            .group_version("", "v1")
            .namespace(namespace)
            .resource("pods")
            .name(name)
            .subresource("log")
            .accept("text/plain, */*");
        opts.apply(req)
    }

    /// The log of Pod `name` as it is when the server answers (client-go's
    /// `GetLogs(name, opts).DoRaw`). `opts.follow` is ignored: use
    /// [`log_stream`](Self::log_stream) to follow. The bytes are the container's, not
    /// necessarily UTF-8.
    pub async fn logs(&self, name: &str, opts: &LogOptions) -> Result<Bytes> {
        let opts = LogOptions {
            follow: false,
            ..opts.clone()
        };
        let res = self.log_request(name, &opts)?.send().await?;
        Ok(res.body().clone())
    }

    /// The log of Pod `name` as a stream of byte chunks (client-go's
    /// `GetLogs(name, opts).Stream`); with `opts.follow` it stays open and yields what the
    /// container writes until the container ends or the stream is dropped. Chunks are as
    /// the server sent them, not split into lines (wrap it in
    /// `tokio_util::io::StreamReader` to read lines). The client's timeout bounds the wait
    /// for the server's answer only.
    pub async fn log_stream(
        &self,
        name: &str,
        opts: &LogOptions,
    ) -> Result<impl Stream<Item = Result<Bytes>> + Send + use<>> {
        self.log_request(name, opts)?.stream().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::{RestClient, RestConfig};

    /// A Pod client in namespace `ns` (a client needs a runtime, hence the async tests).
    fn pods() -> ResourceClient<Pod> {
        let mut config = RestConfig::from_url("https://127.0.0.1:1").unwrap();
        // Without a default timeout, `url()` is exactly what `log_stream` sends.
        config.timeout = None;
        ResourceClient::namespaced(RestClient::new(&config).unwrap(), "ns")
    }

    #[tokio::test]
    async fn log_options_become_the_query_of_the_log_subresource() {
        let opts = LogOptions {
            container: Some("app".into()),
            follow: true,
            previous: true,
            since_seconds: Some(30),
            tail_lines: Some(5),
            timestamps: true,
            limit_bytes: Some(1024),
            ..Default::default()
        };
        let url = pods().log_request("web-0", &opts).unwrap().url();
        assert_eq!(
            url,
            "/api/v1/namespaces/ns/pods/web-0/log?container=app&follow=true&previous=true\
             &timestamps=true&sinceSeconds=30&tailLines=5&limitBytes=1024"
        );
    }

    #[tokio::test]
    async fn since_time_is_sent_in_rfc3339() {
        let time: Time = serde_json::from_str("\"2026-11-25T10:00:00Z\"").unwrap();
        let opts = LogOptions {
            since_time: Some(time),
            ..Default::default()
        };
        let url = pods().log_request("p", &opts).unwrap().url();
        assert_eq!(
            url,
            "/api/v1/namespaces/ns/pods/p/log?sinceTime=2026-11-25T10%3A00%3A00Z"
        );
    }

    #[tokio::test]
    async fn since_seconds_and_since_time_together_are_refused() {
        let opts = LogOptions {
            since_seconds: Some(1),
            since_time: Some(serde_json::from_str("\"2026-11-25T10:00:00Z\"").unwrap()),
            ..Default::default()
        };
        let err = pods().log_request("p", &opts).unwrap_err();
        assert!(err.to_string().contains("since_seconds"), "{err}");
    }

    #[tokio::test]
    async fn logs_without_a_namespace_say_how_to_get_one() {
        let all: ResourceClient<Pod> = ResourceClient::namespaced(pods().rest_client().clone(), "");
        let err = all.log_request("p", &LogOptions::default()).unwrap_err();
        assert!(err.to_string().contains("pods(namespace)"), "{err}");
    }
}
