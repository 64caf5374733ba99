//! Kubernetes' authorizer library (`authz.go`): the `authorizer` variable of admission
//! policies' expressions and webhooks' `matchConditions`, which asks the server's
//! authorizer whether the requesting user (or a service account) may do something.
//!
//! - `authorizer.group(g).resource(r)` a resource check, narrowed by `.subresource(s)`,
//!   `.namespace(ns)`, `.name(n)`, `.fieldSelector(s)` and `.labelSelector(s)` (which RBAC
//!   ignores, so they change nothing here); `authorizer.path(p)` a non-resource check;
//!   `authorizer.serviceAccount(ns, name)` the authorizer of that service account.
//! - `authorizer.requestResource`: the check of the request's own resource, subresource,
//!   namespace and name.
//! - `<check>.check(verb)` the decision; `<decision>.allowed()`, `.reason()` (RBAC's
//!   words: `RBAC: allowed by ...`, empty for `system:masters`), `.errored()` and
//!   `.error()` (kubekit-fake's authorizer does not fail: `false` and empty).

use std::sync::Arc;

use cel::common::types::STRING_TYPE;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use super::{opaque, opaque_type, overloads, text};
use crate::rbac::{Attributes, Decision, UserInfo};

/// The functions [`register`] declares, as a program's references name them.
pub(super) const FUNCTIONS: &[&str] = &[
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "fieldSelector",
    "labelSelector",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
];

/// The type names of the library's values, as cel-go's library names them.
const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

/// Declares the library's overloads on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let resource = || opaque_type(RESOURCE_CHECK);
    overloads!(env,
        member "path" "authorizer_path" (opaque_type(AUTHORIZER), STRING_TYPE) => path;
        member "group" "authorizer_group" (opaque_type(AUTHORIZER), STRING_TYPE) => group;
        member "serviceAccount" "authorizer_serviceaccount" (opaque_type(AUTHORIZER), STRING_TYPE, STRING_TYPE) => service_account;
        member "resource" "groupcheck_resource" (opaque_type(GROUP_CHECK), STRING_TYPE) => resource_check;
        member "subresource" "resourcecheck_subresource" (resource(), STRING_TYPE) => subresource;
        member "namespace" "resourcecheck_namespace" (resource(), STRING_TYPE) => namespace;
        member "name" "resourcecheck_name" (resource(), STRING_TYPE) => name;
        member "fieldSelector" "authorizer_fieldselector" (resource(), STRING_TYPE) => selector;
        member "labelSelector" "authorizer_labelselector" (resource(), STRING_TYPE) => selector;
        member "check" "pathcheck_check" (opaque_type(PATH_CHECK), STRING_TYPE) => check_path;
        member "check" "resourcecheck_check" (resource(), STRING_TYPE) => check_resource;
        member "allowed" "decision_allowed" (opaque_type(DECISION)) => allowed;
        member "reason" "decision_reason" (opaque_type(DECISION)) => reason;
        member "errored" "decision_errored" (opaque_type(DECISION)) => errored;
        member "error" "decision_error" (opaque_type(DECISION)) => error;
    )
}

/// What answers the library's checks: the server's authorizer.
pub(crate) trait Authorize: Send + Sync {
    /// Whether `user` may do `attrs`.
    fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Decision;
}

/// The variables the library gives an expression: `authorizer`, of the requesting user,
/// and `authorizer.requestResource`, the check of the request's resource.
pub(crate) type Variables = [(&'static str, Cel); 2];

/// The [`Variables`] of `user`'s `request`, answered by `by`.
pub(crate) fn variables(
    by: Arc<dyn Authorize>,
    user: &UserInfo,
    request: &Attributes,
) -> Variables {
    let authorizer = Authorizer {
        user: user.clone(),
        by,
    };
    let request_resource = ResourceCheck {
        authorizer: authorizer.clone(),
        attrs: Attributes {
            verb: String::new(),
            path: String::new(),
            ..request.clone()
        },
    };
    [
        ("authorizer", Cel::Opaque(Arc::new(authorizer))),
        (
            "authorizer.requestResource",
            Cel::Opaque(Arc::new(request_resource)),
        ),
    ]
}

/// A user and the authorizer that answers for them.
#[derive(Clone)]
struct Authorizer {
    user: UserInfo,
    by: Arc<dyn Authorize>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Authorizer({})", self.user.name)
    }
}

impl PartialEq for Authorizer {
    fn eq(&self, other: &Self) -> bool {
        self.user == other.user && Arc::ptr_eq(&self.by, &other.by)
    }
}

impl Eq for Authorizer {}

impl Opaque for Authorizer {
    fn runtime_type_name(&self) -> &str {
        AUTHORIZER
    }
}

/// `authorizer.path(p)`.
#[derive(Debug, PartialEq, Eq)]
struct PathCheck {
    authorizer: Authorizer,
    path: String,
}

impl Opaque for PathCheck {
    fn runtime_type_name(&self) -> &str {
        PATH_CHECK
    }
}

/// `authorizer.group(g)`.
#[derive(Debug, PartialEq, Eq)]
struct GroupCheck {
    authorizer: Authorizer,
    group: String,
}

impl Opaque for GroupCheck {
    fn runtime_type_name(&self) -> &str {
        GROUP_CHECK
    }
}

/// A resource check: the attributes asked about (all but the verb).
#[derive(Debug, PartialEq, Eq, Clone)]
struct ResourceCheck {
    authorizer: Authorizer,
    attrs: Attributes,
}

impl Opaque for ResourceCheck {
    fn runtime_type_name(&self) -> &str {
        RESOURCE_CHECK
    }
}

/// A check's answer.
#[derive(Debug, PartialEq, Eq)]
struct CheckDecision {
    allowed: bool,
    reason: String,
}

impl Opaque for CheckDecision {
    fn runtime_type_name(&self) -> &str {
        DECISION
    }
}

fn path(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Opaque(Arc::new(PathCheck {
        authorizer: opaque::<Authorizer>(&args[0])?.clone(),
        path: text(args, 1)?.to_string(),
    })))
}

fn group(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Opaque(Arc::new(GroupCheck {
        authorizer: opaque::<Authorizer>(&args[0])?.clone(),
        group: text(args, 1)?.to_string(),
    })))
}

/// `authorizer.serviceAccount(ns, name)`: the service account's user and groups, as its
/// token authenticates it.
fn service_account(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let (namespace, name) = (text(args, 1)?, text(args, 2)?);
    Ok(Cel::Opaque(Arc::new(Authorizer {
        user: UserInfo {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
            ],
        },
        by: opaque::<Authorizer>(&args[0])?.by.clone(),
    })))
}

fn resource_check(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let group = opaque::<GroupCheck>(&args[0])?;
    Ok(Cel::Opaque(Arc::new(ResourceCheck {
        authorizer: group.authorizer.clone(),
        attrs: Attributes {
            group: group.group.clone(),
            resource: text(args, 1)?.to_string(),
            ..Attributes::default()
        },
    })))
}

/// The receiver, a resource check, with `set` applied to its attributes.
fn narrowed(args: &[Cel], set: fn(&mut Attributes, String)) -> Result<Cel, ExecutionError> {
    let mut check = opaque::<ResourceCheck>(&args[0])?.clone();
    set(&mut check.attrs, text(args, 1)?.to_string());
    Ok(Cel::Opaque(Arc::new(check)))
}

fn subresource(args: &[Cel]) -> Result<Cel, ExecutionError> {
    narrowed(args, |a, v| a.subresource = v)
}

fn namespace(args: &[Cel]) -> Result<Cel, ExecutionError> {
    narrowed(args, |a, v| a.namespace = v)
}

fn name(args: &[Cel]) -> Result<Cel, ExecutionError> {
    narrowed(args, |a, v| a.name = v)
}

/// `fieldSelector` and `labelSelector`: RBAC decides without them.
fn selector(args: &[Cel]) -> Result<Cel, ExecutionError> {
    narrowed(args, |_, _| {})
}

/// The authorizer's decision on `attrs` for `authorizer`'s user.
fn decide(authorizer: &Authorizer, attrs: &Attributes) -> Cel {
    let (allowed, reason) = match authorizer.by.authorize(&authorizer.user, attrs) {
        Decision::Allowed(reason) => (true, reason),
        Decision::Denied(reason) => (false, reason),
    };
    Cel::Opaque(Arc::new(CheckDecision { allowed, reason }))
}

fn check_path(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let check = opaque::<PathCheck>(&args[0])?;
    let attrs = Attributes {
        verb: text(args, 1)?.to_string(),
        path: check.path.clone(),
        ..Attributes::default()
    };
    Ok(decide(&check.authorizer, &attrs))
}

fn check_resource(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let check = opaque::<ResourceCheck>(&args[0])?;
    let attrs = Attributes {
        verb: text(args, 1)?.to_string(),
        ..check.attrs.clone()
    };
    Ok(decide(&check.authorizer, &attrs))
}

fn allowed(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(opaque::<CheckDecision>(&args[0])?.allowed))
}

fn reason(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let reason = &opaque::<CheckDecision>(&args[0])?.reason;
    Ok(Cel::String(Arc::new(reason.clone())))
}

fn errored(args: &[Cel]) -> Result<Cel, ExecutionError> {
    opaque::<CheckDecision>(&args[0])?;
    Ok(Cel::Bool(false))
}

fn error(args: &[Cel]) -> Result<Cel, ExecutionError> {
    opaque::<CheckDecision>(&args[0])?;
    Ok(Cel::String(Arc::new(String::new())))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::cel_rules::evaluate_value_with;

    /// Allows `get` of Pods in namespace `a` and `/healthz`, each with its attributes as
    /// the reason; denies the rest.
    struct Stub;

    impl Authorize for Stub {
        fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Decision {
            let said = format!("{} {} {:?}", user.name, attrs.verb, attrs);
            let pods = attrs.resource == "pods" && attrs.namespace == "a";
            match (pods || attrs.path == "/healthz") && attrs.verb == "get" {
                true => Decision::Allowed(said),
                false => Decision::Denied(String::new()),
            }
        }
    }

    fn eval(source: &str) -> Result<serde_json::Value, String> {
        let user = UserInfo {
            name: "alice".into(),
            groups: vec![],
        };
        let request = Attributes {
            resource: "pods".into(),
            namespace: "a".into(),
            name: "p".into(),
            ..Attributes::default()
        };
        evaluate_value_with(source, &[], &variables(Arc::new(Stub), &user, &request))
    }

    #[test]
    fn checks_ask_the_authorizer_with_the_attributes_they_were_narrowed_to() {
        let check = |ns: &str, verb: &str| {
            eval(&format!(
                "authorizer.group('').resource('pods').namespace('{ns}').check('{verb}').allowed()"
            ))
        };
        assert_eq!(check("a", "get"), Ok(json!(true)));
        assert_eq!(check("b", "get"), Ok(json!(false)));
        assert_eq!(check("a", "list"), Ok(json!(false)));
        assert_eq!(
            eval("authorizer.path('/healthz').check('get').allowed()"),
            Ok(json!(true))
        );
        assert_eq!(
            eval("authorizer.requestResource.check('get').allowed()"),
            Ok(json!(true))
        );
        assert_eq!(
            eval("authorizer.requestResource.check('get').errored()"),
            Ok(json!(false))
        );
    }

    #[test]
    fn a_service_account_is_asked_about_as_its_token_authenticates_it() {
        let reason = eval(
            "authorizer.serviceAccount('a', 'bot').group('').resource('pods').namespace('a').check('get').reason()",
        );
        let reason = reason.expect("a reason");
        assert!(
            reason
                .as_str()
                .is_some_and(|r| r.starts_with("system:serviceaccount:a:bot get")),
            "{reason}"
        );
    }
}
