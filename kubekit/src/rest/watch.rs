//! Watch events and the decoder of a watch stream.
//!
//! The API server sends a watch as one JSON object per line:
//! `{"type":"ADDED","object":{...}}`. [`WatchDecoder`] is the sans-IO core: feed it the
//! bytes as they arrive, in chunks of any size, and take complete events out. A line that
//! is not a valid event for `K` comes out as an [`Error::Decode`] naming the resource and
//! the decoder goes on with the next line: one bad object never ends a watch. Only the
//! server can end it (or the connection).
//!
//! `BOOKMARK` events carry only a resourceVersion and annotations (among them
//! `k8s.io/initial-events-end` at the end of a streaming list), so they are decoded into a
//! [`Bookmark`], not into `K`; `ERROR` events carry a `metav1.Status`.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use bytes::{Buf, BytesMut};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::error::{Error, Result};

/// Annotation a bookmark carries when it ends the initial events of a streaming list.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One event of a watch.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<K> {
    /// The object was created (or, at the start of a watch, already existed).
    Added(K),
    /// The object changed.
    Modified(K),
    /// The object was deleted; this is its last state.
    Deleted(K),
    /// Nothing changed, but the server has reached this resourceVersion.
    Bookmark(Bookmark),
    /// The server reports an error in the stream, e.g. 410 Gone for a resourceVersion too
    /// old to watch from.
    Error(Box<Status>),
}

/// The content of a `BOOKMARK` event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bookmark {
    /// The resourceVersion the watch has reached.
    pub resource_version: String,
    /// The bookmark's annotations.
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// Whether this bookmark ends the initial events of a streaming list
    /// (`sendInitialEvents=true`).
    pub fn is_initial_events_end(&self) -> bool {
        self.annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .is_some_and(|v| v == "true")
    }
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

#[derive(Deserialize)]
struct BookmarkObject {
    metadata: BookmarkMeta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// Decodes one watch line (without its newline) into an event. `what` names the resource
/// in errors.
pub fn decode_event<K: DeserializeOwned>(line: &[u8], what: &str) -> Result<WatchEvent<K>> {
    let raw: RawEvent<'_> = serde_json::from_slice(line)
        .map_err(|e| Error::decode(format!("watch event of {what}"), e, line))?;
    let object = raw.object.get().as_bytes();
    let obj = |e| Error::decode(format!("{} {what} in a watch event", raw.kind), e, object);
    Ok(match raw.kind {
        "ADDED" => WatchEvent::Added(serde_json::from_slice(object).map_err(obj)?),
        "MODIFIED" => WatchEvent::Modified(serde_json::from_slice(object).map_err(obj)?),
        "DELETED" => WatchEvent::Deleted(serde_json::from_slice(object).map_err(obj)?),
        "BOOKMARK" => {
            let b: BookmarkObject = serde_json::from_slice(object).map_err(obj)?;
            WatchEvent::Bookmark(Bookmark {
                resource_version: b.metadata.resource_version,
                annotations: b.metadata.annotations,
            })
        }
        "ERROR" => WatchEvent::Error(Box::new(serde_json::from_slice(object).map_err(obj)?)),
        other => {
            return Err(Error::decode(
                format!("watch event of {what}"),
                serde::de::Error::custom(format!("unknown event type {other:?}")),
                line,
            ));
        }
    })
}

/// Splits a byte stream into watch events; see the [module docs](self).
#[derive(Debug)]
pub struct WatchDecoder<K> {
    buf: BytesMut,
    what: String,
    _kind: PhantomData<fn() -> K>,
}

impl<K: DeserializeOwned> WatchDecoder<K> {
    /// A decoder whose errors name `what` (e.g. `pods in namespace "default"`).
    pub fn new(what: impl Into<String>) -> Self {
        Self {
            buf: BytesMut::new(),
            what: what.into(),
            _kind: PhantomData,
        }
    }

    /// Appends bytes received from the server.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event, if a whole line has arrived. Empty lines are skipped.
    pub fn next_event(&mut self) -> Option<Result<WatchEvent<K>>> {
        loop {
            let end = self.buf.iter().position(|b| *b == b'\n')?;
            let line = self.buf.split_to(end + 1);
            let line = line.strip_suffix(b"\n").unwrap_or(&line);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(decode_event(line, &self.what));
        }
    }

    /// Called when the stream has ended: an incomplete last line is an error (the
    /// connection was cut mid-event); a complete one is decoded.
    pub fn finish(&mut self) -> Option<Result<WatchEvent<K>>> {
        if self.buf.iter().all(u8::is_ascii_whitespace) {
            self.buf.clear();
            return None;
        }
        let rest = std::mem::take(&mut self.buf);
        let event = decode_event(rest.chunk(), &self.what);
        Some(event.map_err(|e| match e {
            Error::Decode { what, source, body } => Error::Decode {
                what: format!("{what} (stream ended mid-event)"),
                source,
                body,
            },
            other => other,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    fn all(decoder: &mut WatchDecoder<Pod>) -> Vec<Result<WatchEvent<Pod>>> {
        std::iter::from_fn(|| decoder.next_event()).collect()
    }

    const ADDED: &str =
        r#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}"#;

    #[test]
    fn events_split_across_chunks_decode_once_complete() {
        let stream = format!(
            "{ADDED}\n{}\n{}\n",
            r#"{"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"7"}}}"#,
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
        );
        let mut d = WatchDecoder::<Pod>::new("pods");
        let mut events = Vec::new();
        for chunk in stream.as_bytes().chunks(7) {
            d.feed(chunk);
            events.extend(all(&mut d));
        }
        assert!(d.finish().is_none());
        let events: Vec<_> = events
            .into_iter()
            .map(|e| e.expect("valid event"))
            .collect();
        assert!(
            matches!(&events[0], WatchEvent::Added(p) if p.metadata.name.as_deref() == Some("a"))
        );
        assert!(
            matches!(&events[1], WatchEvent::Deleted(p) if p.metadata.resource_version.as_deref() == Some("7"))
        );
        match &events[2] {
            WatchEvent::Bookmark(b) => {
                assert_eq!(b.resource_version, "9");
                assert!(b.is_initial_events_end());
            }
            other => panic!("expected a bookmark, got {other:?}"),
        }
    }

    #[test]
    fn malformed_line_is_reported_naming_the_resource_and_the_stream_goes_on() {
        let mut d = WatchDecoder::<Pod>::new("pods in namespace \"demo\"");
        d.feed(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":5}}}\n");
        d.feed(b"not json at all\n");
        d.feed(format!("{ADDED}\n").as_bytes());
        let events = all(&mut d);
        assert_eq!(events.len(), 3);
        let first = events[0].as_ref().expect_err("name must be a string");
        assert!(
            first
                .to_string()
                .contains("ADDED pods in namespace \"demo\""),
            "{first}"
        );
        let second = events[1].as_ref().expect_err("garbage");
        assert!(
            second.to_string().contains("watch event of pods"),
            "{second}"
        );
        assert!(matches!(events[2], Ok(WatchEvent::Added(_))));
    }

    #[test]
    fn stream_cut_mid_event_is_an_error_not_a_panic() {
        let mut d = WatchDecoder::<Pod>::new("pods");
        d.feed(&ADDED.as_bytes()[..ADDED.len() / 2]);
        assert!(d.next_event().is_none());
        let err = d.finish().expect("leftover").expect_err("truncated");
        assert!(err.to_string().contains("stream ended mid-event"), "{err}");
    }

    #[test]
    fn error_event_carries_the_status() {
        let mut d = WatchDecoder::<Pod>::new("pods");
        d.feed(br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (50)","reason":"Expired","code":410}}"#);
        d.feed(b"\n");
        match d.next_event() {
            Some(Ok(WatchEvent::Error(s))) => {
                assert_eq!(s.code, Some(410));
                assert_eq!(s.reason.as_deref(), Some("Expired"));
            }
            other => panic!("expected an ERROR event, got {other:?}"),
        }
    }

    #[test]
    fn unknown_event_type_is_an_error() {
        let mut d = WatchDecoder::<Pod>::new("pods");
        d.feed(b"{\"type\":\"RENAMED\",\"object\":{}}\n");
        let err = d.next_event().unwrap().expect_err("unknown type");
        assert!(err.to_string().contains("RENAMED"), "{err}");
    }
}
