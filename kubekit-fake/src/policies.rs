//! ValidatingAdmissionPolicies, as kube-apiserver 1.37's `ValidatingAdmissionPolicy`
//! plugin evaluates them: each `ValidatingAdmissionPolicyBinding` whose policy exists and
//! matches the request (the policy's `matchConstraints`, then the binding's
//! `matchResources`) evaluates the policy's CEL (see `cel_rules`) in process.
//!
//! # Contract
//!
//! - **Where**: after a write's validation, before the validating webhooks, on what would
//!   be stored (a delete: on the object as it is, as `oldObject`).
//! - **Matching**: `resourceRules` (with `resourceNames`) and `excludeResourceRules`,
//!   `namespaceSelector` and `objectSelector`, as webhooks are matched; a binding's
//!   `matchResources` narrows its policy's constraints. Bindings in name order.
//! - **Parameters**: a policy with a `paramKind` is evaluated once for each object its
//!   binding's `paramRef` gives, as `params`: the one it names (`name`) or those its
//!   `selector` selects, in its `namespace` or the request's for a namespaced kind; with
//!   none found, `parameterNotFoundAction: Deny` refuses the request and `Allow` skips
//!   the binding. Without `paramRef`, `params` is null.
//! - **CEL**: `object`, `oldObject`, `request`, `params`, `namespaceObject`,
//!   `authorizer` (see `cel_library::authz`; not in a `messageExpression`, which the
//!   real server refuses when it reads it) and `variables` (the policy's `variables`,
//!   evaluated in order; one that asks the authorizer is read by a `messageExpression`
//!   as it was evaluated, where the real server fails that message). `matchConditions` that
//!   are false skip the binding. A `validations` expression that is false fails with its
//!   `message`, its `messageExpression`'s value, or `failed expression: <expression>`;
//!   one that cannot be evaluated fails under `failurePolicy: Fail` (the default) with
//!   `expression '<e>' resulted in error: ...` and is skipped under `Ignore`.
//! - **Actions** of the binding's `validationActions`: `Deny` refuses the request with
//!   the real server's error (`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy
//!   '<policy>' with binding '<binding>' denied request: <message>`, code by the
//!   validation's `reason`, `Invalid` by default: 422); `Warn` adds a warning to the
//!   answer; `Audit` does nothing (the fake keeps no audit log).
//! - **Not done**: `auditAnnotations`, type checking and the policy's `status`. MutatingAdmissionPolicies
//!   share the matching, parameters and variables (see `mutating_policies`).

use serde_json::{Value, json};

use crate::admission::{Attributes, Scope};
use crate::cel_library::authz;
use crate::cel_rules;
use crate::selectors::{labels, selector_matches};
use crate::status::{ApiError, ApiResult, details};
use crate::store::Store;

const GROUP: &str = "admissionregistration.k8s.io";

/// One failed validation: its message and reason.
pub(crate) struct Failure {
    pub(crate) message: String,
    pub(crate) reason: String,
}

/// A binding that selects the request, with what its policy's CEL needs from the store.
pub(crate) struct Bound {
    /// The policy's and the binding's names.
    pub(crate) names: (String, String),
    /// The policy's spec.
    pub(crate) policy: Value,
    /// The binding's `validationActions` (none for a mutating policy's).
    pub(crate) actions: Vec<String>,
    /// The values of `params` the policy is evaluated with (one per param object), or
    /// the binding's configuration error (see `params_of`).
    pub(crate) params: Result<Vec<Value>, String>,
}

/// The kinds of admission policies: ValidatingAdmissionPolicies and their bindings.
pub(crate) const VALIDATING: (&str, &str) = (
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
);

/// The bindings (of `kinds`: the policies' plural and their bindings') whose policies
/// select the request, in name order, read from `store` (under its lock; [`validate`]
/// and `mutating_policies::mutate` evaluate them without it).
pub(crate) fn bound(
    store: &Store,
    attrs: &Attributes,
    (object, old): (Option<&Value>, Option<&Value>),
    (policies, bindings): (&str, &str),
) -> Vec<Bound> {
    if attrs.info.group == GROUP {
        return Vec::new();
    }
    let stored = |plural: &str| {
        store
            .lookup(GROUP, "v1", plural)
            .and_then(|info| store.snapshot(&info, None, None).ok())
            .map(|(_, objects)| objects)
            .unwrap_or_default()
    };
    let bindings = stored(bindings);
    if bindings.is_empty() {
        return Vec::new();
    }
    let policies = stored(policies);
    let scope = Scope::new(store, attrs, (object, old));
    let mut bound = Vec::new();
    for binding in &bindings {
        let spec = &binding["spec"];
        let policy_name = spec["policyName"].as_str().unwrap_or_default();
        let Some(policy) = policies
            .iter()
            .find(|p| p["metadata"]["name"] == policy_name)
        else {
            continue;
        };
        // A binding's `matchResources` narrows its policy's constraints; without rules of
        // its own, by its selectors alone.
        let binding_selects = spec
            .get("matchResources")
            .filter(|m| m.is_object())
            .is_none_or(|m| {
                let any_rules = m["resourceRules"].as_array().is_some_and(|r| !r.is_empty());
                scope.selects(m, any_rules.then_some("resourceRules"))
            });
        if !binding_selects
            || !scope.selects(&policy["spec"]["matchConstraints"], Some("resourceRules"))
        {
            continue;
        }
        let params = match params_of(store, attrs, &policy["spec"], spec) {
            Ok(params) if params.is_empty() => continue,
            found => found,
        };
        bound.push(Bound {
            names: (
                policy_name.to_string(),
                binding["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ),
            policy: policy["spec"].clone(),
            actions: spec["validationActions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            params,
        });
    }
    bound
}

/// Evaluates the policies of the [`bound`] bindings; returns the warnings of `Warn`
/// bindings, or the first denial of a `Deny` binding.
pub(crate) fn validate(
    bound: Vec<Bound>,
    attrs: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
    namespace: Value,
    authorizer: &authz::Variables,
) -> ApiResult<Vec<String>> {
    if bound.is_empty() {
        return Ok(Vec::new());
    }
    let request = attrs.review("", object, old)["request"].take();
    let mut warnings = Vec::new();
    let mut denials = Vec::new();
    for Bound {
        names,
        policy,
        actions,
        params,
    } in bound
    {
        let params = match params {
            Ok(params) => params,
            // A binding's configuration error is a failure of its policy's.
            Err(_) if policy["failurePolicy"] == "Ignore" => continue,
            Err(message) => {
                let reason = "Invalid".to_string();
                denials.push((names, Failure { message, reason }));
                continue;
            }
        };
        for params in params {
            let inputs = Inputs {
                object: object.cloned().unwrap_or(Value::Null),
                old: old.cloned().unwrap_or(Value::Null),
                request: request.clone(),
                params,
                namespace: namespace.clone(),
                authorizer: authorizer.clone(),
            };
            for failure in evaluate(&policy, &inputs) {
                if actions.iter().any(|a| a == "Warn") {
                    warnings.push(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                        names.0, names.1, failure.message
                    ));
                }
                if actions.iter().any(|a| a == "Deny") {
                    denials.push((names.clone(), failure));
                }
            }
        }
    }
    match denials.into_iter().next() {
        None => Ok(warnings),
        Some(((policy, binding), failure)) => Err(denied(attrs, &policy, &binding, failure)),
    }
}

/// The request's Namespace, as `namespaceObject` (null for a cluster-scoped request).
pub(crate) fn namespace_object(store: &Store, attrs: &Attributes) -> Value {
    store
        .lookup("", "v1", "namespaces")
        .filter(|_| attrs.info.namespaced)
        .and_then(|ns| store.get(&ns, "", &attrs.namespace).ok())
        .map(|ns| (*ns).clone())
        .unwrap_or(Value::Null)
}

/// The values a policy's CEL sees.
pub(crate) struct Inputs {
    pub(crate) object: Value,
    pub(crate) old: Value,
    pub(crate) request: Value,
    pub(crate) params: Value,
    pub(crate) namespace: Value,
    /// `authorizer` and `authorizer.requestResource`.
    pub(crate) authorizer: authz::Variables,
}

/// The objects a binding's `paramRef` gives its policy, as the real server's
/// `CollectParams` collects them: `[Null]` for a policy without `paramKind` or a binding
/// without `paramRef`; the object it names, or those its `selector` selects (in name
/// order), in its `namespace` or else the request's for a namespaced kind; none (the
/// binding is skipped) when none is found under `parameterNotFoundAction: Allow`. The
/// error is the binding's configuration error (none found under `Deny`, a namespace
/// that cannot be).
fn params_of(
    store: &Store,
    attrs: &Attributes,
    policy: &Value,
    binding: &Value,
) -> Result<Vec<Value>, String> {
    let (kind, reference) = (&policy["paramKind"], &binding["paramRef"]);
    if kind.is_null() || reference.is_null() {
        return Ok(vec![Value::Null]);
    }
    let api_version = kind["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let info = store.resources().iter().find(|r| {
        r.group == group && r.kind == kind["kind"] && r.versions.iter().any(|v| v == version)
    });
    let given_namespace = reference["namespace"].as_str().filter(|ns| !ns.is_empty());
    let found = match info {
        None => Vec::new(),
        Some(info) if !info.namespaced && given_namespace.is_some() => {
            return Err(configuration(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`",
            ));
        }
        Some(info) => {
            let ns = match (info.namespaced, given_namespace) {
                (false, _) => "",
                (true, Some(ns)) => ns,
                (true, None) if !attrs.namespace.is_empty() => attrs.namespace.as_str(),
                (true, None) => {
                    return Err(configuration(
                        "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources",
                    ));
                }
            };
            match (reference["name"].as_str(), &reference["selector"]) {
                (Some(name), _) => store
                    .get(info, ns, name)
                    .map(|p| vec![(*p).clone()])
                    .unwrap_or_default(),
                (None, selector) if selector.is_object() => store
                    .snapshot(info, info.namespaced.then_some(ns), None)
                    .map(|(_, objects)| objects)
                    .unwrap_or_default()
                    .iter()
                    .filter(|p| selector_matches(selector, &labels(p)))
                    .map(|p| (**p).clone())
                    .collect(),
                (None, _) => Vec::new(),
            }
        }
    };
    if found.is_empty() && reference["parameterNotFoundAction"] != "Allow" {
        return Err(configuration(
            "no params found for policy binding with `Deny` parameterNotFoundAction",
        ));
    }
    Ok(found)
}

/// A binding's configuration error, as the real server words it.
fn configuration(why: &str) -> String {
    format!("failed to configure binding: {why}")
}

/// A policy's variables: the values of those that evaluate, by name, and why the others
/// do not.
#[derive(Default)]
pub(crate) struct Variables {
    values: serde_json::Map<String, Value>,
    failed: Vec<(String, String)>,
}

/// Evaluates `expression` (with `evaluate`: `cel_rules::evaluate_value`, or
/// `cel_rules::evaluate_mutation`) over `inputs` and `variables`.
pub(crate) fn run(
    expression: &str,
    inputs: &Inputs,
    variables: &Variables,
    evaluate: cel_rules::Evaluator,
) -> Result<Value, String> {
    run_with(expression, inputs, variables, evaluate, &inputs.authorizer)
}

/// [`run`] with `opaque` the library values bound (none for a `messageExpression`, which
/// the real server evaluates without the `authorizer`).
fn run_with(
    expression: &str,
    inputs: &Inputs,
    variables: &Variables,
    evaluate: cel_rules::Evaluator,
    opaque: &[(&str, cel::Value)],
) -> Result<Value, String> {
    // As cel-go's lazy composition: the first variable read that failed to evaluate.
    if let Some((name, why)) = variables
        .failed
        .iter()
        .find(|(name, _)| reads(expression, name))
    {
        return Err(format!(
            "composited variable \"{name}\" fails to evaluate: {why}"
        ));
    }
    let variables = Value::Object(variables.values.clone());
    let bound = [
        ("object", &inputs.object),
        ("oldObject", &inputs.old),
        ("request", &inputs.request),
        ("params", &inputs.params),
        ("namespaceObject", &inputs.namespace),
        ("variables", &variables),
    ];
    evaluate(expression, &bound, opaque)
}

/// An expression that could not be evaluated, in the real server's words.
pub(crate) fn error(expression: &str, why: String) -> Failure {
    Failure {
        message: format!("expression '{expression}' resulted in error: {why}"),
        reason: "Invalid".into(),
    }
}

/// A policy's (its spec's) `matchConditions` and `variables` over `inputs`: `Ok(None)`
/// when a condition is false (the binding is skipped), the conditions that could not be
/// evaluated (under `failurePolicy: Fail`), else the variables, in order (an expression
/// that reads one that failed fails with its error, as in cel-go).
pub(crate) fn conditions_and_variables(
    policy: &Value,
    inputs: &Inputs,
) -> Result<Option<Variables>, Vec<Failure>> {
    let ignore = policy["failurePolicy"] == "Ignore";
    let mut variables = Variables::default();
    let mut failures = Vec::new();
    for condition in policy["matchConditions"].as_array().into_iter().flatten() {
        let expression = condition["expression"].as_str().unwrap_or_default();
        let value = run(
            expression,
            inputs,
            &variables,
            cel_rules::evaluate_value_with,
        );
        match value.and_then(|v| v.as_bool().ok_or("not a boolean".into())) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(why) if !ignore => failures.push(error(expression, why)),
            // Under `Ignore`, a condition that fails skips the binding.
            Err(_) => return Ok(None),
        }
    }
    if !failures.is_empty() {
        return Err(failures);
    }
    for variable in policy["variables"].as_array().into_iter().flatten() {
        let name = variable["name"].as_str().unwrap_or_default().to_string();
        let expression = variable["expression"].as_str().unwrap_or_default();
        match run(
            expression,
            inputs,
            &variables,
            cel_rules::evaluate_value_with,
        ) {
            Ok(value) => {
                variables.values.insert(name, value);
            }
            Err(why) => variables.failed.push((name, why)),
        }
    }
    Ok(Some(variables))
}

/// Whether `expression` reads `variables.<name>`.
fn reads(expression: &str, name: &str) -> bool {
    let field = format!("variables.{name}");
    expression.match_indices(&field).any(|(at, _)| {
        let before = expression[..at].chars().next_back();
        let after = expression[at + field.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The failed validations of `policy` (its spec) over `inputs`; none when a match
/// condition is false.
fn evaluate(policy: &Value, inputs: &Inputs) -> Vec<Failure> {
    let ignore = policy["failurePolicy"] == "Ignore";
    let variables = match conditions_and_variables(policy, inputs) {
        Ok(Some(variables)) => variables,
        Ok(None) => return Vec::new(),
        Err(failures) => return failures,
    };
    let run = |expression: &str| {
        run(
            expression,
            inputs,
            &variables,
            cel_rules::evaluate_value_with,
        )
    };
    let mut failures = Vec::new();
    for validation in policy["validations"].as_array().into_iter().flatten() {
        let expression = validation["expression"].as_str().unwrap_or_default();
        let reason = validation["reason"]
            .as_str()
            .unwrap_or("Invalid")
            .to_string();
        match run(expression).and_then(|v| v.as_bool().ok_or("not a boolean".into())) {
            Ok(true) => {}
            Ok(false) => {
                let message = |e: &str| {
                    let evaluate = cel_rules::evaluate_value_with;
                    run_with(e, inputs, &variables, evaluate, &[]).ok()
                };
                let from_expression = validation["messageExpression"]
                    .as_str()
                    .and_then(message)
                    .and_then(|v| v.as_str().map(str::trim).map(str::to_string))
                    .filter(|m| !m.is_empty());
                let message = from_expression
                    .or_else(|| validation["message"].as_str().map(|m| m.trim().to_string()))
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| format!("failed expression: {}", expression.trim()));
                failures.push(Failure { message, reason });
            }
            Err(why) if !ignore => failures.push(error(expression, why)),
            Err(_) => {}
        }
    }
    failures
}

/// The real server's denial by `policy` through `binding`.
fn denied(attrs: &Attributes, policy: &str, binding: &str, failure: Failure) -> ApiError {
    let message = format!(
        "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {}",
        failure.message
    );
    let code = match failure.reason.as_str() {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        "Invalid" => 422,
        _ => 400,
    };
    let mut details = details(&attrs.info, &attrs.name);
    details["causes"] = json!([{"message": message}]);
    ApiError::new(
        code,
        &failure.reason,
        format!(
            "{} {:?} is forbidden: {message}",
            attrs.info.qualified(),
            attrs.name
        ),
    )
    .with_details(details)
}
