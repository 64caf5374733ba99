//! Typed admission handlers: [`Validator<K>`] (controller-runtime's `Validator[T]`) and
//! [`Defaulter<K>`] (its `Defaulter[T]`), and the [`Verdict`] both return.
//!
//! kubekit decodes the objects of each `AdmissionReview` into `K` once, calls the handler,
//! and answers: a validator's verdict as it is; a defaulter's changes to its `&mut K` as the
//! JSON patch from the object the server sent to the object the defaulter left. A patch
//! never removes a field `K` does not know (so an older `K` never strips newer fields);
//! it removes a field only when the defaulter cleared it.

use std::future::Future;
use std::marker::PhantomData;

use base64::Engine as _;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::review::{AdmissionRequest, AdmissionResponse, Operation, ResponseStatus};

/// The answer to an admission request: allowed or denied (with a message, a reason and an
/// HTTP code), with warnings either way (kubectl prints them).
///
/// ```
/// use kubekit::webhook::Verdict;
///
/// let denied = Verdict::deny("spec.replicas must not be negative").with_reason("Invalid");
/// assert!(!denied.is_allowed());
/// let allowed = Verdict::allow().with_warning("spec.image has no tag");
/// assert!(allowed.is_allowed());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    allowed: bool,
    code: u16,
    message: String,
    reason: String,
    warnings: Vec<String>,
}

impl Verdict {
    /// The request is allowed.
    pub fn allow() -> Self {
        Self {
            allowed: true,
            code: 200,
            message: String::new(),
            reason: String::new(),
            warnings: Vec::new(),
        }
    }

    /// The request is denied with `message`, code 403 and reason `Forbidden` (as
    /// controller-runtime's `admission.Denied`); kube-apiserver tells the client
    /// `admission webhook "<name>" denied the request: <message>`.
    pub fn deny(message: impl Into<String>) -> Self {
        Self {
            allowed: false,
            code: 403,
            message: message.into(),
            reason: "Forbidden".into(),
            warnings: Vec::new(),
        }
    }

    /// Sets the HTTP code of a denial (403 unless set).
    pub fn with_code(mut self, code: u16) -> Self {
        self.code = code;
        self
    }

    /// Sets the reason of a denial (a `metav1.StatusReason` such as `Invalid`).
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = reason.into();
        self
    }

    /// Adds a warning, returned to the client whether the request is allowed or not.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// Whether the request is allowed.
    pub fn is_allowed(&self) -> bool {
        self.allowed
    }

    /// The message of a denial (empty when allowed).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The response for the request `uid`, with `patch` (a JSON patch) when allowed.
    pub(crate) fn into_response(self, uid: String, patch: Option<Vec<u8>>) -> AdmissionResponse {
        let patch = patch.filter(|_| self.allowed);
        AdmissionResponse {
            uid,
            allowed: self.allowed,
            status: (!self.allowed).then_some(ResponseStatus {
                code: self.code,
                message: self.message,
                reason: self.reason,
            }),
            patch_type: patch.as_ref().map(|_| "JSONPatch"),
            patch: patch.map(|p| base64::engine::general_purpose::STANDARD.encode(p)),
            warnings: self.warnings,
        }
    }
}

/// Validates objects of type `K` on create, update and delete (controller-runtime's
/// `admission.Validator[T]`).
///
/// Register it with [`WebhookServer::validator`](super::WebhookServer::validator), which
/// serves it at [`validate_path::<K>()`](super::validate_path), and name that path in a
/// `ValidatingWebhookConfiguration`. A panic in a method becomes a denial (code 500) that
/// says so; the server goes on.
///
/// ```
/// use app_controller::App;
/// use kubekit::webhook::{AdmissionRequest, Validator, Verdict};
///
/// struct AppValidator;
///
/// impl Validator<App> for AppValidator {
///     async fn validate_create(&self, app: &App, _: &AdmissionRequest) -> Verdict {
///         if app.spec.deployment_template.replicas < 0 {
///             return Verdict::deny("spec.deploymentTemplate.replicas must not be negative");
///         }
///         Verdict::allow()
///     }
/// }
/// ```
pub trait Validator<K>: Send + Sync + 'static {
    /// Validates an object being created.
    fn validate_create(
        &self,
        obj: &K,
        req: &AdmissionRequest,
    ) -> impl Future<Output = Verdict> + Send;

    /// Validates an update from `old` to `new`. Unless overridden, `new` is validated as
    /// if it were created.
    fn validate_update(
        &self,
        old: &K,
        new: &K,
        req: &AdmissionRequest,
    ) -> impl Future<Output = Verdict> + Send {
        let _ = old;
        self.validate_create(new, req)
    }

    /// Validates the deletion of `old`. Unless overridden, every deletion is allowed.
    fn validate_delete(
        &self,
        old: &K,
        req: &AdmissionRequest,
    ) -> impl Future<Output = Verdict> + Send {
        let _ = (old, req);
        std::future::ready(Verdict::allow())
    }
}

/// Sets defaults on objects of type `K` being created or updated (controller-runtime's
/// `admission.Defaulter[T]`): change the object in place; kubekit sends the server the
/// JSON patch of the changes.
///
/// Register it with [`WebhookServer::defaulter`](super::WebhookServer::defaulter), which
/// serves it at [`mutate_path::<K>()`](super::mutate_path), and name that path in a
/// `MutatingWebhookConfiguration`. Return [`Verdict::allow`] (with warnings if you like)
/// to apply the changes, or a denial to refuse the object; a panic becomes a denial.
///
/// ```
/// use app_controller::App;
/// use kubekit::webhook::{AdmissionRequest, Defaulter, Verdict};
///
/// struct AppDefaulter;
///
/// impl Defaulter<App> for AppDefaulter {
///     async fn set_defaults(&self, app: &mut App, _: &AdmissionRequest) -> Verdict {
///         if app.spec.deployment_template.replicas == 0 {
///             app.spec.deployment_template.replicas = 1;
///         }
///         Verdict::allow()
///     }
/// }
/// ```
pub trait Defaulter<K>: Send + Sync + 'static {
    /// Sets the defaults of `obj`, being created or updated.
    fn set_defaults(
        &self,
        obj: &mut K,
        req: &AdmissionRequest,
    ) -> impl Future<Output = Verdict> + Send;
}

/// An admission handler of either kind, typed objects hidden: what the server calls.
pub(crate) trait Admit: Send + Sync + 'static {
    /// The verdict on `req`, with the JSON patch to send when allowed.
    fn admit<'a>(&'a self, req: &'a AdmissionRequest) -> BoxFuture<'a, (Verdict, Option<Vec<u8>>)>;
}

/// A [`Validator`] as an [`Admit`].
pub(crate) struct Validating<K, V> {
    pub(crate) validator: V,
    pub(crate) kind: PhantomData<fn() -> K>,
}

/// A [`Defaulter`] as an [`Admit`].
pub(crate) struct Defaulting<K, D> {
    pub(crate) defaulter: D,
    pub(crate) kind: PhantomData<fn() -> K>,
}

/// Decodes one object of a request, or the denial that says why it could not be.
fn decode<K: DeserializeOwned>(raw: Option<&RawValue>, field: &str) -> Result<K, Verdict> {
    let raw = raw.ok_or_else(|| {
        Verdict::deny(format!("the admission request has no {field}")).with_code(400)
    })?;
    serde_json::from_str(raw.get()).map_err(|e| {
        Verdict::deny(format!(
            "the {field} does not decode as {}: {e}",
            std::any::type_name::<K>()
        ))
        .with_code(400)
        .with_reason("BadRequest")
    })
}

impl<K, V> Admit for Validating<K, V>
where
    K: DeserializeOwned + Send + Sync + 'static,
    V: Validator<K>,
{
    fn admit<'a>(&'a self, req: &'a AdmissionRequest) -> BoxFuture<'a, (Verdict, Option<Vec<u8>>)> {
        Box::pin(async move {
            let object = || decode::<K>(req.object.as_deref(), "object");
            let old_object = || decode::<K>(req.old_object.as_deref(), "oldObject");
            let verdict = match req.operation {
                Operation::Create => match object() {
                    Ok(obj) => self.validator.validate_create(&obj, req).await,
                    Err(denied) => denied,
                },
                Operation::Update => match (old_object(), object()) {
                    (Ok(old), Ok(new)) => self.validator.validate_update(&old, &new, req).await,
                    (Err(denied), _) | (_, Err(denied)) => denied,
                },
                Operation::Delete => match old_object() {
                    Ok(old) => self.validator.validate_delete(&old, req).await,
                    Err(denied) => denied,
                },
                Operation::Connect => Verdict::allow(),
            };
            (verdict, None)
        })
    }
}

impl<K, D> Admit for Defaulting<K, D>
where
    K: DeserializeOwned + Serialize + Send + Sync + 'static,
    D: Defaulter<K>,
{
    fn admit<'a>(&'a self, req: &'a AdmissionRequest) -> BoxFuture<'a, (Verdict, Option<Vec<u8>>)> {
        Box::pin(async move {
            if !matches!(req.operation, Operation::Create | Operation::Update) {
                return (Verdict::allow(), None);
            }
            let mut obj: K = match decode(req.object.as_deref(), "object") {
                Ok(obj) => obj,
                Err(denied) => return (denied, None),
            };
            let before = serde_json::to_value(&obj);
            let verdict = self.defaulter.set_defaults(&mut obj, req).await;
            if !verdict.is_allowed() {
                return (verdict, None);
            }
            let sent = req
                .object
                .as_deref()
                .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
            match (sent, before, serde_json::to_value(&obj)) {
                (Some(sent), Ok(before), Ok(after)) => {
                    let patch = defaulting_patch(&sent, &before, &after);
                    (
                        verdict,
                        (!patch.0.is_empty())
                            .then(|| serde_json::to_vec(&patch).unwrap_or_default()),
                    )
                }
                _ => (
                    Verdict::deny(format!(
                        "the defaulted {} does not encode as JSON",
                        std::any::type_name::<K>()
                    ))
                    .with_code(500),
                    None,
                ),
            }
        })
    }
}

/// The JSON patch that takes the object the server `sent` to the defaulted object `after`,
/// given `before`, the object as `K` encoded it before the defaulter ran.
///
/// The changes the defaulter made (`before` → `after`) are the patch when they apply to
/// what was sent; when they do not (a parent `K` writes that the server's object lacks),
/// the patch is `sent` → `after` without removing anything `before` lacked, so fields `K`
/// does not know survive.
fn defaulting_patch(sent: &Value, before: &Value, after: &Value) -> json_patch::Patch {
    let changes = json_patch::diff(before, after);
    let mut probe = sent.clone();
    if json_patch::patch(&mut probe, &changes).is_ok() {
        return changes;
    }
    let mut full = json_patch::diff(sent, after);
    full.0.retain(|op| match op {
        json_patch::PatchOperation::Remove(remove) => {
            before.pointer(remove.path.as_str()).is_some()
        }
        _ => true,
    });
    full
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patch_holds_only_the_defaulters_changes_and_keeps_fields_k_does_not_know() {
        let sent = json!({"spec": {"replicas": 0, "newField": "x"}});
        let before = json!({"spec": {"replicas": 0}});
        let after = json!({"spec": {"replicas": 1}});
        let patch = defaulting_patch(&sent, &before, &after);
        let mut patched = sent.clone();
        json_patch::patch(&mut patched, &patch).unwrap();
        assert_eq!(patched, json!({"spec": {"replicas": 1, "newField": "x"}}));
    }

    #[test]
    fn patch_adds_parents_that_k_writes_but_the_server_did_not_send() {
        let sent = json!({"metadata": {"name": "a"}, "other": 1});
        let before = json!({"metadata": {"name": "a"}, "spec": {"replicas": 0}});
        let after = json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}});
        let patch = defaulting_patch(&sent, &before, &after);
        let mut patched = sent.clone();
        json_patch::patch(&mut patched, &patch).unwrap();
        assert_eq!(
            patched,
            json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}, "other": 1})
        );
    }

    #[test]
    fn a_denial_carries_no_patch_and_an_allowed_answer_its_patch_in_base64() {
        let denied = Verdict::deny("no").into_response("u".into(), Some(b"[]".to_vec()));
        assert!(denied.patch.is_none() && denied.patch_type.is_none());
        let allowed = Verdict::allow().into_response("u".into(), Some(b"[]".to_vec()));
        assert_eq!(allowed.patch.as_deref(), Some("W10="));
        assert_eq!(allowed.patch_type, Some("JSONPatch"));
    }
}
