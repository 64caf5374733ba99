//! Between the protobuf and the JSON form of a resource known by its `apiVersion` and `kind`
//! alone: for code that holds objects as JSON values (an API server, a dynamic client) and
//! reads or writes protobuf bodies.
//!
//! ```
//! use kubekit_protobuf::{Unknown, json_codec};
//! use serde_json::json;
//!
//! let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
//!                 "metadata": {"name": "settings"}, "data": {"mode": "fast"}});
//! let codec = json_codec("v1", "ConfigMap").expect("a built-in kind");
//! let bytes = codec.from_json(&cm).unwrap(); // k8s\0 + runtime.Unknown
//! let unknown = Unknown::read(&bytes).unwrap();
//! let codec = json_codec(&unknown.api_version, &unknown.kind).unwrap();
//! assert_eq!(codec.to_json(unknown.raw).unwrap(), cm);
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::LazyLock;

use serde_json::Value;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};

use crate::envelope::{decode_message, encode_raw, envelope};
use crate::registry::{ResourceMessage, ResourceVisitor, for_each_resource};
use crate::runtime::{Encoder, Error, Message, WireType};

/// Converts one resource type between its protobuf message and its JSON form: see
/// [`json_codec`].
pub struct JsonCodec {
    api_version: &'static str,
    kind: &'static str,
    to_json: fn(&[u8]) -> Result<Value, Error>,
    /// The message (no envelope) of a JSON object.
    message: fn(&Value) -> Result<Vec<u8>, Error>,
}

impl fmt::Debug for JsonCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonCodec")
            .field("api_version", &self.api_version)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl JsonCodec {
    /// The `apiVersion` of the type, `apps/v1`.
    pub fn api_version(&self) -> &'static str {
        self.api_version
    }

    /// The kind of the type, `Deployment`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The JSON form of a message (no envelope) of this type, `apiVersion` and `kind`
    /// included: the object the server's JSON encoding of the same object decodes to.
    pub fn to_json(&self, raw: &[u8]) -> Result<Value, Error> {
        (self.to_json)(raw)
    }

    /// The object whose JSON form is `value`, encoded in an envelope; an error when
    /// `value` is not an object of this type.
    pub fn from_json(&self, value: &Value) -> Result<Vec<u8>, Error> {
        Ok(encode_raw(
            self.api_version,
            self.kind,
            &(self.message)(value)?,
        ))
    }

    /// A list of this type (`{"metadata": <ListMeta>, "items": [...]}`, as a server answers
    /// a list; items need no `apiVersion` and `kind`) encoded as the list kind
    /// (`PodList`) in an envelope, as kube-apiserver encodes it.
    pub fn list_from_json(&self, list: &Value) -> Result<Vec<u8>, Error> {
        let metadata: ListMeta = serde_json::from_value(list["metadata"].clone())
            .map_err(|e| Error::new(format!("a list's metadata: {e}")))?;
        let mut raw = Vec::new();
        for item in list["items"].as_array().into_iter().flatten() {
            let mut item = item.clone();
            if let Some(m) = item.as_object_mut() {
                m.insert("apiVersion".into(), Value::from(self.api_version));
                m.insert("kind".into(), Value::from(self.kind));
            }
            raw.push((self.message)(&item)?);
        }
        let kind = format!("{}List", self.kind);
        Ok(envelope(self.api_version, &kind, |e| {
            e.key(1, WireType::Len);
            e.nested(|e| metadata.encode_fields(e));
            for item in &raw {
                e.key(2, WireType::Len);
                e.bytes(item);
            }
        }))
    }
}

fn to_json<T: ResourceMessage>(raw: &[u8]) -> Result<Value, Error> {
    let value: T = decode_message(raw)?;
    serde_json::to_value(&value)
        .map_err(|e| Error::new(format!("{} {} as JSON: {e}", T::API_VERSION, T::KIND)))
}

fn message<T: ResourceMessage>(value: &Value) -> Result<Vec<u8>, Error> {
    let value = T::deserialize(value)
        .map_err(|e| Error::new(format!("not a {} {}: {e}", T::API_VERSION, T::KIND)))?;
    let mut e = Encoder::default();
    value.encode_fields(&mut e);
    Ok(e.into_bytes())
}

/// An object of `api_version`/`kind` with nothing but `metadata` (a watch's `BOOKMARK`),
/// encoded in an envelope: the form kube-apiserver sends, which needs no other field of
/// the kind, even a required one.
pub fn metadata_only(api_version: &str, kind: &str, metadata: &Value) -> Result<Vec<u8>, Error> {
    let meta: ObjectMeta = serde_json::from_value(metadata.clone())
        .map_err(|e| Error::new(format!("an object's metadata: {e}")))?;
    Ok(envelope(api_version, kind, |e| {
        e.key(1, WireType::Len);
        e.nested(|e| meta.encode_fields(e));
    }))
}

/// A list of objects with nothing but `metadata` (`{"metadata": <ListMeta>, "items":
/// [{"metadata": ...}, ...]}`) encoded as `kind` of `api_version` in an envelope: a
/// `meta.k8s.io/v1` `PartialObjectMetadataList`, as kube-apiserver answers a list asked
/// for `as=PartialObjectMetadataList`.
pub fn metadata_only_list(api_version: &str, kind: &str, list: &Value) -> Result<Vec<u8>, Error> {
    let metadata: ListMeta = serde_json::from_value(list["metadata"].clone())
        .map_err(|e| Error::new(format!("a list's metadata: {e}")))?;
    let mut items = Vec::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let meta: ObjectMeta = serde_json::from_value(item["metadata"].clone())
            .map_err(|e| Error::new(format!("an object's metadata: {e}")))?;
        let mut e = Encoder::default();
        e.key(1, WireType::Len);
        e.nested(|e| meta.encode_fields(e));
        items.push(e.into_bytes());
    }
    Ok(envelope(api_version, kind, |e| {
        e.key(1, WireType::Len);
        e.nested(|e| metadata.encode_fields(e));
        for item in &items {
            e.key(2, WireType::Len);
            e.bytes(item);
        }
    }))
}

/// The JSON codecs, by kind, then by `apiVersion`.
#[derive(Default)]
struct JsonCodecs(HashMap<&'static str, HashMap<&'static str, JsonCodec>>);

impl ResourceVisitor for JsonCodecs {
    fn visit<T: ResourceMessage>(&mut self) {
        let codec = JsonCodec {
            api_version: T::API_VERSION,
            kind: T::KIND,
            to_json: to_json::<T>,
            message: message::<T>,
        };
        self.0
            .entry(T::KIND)
            .or_default()
            .insert(T::API_VERSION, codec);
    }
}

static JSON_CODECS: LazyLock<JsonCodecs> = LazyLock::new(|| {
    let mut codecs = JsonCodecs::default();
    for_each_resource(&mut codecs);
    codecs
});

/// The JSON codec of the resource type named by `api_version` and `kind` (as an envelope's
/// [`Unknown`](crate::Unknown) names it); `None` when it has no protobuf form (a custom
/// resource, a kind of another Kubernetes version).
pub fn json_codec(api_version: &str, kind: &str) -> Option<&'static JsonCodec> {
    JSON_CODECS.0.get(kind)?.get(api_version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Unknown;
    use serde_json::json;

    #[test]
    fn a_deployment_goes_to_protobuf_and_back_to_the_same_json() {
        let deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{
                        "name": "nginx",
                        "image": "nginx",
                        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                    }]},
                },
            },
        });
        let codec = json_codec("apps/v1", "Deployment").unwrap();
        let bytes = codec.from_json(&deployment).unwrap();
        let unknown = Unknown::read(&bytes).unwrap();
        assert!(unknown.is("apps/v1", "Deployment"));
        assert_eq!(codec.to_json(unknown.raw).unwrap(), deployment);
    }

    #[test]
    fn kinds_without_a_protobuf_form_have_no_json_codec() {
        assert!(json_codec("example.com/v1", "App").is_none());
        assert!(
            json_codec("apps/v1", "ConfigMap").is_none(),
            "kind of another group"
        );
        assert!(json_codec("autoscaling/v2", "HorizontalPodAutoscaler").is_some());
        assert!(json_codec("autoscaling/v1", "HorizontalPodAutoscaler").is_some());
    }

    #[test]
    fn json_of_another_kind_or_shape_is_an_error_naming_the_kind() {
        let codec = json_codec("v1", "ConfigMap").unwrap();
        for bad in [
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"n": 1}}),
            json!([1, 2]),
        ] {
            let err = codec.from_json(&bad).unwrap_err().to_string();
            assert!(err.contains("not a v1 ConfigMap"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_malformed_message_is_an_error_not_a_value() {
        let codec = json_codec("v1", "Pod").unwrap();
        assert!(
            codec
                .to_json(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])
                .is_err()
        );
    }

    #[test]
    fn a_list_is_encoded_as_its_list_kind_with_its_metadata_and_items() {
        let codec = json_codec("v1", "ConfigMap").expect("a built-in kind");
        let list = json!({"metadata": {"resourceVersion": "42", "continue": "next"},
            "items": [{"metadata": {"name": "a"}, "data": {"k": "v"}},
                      {"metadata": {"name": "b"}}]});
        let bytes = codec.list_from_json(&list).unwrap();
        let unknown = Unknown::read(&bytes).unwrap();
        assert_eq!(
            (unknown.api_version.as_str(), unknown.kind.as_str()),
            ("v1", "ConfigMapList")
        );
        let (metadata, items) = crate::list_parts(unknown.raw).unwrap();
        assert_eq!(metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(metadata.continue_.as_deref(), Some("next"));
        let names: Vec<Value> = items
            .iter()
            .map(|raw| codec.to_json(raw).unwrap()["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, [json!("a"), json!("b")]);
        assert!(codec.list_from_json(&json!({"metadata": 3})).is_err());
    }

    #[test]
    fn a_bookmark_needs_no_field_but_metadata_even_of_a_kind_with_required_ones() {
        let meta =
            json!({"resourceVersion": "7", "annotations": {"k8s.io/initial-events-end": "true"}});
        let bytes = metadata_only("v1", "Event", &meta).unwrap();
        let unknown = Unknown::read(&bytes).unwrap();
        assert_eq!(unknown.kind, "Event");
        let read = crate::object_meta(unknown.raw).unwrap();
        assert_eq!(read.resource_version.as_deref(), Some("7"));
        assert!(metadata_only("v1", "Event", &json!("x")).is_err());
    }

    #[test]
    fn a_metadata_only_list_holds_each_item_s_metadata() {
        let list = json!({"metadata": {"resourceVersion": "7"},
            "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b", "labels": {"x": "y"}}}]});
        let bytes =
            metadata_only_list("meta.k8s.io/v1", "PartialObjectMetadataList", &list).unwrap();
        let unknown = crate::envelope::Unknown::read(&bytes).unwrap();
        let names = (unknown.api_version.as_str(), unknown.kind.as_str());
        assert_eq!(names, ("meta.k8s.io/v1", "PartialObjectMetadataList"));
        // Field 1, the ListMeta (resourceVersion, field 2: "7"); then two items (field 2),
        // each an ObjectMeta (field 1) with its name (field 1).
        let raw = unknown.raw;
        assert_eq!(&raw[..5], [0x0a, 0x03, 0x12, 0x01, b'7']);
        assert_eq!(&raw[5..11], [0x12, 0x05, 0x0a, 0x03, 0x0a, 0x01]);
        assert_eq!(raw[11], b'a');
        assert!(
            metadata_only_list(
                "meta.k8s.io/v1",
                "PartialObjectMetadataList",
                &json!({"items": [{"metadata": 1}]})
            )
            .is_err()
        );
    }
}
