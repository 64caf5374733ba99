//! Admission webhooks, as kube-apiserver 1.37's `MutatingAdmissionWebhook` and
//! `ValidatingAdmissionWebhook` plugins call them: the stored
//! `MutatingWebhookConfiguration`s and `ValidatingWebhookConfiguration`s
//! (`admissionregistration.k8s.io/v1`) are read at each request, and every webhook whose
//! rules and selectors match is sent an `admission.k8s.io/v1` `AdmissionReview` over HTTPS
//! (see `webhook_client`).
//!
//! # Contract
//!
//! - **Where.** Mutating webhooks run on a create, update or patch (of an object, its
//!   status, or its `Scale`, which the scale subresource's webhooks see) before it is
//!   validated and stored (the fake's defaults applied and managedFields recorded first, so
//!   what they add is owned by no manager, as on the real server), and on a delete with no
//!   object; validating webhooks run after validation, on what would be stored (on a
//!   delete: the object as it is, as `oldObject`). An update or patch whose object changes
//!   while its webhooks are called is done again on the new object, as kube-apiserver's
//!   `GuaranteedUpdate` does.
//! - **Which.** Configurations in name order, webhooks in their order. A webhook is called
//!   when one of its `rules` matches the operation, group, version, resource and
//!   subresource (`*`, `*/*`, `pods/*`, `*/status`) and scope; its `namespaceSelector`
//!   matches the namespace's labels (a Namespace's own labels for a Namespace; ignored for
//!   other cluster-scoped objects); and its `objectSelector` matches the labels of the
//!   object or of the old object. Versions match exactly (`matchPolicy: Equivalent`
//!   converts between versions on the real server; the fake has one version of each
//!   built-in kind and converts no custom resource). Webhooks are never called for the
//!   webhook configurations themselves, as on the real server.
//! - **Mutating**: called one after another; a `JSONPatch` answer is applied to the object
//!   the next webhook sees. A webhook with `reinvocationPolicy: IfNeeded` is called once
//!   more, after the others, when a later webhook changed the object.
//! - **Validating**: after the ValidatingAdmissionPolicies (see `policies`), called at
//!   once, in parallel; a refusal that needs no call (a failed `matchConditions`, a dry
//!   run) comes first, as the real server's first answer would, else the first refusal
//!   in their order is the answer.
//! - **Answers**: a refusal is the webhook's `Status` with `admission webhook "<name>"
//!   denied the request: <message>` (code 400 unless the webhook set one of 400 or more);
//!   a call that fails (refused connection, TLS, timeout, an answer that is not an
//!   `AdmissionReview` of the request's uid) is a `500` `Internal error occurred: failed
//!   calling webhook "<name>": ...` under `failurePolicy: Fail` (the default) and ignored
//!   under `Ignore`. A dry run only calls webhooks whose `sideEffects` are `None` or
//!   `NoneOnDryRun`; another is `400` `admission webhook "<name>" does not support dry
//!   run`.
//! - **`matchConditions`** are CEL expressions over `object`, `oldObject`, `request` and
//!   `authorizer` (see `cel_rules` and `cel_library::authz`): a webhook is not called
//!   when one is false; when none is false and some fail to evaluate, the request is
//!   refused (`403`, `expression '<e>' resulted in error: ...`) under `failurePolicy:
//!   Fail` and the webhook skipped under `Ignore`.
//! - Configurations are defaulted and checked when written: see `admission_config`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::cel_library::authz;
use crate::rbac::UserInfo;
use crate::resources::ResourceInfo;
use crate::selectors::{labels, selector_matches};
use crate::server::Shared;
use crate::status::{ApiError, ApiResult, details};
use crate::store::Store;
use crate::webhook_client::Endpoint;

/// The group of webhook configurations and policies.
const GROUP: &str = "admissionregistration.k8s.io";

/// What a request does, as admission names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE` (updates and patches).
    Update,
    /// `DELETE`.
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
        }
    }
}

/// One request, as admission sees it.
#[derive(Debug, Clone)]
pub(crate) struct Attributes {
    /// The resource.
    pub(crate) info: ResourceInfo,
    /// The version requested.
    pub(crate) version: String,
    /// `status`, `scale` or empty.
    pub(crate) subresource: String,
    /// The namespace (empty for cluster-scoped objects; a Namespace's own name for a
    /// Namespace).
    pub(crate) namespace: String,
    /// The object's name (empty for a create by `generateName`).
    pub(crate) name: String,
    /// What the request does.
    pub(crate) operation: Operation,
    /// Who asks.
    pub(crate) user: UserInfo,
    /// `dryRun=All`.
    pub(crate) dry_run: bool,
    /// The request's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    pub(crate) options: Value,
}

impl Attributes {
    /// The kind of the objects sent: a `Scale` for the scale subresource.
    fn kind(&self) -> Value {
        if self.subresource == "scale" {
            return json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
        }
        json!({"group": self.info.group, "version": self.version, "kind": self.info.kind})
    }

    fn resource(&self) -> Value {
        json!({"group": self.info.group, "version": self.version, "resource": self.info.plural})
    }

    /// The `AdmissionReview` of this request with `uid`.
    pub(crate) fn review(&self, uid: &str, object: Option<&Value>, old: Option<&Value>) -> Value {
        let mut request = json!({
            "uid": uid,
            "kind": self.kind(),
            "resource": self.resource(),
            "requestKind": self.kind(),
            "requestResource": self.resource(),
            "operation": self.operation.as_str(),
            "userInfo": {"username": self.user.name, "groups": self.user.groups},
            "object": object,
            "oldObject": old,
            "dryRun": self.dry_run,
            "options": self.options,
        });
        let fields = request.as_object_mut().expect("a JSON object literal");
        for (key, value) in [
            ("subResource", &self.subresource),
            ("requestSubResource", &self.subresource),
            ("name", &self.name),
            ("namespace", &self.namespace),
        ] {
            if !value.is_empty() {
                fields.insert(key.into(), json!(value));
            }
        }
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
    }
}

/// A webhook of a configuration that matches a request, ready to call.
#[derive(Debug, Clone)]
struct Hook {
    /// Its `name`.
    name: String,
    /// Where it is called, or why it cannot be.
    endpoint: Result<Endpoint, String>,
    timeout: Duration,
    /// `failurePolicy: Ignore`.
    ignore_failures: bool,
    /// `sideEffects` of `None` or `NoneOnDryRun`.
    dry_run_safe: bool,
    /// `reinvocationPolicy: IfNeeded`.
    reinvoke: bool,
    /// Its `matchConditions`: names and CEL expressions.
    conditions: Vec<(String, String)>,
    /// The `authorizer` variables of its `matchConditions`: the request's.
    authorizer: authz::Variables,
}

/// The webhooks of the configurations of `plural` that match the request.
fn matching(
    store: &Store,
    plural: &str,
    attrs: &Attributes,
    (object, old): (Option<&Value>, Option<&Value>),
    authorizer: &authz::Variables,
) -> Vec<Hook> {
    if attrs.info.group == GROUP {
        return Vec::new();
    }
    let Some(info) = store.lookup(GROUP, "v1", plural) else {
        return Vec::new();
    };
    let Ok((_, configs)) = store.snapshot(&info, None, None) else {
        return Vec::new();
    };
    let scope = Scope::new(store, attrs, (object, old));
    let mut hooks = Vec::new();
    for config in &configs {
        for webhook in config["webhooks"].as_array().into_iter().flatten() {
            if scope.selects(webhook, Some("rules")) {
                hooks.push(hook(store, webhook, authorizer.clone()));
            }
        }
    }
    hooks
}

/// What a request is matched on: its attributes, its namespace's labels, its objects.
pub(crate) struct Scope<'a> {
    attrs: &'a Attributes,
    namespace_labels: Option<BTreeMap<String, String>>,
    object: Option<&'a Value>,
    old: Option<&'a Value>,
}

impl<'a> Scope<'a> {
    /// The scope of a request on `store`.
    pub(crate) fn new(
        store: &Store,
        attrs: &'a Attributes,
        (object, old): (Option<&'a Value>, Option<&'a Value>),
    ) -> Self {
        Self {
            namespace_labels: namespace_labels(store, attrs, object.or(old)),
            attrs,
            object,
            old,
        }
    }

    /// Whether `entry` (a webhook, a policy's `matchConstraints`, a binding's
    /// `matchResources`) selects the request: one of its rules under `rules` matches
    /// (any request when `rules` is `None`) and none under `excludeResourceRules` does,
    /// its `namespaceSelector` matches the namespace's labels and its `objectSelector`
    /// the object's or the old object's.
    pub(crate) fn selects(&self, entry: &Value, rules: Option<&str>) -> bool {
        let selected = |key: &str, labels: Option<&BTreeMap<String, String>>| {
            let selector = &entry[key];
            selector.is_null() || labels.is_none_or(|l| selector_matches(selector, l))
        };
        let by_object = [self.object, self.old]
            .into_iter()
            .flatten()
            .any(|o| selected("objectSelector", Some(&labels(o))))
            || (self.object.is_none() && self.old.is_none());
        let any_of = |key: &str| {
            entry[key]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| rule_matches(r, self.attrs))
        };
        rules.is_none_or(any_of)
            && !any_of("excludeResourceRules")
            && selected("namespaceSelector", self.namespace_labels.as_ref())
            && by_object
    }
}

/// The labels a `namespaceSelector` is matched against: the namespace's, a Namespace's
/// own, or `None` (every selector matches) for other cluster-scoped objects.
fn namespace_labels(
    store: &Store,
    attrs: &Attributes,
    object: Option<&Value>,
) -> Option<BTreeMap<String, String>> {
    if attrs.info.builtin && attrs.info.group.is_empty() && attrs.info.plural == "namespaces" {
        return Some(object.map(labels).unwrap_or_default());
    }
    if !attrs.info.namespaced {
        return None;
    }
    let namespaces = store.lookup("", "v1", "namespaces")?;
    let namespace = store.get(&namespaces, "", &attrs.namespace).ok();
    Some(namespace.map(|n| labels(&n)).unwrap_or_default())
}

/// Whether one of a webhook's `rules` matches the request.
fn rule_matches(rule: &Value, attrs: &Attributes) -> bool {
    let has = |key: &str, want: &str| {
        rule[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|v| v == "*" || v == want)
    };
    let resource = rule["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r, ""));
            (res == "*" || res == attrs.info.plural) && (sub == "*" || sub == attrs.subresource)
        });
    let is_namespace = attrs.info.group.is_empty() && attrs.info.plural == "namespaces";
    let scope = match rule["scope"].as_str() {
        Some("Namespaced") => !is_namespace && attrs.info.namespaced,
        Some("Cluster") => is_namespace || !attrs.info.namespaced,
        _ => true,
    };
    let names = rule["resourceNames"].as_array().filter(|n| !n.is_empty());
    let named = names.is_none_or(|n| n.iter().any(|v| v.as_str() == Some(attrs.name.as_str())));
    has("operations", attrs.operation.as_str())
        && named
        && has("apiGroups", &attrs.info.group)
        && has("apiVersions", &attrs.version)
        && resource
        && scope
}

/// A matching webhook, its endpoint resolved.
fn hook(store: &Store, webhook: &Value, authorizer: authz::Variables) -> Hook {
    let text = |key: &str| webhook[key].as_str().unwrap_or_default();
    let timeout = Duration::from_secs(webhook["timeoutSeconds"].as_u64().unwrap_or(10));
    let client = &webhook["clientConfig"];
    let ca_bundle = client["caBundle"]
        .as_str()
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .unwrap_or_default();
    let endpoint = match (client["url"].as_str(), client.get("service")) {
        (Some(url), _) => Endpoint::from_url(url, ca_bundle, timeout),
        (None, Some(service)) => service_endpoint(store, service, ca_bundle, timeout),
        (None, None) => Err("neither clientConfig.url nor clientConfig.service is set".into()),
    };
    Hook {
        name: text("name").to_string(),
        endpoint,
        timeout,
        ignore_failures: text("failurePolicy") == "Ignore",
        dry_run_safe: matches!(text("sideEffects"), "None" | "NoneOnDryRun"),
        reinvoke: text("reinvocationPolicy") == "IfNeeded",
        conditions: webhook["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let text = |key: &str| c[key].as_str().unwrap_or_default().to_string();
                (text("name"), text("expression"))
            })
            .collect(),
        authorizer,
    }
}

/// A `clientConfig.service`, at its Service's cluster IP.
fn service_endpoint(
    store: &Store,
    service: &Value,
    ca_bundle: Vec<u8>,
    timeout: Duration,
) -> Result<Endpoint, String> {
    let text = |key: &str| service[key].as_str().unwrap_or_default();
    let (namespace, name) = (text("namespace"), text("name"));
    let services = store
        .lookup("", "v1", "services")
        .ok_or("services are not served")?;
    let svc = store
        .get(&services, namespace, name)
        .map_err(|_| format!("service \"{name}\" not found"))?;
    let ip = svc["spec"]["clusterIP"].as_str().unwrap_or_default();
    if ip.is_empty() || ip == "None" {
        return Err(format!("service \"{namespace}/{name}\" has no cluster IP"));
    }
    let port = service["port"].as_u64().unwrap_or(443);
    let port = u16::try_from(port).map_err(|_| format!("invalid service port {port}"))?;
    let target = (namespace, name);
    Ok(Endpoint::for_service(
        target,
        ip,
        (port, text("path")),
        ca_bundle,
        timeout,
    ))
}

/// Runs the mutating webhooks that match on `object` (`None` on a delete) and returns it
/// as they left it.
pub(crate) async fn mutate(
    shared: &Arc<Shared>,
    attrs: &Attributes,
    mut object: Option<Value>,
    old: Option<&Value>,
) -> ApiResult<Option<Value>> {
    let (bound, namespace, hooks, authorizer) = configured_for(
        shared,
        attrs,
        (object.as_ref(), old),
        crate::mutating_policies::MUTATING,
        "mutatingwebhookconfigurations",
    );
    let policies = (&namespace, &authorizer);
    // MutatingAdmissionPolicies first, as the real server's plugins are ordered.
    object = crate::mutating_policies::mutate(&bound, false, attrs, object, old, policies)?;
    let before_webhooks = object.clone();
    let mut changed = Vec::with_capacity(hooks.len());
    for hook in &hooks {
        let before = object.clone();
        object = call_mutating(hook, attrs, object, old).await?;
        changed.push(object != before);
    }
    let asked: Vec<bool> = hooks.iter().map(|h| h.reinvoke).collect();
    for (hook, _) in hooks
        .iter()
        .zip(reinvoked(&asked, &changed))
        .filter(|(_, again)| *again)
    {
        object = call_mutating(hook, attrs, object, old).await?;
    }
    if object != before_webhooks {
        object = crate::mutating_policies::mutate(&bound, true, attrs, object, old, policies)?;
    }
    Ok(object)
}

/// Which webhooks are called again (reinvocation): those that ask for it
/// (`reinvocationPolicy: IfNeeded`) and ran before a later webhook changed the object.
fn reinvoked(asked: &[bool], changed: &[bool]) -> Vec<bool> {
    let last_change = changed.iter().rposition(|c| *c);
    asked
        .iter()
        .enumerate()
        .map(|(i, asked)| *asked && last_change.is_some_and(|last| i < last))
        .collect()
}

/// One mutating webhook's call, its patch applied.
async fn call_mutating(
    hook: &Hook,
    attrs: &Attributes,
    object: Option<Value>,
    old: Option<&Value>,
) -> ApiResult<Option<Value>> {
    let Some(response) = call(hook, attrs, object.as_ref(), old).await? else {
        return Ok(object);
    };
    let Some(patch) = response["patch"].as_str() else {
        return Ok(object);
    };
    let internal = |why: String| ApiError::internal_error(&why);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .map_err(|e| internal(format!("illegal base64 data in response.patch: {e}")))?;
    let patch: json_patch::Patch =
        serde_json::from_slice(&bytes).map_err(|e| internal(e.to_string()))?;
    if patch.0.is_empty() {
        return Ok(object);
    }
    let Some(mut patched) = object else {
        return Err(internal(format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
            hook.name
        )));
    };
    json_patch::patch(&mut patched, &patch).map_err(|e| internal(e.to_string()))?;
    Ok(Some(patched))
}

/// Runs the ValidatingAdmissionPolicies bound to the request (see `policies`), then the
/// validating webhooks that match, at once; a refusal without a call (see `review_for`)
/// first, else the first refusal in their order is the answer. Returns the policies'
/// warnings.
pub(crate) async fn validate(
    shared: &Arc<Shared>,
    attrs: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
) -> ApiResult<Vec<String>> {
    // What the policies and webhooks need is read under the store's lock; CEL runs and
    // webhooks are called without it.
    let (bound, namespace, hooks, authorizer) = configured_for(
        shared,
        attrs,
        (object, old),
        crate::policies::VALIDATING,
        "validatingwebhookconfigurations",
    );
    let warnings = crate::policies::validate(bound, attrs, object, old, namespace, &authorizer)?;
    // What refuses without a call comes first, as it does on the real server, where
    // the first answer of the webhooks running at once is the one given.
    let mut reviews = Vec::new();
    for hook in &hooks {
        if let Some(review) = review_for(hook, attrs, object, old)? {
            reviews.push((hook, review));
        }
    }
    let calls = reviews.iter().map(|(hook, (uid, review))| async move {
        let response = send(hook, uid, review).await?;
        if response.as_ref().is_some_and(|r| r.get("patch").is_some_and(|p| !p.is_null())) {
            let why = "received invalid webhook response: validating webhook may not return response.patch";
            return call_failed(hook, why).map_or(Ok(()), Err);
        }
        Ok(())
    });
    for result in futures_util::future::join_all(calls).await {
        result?;
    }
    Ok(warnings)
}

/// What admits the request, read under the store's lock: the policy bindings of `kinds`
/// that select it, the request's Namespace for their `namespaceObject` (null without
/// any), the webhooks of the configurations of `plural` that match, and the `authorizer`
/// variables of their CEL.
fn configured_for(
    shared: &Arc<Shared>,
    attrs: &Attributes,
    objects: (Option<&Value>, Option<&Value>),
    kinds: (&str, &str),
    plural: &str,
) -> (
    Vec<crate::policies::Bound>,
    Value,
    Vec<Hook>,
    authz::Variables,
) {
    let authorizer = authorizer_of(shared, attrs);
    let store = shared.store.lock();
    let bound = crate::policies::bound(&store, attrs, objects, kinds);
    let namespace = match bound.is_empty() {
        true => Value::Null,
        false => crate::policies::namespace_object(&store, attrs),
    };
    let hooks = matching(&store, plural, attrs, objects, &authorizer);
    (bound, namespace, hooks, authorizer)
}

/// The `authorizer` variables of the request's CEL: its user's, asked of the fake's
/// authorizer (see `cel_library::authz`).
fn authorizer_of(shared: &Arc<Shared>, attrs: &Attributes) -> authz::Variables {
    let request = crate::rbac::Attributes {
        group: attrs.info.group.clone(),
        resource: attrs.info.plural.clone(),
        subresource: attrs.subresource.clone(),
        namespace: attrs.namespace.clone(),
        name: attrs.name.clone(),
        ..Default::default()
    };
    authz::variables(shared.clone(), &attrs.user, &request)
}

/// Whether any webhook configuration or policy binding is stored (a request without any
/// needs no admission round).
pub(crate) fn configured(store: &Store) -> bool {
    [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
        "validatingadmissionpolicybindings",
        "mutatingadmissionpolicybindings",
    ]
    .into_iter()
    .any(|plural| store.holds_any(GROUP, plural))
}

/// The review to send `hook` (its uid and body), or `None` when its `matchConditions`
/// skip it; what refuses the request without calling it (a condition that fails, a dry
/// run it does not support) is the error.
fn review_for(
    hook: &Hook,
    attrs: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
) -> ApiResult<Option<(String, Value)>> {
    let uid = crate::store::new_uid();
    let review = attrs.review(&uid, object, old);
    if !conditions_match(hook, attrs, &review["request"])? {
        return Ok(None);
    }
    if attrs.dry_run && !hook.dry_run_safe {
        return Err(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        )));
    }
    Ok(Some((uid, review)))
}

/// Calls `hook` (unless its `matchConditions` skip it) and returns its `response` if it
/// allowed the request, `None` if skipped or its failure is ignored; a refusal or a
/// failure that is not is the error.
async fn call(
    hook: &Hook,
    attrs: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
) -> ApiResult<Option<Value>> {
    match review_for(hook, attrs, object, old)? {
        Some((uid, review)) => send(hook, &uid, &review).await,
        None => Ok(None),
    }
}

/// Sends `review` (of `uid`) to `hook`: see [`call`].
async fn send(hook: &Hook, uid: &str, review: &Value) -> ApiResult<Option<Value>> {
    let answer = match &hook.endpoint {
        Ok(endpoint) => {
            let body = serde_json::to_vec(&review).unwrap_or_default();
            endpoint
                .post(body, hook.timeout)
                .await
                .map_err(|e| format!("failed to call webhook: {e}"))
        }
        Err(why) => Err(format!("failed to call webhook: {why}")),
    };
    let response = answer
        .and_then(|(code, content_type, body)| response_of((code, &content_type, &body), uid));
    let response = match response {
        Ok(r) => r,
        Err(why) => return call_failed(hook, &why).map_or(Ok(None), Err),
    };
    if response["allowed"].as_bool() == Some(true) {
        return Ok(Some(response));
    }
    Err(denied(&hook.name, &response["status"]))
}

/// Whether `hook` is to be called for `request` (an `AdmissionRequest`), as its
/// `matchConditions` decide: not when one is false; when none is false but some fail to
/// evaluate, the request is refused under `failurePolicy: Fail` (a `403` naming the
/// expressions and their errors) and the webhook skipped under `Ignore`.
fn conditions_match(hook: &Hook, attrs: &Attributes, request: &Value) -> ApiResult<bool> {
    let null = Value::Null;
    let variables = [
        ("object", request.get("object").unwrap_or(&null)),
        ("oldObject", request.get("oldObject").unwrap_or(&null)),
        ("request", request),
    ];
    let mut errors = Vec::new();
    for (_, expression) in &hook.conditions {
        match crate::cel_rules::evaluate_with(expression, &variables, &hook.authorizer) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(why) => errors.push(format!(
                "expression '{expression}' resulted in error: {why}"
            )),
        }
    }
    if errors.is_empty() || hook.ignore_failures {
        return Ok(errors.is_empty());
    }
    let why = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let message = format!(
        "{} {:?} is forbidden: {why}",
        attrs.info.qualified(),
        attrs.name
    );
    Err(ApiError::new(403, "Forbidden", message).with_details(details(&attrs.info, &attrs.name)))
}

/// A failed call as `failurePolicy` has it: `None` when ignored.
fn call_failed(hook: &Hook, why: &str) -> Option<ApiError> {
    if hook.ignore_failures {
        tracing::warn!(
            "kubekit-fake: failed calling webhook {:?}, ignored: {why}",
            hook.name
        );
        return None;
    }
    Some(ApiError::internal_error(&format!(
        "failed calling webhook {:?}: {why}",
        hook.name
    )))
}

/// The `response` of a webhook's answer (its HTTP status, content type and body),
/// checked as kube-apiserver checks it; a failure in client-go's words.
fn response_of((code, content_type, body): (u16, &str, &[u8]), uid: &str) -> Result<Value, String> {
    let failed = |why: String| format!("failed to call webhook: {why}");
    let text = String::from_utf8_lossy(body);
    if !(200..300).contains(&code) {
        let status: Option<Value> = serde_json::from_slice(body).ok();
        let message = status
            .as_ref()
            .filter(|s| s["kind"] == "Status")
            .and_then(|s| s["message"].as_str());
        return Err(failed(match (message, code) {
            (Some(message), _) => message.to_string(),
            (None, 404) => "the server could not find the requested resource".into(),
            (None, 403) => text.trim().to_string(),
            (None, 500..) => format!(
                "an error on the server ({:?}) has prevented the request from succeeding",
                text.trim()
            ),
            (None, _) => format!(
                "the server responded with the status code {code} but did not return more information"
            ),
        }));
    }
    if body.is_empty() {
        return Err(failed(format!(
            "0-length response with status code: {code} and content type: {content_type}"
        )));
    }
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| failed(format!("couldn't get version/kind; json parse error: {e}")))?;
    let invalid = |why: String| format!("received invalid webhook response: {why}");
    let (version, kind) = (review["apiVersion"].as_str(), review["kind"].as_str());
    if version != Some("admission.k8s.io/v1") || kind != Some("AdmissionReview") {
        return Err(invalid(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}, Kind={}",
            version.unwrap_or_default(),
            kind.unwrap_or_default()
        )));
    }
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or_else(|| invalid("webhook response was absent".into()))?;
    let got = response["uid"].as_str().unwrap_or_default();
    if got != uid {
        return Err(invalid(format!(
            "expected response.uid={uid:?}, got {got:?}"
        )));
    }
    if response.get("patch").is_some_and(|p| !p.is_null()) {
        match response["patchType"].as_str() {
            Some("JSONPatch") => {}
            None => {
                return Err(invalid(
                    "webhook returned response.patch but not response.patchType".into(),
                ));
            }
            Some(other) => {
                return Err(invalid(format!(
                    "webhook returned invalid response.patchType of {other:?}"
                )));
            }
        }
    }
    Ok(response.clone())
}

/// A webhook's refusal: its `Status`, with kube-apiserver's message and a code of at
/// least 400 (400 unless it gave one).
fn denied(name: &str, status: &Value) -> ApiError {
    let text = |key: &str| status[key].as_str().unwrap_or_default().to_string();
    let by = format!("admission webhook {name:?} denied the request");
    let (message, reason) = (text("message"), text("reason"));
    let message = match (message.is_empty(), reason.is_empty()) {
        (false, _) => format!("{by}: {message}"),
        (true, false) => format!("{by}: {reason}"),
        (true, true) => format!("{by} without explanation"),
    };
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let mut error = ApiError::new(code, &reason, message);
    error.details = status.get("details").filter(|d| !d.is_null()).cloned();
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(plural: &str, namespaced: bool, subresource: &str, op: Operation) -> Attributes {
        let info = ResourceInfo {
            plural: plural.into(),
            namespaced,
            builtin: true,
            ..crate::resources::builtin()[0].clone()
        };
        Attributes {
            info: ResourceInfo {
                group: String::new(),
                ..info
            },
            version: "v1".into(),
            subresource: subresource.into(),
            namespace: if namespaced {
                "ns".into()
            } else {
                String::new()
            },
            name: "x".into(),
            operation: op,
            user: UserInfo::admin(),
            dry_run: false,
            options: Value::Null,
        }
    }

    fn rule(resources: &[&str], scope: Option<&str>) -> Value {
        json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": resources, "scope": scope})
    }

    #[test]
    fn a_resource_rule_matches_its_subresources_only_when_it_names_them() {
        let pod = attrs("pods", true, "", Operation::Create);
        let status = attrs("pods", true, "status", Operation::Update);
        assert!(rule_matches(&rule(&["*"], None), &pod));
        assert!(!rule_matches(&rule(&["*"], None), &status));
        assert!(!rule_matches(&rule(&["pods"], None), &status));
        assert!(rule_matches(&rule(&["pods/*"], None), &status));
        assert!(rule_matches(&rule(&["*/status"], None), &status));
        assert!(rule_matches(&rule(&["*/*"], None), &status));
        // `*` as a subresource is also none: the main resource.
        assert!(rule_matches(&rule(&["pods/*"], None), &pod));
        assert!(!rule_matches(&rule(&["services"], None), &pod));
    }

    #[test]
    fn operations_groups_and_versions_must_match() {
        let delete = attrs("pods", true, "", Operation::Delete);
        assert!(!rule_matches(&rule(&["pods"], None), &delete));
        let any = json!({"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["pods"]});
        assert!(rule_matches(&any, &delete));
        let apps = json!({"apiGroups": ["apps"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]});
        assert!(!rule_matches(&apps, &delete));
    }

    #[test]
    fn a_namespace_is_cluster_scoped_for_rules() {
        let ns = attrs("namespaces", false, "", Operation::Create);
        let pod = attrs("pods", true, "", Operation::Create);
        let node = attrs("nodes", false, "", Operation::Create);
        assert!(rule_matches(&rule(&["*"], Some("Cluster")), &ns));
        assert!(!rule_matches(&rule(&["*"], Some("Namespaced")), &ns));
        assert!(rule_matches(&rule(&["*"], Some("Namespaced")), &pod));
        assert!(!rule_matches(&rule(&["*"], Some("Cluster")), &pod));
        assert!(rule_matches(&rule(&["*"], Some("Cluster")), &node));
        assert!(rule_matches(&rule(&["*"], Some("*")), &pod));
    }

    #[test]
    fn webhooks_are_reinvoked_when_a_later_one_changed_the_object() {
        // The first asks to be reinvoked, the second changes the object.
        assert_eq!(reinvoked(&[true, false], &[false, true]), [true, false]);
        // A change by the webhook itself or before it is no reason.
        assert_eq!(reinvoked(&[false, true], &[true, true]), [false, false]);
        assert_eq!(
            reinvoked(&[true, true, true], &[true, false, false]),
            [false, false, false]
        );
        // Only those that ask.
        assert_eq!(
            reinvoked(&[false, true, false], &[false, false, true]),
            [false, true, false]
        );
    }

    #[test]
    fn a_refusal_is_a_bad_request_unless_the_webhook_gives_a_code_of_400_or_more() {
        let e = denied("v.example.com", &json!({"code": 200, "message": "no"}));
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "admission webhook \"v.example.com\" denied the request: no"
            )
        );
        let e = denied("v.example.com", &json!({"code": 422, "reason": "Invalid"}));
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                "admission webhook \"v.example.com\" denied the request: Invalid"
            )
        );
        let e = denied("v.example.com", &Value::Null);
        assert_eq!(
            e.message,
            "admission webhook \"v.example.com\" denied the request without explanation"
        );
    }

    #[test]
    fn an_answer_for_another_request_or_with_an_untyped_patch_is_invalid() {
        let review = |response: Value| {
            serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})).unwrap()
        };
        let ok = |body: &[u8]| response_of((200, "application/json", body), "a");
        let other = ok(&review(json!({"uid": "b", "allowed": true})));
        assert_eq!(
            other.unwrap_err(),
            "received invalid webhook response: expected response.uid=\"a\", got \"b\""
        );
        let untyped = ok(&review(
            json!({"uid": "a", "allowed": true, "patch": "W10="}),
        ));
        assert!(
            untyped
                .unwrap_err()
                .contains("response.patch but not response.patchType")
        );
        let fine = ok(&review(json!({"uid": "a", "allowed": true})));
        assert_eq!(fine.unwrap()["allowed"], true);
        assert_eq!(
            response_of((500, "text/plain", b"boom"), "a").unwrap_err(),
            "failed to call webhook: an error on the server (\"boom\") has prevented the request from succeeding"
        );
        assert_eq!(
            ok(b"").unwrap_err(),
            "failed to call webhook: 0-length response with status code: 200 and content type: application/json"
        );
    }
}
