//! [`DeleteResponse`]: what the server answers to a delete.
//!
//! # Contract
//!
//! A DELETE is answered either with the object or with a `metav1.Status`, and which one
//! depends on the resource and on how the deletion goes:
//!
//! - the **object**, when it still exists after the request (graceful deletion of a Pod,
//!   finalizers pending, `Foreground` propagation: `metadata.deletionTimestamp` is set), or
//!   when the resource returns deleted objects (custom resources do);
//! - a **`Status`** with `status: "Success"`, when the object is gone at once and its
//!   resource reports that instead (ConfigMaps, Secrets, Deployments in the background, …).
//!
//! A failed delete is never a `DeleteResponse`; it is an [`Error`](crate::rest::Error).
//! The body is decoded once, into whichever of the two it is.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::clientset::DeleteResponse;
//!
//! fn report(res: &DeleteResponse<ConfigMap>) -> &'static str {
//!     match res {
//!         DeleteResponse::Object(obj) if obj.metadata.deletion_timestamp.is_some() => "deleting",
//!         DeleteResponse::Object(_) | DeleteResponse::Status(_) => "deleted",
//!     }
//! }
//! # let _ = report;
//! ```

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use serde::Deserialize;

use crate::rest::protobuf::protobuf_error;
use crate::rest::{Response, Result};

/// The answer to a successful delete: the object or the server's `Status`; see the
/// [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteResponse<T> {
    /// The object as the server last had it (possibly still being deleted), or, for
    /// delete_collection, the list of deleted objects.
    Object(T),
    /// The server's report that the object is gone.
    Status(Box<Status>),
}

impl<T> DeleteResponse<T> {
    /// The returned object, if the server sent one.
    pub fn object(&self) -> Option<&T> {
        match self {
            DeleteResponse::Object(obj) => Some(obj),
            DeleteResponse::Status(_) => None,
        }
    }

    /// The returned object, if the server sent one.
    pub fn into_object(self) -> Option<T> {
        match self {
            DeleteResponse::Object(obj) => Some(obj),
            DeleteResponse::Status(_) => None,
        }
    }

    /// The server's `Status`, if it sent one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            DeleteResponse::Object(_) => None,
            DeleteResponse::Status(s) => Some(s),
        }
    }
}

/// The `apiVersion` and `kind` of a body; every other field is skipped without being
/// built.
#[derive(Deserialize)]
pub(crate) struct TypeHead<'a> {
    #[serde(borrow, default, rename = "apiVersion")]
    pub(crate) api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) kind: Option<Cow<'a, str>>,
}

impl TypeHead<'_> {
    /// Reads the type of `body`; a body that is not a JSON object (or a self-described
    /// CBOR map) has none.
    pub(crate) fn of(body: &[u8]) -> TypeHead<'_> {
        let head = if body.starts_with(&crate::rest::cbor::SELF_DESCRIBED) {
            crate::rest::cbor::from_slice(body).ok()
        } else {
            serde_json::from_slice(body).ok()
        };
        head.unwrap_or(TypeHead {
            api_version: None,
            kind: None,
        })
    }

    fn is_status(&self) -> bool {
        self.api_version.as_deref() == Some("v1") && self.kind.as_deref() == Some("Status")
    }
}

/// Decodes a delete's response: a `v1` `Status` (JSON or protobuf), or else whatever
/// `decode` makes of it.
pub(crate) fn decode_delete<T>(
    response: &Response,
    decode: impl FnOnce(&Response) -> Result<T>,
) -> Result<DeleteResponse<T>> {
    if response.is_protobuf() {
        let body = response.body();
        let status = kubekit_protobuf::Unknown::read(body)
            .ok()
            .filter(|u| u.is("v1", "Status"));
        if let Some(unknown) = status {
            return unknown
                .decode::<Status>()
                .map(|s| DeleteResponse::Status(Box::new(s)))
                .map_err(|e| protobuf_error(response.what(), e, body));
        }
        return decode(response).map(DeleteResponse::Object);
    }
    if TypeHead::of(response.body()).is_status() {
        response
            .decode::<Status>()
            .map(|s| DeleteResponse::Status(Box::new(s)))
    } else {
        decode(response).map(DeleteResponse::Object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_head_reads_api_version_and_kind_anywhere_in_the_object() {
        let body =
            br#"{"metadata":{"name":"x"},"status":"Success","kind":"Status","apiVersion":"v1"}"#;
        assert!(TypeHead::of(body).is_status());
        let object = br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}"#;
        assert!(!TypeHead::of(object).is_status());
        let custom = br#"{"kind":"Status","apiVersion":"example.com/v1"}"#;
        assert!(
            !TypeHead::of(custom).is_status(),
            "a custom kind named Status is an object"
        );
        assert!(!TypeHead::of(b"not json").is_status());
        assert!(!TypeHead::of(b"[1,2]").is_status());
    }
}
