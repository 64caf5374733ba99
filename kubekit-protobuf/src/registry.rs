//! The codecs of k8s-openapi's resource types, found by a type's `TypeId`: generic code
//! (`K: DeserializeOwned + 'static`) asks whether `K` has a protobuf form and uses it
//! without knowing which type it is. Custom resources and every other type have none.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::LazyLock;

use k8s_openapi::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};

use crate::envelope::{Unknown, decode_message_with, encode};
use crate::runtime::{DecodeOptions, Decoder, Error, Field, Message, WireType};

/// The protobuf codec of one resource type.
#[derive(Debug)]
pub struct Codec {
    api_version: &'static str,
    kind: &'static str,
    type_id: TypeId,
    decode: fn(&[u8], DecodeOptions, &mut dyn Any) -> Result<(), Error>,
    encode: fn(&dyn Any) -> Option<Vec<u8>>,
}

/// Where the generated code registers each resource type.
#[derive(Default)]
pub(crate) struct Registry(HashMap<TypeId, Codec>);

impl Registry {
    /// Registers `T`.
    pub(crate) fn resource<T: Resource + Message + Any>(&mut self) {
        fn decode<T: Message + Any>(
            raw: &[u8],
            options: DecodeOptions,
            slot: &mut dyn Any,
        ) -> Result<(), Error> {
            let slot = slot.downcast_mut::<Option<T>>().ok_or_else(|| {
                Error::new(format!(
                    "the codec of {} was asked for another type",
                    T::NAME
                ))
            })?;
            *slot = Some(decode_message_with::<T>(raw, options)?);
            Ok(())
        }
        fn encode_any<T: Resource + Message + Any>(value: &dyn Any) -> Option<Vec<u8>> {
            value.downcast_ref::<T>().map(encode)
        }
        let codec = Codec {
            api_version: T::API_VERSION,
            kind: T::KIND,
            type_id: TypeId::of::<T>(),
            decode: decode::<T>,
            encode: encode_any::<T>,
        };
        self.0.insert(TypeId::of::<T>(), codec);
    }
}

static REGISTRY: LazyLock<HashMap<TypeId, Codec>> = LazyLock::new(|| {
    let mut registry = Registry::default();
    crate::generated::register(&mut registry);
    registry.0
});

/// The codec of `K`, if it is a k8s-openapi resource type (of the Kubernetes version the
/// program picked).
pub fn codec<K: Any>() -> Option<&'static Codec> {
    REGISTRY.get(&TypeId::of::<K>())
}

impl Codec {
    /// The `apiVersion` of the type, `apps/v1`.
    pub fn api_version(&self) -> &'static str {
        self.api_version
    }

    /// The kind of the type, `Deployment`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Decodes a message (no envelope) as a `K`, which must be this codec's type.
    pub fn decode_message<K: Any>(&self, raw: &[u8]) -> Result<K, Error> {
        self.decode_message_with(raw, DecodeOptions::default())
    }

    /// [`decode_message`](Self::decode_message), leaving out what `options` say.
    pub fn decode_message_with<K: Any>(
        &self,
        raw: &[u8],
        options: DecodeOptions,
    ) -> Result<K, Error> {
        if TypeId::of::<K>() != self.type_id {
            return Err(Error::new(format!(
                "the codec of {} was asked for another type",
                self.kind
            )));
        }
        let mut slot: Option<K> = None;
        (self.decode)(raw, options, &mut slot)?;
        slot.ok_or_else(|| Error::new("the codec gave no value"))
    }

    /// Decodes an enveloped object as a `K`, checking that the envelope names its kind.
    pub fn decode<K: Any>(&self, bytes: &[u8]) -> Result<K, Error> {
        self.decode_with(bytes, DecodeOptions::default())
    }

    /// [`decode`](Self::decode), leaving out what `options` say.
    pub fn decode_with<K: Any>(&self, bytes: &[u8], options: DecodeOptions) -> Result<K, Error> {
        let unknown = Unknown::read(bytes)?;
        self.check(&unknown)?;
        self.decode_message_with(unknown.raw, options)
    }

    /// Whether an envelope holds this codec's kind, as an error naming both if not.
    pub fn check(&self, unknown: &Unknown<'_>) -> Result<(), Error> {
        unknown.expect(self.api_version, self.kind)
    }

    /// Encodes `value`, which must be this codec's type, in an envelope; `None` if it is
    /// another type.
    pub fn encode<K: Any>(&self, value: &K) -> Option<Vec<u8>> {
        (self.encode)(value)
    }
}

/// The `metadata` (field 1 of every Kubernetes object message) of an object's message,
/// without decoding the rest: what a watch bookmark carries.
pub fn object_meta(raw: &[u8]) -> Result<ObjectMeta, Error> {
    field_one(raw)
}

/// A list message's `metadata` and its items' messages, not yet decoded.
pub fn list_parts(raw: &[u8]) -> Result<(ListMeta, Vec<&[u8]>), Error> {
    let mut d = Decoder::new(raw);
    let (mut metadata, mut items) = (ListMeta::default(), Vec::new());
    while !d.is_empty() {
        match d.key()? {
            (1, wire) => {
                Field::merge(&mut metadata, wire, &mut d).map_err(|e| e.within("a list", 1))?
            }
            (2, WireType::Len) => items.push(d.len_delimited()?),
            (_, wire) => d.skip(wire)?,
        }
    }
    Ok((metadata, items))
}

/// Field 1 of a message, decoded as a `T`; the other fields skipped.
fn field_one<T: Message + Default + crate::runtime::Value>(raw: &[u8]) -> Result<T, Error> {
    let mut d = Decoder::new(raw);
    let mut value = T::default();
    while !d.is_empty() {
        match d.key()? {
            (1, wire) => {
                Field::merge(&mut value, wire, &mut d).map_err(|e| e.within("an object", 1))?
            }
            (_, wire) => d.skip(wire)?,
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};

    #[test]
    fn resources_have_a_codec_and_other_types_none() {
        assert_eq!(codec::<Pod>().map(Codec::kind), Some("Pod"));
        assert!(codec::<ObjectMeta>().is_none());
        assert!(codec::<String>().is_none());
    }

    #[test]
    fn a_codec_decodes_only_its_own_type() {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("x".into());
        let bytes = encode(&cm);
        let cm_codec = codec::<ConfigMap>().unwrap();
        assert_eq!(cm_codec.decode::<ConfigMap>(&bytes).unwrap(), cm);
        assert!(cm_codec.decode::<Pod>(&bytes).is_err());
        let err = codec::<Pod>().unwrap().decode::<Pod>(&bytes).unwrap_err();
        assert!(err.to_string().contains("expected v1 Pod"), "{err}");
        assert_eq!(cm_codec.encode(&cm), Some(bytes));
        assert_eq!(cm_codec.encode(&Pod::default()), None);
    }

    #[test]
    fn a_list_splits_into_metadata_and_item_messages_and_an_object_gives_its_metadata() {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("x".into());
        let list = k8s_openapi::List {
            items: vec![cm.clone(), cm.clone()],
            metadata: ListMeta {
                resource_version: Some("7".into()),
                ..Default::default()
            },
        };
        let bytes = encode(&list);
        let (metadata, items) = list_parts(Unknown::read(&bytes).unwrap().raw).unwrap();
        assert_eq!(metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(items.len(), 2);
        assert_eq!(object_meta(items[0]).unwrap().name.as_deref(), Some("x"));
    }
}
