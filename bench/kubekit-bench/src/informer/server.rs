//! The replay server: serves the replicated pods as `/api/v1/pods` over plain HTTP/1.1 on
//! 127.0.0.1, as the API server would, so every client syncs from the same bytes.
//!
//! - `GET /api/v1/pods[?limit=L&continue=C]`: a PodList of resourceVersion N, paged by
//!   `limit` (none: everything), the continue token encoding the next index.
//! - `GET /api/v1/pods?watch=true&resourceVersion=X`: a chunked stream that sends nothing
//!   until [`ReplayServer::trigger`], then every pre-generated event newer than X in
//!   256 KiB writes, then stays open until the client leaves or `timeoutSeconds` passes.
//! - The same with `sendInitialEvents=true` (a streaming list, client-go's default in
//!   v0.35): ADDED events for the N pods and the `k8s.io/initial-events-end` bookmark
//!   first, then as a watch from N.
//! - Anything else: a `Status` with 404 (400 for malformed parameters).
//!
//! Counters of list and watch requests and of the body bytes sent, and whether a watch
//! waits for the trigger, are kept per run: [`ReplayServer::reset`] starts a new one.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::fixture::{Replica, watch_event};

/// Size of the writes of a watch stream.
const WRITE_SIZE: usize = 256 * 1024;
/// How long a watch without `timeoutSeconds` stays open.
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(30 * 60);

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// The state of the current run, shared by the watches and the orchestrator.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    /// Which run this is; a watch of an older run counts for nothing.
    epoch: u64,
    /// Watches of this run past their initial events, waiting for (or past) the trigger.
    watching: usize,
    /// The events were triggered: every watch of this run sends them.
    triggered: bool,
}

/// Request counters of one run.
#[derive(Debug, Default)]
struct Counters {
    lists: AtomicU64,
    watches: AtomicU64,
    bytes: AtomicU64,
}

/// What a run's clients asked of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// List requests.
    pub lists: u64,
    /// Watch requests (streaming lists included).
    pub watches: u64,
    /// Body bytes sent.
    pub bytes: u64,
}

struct Shared {
    replica: Replica,
    run: watch::Sender<Run>,
    counters: Counters,
    verbose: bool,
}

/// The running server; it stops when dropped.
pub struct ReplayServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ReplayServer {
    /// Serves `replica` on a free port of 127.0.0.1.
    pub async fn start(replica: Replica, verbose: bool) -> Result<Self, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("replay server: binding 127.0.0.1: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared {
            replica,
            run: watch::Sender::new(Run::default()),
            counters: Counters::default(),
            verbose,
        });
        let task = tokio::spawn(accept(listener, shared.clone()));
        Ok(Self { addr, shared, task })
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Starts a new run: nothing triggered, no watch counted, counters at zero.
    pub fn reset(&self) {
        self.shared.run.send_modify(|run| {
            *run = Run {
                epoch: run.epoch + 1,
                ..Run::default()
            }
        });
        let c = &self.shared.counters;
        for counter in [&c.lists, &c.watches, &c.bytes] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// Waits until a watch of this run is past its initial events.
    pub async fn wait_watching(&self) {
        let mut run = self.shared.run.subscribe();
        // The sender lives in `self`, so the channel cannot close while this waits.
        let _ = run.wait_for(|run| run.watching > 0).await;
    }

    /// Sends the events to every watch of this run, present and future.
    pub fn trigger(&self) {
        self.shared.run.send_modify(|run| run.triggered = true);
    }

    /// This run's counters.
    pub fn stats(&self) -> Stats {
        let c = &self.shared.counters;
        Stats {
            lists: c.lists.load(Ordering::Relaxed),
            watches: c.watches.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
        }
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("replay server: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(&shared, &req)) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await
                && !e.is_incomplete_message()
            {
                eprintln!("replay server: connection: {e}");
            }
        });
    }
}

/// The query parameters the server understands.
#[derive(Debug, Default, PartialEq)]
struct Query {
    watch: bool,
    send_initial_events: bool,
    limit: Option<usize>,
    continue_from: usize,
    resource_version: u64,
    timeout: Option<Duration>,
}

impl Query {
    /// Parses the query of a `/api/v1/pods` request; unknown parameters are ignored.
    fn parse(query: &str) -> Result<Self, String> {
        let mut q = Self::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let number = |what: &str| {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("invalid {what} {value:?}"))
            };
            match key {
                "watch" => q.watch = matches!(value, "true" | "1"),
                "sendInitialEvents" => q.send_initial_events = value == "true",
                "limit" => q.limit = Some(number("limit")? as usize).filter(|&l| l > 0),
                "continue" if !value.is_empty() => {
                    q.continue_from = decode_continue(value)
                        .ok_or(format!("invalid continue token {value:?}"))?;
                }
                "resourceVersion" if !value.is_empty() => {
                    q.resource_version = number("resourceVersion")?;
                }
                "timeoutSeconds" => {
                    q.timeout = Some(Duration::from_secs(number("timeoutSeconds")?))
                }
                _ => {}
            }
        }
        Ok(q)
    }
}

/// The continue token of a list page that ends before pod `next`.
fn encode_continue(next: usize) -> String {
    format!("kubekit-bench.{next:x}")
}

fn decode_continue(token: &str) -> Option<usize> {
    usize::from_str_radix(token.strip_prefix("kubekit-bench.")?, 16).ok()
}

fn handle(shared: &Arc<Shared>, req: &Request<Incoming>) -> Response<Body> {
    if shared.verbose {
        eprintln!("replay server: {} {}", req.method(), req.uri());
    }
    if req.method() != Method::GET || req.uri().path() != "/api/v1/pods" {
        let message = format!("the server could not find {} {}", req.method(), req.uri());
        return status(StatusCode::NOT_FOUND, "NotFound", &message);
    }
    let query = match Query::parse(req.uri().query().unwrap_or_default()) {
        Ok(query) => query,
        Err(message) => return status(StatusCode::BAD_REQUEST, "BadRequest", &message),
    };
    if query.watch {
        shared.counters.watches.fetch_add(1, Ordering::Relaxed);
        return watch_response(shared, query);
    }
    shared.counters.lists.fetch_add(1, Ordering::Relaxed);
    match list_page(&shared.replica, query.limit, query.continue_from) {
        Some(body) => {
            shared
                .counters
                .bytes
                .fetch_add(body.len() as u64, Ordering::Relaxed);
            json_response(StatusCode::OK, Full::new(Bytes::from(body)).boxed_unsync())
        }
        None => status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "the continue token is past the end of the list",
        ),
    }
}

/// The PodList page of at most `limit` pods from pod `from`; `None` if `from` is past the
/// end.
fn list_page(replica: &Replica, limit: Option<usize>, from: usize) -> Option<Vec<u8>> {
    let total = replica.items.len();
    if from > total {
        return None;
    }
    let to = limit.map_or(total, |limit| from.saturating_add(limit).min(total));
    let span = replica.items.span(from..to);
    let mut body = Vec::with_capacity(span.len() + (to - from) + 256);
    body.extend_from_slice(b"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{");
    body.extend_from_slice(
        format!("\"resourceVersion\":\"{}\"", replica.resource_version).as_bytes(),
    );
    if to < total {
        let more = format!(
            ",\"continue\":\"{}\",\"remainingItemCount\":{}",
            encode_continue(to),
            total - to
        );
        body.extend_from_slice(more.as_bytes());
    }
    body.extend_from_slice(b"},\"items\":[");
    for i in from..to {
        if i > from {
            body.push(b',');
        }
        body.extend_from_slice(replica.items.get(i));
    }
    body.extend_from_slice(b"]}");
    Some(body)
}

fn watch_response(shared: &Arc<Shared>, query: Query) -> Response<Body> {
    let (tx, mut rx) = mpsc::channel::<Bytes>(4);
    tokio::spawn(stream_watch(shared.clone(), query, tx));
    let frames = stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|chunk| chunk.map(|chunk| Ok(Frame::data(chunk))))
    });
    json_response(StatusCode::OK, StreamBody::new(frames).boxed_unsync())
}

/// Counts a watch of `epoch` as waiting for the trigger while it lives.
struct Watching<'a> {
    shared: &'a Shared,
    epoch: u64,
}

impl<'a> Watching<'a> {
    fn new(shared: &'a Shared, epoch: u64) -> Self {
        shared.run.send_modify(|run| {
            if run.epoch == epoch {
                run.watching += 1;
            }
        });
        Self { shared, epoch }
    }
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        self.shared.run.send_modify(|run| {
            if run.epoch == self.epoch {
                run.watching -= 1;
            }
        });
    }
}

/// Writes one watch into `tx` until the client leaves or the timeout passes.
async fn stream_watch(shared: Arc<Shared>, query: Query, tx: mpsc::Sender<Bytes>) {
    let timeout = query.timeout.unwrap_or(DEFAULT_WATCH_TIMEOUT);
    tokio::select! {
        () = tokio::time::sleep(timeout) => {}
        () = tx.closed() => {}
        // Ends only if the client stops reading while the server writes.
        Err(_) = serve_watch(&shared, &query, &tx) => {}
    }
}

/// The watch's body; returns (with an error) only when the client is gone.
async fn serve_watch(
    shared: &Shared,
    query: &Query,
    tx: &mpsc::Sender<Bytes>,
) -> Result<(), mpsc::error::SendError<Bytes>> {
    let mut run = shared.run.subscribe();
    let epoch = run.borrow_and_update().epoch;
    let replica = &shared.replica;
    let mut from = query.resource_version;
    if query.send_initial_events {
        let mut chunk = Vec::with_capacity(WRITE_SIZE + 16 * 1024);
        for i in 0..replica.items.len() {
            watch_event(&mut chunk, "ADDED", replica.items.get(i));
            if chunk.len() >= WRITE_SIZE {
                send(shared, tx, Bytes::from(std::mem::take(&mut chunk))).await?;
                chunk.reserve(WRITE_SIZE + 16 * 1024);
            }
        }
        chunk.extend_from_slice(
            format!(
                "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{}\",\"annotations\":{{\"k8s.io/initial-events-end\":\"true\"}}}}}}}}\n",
                replica.resource_version
            )
            .as_bytes(),
        );
        send(shared, tx, Bytes::from(chunk)).await?;
        from = replica.resource_version;
    }
    let _watching = Watching::new(shared, epoch);
    if run
        .wait_for(|run| run.epoch != epoch || run.triggered)
        .await
        .is_ok_and(|run| run.epoch == epoch)
    {
        let events = replica
            .events
            .span(replica.first_event_after(from)..replica.events.len());
        let events = replica.events.bytes().slice(events);
        let mut at = 0;
        while at < events.len() {
            let end = (at + WRITE_SIZE).min(events.len());
            send(shared, tx, events.slice(at..end)).await?;
            at = end;
        }
    }
    std::future::pending().await
}

async fn send(
    shared: &Shared,
    tx: &mpsc::Sender<Bytes>,
    chunk: Bytes,
) -> Result<(), mpsc::error::SendError<Bytes>> {
    let len = chunk.len() as u64;
    tx.send(chunk).await?;
    shared.counters.bytes.fetch_add(len, Ordering::Relaxed);
    Ok(())
}

fn json_response(code: StatusCode, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A `Status` failure, as the API server answers an error.
fn status(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    let body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    json_response(
        code,
        Full::new(Bytes::from(body.to_string())).boxed_unsync(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::informer::fixture::tests::fixture;

    #[test]
    fn continue_tokens() {
        for next in [0, 1, 500, 123_456] {
            assert_eq!(decode_continue(&encode_continue(next)), Some(next));
        }
        assert_eq!(decode_continue("500"), None);
        assert_eq!(decode_continue("kubekit-bench.zz"), None);
    }

    #[test]
    fn paging_serves_every_pod_once() {
        let replica = fixture().replicate(1234, 0);
        for limit in [1, 7, 500, 1234, 5000] {
            let mut names = Vec::new();
            let mut from = 0;
            loop {
                let page: Value =
                    serde_json::from_slice(&list_page(&replica, Some(limit), from).unwrap())
                        .unwrap();
                assert_eq!(page["kind"], "PodList");
                assert_eq!(page["metadata"]["resourceVersion"], "1234");
                let items = page["items"].as_array().unwrap();
                assert!(items.len() <= limit);
                names.extend(items.iter().map(|p| p["metadata"]["name"].clone()));
                match page["metadata"]["continue"].as_str() {
                    Some(token) => {
                        from = decode_continue(token).unwrap();
                        assert_eq!(page["metadata"]["remainingItemCount"], 1234 - from);
                    }
                    None => {
                        assert!(page["metadata"].get("remainingItemCount").is_none());
                        break;
                    }
                }
            }
            assert_eq!(names.len(), 1234, "limit {limit}");
            for (i, name) in names.iter().enumerate() {
                assert_eq!(*name, fixture().pod_name(i));
            }
        }
        let all: Value = serde_json::from_slice(&list_page(&replica, None, 0).unwrap()).unwrap();
        assert_eq!(all["items"].as_array().unwrap().len(), 1234);
        assert!(list_page(&replica, Some(10), 1235).is_none());
        let empty: Value =
            serde_json::from_slice(&list_page(&replica, Some(10), 1234).unwrap()).unwrap();
        assert_eq!(empty["items"], serde_json::json!([]));
    }

    #[test]
    fn queries() {
        let q =
            Query::parse("watch=1&resourceVersion=10&timeoutSeconds=290&allowWatchBookmarks=true")
                .unwrap();
        assert!(q.watch && !q.send_initial_events);
        assert_eq!(q.resource_version, 10);
        assert_eq!(q.timeout, Some(Duration::from_secs(290)));
        let q = Query::parse(
            "allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true",
        )
        .unwrap();
        assert!(q.watch && q.send_initial_events);
        let q = Query::parse(&format!("limit=500&continue={}", encode_continue(1000))).unwrap();
        assert_eq!(
            (q.watch, q.limit, q.continue_from),
            (false, Some(500), 1000)
        );
        assert_eq!(Query::parse("").unwrap(), Query::default());
        assert_eq!(
            Query::parse("limit=0&resourceVersion=").unwrap(),
            Query::default()
        );
        for bad in [
            "limit=x",
            "continue=abc",
            "resourceVersion=-1",
            "timeoutSeconds=1.5",
        ] {
            assert!(Query::parse(bad).is_err(), "{bad}");
        }
    }
}
