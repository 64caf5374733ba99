//! What kube-apiserver 1.37 does with admission configurations when they are written:
//! `MutatingWebhookConfiguration` and `ValidatingWebhookConfiguration`, and the match
//! resources and `matchConditions` that admission policies share with them.
//!
//! # Contract
//!
//! - **Defaults** (before the checks, as the real server decodes with them): a webhook's
//!   `failurePolicy: Fail`, `matchPolicy: Equivalent`, empty `namespaceSelector` and
//!   `objectSelector`, `timeoutSeconds: 10`, a mutating one's `reinvocationPolicy:
//!   Never`, a `service`'s `port: 443`, a rule's `scope: "*"`; a policy's
//!   `failurePolicy: Fail`, and a policy's or binding's match resources `matchPolicy`,
//!   selectors and rules' scope as a webhook's.
//! - **Checks**, in the real server's order and words, each webhook's: its name (a domain
//!   of three segments or more), its rules (operations, groups, versions, resources and
//!   subresources with their wildcards, scope), `failurePolicy`, `matchPolicy`,
//!   `sideEffects` (required, `None` or `NoneOnDryRun`), `timeoutSeconds` (1 to 30), the
//!   label selectors, `reinvocationPolicy`, `clientConfig` (a `url` that is `https` with a
//!   host and without user information, query or fragment, or a `service` with a name,
//!   namespace, port and path), `matchConditions` (named as qualified names, once each,
//!   at most 64, with expressions that compile); then its `admissionReviewVersions` and
//!   whether its name repeats an earlier one's.
//! - **Not done**: the type of a match condition (the real server refuses one that is
//!   not a `bool`, e.g. `'yes'`: there is no type checker); the compiler's messages are
//!   the `cel` crate's.

use serde_json::{Value, json};

use crate::kinds::{duplicate, invalid, not_supported, required};
use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

/// A failed check: field, cause reason, detail.
type Fault = (String, &'static str, String);

const GROUP: &str = "admissionregistration.k8s.io";

/// Fills in the defaults of an admission configuration, policy or binding of `info`.
pub(crate) fn defaults(info: &ResourceInfo, obj: &mut Value) {
    if info.group != GROUP || !obj.is_object() {
        return;
    }
    match info.kind.as_str() {
        kind @ ("ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => {
            let hooks = obj.get_mut("webhooks").and_then(Value::as_array_mut);
            for hook in hooks.into_iter().flatten().filter(|h| h.is_object()) {
                match_defaults(hook, "rules");
                set_default(hook, "failurePolicy", json!("Fail"));
                set_default(hook, "timeoutSeconds", json!(10));
                if kind.starts_with("Mutating") {
                    set_default(hook, "reinvocationPolicy", json!("Never"));
                }
                if let Some(service) = hook
                    .pointer_mut("/clientConfig/service")
                    .filter(|s| s.is_object())
                {
                    set_default(service, "port", json!(443));
                }
            }
        }
        "ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy" => {
            let spec = &mut obj["spec"];
            if spec.is_object() {
                set_default(spec, "failurePolicy", json!("Fail"));
                if let Some(constraints) =
                    spec.get_mut("matchConstraints").filter(|c| c.is_object())
                {
                    resources_defaults(constraints);
                }
            }
        }
        "ValidatingAdmissionPolicyBinding" | "MutatingAdmissionPolicyBinding" => {
            if let Some(resources) = obj
                .pointer_mut("/spec/matchResources")
                .filter(|m| m.is_object())
            {
                resources_defaults(resources);
            }
        }
        _ => {}
    }
}

/// `MatchResources`' defaults: a webhook's, over both its rule lists.
fn resources_defaults(resources: &mut Value) {
    match_defaults(resources, "resourceRules");
    match_defaults(resources, "excludeResourceRules");
}

/// The defaults a webhook and `MatchResources` share: `matchPolicy`, the selectors, and
/// the scope of the rules under `rules`.
fn match_defaults(at: &mut Value, rules: &str) {
    set_default(at, "matchPolicy", json!("Equivalent"));
    set_default(at, "namespaceSelector", json!({}));
    set_default(at, "objectSelector", json!({}));
    let rules = at.get_mut(rules).and_then(Value::as_array_mut);
    for rule in rules.into_iter().flatten().filter(|r| r.is_object()) {
        set_default(rule, "scope", json!("*"));
    }
}

fn set_default(obj: &mut Value, key: &str, value: Value) {
    if obj[key].is_null() {
        obj[key] = value;
    }
}

fn texts(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|s| s.as_str().unwrap_or_default())
        .collect()
}

/// The faults of a rule with operations (a webhook's rule, a policy's resource rule)
/// at `at`, as `validateRuleWithOperations` lists them.
pub(crate) fn rule_faults(rule: &Value, at: &str) -> Vec<Fault> {
    const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    let mut faults = Vec::new();
    let field = |name: &str| format!("{at}.{name}");
    // A list of more than one entry where `*` is one.
    let wildcard_beside = |list: &[&str]| list.len() > 1 && list.contains(&"*");
    let operations = texts(&rule["operations"]);
    if operations.is_empty() {
        faults.push(required(&field("operations"), ""));
    }
    if wildcard_beside(&operations) {
        let why = "if '*' is present, must not specify other operations";
        faults.push(invalid(field("operations"), &rule["operations"], why));
    }
    for (i, operation) in operations.iter().enumerate() {
        if !OPERATIONS.contains(operation) {
            let at = field(&format!("operations[{i}]"));
            faults.push(not_supported(&at, &json!(operation), OPERATIONS));
        }
    }
    let groups = texts(&rule["apiGroups"]);
    if groups.is_empty() {
        faults.push(required(&field("apiGroups"), ""));
    }
    if wildcard_beside(&groups) {
        let why = "if '*' is present, must not specify other API groups";
        faults.push(invalid(field("apiGroups"), &rule["apiGroups"], why));
    }
    let versions = texts(&rule["apiVersions"]);
    if versions.is_empty() {
        faults.push(required(&field("apiVersions"), ""));
    }
    if wildcard_beside(&versions) {
        let why = "if '*' is present, must not specify other API versions";
        faults.push(invalid(field("apiVersions"), &rule["apiVersions"], why));
    }
    for (i, version) in versions.iter().enumerate() {
        if version.is_empty() {
            faults.push(required(&field(&format!("apiVersions[{i}]")), ""));
        }
    }
    faults.extend(resources_faults(&rule["resources"], &field("resources")));
    if let Some(scope) = rule.get("scope").filter(|s| !s.is_null()) {
        const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
        if !scope.as_str().is_some_and(|s| SCOPES.contains(&s)) {
            faults.push(not_supported(&field("scope"), scope, SCOPES));
        }
    }
    faults
}

/// The faults of a rule's `resources` at `at` (`validateResources`): `resource/sub`
/// forms, where `*/*`, `*`, `x/*` and `*/x` cover others.
fn resources_faults(given: &Value, at: &str) -> Vec<Fault> {
    let resources = texts(given);
    let mut faults = Vec::new();
    if resources.is_empty() {
        faults.push(required(at, ""));
    }
    let (mut any_sub_of, mut any_resource_with) = (Vec::new(), Vec::new());
    let mut plain = false;
    for (i, entry) in resources.iter().enumerate() {
        let item = format!("{at}[{i}]");
        if entry.is_empty() {
            faults.push(required(&item, ""));
            continue;
        }
        let Some((resource, sub)) = entry.split_once('/') else {
            plain = *entry != "*";
            continue;
        };
        if any_sub_of.contains(&resource) {
            let why = format!("if '{resource}/*' is present, must not specify {entry}");
            faults.push(invalid(item.clone(), &json!(entry), &why));
        }
        if any_resource_with.contains(&sub) {
            let why = format!("if '*/{sub}' is present, must not specify {entry}");
            faults.push(invalid(item, &json!(entry), &why));
        }
        if sub == "*" {
            any_sub_of.push(resource);
        }
        if resource == "*" {
            any_resource_with.push(sub);
        }
    }
    if resources.len() > 1 && resources.contains(&"*/*") {
        let why = "if '*/*' is present, must not specify other resources";
        faults.push(invalid(at, given, why));
    }
    if resources.contains(&"*") && plain {
        let why = "if '*' is present, must not specify other resources without subresources";
        faults.push(invalid(at, given, why));
    }
    faults
}

/// The faults of a policy's or binding's `MatchResources` at `at`
/// (`validateMatchResources`): `matchPolicy`, the selectors, then each rule of
/// `resourceRules` and `excludeResourceRules` with its `resourceNames`.
pub(crate) fn match_resources_faults(resources: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    if !resources.is_object() {
        return faults;
    }
    let policy = &resources["matchPolicy"];
    const POLICIES: &[&str] = &["Equivalent", "Exact"];
    if !policy.as_str().is_some_and(|p| POLICIES.contains(&p)) {
        faults.push(not_supported(
            &format!("{at}.matchPolicy"),
            policy,
            POLICIES,
        ));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        faults.extend(crate::selectors::label_selector_faults(
            &resources[selector],
            &format!("{at}.{selector}"),
        ));
    }
    for list in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in resources[list].as_array().into_iter().flatten().enumerate() {
            let rule_at = format!("{at}.{list}[{i}]");
            let mut names = Vec::new();
            for (j, name) in texts(&rule["resourceNames"]).into_iter().enumerate() {
                let name_at = format!("{rule_at}.resourceNames[{j}]");
                for why in path_segment_errors(name) {
                    faults.push(invalid(name_at.clone(), &json!(name), why));
                }
                if names.contains(&name) {
                    faults.push(duplicate(&name_at, &json!(name)));
                } else {
                    names.push(name);
                }
            }
            faults.extend(rule_faults(rule, &rule_at));
        }
    }
    faults
}

/// apimachinery's `IsPathSegmentName`: why `name` cannot be a segment of a URL path.
fn path_segment_errors(name: &str) -> Vec<&'static str> {
    let mut errors = Vec::new();
    match name {
        "." => errors.push("may not be '.'"),
        ".." => errors.push("may not be '..'"),
        _ => {}
    }
    if name.contains('/') {
        errors.push("may not contain '/'");
    }
    if name.contains('%') {
        errors.push("may not contain '%'");
    }
    errors
}

/// The faults of `matchConditions` at `at` (`validateMatchConditions`): at most 64, each
/// with an expression that compiles and a qualified name, names once each.
pub(crate) fn match_conditions_faults(conditions: &Value, at: &str) -> Vec<Fault> {
    let conditions = conditions.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut faults = Vec::new();
    if conditions.len() > 64 {
        let detail = format!("Too many: {}: must have at most 64 items", conditions.len());
        faults.push((at.to_string(), "FieldValueTooMany", detail));
    }
    let mut names = Vec::new();
    for (i, condition) in conditions.iter().enumerate() {
        let field = |name: &str| format!("{at}[{i}].{name}");
        let expression = condition["expression"].as_str().unwrap_or_default().trim();
        if expression.is_empty() {
            faults.push(required(&field("expression"), ""));
        } else if let Err(why) = crate::cel_rules::compile(expression) {
            faults.push(invalid(field("expression"), &json!(expression), &why));
        }
        let name = condition["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            faults.push(required(&field("name"), ""));
            continue;
        }
        for why in crate::kinds::qualified_name_errors(name) {
            faults.push(invalid(field("name"), &json!(name), &why));
        }
        if names.contains(&name) {
            faults.push(duplicate(&field("name"), &json!(name)));
        } else {
            names.push(name);
        }
    }
    faults
}

/// The faults of a webhook's `clientConfig.service` at `at` (`ValidateWebhookService`).
fn service_faults(service: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    for key in ["name", "namespace"] {
        if service[key].as_str().is_none_or(str::is_empty) {
            faults.push(required(&format!("{at}.{key}"), ""));
        }
    }
    let port = &service["port"];
    if !port.as_i64().is_some_and(|p| (1..=65535).contains(&p)) {
        let why = "port is not valid: must be between 1 and 65535, inclusive";
        faults.push(invalid(format!("{at}.port"), port, why));
    }
    let path = service["path"].as_str().unwrap_or_default();
    if path.is_empty() || path == "/" {
        return faults;
    }
    let path_at = format!("{at}.path");
    let shown = json!(path);
    if path == "//" {
        faults.push(invalid(path_at, &shown, "segment[0] may not be empty"));
        return faults;
    }
    if !path.starts_with('/') {
        faults.push(invalid(path_at.clone(), &shown, "must start with a '/'"));
    }
    let rest = path.get(1..).unwrap_or_default();
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            let why = format!("segment[{i}] may not be empty");
            faults.push(invalid(path_at.clone(), &shown, &why));
            continue;
        }
        for why in kubekit::validation::dns1123_subdomain(step) {
            let why = format!("segment[{i}]: {why}");
            faults.push(invalid(path_at.clone(), &shown, &why));
        }
    }
    faults
}

/// Refuses a webhook configuration (`MutatingWebhookConfiguration`,
/// `ValidatingWebhookConfiguration`) that kube-apiserver's validation refuses (see the
/// contract). Nothing for other kinds.
pub(crate) fn check_configuration(info: &ResourceInfo, name: &str, obj: &Value) -> ApiResult<()> {
    if info.group != GROUP || !info.kind.ends_with("WebhookConfiguration") {
        return Ok(());
    }
    let mutating = info.kind.starts_with("Mutating");
    let mut faults = Vec::new();
    let mut seen = Vec::new();
    for (i, hook) in obj["webhooks"].as_array().into_iter().flatten().enumerate() {
        let at = |field: &str| format!("webhooks[{i}].{field}");
        faults.extend(webhook_faults(hook, mutating, &at));
        faults.extend(review_versions_faults(
            &hook["admissionReviewVersions"],
            &at("admissionReviewVersions"),
        ));
        let hook_name = hook["name"].as_str().unwrap_or_default();
        if !hook_name.is_empty() {
            if seen.contains(&hook_name) {
                faults.push(duplicate(&at("name"), &json!(hook_name)));
            } else {
                seen.push(hook_name);
            }
        }
    }
    match faults.is_empty() {
        true => Ok(()),
        false => Err(ApiError::invalid_fields(info, name, &faults)),
    }
}

/// The faults of one webhook (a mutating one's with `mutating`), its fields named by
/// `at` (`validateValidatingWebhook`, `validateMutatingWebhook`).
fn webhook_faults(hook: &Value, mutating: bool, at: &dyn Fn(&str) -> String) -> Vec<Fault> {
    let mut faults = Vec::new();
    let hook_name = hook["name"].as_str().unwrap_or_default();
    let subdomain = kubekit::validation::dns1123_subdomain(hook_name);
    if hook_name.is_empty() {
        faults.push(required(&at("name"), ""));
    } else if !subdomain.is_empty() {
        faults.push(invalid(at("name"), &json!(hook_name), &subdomain.join(",")));
    } else if hook_name.split('.').count() < 3 {
        let why = "should be a domain with at least three segments separated by dots";
        faults.push(invalid(at("name"), &json!(hook_name), why));
    }
    for (j, rule) in hook["rules"].as_array().into_iter().flatten().enumerate() {
        faults.extend(rule_faults(rule, &at(&format!("rules[{j}]"))));
    }
    let one_of = |field: &str, allowed: &[&str]| {
        let value = hook.get(field).filter(|v| !v.is_null())?;
        let known = value.as_str().is_some_and(|v| allowed.contains(&v));
        (!known).then(|| not_supported(&at(field), value, allowed))
    };
    faults.extend(one_of("failurePolicy", &["Fail", "Ignore"]));
    faults.extend(one_of("matchPolicy", &["Equivalent", "Exact"]));
    if hook["sideEffects"].is_null() {
        faults.push(required(
            &at("sideEffects"),
            "must specify one of None, NoneOnDryRun",
        ));
    }
    faults.extend(one_of("sideEffects", &["None", "NoneOnDryRun"]));
    if let Some(t) = hook["timeoutSeconds"]
        .as_i64()
        .filter(|t| !(1..=30).contains(t))
    {
        let why = "the timeout value must be between 1 and 30 seconds";
        faults.push(invalid(at("timeoutSeconds"), &json!(t), why));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        faults.extend(crate::selectors::label_selector_faults(
            &hook[selector],
            &at(selector),
        ));
    }
    if mutating {
        faults.extend(one_of("reinvocationPolicy", &["IfNeeded", "Never"]));
    }
    let client = &hook["clientConfig"];
    let given = |key: &str| client.get(key).filter(|v| !v.is_null());
    match (given("url"), given("service")) {
        (Some(url), None) => faults.extend(
            url_faults(url.as_str().unwrap_or_default())
                .into_iter()
                .map(|d| (at("clientConfig.url"), "FieldValueInvalid", d)),
        ),
        (None, Some(service)) => {
            faults.extend(service_faults(service, &at("clientConfig.service")))
        }
        _ => faults.push(required(
            &at("clientConfig"),
            "exactly one of url or service is required",
        )),
    }
    faults.extend(match_conditions_faults(
        &hook["matchConditions"],
        &at("matchConditions"),
    ));
    faults
}

/// The faults of a webhook's `admissionReviewVersions` at `at`: required, one known.
fn review_versions_faults(given: &Value, at: &str) -> Vec<Fault> {
    let versions = texts(given);
    if versions.is_empty() {
        return vec![required(at, "must specify one of v1, v1beta1")];
    }
    if versions.iter().any(|v| matches!(*v, "v1" | "v1beta1")) {
        return Vec::new();
    }
    let shown = serde_json::to_string(&versions).unwrap_or_default();
    let why = "must include at least one of v1, v1beta1";
    vec![crate::kinds::invalid_as(at, &shown, why)]
}

/// What kube-apiserver's webhook URL validation says of `url` (https only, a host, no
/// user information, query or fragment).
fn url_faults(url: &str) -> Vec<String> {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let host = rest.split('/').next().unwrap_or_default();
    let (user, host) = host.rsplit_once('@').map_or(("", host), |(u, h)| (u, h));
    let mut faults = Vec::new();
    if scheme != "https" {
        faults.push(format!(
            "Invalid value: {scheme:?}: 'https' is the only allowed URL scheme{FORM}"
        ));
    }
    if host.is_empty() {
        faults.push(format!("Invalid value: \"\": host must be specified{FORM}"));
    }
    if !user.is_empty() {
        faults.push(format!(
            "Invalid value: {user:?}: user information is not permitted in the URL"
        ));
    }
    if !fragment.is_empty() {
        faults.push(format!(
            "Invalid value: {fragment:?}: fragments are not permitted in the URL"
        ));
    }
    if !query.is_empty() {
        faults.push(format!(
            "Invalid value: {query:?}: query parameters are not permitted in the URL"
        ));
    }
    faults
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(faults: &[Fault]) -> Vec<&str> {
        faults.iter().map(|(f, _, _)| f.as_str()).collect()
    }

    #[test]
    fn resources_wildcards_cover_their_resources_and_subresources() {
        let faults = resources_faults(&json!(["pods/*", "pods/status", "*/scale", "a/scale"]), "r");
        assert_eq!(fields(&faults), ["r[1]", "r[3]"]);
        assert!(
            faults[0]
                .2
                .ends_with("if 'pods/*' is present, must not specify pods/status")
        );
        let faults = resources_faults(&json!(["*", "pods", "*/*"]), "r");
        assert_eq!(fields(&faults), ["r", "r"]);
        assert!(resources_faults(&json!(["*", "pods/status"]), "r").is_empty());
    }

    #[test]
    fn rules_list_operations_groups_versions_resources_then_scope() {
        let faults = rule_faults(&json!({"operations": ["PATCH"], "scope": "Here"}), "x");
        assert_eq!(
            fields(&faults),
            [
                "x.operations[0]",
                "x.apiGroups",
                "x.apiVersions",
                "x.resources",
                "x.scope"
            ]
        );
    }

    #[test]
    fn match_conditions_need_expressions_and_qualified_names_once_each() {
        let conditions = json!([
            {"name": "a", "expression": "true"},
            {"name": "a", "expression": " "},
            {"name": "", "expression": "true"},
        ]);
        let faults = match_conditions_faults(&conditions, "m");
        assert_eq!(
            fields(&faults),
            ["m[1].expression", "m[1].name", "m[2].name"]
        );
        assert_eq!(faults[1].1, "FieldValueDuplicate");
    }

    #[test]
    fn webhooks_and_policies_get_the_real_servers_defaults() {
        let info = |kind: &str| {
            let all = crate::resources::builtin();
            all.into_iter()
                .find(|r| r.group == GROUP && r.kind == kind)
                .expect("a served kind")
        };
        let mut hooks = json!({"webhooks": [{"rules": [{}], "clientConfig": {"service": {}}}]});
        defaults(&info("MutatingWebhookConfiguration"), &mut hooks);
        let hook = &hooks["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["reinvocationPolicy"], "Never");
        assert_eq!(hook["rules"][0]["scope"], "*");
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
        assert_eq!(hook["objectSelector"], json!({}));
        let mut policy = json!({"spec": {"matchConstraints": {"resourceRules": [{}]}}});
        defaults(&info("ValidatingAdmissionPolicy"), &mut policy);
        assert_eq!(policy["spec"]["failurePolicy"], "Fail");
        assert_eq!(
            policy["spec"]["matchConstraints"]["matchPolicy"],
            "Equivalent"
        );
        assert_eq!(
            policy["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
            "*"
        );
    }
}
