//! Kubernetes' CBOR (RFC 8949), as kube-apiserver serves it with its
//! `CBORServingAndStorage` feature: objects, lists and watch events (`application/cbor`,
//! `application/cbor-seq`) decoded straight into the serde types that JSON decodes into.
//!
//! # Contract
//!
//! - **JSON's meaning.** A type decodes from kube-apiserver's CBOR to what it decodes from
//!   the same object's JSON. kube-apiserver writes Go strings and field names as CBOR byte
//!   strings: a byte string that is UTF-8 is read as text (borrowed from the input, as
//!   serde_json borrows), any other as bytes. A byte string in tag 22 ("expected
//!   base64", what the server writes for `[]byte` fields such as a Secret's `data`) reads
//!   as its base64 text, as JSON carries it. The self-described CBOR tag (55799) that
//!   starts each data item, and any other tag, is skipped and its content read. `null`
//!   and `undefined` are none; integers up to 64 bits of either sign; floats of 16, 32
//!   and 64 bits.
//! - **Map keys in any order.** kube-apiserver shuffles the keys of what it streams: a
//!   watch event is read by key ([`event_parts`]), a list's items and metadata likewise
//!   ([`list_parts`]).
//! - **Bad input is an error, never a panic.** Lengths are checked against the input
//!   before anything is read or allocated; nesting deeper than [`MAX_DEPTH`] is an error,
//!   as in serde_json; invalid UTF-8 in a text string, a reserved header, a stray `break`
//!   and bytes after the item are errors naming their offset.
//! - **managedFields left out while decoding** when the options say so: the entries of an
//!   object's `metadata.managedFields` are skipped, never decoded.
//! - **Raw JSON.** A `serde_json::value::RawValue` (what the compact cache keeps, or a
//!   field of a user's type) receives the item as JSON text.
//! - **Streams.** [`ItemScanner`] tells whether a buffer starts with a whole data item (and
//!   its length), so a `cbor-seq` watch is split into events as they arrive.

use std::fmt;

use base64::Engine;
use serde::de::{
    self, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, VariantAccess,
    Visitor,
};

use kubekit_protobuf::DecodeOptions;

/// The media type of one CBOR object or list.
pub(crate) const CONTENT_TYPE: &str = "application/cbor";

/// The head of the self-described CBOR tag, with which kube-apiserver starts each item.
pub(crate) const SELF_DESCRIBED: [u8; 3] = [0xd9, 0xd9, 0xf7];

/// The deepest nesting of arrays, maps and tags read.
pub(crate) const MAX_DEPTH: usize = 128;

/// The newtype name through which serde_json's `RawValue` asks a deserializer for the
/// JSON text of the value.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Tag 22: the byte string it holds is base64 text in JSON.
const EXPECTED_BASE64: u64 = 22;

/// Whether a `Content-Type` is CBOR (an object, a list, or a `cbor-seq` watch).
pub(crate) fn is_cbor(content_type: &str) -> bool {
    content_type.starts_with(CONTENT_TYPE)
}

/// A CBOR decoding error, with the offset of the byte where it was found.
#[derive(Debug)]
pub(crate) struct Error {
    message: String,
    offset: Option<usize>,
    /// The input ended inside the item.
    eof: bool,
}

impl Error {
    fn at(offset: usize, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            offset: Some(offset),
            eof: false,
        }
    }

    fn eof(offset: usize) -> Self {
        Self {
            eof: true,
            ..Self::at(offset, "the input ends inside a data item")
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) => write!(f, "{} at byte {offset} of the CBOR", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self {
            message: msg.to_string(),
            offset: None,
            eof: false,
        }
    }
}

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// A data item's head: its major type and argument.
#[derive(Clone, Copy, Debug)]
struct Head {
    major: u8,
    /// The additional information (low 5 bits of the initial byte).
    info: u8,
    /// The argument; meaningless when `info` is 31 (indefinite length, or `break`).
    arg: u64,
}

impl Head {
    fn indefinite(self) -> bool {
        self.info == 31
    }
}

/// Reads heads and contents from a slice.
#[derive(Clone, Copy)]
struct Reader<'de> {
    input: &'de [u8],
    pos: usize,
}

impl<'de> Reader<'de> {
    fn byte(&mut self) -> Result<u8> {
        let b = *self.input.get(self.pos).ok_or(Error::eof(self.pos))?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, len: u64) -> Result<&'de [u8]> {
        let rest = self.input.len() - self.pos;
        if len > rest as u64 {
            return Err(Error::eof(self.input.len()));
        }
        let bytes = &self.input[self.pos..self.pos + len as usize];
        self.pos += len as usize;
        Ok(bytes)
    }

    fn head(&mut self) -> Result<Head> {
        let start = self.pos;
        let initial = self.byte()?;
        let (major, info) = (initial >> 5, initial & 0x1f);
        let arg = match info {
            0..=23 => u64::from(info),
            24..=27 => {
                let bytes = self.take(1 << (info - 24))?;
                bytes.iter().fold(0, |n, b| (n << 8) | u64::from(*b))
            }
            31 if matches!(major, 2..=5 | 7) => 0,
            _ => {
                return Err(Error::at(
                    start,
                    format!("invalid initial byte 0x{initial:02x}"),
                ));
            }
        };
        Ok(Head { major, info, arg })
    }

    fn peek_head(&self) -> Result<Head> {
        let mut ahead = *self;
        ahead.head()
    }

    /// Whether the next byte is `break` (ending an indefinite-length item); consumes it.
    fn at_break(&mut self) -> Result<bool> {
        let b = *self.input.get(self.pos).ok_or(Error::eof(self.pos))?;
        if b == 0xff {
            self.pos += 1;
        }
        Ok(b == 0xff)
    }

    /// The count of a definite array or map of `len` entries of `per` items each, checked
    /// against the input left (every item takes at least one byte): more is an input that
    /// ends inside the item.
    fn count(&self, start: usize, len: u64, per: u64) -> Result<usize> {
        match len.checked_mul(per) {
            Some(items) if items <= (self.input.len() - self.pos) as u64 => Ok(len as usize),
            _ => Err(Error {
                eof: true,
                ..Error::at(start, format!("a length of {len} runs past the input"))
            }),
        }
    }

    /// The content of a string whose head was read: borrowed when definite, gathered from
    /// its chunks when indefinite.
    fn string(&mut self, head: Head) -> Result<std::borrow::Cow<'de, [u8]>> {
        if !head.indefinite() {
            return self.take(head.arg).map(std::borrow::Cow::Borrowed);
        }
        let mut all = Vec::new();
        while !self.at_break()? {
            let start = self.pos;
            let chunk = self.head()?;
            if chunk.major != head.major || chunk.indefinite() {
                return Err(Error::at(
                    start,
                    "an indefinite string holds a foreign chunk",
                ));
            }
            all.extend_from_slice(self.take(chunk.arg)?);
        }
        Ok(std::borrow::Cow::Owned(all))
    }

    /// Skips one data item (with its tags), nested in `depth` others.
    fn skip(&mut self, depth: usize) -> Result<()> {
        let mut scanner = ItemScanner {
            pos: self.pos,
            open: Vec::new(),
            depth,
        };
        let end = scanner
            .scan(self.input)?
            .ok_or(Error::eof(self.input.len()))?;
        self.pos = end;
        Ok(())
    }

    /// Whether the next byte starts a tag (major type 6).
    fn at_tag(&self) -> bool {
        self.input.get(self.pos).is_some_and(|b| b >> 5 == 6)
    }

    /// Skips tags, leaving the reader at the head of what they enclose.
    fn skip_tags(&mut self) -> Result<()> {
        while self.at_tag() {
            self.head()?;
        }
        Ok(())
    }
}

/// What is left of an array or map being read: the entries of a definite one, or `None`
/// for an indefinite one (which a `break` ends).
#[derive(Clone, Copy, Debug)]
struct Left(Option<usize>);

impl Left {
    /// Of an array (`per` 1) or map (`per` 2) whose head was `head`, at `start`.
    fn of(reader: &Reader<'_>, start: usize, head: Head, per: u64) -> Result<Self> {
        let count = (!head.indefinite())
            .then(|| reader.count(start, head.arg, per))
            .transpose()?;
        Ok(Self(count))
    }

    /// Whether another entry follows; counts it (the `break` of an indefinite one is
    /// read).
    fn next(&mut self, reader: &mut Reader<'_>) -> Result<bool> {
        Ok(match &mut self.0 {
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
            None if reader.at_break()? => {
                self.0 = Some(0);
                false
            }
            None => true,
        })
    }

    /// Checks that every entry was read.
    fn end(self, reader: &mut Reader<'_>, what: &str) -> Result<()> {
        let done = match self.0 {
            Some(left) => left == 0,
            None => reader.at_break()?,
        };
        if done {
            Ok(())
        } else {
            Err(Error::at(reader.pos, format!("more {what} than expected")))
        }
    }
}

/// The length of the data item `buf` starts with, `None` if `buf` ends inside it.
#[cfg(test)]
pub(crate) fn item_len(buf: &[u8]) -> Result<Option<usize>> {
    ItemScanner::default().scan(buf)
}

/// A container the [`ItemScanner`] is inside, and what is left of it.
#[derive(Clone, Copy, Debug)]
enum Open {
    /// The items left of a definite array or map (a map's entries count two each), or of
    /// a tag (the one item it encloses).
    Items(u64),
    /// An indefinite array or map, which a `break` ends.
    Indefinite,
    /// An indefinite string of this major type: definite chunks of it until a `break`.
    Chunks(u8),
}

/// Finds where a data item ends in a buffer that grows between calls (a `cbor-seq`
/// watch, chunk by chunk), reading each byte once: what it has read of an item stays read
/// until the item ends, so an event that arrives in many chunks costs one pass, not one
/// per chunk. Heads and string lengths are checked as [`Reader`] checks them; nesting is
/// capped at [`MAX_DEPTH`].
#[derive(Debug, Default)]
pub(crate) struct ItemScanner {
    /// Bytes of the item read so far: up to the end of the last whole head (and its
    /// string).
    pos: usize,
    /// The containers being read, outermost first.
    open: Vec<Open>,
    /// How deeply the item is nested in others.
    depth: usize,
}

impl ItemScanner {
    /// The length of the data item `buf` starts with, `None` while `buf` ends inside it.
    /// `buf` holds what the calls since the last item were given, and more: it may only
    /// grow. Once a length is given, the scanner starts over for the item after it.
    pub(crate) fn scan(&mut self, buf: &[u8]) -> Result<Option<usize>> {
        let mut reader = Reader {
            input: buf,
            pos: self.pos,
        };
        loop {
            let done = match self.step(&mut reader) {
                Ok(done) => done,
                Err(e) if e.eof => return Ok(None),
                Err(e) => return Err(e),
            };
            self.pos = reader.pos;
            if done && self.close() {
                self.pos = 0;
                return Ok(Some(reader.pos));
            }
        }
    }

    /// Reads one head (with a definite string's content, or a `break`); whether it ends
    /// an item. At the end of the input, an error whose `eof` is set.
    fn step(&mut self, reader: &mut Reader<'_>) -> Result<bool> {
        if let Some(Open::Indefinite | Open::Chunks(_)) = self.open.last()
            && reader.at_break()?
        {
            self.open.pop();
            return Ok(true);
        }
        let start = reader.pos;
        let head = reader.head()?;
        if let Some(&Open::Chunks(major)) = self.open.last()
            && (head.major != major || head.indefinite())
        {
            return Err(Error::at(
                start,
                "an indefinite string holds a foreign chunk",
            ));
        }
        let open = match head.major {
            2 | 3 if head.indefinite() => Open::Chunks(head.major),
            2 | 3 => return reader.take(head.arg).map(|_| true),
            4 | 5 if head.indefinite() => Open::Indefinite,
            4 | 5 => match head.arg.checked_mul(if head.major == 4 { 1 } else { 2 }) {
                Some(0) => return Ok(true),
                Some(items) => Open::Items(items),
                None => return Err(Error::at(start, "a map of more than 2^63 entries")),
            },
            6 => Open::Items(1),
            _ if head.indefinite() => return Err(Error::at(start, "a break outside any item")),
            _ => return Ok(true),
        };
        if self.depth + self.open.len() >= MAX_DEPTH {
            return Err(Error::at(start, "nested too deeply"));
        }
        self.open.push(open);
        Ok(false)
    }

    /// Counts an item that ended in the containers it ends; whether the outermost item
    /// ended with it.
    fn close(&mut self) -> bool {
        loop {
            match self.open.last_mut() {
                None => return true,
                Some(Open::Items(left)) => {
                    *left -= 1;
                    if *left > 0 {
                        return false;
                    }
                    self.open.pop();
                }
                Some(Open::Indefinite | Open::Chunks(_)) => return false,
            }
        }
    }
}

/// Decodes the data item at `pos` of `input` with `seed`, with what `options` say left
/// out; gives the offset after it.
pub(crate) fn seed_at<'de, S: DeserializeSeed<'de>>(
    input: &'de [u8],
    pos: usize,
    options: DecodeOptions,
    seed: S,
) -> Result<(S::Value, usize)> {
    let mut de = Deserializer {
        reader: Reader { input, pos },
        depth: 0,
        skip_managed_fields: options.skip_managed_fields,
        level: if options.skip_managed_fields {
            Level::Object
        } else {
            Level::Other
        },
    };
    let value = seed.deserialize(&mut de).map_err(|mut e| {
        e.offset.get_or_insert(de.reader.pos);
        e
    })?;
    Ok((value, de.reader.pos))
}

/// Decodes the data item at `pos` of `input` as a `T`, with what `options` say left out;
/// gives the offset after it.
pub(crate) fn from_slice_at<'de, T: de::Deserialize<'de>>(
    input: &'de [u8],
    pos: usize,
    options: DecodeOptions,
) -> Result<(T, usize)> {
    seed_at(input, pos, options, std::marker::PhantomData)
}

/// Decodes the one data item `input` holds as a `T`, with what `options` say left out.
pub(crate) fn from_slice_with<'de, T: de::Deserialize<'de>>(
    input: &'de [u8],
    options: DecodeOptions,
) -> Result<T> {
    let (value, end) = from_slice_at(input, 0, options)?;
    if end != input.len() {
        return Err(Error::at(end, "bytes after the data item"));
    }
    Ok(value)
}

/// Decodes the one data item `input` holds as a `T`.
pub(crate) fn from_slice<'de, T: de::Deserialize<'de>>(input: &'de [u8]) -> Result<T> {
    from_slice_with(input, DecodeOptions::default())
}

/// Walks the map `input` holds (after its tags): `visit` is given each key's text and the
/// offset of its value, and returns the offset after the value (having decoded it), or
/// `None` to have it skipped.
pub(crate) fn walk_map<'de>(
    input: &'de [u8],
    mut visit: impl FnMut(&'de [u8], usize) -> Result<Option<usize>>,
) -> Result<()> {
    let mut reader = Reader { input, pos: 0 };
    reader.skip_tags()?;
    let start = reader.pos;
    let head = reader.head()?;
    if head.major != 5 {
        return Err(Error::at(start, "expected a map"));
    }
    let mut left = Left::of(&reader, start, head, 2)?;
    while left.next(&mut reader)? {
        reader.skip_tags()?;
        let key_start = reader.pos;
        let key = reader.head()?;
        if !matches!(key.major, 2 | 3) || key.indefinite() {
            return Err(Error::at(key_start, "a map key that is not a string"));
        }
        let key = reader.take(key.arg)?;
        match visit(key, reader.pos)? {
            Some(end) => reader.pos = end,
            None => reader.skip(1)?,
        }
    }
    if reader.pos != input.len() {
        return Err(Error::at(reader.pos, "bytes after the data item"));
    }
    Ok(())
}

/// The entries of the map `input` holds (after its tags): each key's text and its
/// value's bytes (with the value's tags), in the order they come.
pub(crate) fn map_entries(input: &[u8]) -> Result<Vec<(&[u8], &[u8])>> {
    let mut entries = Vec::new();
    walk_map(input, |key, at| {
        let mut reader = Reader { input, pos: at };
        reader.skip(1)?;
        entries.push((key, &input[at..reader.pos]));
        Ok(Some(reader.pos))
    })?;
    Ok(entries)
}

/// The bytes of each item of the array `input` holds (after its tags).
pub(crate) fn array_items(input: &[u8]) -> Result<Vec<&[u8]>> {
    let mut reader = Reader { input, pos: 0 };
    reader.skip_tags()?;
    let start = reader.pos;
    let head = reader.head()?;
    if head.major != 4 {
        return Err(Error::at(start, "expected an array"));
    }
    let mut left = Left::of(&reader, start, head, 1)?;
    let mut items = Vec::with_capacity(left.0.unwrap_or(0));
    while left.next(&mut reader)? {
        let item_start = reader.pos;
        reader.skip(1)?;
        items.push(&input[item_start..reader.pos]);
    }
    Ok(items)
}

/// The value of `key` among `entries`, if there.
pub(crate) fn entry<'a>(entries: &[(&[u8], &'a [u8])], key: &str) -> Option<&'a [u8]> {
    entries
        .iter()
        .find(|(k, _)| *k == key.as_bytes())
        .map(|(_, v)| *v)
}

/// Where a map being read sits, for leaving out `metadata.managedFields`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Level {
    /// The object itself: its `metadata` is [`Level::Metadata`].
    Object,
    /// The object's metadata: its `managedFields` are skipped.
    Metadata,
    Other,
}

/// A serde deserializer of one CBOR data item; see the [module docs](self).
struct Deserializer<'de> {
    reader: Reader<'de>,
    depth: usize,
    skip_managed_fields: bool,
    /// What the next map read is (taken by each value read).
    level: Level,
}

impl<'de> Deserializer<'de> {
    fn take_level(&mut self) -> Level {
        std::mem::replace(&mut self.level, Level::Other)
    }

    /// Skips tags; for tag 22 around a byte string, returns its base64 text.
    fn tags(&mut self) -> Result<Option<String>> {
        while self.reader.at_tag() {
            let head = self.reader.head()?;
            if head.arg == EXPECTED_BASE64 {
                let start = self.reader.pos;
                let inner = self.reader.peek_head()?;
                if inner.major == 2 {
                    self.reader.head()?;
                    let bytes = self.reader.string(inner)?;
                    return Ok(Some(
                        base64::engine::general_purpose::STANDARD.encode(bytes),
                    ));
                }
                if inner.major != 6 {
                    return Err(Error::at(start, "tag 22 does not hold a byte string"));
                }
            }
        }
        Ok(None)
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::at(self.reader.pos, "nested too deeply"));
        }
        let value = f(self);
        self.depth -= 1;
        value
    }

    /// Whether the next item (after its tags) is `null` or `undefined`; consumes it if so.
    fn at_null(&mut self) -> Result<bool> {
        let mut ahead = self.reader;
        if ahead.at_tag() {
            ahead.skip_tags()?;
        }
        let null = matches!(ahead.input.get(ahead.pos), Some(0xf6 | 0xf7));
        if null {
            self.reader.pos = ahead.pos + 1;
        }
        Ok(null)
    }
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let level = self.take_level();
        if let Some(text) = self.tags()? {
            return visitor.visit_string(text);
        }
        let start = self.reader.pos;
        let head = self.reader.head()?;
        match head.major {
            0 => visitor.visit_u64(head.arg),
            1 => match i64::try_from(head.arg) {
                Ok(n) => visitor.visit_i64(-1 - n),
                Err(_) => visitor.visit_i128(-1 - i128::from(head.arg)),
            },
            2 => match self.reader.string(head)? {
                std::borrow::Cow::Borrowed(bytes) => match std::str::from_utf8(bytes) {
                    Ok(text) => visitor.visit_borrowed_str(text),
                    Err(_) => visitor.visit_borrowed_bytes(bytes),
                },
                std::borrow::Cow::Owned(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => visitor.visit_string(text),
                    Err(e) => visitor.visit_byte_buf(e.into_bytes()),
                },
            },
            3 => match self.reader.string(head)? {
                std::borrow::Cow::Borrowed(bytes) => match std::str::from_utf8(bytes) {
                    Ok(text) => visitor.visit_borrowed_str(text),
                    Err(_) => Err(Error::at(start, "invalid UTF-8 in a text string")),
                },
                std::borrow::Cow::Owned(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => visitor.visit_string(text),
                    Err(_) => Err(Error::at(start, "invalid UTF-8 in a text string")),
                },
            },
            4 => {
                let left = Left::of(&self.reader, start, head, 1)?;
                self.nested(|de| {
                    let mut seq = Seq { de, left };
                    let value = visitor.visit_seq(&mut seq)?;
                    seq.left.end(&mut seq.de.reader, "elements")?;
                    Ok(value)
                })
            }
            5 => {
                let left = Left::of(&self.reader, start, head, 2)?;
                self.nested(|de| {
                    let mut map = Map {
                        de,
                        left,
                        level,
                        value_level: Level::Other,
                    };
                    let value = visitor.visit_map(&mut map)?;
                    map.left.end(&mut map.de.reader, "entries")?;
                    Ok(value)
                })
            }
            _ => match (head.info, head.arg) {
                (20, _) => visitor.visit_bool(false),
                (21, _) => visitor.visit_bool(true),
                (22 | 23, _) => visitor.visit_unit(),
                (25, bits) => visitor.visit_f64(f16_to_f64(bits as u16)),
                (26, bits) => visitor.visit_f32(f32::from_bits(bits as u32)),
                (27, bits) => visitor.visit_f64(f64::from_bits(bits)),
                (31, _) => Err(Error::at(start, "a break outside any item")),
                _ => Err(Error::at(
                    start,
                    format!("an unsupported simple value {}", head.arg),
                )),
            },
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.at_null()? {
            self.take_level();
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.at_null()? {
            self.take_level();
            visitor.visit_unit()
        } else {
            self.deserialize_any(visitor)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == RAW_VALUE_TOKEN {
            // serde_json's `RawValue` asks for its JSON text through this token (as it
            // does of simd-json): the item is given as JSON, so whatever keeps raw JSON
            // (the compact cache, a `Box<RawValue>` field) reads CBOR too.
            let value: serde_json::Value = de::Deserialize::deserialize(&mut *self)?;
            let json = serde_json::to_string(&value).map_err(de::Error::custom)?;
            return visitor.visit_map(de::value::MapDeserializer::new(std::iter::once((
                RAW_VALUE_TOKEN,
                json,
            ))));
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let mut ahead = self.reader;
        ahead.skip_tags()?;
        let head = ahead.peek_head()?;
        if head.major == 2 && !head.indefinite() {
            self.take_level();
            ahead.head()?;
            let bytes = ahead.take(head.arg)?;
            self.reader = ahead;
            return visitor.visit_borrowed_bytes(bytes);
        }
        self.deserialize_any(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.take_level();
        self.tags()?;
        let start = self.reader.pos;
        let head = self.reader.peek_head()?;
        match head.major {
            2 | 3 => {
                self.reader.head()?;
                let name = self.reader.string(head)?;
                let name = String::from_utf8(name.into_owned())
                    .map_err(|_| Error::at(start, "an enum variant that is not UTF-8"))?;
                visitor.visit_enum(name.into_deserializer())
            }
            5 if head.arg == 1 || head.indefinite() => {
                self.reader.head()?;
                let value = self.nested(|de| visitor.visit_enum(Variant { de }))?;
                if head.indefinite() && !self.reader.at_break()? {
                    return Err(Error::at(
                        self.reader.pos,
                        "an enum map of more than one entry",
                    ));
                }
                Ok(value)
            }
            _ => Err(Error::at(
                start,
                "expected an enum: a string or a map of one entry",
            )),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.take_level();
        self.reader.skip(self.depth)?;
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// The elements of an array.
struct Seq<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    left: Left,
}

impl<'de> SeqAccess<'de> for Seq<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if !self.left.next(&mut self.de.reader)? {
            return Ok(None);
        }
        seed.deserialize(&mut *self.de).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        self.left.0
    }
}

/// The entries of a map.
struct Map<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    left: Left,
    level: Level,
    /// What the value of the key just read is.
    value_level: Level,
}

impl Map<'_, '_> {
    /// The next key's text, if it is a definite string, without reading it.
    fn peek_key(&self) -> Option<&[u8]> {
        let mut ahead = self.de.reader;
        ahead.skip_tags().ok()?;
        let head = ahead.head().ok()?;
        (matches!(head.major, 2 | 3) && !head.indefinite())
            .then(|| ahead.take(head.arg).ok())
            .flatten()
    }
}

impl<'de> MapAccess<'de> for Map<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        loop {
            if !self.left.next(&mut self.de.reader)? {
                return Ok(None);
            }
            self.value_level = Level::Other;
            if self.level == Level::Other {
                return seed.deserialize(&mut *self.de).map(Some);
            }
            match (self.level, self.peek_key()) {
                (Level::Metadata, Some(b"managedFields")) if self.de.skip_managed_fields => {
                    self.de.reader.skip(self.de.depth)?;
                    self.de.reader.skip(self.de.depth)?;
                    continue;
                }
                (Level::Object, Some(b"metadata")) => self.value_level = Level::Metadata,
                _ => {}
            }
            return seed.deserialize(&mut *self.de).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        self.de.level = self.value_level;
        seed.deserialize(&mut *self.de)
    }

    fn size_hint(&self) -> Option<usize> {
        self.left.0
    }
}

/// An enum written as a map of one entry: the variant's name, then its content.
struct Variant<'a, 'de> {
    de: &'a mut Deserializer<'de>,
}

impl<'de> EnumAccess<'de> for Variant<'_, 'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self)> {
        let name = seed.deserialize(&mut *self.de)?;
        Ok((name, self))
    }
}

impl<'de> VariantAccess<'de> for Variant<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<()> {
        de::Deserialize::deserialize(self.de)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(self.de)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_seq(self.de, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_map(self.de, visitor)
    }
}

/// An IEEE 754 half-precision float's value.
fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 == 0 { 1.0 } else { -1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => fraction * 2f64.powi(-24),
        31 if fraction == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + fraction / 1024.0) * 2f64.powi(e - 15),
    }
}

/// kube-apiserver's CBOR encoding of JSON values, for tests.
#[cfg(test)]
pub(crate) mod test_encode {
    use super::SELF_DESCRIBED;
    use serde_json::Value;

    /// A head of major type `major` with argument `arg`, in its shortest form.
    fn head(out: &mut Vec<u8>, major: u8, arg: u64) {
        let m = major << 5;
        match arg {
            0..=23 => out.push(m | arg as u8),
            24..=0xff => out.extend([m | 24, arg as u8]),
            0x100..=0xffff => {
                out.push(m | 25);
                out.extend((arg as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                out.push(m | 26);
                out.extend((arg as u32).to_be_bytes());
            }
            _ => {
                out.push(m | 27);
                out.extend(arg.to_be_bytes());
            }
        }
    }

    /// `value` as kube-apiserver encodes unstructured content: strings and keys as byte
    /// strings, integers as integers, other numbers as 64-bit floats.
    fn encode_value(out: &mut Vec<u8>, value: &Value) {
        match value {
            Value::Null => out.push(0xf6),
            Value::Bool(b) => out.push(if *b { 0xf5 } else { 0xf4 }),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => head(out, 0, u),
                (None, Some(i)) => head(out, 1, (-1 - i) as u64),
                _ => {
                    out.push(0xfb);
                    out.extend(n.as_f64().unwrap().to_bits().to_be_bytes());
                }
            },
            Value::String(s) => {
                head(out, 2, s.len() as u64);
                out.extend(s.as_bytes());
            }
            Value::Array(items) => {
                head(out, 4, items.len() as u64);
                items.iter().for_each(|v| encode_value(out, v));
            }
            Value::Object(map) => {
                head(out, 5, map.len() as u64);
                for (k, v) in map {
                    head(out, 2, k.len() as u64);
                    out.extend(k.as_bytes());
                    encode_value(out, v);
                }
            }
        }
    }

    /// `value` as one self-described item.
    pub(crate) fn encode(value: &Value) -> Vec<u8> {
        let mut out = SELF_DESCRIBED.to_vec();
        encode_value(&mut out, value);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::test_encode::encode;
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "web", "namespace": "demo", "uid": "u-1", "resourceVersion": "42",
                "creationTimestamp": "2026-12-01T10:00:00Z",
                "labels": {"app": "web"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                                   "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {"containers": [{"name": "app", "image": "nginx",
                                     "ports": [{"containerPort": 80}],
                                     "resources": {"limits": {"cpu": "500m"}}}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}
        })
    }

    #[test]
    fn a_pod_decodes_from_kube_apiserver_cbor_as_from_its_json() {
        let from_json: Pod = serde_json::from_value(pod()).unwrap();
        let from_cbor: Pod = from_slice(&encode(&pod())).unwrap();
        assert_eq!(from_cbor, from_json);
    }

    #[test]
    fn managed_fields_are_left_out_of_the_object_and_nowhere_else() {
        let mut value = pod();
        // A key of that name elsewhere is data, not the server's records.
        value["spec"]["managedFields"] = json!("kept");
        let skip = DecodeOptions {
            skip_managed_fields: true,
        };
        let decoded: Value = from_slice_with(&encode(&value), skip).unwrap();
        assert_eq!(decoded["metadata"].get("managedFields"), None);
        assert_eq!(decoded["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(decoded["spec"]["managedFields"], json!("kept"));
        let kept: Pod = from_slice(&encode(&value)).unwrap();
        assert_eq!(kept.metadata.managed_fields.unwrap().len(), 1);
    }

    #[test]
    fn a_raw_json_value_receives_the_item_as_json_text() {
        #[derive(serde::Deserialize)]
        struct Holder {
            kept: Box<serde_json::value::RawValue>,
            name: String,
        }
        let body = encode(&json!({"name": "a", "kept": {"list": [1, "x", null, 2.5]}}));
        let holder: Holder = from_slice(&body).unwrap();
        assert_eq!(holder.kept.get(), r#"{"list":[1,"x",null,2.5]}"#);
        assert_eq!(holder.name, "a");
    }

    #[test]
    fn tag_22_gives_base64_text_as_json_carries_bytes() {
        // {"data": {"k": 22(h'00ff')}}: a Secret's []byte as kube-apiserver writes it.
        let mut body = SELF_DESCRIBED.to_vec();
        body.extend([0xa2, 0x44]);
        body.extend(b"kind");
        body.extend([0x46]);
        body.extend(b"Secret");
        body.extend([0x44]);
        body.extend(b"data");
        body.extend([0xa1, 0x41, b'k', 0xd6, 0x42, 0x00, 0xff]);
        let secret: Secret = from_slice(&body).unwrap();
        assert_eq!(secret.data.unwrap()["k"].0, vec![0x00, 0xff]);
        let value: Value = from_slice(&body).unwrap();
        assert_eq!(value["data"]["k"], json!("AP8="));
    }

    #[test]
    fn half_single_and_double_floats_negative_and_large_integers_decode() {
        // [1.5 (f16), 100000.0 (f32), 0.1 (f64), -500, 2^64-1]
        let mut body = vec![0x85, 0xf9, 0x3e, 0x00, 0xfa, 0x47, 0xc3, 0x50, 0x00, 0xfb];
        body.extend(0.1f64.to_bits().to_be_bytes());
        body.extend([0x39, 0x01, 0xf3, 0x1b]);
        body.extend(u64::MAX.to_be_bytes());
        let (a, b, c, d, e): (f64, f64, f64, i64, u64) = from_slice(&body).unwrap();
        assert_eq!((a, b, c, d, e), (1.5, 100000.0, 0.1, -500, u64::MAX));
        assert_eq!(f16_to_f64(0x7c00), f64::INFINITY);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
    }

    #[test]
    fn indefinite_strings_arrays_and_maps_decode() {
        // {_ "a": [_ 1, 2], "b": (_ h'6869', h'21')}
        let body = [
            0xbf, 0x61, b'a', 0x9f, 0x01, 0x02, 0xff, 0x61, b'b', 0x5f, 0x42, b'h', b'i', 0x41,
            b'!', 0xff, 0xff,
        ];
        let value: Value = from_slice(&body).unwrap();
        assert_eq!(value, json!({"a": [1, 2], "b": "hi!"}));
        assert_eq!(item_len(&body).unwrap(), Some(body.len()));
    }

    #[test]
    fn item_len_waits_for_a_whole_item_and_rejects_garbage() {
        let one = encode(&json!({"type": "ADDED", "object": {"a": "b"}}));
        let mut two = one.clone();
        two.extend(&one);
        assert_eq!(item_len(&two).unwrap(), Some(one.len()));
        for cut in 0..one.len() {
            assert_eq!(item_len(&one[..cut]).unwrap(), None, "cut at {cut}");
        }
        // 0x1c: a reserved additional information.
        assert!(item_len(&[0x1c]).is_err());
        assert!(item_len(&[0xff]).is_err());
    }

    #[test]
    fn a_scanner_keeps_what_it_read_of_an_item_across_chunks() {
        let big = json!({"items": (0..200).map(|i| json!({"n": i, "s": "x".repeat(i)})).collect::<Vec<_>>()});
        let body = encode(&big);
        let mut scanner = ItemScanner::default();
        assert_eq!(scanner.scan(&body[..body.len() / 2]).unwrap(), None);
        // Resumed, not started over: the first half is behind it.
        assert!(
            scanner.pos > body.len() / 4,
            "{} of {}",
            scanner.pos,
            body.len()
        );
        assert_eq!(scanner.scan(&body).unwrap(), Some(body.len()));
        // Then the next item starts from the beginning of the buffer it is given.
        assert_eq!(scanner.scan(&body).unwrap(), Some(body.len()));
        // Indefinite arrays, maps and strings, and tags, across every cut.
        let mut odd = vec![
            0x9f, 0xbf, 0x61, b'k', 0x7f, 0x61, b'v', 0x62, b'w', b'x', 0xff,
        ];
        odd.extend([0xff, 0xc6, 0x82, 0x01, 0x5f, 0x41, 0x00, 0xff, 0xff]);
        let mut scanner = ItemScanner::default();
        for cut in 0..odd.len() {
            assert_eq!(scanner.scan(&odd[..cut]).unwrap(), None, "cut at {cut}");
        }
        assert_eq!(scanner.scan(&odd).unwrap(), Some(odd.len()));
        // A text string's chunk inside a byte string's indefinite string.
        let foreign = [0x5f, 0x61, b'a', 0xff];
        assert!(item_len(&foreign).is_err());
    }

    #[test]
    fn malformed_input_is_an_error_naming_its_offset_never_a_panic() {
        // An array claiming 2^32 elements in 5 bytes: refused before any allocation.
        let err = from_slice::<Vec<u8>>(&[0x9a, 0xff, 0xff, 0xff, 0xff]).unwrap_err();
        assert!(err.to_string().contains("runs past the input"), "{err}");
        let err = from_slice::<String>(&[0x62, 0xff, 0xfe]).unwrap_err();
        assert!(err.to_string().contains("invalid UTF-8"), "{err}");
        let err = from_slice::<u8>(&[0x01, 0x02]).unwrap_err();
        assert!(
            err.to_string()
                .contains("bytes after the data item at byte 1"),
            "{err}"
        );
        let deep = vec![0x81; MAX_DEPTH + 2];
        assert!(
            from_slice::<Value>(&deep)
                .unwrap_err()
                .to_string()
                .contains("nested")
        );
        assert!(item_len(&deep).is_err());
        let err = from_slice::<ConfigMap>(&encode(&json!({"data": {"k": 1}}))).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }

    #[test]
    fn map_entries_and_array_items_give_each_values_bytes() {
        let body = encode(&json!({"items": [{"a": 1}, "x"], "metadata": {"resourceVersion": "7"}}));
        let entries = map_entries(&body).unwrap();
        let items = array_items(entry(&entries, "items").unwrap()).unwrap();
        assert_eq!(from_slice::<Value>(items[0]).unwrap(), json!({"a": 1}));
        assert_eq!(from_slice::<Value>(items[1]).unwrap(), json!("x"));
        let metadata: Value = from_slice(entry(&entries, "metadata").unwrap()).unwrap();
        assert_eq!(metadata, json!({"resourceVersion": "7"}));
        assert!(entry(&entries, "kind").is_none());
        assert!(map_entries(&encode(&json!([1]))).is_err());
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e300f64..1e300).prop_map(Value::from),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_json_value_decodes_from_its_cbor_to_itself(value in json_value()) {
            let body = encode(&value);
            prop_assert_eq!(from_slice::<Value>(&body).unwrap(), value);
            prop_assert_eq!(item_len(&body).unwrap(), Some(body.len()));
        }

        #[test]
        fn any_cut_or_corrupted_item_is_an_error_or_a_value_never_a_panic(
            value in json_value(),
            cut in any::<prop::sample::Index>(),
            flip in any::<(prop::sample::Index, u8)>(),
        ) {
            let body = encode(&value);
            let cut = cut.index(body.len());
            prop_assert!(from_slice::<Value>(&body[..cut]).is_err());
            prop_assert_eq!(item_len(&body[..cut]).unwrap_or(None), None);
            let mut corrupted = body.clone();
            let at = flip.0.index(corrupted.len());
            corrupted[at] ^= flip.1;
            let _ = from_slice::<Value>(&corrupted);
            let _ = item_len(&corrupted);
            let _ = map_entries(&corrupted);
        }

        #[test]
        fn a_scanner_fed_in_chunks_finds_each_item_where_one_pass_does(
            values in prop::collection::vec(json_value(), 1..4),
            chunk in 1usize..64,
        ) {
            let items: Vec<Vec<u8>> = values.iter().map(encode).collect();
            let stream = items.concat();
            let mut scanner = ItemScanner::default();
            let (mut start, mut received, mut found) = (0, 0, Vec::new());
            while received < stream.len() {
                received = (received + chunk).min(stream.len());
                while let Some(len) = scanner.scan(&stream[start..received]).unwrap() {
                    found.push(len);
                    start += len;
                }
            }
            let lens: Vec<usize> = items.iter().map(Vec::len).collect();
            prop_assert_eq!(found, lens);
        }
    }
}
