//! The wire types of the reviews kube-apiserver sends a webhook: `admission.k8s.io/v1`
//! `AdmissionReview` and `apiextensions.k8s.io/v1` `ConversionReview` (neither is in
//! k8s-openapi, which holds only the types the API serves).
//!
//! Objects stay as the server sent them ([`RawValue`]) until a handler decodes them into
//! its own type, so a review is parsed once and an object is decoded once.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The `apiVersion` of the admission reviews kubekit serves.
pub(crate) const ADMISSION_API_VERSION: &str = "admission.k8s.io/v1";
/// The `apiVersion` of the conversion reviews kubekit serves.
pub(crate) const CONVERSION_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// The `apiVersion` and `kind` of a review, read before the rest so that a review of
/// another kind or version gets a clear error instead of a decoding one.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TypeMeta {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
}

/// An `AdmissionReview` as kube-apiserver sends it.
#[derive(Deserialize)]
pub(crate) struct AdmissionReviewIn {
    pub request: Option<AdmissionRequest>,
}

/// An `AdmissionReview` as the webhook answers it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AdmissionReviewOut {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub response: AdmissionResponse,
}

/// A group, version and kind, as an admission request names them.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct GroupVersionKind {
    /// The API group (`""` for the core group).
    #[serde(default)]
    pub group: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
}

/// A group, version and resource, as an admission request names them.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct GroupVersionResource {
    /// The API group (`""` for the core group).
    #[serde(default)]
    pub group: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The resource (plural name).
    #[serde(default)]
    pub resource: String,
}

/// The operation an admission request is about.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// The object is being created.
    Create,
    /// The object is being replaced or patched.
    Update,
    /// The object is being deleted.
    Delete,
    /// A connect request (`pods/exec`, `pods/portforward`, …).
    Connect,
}

/// Who sent the request being admitted.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct UserInfo {
    /// The user's name.
    #[serde(default)]
    pub username: String,
    /// The user's uid.
    #[serde(default)]
    pub uid: String,
    /// The groups the user is in.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// The request of an `AdmissionReview`: what is being done, by whom, to which object.
///
/// A handler gets it next to the typed objects; the objects themselves are decoded by
/// kubekit ([`Validator`](super::Validator), [`Defaulter`](super::Defaulter)).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// The request's uid, echoed in the response.
    pub uid: String,
    /// The kind of the object, in the version the webhook asked for.
    #[serde(default)]
    pub kind: GroupVersionKind,
    /// The resource being admitted.
    #[serde(default)]
    pub resource: GroupVersionResource,
    /// The subresource, if any (`status`, `scale`, …).
    #[serde(default)]
    pub sub_resource: Option<String>,
    /// The object's name (empty on a create with `generateName`).
    #[serde(default)]
    pub name: String,
    /// The object's namespace (empty for cluster-scoped objects).
    #[serde(default)]
    pub namespace: String,
    /// The operation.
    pub operation: Operation,
    /// The requesting user.
    #[serde(default)]
    pub user_info: UserInfo,
    /// Whether the request is a dry run (a webhook with side effects must not apply them).
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub(crate) object: Option<Box<RawValue>>,
    #[serde(default)]
    pub(crate) old_object: Option<Box<RawValue>>,
}

/// The `status` of a denied admission response (a `metav1.Status` subset).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResponseStatus {
    pub code: u16,
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// The response of an `AdmissionReview`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ResponseStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<&'static str>,
    /// The base64 of the JSON patch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A `ConversionReview` as kube-apiserver sends it.
#[derive(Deserialize)]
pub(crate) struct ConversionReviewIn {
    pub request: Option<ConversionRequest>,
}

/// The request of a `ConversionReview`: objects to convert into one version.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionRequest {
    pub uid: String,
    #[serde(rename = "desiredAPIVersion")]
    pub desired_api_version: String,
    #[serde(default)]
    pub objects: Vec<Box<RawValue>>,
}

/// A `ConversionReview` as the webhook answers it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionReviewOut {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub response: ConversionResponse,
}

/// The response of a `ConversionReview`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionResponse {
    pub uid: String,
    pub converted_objects: Vec<serde_json::Value>,
    pub result: ConversionResult,
}

/// The `result` of a conversion response (a `metav1.Status` subset).
#[derive(Serialize)]
pub(crate) struct ConversionResult {
    pub status: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}
