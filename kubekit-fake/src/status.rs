//! Errors as the real API server reports them: a `metav1.Status` with the HTTP code, the
//! machine-readable reason and the message kube-apiserver writes for the same failure.

use serde_json::{Value, json};

use crate::resources::ResourceInfo;

/// A failed request, answered with a `Status` body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason`, e.g. `NotFound`; empty for none.
    pub reason: String,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`, if any.
    pub details: Option<Value>,
}

/// Result of a request handler.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// An error with no details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
        }
    }

    /// The error with `details` (`metav1.StatusDetails`).
    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// `400 BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `404 NotFound` for `name` of `info`.
    pub fn not_found(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", info.qualified()),
        )
        .with_details(details(info, name))
    }

    /// `404 NotFound` for a path that serves nothing.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    /// `409 AlreadyExists` for `name` of `info`.
    pub fn already_exists(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", info.qualified()),
        )
        .with_details(details(info, name))
    }

    /// `409 Conflict` on `name` of `info`, for `why`.
    pub fn conflict(info: &ResourceInfo, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                info.qualified()
            ),
        )
        .with_details(details(info, name))
    }

    /// `409 Conflict` for a delete precondition (`UID` or `ResourceVersion`) that does
    /// not hold; the real server names the kind here, not the resource.
    pub fn precondition_failed(
        info: &ResourceInfo,
        name: &str,
        field: &str,
        want: &str,
        have: &str,
    ) -> Self {
        let consequence = if field == "UID" {
            "deleted and then recreated"
        } else {
            "modified"
        };
        let mut d = json!({"name": name, "kind": info.kind});
        if !info.group.is_empty() {
            d["group"] = json!(info.group);
        }
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the {field} in the precondition ({want}) does not match the {field} in record ({have}). The object might have been {consequence}",
                info.kind
            ),
        )
        .with_details(d)
    }

    /// `409 Conflict` for a stale `metadata.resourceVersion`.
    pub fn stale(info: &ResourceInfo, name: &str) -> Self {
        Self::conflict(
            info,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// `410 Expired`, e.g. for a watch from a resourceVersion older than the history.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// `415 UnsupportedMediaType` listing the media types (of a body or a patch) that are
    /// accepted.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// `422 Invalid` of `name` of kind `info.kind` (`Kind.group` in the message): `field`
    /// fails with `cause_reason` (e.g. `FieldValueRequired`) and `detail` (e.g.
    /// `Required value: ...`).
    pub fn invalid(
        info: &ResourceInfo,
        name: &str,
        field: &str,
        cause_reason: &str,
        detail: &str,
    ) -> Self {
        Self::invalid_fields(info, name, &[(field, cause_reason, detail.to_string())])
    }

    /// [`invalid`](Self::invalid) with every fault, (field, cause reason, detail), as the
    /// real server aggregates them: one in the message as it is, more as `[a, b]`.
    pub fn invalid_fields<F: AsRef<str>>(
        info: &ResourceInfo,
        name: &str,
        faults: &[(F, &str, String)],
    ) -> Self {
        let causes: Vec<Value> = faults
            .iter()
            .map(|(field, reason, detail)| {
                json!({"reason": reason, "message": detail, "field": field.as_ref()})
            })
            .collect();
        let mut d = json!({"causes": causes});
        if !info.kind.is_empty() {
            d["kind"] = json!(info.kind);
        }
        if !name.is_empty() {
            d["name"] = json!(name);
        }
        if !info.group.is_empty() {
            d["group"] = json!(info.group);
        }
        // The real server names the kind qualified by its group: `Deployment.apps`.
        let kind = if info.group.is_empty() {
            info.kind.clone()
        } else {
            format!("{}.{}", info.kind, info.group)
        };
        // The message names each fault once, as apimachinery's aggregate does.
        let mut errors: Vec<String> = Vec::new();
        for (field, _, detail) in faults {
            let error = format!("{}: {detail}", field.as_ref());
            if !errors.contains(&error) {
                errors.push(error);
            }
        }
        let errors = match errors.as_slice() {
            [one] => one.clone(),
            all => format!("[{}]", all.join(", ")),
        };
        Self::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {errors}"),
        )
        .with_details(d)
    }

    /// `422 Invalid` of a request's list options: `field` is forbidden because of `why`.
    pub fn forbidden_list_option(field: &str, why: &str) -> Self {
        let detail = format!("Forbidden: {why}");
        Self::invalid_options("ListOptions", field, "FieldValueForbidden", &detail)
    }

    /// `422 Invalid` of a request's `options` (`ListOptions`, `CreateOptions`, ...):
    /// `field` fails with `cause_reason` and `detail`, as the real server reports it.
    pub fn invalid_options(options: &str, field: &str, cause_reason: &str, detail: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("{options}.meta.k8s.io \"\" is invalid: {field}: {detail}"),
        )
        .with_details(json!({
            "causes": [{"reason": cause_reason, "message": detail, "field": field}],
            "group": "meta.k8s.io",
            "kind": options,
        }))
    }

    /// `500 InternalError`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// `500 InternalError` for `err`, as apimachinery's `NewInternalError` words it.
    pub(crate) fn internal_error(err: &str) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {err}"),
        )
        .with_details(json!({"causes": [{"message": err}]}))
    }

    /// `409 Conflict` after the object changed under every retry of a write.
    pub(crate) fn conflict_retries(info: &ResourceInfo, name: &str) -> Self {
        Self::stale(info, name)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        });
        // The real server leaves the reason out of some errors (a bare 500, say).
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if let Some(d) = &self.details {
            status["details"] = d.clone();
        }
        status
    }
}

/// `Status.details` naming `name` of `info`.
pub fn details(info: &ResourceInfo, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": info.plural});
    if !info.group.is_empty() {
        d["group"] = json!(info.group);
    }
    d
}

/// A value as Go's `%v` shows it in a field error or a path (`"a"`, `3`).
pub(crate) fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => kubekit::validation::quote(s),
        other => other.to_string(),
    }
}
