//! [`MetaRef`]: an object's metadata as the cache reads it, borrowed either from the
//! object's `ObjectMeta` or from the packed form a [`Compact`](crate::compact::Compact)
//! object keeps instead of one.
//!
//! A typed object's `ObjectMeta` costs about a kilobyte of heap for a Pod with a few labels
//! (a `BTreeMap` node of eleven slots, one allocation per string). A
//! [`Compact`](crate::compact::Compact) object keeps its metadata as one string of all its
//! strings back to back, and builds an `ObjectMeta` only when someone asks for one
//! ([`kube::Resource::meta`]). The informer machinery — keys, the namespace and controller
//! indexes, label selectors, resourceVersions — reads metadata through [`meta_ref`], so it
//! never builds one.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kubekit::cache::{Compact, meta_ref};
//!
//! let json = br#"{"metadata":{"name":"web","namespace":"demo","labels":{"app":"web"}}}"#;
//! let pod = Compact::<Pod>::from_json(json).unwrap();
//! let meta = meta_ref(&pod);
//! assert_eq!((meta.namespace(), meta.name()), (Some("demo"), Some("web")));
//! assert_eq!(meta.label("app"), Some("web"));
//! ```

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::labels::Labels;
use crate::per_type::per_type;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::Resource;

/// An object's metadata as the cache reads it: every field of `ObjectMeta` but
/// `annotations` and `managedFields` (which a [`Compact`](crate::compact::Compact) object
/// does not keep at hand), borrowed. [`meta_ref`] gives it for any object.
#[derive(Debug, Clone, Copy)]
pub struct MetaRef<'a>(Source<'a>);

#[derive(Debug, Clone, Copy)]
enum Source<'a> {
    Full(&'a ObjectMeta),
    #[cfg_attr(
        not(feature = "compact"),
        expect(dead_code, reason = "only a Compact object's metadata is packed")
    )]
    Packed(&'a PackedMeta),
}

/// One ownerReference, borrowed from a [`MetaRef`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerRef<'a> {
    /// The owner's `apiVersion`.
    pub api_version: &'a str,
    /// The owner's kind.
    pub kind: &'a str,
    /// The owner's name.
    pub name: &'a str,
    /// The owner's uid.
    pub uid: &'a str,
    /// Whether the owner is the managing controller.
    pub controller: Option<bool>,
    /// Whether the owner cannot be deleted before this object is.
    pub block_owner_deletion: Option<bool>,
}

impl<'a> From<&'a OwnerReference> for OwnerRef<'a> {
    fn from(r: &'a OwnerReference) -> Self {
        Self {
            api_version: &r.api_version,
            kind: &r.kind,
            name: &r.name,
            uid: &r.uid,
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        }
    }
}

impl OwnerRef<'_> {
    /// The owned `OwnerReference`.
    pub fn to_owner_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.into(),
            kind: self.kind.into(),
            name: self.name.into(),
            uid: self.uid.into(),
            controller: self.controller,
            block_owner_deletion: self.block_owner_deletion,
        }
    }
}

impl<'a> MetaRef<'a> {
    /// The metadata of `meta`.
    pub fn new(meta: &'a ObjectMeta) -> Self {
        Self(Source::Full(meta))
    }

    #[cfg(feature = "compact")]
    pub(crate) fn packed(meta: &'a PackedMeta) -> Self {
        Self(Source::Packed(meta))
    }

    fn string(
        &self,
        field: Text,
        full: impl FnOnce(&'a ObjectMeta) -> &'a Option<String>,
    ) -> Option<&'a str> {
        match self.0 {
            Source::Full(m) => full(m).as_deref(),
            Source::Packed(p) => p.optional(field),
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> Option<&'a str> {
        self.string(Text::Name, |m| &m.name)
    }

    /// `metadata.generateName`.
    pub fn generate_name(&self) -> Option<&'a str> {
        self.string(Text::GenerateName, |m| &m.generate_name)
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> Option<&'a str> {
        self.string(Text::Namespace, |m| &m.namespace)
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> Option<&'a str> {
        self.string(Text::Uid, |m| &m.uid)
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> Option<&'a str> {
        self.string(Text::ResourceVersion, |m| &m.resource_version)
    }

    /// `metadata.generation`.
    pub fn generation(&self) -> Option<i64> {
        match self.0 {
            Source::Full(m) => m.generation,
            Source::Packed(p) => p.generation,
        }
    }

    /// `metadata.creationTimestamp`.
    pub fn creation_timestamp(&self) -> Option<&'a Time> {
        match self.0 {
            Source::Full(m) => m.creation_timestamp.as_ref(),
            Source::Packed(p) => p.creation_timestamp.as_ref(),
        }
    }

    /// `metadata.deletionTimestamp`: the object is being deleted.
    pub fn deletion_timestamp(&self) -> Option<&'a Time> {
        match self.0 {
            Source::Full(m) => m.deletion_timestamp.as_ref(),
            Source::Packed(p) => p.deletion_timestamp.as_ref(),
        }
    }

    /// `metadata.deletionGracePeriodSeconds`.
    pub fn deletion_grace_period_seconds(&self) -> Option<i64> {
        match self.0 {
            Source::Full(m) => m.deletion_grace_period_seconds,
            Source::Packed(p) => p.deletion_grace_period_seconds,
        }
    }

    /// Whether `metadata.managedFields` are present (never for a
    /// [`Compact`](crate::compact::Compact) object's packed metadata, which leaves them
    /// out).
    pub fn has_managed_fields(&self) -> bool {
        matches!(self.0, Source::Full(m) if m.managed_fields.is_some())
    }

    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&'a str> {
        match self.0 {
            Source::Full(m) => m.labels.as_ref()?.get(key).map(String::as_str),
            Source::Packed(p) => p.labels().find(|(k, _)| *k == key).map(|(_, v)| v),
        }
    }

    /// The labels, ordered by key.
    pub fn labels(&self) -> impl Iterator<Item = (&'a str, &'a str)> {
        let (full, packed) = match self.0 {
            Source::Full(m) => (m.labels.as_ref(), None),
            Source::Packed(p) => (None, Some(p.labels())),
        };
        let full = full.into_iter().flatten();
        full.map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(packed.into_iter().flatten())
    }

    /// `metadata.finalizers`.
    pub fn finalizers(&self) -> impl Iterator<Item = &'a str> {
        let (full, packed) = match self.0 {
            Source::Full(m) => (m.finalizers.as_ref(), None),
            Source::Packed(p) => (None, Some(p.finalizers())),
        };
        let full = full.into_iter().flatten();
        full.map(String::as_str).chain(packed.into_iter().flatten())
    }

    /// `metadata.ownerReferences`.
    pub fn owner_references(&self) -> impl Iterator<Item = OwnerRef<'a>> {
        let (full, packed) = match self.0 {
            Source::Full(m) => (m.owner_references.as_ref(), None),
            Source::Packed(p) => (None, Some(p.owners())),
        };
        let full = full.into_iter().flatten();
        full.map(OwnerRef::from).chain(packed.into_iter().flatten())
    }

    /// The ownerReference marked `controller` (`metav1.GetControllerOf`).
    pub fn controller(&self) -> Option<OwnerRef<'a>> {
        self.owner_references().find(|r| r.controller == Some(true))
    }

    /// The metadata as an `ObjectMeta` (without `annotations` and `managedFields` when read
    /// from a [`Compact`](crate::compact::Compact) object).
    pub fn to_object_meta(&self) -> ObjectMeta {
        match self.0 {
            Source::Full(m) => m.clone(),
            Source::Packed(p) => p.to_object_meta(),
        }
    }
}

/// A [`MetaRef`]'s labels are labels a selector reads.
impl Labels for MetaRef<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.label(key)
    }
}

/// Reads the metadata of an object of type `K` that is a
/// [`Compact`](crate::compact::Compact) one.
pub(crate) type Reader = for<'a> fn(&'a dyn Any) -> Option<MetaRef<'a>>;

/// How objects of one type are read: set by [`register`] for each
/// [`Compact`](crate::compact::Compact) type before its first object exists, empty for the
/// others (kept per type by [`per_type`]).
#[derive(Default)]
pub(crate) struct ReaderSlot(OnceLock<Reader>);

/// Registers how objects of type `K` are read, unless done already.
#[cfg(feature = "compact")]
pub(crate) fn register<K: 'static>(reader: Reader) {
    per_type::<K, ReaderSlot>().0.get_or_init(|| reader);
}

/// The metadata of `obj` as the cache reads it: borrowed from its `ObjectMeta`, or, for a
/// [`Compact`](crate::compact::Compact) object, from what it keeps, without building an
/// `ObjectMeta`.
pub fn meta_ref<K: Resource + 'static>(obj: &K) -> MetaRef<'_> {
    let reader = per_type::<K, ReaderSlot>().0.get();
    reader
        .and_then(|read| read(obj))
        .unwrap_or_else(|| MetaRef::new(obj.meta()))
}

/// The optional strings of [`PackedMeta`], in the order its text holds them.
#[derive(Debug, Clone, Copy)]
enum Text {
    Name,
    GenerateName,
    Namespace,
    Uid,
    ResourceVersion,
}

const TEXTS: usize = 5;
/// [`PackedMeta::present`]'s bits of `labels`, `finalizers` and `ownerReferences`.
const LABELS: u8 = 1 << TEXTS;
const FINALIZERS: u8 = 1 << (TEXTS + 1);
const OWNERS: u8 = 1 << (TEXTS + 2);

/// What a [`Compact`](crate::compact::Compact) object keeps of its metadata: `ObjectMeta`
/// without `annotations`, `managedFields` and `selfLink`, its strings in one allocation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PackedMeta {
    /// The strings, back to back: those of [`Text`] that are present, then each label's key
    /// and value, each finalizer, and each ownerReference's apiVersion, kind, name and uid.
    text: Box<str>,
    /// Where each string of `text` ends, then one word per ownerReference: its
    /// `controller` and `blockOwnerDeletion` ([`flags`]).
    ends: Box<[u32]>,
    /// Bit `i`: the `i`-th [`Text`] is present; bits [`LABELS`], [`FINALIZERS`] and
    /// [`OWNERS`]: the list or map is present (it may be empty).
    present: u8,
    labels: u32,
    finalizers: u32,
    owners: u32,
    generation: Option<i64>,
    deletion_grace_period_seconds: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
}

/// An ownerReference's two optional flags as one word.
#[cfg(feature = "compact")]
fn flags(r: &OwnerReference) -> u32 {
    let flag = |b: Option<bool>| match b {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    };
    flag(r.controller) | flag(r.block_owner_deletion) << 2
}

fn flag(word: u32, shift: u32) -> Option<bool> {
    match (word >> shift) & 3 {
        1 => Some(false),
        2 => Some(true),
        _ => None,
    }
}

/// Metadata too large to pack: over 4 GiB of strings.
#[cfg(feature = "compact")]
#[derive(Debug, thiserror::Error)]
#[error("the object's metadata holds more than 4 GiB of strings")]
pub(crate) struct TooLarge;

impl PackedMeta {
    /// Packs `meta` (its `annotations`, `managedFields` and `selfLink` are left out).
    #[cfg(feature = "compact")]
    pub(crate) fn new(meta: &ObjectMeta) -> Result<Self, TooLarge> {
        let texts: [&Option<String>; TEXTS] = [
            &meta.name,
            &meta.generate_name,
            &meta.namespace,
            &meta.uid,
            &meta.resource_version,
        ];
        let labels = meta.labels.iter().flatten();
        let finalizers = meta.finalizers.iter().flatten();
        let owners = meta.owner_references.iter().flatten();
        let strings = texts
            .iter()
            .filter_map(|t| t.as_deref())
            .chain(labels.clone().flat_map(|(k, v)| [k.as_str(), v.as_str()]))
            .chain(finalizers.clone().map(String::as_str))
            .chain(owners.clone().flat_map(|r| {
                [
                    r.api_version.as_str(),
                    r.kind.as_str(),
                    r.name.as_str(),
                    r.uid.as_str(),
                ]
            }));
        let mut text = String::new();
        let mut ends = Vec::new();
        for s in strings {
            text.push_str(s);
            ends.push(u32::try_from(text.len()).map_err(|_| TooLarge)?);
        }
        ends.extend(owners.clone().map(flags));
        let count = |n: usize| u32::try_from(n).map_err(|_| TooLarge);
        Ok(Self {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
            present: texts
                .iter()
                .enumerate()
                .filter(|(_, t)| t.is_some())
                .fold(0, |bits, (i, _)| bits | 1 << i)
                | if meta.labels.is_some() { LABELS } else { 0 }
                | if meta.finalizers.is_some() {
                    FINALIZERS
                } else {
                    0
                }
                | if meta.owner_references.is_some() {
                    OWNERS
                } else {
                    0
                },
            labels: count(labels.count())?,
            finalizers: count(finalizers.count())?,
            owners: count(owners.count())?,
            generation: meta.generation,
            deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
            creation_timestamp: meta.creation_timestamp.clone(),
            deletion_timestamp: meta.deletion_timestamp.clone(),
        })
    }

    /// The `i`-th string of the text.
    fn at(&self, i: usize) -> &str {
        let start = match i {
            0 => 0,
            i => self.ends[i - 1] as usize,
        };
        &self.text[start..self.ends[i] as usize]
    }

    fn optional(&self, field: Text) -> Option<&str> {
        let bit = field as usize;
        (self.present & 1 << bit != 0).then(|| {
            let before = (self.present & ((1 << bit) - 1)).count_ones();
            self.at(before as usize)
        })
    }

    /// The index of the first string after the optional ones.
    fn after_texts(&self) -> usize {
        (self.present & (LABELS - 1)).count_ones() as usize
    }

    /// `n` strings from index `first`.
    fn strings(&self, first: usize, n: u32) -> impl Iterator<Item = &str> {
        (first..first + n as usize).map(|i| self.at(i))
    }

    fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut strings = self.strings(self.after_texts(), 2 * self.labels);
        std::iter::from_fn(move || Some((strings.next()?, strings.next()?)))
    }

    fn finalizers(&self) -> impl Iterator<Item = &str> {
        let first = self.after_texts() + 2 * self.labels as usize;
        self.strings(first, self.finalizers)
    }

    fn owners(&self) -> impl Iterator<Item = OwnerRef<'_>> {
        let first = self.after_texts() + 2 * self.labels as usize + self.finalizers as usize;
        let flags_at = first + 4 * self.owners as usize;
        (0..self.owners as usize).map(move |k| {
            let s = |j| self.at(first + 4 * k + j);
            let word = self.ends[flags_at + k];
            OwnerRef {
                api_version: s(0),
                kind: s(1),
                name: s(2),
                uid: s(3),
                controller: flag(word, 0),
                block_owner_deletion: flag(word, 2),
            }
        })
    }

    pub(crate) fn to_object_meta(&self) -> ObjectMeta {
        let text = |field| self.optional(field).map(str::to_owned);
        let present = |bit: u8| self.present & bit != 0;
        ObjectMeta {
            name: text(Text::Name),
            generate_name: text(Text::GenerateName),
            namespace: text(Text::Namespace),
            uid: text(Text::Uid),
            resource_version: text(Text::ResourceVersion),
            generation: self.generation,
            creation_timestamp: self.creation_timestamp.clone(),
            deletion_timestamp: self.deletion_timestamp.clone(),
            deletion_grace_period_seconds: self.deletion_grace_period_seconds,
            labels: present(LABELS).then(|| {
                self.labels()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect::<BTreeMap<_, _>>()
            }),
            finalizers: present(FINALIZERS).then(|| self.finalizers().map(str::to_owned).collect()),
            owner_references: present(OWNERS)
                .then(|| self.owners().map(|r| r.to_owner_reference()).collect()),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "compact")]
    use crate::labels::Selector;

    fn owner(name: &str, controller: Option<bool>, block: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller,
            block_owner_deletion: block,
        }
    }

    fn full() -> ObjectMeta {
        let time = |s: &str| Some(Time(s.parse().unwrap()));
        ObjectMeta {
            name: Some("web-1".into()),
            generate_name: Some("web-".into()),
            namespace: Some("demo".into()),
            uid: Some("u-1".into()),
            resource_version: Some("42".into()),
            generation: Some(3),
            creation_timestamp: time("2026-01-02T03:04:05Z"),
            deletion_timestamp: time("2026-01-02T03:05:05Z"),
            deletion_grace_period_seconds: Some(30),
            labels: Some(BTreeMap::from([
                ("app".into(), "web".into()),
                ("tier".into(), String::new()),
            ])),
            finalizers: Some(vec!["a/b".into(), "c".into()]),
            owner_references: Some(vec![
                owner("rs-0", None, Some(false)),
                owner("rs-1", Some(true), Some(true)),
                owner("rs-2", Some(false), None),
            ]),
            ..Default::default()
        }
    }

    #[cfg(feature = "compact")]
    #[test]
    fn packed_metadata_reads_and_rebuilds_every_field_it_keeps() {
        let meta = ObjectMeta {
            annotations: Some(BTreeMap::from([("a".into(), "b".into())])),
            self_link: Some("/api/v1/x".into()),
            ..full()
        };
        let packed = PackedMeta::new(&meta).unwrap();
        let (p, f) = (MetaRef::packed(&packed), MetaRef::new(&meta));
        assert_eq!(p.name(), Some("web-1"));
        assert_eq!(p.generate_name(), f.generate_name());
        assert_eq!(p.namespace(), Some("demo"));
        assert_eq!(p.uid(), f.uid());
        assert_eq!(p.resource_version(), Some("42"));
        assert_eq!(p.generation(), Some(3));
        assert_eq!(p.creation_timestamp(), f.creation_timestamp());
        assert_eq!(p.deletion_timestamp(), f.deletion_timestamp());
        assert_eq!(p.deletion_grace_period_seconds(), Some(30));
        assert_eq!(
            p.labels().collect::<Vec<_>>(),
            [("app", "web"), ("tier", "")]
        );
        assert_eq!(p.label("tier"), Some(""));
        assert_eq!(p.label("nope"), None);
        assert_eq!(p.finalizers().collect::<Vec<_>>(), ["a/b", "c"]);
        assert_eq!(
            p.owner_references().collect::<Vec<_>>(),
            f.owner_references().collect::<Vec<_>>()
        );
        assert_eq!(p.controller().map(|r| r.name), Some("rs-1"));
        assert_eq!(
            p.to_object_meta(),
            full(),
            "all but annotations, managedFields and selfLink"
        );
    }

    #[cfg(feature = "compact")]
    #[test]
    fn absent_and_empty_fields_stay_apart() {
        let meta = ObjectMeta {
            name: Some(String::new()),
            labels: Some(BTreeMap::new()),
            finalizers: None,
            owner_references: Some(Vec::new()),
            ..Default::default()
        };
        let packed = PackedMeta::new(&meta).unwrap();
        let p = MetaRef::packed(&packed);
        assert_eq!((p.name(), p.namespace(), p.uid()), (Some(""), None, None));
        assert_eq!(p.controller(), None);
        assert_eq!(p.to_object_meta(), meta);
        let none = PackedMeta::new(&ObjectMeta::default()).unwrap();
        assert_eq!(
            MetaRef::packed(&none).to_object_meta(),
            ObjectMeta::default()
        );
    }

    #[cfg(feature = "compact")]
    #[test]
    fn selectors_match_packed_labels_as_they_match_the_map() {
        let meta = full();
        let packed = PackedMeta::new(&meta).unwrap();
        for selector in [
            "app=web",
            "app in (db,web),tier",
            "tier=",
            "!tier",
            "app!=web",
            "x notin ()",
        ] {
            let selector: Selector = selector.parse().unwrap();
            assert_eq!(
                selector.matches(&MetaRef::packed(&packed)),
                selector.matches(meta.labels.as_ref().unwrap()),
                "{selector}"
            );
        }
    }

    #[test]
    fn objects_of_a_type_without_a_reader_are_read_from_their_object_meta() {
        let pod = k8s_openapi::api::core::v1::Pod {
            metadata: full(),
            ..Default::default()
        };
        let meta = meta_ref(&pod);
        assert_eq!(meta.name(), Some("web-1"));
        assert_eq!(meta.to_object_meta(), pod.metadata);
    }
}
