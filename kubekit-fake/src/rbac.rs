//! Who a request comes from, and what RBAC lets them do, as kube-apiserver's bearer-token
//! authenticator, its impersonation filter and its RBAC authorizer decide — on a server
//! started with [`FakeApiServer::with_rbac`](crate::FakeApiServer::with_rbac).
//!
//! # Contract
//!
//! - A request with `Authorization: Bearer <token>` is the user the token was made for
//!   ([`FakeApiServer::user_config`](crate::FakeApiServer::user_config)), in its groups
//!   and `system:authenticated`; an unknown token is `401 Unauthorized`. A request
//!   without credentials is the fake's admin, [`ADMIN`] in `system:masters` (the fake's
//!   own kubeconfig has none).
//! - `Impersonate-User` and `Impersonate-Group` make the request another user's when the
//!   requester may impersonate them, as kube-apiserver 1.37 decides (see `impersonate`:
//!   the constrained modes, then the legacy `impersonate` verb); else `403` with its
//!   message. (`kubectl --as`, `--as-group`, and the kubeconfigs of
//!   [`FakeApiServer::user_kubeconfig`](crate::FakeApiServer::user_kubeconfig).)
//! - Every request is authorized before its resource is looked up, with the attributes
//!   kube-apiserver's `RequestInfoFactory` reads from its path, method and query
//!   ([`Attributes::of_request`]): a list or watch with `fieldSelector=metadata.name=<n>`
//!   names `<n>`, a `DELETE` without a name is `deletecollection`.
//! - `system:masters` may do everything. Anyone else may do what a rule grants them: the
//!   rules of every ClusterRoleBinding, and of every RoleBinding of the request's
//!   namespace, whose subjects name their user, one of their groups or their service
//!   account; a binding's ClusterRole with an `aggregationRule` has the rules of every
//!   ClusterRole its selectors match. A rule matches as kube-apiserver's RBAC matches it:
//!   verbs, API groups, resources (`*`, `<resource>/<subresource>`, `*/<subresource>`),
//!   `resourceNames` (only requests naming an object), non-resource URLs (exact or
//!   `<prefix>*`).
//! - A refusal is `403 Forbidden` with the real server's message and details; a binding
//!   to a role that does not exist is named in its reason.
//! - The server starts with the bootstrap roles a new cluster needs to be used:
//!   `cluster-admin` (bound to `system:masters`), `system:discovery`,
//!   `system:basic-user` and `system:public-info-viewer` (bound to
//!   `system:authenticated`), labelled and annotated as the real ones. The other default
//!   roles (`admin`, `edit`, `view`, the controllers' `system:*` roles) are not made.
//! - A write of a Role, ClusterRole or binding by anyone but `system:masters` is checked
//!   as kube-apiserver's RBAC storage checks it ([`check_write`]): no escalation, no
//!   binding of what the writer lacks, unless they may `escalate` or `bind` it.
//! - Not done: client certificates (the fake speaks plain HTTP), `TokenReview`, the
//!   `associated-node` impersonation mode, impersonating a UID or extra fields.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::selectors::{labels, selector_matches};
use crate::status::ApiError;
use crate::store::Store;

/// The user of requests without credentials.
pub const ADMIN: &str = "kubekit-fake-admin";

/// The group that may do everything.
const MASTERS: &str = "system:masters";

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UserInfo {
    pub(crate) name: String,
    pub(crate) groups: Vec<String>,
}

impl UserInfo {
    /// The fake's admin.
    pub(crate) fn admin() -> Self {
        Self {
            name: ADMIN.into(),
            groups: vec![MASTERS.into(), "system:authenticated".into()],
        }
    }

    /// `name` in `groups`, `system:authenticated` (and a service account's groups) added
    /// as the real server adds them.
    pub(crate) fn authenticated(name: &str, groups: &[String]) -> Self {
        let mut all: Vec<String> = groups.to_vec();
        if let Some(ns) = service_account(name).map(|(ns, _)| ns) {
            all.push("system:serviceaccounts".into());
            all.push(format!("system:serviceaccounts:{ns}"));
        }
        all.push("system:authenticated".into());
        all.dedup();
        Self {
            name: name.into(),
            groups: all,
        }
    }
}

/// `(namespace, name)` of a service account's user name.
fn service_account(user: &str) -> Option<(&str, &str)> {
    user.strip_prefix("system:serviceaccount:")?.split_once(':')
}

/// The bearer tokens handed out, and whom each is for.
#[derive(Debug, Default)]
pub(crate) struct Tokens(Mutex<HashMap<String, UserInfo>>);

impl Tokens {
    /// A new token for `user`.
    pub(crate) fn issue(&self, user: UserInfo) -> String {
        let token = format!("kubekit-fake-{:032x}", fastrand::u128(..));
        self.0.lock().insert(token.clone(), user);
        token
    }

    fn user(&self, token: &str) -> Option<UserInfo> {
        self.0.lock().get(token).cloned()
    }
}

/// What a request asks to do, as the authorizer sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    pub(crate) verb: String,
    /// Empty for a request of a non-resource path.
    pub(crate) resource: String,
    pub(crate) group: String,
    pub(crate) subresource: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
    /// The path of a non-resource request.
    pub(crate) path: String,
}

impl Attributes {
    /// A request of `path`, not of a resource, with the HTTP method's verb.
    pub(crate) fn non_resource(method: &http::Method, path: &str) -> Self {
        let verb = match method.as_str() {
            "GET" | "HEAD" => "get",
            "POST" => "post",
            "PUT" => "put",
            "PATCH" => "patch",
            "DELETE" => "delete",
            other => other,
        };
        Self {
            verb: verb.to_ascii_lowercase(),
            path: path.into(),
            ..Self::default()
        }
    }

    /// What a request of `path` (split in `segments`) with `method` and `query` asks, as
    /// kube-apiserver's `RequestInfoFactory` reads it: `/api/v1/...` and
    /// `/apis/<group>/<version>/...` are resource requests (`namespaces/<ns>/` sets the
    /// namespace, then resource, name, subresource), everything else a path.
    pub(crate) fn of_request(
        method: &http::Method,
        path: &str,
        segments: &[&str],
        query: &[(String, String)],
    ) -> Self {
        let (group, mut parts) = match segments {
            ["api", "v1", rest @ ..] if !rest.is_empty() => ("", rest),
            ["apis", group, _, rest @ ..] if !rest.is_empty() => (*group, rest),
            _ => return Self::non_resource(method, path),
        };
        let param = |key: &str| {
            query
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let mut attrs = Self {
            group: group.into(),
            path: path.into(),
            ..Self::default()
        };
        let mut watch_path = false;
        if parts.first() == Some(&"watch") {
            watch_path = true;
            parts = &parts[1..];
        }
        if parts.first() == Some(&"namespaces") && parts.len() > 1 {
            attrs.namespace = parts[1].into();
            // `namespaces/<ns>/status` and `finalize` are the Namespace's subresources.
            if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
                parts = &parts[2..];
            }
        }
        let part = |i: usize| parts.get(i).map(|s| s.to_string()).unwrap_or_default();
        attrs.resource = part(0);
        attrs.name = part(1);
        attrs.subresource = part(2);
        attrs.verb = match method.as_str() {
            "POST" => "create",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" if attrs.name.is_empty() => "deletecollection",
            "DELETE" => "delete",
            "GET" | "HEAD" if watch_path => "watch",
            "GET" | "HEAD" if !attrs.name.is_empty() => "get",
            "GET" | "HEAD" if param("watch").is_some_and(|w| w == "true" || w == "1") => "watch",
            "GET" | "HEAD" => "list",
            other => {
                return Self {
                    verb: other.to_ascii_lowercase(),
                    ..attrs
                };
            }
        }
        .into();
        // A list or watch of one name (`fieldSelector=metadata.name=<name>`) names it.
        if matches!(attrs.verb.as_str(), "list" | "watch") && attrs.name.is_empty() {
            let exact = param("fieldSelector").and_then(|f| {
                let f = f.trim();
                let name = f
                    .strip_prefix("metadata.name==")
                    .or_else(|| f.strip_prefix("metadata.name="))?;
                (!name.contains(',') && !name.starts_with('=')).then_some(name)
            });
            if let Some(name) =
                exact.filter(|n| !n.is_empty() && crate::store::path_segment(n).is_empty())
            {
                attrs.name = name.into();
            }
        }
        attrs
    }

    /// The real server's message for `user` refused this.
    fn forbidden_message(&self, user: &str) -> String {
        if self.resource.is_empty() {
            return format!("User {user:?} cannot {} path {:?}", self.verb, self.path);
        }
        let mut resource = self.resource.clone();
        if !self.subresource.is_empty() {
            resource = format!("{resource}/{}", self.subresource);
        }
        let scope = if self.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", self.namespace)
        };
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}",
            self.verb, self.group
        )
    }

    /// The `403 Forbidden` of `user` refused this, with `reason` (the authorizer's, may be
    /// empty) after the message.
    pub(crate) fn forbidden(&self, user: &str, reason: &str) -> ApiError {
        let mut why = self.forbidden_message(user);
        if !reason.is_empty() {
            why = format!("{why}: {reason}");
        }
        if self.resource.is_empty() {
            return ApiError::new(403, "Forbidden", format!("forbidden: {why}"))
                .with_details(json!({}));
        }
        let qualified = if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        };
        let message = if self.name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} {:?} is forbidden: {why}", self.name)
        };
        // Empty fields are left out, as the real server's `StatusDetails` leaves them.
        let mut details = json!({"kind": self.resource});
        if !self.group.is_empty() {
            details["group"] = json!(self.group);
        }
        if !self.name.is_empty() {
            details["name"] = json!(self.name);
        }
        ApiError::new(403, "Forbidden", message).with_details(details)
    }
}

/// Who sent a request with `headers` asking `asked`: the token's user (or the admin
/// without one), then whom it impersonates, if it may (see [`impersonate`]).
pub(crate) fn authenticate(
    store: &Store,
    (tokens, last): (&Tokens, &LastModes),
    headers: &http::HeaderMap,
    asked: &Attributes,
) -> Result<UserInfo, ApiError> {
    let bearer = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let requester = match bearer {
        None => UserInfo::admin(),
        Some(token) => tokens
            .user(token.trim())
            .ok_or_else(|| ApiError::new(401, "Unauthorized", "Unauthorized"))?,
    };
    let header_values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect()
    };
    match header_values("impersonate-user").into_iter().next() {
        None => Ok(requester),
        Some(user) => {
            let groups = header_values("impersonate-group");
            impersonate(store, last, &requester, (&user, &groups), asked)
        }
    }
}

/// The node name of a node's user name (`system:node:<name>`).
fn node(user: &str) -> Option<&str> {
    user.strip_prefix("system:node:")
        .filter(|n| kubekit::validation::dns1123_subdomain(n).is_empty())
}

/// The impersonation modes, in the order they are tried: the constrained ones, then the
/// legacy one (`""`).
const MODES: [&str; 4] = ["arbitrary-node", "serviceaccount", "user-info", ""];

/// The impersonation mode that last worked for each requester, tried first the next time
/// (kube-apiserver's mode index cache, which decides whose refusal a request gets).
#[derive(Debug, Default)]
pub(crate) struct LastModes(Mutex<HashMap<String, usize>>);

impl LastModes {
    /// As the real server's cache, it forgets everyone past this many requesters.
    const MAX: usize = 10_000;

    fn get(&self, requester: &str) -> Option<usize> {
        self.0.lock().get(requester).copied()
    }

    fn set(&self, requester: &str, mode: usize) {
        let mut modes = self.0.lock();
        if modes.len() >= Self::MAX {
            modes.clear();
        }
        modes.insert(requester.into(), mode);
    }
}

/// `user` in `groups`, as `requester` may impersonate them for a request asking `asked`,
/// as kube-apiserver 1.37's impersonation filter decides. Each constrained mode that
/// applies (`arbitrary-node` for a node's user alone, `serviceaccount` for a service
/// account's alone, `user-info` for anyone else) needs `impersonate-on:<mode>:<verb>` on
/// what the request asks and `impersonate:<mode>` on the identity (in
/// `authentication.k8s.io`); the legacy mode, the `impersonate` verb on it (in the core
/// group). The mode that last worked for the requester is tried first, and a refusal is
/// the first mode's to refuse. (The `associated-node` mode, for a service account bound to
/// a node, never applies: the fake's tokens are bound to none. Successes are not cached:
/// a change of RBAC applies at once.)
fn impersonate(
    store: &Store,
    last: &LastModes,
    requester: &UserInfo,
    (user, groups): (&str, &[String]),
    asked: &Attributes,
) -> Result<UserInfo, ApiError> {
    let (is_node, is_sa) = (node(user).is_some(), service_account(user).is_some());
    let applies = [
        is_node && groups.is_empty(),
        is_sa && groups.is_empty(),
        !is_node && !is_sa,
        true,
    ];
    let attempt = |i: usize| -> Result<UserInfo, ApiError> {
        let mode = MODES[i];
        if mode.is_empty() {
            return may_be(store, requester, "impersonate", false, user, groups);
        }
        let on = Attributes {
            verb: format!("impersonate-on:{mode}:{}", asked.verb),
            ..asked.clone()
        };
        check(store, requester, &on)?;
        may_be(
            store,
            requester,
            &format!("impersonate:{mode}"),
            true,
            user,
            groups,
        )
    };
    let cached = last.get(&requester.name).filter(|i| applies[*i]);
    let mut first = None;
    if let Some(i) = cached {
        match attempt(i) {
            Ok(who) => return Ok(who),
            Err(e) => first = Some(e),
        }
    }
    for i in (0..MODES.len()).filter(|i| applies[*i] && Some(*i) != cached) {
        match attempt(i) {
            Ok(who) => {
                last.set(&requester.name, i);
                return Ok(who);
            }
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    Err(first.unwrap_or_else(|| ApiError::new(403, "Forbidden", "all impersonation modes failed")))
}

/// The identity checks of one impersonation mode (`verb`): the user (a node's on
/// `nodes`, a service account's on `serviceaccounts` of its namespace, anyone else's on
/// `users`), then each group; the identity it gives.
fn may_be(
    store: &Store,
    requester: &UserInfo,
    verb: &str,
    constrained: bool,
    user: &str,
    groups: &[String],
) -> Result<UserInfo, ApiError> {
    let ask = |resource: &str, name: &str| Attributes {
        verb: verb.into(),
        group: if constrained {
            "authentication.k8s.io"
        } else {
            ""
        }
        .into(),
        resource: resource.into(),
        name: name.into(),
        ..Attributes::default()
    };
    let mut actual: Vec<String> = groups.to_vec();
    let mut who = ask("users", user);
    if let Some(name) = node(user).filter(|_| constrained) {
        who = ask("nodes", name);
        actual = vec!["system:nodes".into()];
    }
    if let Some((ns, name)) = service_account(user) {
        who = ask("serviceaccounts", name);
        who.namespace = ns.into();
        if groups.is_empty() {
            actual = vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
            ];
        }
    }
    check(store, requester, &who)?;
    let mut group = ask("groups", "");
    if constrained {
        let refused = |group: &Attributes, why: &str| Err(group.forbidden(&requester.name, why));
        if groups.iter().any(String::is_empty) {
            return refused(
                &group,
                "impersonating the empty string group is not allowed",
            );
        }
        if groups.iter().any(|g| g == MASTERS) {
            group.name = MASTERS.into();
            return refused(
                &group,
                "impersonating the system:masters group is not allowed",
            );
        }
    }
    // Many groups: one check of them all may do.
    group.name = "*".into();
    let all = constrained && groups.len() >= 4 && check(store, requester, &group).is_ok();
    if !all {
        for g in groups {
            group.name = g.clone();
            check(store, requester, &group)?;
        }
    }
    if user == "system:anonymous" {
        actual.push("system:unauthenticated".into());
    } else if !actual.iter().any(|g| g == "system:unauthenticated") {
        actual.push("system:authenticated".into());
    }
    actual.dedup();
    Ok(UserInfo {
        name: user.into(),
        groups: actual,
    })
}

/// What the authorizer decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allowed, with the real server's reason (empty for `system:masters`).
    Allowed(String),
    /// Denied, with the real server's reason (bindings to roles that do not exist).
    Denied(String),
}

/// One binding that applies to the user: its description as the real server's reasons
/// give it, and its role's rules.
struct Grant {
    by: String,
    rules: Vec<Value>,
}

/// Whether RBAC lets `user` do `attrs`.
pub(crate) fn authorize(store: &Store, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.groups.iter().any(|g| g == MASTERS) {
        return Decision::Allowed(String::new());
    }
    let (grants, errors) = grants(store, user, &attrs.namespace);
    for grant in &grants {
        if grant.rules.iter().any(|rule| rule_allows(rule, attrs)) {
            return Decision::Allowed(format!("RBAC: allowed by {}", grant.by));
        }
    }
    // As apimachinery's aggregate of errors prints them, after the name kube-apiserver's
    // chain of authorizers gives RBAC.
    match errors.as_slice() {
        [] => Decision::Denied(String::new()),
        [one] => Decision::Denied(format!("rbac: RBAC: {one}")),
        many => Decision::Denied(format!("rbac: RBAC: [{}]", many.join(", "))),
    }
}

/// [`authorize`], a refusal as the real server's `403 Forbidden`.
pub(crate) fn check(store: &Store, user: &UserInfo, attrs: &Attributes) -> Result<(), ApiError> {
    match authorize(store, user, attrs) {
        Decision::Allowed(_) => Ok(()),
        Decision::Denied(reason) => Err(attrs.forbidden(&user.name, &reason)),
    }
}

/// The rules granted to `user` in `namespace` (cluster-wide ones only when empty), as a
/// `SelfSubjectRulesReview` lists them: resource rules and non-resource rules.
pub(crate) fn rules_for(
    store: &Store,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<Value>, Vec<Value>) {
    if user.groups.iter().any(|g| g == MASTERS) {
        return (
            vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
            vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
        );
    }
    let (grants, _) = grants(store, user, namespace);
    let (mut resource, mut non_resource) = (Vec::new(), Vec::new());
    for rule in grants.into_iter().flat_map(|g| g.rules) {
        if rule.get("nonResourceURLs").is_some() {
            non_resource.push(rule);
        } else {
            resource.push(rule);
        }
    }
    (resource, non_resource)
}

/// The objects of an RBAC resource (in `ns`, or all).
fn objects(store: &Store, plural: &str, ns: Option<&str>) -> Vec<std::sync::Arc<Value>> {
    store
        .lookup("rbac.authorization.k8s.io", "v1", plural)
        .and_then(|info| store.snapshot(&info, ns, None).ok())
        .map(|(_, objects)| objects)
        .unwrap_or_default()
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The bindings that apply to `user` (ClusterRoleBindings, and RoleBindings of
/// `namespace`), with their roles' rules, and the real server's errors for bindings whose
/// role does not exist.
fn grants(store: &Store, user: &UserInfo, namespace: &str) -> (Vec<Grant>, Vec<String>) {
    let cluster_roles = objects(store, "clusterroles", None);
    let cluster_role = |name: &str| cluster_roles.iter().find(|r| name_of(r) == name);
    let (mut grants, mut errors) = (Vec::new(), Vec::new());
    let mut add = |binding: &Value, kind: &str, role: Option<&Value>, role_kind: &str| {
        let Some(subject) = matching_subject(binding, user, namespace) else {
            return;
        };
        let role_name = binding
            .pointer("/roleRef/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(role) = role else {
            let what = if role_kind == "Role" {
                "role"
            } else {
                "clusterrole"
            };
            errors.push(format!(
                "{what}.rbac.authorization.k8s.io {role_name:?} not found"
            ));
            return;
        };
        let binding_name = match binding
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        {
            Some(ns) if !ns.is_empty() => format!("{}/{ns}", name_of(binding)),
            _ => name_of(binding).to_string(),
        };
        let rules = if role_kind == "ClusterRole" {
            aggregated_rules(role, &cluster_roles)
        } else {
            role["rules"].as_array().cloned().unwrap_or_default()
        };
        grants.push(Grant {
            by: format!("{kind} {binding_name:?} of {role_kind} {role_name:?} to {subject}"),
            rules,
        });
    };
    for binding in objects(store, "clusterrolebindings", None) {
        let name = binding
            .pointer("/roleRef/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        add(
            &binding,
            "ClusterRoleBinding",
            cluster_role(name).map(|r| &**r),
            "ClusterRole",
        );
    }
    if !namespace.is_empty() {
        let roles = objects(store, "roles", Some(namespace));
        for binding in objects(store, "rolebindings", Some(namespace)) {
            let name = binding
                .pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match binding.pointer("/roleRef/kind").and_then(Value::as_str) {
                Some("ClusterRole") => {
                    add(
                        &binding,
                        "RoleBinding",
                        cluster_role(name).map(|r| &**r),
                        "ClusterRole",
                    );
                }
                _ => {
                    let role = roles.iter().find(|r| name_of(r) == name);
                    add(&binding, "RoleBinding", role.map(|r| &**r), "Role");
                }
            }
        }
    }
    (grants, errors)
}

/// The subject of `binding` that names `user` (as the real server's reasons describe it:
/// `User "alice"`, `Group "devs"`, `ServiceAccount "name/ns"`).
fn matching_subject(binding: &Value, user: &UserInfo, namespace: &str) -> Option<String> {
    for subject in binding["subjects"].as_array().into_iter().flatten() {
        let name = subject["name"].as_str().unwrap_or_default();
        match subject["kind"].as_str() {
            Some("User") if name == user.name => return Some(format!("User {name:?}")),
            Some("Group") if user.groups.iter().any(|g| g == name) => {
                return Some(format!("Group {name:?}"));
            }
            Some("ServiceAccount") => {
                let ns = subject["namespace"]
                    .as_str()
                    .filter(|ns| !ns.is_empty())
                    .unwrap_or(namespace);
                if user.name == format!("system:serviceaccount:{ns}:{name}") {
                    return Some(format!("ServiceAccount \"{name}/{ns}\""));
                }
            }
            _ => {}
        }
    }
    None
}

/// A ClusterRole's rules: with an `aggregationRule`, those of every ClusterRole its
/// selectors match (as the aggregation controller writes them), else its own.
fn aggregated_rules(role: &Value, all: &[std::sync::Arc<Value>]) -> Vec<Value> {
    let Some(selectors) = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
    else {
        return role["rules"].as_array().cloned().unwrap_or_default();
    };
    let mut rules: Vec<Value> = Vec::new();
    for other in all {
        if name_of(other) == name_of(role) {
            continue;
        }
        let theirs = labels(other);
        if selectors.iter().any(|s| selector_matches(s, &theirs)) {
            for rule in other["rules"].as_array().into_iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    rules
}

/// Whether `list` (a rule's field) holds `want` or `*`.
fn holds(list: &Value, want: &str) -> bool {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|v| v == "*" || v == want)
}

/// Whether one PolicyRule allows `attrs`, as RBAC's rule matching decides.
fn rule_allows(rule: &Value, attrs: &Attributes) -> bool {
    if !holds(&rule["verbs"], &attrs.verb) {
        return false;
    }
    if attrs.resource.is_empty() {
        let urls = rule["nonResourceURLs"].as_array().into_iter().flatten();
        return urls.filter_map(Value::as_str).any(|url| {
            url == "*"
                || url == attrs.path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| attrs.path.starts_with(prefix))
        });
    }
    if !holds(&rule["apiGroups"], &attrs.group) {
        return false;
    }
    let combined = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let resources = rule["resources"].as_array().into_iter().flatten();
    let resource_matches = resources.filter_map(Value::as_str).any(|r| {
        r == "*"
            || r == combined
            || (!attrs.subresource.is_empty() && r.strip_prefix("*/") == Some(&attrs.subresource))
    });
    if !resource_matches {
        return false;
    }
    match rule["resourceNames"].as_array() {
        Some(names) if !names.is_empty() => {
            !attrs.name.is_empty() && names.iter().any(|n| n.as_str() == Some(&attrs.name))
        }
        _ => true,
    }
}

/// A PolicyRule's lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Rule {
    groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    names: Vec<String>,
    urls: Vec<String>,
}

impl Rule {
    fn of(rule: &Value) -> Self {
        let list = |key: &str| -> Vec<String> {
            rule[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        };
        Self {
            groups: list("apiGroups"),
            resources: list("resources"),
            verbs: list("verbs"),
            names: list("resourceNames"),
            urls: list("nonResourceURLs"),
        }
    }

    /// The rule as one rule per group, resource, verb and name (and per URL and verb), as
    /// RBAC's `BreakdownRule` splits it.
    fn breakdown(&self) -> Vec<Rule> {
        let mut out = Vec::new();
        let one = |v: &String| vec![v.clone()];
        for group in &self.groups {
            for resource in &self.resources {
                for verb in &self.verbs {
                    let base = Rule {
                        groups: one(group),
                        resources: one(resource),
                        verbs: one(verb),
                        ..Rule::default()
                    };
                    for name in &self.names {
                        out.push(Rule {
                            names: one(name),
                            ..base.clone()
                        });
                    }
                    if self.names.is_empty() {
                        out.push(base);
                    }
                }
            }
        }
        for url in &self.urls {
            for verb in &self.verbs {
                out.push(Rule {
                    urls: one(url),
                    verbs: one(verb),
                    ..Rule::default()
                });
            }
        }
        out
    }

    /// Whether this rule (the owner's) covers `sub`, one rule of a breakdown.
    fn covers(&self, sub: &Rule) -> bool {
        let all = |set: &[String], star: &str, wanted: &[String]| {
            set.iter().any(|v| v == star) || wanted.iter().all(|w| set.contains(w))
        };
        let resources = self.resources.iter().any(|r| r == "*")
            || sub.resources.iter().all(|r| {
                self.resources.contains(r)
                    || r.split_once('/')
                        .is_some_and(|(_, sub)| self.resources.contains(&format!("*/{sub}")))
            });
        let urls = sub.urls.iter().all(|path| {
            self.urls.iter().any(|owner| {
                owner == path
                    || owner
                        .strip_suffix('*')
                        .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
            })
        });
        let names = self.names.is_empty()
            || (!sub.names.is_empty() && sub.names.iter().all(|n| self.names.contains(n)));
        all(&self.verbs, "*", &sub.verbs)
            && all(&self.groups, "*", &sub.groups)
            && resources
            && names
            && urls
    }

    /// As RBAC's `CompactString` prints it: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`.
    fn compact_string(&self) -> String {
        let list = |v: &[String]| {
            let quoted: Vec<String> = v.iter().map(|s| kubekit::validation::quote(s)).collect();
            format!("[{}]", quoted.join(" "))
        };
        let parts: Vec<String> = [
            ("APIGroups", &self.groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.urls),
            ("ResourceNames", &self.names),
            ("Verbs", &self.verbs),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}:{}", list(v)))
        .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

/// The rules of `rules` that `owner`'s rules do not cover, compacted (one rule per group,
/// resource and name, with all its verbs) as RBAC's `CompactRules` does, printed and
/// sorted as its escalation message lists them.
fn uncovered(owner: &[Value], rules: &[Value]) -> Vec<String> {
    let owner: Vec<Rule> = owner.iter().map(Rule::of).collect();
    let mut compacted: Vec<Rule> = Vec::new();
    for sub in rules.iter().flat_map(|r| Rule::of(r).breakdown()) {
        if owner.iter().any(|o| o.covers(&sub)) {
            continue;
        }
        let simple = sub.urls.is_empty();
        let same = compacted.iter_mut().find(|c| {
            simple
                && c.urls.is_empty()
                && (&c.groups, &c.resources, &c.names) == (&sub.groups, &sub.resources, &sub.names)
        });
        match same {
            Some(c) => c.verbs.extend(sub.verbs),
            None => compacted.push(sub),
        }
    }
    let mut out: Vec<String> = compacted.iter().map(Rule::compact_string).collect();
    out.sort();
    out.dedup();
    out
}

/// `403 Forbidden` of RBAC object `name` (of `plural`) with `why`.
fn forbidden_object(plural: &str, name: &str, why: &str) -> ApiError {
    let group = "rbac.authorization.k8s.io";
    ApiError::new(
        403,
        "Forbidden",
        format!("{plural}.{group} {name:?} is forbidden: {why}"),
    )
    .with_details(json!({"name": name, "group": group, "kind": plural}))
}

/// Whether `user` holds every permission of `rules` in `namespace`, else the real
/// server's message naming what they lack.
fn confirm_no_escalation(
    store: &Store,
    user: &UserInfo,
    namespace: &str,
    rules: &[Value],
) -> Result<(), String> {
    let (resource, non_resource) = rules_for(store, user, namespace);
    let owner: Vec<Value> = resource.into_iter().chain(non_resource).collect();
    let missing = uncovered(&owner, rules);
    if missing.is_empty() {
        return Ok(());
    }
    let groups: Vec<String> = user
        .groups
        .iter()
        .map(|g| kubekit::validation::quote(g))
        .collect();
    let mut why = format!(
        "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        kubekit::validation::quote(&user.name),
        groups.join(" "),
        missing.join("\n")
    );
    // One aggregate of errors, printed in a list of one.
    let (_, errors) = grants(store, user, namespace);
    match errors.as_slice() {
        [] => {}
        [one] => why.push_str(&format!("; resolution errors: [{one}]")),
        many => why.push_str(&format!("; resolution errors: [[{}]]", many.join(", "))),
    }
    Err(why)
}

/// The fields of an RBAC object a write is checked for: a change of nothing else (an
/// owner reference, a finalizer, a resourceVersion) is the garbage collector's, unchecked.
fn checked_fields(obj: &Value) -> [&Value; 6] {
    [
        &obj["metadata"]["labels"],
        &obj["metadata"]["annotations"],
        &obj["rules"],
        &obj["aggregationRule"],
        &obj["roleRef"],
        &obj["subjects"],
    ]
}

/// kube-apiserver's checks on `user` writing `new` (over `old`, if any) as RBAC object
/// `name` of `plural` in `namespace`: a Role or ClusterRole may grant only what its
/// writer holds (unless they may `escalate` it), and only a writer who may do everything
/// sets an `aggregationRule`; a binding may bind only a role whose permissions its writer
/// holds (unless they may `bind` it). `system:masters` may do all of it.
pub(crate) fn check_write(
    store: &Store,
    user: &UserInfo,
    (plural, namespace, name): (&str, &str, &str),
    new: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if user.groups.iter().any(|g| g == MASTERS)
        || old.is_some_and(|old| checked_fields(old) == checked_fields(new))
    {
        return Ok(());
    }
    let group = "rbac.authorization.k8s.io";
    let may = |verb: &str, resource: &str, name: &str| {
        let attrs = Attributes {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Attributes::default()
        };
        matches!(authorize(store, user, &attrs), Decision::Allowed(_))
    };
    let refuse = |why: String| forbidden_object(plural, name, &why);
    match plural {
        "roles" | "clusterroles" => {
            if may("escalate", plural, name) {
                return Ok(());
            }
            let rules = new["rules"].as_array().cloned().unwrap_or_default();
            confirm_no_escalation(store, user, namespace, &rules).map_err(refuse)?;
            let aggregates = |o: &Value| !o["aggregationRule"].is_null();
            if plural == "clusterroles" && (aggregates(new) || old.is_some_and(aggregates)) {
                let everything = [
                    json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
                    json!({"nonResourceURLs": ["*"], "verbs": ["*"]}),
                ];
                confirm_no_escalation(store, user, namespace, &everything).map_err(|_| {
                    refuse("must have cluster-admin privileges to use the aggregationRule".into())
                })?;
            }
            Ok(())
        }
        "rolebindings" | "clusterrolebindings" => {
            let text = |key: &str| new["roleRef"][key].as_str().unwrap_or_default();
            let (kind, role_name) = (text("kind"), text("name"));
            let role_plural = if kind == "Role" {
                "roles"
            } else {
                "clusterroles"
            };
            if may("bind", role_plural, role_name) {
                return Ok(());
            }
            let role = if kind == "Role" {
                objects(store, "roles", Some(namespace))
            } else {
                objects(store, "clusterroles", None)
            }
            .into_iter()
            .find(|r| name_of(r) == role_name)
            .ok_or_else(|| {
                // Named by the resource of the request, as the real server's role getter
                // names it.
                ApiError::new(
                    404,
                    "NotFound",
                    format!("{plural}.{group} {role_name:?} not found"),
                )
                .with_details(json!({"name": role_name, "group": group, "kind": plural}))
            })?;
            let all = objects(store, "clusterroles", None);
            let rules = if kind == "Role" {
                role["rules"].as_array().cloned().unwrap_or_default()
            } else {
                aggregated_rules(&role, &all)
            };
            confirm_no_escalation(store, user, namespace, &rules).map_err(refuse)
        }
        _ => Ok(()),
    }
}

/// The bootstrap roles and bindings a server with RBAC starts with (see the module
/// docs): ClusterRoles, then ClusterRoleBindings.
pub(crate) fn bootstrap() -> (Vec<Value>, Vec<Value>) {
    let meta = |name: &str| {
        json!({"name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}})
    };
    let role = |name: &str, rules: Value| json!({"metadata": meta(name), "rules": rules});
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
            .collect();
        json!({"metadata": meta(name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects})
    };
    let roles = vec![
        role(
            "cluster-admin",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                   {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        ),
        role(
            "system:discovery",
            json!([{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz",
                "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"],
                "verbs": ["get"]}]),
        ),
        role(
            "system:basic-user",
            json!([{"apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"]},
                   {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
                    "verbs": ["create"]}]),
        ),
        role(
            "system:public-info-viewer",
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                "verbs": ["get"]}]),
        ),
    ];
    let bindings = vec![
        binding("cluster-admin", &[MASTERS]),
        binding("system:discovery", &["system:authenticated"]),
        binding("system:basic-user", &["system:authenticated"]),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
    ];
    (roles, bindings)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn asks(verb: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            namespace: "ns".into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn rules_match_verbs_groups_resources_subresources_and_names_as_rbac_does() {
        let rule = json!({"apiGroups": [""], "resources": ["pods", "pods/log", "*/status"],
            "verbs": ["get", "list"]});
        assert!(rule_allows(&rule, &asks("get", "pods", "", "p")));
        assert!(rule_allows(&rule, &asks("get", "pods", "log", "p")));
        assert!(rule_allows(
            &rule,
            &asks("get", "deployments", "status", "d")
        ));
        assert!(
            !rule_allows(&rule, &asks("get", "pods", "exec", "p")),
            "another subresource"
        );
        assert!(
            !rule_allows(&rule, &asks("create", "pods", "", "")),
            "another verb"
        );
        let mut other_group = asks("get", "pods", "", "p");
        other_group.group = "apps".into();
        assert!(!rule_allows(&rule, &other_group));
        let named = json!({"apiGroups": [""], "resources": ["configmaps"],
            "resourceNames": ["one"], "verbs": ["*"]});
        assert!(rule_allows(
            &named,
            &asks("update", "configmaps", "", "one")
        ));
        assert!(!rule_allows(
            &named,
            &asks("update", "configmaps", "", "two")
        ));
        assert!(
            !rule_allows(&named, &asks("list", "configmaps", "", "")),
            "a list names none"
        );
        let all = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
        assert!(rule_allows(&all, &asks("delete", "pods", "eviction", "p")));
    }

    #[test]
    fn requests_are_read_as_the_request_info_factory_reads_them() {
        let of = |method: http::Method, path: &str, query: &[(&str, &str)]| {
            let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
            let query: Vec<(String, String)> = query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let a = Attributes::of_request(&method, path, &segments, &query);
            let fields = [
                a.verb,
                a.group,
                a.namespace,
                a.resource,
                a.name,
                a.subresource,
            ];
            fields.join("|")
        };
        use http::Method;
        assert_eq!(
            of(Method::GET, "/api/v1/namespaces/ns/pods", &[]),
            "list||ns|pods||"
        );
        assert_eq!(
            of(Method::GET, "/api/v1/namespaces/ns/pods/p/log", &[]),
            "get||ns|pods|p|log"
        );
        assert_eq!(
            of(
                Method::GET,
                "/apis/apps/v1/deployments",
                &[("watch", "true")]
            ),
            "watch|apps||deployments||"
        );
        assert_eq!(
            of(Method::GET, "/api/v1/watch/namespaces/ns/pods", &[]),
            "watch||ns|pods||"
        );
        assert_eq!(
            of(
                Method::GET,
                "/api/v1/namespaces/ns/configmaps",
                &[("fieldSelector", "metadata.name=one")]
            ),
            "list||ns|configmaps|one|"
        );
        assert_eq!(
            of(Method::DELETE, "/api/v1/namespaces/ns/secrets", &[]),
            "deletecollection||ns|secrets||"
        );
        // A Namespace is in itself; its `finalize` is a subresource.
        assert_eq!(
            of(Method::PUT, "/api/v1/namespaces/ns/finalize", &[]),
            "update||ns|namespaces|ns|finalize"
        );
        assert_eq!(
            of(Method::GET, "/api/v1/namespaces/ns", &[]),
            "get||ns|namespaces|ns|"
        );
        let path = Attributes::of_request(&Method::GET, "/version", &["version"], &[]);
        assert_eq!((path.verb.as_str(), path.resource.as_str()), ("get", ""));
    }

    #[test]
    fn escalation_lists_the_uncovered_rules_compacted_and_sorted_as_rbac_prints_them() {
        let owner = [
            json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}),
            json!({"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["*"]}),
            json!({"nonResourceURLs": ["/healthz*"], "verbs": ["get"]}),
        ];
        let wanted = [
            json!({"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "watch"]}),
            json!({"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]}),
            json!({"apiGroups": [""], "resources": ["pods"], "resourceNames": ["a", "b"], "verbs": ["delete"]}),
            json!({"nonResourceURLs": ["/healthz/etcd", "/metrics"], "verbs": ["get"]}),
        ];
        assert_eq!(
            uncovered(&owner, &wanted),
            [
                r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["watch"]}"#,
                r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["delete"]}"#,
                r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["delete"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "watch"]}"#,
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
            ]
        );
        assert!(
            uncovered(&owner, &owner).is_empty(),
            "what one holds is covered"
        );
    }

    #[test]
    fn non_resource_rules_match_exact_paths_and_prefixes() {
        let rule = json!({"nonResourceURLs": ["/version", "/apis/*"], "verbs": ["get"]});
        let get = |path: &str| Attributes::non_resource(&http::Method::GET, path);
        assert!(rule_allows(&rule, &get("/version")));
        assert!(rule_allows(&rule, &get("/apis/apps/v1")));
        assert!(!rule_allows(&rule, &get("/versions")));
        assert!(!rule_allows(
            &rule,
            &Attributes::non_resource(&http::Method::POST, "/version")
        ));
    }

    #[test]
    fn refusals_carry_the_real_servers_messages() {
        let mut a = asks("create", "configmaps", "", "");
        let e = a.forbidden("alice", "");
        assert_eq!(
            e.message,
            "configmaps is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"ns\""
        );
        a = Attributes {
            verb: "get".into(),
            resource: "deployments".into(),
            group: "apps".into(),
            subresource: "scale".into(),
            name: "web".into(),
            ..Attributes::default()
        };
        assert_eq!(
            a.forbidden("bob", "").message,
            "deployments.apps \"web\" is forbidden: User \"bob\" cannot get resource \"deployments/scale\" in API group \"apps\" at the cluster scope"
        );
        let path = Attributes::non_resource(&http::Method::GET, "/metrics");
        assert_eq!(
            path.forbidden("bob", "").message,
            "forbidden: User \"bob\" cannot get path \"/metrics\""
        );
    }

    #[test]
    fn label_selectors_of_aggregation_rules_match_labels_and_expressions() {
        let labels: BTreeMap<String, String> =
            [("aggregate".to_string(), "yes".to_string())].into();
        assert!(selector_matches(
            &json!({"matchLabels": {"aggregate": "yes"}}),
            &labels
        ));
        assert!(!selector_matches(
            &json!({"matchLabels": {"aggregate": "no"}}),
            &labels
        ));
        let expr = |op: &str, values: &[&str]| json!({"matchExpressions": [{"key": "aggregate", "operator": op, "values": values}]});
        assert!(selector_matches(&expr("In", &["yes", "maybe"]), &labels));
        assert!(!selector_matches(&expr("NotIn", &["yes"]), &labels));
        assert!(selector_matches(&expr("Exists", &[]), &labels));
        assert!(!selector_matches(&expr("DoesNotExist", &[]), &labels));
    }
}
