//! Label and field selectors of list, watch and deletecollection requests.
//!
//! Label selectors are kubekit's ([`kubekit::labels::Selector`], apimachinery's parser
//! and messages). Field selectors are parsed as apimachinery's `fields.ParseSelector`
//! (terms split at unescaped commas, `!=`, `==` or `=`, `\` escapes in values), and each
//! label is converted as the real server converts it for the resource: `metadata.name` and
//! `metadata.namespace` everywhere they apply, and the fields the real server selects on for
//! Pods (`spec.nodeName`, `status.phase`, ...), core and `events.k8s.io` Events, Namespaces,
//! Nodes (`spec.unschedulable`), CertificateSigningRequests and ClusterTrustBundles
//! (`spec.signerName`),
//! Secrets and Services, with its error messages for the others. A field the object lacks
//! selects as `""`, as there.

use std::collections::BTreeMap;

use kubekit::labels::Selector;
use serde_json::{Value, json};

use crate::cel_library::{label_value_errors, qualified_name_errors};
use crate::kinds;
use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

/// The selectors of one request.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    labels: Selector,
    /// (where the value is, whether it must equal (`=`) or differ (`!=`), the value).
    fields: Vec<(Source, bool, String)>,
}

/// Where a selectable field's value is in an object.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A string at a JSON pointer.
    Text(&'static str),
    /// A boolean at a JSON pointer, `true` or `false` (missing: `false`).
    Flag(&'static str),
    /// The first of `status.podIPs` (a Pod's `status.podIP`).
    FirstPodIp,
    /// `source.component`, else `reportingComponent` (a core Event's `source`).
    EventOrigin,
    /// A label the server accepts and never sets (a Pod's `status.podIPs`).
    Nothing,
}

impl Source {
    fn value(self, obj: &Value) -> String {
        let text = |pointer: &str| {
            obj.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match self {
            Source::Text(pointer) => text(pointer),
            Source::Flag(pointer) => {
                let set = obj.pointer(pointer).and_then(Value::as_bool) == Some(true);
                set.to_string()
            }
            Source::FirstPodIp => text("/status/podIPs/0/ip"),
            Source::EventOrigin => match text("/source/component") {
                none if none.is_empty() => text("/reportingComponent"),
                component => component,
            },
            Source::Nothing => String::new(),
        }
    }
}

/// The field `label` of objects of `info`, as the real server converts field labels for
/// the resource; its error message otherwise.
fn selectable(info: &ResourceInfo, label: &str) -> Result<Source, String> {
    use Source::{EventOrigin, FirstPodIp, Flag, Nothing, Text};
    let name = (label == "metadata.name").then_some(Text("/metadata/name"));
    let namespace = (label == "metadata.namespace").then_some(Text("/metadata/namespace"));
    let not_supported = || format!("field label not supported: {label}");
    let found = match (info.group.as_str(), info.kind.as_str()) {
        _ if !info.builtin => {
            return name
                .or(namespace.filter(|_| info.namespaced))
                .ok_or_else(not_supported);
        }
        ("", "Pod") => match label {
            "spec.nodeName" | "spec.host" => Some(Text("/spec/nodeName")),
            "spec.restartPolicy" => Some(Text("/spec/restartPolicy")),
            "spec.schedulerName" => Some(Text("/spec/schedulerName")),
            "spec.serviceAccountName" => Some(Text("/spec/serviceAccountName")),
            "spec.hostNetwork" => Some(Flag("/spec/hostNetwork")),
            "status.phase" => Some(Text("/status/phase")),
            "status.podIP" => Some(FirstPodIp),
            "status.podIPs" => Some(Nothing),
            "status.nominatedNodeName" => Some(Text("/status/nominatedNodeName")),
            _ => name.or(namespace),
        },
        ("", "Event") => match label {
            "reason" => Some(Text("/reason")),
            "reportingComponent" => Some(Text("/reportingComponent")),
            "type" => Some(Text("/type")),
            "source" => Some(EventOrigin),
            _ => label
                .strip_prefix("involvedObject.")
                .and_then(|field| EVENT_OBJECT_FIELDS.iter().find(|f| f.0 == field))
                .map(|f| Text(f.1))
                .or(name)
                .or(namespace),
        },
        ("events.k8s.io", "Event") => match label {
            "reason" => Some(Text("/reason")),
            "type" => Some(Text("/type")),
            "reportingController" => Some(Text("/reportingController")),
            _ => label
                .strip_prefix("regarding.")
                .and_then(|field| EVENT_OBJECT_FIELDS.iter().find(|f| f.0 == field))
                .map(|f| Text(f.2))
                .or(name)
                .or(namespace),
        },
        ("", "Namespace") => match label {
            "status.phase" => Some(Text("/status/phase")),
            _ => name,
        },
        ("", "Secret") => match label {
            "type" => Some(Text("/type")),
            _ => name.or(namespace),
        },
        ("", "Service") => match label {
            "spec.clusterIP" => Some(Text("/spec/clusterIP")),
            "spec.type" => Some(Text("/spec/type")),
            _ => name.or(namespace),
        },
        ("", "Node") => match label {
            "spec.unschedulable" => Some(Flag("/spec/unschedulable")),
            _ => name,
        },
        ("certificates.k8s.io", "CertificateSigningRequest" | "ClusterTrustBundle") => {
            match label {
                "spec.signerName" => Some(Text("/spec/signerName")),
                _ => name,
            }
        }
        // apimachinery's DefaultMetaV1FieldSelectorConversion.
        _ => {
            return name.or(namespace).ok_or_else(|| {
                format!(
                    "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                )
            });
        }
    };
    found.ok_or_else(not_supported)
}

/// The fields of the object an Event is about: (name, its pointer in a core Event, in an
/// `events.k8s.io` one).
const EVENT_OBJECT_FIELDS: &[(&str, &str, &str)] = &[
    ("kind", "/involvedObject/kind", "/regarding/kind"),
    (
        "namespace",
        "/involvedObject/namespace",
        "/regarding/namespace",
    ),
    ("name", "/involvedObject/name", "/regarding/name"),
    ("uid", "/involvedObject/uid", "/regarding/uid"),
    (
        "apiVersion",
        "/involvedObject/apiVersion",
        "/regarding/apiVersion",
    ),
    (
        "resourceVersion",
        "/involvedObject/resourceVersion",
        "/regarding/resourceVersion",
    ),
    (
        "fieldPath",
        "/involvedObject/fieldPath",
        "/regarding/fieldPath",
    ),
];

/// apimachinery's `splitTerms`: at commas not escaped by `\`, escapes kept.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in selector.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// apimachinery's `splitTerm`: the first `!=`, `==` or `=` splits the term; whether it is
/// `=` or `==` (true) or `!=` (false).
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    (0..term.len())
        .filter(|&i| term.is_char_boundary(i))
        .find_map(|i| {
            let rest = &term[i..];
            [("!=", false), ("==", true), ("=", true)]
                .into_iter()
                .find(|(op, _)| rest.starts_with(op))
                .map(|(op, equal)| (&term[..i], equal, &rest[op.len()..]))
        })
}

/// apimachinery's `UnescapeValue`: `\\`, `\,` and `\=` are the characters; any other
/// escape, and an unescaped `,` or `=`, is an error.
fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{e}"
                    ));
                }
                None => return Err("invalid field selector: invalid escape sequence: \\".into()),
            },
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

impl Filter {
    /// Parses `labelSelector` and `fieldSelector` of a request about `info`.
    pub fn parse(
        info: &ResourceInfo,
        labels: Option<&str>,
        fields: Option<&str>,
    ) -> ApiResult<Self> {
        let labels = labels
            .unwrap_or("")
            .parse::<Selector>()
            .map_err(|e| ApiError::bad_request(e.reason))?;
        let selector = fields.unwrap_or("");
        let mut terms = split_terms(selector);
        terms.sort_unstable();
        let mut parsed = Vec::new();
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let (label, equal, value) = split_term(term).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "invalid selector: '{selector}'; can't understand '{term}'"
                ))
            })?;
            parsed.push((
                label,
                equal,
                unescape(value).map_err(ApiError::bad_request)?,
            ));
        }
        let fields = parsed
            .into_iter()
            .map(|(label, equal, value)| {
                let source = selectable(info, label).map_err(ApiError::bad_request)?;
                Ok((source, equal, value))
            })
            .collect::<ApiResult<_>>()?;
        Ok(Self { labels, fields })
    }

    /// Whether the selectors select nothing out (`remainingItemCount` is only given then).
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether `obj` is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        self.fields
            .iter()
            .all(|(source, equal, value)| (source.value(obj) == *value) == *equal)
            && (self.labels.is_empty() || self.labels.matches(&labels(obj)))
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

/// Whether a `metav1.LabelSelector` matches `labels` (an empty one matches everything).
pub(crate) fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    let match_labels = selector["matchLabels"].as_object().into_iter().flatten();
    let labels_match = match_labels
        .into_iter()
        .all(|(k, v)| labels.get(k).map(String::as_str) == v.as_str());
    let expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten();
    labels_match
        && expressions.into_iter().all(|e| {
            let key = e["key"].as_str().unwrap_or_default();
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let have = labels.get(key).map(String::as_str);
            match e["operator"].as_str() {
                Some("In") => have.is_some_and(|h| values.contains(&h)),
                Some("NotIn") => have.is_none_or(|h| !values.contains(&h)),
                Some("Exists") => have.is_some(),
                Some("DoesNotExist") => have.is_none(),
                _ => false,
            }
        })
}

/// The faults of a `metav1.LabelSelector` at `at` (`ValidateLabelSelector`): its
/// `matchLabels` (in key order), then each of its `matchExpressions`.
pub(crate) fn label_selector_faults(selector: &Value, at: &str) -> Vec<kinds::Fault> {
    let mut faults = Vec::new();
    let labels_at = format!("{at}.matchLabels");
    for (key, value) in selector["matchLabels"].as_object().into_iter().flatten() {
        for why in qualified_name_errors(key) {
            faults.push(kinds::invalid(labels_at.clone(), &json!(key), &why));
        }
        let value = value.as_str().unwrap_or_default();
        for why in label_value_errors(value) {
            faults.push(kinds::invalid(labels_at.clone(), &json!(value), &why));
        }
    }
    let expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten();
    for (i, expression) in expressions.enumerate() {
        let field = |name: &str| format!("{at}.matchExpressions[{i}].{name}");
        let values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap_or_default())
            .collect();
        match expression["operator"].as_str().unwrap_or_default() {
            "In" | "NotIn" if values.is_empty() => faults.push(kinds::required(
                &field("values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => faults.push(kinds::forbidden(
                &field("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => faults.push(kinds::invalid(
                field("operator"),
                &expression["operator"],
                "not a valid selector operator",
            )),
        }
        let key = expression["key"].as_str().unwrap_or_default();
        for why in qualified_name_errors(key) {
            faults.push(kinds::invalid(field("key"), &json!(key), &why));
        }
        for (j, value) in values.iter().enumerate() {
            for why in label_value_errors(value) {
                faults.push(kinds::invalid(
                    field(&format!("values[{j}]")),
                    &json!(value),
                    &why,
                ));
            }
        }
    }
    faults
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn set_based_label_and_name_field_selectors_select_together() {
        let f = Filter::parse(
            &info("configmaps"),
            Some("app in (a,b),!canary"),
            Some("metadata.name!=x"),
        )
        .unwrap();
        let obj = |name: &str, labels: Value| json!({"metadata": {"name": name, "labels": labels}});
        assert!(f.matches(&obj("y", json!({"app": "a"}))));
        assert!(!f.matches(&obj("x", json!({"app": "a"}))));
        assert!(!f.matches(&obj("y", json!({"app": "a", "canary": "1"}))));
        assert!(!f.matches(&obj("y", json!({"app": "c"}))));
    }

    fn info(plural: &str) -> ResourceInfo {
        crate::resources::builtin()
            .into_iter()
            .find(|r| r.plural == plural && r.group.is_empty())
            .unwrap()
    }

    #[test]
    fn unsupported_field_selectors_are_bad_requests_with_the_servers_messages() {
        for (plural, selector, message) in [
            ("pods", "spec.foo=a", "field label not supported: spec.foo"),
            (
                "configmaps",
                "spec.nodeName=a",
                "\"spec.nodeName\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            ),
            (
                "namespaces",
                "metadata.namespace=a",
                "field label not supported: metadata.namespace",
            ),
            ("pods", "a", "invalid selector: 'a'; can't understand 'a'"),
            (
                "pods",
                "spec.nodeName=a=b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                "pods",
                "spec.nodeName=a\\",
                "invalid field selector: invalid escape sequence: \\",
            ),
        ] {
            let e = Filter::parse(&info(plural), None, Some(selector)).unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (400, message), "{selector}");
        }
    }

    #[test]
    fn pod_fields_select_by_their_values_and_missing_ones_as_empty() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"},
                         "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}});
        let selects = |selector: &str| {
            Filter::parse(&info("pods"), None, Some(selector))
                .unwrap()
                .matches(&pod)
        };
        assert!(selects("spec.nodeName=n1,status.phase=Running"));
        assert!(selects("spec.host==n1"));
        assert!(selects("status.podIP=10.0.0.1"));
        assert!(selects("spec.hostNetwork=false,spec.schedulerName="));
        assert!(!selects("status.phase!=Running"));
        assert!(selects("metadata.name=p,spec.nodeName!=n2"));
    }
}
