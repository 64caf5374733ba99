//! The codecs of k8s-openapi's resource types, found by a type's `TypeId`: generic code
//! (`K: DeserializeOwned + 'static`) asks whether `K` has a protobuf form and uses it
//! without knowing which type it is. Custom resources and every other type have none.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::LazyLock;

use k8s_openapi::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::envelope::{Unknown, decode_message_with, encode_raw};
use crate::runtime::{
    DecodeOptions, Decoder, Encoder, Error, Field, Message, WireType, merge_message,
};

/// Decodes a message into the `Option<W>` behind the `Any`.
type DecodeFn = dyn Fn(&[u8], DecodeOptions, &mut dyn Any) -> Result<(), Error> + Send + Sync;

/// Encodes the `W` behind the `Any` (its message, without the envelope); `None` if it is
/// another type.
type EncodeFn = dyn Fn(&dyn Any) -> Option<Vec<u8>> + Send + Sync;

/// The protobuf codec of one resource type, or of a type that holds one in a form of its
/// own ([`Codec::wrapping`]).
pub struct Codec {
    api_version: &'static str,
    kind: &'static str,
    type_id: TypeId,
    decode: Box<DecodeFn>,
    encode: Box<EncodeFn>,
}

impl fmt::Debug for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Codec")
            .field("api_version", &self.api_version)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// A k8s-openapi resource type that has a codec: what [`ResourceVisitor`] visits. Every
/// such type also has its JSON form (serde).
pub trait ResourceMessage:
    Resource + Message + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<T: Resource + Message + Serialize + DeserializeOwned + Send + Sync + 'static> ResourceMessage
    for T
{
}

/// What visits every resource type that has a codec: see [`for_each_resource`].
pub trait ResourceVisitor {
    /// Called once for each resource type `T`.
    fn visit<T: ResourceMessage>(&mut self);
}

/// Calls `visitor` with every k8s-openapi resource type that has a codec (of the
/// Kubernetes version the program picked): for code that keeps resources in a form of its
/// own and registers a [`Codec::wrapping`] for each.
pub fn for_each_resource(visitor: &mut impl ResourceVisitor) {
    crate::generated::register(visitor);
}

/// Where the generated code registers each resource type.
#[derive(Default)]
struct Registry(HashMap<TypeId, Codec>);

impl ResourceVisitor for Registry {
    fn visit<T: ResourceMessage>(&mut self) {
        let codec = Codec::wrapping::<T, T>(decode_message_with::<T>, encode_message::<T>);
        self.0.insert(TypeId::of::<T>(), codec);
    }
}

/// A registered type's message: with the `encode` feature. Without it the registry's
/// codecs only decode ([`Codec::encode`] gives `None`), and no type's encoder is compiled
/// for them.
fn encode_message<T: Message>(value: &T) -> Option<Vec<u8>> {
    #[cfg(feature = "encode")]
    {
        let mut e = Encoder::default();
        value.encode_fields(&mut e);
        Some(e.into_bytes())
    }
    #[cfg(not(feature = "encode"))]
    {
        let _ = value;
        None
    }
}

static REGISTRY: LazyLock<HashMap<TypeId, Codec>> = LazyLock::new(|| {
    let mut registry = Registry::default();
    for_each_resource(&mut registry);
    registry.0
});

/// The codec of `K`, if it is a k8s-openapi resource type (of the Kubernetes version the
/// program picked).
pub fn codec<K: Any>() -> Option<&'static Codec> {
    REGISTRY.get(&TypeId::of::<K>())
}

impl Codec {
    /// The codec of `W`, a type that holds a `T` in a form of its own (a cache that keeps
    /// the message's bytes): `decode` makes a `W` of a `T` message, `encode` gives the `T`
    /// message of a `W` (`None` when it has none at hand: the caller then writes it
    /// otherwise). It reads and writes envelopes that name `T`'s kind.
    pub fn wrapping<T: Resource, W: Any>(
        decode: fn(&[u8], DecodeOptions) -> Result<W, Error>,
        encode: fn(&W) -> Option<Vec<u8>>,
    ) -> Codec {
        Codec {
            api_version: T::API_VERSION,
            kind: T::KIND,
            type_id: TypeId::of::<W>(),
            decode: erase_decode(decode),
            encode: erase_encode(encode),
        }
    }

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
            return Err(self.asked_for_another_type());
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
    /// another type (or a wrapped value without its message at hand), and for every
    /// codec of [`codec`] unless kubekit-protobuf's `encode` feature is on.
    pub fn encode<K: Any>(&self, value: &K) -> Option<Vec<u8>> {
        let message = (self.encode)(value)?;
        Some(encode_raw(self.api_version, self.kind, &message))
    }

    /// The error of a codec given a value of another type than its own.
    fn asked_for_another_type(&self) -> Error {
        Error::new(format!(
            "the codec of {} was asked for another type",
            self.kind
        ))
    }
}

/// A codec's decoding of a `W`, behind `Any`. Generic over `W` alone (not the wrapped
/// type, which only names the kind), so that it is compiled once for each `W`.
fn erase_decode<W: Any>(decode: fn(&[u8], DecodeOptions) -> Result<W, Error>) -> Box<DecodeFn> {
    Box::new(move |raw, options, slot| {
        let slot = slot
            .downcast_mut::<Option<W>>()
            .ok_or_else(|| Error::new("a codec was asked for another type"))?;
        *slot = Some(decode(raw, options)?);
        Ok(())
    })
}

/// A codec's encoding of a `W`, behind `Any`; see [`erase_decode`].
fn erase_encode<W: Any>(encode: fn(&W) -> Option<Vec<u8>>) -> Box<EncodeFn> {
    Box::new(move |value| encode(value.downcast_ref::<W>()?))
}

/// The `metadata` (field 1 of every Kubernetes object message) of an object's message,
/// without decoding the rest: what a watch bookmark carries.
pub fn object_meta(raw: &[u8]) -> Result<ObjectMeta, Error> {
    object_meta_with(raw, DecodeOptions::default())
}

/// [`object_meta`], leaving out what `options` say.
pub fn object_meta_with(raw: &[u8], options: DecodeOptions) -> Result<ObjectMeta, Error> {
    field_one(raw, options)
}

/// `metadata.managedFields`' number in `ObjectMeta`.
const MANAGED_FIELDS: u32 = 17;

/// An object's message without `metadata.managedFields`, the rest byte for byte as it
/// was; the object is otherwise not decoded.
pub fn without_managed_fields(raw: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = Encoder::new(Vec::with_capacity(raw.len()));
    let mut d = Decoder::new(raw);
    while !d.is_empty() {
        let field = d.remaining();
        match d.key()? {
            (1, WireType::Len) => {
                let mut metadata = Encoder::default();
                copy_fields_but(d.len_delimited()?, MANAGED_FIELDS, &mut metadata)
                    .map_err(|e| e.within("an object", 1))?;
                out.key(1, WireType::Len);
                out.bytes(&metadata.into_bytes());
            }
            (_, wire) => {
                d.skip(wire)?;
                out.raw(&field[..field.len() - d.remaining().len()]);
            }
        }
    }
    Ok(out.into_bytes())
}

/// Copies the fields of message `raw` to `out`, leaving out field `number`.
fn copy_fields_but(raw: &[u8], number: u32, out: &mut Encoder) -> Result<(), Error> {
    let mut d = Decoder::new(raw);
    while !d.is_empty() {
        let field = d.remaining();
        let (n, wire) = d.key()?;
        d.skip(wire)?;
        if n != number {
            out.raw(&field[..field.len() - d.remaining().len()]);
        }
    }
    Ok(())
}

/// A list message's `metadata` and its items' messages, not yet decoded; see
/// [`split_list`] for the shard selector the server applied too.
pub fn list_parts(raw: &[u8]) -> Result<(ListMeta, Vec<&[u8]>), Error> {
    split_list(raw).map(|parts| (parts.metadata, parts.items))
}

/// A list message taken apart: [`split_list`].
#[derive(Debug, Default)]
pub struct ListParts<'a> {
    /// The list's `metadata`.
    pub metadata: ListMeta,
    /// `metadata.shardInfo.selector`: the shard selector the server applied to the list
    /// (`None` when it applied none). Read for every Kubernetes version k8s-openapi may be
    /// built for, though its `ListMeta` has `shard_info` only from 1.36 on.
    pub shard_selector: Option<String>,
    /// The items' messages, not yet decoded.
    pub items: Vec<&'a [u8]>,
}

/// A list message's `metadata`, the shard selector it echoes and its items' messages.
pub fn split_list(raw: &[u8]) -> Result<ListParts<'_>, Error> {
    let mut d = Decoder::new(raw);
    let mut parts = ListParts::default();
    while !d.is_empty() {
        match d.key()? {
            (1, WireType::Len) => {
                let meta = d.len_delimited()?;
                let in_list = |e: Error| e.within("a list", 1);
                merge_message(&mut parts.metadata, &mut Decoder::new(meta)).map_err(in_list)?;
                if let Some(selector) = shard_selector(meta).map_err(in_list)? {
                    parts.shard_selector = Some(selector);
                }
            }
            (1, wire) => {
                return Err(Error::new(format!("list metadata of wire type {wire:?}")));
            }
            (2, WireType::Len) => parts.items.push(d.len_delimited()?),
            (_, wire) => d.skip(wire)?,
        }
    }
    Ok(parts)
}

/// `shardInfo.selector` of a `ListMeta` message (fields 5 and 1 in apimachinery's
/// `generated.proto`); `None` when absent or empty.
fn shard_selector(list_meta: &[u8]) -> Result<Option<String>, Error> {
    let mut d = Decoder::new(list_meta);
    let mut selector: Option<String> = None;
    while !d.is_empty() {
        match d.key()? {
            (5, WireType::Len) => d.nested(|info| {
                while !info.is_empty() {
                    match info.key()? {
                        (1, wire) => selector.merge_omit_empty(wire, info)?,
                        (_, wire) => info.skip(wire)?,
                    }
                }
                Ok(())
            })?,
            (_, wire) => d.skip(wire)?,
        }
    }
    Ok(selector)
}

/// Field 1 of a message, decoded as a `T`; the other fields skipped.
fn field_one<T: Message + Default + crate::runtime::Value>(
    raw: &[u8],
    options: DecodeOptions,
) -> Result<T, Error> {
    let mut d = Decoder::with_options(raw, options);
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
    use crate::envelope::encode;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    fn config_map(name: &str) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
        cm.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            operation: Some("Update".into()),
            ..Default::default()
        }]);
        cm.data = Some([("k".to_string(), "v".to_string())].into());
        cm
    }

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
        assert_eq!(cm_codec.encode(&Pod::default()), None);
    }

    #[test]
    fn a_codec_encodes_its_own_type_with_the_encode_feature_and_nothing_without() {
        let cm = config_map("x");
        let codec = codec::<ConfigMap>().unwrap();
        let want = cfg!(feature = "encode").then(|| encode(&cm));
        assert_eq!(codec.encode(&cm), want);
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

    #[test]
    fn a_list_gives_the_shard_selector_the_server_echoed_and_none_without_one() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ShardInfo;
        let selector =
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
        let sharded = k8s_openapi::List::<ConfigMap> {
            items: vec![config_map("x")],
            metadata: ListMeta {
                resource_version: Some("9".into()),
                shard_info: Some(ShardInfo {
                    selector: selector.into(),
                }),
                ..Default::default()
            },
        };
        let bytes = encode(&sharded);
        let parts = split_list(Unknown::read(&bytes).unwrap().raw).unwrap();
        assert_eq!(parts.shard_selector.as_deref(), Some(selector));
        assert_eq!(parts.metadata, sharded.metadata);
        assert_eq!(parts.items.len(), 1);

        let plain = k8s_openapi::List::<ConfigMap>::default();
        let bytes = encode(&plain);
        let parts = split_list(Unknown::read(&bytes).unwrap().raw).unwrap();
        assert_eq!(parts.shard_selector, None);
        // A shardInfo whose selector is not a string is an error, not a guess.
        assert!(split_list(&[0x0a, 0x04, 0x2a, 0x02, 0x08, 0x01]).is_err());
    }

    #[test]
    fn without_managed_fields_leaves_every_other_field_as_it_was() {
        let cm = config_map("x");
        let raw = Unknown::read(&encode(&cm)).unwrap().raw.to_vec();
        let stripped = without_managed_fields(&raw).unwrap();
        assert!(stripped.len() < raw.len());
        let decoded: ConfigMap = decode_message_with(&stripped, DecodeOptions::default()).unwrap();
        let mut expected = cm;
        expected.metadata.managed_fields = None;
        assert_eq!(decoded, expected);
        assert_eq!(
            without_managed_fields(&stripped).unwrap(),
            stripped,
            "nothing to strip: the same bytes"
        );
        let err = without_managed_fields(&raw[..raw.len() - 1]).unwrap_err();
        assert!(err.to_string().contains("runs past the end"), "{err}");
    }

    #[test]
    fn object_meta_with_skips_what_the_options_say() {
        let raw = Unknown::read(&encode(&config_map("x")))
            .unwrap()
            .raw
            .to_vec();
        let skip = DecodeOptions {
            skip_managed_fields: true,
        };
        assert!(object_meta(&raw).unwrap().managed_fields.is_some());
        let meta = object_meta_with(&raw, skip).unwrap();
        assert!(meta.managed_fields.is_none());
        assert_eq!(meta.name.as_deref(), Some("x"));
    }

    /// A type holding a ConfigMap's message as it came.
    #[derive(Debug, PartialEq)]
    struct Held(Vec<u8>);

    #[test]
    fn a_wrapping_codec_reads_and_writes_its_types_envelopes() {
        let codec = Codec::wrapping::<ConfigMap, Held>(
            |raw, _| Ok(Held(raw.to_vec())),
            |held| Some(held.0.clone()),
        );
        let bytes = encode(&config_map("x"));
        let held: Held = codec.decode(&bytes).unwrap();
        assert_eq!(held.0, Unknown::read(&bytes).unwrap().raw);
        assert_eq!(codec.encode(&held), Some(bytes));
        assert!(
            codec
                .decode::<ConfigMap>(&encode(&config_map("y")))
                .is_err()
        );
        let err = codec.decode::<Held>(&encode(&Pod::default())).unwrap_err();
        assert!(err.to_string().contains("expected v1 ConfigMap"), "{err}");
    }

    #[test]
    fn every_registered_resource_is_visited() {
        struct Count(usize);
        impl ResourceVisitor for Count {
            fn visit<T: ResourceMessage>(&mut self) {
                assert!(codec::<T>().is_some(), "{}", T::KIND);
                self.0 += 1;
            }
        }
        let mut count = Count(0);
        for_each_resource(&mut count);
        assert_eq!(count.0, REGISTRY.len());
    }
}
