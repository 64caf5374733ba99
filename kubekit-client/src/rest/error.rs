//! Errors of the client layer, with client-go's `apierrors` predicates.
//!
//! Every failed request becomes an [`Error`]. When the server answered with a
//! `metav1.Status` (or any non-success HTTP code), the error is [`Error::Api`] and carries
//! that status; the predicates ([`Error::is_not_found`], [`Error::is_conflict`], …) look at
//! the status's `reason` first and fall back to the HTTP code, as client-go does, so they
//! give the same answer for errors from the API and errors from listers.
//!
//! Errors never contain credentials: URLs carry no user information and request bodies are
//! never quoted, only response bodies (which the server wrote).

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

/// The result of every fallible call in the client layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `Ok(Some)` for what was found, `Ok(None)` for a 404 `NotFound`, other errors as they
/// are: the shape of every `get_opt`.
pub fn found<T>(result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(found) => Ok(Some(found)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// An error from the client layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server refused the request; `status` is what it said (or, when it sent no
    /// `Status` body, one made from the HTTP code and body).
    #[error("{verb} {url}: {}", ApiMessage(status))]
    Api {
        /// HTTP method of the request.
        verb: String,
        /// Path and query of the request.
        url: String,
        /// The API status: code, reason, message and details.
        status: Box<Status>,
    },
    /// The request could not be sent or its response could not be read. The message
    /// names every cause in `source`'s chain (a TLS failure says which: unknown issuer,
    /// expired certificate, wrong name…), not only the outermost one.
    #[error("{verb} {url}: {}", Causes(source.as_ref()))]
    Transport {
        /// HTTP method of the request.
        verb: String,
        /// Path and query of the request.
        url: String,
        /// What the HTTP stack reported.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A response (or one object or event in it) was not what `what` should look like.
    #[error("decoding {what}: {source}{}", Snippet(body))]
    Decode {
        /// What was being decoded, naming the resource: e.g. `"Pod from GET /api/v1/..."`.
        what: String,
        /// The decoding error: serde_json's, with line and column, or for a protobuf body
        /// the protobuf decoder's, naming the fields that lead to the fault.
        #[source]
        source: serde_json::Error,
        /// The first bytes of the offending input, for the log.
        body: String,
    },
    /// The request did not complete within its timeout.
    #[error("{verb} {url}: timed out after {after:?}")]
    Timeout {
        /// HTTP method of the request.
        verb: String,
        /// Path and query of the request.
        url: String,
        /// The timeout that expired.
        after: std::time::Duration,
    },
    /// The configuration could not be loaded or is unusable.
    #[error("configuration: {0}")]
    Config(String),
    /// The request could not be built from what the caller gave (e.g. a body that does not
    /// serialize, a name with a `/`).
    #[error("invalid request: {0}")]
    Request(String),
    /// Code run on the caller's behalf (an informer's transform, a lister-watcher) panicked
    /// while doing `what`. That work is given up and reported: the object is skipped, a
    /// reflector restarted.
    #[error("{what}: panicked: {message}")]
    Panic {
        /// What was being done.
        what: String,
        /// The panic's message.
        message: String,
    },
    /// A write the client's [`WriteGuard`](super::WriteGuard) refused: it was never sent.
    /// With leader election, `reason` says this replica's leadership has ended.
    #[error("{verb} {url}: not sent: {reason}")]
    Fenced {
        /// HTTP method of the request.
        verb: String,
        /// Path and query of the request.
        url: String,
        /// Why the guard refused it.
        reason: String,
    },
    /// The server sent more than kubekit accepts in one piece: `what` (a response body, a
    /// watch event of a resource) was larger than `limit` bytes. The response or stream it
    /// came on is given up, unread past the limit.
    #[error("{what}: larger than the limit of {limit} bytes; given up")]
    TooLarge {
        /// What was too large.
        what: String,
        /// The limit, in bytes.
        limit: usize,
    },
}

struct ApiMessage<'a>(&'a Status);

impl fmt::Display for ApiMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        let code = s.code.unwrap_or_default();
        let reason = s.reason.as_deref().unwrap_or("");
        match s.message.as_deref() {
            Some(m) if !m.is_empty() => write!(f, "{m} ({code} {reason})"),
            _ => write!(f, "{code} {reason}"),
        }
    }
}

/// An error followed by each cause in its source chain that its message does not already
/// say, separated by `: `.
struct Causes<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Display for Causes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(c) = cause {
            let text = c.to_string();
            if !said.contains(&text) {
                said.push_str(": ");
                said.push_str(&text);
            }
            cause = c.source();
        }
        f.write_str(&said)
    }
}

struct Snippet<'a>(&'a str);

impl fmt::Display for Snippet<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, " (input starts {:?})", self.0)
        }
    }
}

/// Longest message of an API status kept in an [`Error::Api`] (a server may send
/// megabytes); the rest is cut and its size said.
pub const MAX_MESSAGE_LEN: usize = 4096;

/// Longest prefix of a body quoted in a [`Error::Decode`].
const SNIPPET_LEN: usize = 120;

impl Error {
    /// A decode error for `what`, quoting the start of `body`.
    pub fn decode(what: impl Into<String>, source: serde_json::Error, body: &[u8]) -> Self {
        let end = body.len().min(SNIPPET_LEN);
        Error::Decode {
            what: what.into(),
            source,
            body: String::from_utf8_lossy(&body[..end]).into_owned(),
        }
    }

    /// An API error built from a status, e.g. by a lister or cache reporting not-found the
    /// same way the server does.
    /// A message longer than [`MAX_MESSAGE_LEN`] is cut there (an error is for logs).
    pub fn from_status(
        verb: impl Into<String>,
        url: impl Into<String>,
        mut status: Status,
    ) -> Self {
        if let Some(message) = &mut status.message
            && message.len() > MAX_MESSAGE_LEN
        {
            let total = message.len();
            let mut end = MAX_MESSAGE_LEN;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.push_str(&format!("… ({total} bytes in all)"));
        }
        Error::Api {
            verb: verb.into(),
            url: url.into(),
            status: Box::new(status),
        }
    }

    /// A `404 NotFound` error for `name` of `resource` (`group` may be empty), as the API
    /// server would report it.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let qualified = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        Self::from_status(
            "GET",
            "",
            Status {
                code: Some(404),
                reason: Some("NotFound".into()),
                status: Some("Failure".into()),
                message: Some(format!("{qualified} \"{name}\" not found")),
                details: Some(
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusDetails {
                        name: Some(name.into()),
                        group: Some(group.into()),
                        kind: Some(resource.into()),
                        ..Default::default()
                    },
                ),
                ..Default::default()
            },
        )
    }

    /// The API status, when the server answered with one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api { status, .. } => Some(status),
            _ => None,
        }
    }

    /// The HTTP code of an API error.
    pub fn code(&self) -> Option<u16> {
        self.status()
            .and_then(|s| s.code)
            .and_then(|c| u16::try_from(c).ok())
    }

    /// The `reason` of an API error (`NotFound`, `Conflict`, …).
    pub fn reason(&self) -> Option<&str> {
        self.status().and_then(|s| s.reason.as_deref())
    }

    /// Seconds the server asked the client to wait before retrying, if any.
    pub fn retry_after_seconds(&self) -> Option<i32> {
        self.status()
            .and_then(|s| s.details.as_ref())
            .and_then(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
    }

    /// client-go's rule: the reason decides; without a known reason, the code does.
    fn is(&self, reason: &str, code: u16) -> bool {
        match self.reason() {
            Some(r) if !r.is_empty() && r != "Unknown" => r == reason,
            _ => self.code() == Some(code),
        }
    }

    /// The object does not exist (404 `NotFound`).
    pub fn is_not_found(&self) -> bool {
        self.is("NotFound", 404)
    }

    /// An object with that name already exists (409 `AlreadyExists`).
    pub fn is_already_exists(&self) -> bool {
        self.reason() == Some("AlreadyExists")
    }

    /// The write was based on a stale resourceVersion, or otherwise conflicted
    /// (409 `Conflict`).
    pub fn is_conflict(&self) -> bool {
        self.is("Conflict", 409)
    }

    /// The object failed validation (422 `Invalid`).
    pub fn is_invalid(&self) -> bool {
        self.is("Invalid", 422)
    }

    /// The caller may not do this (403 `Forbidden`).
    pub fn is_forbidden(&self) -> bool {
        self.is("Forbidden", 403)
    }

    /// The caller is not authenticated (401 `Unauthorized`).
    pub fn is_unauthorized(&self) -> bool {
        self.is("Unauthorized", 401)
    }

    /// The requested resourceVersion is gone (410 `Gone`); a reflector must relist.
    pub fn is_gone(&self) -> bool {
        self.is("Gone", 410)
    }

    /// The requested resourceVersion is too old (410 `Expired`); a reflector must relist
    /// from the latest version.
    pub fn is_resource_expired(&self) -> bool {
        self.reason() == Some("Expired")
    }

    /// The server or the client is throttling (429 `TooManyRequests`).
    pub fn is_too_many_requests(&self) -> bool {
        self.is("TooManyRequests", 429)
    }

    /// The server could not finish in time (504 `Timeout`), or the request timed out on
    /// the client side.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. }) || self.is("Timeout", 504)
    }

    /// Whether the same request may succeed later: the connection failed or timed out, the
    /// server throttled (429) or failed (5xx). Other refusals (4xx), requests that cannot be
    /// built and answers that cannot be read fail the same way again.
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Transport { .. } | Error::Timeout { .. })
            || self.is_too_many_requests()
            || self.code().is_some_and(|c| c >= 500)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a message and a cause, as the HTTP stack nests them.
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn found_turns_only_not_found_into_none() {
        assert_eq!(found(Ok(1)).unwrap(), Some(1));
        let missing: Result<i32> = Err(Error::not_found("", "pods", "web"));
        assert_eq!(found(missing).unwrap(), None);
        let status = Status {
            code: Some(409),
            reason: Some("Conflict".into()),
            ..Default::default()
        };
        let conflict: Result<i32> = Err(Error::from_status("PUT", "", status));
        assert!(found(conflict).unwrap_err().is_conflict());
    }

    #[test]
    fn a_transport_error_names_every_cause_in_its_chain_once() {
        let tls = Layer("invalid peer certificate: UnknownIssuer", None);
        let io = Layer(
            "invalid peer certificate: UnknownIssuer",
            Some(Box::new(tls)),
        );
        let connect = Layer("client error (Connect)", Some(Box::new(io)));
        let err = Error::Transport {
            verb: "GET".into(),
            url: "/version".into(),
            source: Box::new(connect),
        };
        assert_eq!(
            err.to_string(),
            "GET /version: client error (Connect): invalid peer certificate: UnknownIssuer"
        );
    }

    #[tokio::test]
    async fn a_tls_handshake_with_a_server_that_does_not_speak_tls_says_why_it_failed() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            stream
                .write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                .await
                .unwrap();
            stream
        });
        let mut config = crate::rest::RestConfig::from_url(&url).unwrap();
        config.max_retries = 0;
        let client = crate::rest::RestClient::new(&config).unwrap();
        let err = client.get().abs_path("/version").send().await.unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Transport { .. }), "{text}");
        assert!(
            text.contains("client error (Connect): ") && text.contains("corrupt message"),
            "{text}"
        );
        drop(server.await);
    }

    #[test]
    fn a_huge_status_message_is_cut_with_its_size_said() {
        let status = Status {
            code: Some(500),
            message: Some("é".repeat(5 << 20)),
            ..Default::default()
        };
        let err = Error::from_status("WATCH", "pods", status);
        let text = err.to_string();
        assert!(text.len() < MAX_MESSAGE_LEN + 200, "{} bytes", text.len());
        assert!(
            text.contains("(10485760 bytes in all)"),
            "{}",
            &text[text.len() - 80..]
        );
        let short = Error::from_status(
            "GET",
            "x",
            Status {
                message: Some("gone".into()),
                ..Default::default()
            },
        );
        assert!(short.to_string().contains("gone") && !short.to_string().contains("bytes in all"));
    }
}
