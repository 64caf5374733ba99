//! [`PatchBody`]: the body of a PATCH, tagged with how the server is to apply it.
//!
//! # Contract
//!
//! - The body is serialized as JSON and sent with the content type of its variant
//!   ([`PatchType::content_type`]); JSON is valid YAML, so it serves apply too.
//! - [`PatchBody::Apply`] is server-side apply: the body is the caller's whole intent for the
//!   fields it manages, so it must carry `apiVersion`, `kind` and `metadata.name` (typed
//!   objects serialize their `apiVersion` and `kind` themselves) and no
//!   `metadata.managedFields`. It needs [`PatchOptions::field_manager`]; without one the
//!   request is refused before it is sent. `PatchOptions::force` is accepted only with it.
//!
//! ```
//! use kubekit::clientset::PatchBody;
//! use kubekit::rest::PatchType;
//! use serde_json::json;
//!
//! let scale = PatchBody::Merge(json!({"spec": {"replicas": 3}}));
//! assert_eq!(scale.patch_type(), PatchType::Merge);
//!
//! let ops = PatchBody::Json(json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]));
//! assert_eq!(ops.patch_type().content_type(), "application/json-patch+json");
//! ```
//!
//! [`PatchOptions::field_manager`]: super::PatchOptions::field_manager

use serde::Serialize;

use crate::rest::PatchType;

/// A patch body of any serializable type: usually a `serde_json::Value`, or for
/// [`PatchBody::Apply`] a typed object.
#[derive(Debug, Clone, PartialEq)]
pub enum PatchBody<T = serde_json::Value> {
    /// RFC 6902 JSON patch: a list of operations (`[{"op": "add", "path": …, "value": …}]`).
    Json(T),
    /// RFC 7386 JSON merge patch: fields replace, `null` deletes, lists are replaced whole.
    Merge(T),
    /// Strategic merge patch: like a merge patch, but lists of built-in types merge by
    /// their key (containers by name, …). Not supported for custom resources.
    Strategic(T),
    /// Server-side apply with the field manager of the [`PatchOptions`](super::PatchOptions).
    Apply(T),
}

impl<T: Serialize> PatchBody<T> {
    /// How the server applies this patch.
    pub fn patch_type(&self) -> PatchType {
        match self {
            PatchBody::Json(_) => PatchType::Json,
            PatchBody::Merge(_) => PatchType::Merge,
            PatchBody::Strategic(_) => PatchType::StrategicMerge,
            PatchBody::Apply(_) => PatchType::Apply,
        }
    }

    /// The patch body.
    pub fn body(&self) -> &T {
        match self {
            PatchBody::Json(b)
            | PatchBody::Merge(b)
            | PatchBody::Strategic(b)
            | PatchBody::Apply(b) => b,
        }
    }

    /// Whether this is a server-side apply.
    pub fn is_apply(&self) -> bool {
        matches!(self, PatchBody::Apply(_))
    }
}
