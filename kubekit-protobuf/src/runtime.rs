//! The wire format and the traits the generated code is written against.
//!
//! A generated [`Message`] implementation says, for each field number, which Rust field it
//! fills; the Rust field's type says the rest: [`Value`] is one protobuf value (a scalar, a
//! string, bytes or a message), and [`Field`] the container k8s-openapi holds it in (`T`,
//! `Option<T>`, `Vec<T>`, `Option<Vec<T>>`, a `BTreeMap<String, V>`). So a field that is
//! optional in one k8s-openapi version and required in another needs no generated
//! difference.
//!
//! Decoding is bounded: every length is checked against what is left of the input before
//! anything is allocated, so an absurd length prefix is an error, not an allocation, and
//! messages nest at most [`MAX_DEPTH`] deep.

use std::collections::BTreeMap;
use std::fmt;

/// How deep messages may nest in one input. A CRD's schema is the deepest thing the API
/// holds; 128 is serde_json's recursion limit, which the JSON form of the same object meets.
pub const MAX_DEPTH: u32 = 128;

/// The wire types Kubernetes' messages use (groups are not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireType {
    /// Integers and booleans.
    Varint = 0,
    /// `double`.
    Fixed64 = 1,
    /// Strings, bytes, messages, packed repeated scalars.
    Len = 2,
    /// `float`.
    Fixed32 = 5,
}

/// A protobuf input that could not be decoded: what was wrong, and where (the fields that
/// lead to it, outermost first).
///
/// Boxed, so that a `Result` of the decoder is a pointer wide: every field read returns
/// one, and the generated code moves them on every `?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorInner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct ErrorInner {
    message: String,
    path: Vec<(&'static str, u32)>,
}

impl Error {
    /// An error with `message` and no position yet.
    pub fn new(message: impl Into<String>) -> Self {
        Error(Box::new(ErrorInner {
            message: message.into(),
            path: Vec::new(),
        }))
    }

    /// The error as met inside field `number` of message `name`.
    #[must_use]
    pub fn within(mut self, name: &'static str, number: u32) -> Self {
        self.0.path.insert(0, (name, number));
        self
    }

    /// What was wrong, without the position.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("protobuf: ")?;
        for (name, number) in &self.0.path {
            write!(f, "field {number} of {name}: ")?;
        }
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Error {}

/// What a decoder may leave out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Skip `metadata.managedFields` (the server's field-ownership records, often half of
    /// an object's memory once decoded): they come out `None`.
    pub skip_managed_fields: bool,
}

/// Reads protobuf fields from a byte slice.
#[derive(Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    depth: u32,
    options: DecodeOptions,
    /// The last key read, as encoded.
    last_key: u64,
}

impl<'a> Decoder<'a> {
    /// A decoder of `buf`, at depth 0.
    pub fn new(buf: &'a [u8]) -> Self {
        Self::with_options(buf, DecodeOptions::default())
    }

    /// A decoder of `buf` that leaves out what `options` say.
    pub fn with_options(buf: &'a [u8], options: DecodeOptions) -> Self {
        Decoder {
            buf,
            depth: 0,
            options,
            last_key: 0,
        }
    }

    /// What this decoder leaves out.
    pub fn options(&self) -> DecodeOptions {
        self.options
    }

    /// The input not yet read.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    /// Whether all input is read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// A varint (at most 10 bytes).
    pub fn varint(&mut self) -> Result<u64, Error> {
        let mut value = 0u64;
        for (i, &b) in self.buf.iter().enumerate().take(10) {
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                self.buf = &self.buf[i + 1..];
                return Ok(value);
            }
        }
        Err(Error::new(if self.buf.len() < 10 {
            "truncated varint"
        } else {
            "varint longer than 10 bytes"
        }))
    }

    /// A field's key: its number and wire type.
    pub fn key(&mut self) -> Result<(u32, WireType), Error> {
        let key = self.varint()?;
        self.last_key = key;
        let number = u32::try_from(key >> 3)
            .map_err(|_| Error::new(format!("field number {} out of range", key >> 3)))?;
        if number == 0 {
            return Err(Error::new("field number 0"));
        }
        let wire = match key & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            5 => WireType::Fixed32,
            w => {
                return Err(Error::new(format!(
                    "field {number}: wire type {w} is not supported"
                )));
            }
        };
        Ok((number, wire))
    }

    /// `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if n > self.buf.len() {
            return Err(Error::new(format!(
                "length {n} runs past the end of the input ({} bytes left)",
                self.buf.len()
            )));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// A length-delimited value's bytes.
    pub fn len_delimited(&mut self) -> Result<&'a [u8], Error> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| Error::new(format!("length {n} out of range")))?;
        self.take(n)
    }

    /// Runs `f` on a decoder of the next length-delimited value, one level deeper; the
    /// value must be read whole.
    pub fn nested<T>(
        &mut self,
        f: impl FnOnce(&mut Decoder<'a>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut inner = self.enter()?;
        let value = f(&mut inner)?;
        inner.leave()?;
        Ok(value)
    }

    /// A decoder of the next length-delimited value, one level deeper: the part of
    /// [`nested`](Self::nested) that is the same for every value, compiled once rather
    /// than for each of the generated messages.
    fn enter(&mut self) -> Result<Decoder<'a>, Error> {
        let depth = self.depth + 1;
        if depth > MAX_DEPTH {
            return Err(Error::new(format!("messages nest deeper than {MAX_DEPTH}")));
        }
        let buf = self.len_delimited()?;
        Ok(Decoder {
            buf,
            depth,
            options: self.options,
            last_key: 0,
        })
    }

    /// Checks that a nested value was read whole.
    fn leave(&self) -> Result<(), Error> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(Error::new("a value was not read whole"))
        }
    }

    /// Reads a field of wire type `wire` that holds the fields of an embedded Go struct,
    /// passing each (number, wire type) to `field`.
    pub fn embedded(
        &mut self,
        wire: WireType,
        mut field: impl FnMut(u32, WireType, &mut Decoder<'a>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        expect_wire(wire, WireType::Len)?;
        self.nested(|inner| {
            while !inner.is_empty() {
                let (number, wire) = inner.key()?;
                field(number, wire, inner)?;
            }
            Ok(())
        })
    }

    /// How many values of the field whose key was just read, of wire type `wire`, follow
    /// one another from here, this one included (at least 1): a repeated field's length,
    /// so that its list is allocated once. Go writes a repeated field's values together.
    pub fn repeats(&self, wire: WireType) -> usize {
        let mut ahead = Decoder { ..*self };
        let mut n = 0;
        while ahead.skip(wire).is_ok() {
            n += 1;
            if ahead.varint().ok() != Some(self.last_key) {
                break;
            }
        }
        n.max(1)
    }

    /// Skips a value of an unknown field.
    pub fn skip(&mut self, wire: WireType) -> Result<(), Error> {
        match wire {
            WireType::Varint => self.varint().map(drop),
            WireType::Fixed64 => self.take(8).map(drop),
            WireType::Fixed32 => self.take(4).map(drop),
            WireType::Len => self.len_delimited().map(drop),
        }
    }

    /// A `fixed64` value.
    fn fixed64(&mut self) -> Result<u64, Error> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// A `fixed32` value.
    fn fixed32(&mut self) -> Result<u32, Error> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
}

/// Writes protobuf fields to a growing buffer.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// An encoder that appends to `buf`.
    pub fn new(buf: Vec<u8>) -> Self {
        Encoder { buf }
    }

    /// The bytes written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// A varint.
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// A field's key.
    pub fn key(&mut self, number: u32, wire: WireType) {
        self.varint((u64::from(number) << 3) | wire as u64);
    }

    /// Bytes already encoded: whole fields copied from another message.
    pub fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// A length-delimited value.
    pub fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// A length-delimited value that `f` writes: a message, a map entry.
    pub fn nested(&mut self, f: impl FnOnce(&mut Encoder)) {
        let start = self.open();
        f(self);
        self.close(start);
    }

    /// Makes room for a length prefix and returns where it is: the start of
    /// [`nested`](Self::nested), compiled once rather than for each message.
    fn open(&mut self) -> usize {
        self.buf.push(0);
        self.buf.len() - 1
    }

    /// Writes the length of what follows the prefix at `start`.
    fn close(&mut self, start: usize) {
        let len = self.buf.len() - start - 1;
        if len < 0x80 {
            self.buf[start] = len as u8;
        } else {
            let mut prefix = Encoder::default();
            prefix.varint(len as u64);
            self.buf.splice(start..=start, prefix.buf);
        }
    }
}

/// A message: what the generated code implements for each k8s-openapi struct.
pub trait Message {
    /// The message's qualified proto name, for errors.
    const NAME: &'static str;

    /// The message with no field set (its Go zero value), which decoding starts from.
    fn empty() -> Self;

    /// Decodes field `number` (of wire type `wire`) into `self`; unknown fields are skipped.
    fn merge_field(
        &mut self,
        number: u32,
        wire: WireType,
        d: &mut Decoder<'_>,
    ) -> Result<(), Error>;

    /// Writes every set field, in field-number order.
    fn encode_fields(&self, e: &mut Encoder);
}

/// A [`Message`] behind `dyn`: what the field loop that every message shares calls, so
/// that the loop is compiled once rather than for each message.
trait Fields {
    fn name(&self) -> &'static str;
    fn merge_field(
        &mut self,
        number: u32,
        wire: WireType,
        d: &mut Decoder<'_>,
    ) -> Result<(), Error>;
}

impl<M: Message> Fields for M {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn merge_field(
        &mut self,
        number: u32,
        wire: WireType,
        d: &mut Decoder<'_>,
    ) -> Result<(), Error> {
        Message::merge_field(self, number, wire, d)
    }
}

/// Decodes the fields in `d` into `m`, as protobuf merges a message into one already read.
pub fn merge_message<M: Message>(m: &mut M, d: &mut Decoder<'_>) -> Result<(), Error> {
    merge_fields(m, d)
}

/// Decodes the next length-delimited value in `d` into `m`, as [`merge_message`] does the
/// fields of a whole decoder: a message embedded in another.
pub fn merge_nested<M: Message>(m: &mut M, d: &mut Decoder<'_>) -> Result<(), Error> {
    merge_nested_fields(m, d)
}

/// Writes `m` as a length-delimited value (without its key): a message embedded in
/// another.
pub fn encode_nested<M: Message>(m: &M, e: &mut Encoder) {
    let start = e.open();
    m.encode_fields(e);
    e.close(start);
}

/// [`merge_nested`], compiled once rather than for each message.
fn merge_nested_fields(m: &mut dyn Fields, d: &mut Decoder<'_>) -> Result<(), Error> {
    d.nested(|inner| merge_fields(m, inner))
}

/// [`merge_message`]'s loop over the fields, compiled once rather than for each message.
fn merge_fields(m: &mut dyn Fields, d: &mut Decoder<'_>) -> Result<(), Error> {
    while !d.is_empty() {
        let (number, wire) = d.key()?;
        m.merge_field(number, wire, d)
            .map_err(|e| e.within(m.name(), number))?;
    }
    Ok(())
}

/// One protobuf value of a known wire type.
pub trait Value: Sized {
    /// The wire type it is written with.
    const WIRE: WireType;

    /// Whether a repeated field of it may come packed (its values in one length-delimited
    /// record): scalars may, length-delimited values are never packed. A constant, so the
    /// packed path is not even compiled for a list of messages or strings.
    const PACKABLE: bool = !matches!(Self::WIRE, WireType::Len);

    /// Reads one value.
    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error>;

    /// Reads one value into `self`: messages merge, others replace.
    fn merge_into(&mut self, d: &mut Decoder<'_>) -> Result<(), Error> {
        *self = Self::decode(d)?;
        Ok(())
    }

    /// Reads one value of an optional field, `None` for what the JSON form gives as `null`
    /// (a zero `Time`, an empty `RawExtension`).
    fn decode_option(d: &mut Decoder<'_>) -> Result<Option<Self>, Error> {
        Self::decode(d).map(Some)
    }

    /// Writes the value (without its key).
    fn encode(&self, e: &mut Encoder);

    /// Whether it is the zero value, which a Go field that is not a pointer and has
    /// `omitempty` leaves out of JSON.
    fn is_zero(&self) -> bool {
        false
    }
}

/// Implements [`Value`] for a [`Message`] type (the generated code does it for each).
#[macro_export]
#[doc(hidden)]
macro_rules! message_value {
    ($ty:ty) => {
        impl $crate::runtime::Value for $ty {
            const WIRE: $crate::runtime::WireType = $crate::runtime::WireType::Len;

            fn decode(
                d: &mut $crate::runtime::Decoder<'_>,
            ) -> Result<Self, $crate::runtime::Error> {
                let mut m = <$ty as $crate::runtime::Message>::empty();
                $crate::runtime::Value::merge_into(&mut m, d)?;
                Ok(m)
            }

            fn merge_into(
                &mut self,
                d: &mut $crate::runtime::Decoder<'_>,
            ) -> Result<(), $crate::runtime::Error> {
                $crate::runtime::merge_nested(self, d)
            }

            #[inline]
            fn encode(&self, e: &mut $crate::runtime::Encoder) {
                $crate::runtime::encode_nested(self, e);
            }
        }
    };
}

impl Value for String {
    const WIRE: WireType = WireType::Len;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        // Invalid UTF-8 becomes U+FFFD, as the server's JSON encoder writes it. The strict
        // check first: it is several times faster than the lossy one on valid text.
        let bytes = d.len_delimited()?;
        Ok(match std::str::from_utf8(bytes) {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        })
    }

    fn encode(&self, e: &mut Encoder) {
        e.bytes(self.as_bytes());
    }

    fn is_zero(&self) -> bool {
        self.is_empty()
    }
}

impl Value for k8s_openapi::ByteString {
    const WIRE: WireType = WireType::Len;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        Ok(k8s_openapi::ByteString(d.len_delimited()?.to_vec()))
    }

    fn encode(&self, e: &mut Encoder) {
        e.bytes(&self.0);
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }
}

impl Value for bool {
    const WIRE: WireType = WireType::Varint;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        Ok(d.varint()? != 0)
    }

    fn encode(&self, e: &mut Encoder) {
        e.varint(u64::from(*self));
    }

    fn is_zero(&self) -> bool {
        !*self
    }
}

impl Value for i32 {
    const WIRE: WireType = WireType::Varint;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        // int32 is a varint of the sign-extended value; its low 32 bits are the number.
        Ok(d.varint()? as i32)
    }

    fn encode(&self, e: &mut Encoder) {
        e.varint(i64::from(*self) as u64);
    }

    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl Value for i64 {
    const WIRE: WireType = WireType::Varint;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        Ok(d.varint()? as i64)
    }

    fn encode(&self, e: &mut Encoder) {
        e.varint(*self as u64);
    }

    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl Value for f64 {
    const WIRE: WireType = WireType::Fixed64;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        Ok(f64::from_bits(d.fixed64()?))
    }

    fn encode(&self, e: &mut Encoder) {
        e.buf.extend_from_slice(&self.to_bits().to_le_bytes());
    }

    fn is_zero(&self) -> bool {
        *self == 0.0
    }
}

impl Value for f32 {
    const WIRE: WireType = WireType::Fixed32;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        Ok(f32::from_bits(d.fixed32()?))
    }

    fn encode(&self, e: &mut Encoder) {
        e.buf.extend_from_slice(&self.to_bits().to_le_bytes());
    }

    fn is_zero(&self) -> bool {
        *self == 0.0
    }
}

fn expect_wire(wire: WireType, want: WireType) -> Result<(), Error> {
    if wire == want {
        Ok(())
    } else {
        Err(Error::new(format!(
            "wire type {wire:?} where {want:?} was expected"
        )))
    }
}

/// The container a k8s-openapi struct holds a field's values in.
pub trait Field {
    /// Reads one occurrence of the field (of wire type `wire`).
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error>;

    /// Reads one occurrence of a field whose Go type is not a pointer and whose JSON tag
    /// has `omitempty`: for an `Option`, the zero value is `None`, as in the JSON form.
    fn merge_omit_empty(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        self.merge(wire, d)
    }

    /// Writes the field as number `number`, if it is set.
    fn encode(&self, number: u32, e: &mut Encoder);
}

impl<T: Value> Field for T {
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        expect_wire(wire, T::WIRE)?;
        self.merge_into(d)
    }

    fn encode(&self, number: u32, e: &mut Encoder) {
        e.key(number, T::WIRE);
        Value::encode(self, e);
    }
}

impl<T: Value> Field for Option<T> {
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        expect_wire(wire, T::WIRE)?;
        match self {
            Some(v) => v.merge_into(d),
            None => {
                *self = T::decode_option(d)?;
                Ok(())
            }
        }
    }

    fn merge_omit_empty(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        expect_wire(wire, T::WIRE)?;
        let v = T::decode(d)?;
        *self = (!v.is_zero()).then_some(v);
        Ok(())
    }

    fn encode(&self, number: u32, e: &mut Encoder) {
        if let Some(v) = self {
            Field::encode(v, number, e);
        }
    }
}

impl<T: Value> Field for Vec<T> {
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        if wire == T::WIRE {
            if self.capacity() == 0 {
                // Allocated once at its length, not grown by doubling: a list of
                // k8s-openapi structs wastes kilobytes per object otherwise.
                self.reserve_exact(d.repeats(wire));
            }
            self.push(T::decode(d)?);
            Ok(())
        } else if T::PACKABLE && wire == WireType::Len {
            // A packed list of scalars.
            d.nested(|inner| {
                while !inner.is_empty() {
                    self.push(T::decode(inner)?);
                }
                Ok(())
            })
        } else {
            expect_wire(wire, T::WIRE)
        }
    }

    fn encode(&self, number: u32, e: &mut Encoder) {
        for v in self {
            Field::encode(v, number, e);
        }
    }
}

impl<T: Value> Field for Option<Vec<T>> {
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        Field::merge(or_default(self), wire, d)
    }

    fn encode(&self, number: u32, e: &mut Encoder) {
        if let Some(v) = self {
            Field::encode(v, number, e);
        }
    }
}

/// The container in `option`, an empty one put there first if there is none: what
/// `get_or_insert_default` does, without the closure it would compile for each type.
fn or_default<C: Default>(option: &mut Option<C>) -> &mut C {
    match option {
        Some(c) => c,
        None => option.insert(C::default()),
    }
}

/// A value of a map field: a [`Value`], or a list that the proto wraps in a message of
/// one repeated field (`map<string, ExtraValue>` is k8s-openapi's
/// `BTreeMap<String, Vec<String>>`).
pub trait MapValue: Sized {
    /// Reads the entry's value (field 2 of the entry).
    fn decode_value(wire: WireType, d: &mut Decoder<'_>) -> Result<Self, Error>;

    /// The value of an entry that has none: the zero value, as Go reads it.
    fn zero() -> Result<Self, Error>;

    /// Writes the value as field 2 of an entry.
    fn encode_value(&self, e: &mut Encoder);
}

impl<T: Value> MapValue for T {
    fn decode_value(wire: WireType, d: &mut Decoder<'_>) -> Result<Self, Error> {
        expect_wire(wire, T::WIRE)?;
        T::decode(d)
    }

    fn zero() -> Result<Self, Error> {
        // Zero bytes are a zero of every wire type: 0, an empty string or message.
        const ZEROS: [u8; 8] = [0; 8];
        let n = match T::WIRE {
            WireType::Varint | WireType::Len => 1,
            WireType::Fixed64 => 8,
            WireType::Fixed32 => 4,
        };
        T::decode(&mut Decoder::new(&ZEROS[..n]))
    }

    fn encode_value(&self, e: &mut Encoder) {
        Field::encode(self, 2, e);
    }
}

impl MapValue for Vec<String> {
    fn decode_value(wire: WireType, d: &mut Decoder<'_>) -> Result<Self, Error> {
        let mut list = Vec::new();
        ListWrapper::merge(&mut list, wire, d)?;
        Ok(list)
    }

    fn zero() -> Result<Self, Error> {
        Ok(Vec::new())
    }

    fn encode_value(&self, e: &mut Encoder) {
        ListWrapper::encode(self, 2, e);
    }
}

impl<V: MapValue> Field for BTreeMap<String, V> {
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        expect_wire(wire, WireType::Len)?;
        let (key, value) = d.nested(|entry| {
            let (mut key, mut value) = (String::new(), None);
            while !entry.is_empty() {
                match entry.key()? {
                    (1, wire) => Field::merge(&mut key, wire, entry)?,
                    (2, wire) => {
                        value = Some(
                            V::decode_value(wire, entry).map_err(|e| e.within("map entry", 2))?,
                        )
                    }
                    (_, wire) => entry.skip(wire)?,
                }
            }
            Ok((key, value))
        })?;
        let value = match value {
            Some(v) => v,
            None => V::zero()?,
        };
        self.insert(key, value);
        Ok(())
    }

    fn encode(&self, number: u32, e: &mut Encoder) {
        for (key, value) in self {
            e.key(number, WireType::Len);
            e.nested(|e| {
                Field::encode(key, 1, e);
                value.encode_value(e);
            });
        }
    }
}

impl<V: MapValue> Field for Option<BTreeMap<String, V>> {
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        Field::merge(or_default(self), wire, d)
    }

    fn encode(&self, number: u32, e: &mut Encoder) {
        if let Some(m) = self {
            Field::encode(m, number, e);
        }
    }
}

/// A list the proto wraps in a message of one `repeated … items = 1` field (the Go type is
/// a named slice marked `+protobuf.nullable=true`: `Verbs`, `ExtraValue`), where
/// k8s-openapi holds the list itself.
pub trait ListWrapper {
    /// Reads the wrapping message.
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error>;

    /// Writes the wrapping message as field `number`, if the list is set.
    fn encode(&self, number: u32, e: &mut Encoder);
}

impl<T: Value> ListWrapper for Vec<T> {
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        expect_wire(wire, WireType::Len)?;
        d.nested(|inner| {
            while !inner.is_empty() {
                match inner.key()? {
                    (1, wire) => Field::merge(self, wire, inner)?,
                    (_, wire) => inner.skip(wire)?,
                }
            }
            Ok(())
        })
    }

    fn encode(&self, number: u32, e: &mut Encoder) {
        e.key(number, WireType::Len);
        e.nested(|e| Field::encode(self, 1, e));
    }
}

impl<T: Value> ListWrapper for Option<Vec<T>> {
    fn merge(&mut self, wire: WireType, d: &mut Decoder<'_>) -> Result<(), Error> {
        ListWrapper::merge(or_default(self), wire, d)
    }

    fn encode(&self, number: u32, e: &mut Encoder) {
        if let Some(v) = self {
            ListWrapper::encode(v, number, e);
        }
    }
}
