//! Watches: a stream of JSON lines (`{"type": ..., "object": ...}`) per request.
//!
//! # Contract
//!
//! - From `resourceVersion` N: every change after N, in order; N older than the history
//!   the store keeps is one `ERROR` event with `410 Expired` (HTTP status 200), as the real
//!   server answers. With no resourceVersion, or `"0"`: an `ADDED` event for every
//!   current object first (unless `sendInitialEvents=false`), then the changes after.
//! - `sendInitialEvents=true` (which, as on the real server, needs
//!   `resourceVersionMatch=NotOlderThan`; a watch from no resourceVersion or "0" without
//!   either is one too): the current objects as `ADDED` events, then, with
//!   `allowWatchBookmarks=true`, a `BOOKMARK` annotated `k8s.io/initial-events-end` at the
//!   resourceVersion they were read at. The fake sends no other bookmark.
//! - Label and field selectors apply to each change as on the real server: an object
//!   that starts matching arrives as `ADDED`, one that stops matching as `DELETED`.
//! - The stream ends at `timeoutSeconds` (none when 0), when the client goes away, when watches are cut
//!   (fault injection) and when the server shuts down; its task ends with it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http::{HeaderValue, Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use kubekit_protobuf::JsonCodec;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::resources::ResourceInfo;
use crate::selectors::Filter;
use crate::server::{Body, Shared};
use crate::status::{ApiError, ApiResult};
use crate::store::{Event, EventType, WATCH_EXPIRED};

/// How many encoded events may wait for a slow client before the watch waits for it.
const BUFFER: usize = 64;

/// A parsed watch request.
#[derive(Debug)]
pub(crate) struct WatchRequest {
    info: ResourceInfo,
    api_version: String,
    ns: Option<String>,
    filter: Filter,
    /// Watch the changes after this resourceVersion; `None`: send the current state first.
    from: Option<u64>,
    initial_events_end: bool,
    send_initial: bool,
    timeout: Option<Duration>,
    /// Protobuf frames instead of JSON lines.
    protobuf: bool,
    /// Objects as `PartialObjectMetadata` (`as=PartialObjectMetadata` asked).
    metadata: bool,
}

impl WatchRequest {
    pub(crate) fn new(
        info: &ResourceInfo,
        version: &str,
        ns: &str,
        query: &HashMap<String, String>,
    ) -> ApiResult<Self> {
        let param = |k: &str| query.get(k).map(String::as_str);
        let filter = Filter::parse(info, param("labelSelector"), param("fieldSelector"))?;
        let rv = param("resourceVersion").filter(|rv| !rv.is_empty());
        let mut send_initial_events = match param("sendInitialEvents") {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        };
        // The real server's defaults (`SetListOptionsDefaults`, WatchList on): a watch from
        // no resourceVersion or "0" is a streaming list.
        if send_initial_events.is_none()
            && param("resourceVersionMatch").is_none_or(str::is_empty)
            && matches!(rv, None | Some("0"))
        {
            send_initial_events = Some(true);
        }
        let bookmarks = matches!(param("allowWatchBookmarks"), Some("true" | "1"));
        let from = match rv {
            None | Some("0") => None,
            // A 500 without a reason, as the real server's watch cache answers.
            Some(rv) => Some(
                rv.parse::<u64>()
                    .map_err(|_| ApiError::new(500, "", crate::server::bad_rv(rv)))?,
            ),
        };
        // Without `sendInitialEvents`, only a watch from no resourceVersion (or "0") starts
        // with the current state.
        let send_initial = send_initial_events.unwrap_or(from.is_none());
        // `timeoutSeconds=0` is none, as on the real server (which then picks its own).
        // A negative timeout ends the watch at once.
        let timeout = match param("timeoutSeconds") {
            Some(t) => match t.parse::<i128>() {
                Ok(s) if s < 0 => Some(Duration::ZERO),
                Ok(0) => None,
                Ok(s) => Some(Duration::from_secs(u64::try_from(s).unwrap_or(u64::MAX))),
                Err(_) => {
                    let quoted = kubekit::validation::quote(t);
                    return Err(ApiError::bad_request(format!(
                        "strconv.ParseInt: parsing {quoted}: invalid syntax"
                    )));
                }
            },
            None => None,
        };
        Ok(Self {
            info: info.clone(),
            api_version: info.api_version(version),
            ns: (!ns.is_empty()).then(|| ns.to_string()),
            filter,
            from,
            initial_events_end: send_initial_events == Some(true) && bookmarks,
            send_initial,
            timeout,
            protobuf: false,
            metadata: false,
        })
    }

    /// The watch in protobuf frames (`application/vnd.kubernetes.protobuf;stream=watch`)
    /// when `asked` and its objects have a protobuf form (its kind's, or metadata only).
    pub(crate) fn protobuf(mut self, asked: bool) -> Self {
        self.protobuf = asked
            && (self.metadata
                || kubekit_protobuf::json_codec(&self.api_version, &self.info.kind).is_some());
        self
    }

    /// The watch's objects as `PartialObjectMetadata` when `asked`.
    pub(crate) fn metadata(mut self, asked: bool) -> Self {
        self.metadata = asked;
        self
    }

    fn in_scope(&self, obj: &Value) -> bool {
        self.ns
            .as_deref()
            .is_none_or(|ns| obj["metadata"]["namespace"].as_str() == Some(ns))
    }

    fn selects(&self, obj: &Value) -> bool {
        self.in_scope(obj) && self.filter.matches(obj)
    }

    fn line(&self, kind: &str, obj: &Value) -> Bytes {
        let mut obj = crate::events::shown(&self.info, obj);
        obj["apiVersion"] = json!(self.api_version);
        obj["kind"] = json!(self.info.kind);
        self.event(kind, &obj, |codec, obj| codec.from_json(obj))
    }

    /// One event: a JSON line, or a protobuf frame of `obj` encoded by `encode` (an `ERROR`
    /// when it cannot be encoded).
    fn event(
        &self,
        kind: &str,
        obj: &Value,
        encode: impl FnOnce(&JsonCodec, &Value) -> Result<Vec<u8>, kubekit_protobuf::Error>,
    ) -> Bytes {
        if self.metadata {
            let partial = crate::server::metadata_of(&self.info, obj);
            if !self.protobuf {
                return json_line(kind, &partial);
            }
            let meta = &partial["metadata"];
            return match kubekit_protobuf::metadata_only(
                "meta.k8s.io/v1",
                "PartialObjectMetadata",
                meta,
            ) {
                Ok(bytes) => frame(kind, &bytes),
                Err(e) => {
                    self.error_line(&ApiError::internal(format!("encoding a watch event: {e}")))
                }
            };
        }
        if !self.protobuf {
            return json_line(kind, obj);
        }
        let codec = kubekit_protobuf::json_codec(&self.api_version, &self.info.kind);
        let why = match codec.map(|c| encode(c, obj)) {
            Some(Ok(bytes)) => return frame(kind, &bytes),
            Some(Err(e)) => e.to_string(),
            None => "no protobuf form".into(),
        };
        self.error_line(&ApiError::internal(format!(
            "encoding a watch event: {why}"
        )))
    }

    fn error_line(&self, e: &ApiError) -> Bytes {
        if self.protobuf {
            return frame("ERROR", &status_protobuf(e));
        }
        json_line("ERROR", &e.to_status())
    }

    fn bookmark(&self, rv: u64) -> Bytes {
        let metadata = json!({
            "resourceVersion": rv.to_string(),
            "annotations": {"k8s.io/initial-events-end": "true"},
        });
        let obj = json!({"apiVersion": self.api_version, "kind": self.info.kind,
            "metadata": metadata});
        // A bookmark is its metadata alone, even for a kind with required fields.
        self.event("BOOKMARK", &obj, |codec, obj| {
            kubekit_protobuf::metadata_only(codec.api_version(), codec.kind(), &obj["metadata"])
        })
    }

    /// The line a change shows as to this watch, if any.
    fn event_line(&self, e: &Event) -> Option<Bytes> {
        let now = self.selects(&e.object);
        let before = e.previous.as_deref().is_some_and(|p| self.selects(p));
        let kind = match (e.kind, before, now) {
            (EventType::Added, _, true) => "ADDED",
            (EventType::Deleted, _, true) => "DELETED",
            (EventType::Modified, true, true) => "MODIFIED",
            (EventType::Modified, false, true) => "ADDED",
            (EventType::Modified, true, false) => "DELETED",
            _ => return None,
        };
        if kind == "DELETED" && e.kind == EventType::Modified {
            // As the real server does: the last state that matched, at the change's
            // resourceVersion.
            let mut last = e.previous.as_deref().cloned().unwrap_or_default();
            last["metadata"]["resourceVersion"] = json!(e.rv.to_string());
            return Some(self.line(kind, &last));
        }
        Some(self.line(kind, &e.object))
    }
}

/// Answers a watch: a streaming body fed by a task of the server's.
pub(crate) fn start_watch(shared: &Arc<Shared>, w: WatchRequest) -> Response<Body> {
    let protobuf = w.protobuf;
    let (tx, rx) = mpsc::channel::<Bytes>(BUFFER);
    let shared2 = shared.clone();
    shared.tasks.spawn(async move {
        tokio::select! {
            () = run(&shared2, w, &tx) => {}
            () = shared2.cancel.cancelled() => {}
        }
    });
    let body = StreamBody::new(stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    }));
    let mut res = Response::new(body.boxed());
    let content_type = match protobuf {
        true => kubekit_protobuf::WATCH_CONTENT_TYPE,
        false => "application/json",
    };
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

/// A JSON watch event, a line.
fn json_line(event_type: &str, obj: &Value) -> Bytes {
    let mut line = json!({"type": event_type, "object": obj}).to_string();
    line.push('\n');
    Bytes::from(line)
}

/// A protobuf watch event of an enveloped `object`, a length-prefixed frame.
fn frame(event_type: &str, object: &[u8]) -> Bytes {
    let mut out = Vec::new();
    let event = kubekit_protobuf::WatchEvent {
        event_type: event_type.to_string(),
        object,
    };
    event.write_frame(&mut out);
    Bytes::from(out)
}

/// A `Status` in protobuf.
fn status_protobuf(e: &ApiError) -> Vec<u8> {
    crate::server::protobuf_of(&e.to_status()).unwrap_or_default()
}

/// Feeds one watch until it ends; returns when it should close.
async fn run(shared: &Shared, w: WatchRequest, tx: &mpsc::Sender<Bytes>) {
    // A watch whose time is up from the start (a negative `timeoutSeconds`) sends nothing.
    if w.timeout == Some(Duration::ZERO) {
        return;
    }
    let mut changed = shared.changed.subscribe();
    let mut cuts = shared.faults.cuts();
    // A timeout too far away to be an instant is no timeout.
    let deadline = w
        .timeout
        .and_then(|t| tokio::time::Instant::now().checked_add(t));
    if shared.faults.take_expired_watch() {
        let e = ApiError::expired(WATCH_EXPIRED);
        let _ = tx.send(w.error_line(&e)).await;
        return;
    }
    // The current state first (at least as new as a resourceVersion asked for), or only
    // the changes after the resourceVersion asked for.
    let (mut last, initial) = match (w.send_initial, w.from) {
        (false, Some(rv)) => (rv, Vec::new()),
        (send_initial, _) => {
            let snapshot = shared.store.lock().snapshot(&w.info, w.ns.as_deref(), None);
            match snapshot {
                Ok((rv, objs)) if send_initial => (rv, objs),
                Ok((rv, _)) => (rv, Vec::new()),
                Err(e) => {
                    let _ = tx.send(w.error_line(&e)).await;
                    return;
                }
            }
        }
    };
    let mut lines: Vec<Bytes> = initial
        .iter()
        .filter(|o| w.filter.matches(o))
        .map(|o| w.line("ADDED", o))
        .collect();
    if w.initial_events_end {
        lines.push(w.bookmark(last));
    }
    loop {
        for line in lines.drain(..) {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        let events = shared.store.lock().events_after(&w.info, last);
        match events {
            Ok(events) => {
                if let Some(e) = events.last() {
                    last = e.rv;
                }
                lines.extend(events.iter().filter_map(|e| w.event_line(e)));
                if !lines.is_empty() {
                    continue;
                }
            }
            Err(e) => {
                let _ = tx.send(w.error_line(&e)).await;
                return;
            }
        }
        let timeout = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = timeout => return,
            _ = cuts.changed() => return,
            () = tx.closed() => return,
            r = changed.changed() => if r.is_err() { return },
        }
    }
}
