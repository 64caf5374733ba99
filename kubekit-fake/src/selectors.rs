//! Label and field selectors of list, watch and deletecollection requests.
//!
//! Label selectors are kubekit's ([`kubekit::labels::Selector`]: equality- and set-based).
//! Field selectors support `metadata.name` and `metadata.namespace` with `=`, `==` and
//! `!=`, which every resource of the real server supports; any other field is refused with
//! `400 BadRequest` (the real server supports more for some built-in types, e.g. a Pod's
//! `spec.nodeName`; the fake does not).

use std::collections::BTreeMap;

use kubekit::labels::Selector;
use serde_json::Value;

use crate::status::{ApiError, ApiResult};

/// The selectors of one request.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    labels: Selector,
    fields: Vec<(Field, bool, String)>,
}

#[derive(Debug, Clone, Copy)]
enum Field {
    Name,
    Namespace,
}

impl Filter {
    /// Parses `labelSelector` and `fieldSelector`.
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> ApiResult<Self> {
        let labels = labels
            .unwrap_or("")
            .parse::<Selector>()
            .map_err(|e| ApiError::bad_request(e.reason))?;
        let mut parsed = Vec::new();
        for term in fields.unwrap_or("").split(',').filter(|t| !t.is_empty()) {
            let (key, equal, value) = if let Some((k, v)) = term.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: {term}"
                )));
            };
            let field = match key.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "field label not supported: {other}"
                    )));
                }
            };
            parsed.push((field, equal, value.trim().to_string()));
        }
        Ok(Self {
            labels,
            fields: parsed,
        })
    }

    /// Whether the selectors select nothing out (`remainingItemCount` is only given then).
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether `obj` is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        let meta = &obj["metadata"];
        self.fields.iter().all(|(field, equal, value)| {
            let actual = match field {
                Field::Name => &meta["name"],
                Field::Namespace => &meta["namespace"],
            };
            (actual.as_str().unwrap_or("") == value) == *equal
        }) && (self.labels.is_empty() || self.labels.matches(&labels(obj)))
    }
}

/// An object's labels.
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn set_based_label_and_name_field_selectors_select_together() {
        let f = Filter::parse(Some("app in (a,b),!canary"), Some("metadata.name!=x")).unwrap();
        let obj = |name: &str, labels: Value| json!({"metadata": {"name": name, "labels": labels}});
        assert!(f.matches(&obj("y", json!({"app": "a"}))));
        assert!(!f.matches(&obj("x", json!({"app": "a"}))));
        assert!(!f.matches(&obj("y", json!({"app": "a", "canary": "1"}))));
        assert!(!f.matches(&obj("y", json!({"app": "c"}))));
    }

    #[test]
    fn an_unsupported_field_selector_is_a_bad_request() {
        let e = Filter::parse(None, Some("spec.nodeName=a")).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "field label not supported: spec.nodeName")
        );
    }
}
