//! MutatingAdmissionPolicies, as kube-apiserver 1.37's `MutatingAdmissionPolicy` plugin
//! applies them: each `MutatingAdmissionPolicyBinding` whose policy exists and matches
//! the request (matched as ValidatingAdmissionPolicies are, see `policies`) runs its
//! policy's `mutations` on the object, in process.
//!
//! # Contract
//!
//! - **Where**: on creates and updates (of an object, its status or its scale), before
//!   the mutating webhooks; a policy with `reinvocationPolicy: IfNeeded` runs once more
//!   after the webhooks if they changed the object. Nothing runs on a delete.
//! - **CEL**: `object` (as the previous mutations left it), `oldObject`, `request`,
//!   `params`, `namespaceObject` and `variables`; false `matchConditions` skip the binding.
//! - **`ApplyConfiguration`**: the expression's `Object{...}` (with `Object.spec{...}`
//!   and deeper literals) is merged into the object as server-side apply merges:
//!   associative lists by their keys, maps and structs field by field.
//! - **`JSONPatch`**: the expression's list of `JSONPatch{op, path, value, from}` is
//!   applied; a failed `test` leaves the object as it was, as on the real server.
//!   `jsonpatch.escapeKey` escapes a key for a path.
//! - **Failures** (an expression that fails or gives the wrong type, a patch that does
//!   not apply, params not found under `Deny`) refuse the request under `failurePolicy:
//!   Fail` (the default) with the real server's `403`: `policy '<policy>' with binding
//!   '<binding>' denied request: <why>`, each failure a cause; under `Ignore` the
//!   mutation is skipped.
//! - **What the mutations add** is owned by no field manager, as what webhooks add.
//! - **Not done**: type checking against the object's schema (the real server refuses a
//!   policy whose literals name fields the kind lacks; here they are merged as given),
//!   the refusal of mutations of atomic lists and maps, the `authorizer` variable, and
//!   the policy's `status`.

use serde_json::{Value, json};

use crate::admission::Attributes;
use crate::cel_library::authz;
use crate::cel_rules;
use crate::policies::{self, Bound, Failure, Inputs};
use crate::status::{ApiError, ApiResult, details};

/// MutatingAdmissionPolicies and their bindings.
pub(crate) const MUTATING: (&str, &str) = (
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
);

/// Runs the mutations of the [`policies::bound`] bindings (those of `again` only, when
/// given: the reinvocation) on `object`, in binding order; `namespace` is
/// `namespaceObject`. Returns the object as they left it.
pub(crate) fn mutate(
    bound: &[Bound],
    again: bool,
    attrs: &Attributes,
    object: Option<Value>,
    old: Option<&Value>,
    (namespace, authorizer): (&Value, &authz::Variables),
) -> ApiResult<Option<Value>> {
    let Some(mut object) = object else {
        return Ok(None);
    };
    let request = attrs.review("", Some(&object), old)["request"].take();
    let mut failures: Vec<((String, String), Failure)> = Vec::new();
    for Bound {
        names,
        policy,
        params,
        ..
    } in bound
    {
        if again && policy["reinvocationPolicy"] != "IfNeeded" {
            continue;
        }
        let ignore = policy["failurePolicy"] == "Ignore";
        let params = match params {
            Ok(params) => params,
            Err(_) if ignore => continue,
            Err(message) => {
                let failure = Failure {
                    message: message.clone(),
                    reason: String::new(),
                };
                failures.push((names.clone(), failure));
                continue;
            }
        };
        for params in params {
            let mut inputs = Inputs {
                object,
                old: old.cloned().unwrap_or(Value::Null),
                request: request.clone(),
                params: params.clone(),
                namespace: namespace.clone(),
                authorizer: authorizer.clone(),
            };
            match policies::conditions_and_variables(policy, &inputs) {
                Ok(Some(variables)) => {
                    for mutation in policy["mutations"].as_array().into_iter().flatten() {
                        match apply(mutation, &inputs, &variables, &attrs.info) {
                            Ok(mutated) => inputs.object = mutated,
                            Err(_) if ignore => {}
                            Err(failure) => failures.push((names.clone(), failure)),
                        }
                    }
                }
                Ok(None) => {}
                Err(found) => failures.extend(found.into_iter().map(|f| (names.clone(), f))),
            }
            object = inputs.object;
        }
    }
    match failures.is_empty() {
        true => Ok(Some(object)),
        false => Err(denied(attrs, failures)),
    }
}

/// One mutation of a policy on `inputs.object`: the object it gives.
fn apply(
    mutation: &Value,
    inputs: &Inputs,
    variables: &policies::Variables,
    info: &crate::resources::ResourceInfo,
) -> Result<Value, Failure> {
    let invalid = |message: String| Failure {
        message,
        reason: "Invalid".into(),
    };
    let key = match mutation["patchType"].as_str() {
        Some("ApplyConfiguration") => "applyConfiguration",
        Some("JSONPatch") => "jsonPatch",
        other => return Err(invalid(format!("unsupported patchType: {other:?}"))),
    };
    let expression = mutation[key]["expression"].as_str().unwrap_or_default();
    let value = policies::run(expression, inputs, variables, cel_rules::evaluate_mutation)
        .map_err(|why| policies::error(expression, why))?;
    if key == "applyConfiguration" {
        if !value.is_object() {
            return Err(invalid(format!(
                "unsupported return type from ApplyConfiguration expression: {}",
                cel_type(&value)
            )));
        }
        return Ok(crate::managed::merged(&inputs.object, &value, info));
    }
    let Value::Array(operations) = value else {
        let message = "type mismatch: JSONPatchType.expression should evaluate to array";
        return Err(invalid(message.into()));
    };
    let mut patched = inputs.object.clone();
    for operation in operations {
        let op: json_patch::PatchOperation = serde_json::from_value(operation).map_err(|e| {
            invalid(format!(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: {e}"
            ))
        })?;
        match patch_one(&mut patched, op) {
            Ok(()) => {}
            // A test that fails leaves the object as it was.
            Err(None) => return Ok(inputs.object.clone()),
            Err(Some(why)) => return Err(invalid(format!("JSON Patch: {why}"))),
        }
    }
    Ok(patched)
}

/// One JSON Patch operation on `doc`, as the real server's JSON Patch library applies it:
/// `replace` of a key an object lacks adds it; a `test` of a value, or of a key its
/// object lacks, fails the patch (`Err(None)`); an operation whose path is not there is
/// an error (in that library's words for `add` and `test`, in the same form for the
/// others, whose words differ).
fn patch_one(doc: &mut Value, op: json_patch::PatchOperation) -> Result<(), Option<String>> {
    use json_patch::PatchOperation as Op;
    let (name, path) = match &op {
        Op::Add(o) => ("add", o.path.to_string()),
        Op::Remove(o) => ("remove", o.path.to_string()),
        Op::Replace(o) => ("replace", o.path.to_string()),
        Op::Move(o) => ("move", o.path.to_string()),
        Op::Copy(o) => ("copy", o.path.to_string()),
        Op::Test(o) => ("test", o.path.to_string()),
    };
    let parent = path
        .rsplit_once('/')
        .and_then(|(parent, _)| doc.pointer(parent));
    let parent_is_object = parent.is_some_and(Value::is_object);
    let parent = parent.is_some();
    let there = doc.pointer(&path).is_some();
    let op = match op {
        Op::Replace(r) if !there && parent_is_object => Op::Add(json_patch::AddOperation {
            path: r.path,
            value: r.value,
        }),
        op => op,
    };
    let is_test = matches!(op, Op::Test(_));
    if is_test && !there && parent_is_object {
        return Err(None);
    }
    match json_patch::patch(doc, &[op]) {
        Ok(()) => Ok(()),
        Err(_) if is_test && there => Err(None),
        Err(_) if is_test => Err(Some(format!(
            "test operation does not apply: is missing path: {path}: missing value"
        ))),
        Err(_) if !parent || (!there && name != "add") => Err(Some(format!(
            "{name} operation does not apply: doc is missing path: {}: missing value",
            crate::cel_library::go_quote(&path)
        ))),
        Err(e) => Err(Some(e.to_string())),
    }
}

/// The CEL type name of a JSON value, as the real server names an expression's result.
fn cel_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null_type",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "double",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// The real server's refusal of a request by failed mutations: the first failure's
/// message (and its reason, `Forbidden` if it has none), each a cause.
fn denied(attrs: &Attributes, failures: Vec<((String, String), Failure)>) -> ApiError {
    let messages: Vec<String> = failures
        .iter()
        .map(|((policy, binding), f)| {
            format!(
                "policy '{policy}' with binding '{binding}' denied request: {}",
                f.message
            )
        })
        .collect();
    let reason = match failures.first() {
        Some((_, f)) if !f.reason.is_empty() => f.reason.clone(),
        _ => "Forbidden".into(),
    };
    let mut details = details(&attrs.info, &attrs.name);
    details["causes"] = json!(
        messages
            .iter()
            .map(|m| json!({"message": m}))
            .collect::<Vec<_>>()
    );
    ApiError::new(403, &reason, messages.first().cloned().unwrap_or_default()).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(v: Value) -> json_patch::PatchOperation {
        serde_json::from_value(v).expect("an operation")
    }

    #[test]
    fn json_patch_operations_apply_as_the_real_servers_library_applies_them() {
        let mut doc = json!({"data": {"a": "1"}});
        let replaced = patch_one(
            &mut doc,
            op(json!({"op": "replace", "path": "/data/b", "value": "2"})),
        );
        assert_eq!(replaced, Ok(()));
        assert_eq!(doc, json!({"data": {"a": "1", "b": "2"}}));
        let failed_test = json!({"op": "test", "path": "/data/none", "value": "x"});
        assert_eq!(patch_one(&mut doc, op(failed_test)), Err(None));
        let wrong_value = json!({"op": "test", "path": "/data/a", "value": "x"});
        assert_eq!(patch_one(&mut doc, op(wrong_value)), Err(None));
        let missing = json!({"op": "test", "path": "/spec/x", "value": "x"});
        assert_eq!(
            patch_one(&mut doc, op(missing)),
            Err(Some(
                "test operation does not apply: is missing path: /spec/x: missing value".into()
            ))
        );
        let add = json!({"op": "add", "path": "/metadata/labels/a", "value": "x"});
        assert_eq!(
            patch_one(&mut doc, op(add)),
            Err(Some(
                "add operation does not apply: doc is missing path: \"/metadata/labels/a\": missing value"
                    .into()
            ))
        );
    }
}
