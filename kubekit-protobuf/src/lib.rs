//! The Kubernetes API's protobuf encoding (`application/vnd.kubernetes.protobuf`) for
//! k8s-openapi's types: decoding straight into them and encoding from them, with no JSON in
//! between.
//!
//! # What it promises
//!
//! - Every type k8s-openapi has for a message of the API's `generated.proto` files (of the
//!   `k8s.io/api`, `k8s.io/apimachinery`, `k8s.io/apiextensions-apiserver` and
//!   `k8s.io/kube-aggregator` modules the control plane is pinned to) implements
//!   [`Message`]; lists are `k8s_openapi::List<T>`. The implementations are generated
//!   (`generated.rs`, by `kubekit-protobuf-gen`), for whichever Kubernetes version the
//!   program picked for k8s-openapi.
//! - A decoded object equals the one the JSON form of the same object decodes to: a field
//!   the Go type leaves out of JSON when zero is `None` when zero, a zero `Time` is `None`,
//!   `Time` keeps seconds and `MicroTime` microseconds, invalid UTF-8 in a string becomes
//!   U+FFFD as the server's JSON encoder writes it.
//! - Bad input is an [`Error`] naming the fields that lead to the fault, never a panic;
//!   a length prefix is checked against the input before anything is allocated, and
//!   messages nest at most [`MAX_DEPTH`](runtime::MAX_DEPTH) deep.
//! - With the `json` feature, `json_codec` converts any built-in kind between its
//!   protobuf and its JSON form (for code that holds objects as JSON, as kubekit-fake
//!   does); without it, nothing of the JSON conversions is compiled.
//! - With the `encode` feature, the registry's codecs ([`codec`]) encode too
//!   ([`Codec::encode`]); without it they only decode, and a type's encoder is compiled
//!   only where [`encode`] is called for it (each message's `encode_fields` is `#[inline]`).
//! - Custom resources have no protobuf form: they are not here, and the server never sends
//!   them as protobuf.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit_protobuf::{decode, encode};
//!
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! cm.data = Some([("mode".to_string(), "fast".to_string())].into());
//! let bytes = encode(&cm); // k8s\0 + runtime.Unknown{typeMeta: v1 ConfigMap, raw: …}
//! assert_eq!(decode::<ConfigMap>(&bytes).unwrap(), cm);
//! ```

mod envelope;
#[allow(clippy::all)]
mod generated;
#[cfg(feature = "json")]
mod json;
mod registry;
pub mod runtime;
mod special;

pub use envelope::{
    CONTENT_TYPE, MAGIC, Split, Unknown, WATCH_CONTENT_TYPE, WatchEvent, decode, decode_message,
    decode_message_with, encode, encode_as, encode_raw, split_frame,
};
#[cfg(feature = "json")]
pub use json::{JsonCodec, json_codec, metadata_only, metadata_only_list};
pub use registry::{
    Codec, ListParts, ResourceMessage, ResourceVisitor, codec, for_each_resource, list_parts,
    object_meta, object_meta_with, split_list, without_managed_fields,
};
pub use runtime::{DecodeOptions, Error, Message};
