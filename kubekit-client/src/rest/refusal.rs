//! A response's body read up to a limit, and a refusal (a 4xx or 5xx response) turned
//! into an [`Error::Api`] with the server's `Status`, or one made from the HTTP code.

use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

use super::cbor;
use super::error::Error;

/// The most of a refusal's body (a 4xx or 5xx response, a failed watch) that is read:
/// enough for any `metav1.Status`, whose message is then cut at
/// [`MAX_MESSAGE_LEN`](super::MAX_MESSAGE_LEN) anyway.
pub const MAX_ERROR_BODY_BYTES: usize = 1 << 20;

/// A body read up to a limit.
pub(super) enum ReadBody {
    /// The whole body.
    Whole(Bytes),
    /// The body went past the limit: its first `limit` bytes (the rest is not read).
    Cut(Bytes),
}

/// Reads `body` up to `limit` bytes; a body whose announced length is over the limit is
/// not read at all. The frames are joined once at the end (no copy for a body of one
/// frame), as `collect` does.
pub(super) async fn read_body<B>(
    mut body: B,
    limit: usize,
) -> std::result::Result<ReadBody, B::Error>
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

/// The error for a non-success response: the server's `Status` when the body is one,
/// otherwise a status made from the HTTP code and the start of the body.
pub(super) fn api_error(verb: &str, url: &str, code: StatusCode, body: &[u8]) -> Error {
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
fn status_of(body: &[u8]) -> Option<Status> {
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
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::rest::RestClient;

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
