//! [`Compact<K>`]: an object kept compressed as the server sent it, with its metadata at
//! hand, decoded only when it is read — the informer cache for many objects in little
//! memory.
//!
//! A typed `k8s-openapi` Pod costs ~40–50 KiB of heap for ~6 KiB of JSON. Most controllers
//! cache thousands of objects and read a few fields of a few of them: for them, an
//! informer of `Compact<K>` keeps each object in the encoding the server sent (protobuf for
//! the built-in types a client asks protobuf of, JSON otherwise), compressed with zstd
//! (typically 3–5x smaller, 15–30x smaller than the typed object), plus its metadata decoded
//! once. `Compact<K>` is a [`kube::Resource`] of the same kind as `K`,
//! so the whole informer machinery — reflector, `DeltaFifo`, `Indexer`
//! with its indexes, listers, handlers, the factory, `controller::enqueue_handler` — works
//! on it unchanged.
//!
//! # Contract
//!
//! - **Metadata without decoding.** Every field of the object's metadata except
//!   `managedFields` and `annotations` (name, namespace, uid, resourceVersion, generation,
//!   labels, ownerReferences, finalizers, timestamps, …) is kept packed, its strings in one
//!   allocation (a few hundred bytes for a Pod), and read through
//!   [`meta_ref`](Compact::meta_ref) (or [`cache::meta_ref`](fn@crate::meta_ref::meta_ref) on any
//!   object): keys, the namespace and controller indexes, label selectors, owner lookups
//!   and the manager's handlers read it so, and never decode the object.
//!   [`meta`](kube::Resource::meta) builds those fields as an `ObjectMeta` on its first
//!   call and keeps it with the object (about a kilobyte more for a Pod with a few
//!   labels); a manager's predicates read that one.
//! - **Typed access on demand.** [`get`](Compact::get) decodes the object (a few tens of
//!   microseconds for a Pod) and returns it as an `Arc<K>`. While anyone still holds that
//!   `Arc`, `get` returns the same one instead of decoding again.
//! - **Validation.** Decoding into `Compact<K>` checks that the input is a JSON object
//!   with valid metadata; the rest of the object is checked when it is first decoded: an
//!   object the server sent that is not a valid `K` is an error from `get`, never a panic,
//!   and the other objects are unaffected.
//! - **Bytes kept.** The object as received: its JSON (re-serialised by `Serialize`, so a
//!   `Compact<K>` can be written back to the server unchanged), or its protobuf message
//!   ([`Encoding`]). A protobuf object's `metadata.managedFields` are left out of the bytes
//!   when the client that read it skips them (the informer factory's default, see
//!   `kubekit::informers::SharedInformerFactoryBuilder::keep_managed_fields`),
//!   so its [`get`](Compact::get) has none; `Serialize` writes a protobuf object as the
//!   JSON of its decoded `K`.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kube::Resource;
//! use kubekit::cache::Compact;
//!
//! let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"demo",
//!   "resourceVersion":"7","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;
//! let pod: Compact<Pod> = serde_json::from_str(json).unwrap();
//! assert_eq!(pod.meta_ref().name(), Some("web"));             // no decode
//! assert_eq!(pod.meta_ref().label("app"), Some("web"));
//! assert_eq!(pod.meta().namespace.as_deref(), Some("demo"));  // an ObjectMeta, made now
//! let typed = pod.get().unwrap();                            // decoded here
//! assert_eq!(typed.spec.as_ref().unwrap().containers[0].image.as_deref(), Some("nginx"));
//! assert!(std::sync::Arc::ptr_eq(&typed, &pod.get().unwrap())); // still held: shared
//! ```

mod codec;

use std::any::TypeId;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, OnceLock, Weak};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::Resource;
use kubekit_protobuf::{Codec, DecodeOptions, ResourceVisitor};
use parking_lot::Mutex;
use serde::de::{DeserializeOwned, Error as _, IgnoredAny};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::meta_ref::{MetaRef, PackedMeta};
use crate::per_type::per_type;
use crate::rest::Error;
use crate::rest::leading::read_metadata;
use codec::{Compression, Frame};

/// An object of type `K` kept compressed; see the [module docs](self).
pub struct Compact<K> {
    /// The metadata the cache reads ([`meta_ref`](fn@crate::meta_ref::meta_ref)).
    packed: PackedMeta,
    /// The metadata as an `ObjectMeta`, made on the first [`meta`](Resource::meta) or
    /// [`meta_mut`](Resource::meta_mut); from then on what [`MetaRef`] reads.
    meta: OnceLock<Box<ObjectMeta>>,
    /// The object as received, compressed.
    frame: Frame,
    /// What the frame holds.
    encoding: Encoding,
    /// Names this object (and its clones) in the table of decoded objects.
    id: u64,
    _kind: PhantomData<fn() -> K>,
}

/// The encoding a [`Compact`] object was received, and is kept, in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// The object's JSON.
    Json,
    /// The object's protobuf message, without the `k8s\0` envelope.
    Protobuf,
}

/// Stands for `K`'s protobuf messages where [`per_type`] state is kept per type: they get a
/// compression dictionary of their own, apart from `K`'s JSON.
struct ProtobufOf<K>(PhantomData<K>);

impl<K> Compact<K> {
    /// Bytes of compressed data this object keeps.
    pub fn compressed_len(&self) -> usize {
        self.frame.compressed_len()
    }

    /// Bytes of the object as received, in its [`encoding`](Self::encoding).
    pub fn encoded_len(&self) -> usize {
        self.frame.len()
    }

    /// The encoding the object was received and is kept in.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The object as received, decompressed: JSON, or a protobuf message
    /// ([`encoding`](Self::encoding)).
    pub fn encoded(&self) -> Result<Vec<u8>, Error> {
        self.frame
            .decompress()
            .map_err(|e| Error::Request(format!("the cached object {}: {e}", self.describe())))
    }

    fn describe(&self) -> String {
        let meta = self.meta_ref();
        match (meta.namespace(), meta.name()) {
            (Some(ns), Some(name)) => format!("{ns}/{name}"),
            (None, Some(name)) => name.into(),
            _ => "(unnamed)".into(),
        }
    }

    /// Whether this object's `ObjectMeta` has been built, by a call of
    /// [`meta`](kube::Resource::meta) (built once and kept: about a kilobyte for a Pod with a
    /// few labels). Keys, indexes, selectors and owner lookups read [`meta_ref`](Self::meta_ref)
    /// and never build it.
    pub fn has_object_meta(&self) -> bool {
        self.meta.get().is_some()
    }

    /// The object's metadata, without building an `ObjectMeta` (what
    /// [`meta_ref`](fn@crate::meta_ref::meta_ref) gives for a compact object).
    pub fn meta_ref(&self) -> MetaRef<'_> {
        match self.meta.get() {
            Some(meta) => MetaRef::new(meta),
            None => MetaRef::packed(&self.packed),
        }
    }
}

impl<K: DeserializeOwned> Compact<K> {
    /// The object, typed: decoded now, or the `Arc` someone already holds. An object the
    /// server sent that is not a valid `K` is an error (the cache keeps it as it came).
    pub fn get(&self) -> Result<Arc<K>, Error>
    where
        K: Send + Sync + 'static,
    {
        let decoded = per_type::<K, Decoded<K>>();
        if let Some(obj) = decoded.get(self.id) {
            return Ok(obj);
        }
        let obj = Arc::new(self.decode()?);
        // Someone may have decoded it meanwhile: then theirs, so there is one copy.
        Ok(decoded.insert(self.id, obj))
    }

    /// Decodes the object.
    fn decode(&self) -> Result<K, Error>
    where
        K: 'static,
    {
        let bytes = self.encoded()?;
        let what = format!("cached object {}", self.describe());
        match self.encoding {
            Encoding::Json => {
                crate::rest::json::from_slice(&bytes).map_err(|e| Error::decode(what, e, &bytes))
            }
            Encoding::Protobuf => crate::rest::protobuf::codec_for::<K>(&what)?
                .decode_message(&bytes)
                .map_err(|e| crate::rest::protobuf::protobuf_error(what, e, &bytes)),
        }
    }
}

/// Shards of the table of decoded objects: `get`s on several cores rarely meet.
const DECODED_SHARDS: usize = 16;

/// The objects of one type that `get` decoded, by [`Compact`] id, while someone may still
/// hold them. A dead entry still pins its object's allocation (`size_of::<K>()`, ~2.4 KiB
/// for a Pod; its fields are freed), so a shard sweeps its dead entries whenever it has
/// doubled since the last sweep: what dead entries pin stays below what the live ones
/// hold, plus a few dozen objects.
struct Decoded<K> {
    shards: [Mutex<DecodedShard<K>>; DECODED_SHARDS],
}

struct DecodedShard<K> {
    objects: HashMap<u64, Weak<K>>,
    /// Size at which the next sweep happens.
    sweep_at: usize,
}

/// A shard's first sweep: below this, dead entries are not worth a pass.
const FIRST_SWEEP: usize = 64;

impl<K> Default for Decoded<K> {
    fn default() -> Self {
        Self {
            shards: std::array::from_fn(|_| {
                Mutex::new(DecodedShard {
                    objects: HashMap::new(),
                    sweep_at: FIRST_SWEEP,
                })
            }),
        }
    }
}

impl<K> Decoded<K> {
    fn shard(&self, id: u64) -> &Mutex<DecodedShard<K>> {
        &self.shards[id as usize % DECODED_SHARDS]
    }

    fn get(&self, id: u64) -> Option<Arc<K>> {
        self.shard(id).lock().objects.get(&id)?.upgrade()
    }

    /// Records `obj` as the decoded object `id`, unless a live one is there already: then
    /// that one.
    fn insert(&self, id: u64, obj: Arc<K>) -> Arc<K> {
        let mut shard = self.shard(id).lock();
        let slot = shard.objects.entry(id).or_default();
        if let Some(theirs) = slot.upgrade() {
            return theirs;
        }
        *slot = Arc::downgrade(&obj);
        if shard.objects.len() >= shard.sweep_at {
            shard
                .objects
                .retain(|_, decoded| decoded.strong_count() > 0);
            shard.sweep_at = (2 * shard.objects.len()).max(FIRST_SWEEP);
        }
        obj
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().objects.len()).sum()
    }
}

/// Ids of [`Compact`] objects: unique for the life of the process.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

impl<K> Clone for Compact<K> {
    fn clone(&self) -> Self {
        Self {
            packed: self.packed.clone(),
            meta: self.meta.clone(),
            frame: self.frame.clone(),
            encoding: self.encoding,
            // Same content: the clone shares the decoded object.
            id: self.id,
            _kind: PhantomData,
        }
    }
}

impl<K> fmt::Debug for Compact<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compact")
            .field("meta", &self.meta_ref())
            .field("encoding", &self.encoding)
            .field("encoded_len", &self.encoded_len())
            .field("compressed_len", &self.compressed_len())
            .finish()
    }
}

impl<K: Resource> Resource for Compact<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }
    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }
    /// The metadata as an `ObjectMeta`, made on the first call and kept with the object
    /// (about a kilobyte for a Pod with a few labels); [`Compact::meta_ref`] reads it
    /// without.
    fn meta(&self) -> &ObjectMeta {
        self.meta
            .get_or_init(|| Box::new(self.packed.to_object_meta()))
    }
    /// As [`meta`](Self::meta); changes are what [`Compact::meta_ref`] reads from then on
    /// (the object's bytes, and so [`get`](Compact::get), keep the metadata received).
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.meta();
        self.meta
            .get_mut()
            .expect("the metadata was made just above")
    }
}

/// The object's metadata as cached: `ObjectMeta` without `managedFields` and
/// `annotations` (skipped while parsing, never allocated).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaWire {
    name: Option<String>,
    generate_name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    owner_references: Option<Vec<OwnerReference>>,
    finalizers: Option<Vec<String>>,
    #[serde(rename = "selfLink")]
    _self_link: Option<IgnoredAny>,
}

impl From<MetaWire> for ObjectMeta {
    fn from(m: MetaWire) -> Self {
        ObjectMeta {
            name: m.name,
            generate_name: m.generate_name,
            namespace: m.namespace,
            uid: m.uid,
            resource_version: m.resource_version,
            generation: m.generation,
            creation_timestamp: m.creation_timestamp,
            deletion_timestamp: m.deletion_timestamp,
            deletion_grace_period_seconds: m.deletion_grace_period_seconds,
            labels: m.labels,
            owner_references: m.owner_references,
            finalizers: m.finalizers,
            ..Default::default()
        }
    }
}

impl<K: 'static> Compact<K> {
    /// Keeps `json` (one object) compressed, with its metadata parsed. What follows the
    /// metadata is checked when the object is first decoded ([`get`](Self::get)).
    pub fn from_json(json: &[u8]) -> Result<Self, serde_json::Error> {
        let (packed, frame) = json_parts(json, Frame::compression_of::<K>())?;
        Ok(Self::new(packed, frame, Encoding::Json))
    }

    /// Keeps `raw`, a `K`'s protobuf message (no envelope), compressed, with its metadata
    /// decoded; without `metadata.managedFields` when `options` skip them. What follows the
    /// metadata is checked when the object is first decoded ([`get`](Self::get)).
    pub fn from_protobuf(
        raw: &[u8],
        options: DecodeOptions,
    ) -> Result<Self, kubekit_protobuf::Error> {
        let compression = Frame::compression_of::<ProtobufOf<K>>();
        let (packed, frame) = protobuf_parts(raw, options, compression)?;
        Ok(Self::new(packed, frame, Encoding::Protobuf))
    }

    fn new(packed: PackedMeta, frame: Frame, encoding: Encoding) -> Self {
        crate::meta_ref::register::<Self>(|obj| obj.downcast_ref::<Self>().map(Self::meta_ref));
        Self {
            packed,
            meta: OnceLock::new(),
            frame,
            encoding,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            _kind: PhantomData,
        }
    }

    /// The object's protobuf message, if it is kept as one and decompresses.
    fn protobuf_message(&self) -> Option<Vec<u8>> {
        match self.encoding {
            Encoding::Protobuf => self.frame.decompress().ok(),
            Encoding::Json => None,
        }
    }
}

/// [`Compact::from_json`]'s metadata and frame, compiled once for every type.
fn json_parts(
    json: &[u8],
    compression: Compression,
) -> Result<(PackedMeta, Frame), serde_json::Error> {
    let metadata: Option<MetaWire> = read_metadata(json)?;
    let meta = metadata.map(Into::into).unwrap_or_default();
    let packed = PackedMeta::new(&meta).map_err(serde_json::Error::custom)?;
    let frame = Frame::compress_with(compression, json).map_err(serde_json::Error::custom)?;
    Ok((packed, frame))
}

/// [`Compact::from_protobuf`]'s metadata and frame, compiled once for every type.
fn protobuf_parts(
    raw: &[u8],
    options: DecodeOptions,
    compression: Compression,
) -> Result<(PackedMeta, Frame), kubekit_protobuf::Error> {
    let skip = DecodeOptions {
        skip_managed_fields: true,
    };
    let meta = kubekit_protobuf::object_meta_with(raw, skip)?;
    let packed = PackedMeta::new(&meta).map_err(|e| kubekit_protobuf::Error::new(e.to_string()))?;
    let stripped;
    let kept = if options.skip_managed_fields {
        stripped = kubekit_protobuf::without_managed_fields(raw)?;
        &stripped[..]
    } else {
        raw
    };
    let frame = Frame::compress_with(compression, kept).map_err(kubekit_protobuf::Error::new)?;
    Ok((packed, frame))
}

/// The protobuf codec of `K` when it is `Compact<T>` of a resource type `T` that has one.
pub(crate) fn protobuf_codec<K: 'static>() -> Option<&'static Codec> {
    /// A [`Codec::wrapping`] of `Compact<T>` for each resource type `T`.
    #[derive(Default)]
    struct Codecs(HashMap<TypeId, Codec>);
    impl ResourceVisitor for Codecs {
        fn visit<T: kubekit_protobuf::ResourceMessage>(&mut self) {
            let codec =
                Codec::wrapping::<T, Compact<T>>(Compact::from_protobuf, Compact::protobuf_message);
            self.0.insert(TypeId::of::<Compact<T>>(), codec);
        }
    }
    static CODECS: LazyLock<HashMap<TypeId, Codec>> = LazyLock::new(|| {
        let mut codecs = Codecs::default();
        kubekit_protobuf::for_each_resource(&mut codecs);
        codecs.0
    });
    CODECS.get(&TypeId::of::<K>())
}

impl<'de, K: 'static> Deserialize<'de> for Compact<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: Box<RawValue> = Deserialize::deserialize(deserializer)?;
        Compact::from_json(raw.get().as_bytes()).map_err(D::Error::custom)
    }
}

impl<K: Serialize + DeserializeOwned + 'static> Serialize for Compact<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        match self.encoding {
            Encoding::Json => {
                let json = self.encoded().map_err(S::Error::custom)?;
                let raw: Box<RawValue> = serde_json::from_slice(&json).map_err(S::Error::custom)?;
                raw.serialize(serializer)
            }
            Encoding::Protobuf => self
                .decode()
                .map_err(S::Error::custom)?
                .serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"demo","uid":"u1","resourceVersion":"42","labels":{"app":"web"},"annotations":{"a":"b"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u0","controller":true}],"managedFields":[{"manager":"kubectl","operation":"Update"}]},"spec":{"containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"Running"}}"#;

    #[test]
    fn metadata_is_at_hand_without_managed_fields_or_annotations() {
        let pod: Compact<Pod> = serde_json::from_str(POD).unwrap();
        let meta = pod.meta();
        assert_eq!(meta.namespace.as_deref(), Some("demo"));
        assert_eq!(meta.resource_version.as_deref(), Some("42"));
        assert_eq!(meta.owner_references.as_ref().unwrap()[0].name, "rs");
        assert!(meta.managed_fields.is_none() && meta.annotations.is_none());
        assert_eq!(pod.encoded_len(), POD.len());
        assert_eq!(pod.encoding(), Encoding::Json);
        let packed = pod.meta_ref();
        assert_eq!(
            (packed.namespace(), packed.name()),
            (Some("demo"), Some("web"))
        );
    }

    #[test]
    fn get_decodes_the_whole_object_once_while_it_is_held() {
        let pod: Compact<Pod> = serde_json::from_str(POD).unwrap();
        let typed = pod.get().unwrap();
        assert_eq!(
            typed.metadata.annotations.as_ref().unwrap()["a"],
            "b",
            "the typed object has every field"
        );
        assert_eq!(typed.metadata.managed_fields.as_ref().unwrap().len(), 1);
        assert!(Arc::ptr_eq(&typed, &pod.get().unwrap()));
        drop(typed);
        let again = pod.get().unwrap();
        assert_eq!(
            again.status.as_ref().unwrap().phase.as_deref(),
            Some("Running"),
            "decoded again once nobody held it"
        );
    }

    #[test]
    fn objects_without_metadata_are_kept_and_trailing_garbage_is_an_error() {
        for json in [r#"{"kind":"Pod"}"#, r#"{"kind":"Pod","metadata":null}"#] {
            let pod = Compact::<Pod>::from_json(json.as_bytes()).unwrap();
            assert_eq!(pod.meta(), &ObjectMeta::default(), "{json}");
        }
        assert!(Compact::<Pod>::from_json(br#"{"kind":"Pod"} x"#).is_err());
        assert!(Compact::<Pod>::from_json(b"[]").is_err());
    }

    #[test]
    fn decoded_objects_nobody_holds_are_swept_from_the_table() {
        /// A type of this test's own, so the table is this test's.
        #[derive(serde::Deserialize)]
        struct Swept {
            #[serde(rename = "metadata")]
            _metadata: ObjectMeta,
        }
        let objects: Vec<Compact<Swept>> = (0..5000)
            .map(|i| {
                let json = format!(r#"{{"metadata":{{"name":"o{i}"}}}}"#);
                Compact::from_json(json.as_bytes()).unwrap()
            })
            .collect();
        let held: Vec<Arc<Swept>> = objects[..100].iter().map(|o| o.get().unwrap()).collect();
        for object in &objects[100..] {
            drop(object.get().unwrap());
        }
        let decoded = per_type::<Swept, Decoded<Swept>>();
        assert!(
            decoded.len() <= 2 * held.len() + DECODED_SHARDS * FIRST_SWEEP,
            "{} entries kept for {} held objects",
            decoded.len(),
            held.len()
        );
        for (object, held) in objects.iter().zip(&held) {
            assert!(
                Arc::ptr_eq(held, &object.get().unwrap()),
                "held ones are shared"
            );
        }
    }

    #[test]
    fn serializing_writes_the_json_as_received() {
        let pod: Compact<Pod> = serde_json::from_str(POD).unwrap();
        assert_eq!(serde_json::to_string(&pod).unwrap(), POD);
        let list: Vec<Compact<Pod>> = serde_json::from_str(&format!("[{POD},{POD}]")).unwrap();
        assert_eq!(list.len(), 2);
    }

    #[test]
    fn an_object_invalid_for_k_is_an_error_on_get_not_on_store() {
        let bad = r#"{"metadata":{"name":"x","namespace":"d"},"spec":{"containers":"not a list"}}"#;
        let pod: Compact<Pod> = serde_json::from_str(bad).unwrap();
        let err = pod.get().expect_err("containers must be a list");
        assert!(err.to_string().contains("cached object d/x"), "{err}");
        let after_metadata = r#"{"metadata":{"name":"y","namespace":"d"},"spec":{"containers":[}"#;
        let pod = Compact::<Pod>::from_json(after_metadata.as_bytes())
            .expect("what follows the metadata is checked on decode");
        assert_eq!(pod.meta().name.as_deref(), Some("y"));
        assert!(pod.get().is_err());
        let bad_meta = r#"{"metadata":{"name":5}}"#;
        assert!(serde_json::from_str::<Compact<Pod>>(bad_meta).is_err());
        assert!(serde_json::from_str::<Compact<Pod>>("[1]").is_err());
    }

    #[test]
    fn metadata_changed_through_meta_mut_is_what_the_cache_reads() {
        let mut pod: Compact<Pod> = serde_json::from_str(POD).unwrap();
        pod.meta_mut().name = Some("renamed".into());
        assert_eq!(crate::meta_ref::meta_ref(&pod).name(), Some("renamed"));
        assert_eq!(pod.clone().meta_ref().name(), Some("renamed"), "clones too");
        assert_eq!(
            pod.get().unwrap().metadata.name.as_deref(),
            Some("web"),
            "the bytes keep what was received"
        );
    }

    /// `json`, a Pod, as kube-apiserver sends it in protobuf: the message, without envelope.
    fn message_of(json: &str) -> Vec<u8> {
        let pod: Pod = serde_json::from_str(json).unwrap();
        let bytes = kubekit_protobuf::encode(&pod);
        kubekit_protobuf::Unknown::read(&bytes)
            .unwrap()
            .raw
            .to_vec()
    }

    /// `POD` as kube-apiserver sends it in protobuf: the message, without envelope.
    fn pod_message() -> Vec<u8> {
        message_of(POD)
    }

    const SKIP: DecodeOptions = DecodeOptions {
        skip_managed_fields: true,
    };

    #[test]
    fn a_protobuf_object_keeps_its_message_and_decodes_from_it() {
        let raw = pod_message();
        let pod = Compact::<Pod>::from_protobuf(&raw, DecodeOptions::default()).unwrap();
        assert_eq!(pod.encoding(), Encoding::Protobuf);
        assert_eq!(pod.encoded().unwrap(), raw, "the message as received");
        let meta = pod.meta();
        assert_eq!(meta.name.as_deref(), Some("web"));
        assert_eq!(meta.owner_references.as_ref().unwrap()[0].name, "rs");
        assert!(meta.managed_fields.is_none() && meta.annotations.is_none());
        let typed = pod.get().unwrap();
        assert_eq!(*typed, serde_json::from_str::<Pod>(POD).unwrap());
        assert_eq!(
            serde_json::to_value(&pod).unwrap(),
            serde_json::to_value(&*typed).unwrap(),
            "serialised as the JSON of the decoded object"
        );
    }

    #[test]
    fn a_protobuf_object_read_skipping_managed_fields_keeps_none() {
        let raw = pod_message();
        let pod = Compact::<Pod>::from_protobuf(&raw, SKIP).unwrap();
        assert!(pod.encoded_len() < raw.len());
        let typed = pod.get().unwrap();
        assert!(typed.metadata.managed_fields.is_none());
        assert_eq!(typed.metadata.annotations.as_ref().unwrap()["a"], "b");
        assert_eq!(
            typed.spec.as_ref().unwrap().containers[0].image.as_deref(),
            Some("nginx")
        );
    }

    #[test]
    fn compact_resources_have_a_protobuf_codec_reading_their_types_envelopes() {
        let codec = protobuf_codec::<Compact<Pod>>().expect("Compact<Pod> has a codec");
        assert!(protobuf_codec::<Pod>().is_none(), "only Compact types here");
        let pod: Pod = serde_json::from_str(POD).unwrap();
        let bytes = kubekit_protobuf::encode(&pod);
        let compact: Compact<Pod> = codec.decode_with(&bytes, SKIP).unwrap();
        assert_eq!(compact.meta().name.as_deref(), Some("web"));
        assert_eq!(
            kubekit_protobuf::decode::<Pod>(&codec.encode(&compact).unwrap()).unwrap(),
            Pod {
                metadata: ObjectMeta {
                    managed_fields: None,
                    ..pod.metadata.clone()
                },
                ..pod
            },
            "written back as the message it keeps"
        );
        let json: Compact<Pod> = serde_json::from_str(POD).unwrap();
        assert_eq!(
            codec.encode(&json),
            None,
            "a JSON object has no message at hand"
        );
        let other = kubekit_protobuf::encode(&k8s_openapi::api::core::v1::ConfigMap::default());
        assert!(codec.decode::<Compact<Pod>>(&other).is_err());
    }

    #[test]
    fn a_protobuf_object_invalid_for_k_is_an_error_on_get_not_on_store() {
        // metadata { name: "x" }, then field 3 (status) holding a length past its end.
        let raw = [0x0a, 0x03, 0x0a, 0x01, b'x', 0x1a, 0x02, 0x0a, 0x7f];
        let pod = Compact::<Pod>::from_protobuf(&raw, DecodeOptions::default()).unwrap();
        assert_eq!(pod.meta().name.as_deref(), Some("x"));
        let err = pod.get().unwrap_err();
        assert!(err.to_string().contains("cached object x"), "{err}");
        assert!(Compact::<Pod>::from_protobuf(&[0x0a, 0x7f], SKIP).is_err());
    }
}
