//! The messages k8s-openapi holds as something other than a struct of their fields,
//! written by hand with the Go types' own rules: times, quantities, `IntOrString`, the
//! JSON-carrying `RawExtension`, `FieldsV1` and `JSON`, the `JSONSchemaPropsOr…` unions,
//! and the generic `List<T>` (`PodList`, … on the wire).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ListMeta, MicroTime, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use crate::runtime::{Decoder, Encoder, Error, Field, Message, Value, WireType, merge_message};

/// Go's zero `time.Time`, 0001-01-01T00:00:00Z, in Unix seconds: the JSON form is `null`.
const GO_ZERO_TIME: i64 = -62_135_596_800;

/// Go's zero time as a `Time`, the start of a message whose time field is required.
pub fn zero_time() -> Time {
    Time(Timestamp::new(GO_ZERO_TIME, 0).expect("year 1 is in jiff's range"))
}

/// Go's zero time as a `MicroTime`.
pub fn zero_micro_time() -> MicroTime {
    MicroTime(zero_time().0)
}

/// A `Timestamp` message's seconds and nanos, `None` for an empty message.
fn timestamp(d: &mut Decoder<'_>) -> Result<Option<(i64, i32)>, Error> {
    d.nested(|inner| {
        if inner.is_empty() {
            return Ok(None);
        }
        let (mut seconds, mut nanos) = (0i64, 0i32);
        while !inner.is_empty() {
            match inner.key()? {
                (1, wire) => Field::merge(&mut seconds, wire, inner)?,
                (2, wire) => Field::merge(&mut nanos, wire, inner)?,
                (_, wire) => inner.skip(wire)?,
            }
        }
        Ok(Some((seconds, nanos)))
    })
}

fn to_timestamp(seconds: i64, nanos: i32) -> Result<Timestamp, Error> {
    Timestamp::new(seconds, nanos)
        .map_err(|e| Error::new(format!("time {seconds}s {nanos}ns: {e}")))
}

fn encode_timestamp(seconds: i64, nanos: i32, e: &mut Encoder) {
    e.nested(|e| {
        Field::encode(&seconds, 1, e);
        Field::encode(&nanos, 2, e);
    });
}

/// A time `(seconds, nanos)` of a `Time` or `MicroTime` message, `None` for Go's zero time.
fn time_value(d: &mut Decoder<'_>) -> Result<Option<(i64, i32)>, Error> {
    Ok(timestamp(d)?.filter(|&(s, n)| !(s == GO_ZERO_TIME && n == 0)))
}

impl Value for Time {
    const WIRE: WireType = WireType::Len;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        // Go's Time keeps whole seconds only, as its JSON form does.
        let seconds = time_value(d)?.map_or(GO_ZERO_TIME, |(s, _)| s);
        to_timestamp(seconds, 0).map(Time)
    }

    fn decode_option(d: &mut Decoder<'_>) -> Result<Option<Self>, Error> {
        time_value(d)?
            .map(|(s, _)| to_timestamp(s, 0).map(Time))
            .transpose()
    }

    fn encode(&self, e: &mut Encoder) {
        encode_timestamp(self.0.as_second(), 0, e);
    }
}

impl Value for MicroTime {
    const WIRE: WireType = WireType::Len;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        let (s, n) = time_value(d)?.unwrap_or((GO_ZERO_TIME, 0));
        micro(s, n)
    }

    fn decode_option(d: &mut Decoder<'_>) -> Result<Option<Self>, Error> {
        time_value(d)?.map(|(s, n)| micro(s, n)).transpose()
    }

    fn encode(&self, e: &mut Encoder) {
        encode_timestamp(self.0.as_second(), self.0.subsec_nanosecond(), e);
    }
}

/// Go's MicroTime keeps microseconds, as its JSON form does.
fn micro(seconds: i64, nanos: i32) -> Result<MicroTime, Error> {
    to_timestamp(seconds, nanos - nanos % 1000).map(MicroTime)
}

/// A message whose one field (number 1) is the value.
fn single<T: Value + Default>(d: &mut Decoder<'_>) -> Result<T, Error> {
    d.nested(|inner| {
        let mut value = T::default();
        while !inner.is_empty() {
            match inner.key()? {
                (1, wire) => Field::merge(&mut value, wire, inner)?,
                (_, wire) => inner.skip(wire)?,
            }
        }
        Ok(value)
    })
}

impl Value for Quantity {
    const WIRE: WireType = WireType::Len;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        single::<String>(d).map(Quantity)
    }

    fn encode(&self, e: &mut Encoder) {
        e.nested(|e| Field::encode(&self.0, 1, e));
    }
}

impl Value for IntOrString {
    const WIRE: WireType = WireType::Len;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        d.nested(|inner| {
            let (mut ty, mut int, mut string) = (0i64, 0i32, String::new());
            while !inner.is_empty() {
                match inner.key()? {
                    (1, wire) => Field::merge(&mut ty, wire, inner)?,
                    (2, wire) => Field::merge(&mut int, wire, inner)?,
                    (3, wire) => Field::merge(&mut string, wire, inner)?,
                    (_, wire) => inner.skip(wire)?,
                }
            }
            match ty {
                0 => Ok(IntOrString::Int(int)),
                1 => Ok(IntOrString::String(string)),
                t => Err(Error::new(format!("IntOrString of unknown type {t}"))),
            }
        })
    }

    fn encode(&self, e: &mut Encoder) {
        let (ty, int, string) = match self {
            IntOrString::Int(i) => (0i64, *i, ""),
            IntOrString::String(s) => (1, 0, s.as_str()),
        };
        e.nested(|e| {
            Field::encode(&ty, 1, e);
            Field::encode(&int, 2, e);
            e.key(3, WireType::Len);
            e.bytes(string.as_bytes());
        });
    }
}

/// The JSON document in a message's `bytes` field 1, `None` when it is empty.
fn raw_json(d: &mut Decoder<'_>) -> Result<Option<serde_json::Value>, Error> {
    let raw: k8s_openapi::ByteString = single(d)?;
    if raw.0.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(&raw.0)
        .map(Some)
        .map_err(|e| Error::new(format!("raw bytes are not JSON: {e}")))
}

fn encode_raw_json(v: &serde_json::Value, e: &mut Encoder) {
    let raw = serde_json::to_vec(v).expect("a JSON value serializes");
    e.nested(|e| {
        e.key(1, WireType::Len);
        e.bytes(&raw);
    });
}

/// Implements [`Value`] for k8s-openapi's newtypes of a JSON value whose message holds the
/// JSON in bytes field 1.
macro_rules! raw_json_value {
    ($($ty:ty),*) => {$(
        impl Value for $ty {
            const WIRE: WireType = WireType::Len;

            fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
                Ok(Self(raw_json(d)?.unwrap_or_default()))
            }

            fn decode_option(d: &mut Decoder<'_>) -> Result<Option<Self>, Error> {
                Ok(raw_json(d)?.map(Self))
            }

            fn encode(&self, e: &mut Encoder) {
                encode_raw_json(&self.0, e);
            }
        }
    )*};
}

raw_json_value!(RawExtension, FieldsV1, apiext::JSON);

/// Reads a `JSONSchemaPropsOr…` message: its schema (if set) and its field 2.
fn schema_or<T: Default + Field>(
    d: &mut Decoder<'_>,
    schema_number: u32,
) -> Result<(Option<apiext::JSONSchemaProps>, T), Error> {
    d.nested(|inner| {
        let (mut schema, mut other) = (None, T::default());
        while !inner.is_empty() {
            match inner.key()? {
                (n, wire) if n == schema_number => Field::merge(&mut schema, wire, inner)?,
                (n, wire) if n == 3 - schema_number => Field::merge(&mut other, wire, inner)?,
                (_, wire) => inner.skip(wire)?,
            }
        }
        Ok((schema, other))
    })
}

/// Implements [`Value`] for the unions of a schema (field 1) and a list (field 2) whose
/// Go JSON form is the list when it has items, else the schema, else `null`.
macro_rules! list_or_schema {
    ($($ty:ident :: $list:ident (Vec<$item:ty>)),*) => {$(
        impl Value for apiext::$ty {
            const WIRE: WireType = WireType::Len;

            fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
                Ok(Self::decode_option(d)?.unwrap_or(Self::$list(Vec::new())))
            }

            fn decode_option(d: &mut Decoder<'_>) -> Result<Option<Self>, Error> {
                let (schema, list): (_, Vec<$item>) = schema_or(d, 1)?;
                Ok(if !list.is_empty() {
                    Some(Self::$list(list))
                } else {
                    schema.map(|s| Self::Schema(Box::new(s)))
                })
            }

            fn encode(&self, e: &mut Encoder) {
                e.nested(|e| match self {
                    Self::Schema(s) => Field::encode(&**s, 1, e),
                    Self::$list(v) => Field::encode(v, 2, e),
                });
            }
        }
    )*};
}

list_or_schema!(
    JSONSchemaPropsOrArray::Schemas(Vec<apiext::JSONSchemaProps>),
    JSONSchemaPropsOrStringArray::Strings(Vec<String>)
);

impl Value for apiext::JSONSchemaPropsOrBool {
    const WIRE: WireType = WireType::Len;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        // Go's JSON form: the schema when set, else the boolean.
        let (schema, allows): (_, bool) = schema_or(d, 2)?;
        Ok(match schema {
            Some(s) => Self::Schema(Box::new(s)),
            None => Self::Bool(allows),
        })
    }

    fn encode(&self, e: &mut Encoder) {
        e.nested(|e| match self {
            Self::Bool(b) => Field::encode(b, 1, e),
            Self::Schema(s) => {
                Field::encode(&true, 1, e);
                Field::encode(&**s, 2, e);
            }
        });
    }
}

/// Implements [`Value`] for a message without fields (an empty Go struct), which
/// k8s-openapi holds as a JSON value, `{}` (the generated code invokes it).
#[macro_export]
#[doc(hidden)]
macro_rules! empty_message_value {
    ($name:literal, $ty:ty) => {
        impl $crate::runtime::Value for $ty {
            const WIRE: $crate::runtime::WireType = $crate::runtime::WireType::Len;

            fn decode(
                d: &mut $crate::runtime::Decoder<'_>,
            ) -> Result<Self, $crate::runtime::Error> {
                d.nested(|inner| {
                    while !inner.is_empty() {
                        let (_, wire) = inner.key()?;
                        inner.skip(wire)?;
                    }
                    Ok(Self(k8s_openapi::serde_json::Value::Object(
                        Default::default(),
                    )))
                })
            }

            fn encode(&self, e: &mut $crate::runtime::Encoder) {
                e.nested(|_| {});
            }
        }
    };
}

impl<T: Value> Value for Box<T> {
    const WIRE: WireType = T::WIRE;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        T::decode(d).map(Box::new)
    }

    fn merge_into(&mut self, d: &mut Decoder<'_>) -> Result<(), Error> {
        (**self).merge_into(d)
    }

    fn encode(&self, e: &mut Encoder) {
        (**self).encode(e);
    }
}

/// `PodList`, `DeploymentList`, …: every Kubernetes list message is `metadata = 1`,
/// `items = 2` (the generator checks it).
impl<T: k8s_openapi::ListableResource + Value> Message for k8s_openapi::List<T> {
    const NAME: &'static str = "a list";

    fn empty() -> Self {
        k8s_openapi::List {
            items: Vec::new(),
            metadata: ListMeta::default(),
        }
    }

    fn merge_field(
        &mut self,
        number: u32,
        wire: WireType,
        d: &mut Decoder<'_>,
    ) -> Result<(), Error> {
        match number {
            1 => Field::merge(&mut self.metadata, wire, d),
            2 => Field::merge(&mut self.items, wire, d),
            _ => d.skip(wire),
        }
    }

    fn encode_fields(&self, e: &mut Encoder) {
        Field::encode(&self.metadata, 1, e);
        Field::encode(&self.items, 2, e);
    }
}

impl<T: k8s_openapi::ListableResource + Value> Value for k8s_openapi::List<T> {
    const WIRE: WireType = WireType::Len;

    fn decode(d: &mut Decoder<'_>) -> Result<Self, Error> {
        let mut list = Self::empty();
        list.merge_into(d)?;
        Ok(list)
    }

    fn merge_into(&mut self, d: &mut Decoder<'_>) -> Result<(), Error> {
        d.nested(|inner| merge_message(self, inner))
    }

    fn encode(&self, e: &mut Encoder) {
        e.nested(|e| self.encode_fields(e));
    }
}
