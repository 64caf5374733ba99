//! Watch events and the decoder of a watch stream.
//!
//! The API server sends a watch as one JSON object per line:
//! `{"type":"ADDED","object":{...}}`. [`WatchDecoder`] is the sans-IO core: feed it the
//! bytes as they arrive, in chunks of any size, and take complete events out. A line that
//! is not a valid event for `K` comes out as an [`Error::Decode`] naming the resource and
//! the decoder goes on with the next line: one bad object never ends a watch. Only the
//! server can end it (or the connection), or a line longer than the decoder's limit
//! ([`MAX_WATCH_EVENT_BYTES`] unless set otherwise, the order of client-go's 16 MiB frame
//! limit): that is an [`Error::TooLarge`], after which the decoder gives no more events.
//! While it waits for a line's end it holds at most the limit plus the chunk that
//! crossed it.
//!
//! A server asked for protobuf sends frames instead, each a 4-byte big-endian length and a
//! `WatchEvent` message whose object is an enveloped protobuf object
//! ([`WatchDecoder::protobuf`]); the same rules hold, a frame standing for a line.
//!
//! `BOOKMARK` events carry only a resourceVersion and annotations (among them
//! `k8s.io/initial-events-end` at the end of a streaming list), so they are decoded into a
//! [`Bookmark`], not into `K`; `ERROR` events carry a `metav1.Status`.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use std::fmt;

use bytes::{Bytes, BytesMut};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use serde::de::{DeserializeOwned, DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::cbor;
use super::error::{Error, Result};
use kubekit_protobuf::DecodeOptions;

/// The longest watch event (one line) a [`WatchDecoder`] accepts by default: 16 MiB.
pub const MAX_WATCH_EVENT_BYTES: usize = 16 << 20;

/// Annotation a bookmark carries when it ends the initial events of a streaming list.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// Every watch event `type` the API server writes, as [`WatchEvent::type_name`] gives them.
pub const EVENT_TYPES: [&str; 5] = ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"];

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

impl<K> WatchEvent<K> {
    /// The event's `type` as the server writes it: `ADDED`, `MODIFIED`, `DELETED`,
    /// `BOOKMARK` or `ERROR`.
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark(_) => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }

    /// The object of an `ADDED`, `MODIFIED` or `DELETED` event.
    pub fn object(&self) -> Option<&K> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => Some(o),
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => None,
        }
    }
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

/// The fields of a watch event.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Type,
    Object,
    #[serde(other)]
    Other,
}

/// Reads one event in a single pass over the line: the API server writes `type` before
/// `object`, so the object is decoded straight into its final type. An object that comes
/// first is kept raw until the type is known.
struct EventSeed<'s, K> {
    /// The event's type, once read (for error messages).
    kind: &'s mut Option<String>,
    /// Whether the failure, if any, is in the object of a known event type.
    in_object: &'s mut bool,
    _kind: PhantomData<fn() -> K>,
}

impl<'de, K: DeserializeOwned> DeserializeSeed<'de> for EventSeed<'_, K> {
    type Value = WatchEvent<K>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, K: DeserializeOwned> Visitor<'de> for EventSeed<'_, K> {
    type Value = WatchEvent<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a watch event {\"type\": ..., \"object\": ...}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut event = None;
        let mut early_object: Option<Box<RawValue>> = None;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Type => *self.kind = Some(map.next_value()?),
                Field::Object => match self.kind.as_deref() {
                    Some(kind) => {
                        let expect = object_kind(kind).map_err(A::Error::custom)?;
                        *self.in_object = is_known(kind);
                        let object = map.next_value_seed(ObjectSeed(expect, PhantomData))?;
                        event = Some(event_of(kind, object));
                        *self.in_object = false;
                    }
                    None => early_object = Some(map.next_value()?),
                },
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some(event) = event {
            return Ok(event);
        }
        let kind = self
            .kind
            .as_deref()
            .ok_or_else(|| A::Error::missing_field("type"))?;
        let raw = early_object.ok_or_else(|| A::Error::missing_field("object"))?;
        let expect = object_kind(kind).map_err(A::Error::custom)?;
        *self.in_object = is_known(kind);
        // From the slice, not the `str`: serde_json's `SliceRead` instance of every type's
        // `Deserialize` is compiled anyway (for lists and whole watch lines), a `StrRead`
        // one would be compiled for this path alone.
        let mut de = serde_json::Deserializer::from_slice(raw.get().as_bytes());
        let object = ObjectSeed(expect, PhantomData)
            .deserialize(&mut de)
            .map_err(A::Error::custom)?;
        Ok(event_of(kind, object))
    }
}

fn is_known(kind: &str) -> bool {
    EVENT_TYPES.contains(&kind)
}

/// What the object of an event of type `kind` is; an error for an unknown type.
fn object_kind(kind: &str) -> Result<ObjectKind, String> {
    match kind {
        "ADDED" | "MODIFIED" | "DELETED" => Ok(ObjectKind::Typed),
        "BOOKMARK" => Ok(ObjectKind::Bookmark),
        "ERROR" => Ok(ObjectKind::Status),
        other => Err(format!("unknown event type {other:?}")),
    }
}

/// The event of type `kind` (of which `object` was decoded as [`object_kind`] says).
fn event_of<K>(kind: &str, object: Object<K>) -> WatchEvent<K> {
    match (kind, object) {
        ("ADDED", Object::Typed(o)) => WatchEvent::Added(o),
        ("MODIFIED", Object::Typed(o)) => WatchEvent::Modified(o),
        (_, Object::Typed(o)) => WatchEvent::Deleted(o),
        (_, Object::Bookmark(b)) => WatchEvent::Bookmark(Bookmark {
            resource_version: b.metadata.resource_version,
            annotations: b.metadata.annotations,
        }),
        (_, Object::Status(s)) => WatchEvent::Error(s),
    }
}

#[derive(Clone, Copy)]
enum ObjectKind {
    Typed,
    Bookmark,
    Status,
}

enum Object<K> {
    Typed(K),
    Bookmark(BookmarkObject),
    Status(Box<Status>),
}

/// Decodes an event's object as what its type says it is.
struct ObjectSeed<K>(ObjectKind, PhantomData<fn() -> K>);

impl<'de, K: DeserializeOwned> DeserializeSeed<'de> for ObjectSeed<K> {
    type Value = Object<K>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Ok(match self.0 {
            ObjectKind::Typed => Object::Typed(K::deserialize(deserializer)?),
            ObjectKind::Bookmark => Object::Bookmark(BookmarkObject::deserialize(deserializer)?),
            ObjectKind::Status => Object::Status(Box::new(Status::deserialize(deserializer)?)),
        })
    }
}

/// Decodes one watch line (without its newline) into an event, in one pass. `what` names
/// the resource in errors.
pub fn decode_event<K: DeserializeOwned>(line: &[u8], what: &str) -> Result<WatchEvent<K>> {
    let (mut kind, mut in_object) = (None, false);
    let (mut first_kind, mut first_in_object) = (None, false);
    let first = EventSeed::<K> {
        kind: &mut first_kind,
        in_object: &mut first_in_object,
        _kind: PhantomData,
    };
    let decoded = super::json::decode_with::<K, _>(line, first, || {
        let mut de = serde_json::Deserializer::from_slice(line);
        let seed = EventSeed::<K> {
            kind: &mut kind,
            in_object: &mut in_object,
            _kind: PhantomData,
        };
        let event = seed.deserialize(&mut de)?;
        de.end()?;
        Ok(event)
    });
    decoded.map_err(|e| match kind {
        Some(kind) if in_object => {
            Error::decode(format!("{kind} {what} in a watch event"), e, line)
        }
        _ => Error::decode(format!("watch event of {what}"), e, line),
    })
}

/// Decodes one JSON watch line, without `metadata.managedFields` when `options` skip them
/// (cut from the line before it is decoded).
fn decode_json_event<K: DeserializeOwned>(
    line: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<WatchEvent<K>> {
    decode_event(
        &super::response::json_without(line, &[b"object"], options),
        what,
    )
}

/// How a watch stream separates its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// One JSON event per line, decoded leaving out what the options say.
    Lines(DecodeOptions),
    /// Length-prefixed protobuf frames, decoded leaving out what the options say.
    Protobuf(DecodeOptions),
    /// A CBOR sequence (`application/cbor-seq`): one data item per event, decoded leaving
    /// out what the options say.
    Cbor(DecodeOptions),
}

impl Framing {
    /// Decodes one event (a line, or a frame without its length).
    pub(crate) fn decode<K: DeserializeOwned + 'static>(
        self,
        unit: &[u8],
        what: &str,
    ) -> Result<WatchEvent<K>> {
        match self {
            Framing::Lines(options) => decode_json_event(unit, what, options),
            Framing::Protobuf(options) => decode_protobuf_event(unit, what, options),
            Framing::Cbor(options) => decode_cbor_event(unit, what, options),
        }
    }
}

/// Decodes one CBOR watch event (a data item of the sequence). kube-apiserver writes a
/// watch's map keys in any order: an `object` after the `type` is decoded where it lies, as
/// that type says; one before it is skipped, then decoded once the type is known.
fn decode_cbor_event<K: DeserializeOwned>(
    item: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<WatchEvent<K>> {
    use super::response::cbor_error;
    let event_error = |e| cbor_error(format!("watch event of {what}"), e, item);
    // The object at offset `at`, as an event of type `kind` has it, and the offset after it
    // (managedFields left out as in a JSON event, whatever the type).
    let decode = |kind: &str, at: usize| -> Result<(Object<K>, usize)> {
        let expect = object_kind(kind).map_err(|e| event_error(serde::de::Error::custom(e)))?;
        cbor::seed_at(item, at, options, ObjectSeed(expect, PhantomData))
            .map_err(|e| cbor_error(format!("{kind} {what} in a watch event"), e, item))
    };
    let (mut kind, mut object, mut early, mut failed) = (None::<String>, None, None, None);
    let walked = cbor::walk_map(item, |key, at| match (key, kind.as_deref()) {
        (b"type", _) => {
            let (value, end) = cbor::from_slice_at(item, at, DecodeOptions::default())?;
            kind = Some(value);
            Ok(Some(end))
        }
        (b"object", Some(k)) => match decode(k, at) {
            Ok((decoded, end)) => {
                object = Some(decoded);
                Ok(Some(end))
            }
            Err(e) => {
                failed = Some(e);
                Ok(None)
            }
        },
        (b"object", None) => {
            early = Some(at);
            Ok(None)
        }
        _ => Ok(None),
    });
    if let Some(e) = failed {
        return Err(e);
    }
    walked.map_err(event_error)?;
    let missing = |field| event_error(serde::de::Error::missing_field(field));
    let kind = kind.ok_or_else(|| missing("type"))?;
    let object = match (object, early) {
        (Some(object), _) => object,
        (None, Some(at)) => decode(&kind, at)?.0,
        (None, None) => return Err(missing("object")),
    };
    Ok(event_of(&kind, object))
}

/// Decodes one protobuf watch frame (without its length prefix) into an event.
fn decode_protobuf_event<K: 'static>(
    frame: &[u8],
    what: &str,
    options: DecodeOptions,
) -> Result<WatchEvent<K>> {
    Ok(match read_protobuf_event(frame, what)? {
        ProtobufEvent::Object(kind, object) => {
            let decoded = super::protobuf::codec_for::<K>(what)?
                .decode_with(object, options)
                .map_err(|e| {
                    let what = format!("{kind} {what} in a watch event");
                    super::protobuf::protobuf_error(what, e, object)
                })?;
            event_of(kind, Object::Typed(decoded))
        }
        ProtobufEvent::Bookmark(bookmark) => WatchEvent::Bookmark(bookmark),
        ProtobufEvent::Error(status) => WatchEvent::Error(status),
    })
}

/// A protobuf watch event, its object not decoded yet.
enum ProtobufEvent<'a> {
    /// `ADDED`, `MODIFIED` or `DELETED`, and the object's message.
    Object(&'static str, &'a [u8]),
    Bookmark(Bookmark),
    Error(Box<Status>),
}

/// Reads a protobuf watch frame, all of it but a typed event's object (for which the
/// generic part of [`decode_protobuf_event`] is left, the rest compiled once).
fn read_protobuf_event<'a>(frame: &'a [u8], what: &str) -> Result<ProtobufEvent<'a>> {
    use super::protobuf::protobuf_error;
    let event = kubekit_protobuf::WatchEvent::read(frame)
        .map_err(|e| protobuf_error(format!("watch event of {what}"), e, frame))?;
    let kind = event.event_type.as_str();
    let in_object = |e| protobuf_error(format!("{kind} {what} in a watch event"), e, event.object);
    Ok(match kind {
        "ADDED" => ProtobufEvent::Object("ADDED", event.object),
        "MODIFIED" => ProtobufEvent::Object("MODIFIED", event.object),
        "DELETED" => ProtobufEvent::Object("DELETED", event.object),
        "BOOKMARK" => {
            let unknown = kubekit_protobuf::Unknown::read(event.object).map_err(in_object)?;
            let meta = kubekit_protobuf::object_meta(unknown.raw).map_err(in_object)?;
            ProtobufEvent::Bookmark(Bookmark {
                resource_version: meta.resource_version.unwrap_or_default(),
                annotations: meta.annotations.unwrap_or_default(),
            })
        }
        "ERROR" => {
            let unknown = kubekit_protobuf::Unknown::read(event.object).map_err(in_object)?;
            ProtobufEvent::Error(Box::new(unknown.decode().map_err(in_object)?))
        }
        other => {
            let e = kubekit_protobuf::Error::new(format!("unknown event type {other:?}"));
            return Err(protobuf_error(format!("watch event of {what}"), e, frame));
        }
    })
}

/// Splits a byte stream into watch events; see the [module docs](self).
#[derive(Debug)]
pub struct WatchDecoder<K> {
    buf: BytesMut,
    framing: Framing,
    /// Bytes at the start of `buf` known to hold no newline: each byte is searched once,
    /// however many chunks a long line arrives in.
    scanned: usize,
    /// Where the CBOR item being received ends, read once however many chunks it
    /// arrives in.
    cbor: cbor::ItemScanner,
    /// The longest line accepted.
    max_event_bytes: usize,
    /// A line was too long: no more events.
    failed: bool,
    what: String,
    _kind: PhantomData<fn() -> K>,
}

impl<K: DeserializeOwned + 'static> WatchDecoder<K> {
    /// A decoder of a JSON watch, whose errors name `what` (e.g. `pods in namespace
    /// "default"`).
    pub fn new(what: impl Into<String>) -> Self {
        Self {
            buf: BytesMut::new(),
            framing: Framing::Lines(DecodeOptions::default()),
            scanned: 0,
            cbor: cbor::ItemScanner::default(),
            max_event_bytes: MAX_WATCH_EVENT_BYTES,
            failed: false,
            what: what.into(),
            _kind: PhantomData,
        }
    }

    /// A decoder of a protobuf watch (`application/vnd.kubernetes.protobuf;stream=watch`)
    /// of a type with a protobuf form.
    pub fn protobuf(what: impl Into<String>) -> Self {
        Self {
            framing: Framing::Protobuf(DecodeOptions::default()),
            ..Self::new(what)
        }
    }

    /// A decoder of a CBOR watch (`application/cbor-seq`, which kube-apiserver serves
    /// with its `CBORServingAndStorage` feature).
    pub fn cbor(what: impl Into<String>) -> Self {
        Self {
            framing: Framing::Cbor(DecodeOptions::default()),
            ..Self::new(what)
        }
    }

    /// The same decoder, leaving out what `options` say.
    pub fn with_decode_options(mut self, options: DecodeOptions) -> Self {
        match &mut self.framing {
            Framing::Lines(o) | Framing::Protobuf(o) | Framing::Cbor(o) => *o = options,
        }
        self
    }

    /// The same decoder, accepting events of at most `bytes` bytes.
    pub fn with_max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    /// Whether a line was too long: the decoder gives no more events.
    pub fn is_failed(&self) -> bool {
        self.failed
    }

    /// Appends bytes received from the server (ignored once [`is_failed`](Self::is_failed)).
    pub fn feed(&mut self, chunk: &[u8]) {
        if !self.failed {
            self.buf.extend_from_slice(chunk);
        }
    }

    /// The next complete event, if a whole line (or frame) has arrived. Empty lines are
    /// skipped.
    pub fn next_event(&mut self) -> Option<Result<WatchEvent<K>>> {
        let line = self.next_line()?;
        Some(line.and_then(|line| self.framing.decode(&line, &self.what)))
    }

    /// Called when the stream has ended: an incomplete last line is an error (the
    /// connection was cut mid-event); a complete one is decoded.
    pub fn finish(&mut self) -> Option<Result<WatchEvent<K>>> {
        let rest = self.finish_line()?;
        Some(decode_last_event(self.framing, &rest, &self.what))
    }
}

impl<K> WatchDecoder<K> {
    /// What the decoder's errors name.
    pub(crate) fn what(&self) -> &str {
        &self.what
    }

    /// How the stream separates its events.
    pub(crate) fn framing(&self) -> Framing {
        self.framing
    }

    /// The next complete line (without its line end) or protobuf frame (without its
    /// length), not yet decoded; empty lines are skipped. One over the limit is an
    /// [`Error::TooLarge`], after which there are no more.
    pub(crate) fn next_line(&mut self) -> Option<Result<Bytes>> {
        match self.framing {
            Framing::Protobuf(_) => return self.next_frame(),
            Framing::Cbor(_) => return self.next_cbor_item(),
            Framing::Lines(_) => {}
        }
        loop {
            if self.failed {
                return None;
            }
            let Some(end) = memchr::memchr(b'\n', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                if self.buf.len() > self.max_event_bytes {
                    self.failed = true;
                    self.buf = BytesMut::new();
                    self.scanned = 0;
                    return Some(Err(Error::TooLarge {
                        what: format!("a watch event of {}", self.what),
                        limit: self.max_event_bytes,
                    }));
                }
                return None;
            };
            let mut line = self.buf.split_to(self.scanned + end + 1).freeze();
            self.scanned = 0;
            line.truncate(line.len() - 1);
            if line.ends_with(b"\r") {
                line.truncate(line.len() - 1);
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Ok(line));
        }
    }

    /// The next complete protobuf frame, without its length prefix.
    fn next_frame(&mut self) -> Option<Result<Bytes>> {
        if self.failed {
            return None;
        }
        match kubekit_protobuf::split_frame(&self.buf, self.max_event_bytes) {
            Ok(Some((frame, _))) => {
                let len = frame.len();
                let mut frame = self.buf.split_to(4 + len).freeze();
                Some(Ok(frame.split_off(4)))
            }
            Ok(None) => None,
            Err(_) => {
                self.failed = true;
                self.buf = BytesMut::new();
                Some(Err(Error::TooLarge {
                    what: format!("a watch event of {}", self.what),
                    limit: self.max_event_bytes,
                }))
            }
        }
    }

    /// The next complete CBOR data item. Bytes that cannot start one end the events with
    /// a decoding error, as does an item longer than the limit.
    fn next_cbor_item(&mut self) -> Option<Result<Bytes>> {
        if self.failed || self.buf.is_empty() {
            return None;
        }
        match self.cbor.scan(&self.buf) {
            Ok(Some(len)) if len <= self.max_event_bytes => {
                Some(Ok(self.buf.split_to(len).freeze()))
            }
            Ok(None) if self.buf.len() <= self.max_event_bytes => None,
            Ok(_) => {
                self.failed = true;
                self.buf = BytesMut::new();
                Some(Err(Error::TooLarge {
                    what: format!("a watch event of {}", self.what),
                    limit: self.max_event_bytes,
                }))
            }
            Err(e) => {
                self.failed = true;
                let buf = std::mem::take(&mut self.buf);
                let what = format!("watch event of {}", self.what);
                Some(Err(super::response::cbor_error(what, e, &buf)))
            }
        }
    }

    /// The bytes left once the stream has ended, unless they are only whitespace: a last
    /// line without its line end (for protobuf: any bytes, a frame cut short).
    pub(crate) fn finish_line(&mut self) -> Option<Bytes> {
        if self.failed {
            return None;
        }
        let rest = std::mem::take(&mut self.buf).freeze();
        self.scanned = 0;
        self.cbor = cbor::ItemScanner::default();
        let blank = match self.framing {
            Framing::Lines(_) => rest.iter().all(u8::is_ascii_whitespace),
            Framing::Protobuf(_) | Framing::Cbor(_) => rest.is_empty(),
        };
        (!blank).then_some(rest)
    }
}

/// Decodes the last line of a stream that ended without a line end: an error says the
/// stream ended mid-event.
pub(crate) fn decode_last_event<K: DeserializeOwned + 'static>(
    framing: Framing,
    line: &[u8],
    what: &str,
) -> Result<WatchEvent<K>> {
    let decoded = match framing {
        Framing::Lines(options) => decode_json_event(line, what, options),
        // A frame cut short: what is left does not start a whole frame.
        Framing::Protobuf(_) => match kubekit_protobuf::split_frame(line, usize::MAX) {
            Ok(Some((frame, _))) => framing.decode(frame, what),
            _ => Err(protobuf_cut(line, what)),
        },
        // An item cut short: decoding it names where the input ends.
        Framing::Cbor(_) => framing.decode(line, what),
    };
    decoded.map_err(|e| match e {
        Error::Decode { what, source, body } => Error::Decode {
            what: format!("{what} (stream ended mid-event)"),
            source,
            body,
        },
        other => other,
    })
}

/// The error of a protobuf watch whose last frame was cut short.
fn protobuf_cut(rest: &[u8], what: &str) -> Error {
    let e = kubekit_protobuf::Error::new(format!("{} bytes of an incomplete frame", rest.len()));
    super::protobuf::protobuf_error(format!("watch event of {what}"), e, rest)
}

#[cfg(test)]
impl<K> WatchDecoder<K> {
    /// Bytes held that the next [`next_event`](Self::next_event) will search for a
    /// newline: 0 whenever it has returned `None`, so each byte is searched once (none is
    /// searched in a protobuf stream, whose frames say their length).
    pub(crate) fn unscanned(&self) -> usize {
        match self.framing {
            Framing::Lines(_) => self.buf.len() - self.scanned,
            Framing::Protobuf(_) | Framing::Cbor(_) => 0,
        }
    }

    /// Bytes held.
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    fn all(decoder: &mut WatchDecoder<Pod>) -> Vec<Result<WatchEvent<Pod>>> {
        std::iter::from_fn(|| decoder.next_event()).collect()
    }

    /// The events of `stream` fed to `decoder` in chunks of `chunk` bytes, each valid.
    fn in_chunks(
        mut decoder: WatchDecoder<Pod>,
        stream: &[u8],
        chunk: usize,
    ) -> Vec<WatchEvent<Pod>> {
        let mut events = Vec::new();
        for chunk in stream.chunks(chunk) {
            decoder.feed(chunk);
            events.extend(all(&mut decoder));
        }
        assert!(decoder.finish().is_none());
        events
            .into_iter()
            .map(|e| e.expect("valid event"))
            .collect()
    }

    const ADDED: &str =
        r#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}"#;

    #[test]
    fn a_line_past_the_limit_is_an_error_and_ends_the_events() {
        let mut d = WatchDecoder::<Pod>::new("pods").with_max_event_bytes(1024);
        d.feed(format!("{ADDED}\n").as_bytes());
        let huge = format!(
            r#"{{"type":"ADDED","object":{{"metadata":{{"name":"{}"#,
            "x".repeat(600)
        );
        d.feed(huge.as_bytes());
        assert!(
            d.next_event().unwrap().is_ok(),
            "the event before is delivered"
        );
        assert!(
            d.next_event().is_none(),
            "under the limit: waiting for the line's end"
        );
        d.feed(huge.as_bytes());
        let err = d.next_event().unwrap().unwrap_err();
        assert!(matches!(err, Error::TooLarge { limit: 1024, .. }), "{err}");
        assert!(err.to_string().contains("a watch event of pods"), "{err}");
        assert!(d.is_failed());
        d.feed(format!("\n{ADDED}\n").as_bytes());
        assert!(
            d.next_event().is_none() && d.finish().is_none(),
            "no more events"
        );
        assert_eq!(d.buf.capacity(), 0, "what was buffered is freed");
    }

    #[test]
    fn events_split_across_chunks_decode_once_complete() {
        let stream = format!(
            "{ADDED}\n{}\n{}\n",
            r#"{"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"7"}}}"#,
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
        );
        let events = in_chunks(WatchDecoder::<Pod>::new("pods"), stream.as_bytes(), 7);
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
    fn a_cbor_sequence_decodes_event_by_event_whatever_its_keys_order_and_chunks() {
        use crate::rest::cbor::test_encode::encode;
        use serde_json::json;
        let managed = json!([{"manager": "m", "operation": "Update"}]);
        let mut stream = Vec::new();
        // kube-apiserver shuffles the keys of what it streams: object before type (the
        // test encoder writes keys in order)...
        stream.extend(encode(&json!({
            "object": {"metadata": {"name": "a", "managedFields": managed}},
            "type": "ADDED",
        })));
        // ... or type before object: {"type": "MODIFIED", "object": {...}}.
        stream.extend([0xa2, 0x44]);
        stream.extend(b"type");
        stream.push(0x48);
        stream.extend(b"MODIFIED");
        stream.push(0x46);
        stream.extend(b"object");
        stream.extend(&encode(&json!({"metadata": {"name": "b", "managedFields": managed}}))[3..]);
        stream.extend(encode(&json!({
            "type": "BOOKMARK",
            "object": {"metadata": {"resourceVersion": "9",
                "annotations": {"k8s.io/initial-events-end": "true"}}},
        })));
        stream.extend(encode(&json!({
            "type": "ERROR",
            "object": {"kind": "Status", "code": 410, "reason": "Expired"},
        })));
        let options = DecodeOptions {
            skip_managed_fields: true,
        };
        let d = WatchDecoder::<Pod>::cbor("pods").with_decode_options(options);
        let events = in_chunks(d, &stream, 5);
        match &events[0] {
            WatchEvent::Added(p) => {
                assert_eq!(p.metadata.name.as_deref(), Some("a"));
                assert_eq!(p.metadata.managed_fields, None);
            }
            other => panic!("expected an add, got {other:?}"),
        }
        match &events[1] {
            WatchEvent::Modified(p) => {
                assert_eq!(p.metadata.name.as_deref(), Some("b"));
                assert_eq!(p.metadata.managed_fields, None);
            }
            other => panic!("expected a change, got {other:?}"),
        }
        assert!(matches!(&events[2], WatchEvent::Bookmark(b) if b.is_initial_events_end()));
        assert!(matches!(&events[3], WatchEvent::Error(s) if s.code == Some(410)));
    }

    #[test]
    fn a_cbor_sequence_cut_or_corrupted_is_an_error_naming_the_resource_not_a_panic() {
        use crate::rest::cbor::test_encode::encode;
        use serde_json::json;
        let event = encode(&json!({"type": "ADDED", "object": {"metadata": {"name": "a"}}}));
        let mut d = WatchDecoder::<Pod>::cbor("pods in namespace \"demo\"");
        d.feed(&event[..event.len() - 2]);
        assert!(d.next_event().is_none());
        let cut = d.finish().expect("a cut event").unwrap_err().to_string();
        assert!(
            cut.contains("stream ended mid-event") && cut.contains("demo"),
            "{cut}"
        );

        let mut d = WatchDecoder::<Pod>::cbor("pods");
        d.feed(&[0xff, 0x00]);
        let garbage = d.next_event().expect("an error").unwrap_err().to_string();
        assert!(garbage.contains("watch event of pods"), "{garbage}");
        assert!(
            d.next_event().is_none(),
            "no events after bytes that start none"
        );

        let unknown = encode(&json!({"type": "RENAMED", "object": {}}));
        let mut d = WatchDecoder::<Pod>::cbor("pods");
        d.feed(&unknown);
        let err = d.next_event().expect("an error").unwrap_err().to_string();
        assert!(err.contains("unknown event type"), "{err}");
    }

    #[test]
    fn a_json_decoder_told_to_skip_managed_fields_leaves_them_out() {
        let line = br#"{"type":"MODIFIED","object":{"metadata":{"name":"a","managedFields":[{"manager":"m","operation":"Update"}]}}}
"#;
        let events = |options| {
            let mut d = WatchDecoder::<Pod>::new("pods").with_decode_options(options);
            d.feed(line);
            all(&mut d)
        };
        let skip = DecodeOptions {
            skip_managed_fields: true,
        };
        for (options, managed) in [(DecodeOptions::default(), true), (skip, false)] {
            match &events(options)[..] {
                [Ok(WatchEvent::Modified(p))] => {
                    assert_eq!(p.metadata.name.as_deref(), Some("a"));
                    assert_eq!(p.metadata.managed_fields.is_some(), managed);
                }
                other => panic!("expected one MODIFIED, got {other:?}"),
            }
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
    fn an_object_before_its_type_decodes_the_same() {
        let mut d = WatchDecoder::<Pod>::new("pods");
        d.feed(br#"{"object":{"metadata":{"name":"a","resourceVersion":"5"}},"type":"MODIFIED"}"#);
        d.feed(b"\n");
        d.feed(br#"{"object":{"metadata":{"name":5}},"type":"ADDED"}"#);
        d.feed(b"\n");
        let events = all(&mut d);
        assert!(
            matches!(&events[0], Ok(WatchEvent::Modified(p)) if p.metadata.name.as_deref() == Some("a"))
        );
        let err = events[1].as_ref().expect_err("name must be a string");
        assert!(
            err.to_string().contains("ADDED pods in a watch event"),
            "{err}"
        );
    }

    #[test]
    fn trailing_garbage_after_an_event_is_an_error() {
        let mut d = WatchDecoder::<Pod>::new("pods");
        d.feed(format!("{ADDED} x\n").as_bytes());
        assert!(d.next_event().unwrap().is_err());
    }

    #[test]
    fn unknown_event_type_is_an_error() {
        let mut d = WatchDecoder::<Pod>::new("pods");
        d.feed(b"{\"type\":\"RENAMED\",\"object\":{}}\n");
        let err = d.next_event().unwrap().expect_err("unknown type");
        assert!(err.to_string().contains("RENAMED"), "{err}");
    }
}
