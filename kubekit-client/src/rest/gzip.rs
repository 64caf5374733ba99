//! Response bodies as the server sent them or, when it compressed them
//! (`Content-Encoding: gzip`, asked for by [`RestConfig::compression`](super::RestConfig)),
//! decompressed as they arrive.
//!
//! kube-apiserver compresses a response of over 128 KiB when asked (its
//! `APIResponseCompression` feature, on by default), and from 1.37 a watch too, one gzip
//! member per flush: the decoder takes every member of a stream, and hands on what each
//! chunk decompresses to at once, so that a watch event is not held back until the next.
//! A stream cut short, or bytes that are not gzip, are an error of the body, as a broken
//! connection is.

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use flate2::write::MultiGzDecoder;
use http::header::CONTENT_ENCODING;
use hyper::body::{Body, Frame, SizeHint};

/// A response body, decompressed if the server compressed it.
pub(crate) struct ResponseBody<B = kube::client::Body> {
    body: B,
    /// The decoder of a compressed body, until its end.
    gunzip: Option<Box<MultiGzDecoder<Vec<u8>>>>,
    /// Whether a compressed body has ended (or failed): nothing more comes.
    done: bool,
}

/// Why a response body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError<E = kube::Error> {
    /// The connection failed.
    #[error(transparent)]
    Transport(E),
    /// The body is not the gzip stream its `Content-Encoding` announced, or was cut short.
    #[error("decompressing the gzip-encoded response: {0}")]
    Gzip(std::io::Error),
}

impl<B> ResponseBody<B> {
    /// `res` with its body decompressed if its `Content-Encoding` is `gzip`.
    pub(crate) fn of(res: http::Response<B>) -> http::Response<Self> {
        let gzip = res
            .headers()
            .get(CONTENT_ENCODING)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
        res.map(|body| Self {
            body,
            gunzip: gzip.then(|| Box::new(MultiGzDecoder::new(Vec::new()))),
            done: false,
        })
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for ResponseBody<B> {
    type Data = Bytes;
    type Error = BodyError<B::Error>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        let Some(gunzip) = this.gunzip.as_mut() else {
            let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
            return Poll::Ready(frame.map(|f| f.map_err(BodyError::Transport)));
        };
        while !this.done {
            let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
            this.done = frame.is_none();
            let decoded = match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => gunzip.write_all(&data).and_then(|()| gunzip.flush()),
                    // Trailers carry nothing the client reads.
                    Err(_) => continue,
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(BodyError::Transport(e)))),
                None => gunzip.try_finish(),
            };
            if let Err(e) = decoded {
                this.done = true;
                return Poll::Ready(Some(Err(BodyError::Gzip(e))));
            }
            let out = std::mem::take(gunzip.get_mut());
            if !out.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
            }
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        match self.gunzip {
            Some(_) => self.done,
            None => self.body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self.gunzip {
            // The compressed length says little of the decompressed one.
            Some(_) => SizeHint::default(),
            None => self.body.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use bytes::Bytes;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use futures_util::{FutureExt, StreamExt};
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::Frame;
    use k8s_openapi::api::core::v1::ConfigMap;
    use tokio::sync::mpsc;

    use super::{BodyError, ResponseBody};
    use crate::rest::test_server::{Reply, TestServer};

    /// `data` as one gzip member.
    fn gzipped(data: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    type Chunk = Result<Frame<Bytes>, std::io::Error>;

    /// A gzip-encoded response whose body's chunks are sent through the channel returned.
    fn gzip_response() -> (
        mpsc::UnboundedSender<Chunk>,
        ResponseBody<StreamBody<impl futures_util::Stream<Item = Chunk> + Unpin>>,
    ) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let chunks = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let res = http::Response::builder()
            .header("Content-Encoding", "gzip")
            .body(StreamBody::new(chunks))
            .unwrap();
        (tx, ResponseBody::of(res).into_body())
    }

    fn data(bytes: &[u8]) -> Chunk {
        Ok(Frame::data(Bytes::copy_from_slice(bytes)))
    }

    #[tokio::test]
    async fn each_gzip_member_is_handed_on_when_it_arrives_even_split_across_chunks() {
        let (tx, mut body) = gzip_response();
        let first = gzipped(b"{\"type\":\"ADDED\"}\n");
        let (head, tail) = first.split_at(first.len() / 2);
        tx.send(data(head)).unwrap();
        tx.send(data(tail)).unwrap();
        // All of the first member is handed on before anything more arrives.
        let mut ready = Vec::new();
        while let Some(frame) = body.frame().now_or_never() {
            ready.extend_from_slice(&frame.unwrap().unwrap().into_data().unwrap());
        }
        assert_eq!(ready, b"{\"type\":\"ADDED\"}\n");
        // The second member comes with the end of the first chunk of a third.
        let second = gzipped(b"{\"type\":\"MODIFIED\"}\n");
        let third = gzipped(b"{\"type\":\"DELETED\"}\n");
        tx.send(data(&[&second[..], &third[..3]].concat())).unwrap();
        tx.send(data(&third[3..])).unwrap();
        drop(tx);
        let rest = body.collect().await.unwrap().to_bytes();
        assert_eq!(
            &rest[..],
            b"{\"type\":\"MODIFIED\"}\n{\"type\":\"DELETED\"}\n"
        );
    }

    #[tokio::test]
    async fn a_gzip_body_cut_short_is_an_error_not_a_shorter_body() {
        let (tx, body) = gzip_response();
        let whole = gzipped(&[b'x'; 10_000]);
        tx.send(data(&whole[..whole.len() - 4])).unwrap();
        drop(tx);
        let err = body.collect().await.unwrap_err();
        assert!(matches!(err, BodyError::Gzip(_)), "{err}");
    }

    #[tokio::test]
    async fn a_body_announced_as_gzip_that_is_not_is_an_error() {
        let (tx, body) = gzip_response();
        tx.send(data(b"{\"kind\":\"Status\"}")).unwrap();
        drop(tx);
        let err = body.collect().await.unwrap_err();
        assert!(
            err.to_string()
                .starts_with("decompressing the gzip-encoded response"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_body_without_content_encoding_is_passed_on_as_sent() {
        let chunks = futures_util::stream::iter([data(b"plain "), data(b"text")]);
        let res = http::Response::new(StreamBody::new(chunks));
        let body = ResponseBody::of(res).into_body();
        assert_eq!(&body.collect().await.unwrap().to_bytes()[..], b"plain text");
    }

    /// A server that answers gzip-compressed: a ConfigMap to a get, two events (a gzip
    /// member each) to a watch.
    async fn compressing_server() -> TestServer {
        TestServer::start(|line| {
            let body = if line.contains("watch=true") {
                [
                    gzipped(br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#),
                    gzipped(b"\n"),
                    gzipped(br#"{"type":"MODIFIED","object":{"metadata":{"name":"b"}}}"#),
                    gzipped(b"\n"),
                ]
                .concat()
            } else {
                gzipped(br#"{"metadata":{"name":"a"},"data":{"k":"v"}}"#)
            };
            Reply::Full {
                status: 200,
                headers: vec![
                    ("Content-Type", "application/json".into()),
                    ("Content-Encoding", "gzip".into()),
                ],
                body,
            }
        })
        .await
    }

    #[tokio::test]
    async fn gzip_responses_are_decoded_for_requests_and_watches() {
        let server = compressing_server().await;
        let client = server.client();
        let path = "/api/v1/namespaces/demo/configmaps";
        let got: ConfigMap = client
            .get()
            .abs_path(&format!("{path}/a"))
            .send()
            .await
            .unwrap()
            .decode()
            .unwrap();
        assert_eq!(got.data.unwrap()["k"], "v");
        let events: Vec<_> = client
            .get()
            .abs_path(path)
            .watch::<ConfigMap>()
            .await
            .unwrap()
            .collect()
            .await;
        let names: Vec<_> = events
            .into_iter()
            .map(|e| match e.unwrap() {
                crate::rest::WatchEvent::Added(o) | crate::rest::WatchEvent::Modified(o) => {
                    o.metadata.name.unwrap()
                }
                other => panic!("unexpected event {other:?}"),
            })
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[tokio::test]
    async fn requests_ask_for_gzip_unless_compression_is_off() {
        let server = compressing_server().await;
        let path = "/api/v1/namespaces/demo/configmaps/a";
        server.client().get().abs_path(path).send().await.unwrap();
        let plain = crate::rest::RestClient::new(&server.config().with_compression(false));
        plain.unwrap().get().abs_path(path).send().await.unwrap();
        assert_eq!(server.accept_encodings(), ["gzip", ""]);
    }

    #[tokio::test]
    async fn a_kubeconfig_that_disables_compression_turns_it_off() {
        let kubeconfig = r#"
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:1", disable-compression: true}
contexts:
- name: c
  context: {cluster: c, user: u}
users:
- name: u
  user: {}
current-context: c
"#;
        let dir = std::env::temp_dir().join(format!("kubekit-gzip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kubeconfig");
        std::fs::write(&path, kubeconfig).unwrap();
        let config = crate::rest::RestConfig::from_kubeconfig(&path).await;
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!config.unwrap().compression);
    }
}
