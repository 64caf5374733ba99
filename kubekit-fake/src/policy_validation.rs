//! The checks kube-apiserver 1.37 makes of ValidatingAdmissionPolicies,
//! MutatingAdmissionPolicies and their bindings when they are written, with its messages
//! and in its order: failure, reinvocation and patch types, `paramKind`, match
//! constraints and bindings' match resources (see `admission_config`) and a mutating
//! policy's operations, `matchConditions`, variables (CEL identifiers, expressions that
//! compile), validations (`expression`, `messageExpression`, `message`, `reason`),
//! mutations and their expressions, bindings' `policyName`, `paramRef` and
//! `validationActions`. The errors of the real server's declarative validation (a
//! validating binding's missing `policyName` and `validationActions`) come last, as
//! there.
//!
//! Not checked: audit annotations, and the DNS forms of `paramKind` and
//! `policyName`. The compiler's messages are the `cel` crate's, not cel-go's.

use serde_json::Value;

use crate::admission_config::{match_conditions_faults, match_resources_faults};
use crate::cel_library::go_quote;
use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

/// A failed check: field, cause reason, detail.
type Fault = (String, &'static str, String);

/// Refuses a policy or binding of `info`'s kind (any other object passes) that the real
/// server refuses.
pub(crate) fn check(info: &ResourceInfo, name: &str, obj: &Value) -> ApiResult<()> {
    if info.group != "admissionregistration.k8s.io" {
        return Ok(());
    }
    let spec = &obj["spec"];
    let faults = match info.kind.as_str() {
        "ValidatingAdmissionPolicy" => policy(spec, false),
        "MutatingAdmissionPolicy" => policy(spec, true),
        "ValidatingAdmissionPolicyBinding" => binding(spec, false),
        "MutatingAdmissionPolicyBinding" => binding(spec, true),
        _ => return Ok(()),
    };
    match faults.is_empty() {
        true => Ok(()),
        false => Err(ApiError::invalid_fields(info, name, &faults)),
    }
}

fn required(field: impl Into<String>, why: &str) -> Fault {
    let detail = match why {
        "" => "Required value".to_string(),
        why => format!("Required value: {why}"),
    };
    (field.into(), "FieldValueRequired", detail)
}

fn invalid(field: impl Into<String>, value: &str, why: &str) -> Fault {
    let detail = format!("Invalid value: {}: {why}", go_quote(value));
    (field.into(), "FieldValueInvalid", detail)
}

/// `field`'s value, when it is a string not among `supported`.
fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Option<Fault> {
    let v = value.as_str().filter(|v| !supported.contains(v))?;
    let supported: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    let detail = format!(
        "Unsupported value: {}: supported values: {}",
        go_quote(v),
        supported.join(", ")
    );
    Some((field.into(), "FieldValueNotSupported", detail))
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// The faults of an expression at `field` (of a mutation with `mutation`): required
/// (with `why`) when blank, else its compile error.
fn expression(field: String, source: &Value, why: &str, mutation: bool, faults: &mut Vec<Fault>) {
    let source = text(source);
    if source.trim().is_empty() {
        faults.push(required(field, why));
        return;
    }
    let compiled = match mutation {
        true => crate::cel_rules::compile_mutation(source.trim()),
        false => crate::cel_rules::compile(source).map(drop),
    };
    if let Err(why) = compiled {
        faults.push(invalid(field, source, &why));
    }
}

/// A CEL identifier that is not a reserved word.
fn is_cel_identifier(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.contains(&name)
}

/// A policy's spec (a mutating one's with `mutating`).
fn policy(spec: &Value, mutating: bool) -> Vec<Fault> {
    let mut faults = Vec::new();
    faults.extend(not_supported(
        "spec.failurePolicy",
        &spec["failurePolicy"],
        &["Fail", "Ignore"],
    ));
    if let Some(kind) = spec.get("paramKind").filter(|k| k.is_object()) {
        for field in ["apiVersion", "kind"] {
            if text(&kind[field]).is_empty() {
                faults.push(required(format!("spec.paramKind.{field}"), ""));
            }
        }
    }
    let constraints = &spec["matchConstraints"];
    if !constraints.is_object() {
        faults.push(required("spec.matchConstraints", ""));
    } else {
        faults.extend(match_resources_faults(constraints, "spec.matchConstraints"));
        let rules = items(&constraints["resourceRules"]);
        if rules.is_empty() {
            faults.push(required("spec.matchConstraints.resourceRules", ""));
        }
        if mutating {
            faults.extend(mutating_operations(rules, "spec.matchConstraints"));
        }
    }
    faults.extend(match_conditions_faults(
        &spec["matchConditions"],
        "spec.matchConditions",
    ));
    for (i, variable) in items(&spec["variables"]).iter().enumerate() {
        let at = |field: &str| format!("spec.variables[{i}].{field}");
        let name = text(&variable["name"]);
        if name.trim().is_empty() {
            faults.push(required(at("name"), "name is not specified"));
        } else if !is_cel_identifier(name) {
            faults.push(invalid(at("name"), name, "must be a valid CEL identifier"));
        }
        let source = &variable["expression"];
        expression(
            at("expression"),
            source,
            "expression is not specified",
            false,
            &mut faults,
        );
    }
    if mutating {
        mutations(spec, &mut faults);
    } else {
        validations(spec, &mut faults);
    }
    faults
}

/// A ValidatingAdmissionPolicy's `validations`.
fn validations(spec: &Value, faults: &mut Vec<Fault>) {
    let validations = items(&spec["validations"]);
    if validations.is_empty() && items(&spec["auditAnnotations"]).is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        faults.push(required("spec.validations", why));
        faults.push(required("spec.auditAnnotations", why));
        return;
    }
    for (i, validation) in validations.iter().enumerate() {
        let at = |field: &str| format!("spec.validations[{i}].{field}");
        let source = &validation["expression"];
        expression(
            at("expression"),
            source,
            "expression is not specified",
            false,
            faults,
        );
        let message_expression = text(&validation["messageExpression"]);
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            let why = "must be non-empty if specified";
            faults.push(invalid(at("messageExpression"), message_expression, why));
        } else if crate::cel_rules::reads_variable(message_expression, "authorizer") {
            // A message expression is compiled without the `authorizer`.
            let why = "compilation failed: ERROR: <input>: undeclared reference to 'authorizer' (in container '')";
            faults.push(invalid(at("messageExpression"), message_expression, why));
        } else if !message_expression.is_empty() {
            let source = &validation["messageExpression"];
            expression(at("messageExpression"), source, "", false, faults);
        }
        let message = text(&validation["message"]);
        if !message.is_empty() && message.trim().is_empty() {
            faults.push(invalid(
                at("message"),
                message,
                "must be non-empty if specified",
            ));
        } else if message.trim().contains(['\n', '\r']) {
            faults.push(invalid(
                at("message"),
                message,
                "must not contain line breaks",
            ));
        }
        let reasons = ["Forbidden", "Invalid", "RequestEntityTooLarge"];
        faults.extend(not_supported(
            &at("reason"),
            &validation["reason"],
            &reasons,
        ));
    }
}

/// A MutatingAdmissionPolicy's `mutations` and `reinvocationPolicy`.
fn mutations(spec: &Value, faults: &mut Vec<Fault>) {
    let mutations = items(&spec["mutations"]);
    if mutations.is_empty() {
        let why = "mutations must contain at least one item";
        faults.push(required("spec.mutations", why));
    }
    for (i, mutation) in mutations.iter().enumerate() {
        let at = |field: &str| format!("spec.mutations[{i}].{field}");
        let kinds = [
            ("ApplyConfiguration", "applyConfiguration"),
            ("JSONPatch", "jsonPatch"),
        ];
        let patch_type = text(&mutation["patchType"]);
        let Some((_, key)) = kinds.iter().find(|(t, _)| *t == patch_type) else {
            match patch_type {
                "" => faults.push(required(at("patchType"), "")),
                other => faults.extend(not_supported(
                    &at("patchType"),
                    &Value::from(other),
                    &["ApplyConfiguration", "JSONPatch"],
                )),
            }
            continue;
        };
        if mutation[*key].is_object() {
            let source = &mutation[*key]["expression"];
            expression(format!("{}.expression", at(key)), source, "", true, faults);
        } else {
            let why = format!("must be specified when patchType is {patch_type}");
            faults.push(required(at(key), &why));
        }
        for (_, other) in kinds.iter().filter(|(_, k)| k != key) {
            if mutation[*other].is_object() {
                let why = format!("must not be specified when patchType is {patch_type}");
                faults.push(invalid(at(other), &format!("{{{other}}}"), &why));
            }
        }
    }
    match text(&spec["reinvocationPolicy"]) {
        "" => faults.push(required("spec.reinvocationPolicy", "")),
        _ => faults.extend(not_supported(
            "spec.reinvocationPolicy",
            &spec["reinvocationPolicy"],
            &["IfNeeded", "Never"],
        )),
    }
}

/// The operations of a mutating policy's or binding's `rules` (at `at`) it may not
/// match: none but creates, updates and connects.
fn mutating_operations(rules: &[Value], at: &str) -> Vec<Fault> {
    let field = format!("{at}.resourceRules.operations");
    rules
        .iter()
        .flat_map(|r| items(&r["operations"]))
        .filter_map(|op| not_supported(&field, op, &["*", "CONNECT", "CREATE", "UPDATE"]))
        .collect()
}

/// A binding's spec (a mutating policy's with `mutating`).
fn binding(spec: &Value, mutating: bool) -> Vec<Fault> {
    let mut faults = Vec::new();
    // Declarative validation's errors come after the others.
    let mut declarative = Vec::new();
    if text(&spec["policyName"]).is_empty() {
        let to = if mutating {
            &mut faults
        } else {
            &mut declarative
        };
        to.push(required("spec.policyName", ""));
    }
    if let Some(reference) = spec.get("paramRef").filter(|r| r.is_object()) {
        let (has_name, has_selector) = (
            !text(&reference["name"]).is_empty(),
            reference["selector"].is_object(),
        );
        let exclusive = "name and selector are mutually exclusive";
        if has_name && has_selector {
            faults.push((
                "spec.paramRef.name".into(),
                "FieldValueForbidden",
                format!("Forbidden: {exclusive}"),
            ));
            faults.push((
                "spec.paramRef.selector".into(),
                "FieldValueForbidden",
                format!("Forbidden: {exclusive}"),
            ));
        }
        if !has_name && !has_selector {
            faults.push(required(
                "spec.paramRef",
                "one of name or selector must be specified",
            ));
        }
        match text(&reference["parameterNotFoundAction"]) {
            "" => faults.push(required("spec.paramRef.parameterNotFoundAction", "")),
            _ => faults.extend(not_supported(
                "spec.paramRef.parameterNotFoundAction",
                &reference["parameterNotFoundAction"],
                &["Deny", "Allow"],
            )),
        }
    }
    faults.extend(match_resources_faults(
        &spec["matchResources"],
        "spec.matchResources",
    ));
    if mutating {
        let rules = items(&spec["matchResources"]["resourceRules"]);
        faults.extend(mutating_operations(rules, "spec.matchResources"));
    }
    if !mutating {
        let actions = items(&spec["validationActions"]);
        let mut seen: Vec<&str> = Vec::new();
        for (i, action) in actions.iter().enumerate() {
            let at = format!("spec.validationActions[{i}]");
            faults.extend(not_supported(&at, action, &["Audit", "Deny", "Warn"]));
            let action = text(action);
            if seen.contains(&action) {
                let detail = format!("Duplicate value: {}", go_quote(action));
                faults.push((at, "FieldValueDuplicate", detail));
            }
            seen.push(action);
        }
        if seen.contains(&"Deny") && seen.contains(&"Warn") {
            let why = "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)";
            let detail = format!("Invalid value: {}: {why}", spec["validationActions"]);
            faults.push(("spec.validationActions".into(), "FieldValueInvalid", detail));
        }
        if seen.is_empty() {
            declarative.push(required("spec.validationActions", ""));
        }
    }
    faults.extend(declarative);
    faults
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(found: &[Fault]) -> Vec<&str> {
        found.iter().map(|(f, _, _)| f.as_str()).collect()
    }

    #[test]
    fn a_binding_may_not_both_deny_and_warn_nor_name_and_select_its_params() {
        let spec = json!({"policyName": "p", "validationActions": ["Deny", "Warn"],
            "paramRef": {"name": "x", "selector": {}, "parameterNotFoundAction": "Later"}});
        let found = binding(&spec, false);
        assert_eq!(
            fields(&found),
            [
                "spec.paramRef.name",
                "spec.paramRef.selector",
                "spec.paramRef.parameterNotFoundAction",
                "spec.validationActions"
            ]
        );
        assert!(
            found[3]
                .2
                .starts_with("Invalid value: [\"Deny\",\"Warn\"]: must not contain both")
        );
    }

    #[test]
    fn variables_are_cel_identifiers_that_are_not_reserved() {
        assert!(is_cel_identifier("_replicas2"));
        for name in ["1a", "in", "null", "a-b", ""] {
            assert!(!is_cel_identifier(name), "{name}");
        }
    }

    #[test]
    fn mutating_policies_take_only_create_and_update_and_one_shape_per_mutation() {
        let spec = json!({"reinvocationPolicy": "Never",
            "matchConstraints": {"matchPolicy": "Equivalent", "resourceRules": [{"operations": ["CREATE", "DELETE"],
                "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"},
                "applyConfiguration": {"expression": "Object{}"}}]});
        assert_eq!(
            fields(&policy(&spec, true)),
            [
                "spec.matchConstraints.resourceRules.operations",
                "spec.mutations[0].applyConfiguration"
            ]
        );
    }
}
