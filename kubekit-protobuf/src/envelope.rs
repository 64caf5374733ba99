//! kube-apiserver's protobuf framing: an object or list is the 4 bytes `k8s\0` then a
//! `runtime.Unknown` whose `typeMeta` names the kind and whose `raw` is the message; a
//! watch stream is a sequence of frames, each a 4-byte big-endian length then a
//! `meta.v1.WatchEvent` whose `object.raw` is an enveloped object.

use k8s_openapi::Resource;

use crate::runtime::{
    DecodeOptions, Decoder, Encoder, Error, Field, Message, WireType, merge_message,
};

/// The 4 bytes every protobuf object kube-apiserver sends starts with.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// The media type of kube-apiserver's protobuf encoding.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// An enveloped object, read without copying its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown<'a> {
    /// `typeMeta.apiVersion`: `v1`, `apps/v1`.
    pub api_version: String,
    /// `typeMeta.kind`: `Pod`, `PodList`, `Status`.
    pub kind: String,
    /// The encoded message.
    pub raw: &'a [u8],
    /// `contentEncoding`, empty unless the server compressed `raw` (it never does today).
    pub content_encoding: String,
}

impl<'a> Unknown<'a> {
    /// Reads the envelope of `bytes`: the magic, then a `runtime.Unknown`.
    pub fn read(bytes: &'a [u8]) -> Result<Self, Error> {
        let body = bytes.strip_prefix(MAGIC.as_slice()).ok_or_else(|| {
            Error::new(format!(
                "not a Kubernetes protobuf object: it does not start with k8s\\0 (starts {:?})",
                &bytes[..bytes.len().min(4)]
            ))
        })?;
        let mut d = Decoder::new(body);
        let mut unknown = Unknown {
            api_version: String::new(),
            kind: String::new(),
            raw: &[],
            content_encoding: String::new(),
        };
        while !d.is_empty() {
            match d.key()? {
                (1, WireType::Len) => d.nested(|tm| {
                    while !tm.is_empty() {
                        match tm.key()? {
                            (1, wire) => Field::merge(&mut unknown.api_version, wire, tm)?,
                            (2, wire) => Field::merge(&mut unknown.kind, wire, tm)?,
                            (_, wire) => tm.skip(wire)?,
                        }
                    }
                    Ok(())
                })?,
                (2, WireType::Len) => unknown.raw = d.len_delimited()?,
                (3, wire) => Field::merge(&mut unknown.content_encoding, wire, &mut d)?,
                (_, wire) => d.skip(wire)?,
            }
        }
        if !unknown.content_encoding.is_empty() {
            return Err(Error::new(format!(
                "content encoding {:?} is not supported",
                unknown.content_encoding
            )));
        }
        Ok(unknown)
    }

    /// Whether the envelope names `api_version` and `kind`.
    pub fn is(&self, api_version: &str, kind: &str) -> bool {
        self.api_version == api_version && self.kind == kind
    }

    /// [`is`](Self::is), as an error naming what was expected and what came if not.
    pub fn expect(&self, api_version: &str, kind: &str) -> Result<(), Error> {
        if self.is(api_version, kind) {
            return Ok(());
        }
        Err(Error::new(format!(
            "expected {api_version} {kind}, the server sent {} {}",
            self.api_version, self.kind
        )))
    }

    /// Decodes the message as a `T`.
    pub fn decode<T: Message>(&self) -> Result<T, Error> {
        decode_message(self.raw)
    }
}

/// Decodes a message (no envelope) as a `T`.
pub fn decode_message<T: Message>(raw: &[u8]) -> Result<T, Error> {
    decode_message_with(raw, DecodeOptions::default())
}

/// Decodes a message (no envelope) as a `T`, leaving out what `options` say.
pub fn decode_message_with<T: Message>(raw: &[u8], options: DecodeOptions) -> Result<T, Error> {
    let mut value = T::empty();
    merge_message(&mut value, &mut Decoder::with_options(raw, options))?;
    Ok(value)
}

/// Decodes an enveloped object as a `T`, checking that the envelope names `T`'s kind.
pub fn decode<T: Resource + Message>(bytes: &[u8]) -> Result<T, Error> {
    let unknown = Unknown::read(bytes)?;
    unknown.expect(T::API_VERSION, T::KIND)?;
    unknown.decode()
}

/// Encodes `value` in an envelope that names `T`'s kind, as kube-apiserver reads request
/// bodies of type `application/vnd.kubernetes.protobuf`.
pub fn encode<T: Resource + Message>(value: &T) -> Vec<u8> {
    encode_as(T::API_VERSION, T::KIND, value)
}

/// Encodes `value` in an envelope that names `api_version` and `kind`.
pub fn encode_as<T: Message>(api_version: &str, kind: &str, value: &T) -> Vec<u8> {
    envelope(api_version, kind, |e| value.encode_fields(e))
}

/// Puts `raw`, an encoded message, in an envelope that names `api_version` and `kind`.
pub fn encode_raw(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    envelope(api_version, kind, |e| e.raw(raw))
}

/// An envelope naming `api_version` and `kind` around the message `message` writes.
pub(crate) fn envelope(
    api_version: &str,
    kind: &str,
    message: impl FnOnce(&mut Encoder),
) -> Vec<u8> {
    let mut e = Encoder::new(MAGIC.to_vec());
    e.key(1, WireType::Len);
    e.nested(|e| {
        Field::encode(&api_version.to_string(), 1, e);
        Field::encode(&kind.to_string(), 2, e);
    });
    e.key(2, WireType::Len);
    e.nested(message);
    // Go writes the two strings even when empty.
    Field::encode(&String::new(), 3, &mut e);
    Field::encode(&String::new(), 4, &mut e);
    e.into_bytes()
}

/// One event of a protobuf watch stream: its type and its enveloped object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: String,
    /// The object, enveloped (read it with [`Unknown::read`]); a `Status` for `ERROR`.
    pub object: &'a [u8],
}

impl<'a> WatchEvent<'a> {
    /// Reads one frame's `WatchEvent` (the frame without its length prefix).
    pub fn read(frame: &'a [u8]) -> Result<Self, Error> {
        let mut d = Decoder::new(frame);
        let mut event = WatchEvent {
            event_type: String::new(),
            object: &[],
        };
        while !d.is_empty() {
            match d.key()? {
                (1, wire) => Field::merge(&mut event.event_type, wire, &mut d)?,
                (2, WireType::Len) => {
                    event.object = d.nested(|raw_ext| {
                        let mut raw: &[u8] = &[];
                        while !raw_ext.is_empty() {
                            match raw_ext.key()? {
                                (1, WireType::Len) => raw = raw_ext.len_delimited()?,
                                (_, wire) => raw_ext.skip(wire)?,
                            }
                        }
                        Ok(raw)
                    })?
                }
                (_, wire) => d.skip(wire)?,
            }
        }
        if event.event_type.is_empty() {
            return Err(Error::new("a watch event without a type"));
        }
        Ok(event)
    }

    /// Writes a frame: the length prefix, then the event.
    pub fn write_frame(&self, out: &mut Vec<u8>) {
        let mut e = Encoder::default();
        Field::encode(&self.event_type, 1, &mut e);
        e.key(2, WireType::Len);
        e.nested(|e| {
            e.key(1, WireType::Len);
            e.bytes(self.object);
        });
        let body = e.into_bytes();
        out.extend_from_slice(
            &u32::try_from(body.len())
                .expect("an event under 4 GiB")
                .to_be_bytes(),
        );
        out.extend_from_slice(&body);
    }
}

/// A frame split off a watch stream's bytes, and the bytes after it.
pub type Split<'a> = (&'a [u8], &'a [u8]);

/// Splits the next frame off a watch stream's buffered bytes: `Ok(Some((frame, rest)))`,
/// `Ok(None)` when the buffer does not hold a whole frame yet, an error when the frame's
/// length passes `max_frame` (what a client is willing to buffer for one event).
pub fn split_frame(buf: &[u8], max_frame: usize) -> Result<Option<Split<'_>>, Error> {
    let Some((len, rest)) = buf.split_first_chunk::<4>() else {
        return Ok(None);
    };
    let len = u32::from_be_bytes(*len) as usize;
    if len > max_frame {
        return Err(Error::new(format!(
            "a watch frame of {len} bytes passes the limit of {max_frame}"
        )));
    }
    Ok((rest.len() >= len).then(|| rest.split_at(len)))
}
