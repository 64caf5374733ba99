//! The HTTP side: routes kube-apiserver's paths to the store, discovery and health.
//!
//! # Contract
//!
//! - Paths: `/api/v1/...` and `/apis/<group>/<version>/...` for resources
//!   (`[namespaces/<ns>/]<resource>[/<name>[/status|/scale]]`), `/api`, `/apis`, `/api/v1` and
//!   `/apis/<group>/<version>` (discovery: see `discovery`), `/openapi/v3[/...]` (see
//!   `openapi`), `/version`, `/healthz`, `/livez`, `/readyz`. Anything else is
//!   `404 NotFound`. A verb a resource does not have (deletecollection of namespaces) is
//!   `405 MethodNotAllowed`.
//! - Patches: JSON patch, JSON merge patch, strategic merge patch of built-in types (see
//!   `smp`), server-side apply (see `managed`; not of the scale subresource); anything else
//!   is `415 UnsupportedMediaType`. Every write records its manager's fields in
//!   managedFields (see `managed`).
//! - Bodies are JSON or YAML, at most [`MAX_BODY_BYTES`]; a create or update of a
//!   built-in kind may also send protobuf (`application/vnd.kubernetes.protobuf`, as
//!   kubectl and client-go's typed clients do), read through `kubekit_protobuf::json_codec`.
//!   A body that is not an object is `400 BadRequest`; protobuf of a kind without a
//!   protobuf form (a custom resource) is `415`. Answers are protobuf when the client asks
//!   for protobuf first and the answer (object, list, `Status`) has a protobuf form. `dryRun=All` runs a write on a copy of the
//!   store, dropped after: the answer is as if written, nothing is stored or watched.
//! - Options are checked as the real server checks them, with its `422` naming
//!   `ListOptions`, `DeleteOptions` or `PatchOptions`: `resourceVersionMatch` and
//!   `sendInitialEvents` of lists and watches, `propagationPolicy`, `orphanDependents`
//!   and `dryRun` of deletes (a body of another kind than `DeleteOptions` is `400`), `force`
//!   on a patch that is no apply, a `fieldManager` of more than 128 bytes. A negative
//!   `limit` is none; a list at resourceVersion "0" is not paged (the watch cache's).
//! - A namespaced resource without a namespace serves lists and watches only: a built-in
//!   one answers other collection verbs `405` and a named path `404`; a custom resource
//!   `404 page not found`, as an unknown group does. A custom resource's status or scale
//!   refuses `POST` and `DELETE` with `405`, and an unknown subresource is its object's
//!   `404`.
//! - Bodies of objects may be JSON, YAML or protobuf (else `415`); an `Accept` header
//!   naming none of them is `406`; a body over [`MAX_BODY_BYTES`] is `413`. An update
//!   must name its object; its `metadata.uid`, when set, is a precondition (`409`). An
//!   update of a missing Lease, LeaseCandidate, Event, Service, Endpoints, LimitRange,
//!   RuntimeClass or RBAC role or binding creates it (`201`), as on the real server.
//! - Every error is a `metav1.Status`. No client input panics the server.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admission::{self, Operation};
use crate::crd_schema::{self, FieldValidation};
use crate::defaults;
use crate::discovery;
use crate::events;
use crate::faults::Faults;
use crate::managed;
use crate::openapi;
use crate::rbac::{self, UserInfo};
use crate::resources::ResourceInfo;
use crate::scale;
use crate::selectors::Filter;
use crate::smp;
use crate::status::{ApiError, ApiResult, details, shown};
use crate::store::{self, DeleteRequest, Deleted, Prepared, Store};
use crate::tables;
use crate::watch::{WatchRequest, start_watch};

/// The largest request body accepted (the real server's limit is 3 MiB per object).
pub const MAX_BODY_BYTES: usize = 3 << 20;

/// A response body: whole, or streamed (a watch).
pub type Body = BoxBody<Bytes, Infallible>;

/// State shared by every connection and watch of one server.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) store: Mutex<Store>,
    /// The store's resourceVersion, sent after every write (watches wait on it).
    pub(crate) changed: watch::Sender<u64>,
    pub(crate) faults: Faults,
    pub(crate) cancel: CancellationToken,
    pub(crate) tasks: TaskTracker,
    pub(crate) address: String,
    /// Whether requests are authenticated and authorized (see `rbac`).
    pub(crate) rbac: bool,
    /// The bearer tokens handed out.
    pub(crate) tokens: rbac::Tokens,
    /// The impersonation mode that last worked for each requester.
    pub(crate) last_modes: rbac::LastModes,
}

/// The authorizer of admission's CEL (`authorizer.check(...)`): RBAC's decision when the
/// fake authorizes requests, else every request is allowed.
impl crate::cel_library::authz::Authorize for Shared {
    fn authorize(&self, user: &rbac::UserInfo, attrs: &rbac::Attributes) -> rbac::Decision {
        match self.rbac {
            true => rbac::authorize(&self.store.lock(), user, attrs),
            false => rbac::Decision::Allowed(String::new()),
        }
    }
}

impl Shared {
    /// Runs `f` on the store under its lock and tells watches if it wrote.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&mut Store) -> T) -> T {
        let (out, rv) = {
            let mut store = self.store.lock();
            let out = f(&mut store);
            (out, store.resource_version())
        };
        self.changed.send_if_modified(|current| {
            let modified = *current != rv;
            *current = rv;
            modified
        });
        out
    }

    /// [`write`](Self::write), or for a dry run on a copy of the store, dropped after
    /// (nothing is stored, no watch hears of it).
    pub(crate) fn write_for<T>(&self, dry_run: bool, f: impl FnOnce(&mut Store) -> T) -> T {
        if dry_run {
            let mut copy = self.store.lock().clone();
            return f(&mut copy);
        }
        self.write(f)
    }
}

/// A JSON response.
pub(crate) fn json_response(code: u16, value: &Value) -> Response<Body> {
    response(code, value.to_string().into(), "application/json")
}

/// A response of `body`, of `content_type`.
fn response(code: u16, body: Bytes, content_type: &'static str) -> Response<Body> {
    let mut res = Response::new(Full::new(body).boxed());
    *res.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

fn error_response(e: &ApiError) -> Response<Body> {
    json_response(e.code, &e.to_status())
}

fn text_response(body: &'static str) -> Response<Body> {
    let mut res = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

/// Serves one request.
pub(crate) async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // Authenticated, then authorized before anything else is looked at, as kube-apiserver's
    // filters do: a request refused is refused whether or not its resource exists.
    let (user, asked) = if shared.rbac {
        let query: Vec<(String, String)> = req
            .uri()
            .query()
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        let asked = rbac::Attributes::of_request(req.method(), req.uri().path(), &segments, &query);
        let store = shared.store.lock();
        let user = rbac::authenticate(
            &store,
            (&shared.tokens, &shared.last_modes),
            req.headers(),
            &asked,
        )
        .and_then(|user| rbac::check(&store, &user, &asked).map(|()| user));
        match user {
            Ok(user) => (user, asked),
            Err(e) => return error_response(&e),
        }
    } else {
        (UserInfo::admin(), rbac::Attributes::default())
    };
    let result = match segments.as_slice() {
        ["healthz"] | ["livez"] | ["readyz"] => return text_response("ok"),
        ["version"] => Ok(version()),
        ["openapi", "v3"] => Ok(openapi::index(&shared.store.lock())),
        ["openapi", "v3", rest @ ..] => openapi::document(&shared.store.lock(), &rest.join("/")),
        [root @ ("api" | "apis")] if discovery::wants_aggregated(req.headers()) => {
            let doc = discovery::aggregated(&shared.store.lock(), *root == "api");
            let mut res = json_response(200, &doc);
            res.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(discovery::AGGREGATED_CONTENT_TYPE),
            );
            return res;
        }
        ["api"] => Ok(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": shared.address}],
        })),
        ["apis"] => Ok(discovery::group_list(&shared.store.lock())),
        ["api", "v1"] => discovery::resource_list(&shared.store.lock(), "", "v1"),
        // A group not served has no handler at all: the mux's `404 page not found`.
        ["apis", group, ..] if !discovery::serves_group(&shared.store.lock(), group) => {
            Err(ApiError::new(404, "NotFound", "404 page not found"))
        }
        ["apis", group] => {
            discovery::group(&shared.store.lock(), group).ok_or_else(ApiError::no_route)
        }
        ["apis", group, version] => discovery::resource_list(&shared.store.lock(), group, version),
        ["api", "v1", rest @ ..] => {
            return serve_resource(&shared, req, (user, asked), "", "v1", rest).await;
        }
        ["apis", group, version, rest @ ..] => {
            let (group, version) = (group.to_string(), version.to_string());
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
            return serve_resource(&shared, req, (user, asked), &group, &version, &rest).await;
        }
        _ => Err(ApiError::no_route()),
    };
    match result {
        Ok(v) => json_response(200, &v),
        Err(e) => error_response(&e),
    }
}

/// The pinned release's `/version`, with the fake's own build fields.
fn version() -> Value {
    let mut doc = crate::resources::version_document().clone();
    if let Some(fields) = doc.as_object_mut() {
        for (k, v) in [
            ("gitCommit", String::new()),
            ("gitTreeState", String::new()),
            ("buildDate", String::new()),
            ("goVersion", String::new()),
            ("compiler", "rustc".into()),
            (
                "platform",
                format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
            ),
        ] {
            fields.insert(k.into(), Value::String(v));
        }
    }
    doc
}

/// One request to a resource, parsed.
struct Target {
    info: ResourceInfo,
    version: String,
    ns: String,
    name: Option<String>,
    status: bool,
    /// The `scale` subresource (see `scale`).
    scale: bool,
    /// A Namespace's `finalize` subresource (see `finalize`).
    finalize: bool,
    /// A CertificateSigningRequest's `approval` subresource: a write of its status (so
    /// `status` too) that changes only its conditions (see `cluster_kinds::approve`).
    approval: bool,
    /// `dryRun=All`: answer as if written, write nothing.
    dry_run: bool,
    query: HashMap<String, String>,
    /// Who writes: `fieldManager`, else the client's user agent up to its first `/` (as
    /// the real server names the manager of an update).
    manager: String,
    /// The warnings of the answer (unknown fields of a custom resource).
    warnings: Mutex<Vec<String>>,
    /// Whether the client asks for a `Table` (see `tables`).
    table: bool,
    /// Whether the client asks for metadata only (`as=PartialObjectMetadata[List]`): the
    /// answer's objects are `meta.k8s.io/v1` `PartialObjectMetadata`s.
    metadata: bool,
    /// Whether the client asks for protobuf first (answered in protobuf where the kind has
    /// a protobuf form).
    protobuf: bool,
    /// Who asks (the admin without RBAC).
    user: UserInfo,
    /// What the request asks, as RBAC sees it (with RBAC only).
    asked: rbac::Attributes,
}

impl Target {
    /// RBAC's checks on a write of `new` (over `old`) as a Role, ClusterRole or binding
    /// (see `rbac::check_write`); nothing for other kinds, or without RBAC.
    fn check_rbac_write(
        &self,
        shared: &Shared,
        store: &Store,
        new: &Value,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        if !shared.rbac || self.info.group != "rbac.authorization.k8s.io" {
            return Ok(());
        }
        let name = new
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let what = (self.info.plural.as_str(), self.ns.as_str(), name);
        rbac::check_write(store, &self.user, what, new, old)
    }

    /// The request as admission sees it, for `operation`.
    fn attributes_of(&self, operation: Operation) -> admission::Attributes {
        let is_namespace =
            self.info.builtin && self.info.group.is_empty() && self.info.plural == "namespaces";
        admission::Attributes {
            info: self.info.clone(),
            version: self.version.clone(),
            subresource: match (self.status, self.scale) {
                _ if self.approval => "approval".into(),
                (true, _) => "status".into(),
                (_, true) => "scale".into(),
                _ => String::new(),
            },
            namespace: match is_namespace {
                true => self.name.clone().unwrap_or_default(),
                false => self.ns.clone(),
            },
            name: self.name.clone().unwrap_or_default(),
            operation,
            user: self.user.clone(),
            dry_run: self.dry_run,
            options: Value::Null,
        }
    }

    /// The admission attributes of a drafted create or update, with its options.
    fn attributes(&self, draft: &Draft) -> admission::Attributes {
        let (operation, options) = match draft.old {
            None => (Operation::Create, "CreateOptions"),
            Some(_) => (Operation::Update, "UpdateOptions"),
        };
        let mut attrs = self.attributes_of(operation);
        if operation == Operation::Create {
            attrs.name = object_name(&draft.object).to_string();
            if self.info.builtin && self.info.group.is_empty() && self.info.plural == "namespaces" {
                attrs.namespace = attrs.name.clone();
            }
        }
        let mut opts = json!({"kind": options, "apiVersion": "meta.k8s.io/v1"});
        if self.dry_run {
            opts["dryRun"] = json!(["All"]);
        }
        if let Some(m) = self.param("fieldManager").filter(|m| !m.is_empty()) {
            opts["fieldManager"] = json!(m);
        }
        attrs.options = opts;
        attrs
    }

    fn param(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    /// `obj` without the fields its type does not declare (a custom resource's schema, see
    /// `crd_schema::prune`; a built-in type's, see `managed::drop_unknown`); their warnings
    /// go with the answer.
    fn pruned(&self, mut obj: Value) -> ApiResult<Value> {
        let mode = FieldValidation::parse(self.param("fieldValidation"));
        let warnings = match &self.info.validation {
            Some(schema) => crd_schema::prune(&self.info, &self.version, schema, &mut obj, mode)?,
            None if self.info.builtin => {
                let mut unknown = Vec::new();
                managed::drop_unknown(&mut obj, &managed::type_of(&self.info), "", &mut unknown);
                crd_schema::report_unknown(&self.info, &self.version, unknown, mode)?
            }
            None => Vec::new(),
        };
        self.warnings.lock().extend(warnings);
        Ok(obj)
    }

    /// The request's write, for managedFields.
    fn write(&self) -> managed::Write<'_> {
        managed::Write::new(
            &self.info,
            &self.version,
            &self.manager,
            self.status,
            store::now(),
        )
    }

    /// `obj` (as stored) as admission webhooks see it: its `Scale` for the scale
    /// subresource, else as [`present`](Self::present)ed.
    fn shown(&self, obj: &Value) -> Value {
        match (&self.info.scale, self.scale) {
            (Some(paths), true) => scale::of(paths, obj),
            _ => self.present(obj),
        }
    }

    /// `obj` (as stored) as served at the requested version.
    fn present(&self, obj: &Value) -> Value {
        let mut v = events::shown(&self.info, obj);
        v["apiVersion"] = json!(self.info.api_version(&self.version));
        v["kind"] = json!(self.info.kind);
        v
    }
}

fn parse_target(
    store: &Store,
    group: &str,
    version: &str,
    rest: &[&str],
    query: HashMap<String, String>,
) -> ApiResult<Target> {
    let lookup = |plural: &str| store.lookup(group, version, plural);
    let (ns, rest) = match rest {
        ["namespaces", ns, resource, tail @ ..]
            if lookup(resource).is_some_and(|i| i.namespaced) =>
        {
            (
                ns.to_string(),
                std::iter::once(*resource)
                    .chain(tail.iter().copied())
                    .collect::<Vec<_>>(),
            )
        }
        _ => (String::new(), rest.to_vec()),
    };
    let (info, name, sub) = match rest.as_slice() {
        [resource] => (lookup(resource), None, None),
        [resource, name] => (lookup(resource), Some(*name), None),
        [resource, name, sub] => (lookup(resource), Some(*name), Some(*sub)),
        _ => (None, None, None),
    };
    let info = info.ok_or_else(ApiError::no_route)?;
    let is_namespaces = info.builtin && info.group.is_empty() && info.plural == "namespaces";
    let is_csrs = info.builtin && info.plural == "certificatesigningrequests";
    let (status, scale, finalize) = match sub {
        None => (false, false, false),
        Some("status") if info.status => (true, false, false),
        Some("approval") if is_csrs => (true, false, false),
        Some("scale") if info.scale.is_some() => (false, true, false),
        Some("finalize") if is_namespaces => (false, false, true),
        // A custom resource's handler answers an unknown subresource as a missing object.
        Some(_) if !info.builtin => {
            return Err(ApiError::not_found(&info, name.unwrap_or_default()));
        }
        Some(_) => return Err(ApiError::no_route()),
    };
    if !info.namespaced && !ns.is_empty() {
        return Err(ApiError::no_route());
    }
    Ok(Target {
        info,
        version: version.to_string(),
        ns,
        name: name.map(str::to_string),
        status,
        scale,
        finalize,
        approval: sub == Some("approval"),
        dry_run: query.get("dryRun").is_some_and(|d| d == "All"),
        query,
        manager: String::new(),
        warnings: Mutex::new(Vec::new()),
        table: false,
        metadata: false,
        protobuf: false,
        user: UserInfo::admin(),
        asked: rbac::Attributes::default(),
    })
}

/// The Kubernetes verb of a request.
fn verb_of(method: &Method, named: bool, watch: bool) -> Option<&'static str> {
    Some(match (method.as_str(), named) {
        ("GET", true) => "get",
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return None,
    })
}

async fn serve_resource(
    shared: &Arc<Shared>,
    req: Request<Incoming>,
    access: (UserInfo, rbac::Attributes),
    group: &str,
    version: &str,
    rest: &[&str],
) -> Response<Body> {
    let query: HashMap<String, String> = req
        .uri()
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let mut target = match parse_target(&shared.store.lock(), group, version, rest, query) {
        Ok(t) => t,
        Err(e) => return error_response(&e),
    };
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok());
    if let Some(accept) = accept
        && !acceptable(accept)
    {
        let mut e = ApiError::new(
            406,
            "NotAcceptable",
            format!("406: Not Acceptable\n\nAvailable representations: {BODY_MEDIA_TYPES}"),
        );
        e.details = Some(json!({}));
        return error_response(&e);
    }
    target.table = accept.is_some_and(tables::wanted);
    if target.table
        && let Some(include) = target
            .param("includeObject")
            .filter(|i| !matches!(*i, "" | "None" | "Metadata" | "Object"))
    {
        return error_response(&ApiError::bad_request(format!(
            "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
            kubekit::validation::quote(include)
        )));
    }
    target.metadata = accept.is_some_and(metadata_wanted);
    target.protobuf = accept.is_some_and(|a| {
        let first = a.split(',').next().unwrap_or_default();
        first.split(';').next().unwrap_or_default().trim() == kubekit_protobuf::CONTENT_TYPE
    });
    let user_agent = req.headers().get(header::USER_AGENT);
    target.manager = match target.param("fieldManager").filter(|m| !m.is_empty()) {
        Some(m) => m.to_string(),
        None => user_agent
            .and_then(|v| v.to_str().ok())
            .and_then(|ua| ua.split('/').next())
            .unwrap_or_default()
            .to_string(),
    };
    let watch = matches!(target.param("watch"), Some("true" | "1"));
    let not_allowed = || {
        let mut e = ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        );
        e.details = Some(json!({}));
        error_response(&e)
    };
    // A subresource is read, updated and patched only: a custom resource's handler names
    // the verb refused.
    if (target.status || target.scale)
        && !matches!(req.method().as_str(), "GET" | "PUT" | "PATCH")
        && !target.info.builtin
    {
        let verb = match req.method().as_str() {
            "POST" => "create",
            "DELETE" => "delete",
            other => other,
        };
        let message = format!(
            "{verb} is not supported on resources of kind \"{}\"",
            target.info.qualified()
        );
        let mut e = ApiError::new(405, "MethodNotAllowed", message);
        e.details = Some(json!({"group": target.info.group, "kind": target.info.plural}));
        return error_response(&e);
    }
    let Some(verb) = verb_of(req.method(), target.name.is_some(), watch) else {
        return not_allowed();
    };
    // A namespaced resource without a namespace is served for lists and watches only: a
    // built-in one refuses other collection verbs with 405 and has no named path; a
    // custom resource has neither (its handler answers `404 page not found`).
    if target.info.namespaced && target.ns.is_empty() && !matches!(verb, "list" | "watch") {
        if !target.info.builtin {
            return error_response(&ApiError::new(404, "NotFound", "404 page not found"));
        }
        return match target.name {
            Some(_) => error_response(&ApiError::no_route()),
            None => not_allowed(),
        };
    }
    let allowed = if target.scale {
        discovery::SUBRESOURCE_VERBS.contains(&verb)
    } else if target.finalize {
        verb == "update"
    } else {
        target.info.verbs.iter().any(|v| v == verb)
    };
    if !allowed {
        return not_allowed();
    }
    (target.user, target.asked) = access;
    if let Some(e) = unsupported_dry_run(&target, verb) {
        return error_response(&e);
    }
    let (delay, failure) = shared.faults.take(verb, &target.info.plural);
    if !delay.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shared.cancel.cancelled() => return error_response(&ApiError::new(503, "ServiceUnavailable", "the server is shutting down")),
        }
    }
    if let Some(e) = failure {
        return error_response(&e);
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let body = match Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return error_response(&ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: limit is {MAX_BODY_BYTES}"),
            ));
        }
    };
    if matches!(verb, "watch" | "list" | "deletecollection")
        && let Err(e) = check_list_options(&target, verb == "watch")
    {
        return answer(&target, &e.to_status(), e.code);
    }
    if verb == "watch" {
        return match WatchRequest::new(&target.info, &target.version, &target.ns, &target.query) {
            Ok(w) => start_watch(
                shared,
                w.metadata(target.metadata).protobuf(target.protobuf),
            ),
            Err(e) => answer(&target, &e.to_status(), e.code),
        };
    }
    let result = match verb {
        _ if target.scale => scale(shared, &target, verb, &content_type, &body).await,
        _ if target.finalize => finalize(shared, &target, &content_type, &body).await,
        "get" => get(shared, &target),
        "list" => list(shared, &target),
        "create" => match object_body(&target, &content_type, &body) {
            Ok(obj) => create(shared, &target, obj).await,
            Err(e) => Err(e),
        },
        "update" => match object_body(&target, &content_type, &body) {
            Ok(obj) => update(shared, &target, obj).await,
            Err(e) => Err(e),
        },
        "patch" => patch(shared, &target, &content_type, &body).await,
        "delete" => delete(shared, &target, &body).await,
        _ => delete_collection(shared, &target, &body).await,
    };
    let mut res = match result {
        Ok((code, v)) => answer(&target, &v, code),
        Err(e) => answer(&target, &e.to_status(), e.code),
    };
    for w in target.warnings.lock().iter() {
        let quoted = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{quoted}\"")) {
            res.headers_mut().append(header::WARNING, v);
        }
    }
    res
}

/// `v` as the request asks for it: in protobuf when the client asks for protobuf first
/// and `v` (an object, a list of objects or a `Status`) has a protobuf form, else JSON.
fn answer(t: &Target, v: &Value, code: u16) -> Response<Body> {
    let partial;
    let v = match t.metadata {
        true => {
            partial = metadata_of(&t.info, v);
            &partial
        }
        false => v,
    };
    match t.protobuf.then(|| protobuf_of(v)).flatten() {
        Some(bytes) => response(code, bytes.into(), kubekit_protobuf::CONTENT_TYPE),
        None => json_response(code, v),
    }
}

/// The group and version of `PartialObjectMetadata`.
const METADATA_API_VERSION: &str = "meta.k8s.io/v1";

/// Whether an `Accept` header asks for metadata only first
/// (`...;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`, JSON or protobuf).
/// Whether an `Accept` header names a media type the server answers in (JSON, YAML,
/// protobuf, or any).
fn acceptable(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let base = media.split(';').next().unwrap_or_default().trim();
        matches!(
            base,
            "" | "*/*"
                | "application/*"
                | "application/json"
                | "application/yaml"
                | "application/vnd.kubernetes.protobuf"
                | "application/json;stream=watch"
        )
    })
}

fn metadata_wanted(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| {
        let params: Vec<&str> = first.split(';').map(str::trim).collect();
        ["as=PartialObjectMetadata", "as=PartialObjectMetadataList"]
            .iter()
            .any(|p| params.contains(p))
            && params.contains(&"g=meta.k8s.io")
            && params.contains(&"v=v1")
    })
}

/// `v` with its objects of `info`'s kind reduced to their metadata: an object as a
/// `PartialObjectMetadata`, a list as a `PartialObjectMetadataList`; anything else (a
/// `Status`) as it is.
pub(crate) fn metadata_of(info: &ResourceInfo, v: &Value) -> Value {
    let partial = |o: &Value| {
        json!({"kind": "PartialObjectMetadata", "apiVersion": METADATA_API_VERSION,
            "metadata": o["metadata"]})
    };
    match v["kind"].as_str() {
        Some(k) if k == info.kind => partial(v),
        Some(k) if k.strip_suffix("List") == Some(info.kind.as_str()) => {
            let items: Vec<Value> = v["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(partial)
                .collect();
            // A typed ListMeta, which leaves out what is empty (a custom resource's
            // unstructured list keeps an empty `continue`).
            let mut metadata = v["metadata"].clone();
            if let Some(m) = metadata.as_object_mut() {
                m.retain(|_, v| !v.is_null() && v != "");
            }
            json!({"kind": "PartialObjectMetadataList", "apiVersion": METADATA_API_VERSION,
                "metadata": metadata, "items": items})
        }
        _ => v.clone(),
    }
}

/// The protobuf form of `v` (an object, a list of objects or a `Status`), if its kind has
/// one.
pub(crate) fn protobuf_of(v: &Value) -> Option<Vec<u8>> {
    let (api_version, kind) = (v["apiVersion"].as_str()?, v["kind"].as_str()?);
    match (api_version, kind) {
        (METADATA_API_VERSION, "PartialObjectMetadata") => {
            return kubekit_protobuf::metadata_only(api_version, kind, &v["metadata"]).ok();
        }
        (METADATA_API_VERSION, "PartialObjectMetadataList") => {
            return kubekit_protobuf::metadata_only_list(api_version, kind, v).ok();
        }
        _ => {}
    }
    if let Some(item_kind) = kind.strip_suffix("List")
        && v.get("items").is_some()
    {
        let codec = kubekit_protobuf::json_codec(api_version, item_kind)?;
        return codec.list_from_json(v).ok();
    }
    kubekit_protobuf::json_codec(api_version, kind)?
        .from_json(v)
        .ok()
}

/// The request body as a JSON value; `{}` when empty.
fn json_body(body: &[u8]) -> ApiResult<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}

/// A protobuf request body (`k8s\0` and a `runtime.Unknown`) as the JSON object it encodes;
/// a kind without a protobuf form (a custom resource) is `415`, as on the real server.
fn protobuf_body(body: &[u8]) -> ApiResult<Value> {
    let invalid = |e: kubekit_protobuf::Error| {
        ApiError::bad_request(format!(
            "the request body is not a valid protobuf object: {e}"
        ))
    };
    let unknown = kubekit_protobuf::Unknown::read(body).map_err(invalid)?;
    let codec = kubekit_protobuf::json_codec(&unknown.api_version, &unknown.kind)
        .ok_or_else(|| ApiError::unsupported_media_type(&["application/json"]))?;
    codec.to_json(unknown.raw).map_err(invalid)
}

/// The request body of a create or update, which must be an object: JSON, or protobuf of a
/// built-in kind (what kubectl and client-go's typed clients send).
/// The media types a body of an object may have (YAML read as JSON is).
const BODY_MEDIA_TYPES: &str =
    "application/json, application/yaml, application/vnd.kubernetes.protobuf";

fn object_body(t: &Target, content_type: &str, body: &[u8]) -> ApiResult<Value> {
    let v = if content_type == kubekit_protobuf::CONTENT_TYPE {
        protobuf_body(body)?
    } else if !matches!(content_type, "application/json" | "application/yaml" | "") {
        let mut e = ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {BODY_MEDIA_TYPES}"
            ),
        );
        e.details = None;
        return Err(e);
    } else if content_type == "application/yaml" {
        serde_yaml::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?
    } else if body.is_empty() {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)",
            t.info.kind
        )));
    } else if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(body).map_err(|e| {
            // Go's words for a body cut short; other syntax errors in serde's.
            let why = if e.is_eof() {
                "unexpected end of JSON input".to_string()
            } else {
                e.to_string()
            };
            let text = String::from_utf8_lossy(body);
            let shown: String = text.chars().take(120).collect();
            ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {why} ({shown})",
                t.info.kind
            ))
        })?
    };
    if v.is_object() {
        Ok(v)
    } else {
        Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ))
    }
}

type Answer = ApiResult<(u16, Value)>;

fn name(t: &Target) -> &str {
    t.name.as_deref().unwrap_or("")
}

fn get(shared: &Shared, t: &Target) -> Answer {
    let obj = shared.store.lock().get(&t.info, &t.ns, name(t))?;
    let obj = t.present(&obj);
    if t.table {
        let metadata = json!({"resourceVersion": obj["metadata"]["resourceVersion"]});
        return Ok((200, table(shared, t, &[obj], metadata)));
    }
    Ok((200, obj))
}

/// `objects` as the `Table` the request asks for.
fn table(shared: &Shared, t: &Target, objects: &[Value], metadata: Value) -> Value {
    let crd = (!t.info.builtin).then(|| {
        let store = shared.store.lock();
        let crds = store.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")?;
        store.get(&crds, "", &t.info.qualified()).ok()
    });
    let crd = crd.flatten();
    tables::table(
        &t.info,
        crd.as_deref(),
        objects,
        metadata,
        t.param("includeObject"),
    )
}

/// A continue token: the list's resourceVersion and the key the next page starts after,
/// in JSON encoded as the real server encodes its tokens (URL-safe base64, no padding).
fn encode_continue(rv: u64, ns: &str, name: &str) -> String {
    use base64::Engine;
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": [ns, name]});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

/// A continue token read back; one that is not a token gets the real server's `400`, with
/// its reason where Go's decoders give one the fake can tell (a byte outside URL-safe
/// base64, JSON that does not start or is cut short).
fn decode_continue(token: &str) -> ApiResult<(u64, String, String)> {
    use base64::Engine;
    let invalid = |why: &str| {
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(": {why}")
        };
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid{why}"
        ))
    };
    let url_safe = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    if let Some(at) = token.bytes().position(|c| !url_safe(c)) {
        return Err(invalid(&format!("illegal base64 data at input byte {at}")));
    }
    // As lenient as Go's decoder: the unused bits of the last byte may be set.
    let go = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::general_purpose::NO_PAD.with_decode_allow_trailing_bits(true),
    );
    let bytes = go.decode(token).map_err(|_| {
        invalid(&format!(
            "illegal base64 data at input byte {}",
            token.len() / 4 * 4
        ))
    })?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
        let first = bytes.iter().copied().find(|c| !c.is_ascii_whitespace());
        let starts = |c: u8| b"{[\"-0123456789tfn".contains(&c);
        match first {
            _ if e.is_eof() => invalid("unexpected end of JSON input"),
            Some(c) if !starts(c) => {
                // As Go's `strconv.Quote` shows the byte, read as a rune.
                let shown = match c {
                    0..0x20 | 0x7f => format!("\\x{c:02x}"),
                    0x80..0xa0 => format!("\\u{c:04x}"),
                    _ => char::from(c).to_string(),
                };
                invalid(&format!(
                    "invalid character '{shown}' looking for beginning of value"
                ))
            }
            _ => invalid(""),
        }
    })?;
    let bad = || invalid("");
    let rv = v["rv"].as_u64().ok_or_else(bad)?;
    let ns = v["start"][0].as_str().ok_or_else(bad)?;
    let name = v["start"][1].as_str().ok_or_else(bad)?;
    Ok((rv, ns.to_string(), name.to_string()))
}

fn parse_rv(s: &str) -> ApiResult<u64> {
    s.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {}", bad_rv(s))))
}

/// The real server's reason for a resourceVersion that is not a number.
pub(crate) fn bad_rv(rv: &str) -> String {
    format!(
        "resourceVersion: Invalid value: {}: strconv.ParseUint: parsing {}: invalid syntax",
        kubekit::validation::quote(rv),
        kubekit::validation::quote(rv)
    )
}

/// Refuses list options as apimachinery's `ValidateListOptions` does, with every fault:
/// for a list, a `resourceVersionMatch` without a `resourceVersion`, with a `continue`, of
/// an unknown value or `Exact` at `0`, and any `sendInitialEvents`; for a watch,
/// `sendInitialEvents` without `resourceVersionMatch=NotOlderThan`, and a
/// `resourceVersionMatch` without `sendInitialEvents`, other than `NotOlderThan` or with a
/// `continue`.
fn check_list_options(t: &Target, watch: bool) -> ApiResult<()> {
    let forbidden = |why: &str| {
        let detail = format!("Forbidden: {why}");
        ("resourceVersionMatch", "FieldValueForbidden", detail)
    };
    let unsupported = |matched: &str, supported: &str| {
        let detail = format!(
            "Unsupported value: {}: supported values: {supported}",
            kubekit::validation::quote(matched)
        );
        ("resourceVersionMatch", "FieldValueNotSupported", detail)
    };
    let matched = t.param("resourceVersionMatch").filter(|m| !m.is_empty());
    let has = |key: &str| t.param(key).is_some_and(|v| !v.is_empty());
    let initial_events = t.param("sendInitialEvents").is_some();
    let mut faults = Vec::new();
    if watch {
        if initial_events && matched != Some("NotOlderThan") {
            faults.push(forbidden(
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(m) = matched {
            if !initial_events {
                faults.push(forbidden(
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                faults.push(unsupported(m, "\"NotOlderThan\""));
            }
            if has("continue") {
                faults.push(forbidden(
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if let Some(m) = matched {
            if !has("resourceVersion") {
                faults.push(forbidden(
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if has("continue") {
                faults.push(forbidden(
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if m != "Exact" && m != "NotOlderThan" {
                faults.push(unsupported(m, "\"Exact\", \"NotOlderThan\", \"\""));
            }
            if m == "Exact" && t.param("resourceVersion") == Some("0") {
                faults.push(forbidden(
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if initial_events {
            let detail = "Forbidden: sendInitialEvents is forbidden for list".to_string();
            faults.push(("sendInitialEvents", "FieldValueForbidden", detail));
        }
    }
    options_invalid(t, "ListOptions", &faults)
}

/// `422 Invalid` of a request's `options` (`ListOptions`, `DeleteOptions`) with `faults`,
/// as the real server names them; `Ok` without faults.
fn options_invalid(t: &Target, options: &str, faults: &[(&str, &str, String)]) -> ApiResult<()> {
    if faults.is_empty() {
        return Ok(());
    }
    let info = ResourceInfo {
        kind: options.into(),
        group: "meta.k8s.io".into(),
        ..t.info.clone()
    };
    Err(ApiError::invalid_fields(&info, "", faults))
}

fn list(shared: &Shared, t: &Target) -> Answer {
    let filter = Filter::parse(&t.info, t.param("labelSelector"), t.param("fieldSelector"))?;
    // A negative limit is none, as on the real server.
    let mut limit: usize = match t.param("limit") {
        Some(l) => l.parse::<i64>().map_err(|_| {
            let l = kubekit::validation::quote(l);
            ApiError::bad_request(format!("strconv.ParseInt: parsing {l}: invalid syntax"))
        })?,
        None => 0,
    }
    .try_into()
    .unwrap_or(0);
    // A list at resourceVersion "0" is served whole by the watch cache, which does not
    // page (from a `continue`'s position, when given).
    if t.param("resourceVersion") == Some("0") && t.param("resourceVersionMatch").is_none() {
        limit = 0;
    }
    let (at, after) = match t.param("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let (rv, ns, name) = decode_continue(token)?;
            (Some(rv), Some((ns, name)))
        }
        None => {
            let rv = t.param("resourceVersion").filter(|rv| !rv.is_empty());
            let exact = match (rv, t.param("resourceVersionMatch")) {
                (Some(rv), Some("Exact")) => Some(parse_rv(rv)?),
                (Some(rv), None) if rv != "0" && limit > 0 => Some(parse_rv(rv)?),
                (Some(rv), _) if rv != "0" => {
                    let current = shared.store.lock().resource_version();
                    let wanted = parse_rv(rv)?;
                    if wanted > current {
                        return Err(too_large(wanted, current));
                    }
                    None
                }
                _ => None,
            };
            (exact, None)
        }
    };
    let ns = (!t.ns.is_empty()).then_some(t.ns.as_str());
    let (rv, objects) = {
        let store = shared.store.lock();
        if let Some(at) = at
            && at > store.resource_version()
        {
            // An exact list is refused by the storage, which says so as a timeout.
            let mut e = too_large(at, store.resource_version());
            if t.param("resourceVersionMatch") == Some("Exact") {
                e.message = format!("Timeout: {}", e.message);
            }
            return Err(e);
        }
        store.snapshot(&t.info, ns, at)?
    };
    let mut selected = objects.iter().filter(|o| filter.matches(o)).filter(|o| {
        after.as_ref().is_none_or(|(ns, name)| {
            let meta = &o["metadata"];
            (
                meta["namespace"].as_str().unwrap_or(""),
                meta["name"].as_str().unwrap_or(""),
            ) > (ns.as_str(), name.as_str())
        })
    });
    let take = if limit == 0 { usize::MAX } else { limit };
    let items: Vec<Value> = if t.table {
        selected.by_ref().take(take).map(|o| t.present(o)).collect()
    } else {
        selected.by_ref().take(take).map(|o| item(t, o)).collect()
    };
    let remaining = selected.count();
    let mut metadata = list_metadata(t, rv);
    if remaining > 0
        && let Some(last) = items.last()
    {
        let meta = &last["metadata"];
        metadata["continue"] = json!(encode_continue(
            rv,
            meta["namespace"].as_str().unwrap_or(""),
            meta["name"].as_str().unwrap_or("")
        ));
        if filter.is_everything() {
            metadata["remainingItemCount"] = json!(remaining);
        }
    }
    if t.table {
        return Ok((200, table(shared, t, &items, metadata)));
    }
    Ok((200, list_object(t, metadata, items)))
}

/// A list's metadata at resourceVersion `rv`.
fn list_metadata(t: &Target, rv: u64) -> Value {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if !t.info.builtin {
        // Unstructured lists always carry `continue`.
        metadata["continue"] = json!("");
    }
    metadata
}

fn too_large(wanted: u64, current: u64) -> ApiError {
    let mut e = ApiError::new(
        504,
        "Timeout",
        format!("Too large resource version: {wanted}, current: {current}"),
    );
    e.details = Some(json!({
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }));
    e
}

/// A list item: built-in lists are typed (items without `kind`/`apiVersion`), custom
/// resource lists are not.
fn item(t: &Target, obj: &Value) -> Value {
    if t.info.builtin {
        let mut v = events::shown(&t.info, obj);
        if let Some(m) = v.as_object_mut() {
            m.remove("apiVersion");
            m.remove("kind");
        }
        v
    } else {
        t.present(obj)
    }
}

fn list_object(t: &Target, metadata: Value, items: Vec<Value>) -> Value {
    json!({
        "kind": format!("{}List", t.info.kind),
        "apiVersion": t.info.api_version(&t.version),
        "metadata": metadata,
        "items": items,
    })
}

/// Checks that a body's `metadata.namespace`, if any, is the request's.
fn check_namespace(t: &Target, obj: &Value) -> ApiResult<()> {
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) if t.info.namespaced && !ns.is_empty() && ns != t.ns => {
            Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ))
        }
        _ => Ok(()),
    }
}

/// Checks that a body's `apiVersion` and `kind`, when set, are the URL's, and its shape
/// (see [`check_shape`]). A built-in kind at another `apiVersion` gets the real server's
/// decoding error (which names its scheme as `pkg/runtime/scheme.go:111`).
fn check_kind(t: &Target, obj: &Value) -> ApiResult<()> {
    let expected = t.info.api_version(&t.version);
    let kind = &t.info.kind;
    match (obj["apiVersion"].as_str(), obj["kind"].as_str()) {
        (Some(version), _) if !version.is_empty() && version != expected && t.info.builtin => {
            let sent = obj["kind"].as_str().unwrap_or(kind);
            Err(undecodable_as(
                t,
                (sent, version.rsplit('/').next().unwrap_or(version)),
                &format!(
                    "no kind \"{sent}\" is registered for version \"{version}\" in scheme \"pkg/runtime/scheme.go:111\""
                ),
            ))
        }
        (_, Some(sent)) if !sent.is_empty() && sent != t.info.kind && t.info.builtin => {
            // Go's scheme decodes the kind sent, then finds no conversion to the URL's
            // (into its internal package: `core` for the core group).
            let internal = match t.info.group.as_str() {
                "" => "core",
                group => group.split('.').next().unwrap_or(group),
            };
            Err(undecodable_as(
                t,
                (sent, &t.version),
                &format!(
                    "converting ({}.{sent}) to ({internal}.{kind}): unknown conversion",
                    t.version
                ),
            ))
        }
        (Some(version), _) if !version.is_empty() && version != expected => {
            Err(ApiError::bad_request(format!(
                "the API version in the data ({version}) does not match the expected API version ({expected})"
            )))
        }
        (_, Some(kind)) if kind != t.info.kind => Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            t.info.kind
        ))),
        _ => check_shape(t, obj),
    }
}

/// The real server's `400` for a body it cannot decode as `t`'s built-in kind.
fn undecodable(t: &Target, why: &str) -> ApiError {
    undecodable_as(t, (&t.info.kind, &t.version), why)
}

/// [`undecodable`] of a body of kind `sent` at `version`.
fn undecodable_as(t: &Target, (sent, version): (&str, &str), why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{sent} in version \"{version}\" cannot be handled as a {}: {why}",
        t.info.kind
    ))
}

/// The JSON type of `v` as Go's decoder names it in an unmarshalling error.
fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

/// Checks the maps of strings of a built-in body (labels, annotations, a ConfigMap's
/// data) as Go's JSON decoder does, with its message.
fn check_shape(t: &Target, obj: &Value) -> ApiResult<()> {
    if !t.info.builtin {
        return Ok(());
    }
    let mut maps = vec![
        ("/metadata/labels", "ObjectMeta.metadata.labels"),
        ("/metadata/annotations", "ObjectMeta.metadata.annotations"),
    ];
    if t.info.group.is_empty() && t.info.kind == "ConfigMap" {
        maps.push(("/data", "ConfigMap.data"));
    }
    if t.info.group.is_empty() && t.info.kind == "Secret" {
        let data = obj["data"].as_object().into_iter().flatten();
        for value in data.filter_map(|(_, v)| v.as_str()) {
            if let Some(at) = crate::formats::go_base64_error(value.as_bytes()) {
                return Err(undecodable(
                    t,
                    &format!("illegal base64 data at input byte {at}"),
                ));
            }
        }
    }
    for (pointer, field) in maps {
        let cannot = |found: &Value, of: &str| {
            undecodable(
                t,
                &format!(
                    "json: cannot unmarshal {} into Go struct field {field} of type {of}",
                    go_json_type(found)
                ),
            )
        };
        match obj.pointer(pointer) {
            None | Some(Value::Null) => {}
            Some(Value::Object(entries)) => {
                if let Some(bad) = entries.values().find(|v| !v.is_string() && !v.is_null()) {
                    return Err(cannot(bad, "string"));
                }
            }
            Some(other) => return Err(cannot(other, "map[string]string")),
        }
    }
    Ok(())
}

async fn create(shared: &Arc<Shared>, t: &Target, obj: Value) -> Answer {
    if t.info.namespaced && t.ns.is_empty() {
        return Err(ApiError::no_route());
    }
    check_kind(t, &obj)?;
    if t.info.review {
        return Ok((201, review(shared, t, obj)?));
    }
    check_namespace(t, &obj)?;
    let obj = t.pruned(obj)?;
    let (_, created) = admitted_write(shared, t, |s| {
        t.check_rbac_write(shared, s, &obj, None)?;
        Ok(Draft {
            object: obj.clone(),
            old: None,
            track: true,
        })
    })
    .await?;
    Ok((201, created_answer(t, &created)))
}

/// A write about to be admitted: the object it would create, or put in place of `old`.
struct Draft {
    object: Value,
    /// The stored object it replaces; `None` for a create.
    old: Option<Arc<Value>>,
    /// Whether the store records the write in managedFields (`false`: server-side apply
    /// recorded it in `object`).
    track: bool,
}

/// How often a write is done again when its object changed while its webhooks were called.
const ADMISSION_ATTEMPTS: usize = 5;

/// Stores the write `make` drafts from the store, as the real server's create and
/// `GuaranteedUpdate` do: with admission webhooks configured (see `admission`), the
/// mutating webhooks change the draft, the store checks and defaults it (`prepare_*`), the
/// validating webhooks see what would be stored, and it is stored unless the object
/// changed meanwhile — then all is done again from a new draft. Without webhooks or
/// policies, all of it under one lock. Returns whether it created, and what was stored (or, in a dry run,
/// would have been).
async fn admitted_write(
    shared: &Arc<Shared>,
    t: &Target,
    make: impl Fn(&Store) -> ApiResult<Draft>,
) -> ApiResult<(bool, Arc<Value>)> {
    let write = t.write();
    let prepare = |store: &Store, draft: &Draft, object: Value| match draft.old {
        None => store.prepare_create(&t.info, &t.ns, object, draft.track.then_some(&write)),
        Some(_) => {
            // The real server keeps no managedFields through `approval` (see `approve`).
            let track = (draft.track && !t.approval).then_some(&write);
            store.prepare_update(&t.info, &t.ns, name(t), object, t.status, track)
        }
    };
    // A write of the scale subresource drafts a `Scale`, which webhooks see and change;
    // the store is given the object with it applied.
    let stored_from = |sent: Value, old: Option<&Value>| match (&t.info.scale, t.scale, old) {
        (Some(paths), true, Some(old)) => scale::apply(&t.info, paths, old.clone(), &sent),
        (_, _, Some(old)) if t.approval => {
            crate::cluster_kinds::approve(&t.info, name(t), old, &sent)
        }
        _ => Ok(sent),
    };
    let commit = |store: &mut Store, prepared: Prepared| match prepared.previous {
        None => store.commit_create(prepared).map(Some),
        Some(_) => Ok(store.commit_update(prepared)),
    };
    if !admission::configured(&shared.store.lock()) {
        // Drafted, checked and stored under one lock: nothing changes meanwhile.
        return shared.write_for(t.dry_run, |s| {
            let draft = make(s)?;
            let object = stored_from(draft.object.clone(), draft.old.as_deref())?;
            let prepared = prepare(s, &draft, object)?;
            warn_of_finalizers(t, &prepared.object, draft.old.as_deref());
            let stored = commit(s, prepared)?;
            let stored = stored.ok_or_else(|| ApiError::conflict_retries(&t.info, name(t)))?;
            Ok((draft.old.is_none(), stored))
        });
    }
    // Whether the object a draft replaces changed since it was drafted.
    let moved = |store: &Store, draft: &Draft| {
        draft.old.as_ref().is_some_and(|old| {
            store
                .get(&t.info, &t.ns, name(t))
                .is_ok_and(|now| !Arc::ptr_eq(&now, old))
        })
    };
    for _ in 0..ADMISSION_ATTEMPTS {
        let draft = {
            let store = shared.store.lock();
            let draft = make(&store)?;
            if draft.old.is_none() {
                store.namespace_admits(&t.info, &t.ns, object_name(&draft.object))?;
            }
            draft
        };
        let attrs = t.attributes(&draft);
        let old = draft.old.as_ref().map(|o| t.shown(o));
        let mut sent = draft.object.clone();
        if !t.status && !t.scale {
            defaults::apply(&t.info, &mut sent, draft.old.as_deref());
            crd_schema::fill_defaults(&t.info, &mut sent);
        }
        let mutated = admission::mutate(shared, &attrs, Some(sent.clone()), old.as_ref())
            .await?
            .unwrap_or_else(|| sent.clone());
        let prepared = {
            let store = shared.store.lock();
            let stored_old = draft.old.as_deref();
            let prepared = prepare(&store, &draft, stored_from(mutated.clone(), stored_old)?);
            // A conflict with a write made while the webhooks were called: again.
            let mut prepared = match prepared {
                Err(e) if e.code == 409 && moved(&store, &draft) => continue,
                prepared => prepared?,
            };
            // What webhooks added is owned by no manager: the fields are recorded from the
            // object as it was before them, as the real server records them.
            if mutated != sent
                && draft.track
                && let Ok(unmutated) = stored_from(sent, stored_old)
                && let Ok(unmutated) = prepare(&store, &draft, unmutated)
            {
                let fields = unmutated.object["metadata"]["managedFields"].clone();
                prepared.object["metadata"]["managedFields"] = fields;
            }
            prepared
        };
        let shown = t.shown(&prepared.object);
        // Validating webhooks see the name a `generateName` gave.
        let attrs = admission::Attributes {
            name: object_name(&shown).to_string(),
            ..attrs
        };
        let warnings = admission::validate(shared, &attrs, Some(&shown), old.as_ref()).await?;
        t.warnings.lock().extend(warnings);
        let created = prepared.previous.is_none();
        warn_of_finalizers(t, &prepared.object, draft.old.as_deref());
        if let Some(stored) = shared.write_for(t.dry_run, |s| commit(s, prepared))? {
            return Ok((created, stored));
        }
    }
    Err(ApiError::conflict_retries(&t.info, name(t)))
}

/// Warns of the finalizers a write of a custom resource adds without a domain, as the
/// real server's custom resource strategy does (see `object_meta::finalizer_warnings`).
fn warn_of_finalizers(t: &Target, new: &Value, old: Option<&Value>) {
    if !t.info.builtin && !t.status && !t.scale {
        let warnings = crate::object_meta::finalizer_warnings(new, old);
        t.warnings.lock().extend(warnings);
    }
}

/// `metadata.name` of `obj`, or empty.
fn object_name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The answer to a create: the object, without a resourceVersion in a dry run (it was
/// never stored).
fn created_answer(t: &Target, created: &Value) -> Value {
    let mut answer = t.present(created);
    if t.dry_run
        && let Some(meta) = answer["metadata"].as_object_mut()
    {
        meta.remove("resourceVersion");
    }
    answer
}

/// The answer to a review, for the requester (the admin without RBAC, who may do
/// everything): a `SelfSubjectReview` says who they are, a `SelfSubjectRulesReview` what
/// RBAC grants them, the access reviews whether RBAC allows what they ask (for the
/// requester, or the `user` and `groups` a `SubjectAccessReview` names). Never stored, an
/// access review still records its manager's fields, as on the real server.
fn review(shared: &Shared, t: &Target, mut obj: Value) -> ApiResult<Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    let store = shared.store.lock();
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_string();
    match t.info.kind.as_str() {
        "SelfSubjectReview" => {
            let who = json!({"username": t.user.name, "groups": t.user.groups});
            let now = crate::store::now();
            let answer =
                json!({"metadata": {"creationTimestamp": now}, "status": {"userInfo": who}});
            return Ok(t.present(&answer));
        }
        "SelfSubjectRulesReview" => {
            let ns = text(&obj["spec"], "namespace");
            let (resource, non_resource) = rbac::rules_for(&store, &t.user, &ns);
            // The real server answers with the rules alone: empty metadata and spec.
            let rules = json!({"metadata": {}, "spec": {}, "status": {
                "resourceRules": resource,
                "nonResourceRules": non_resource,
                "incomplete": false,
            }});
            return Ok(t.present(&rules));
        }
        _ => {}
    }
    let spec = &obj["spec"];
    let (resource, non_resource) = (
        spec.get("resourceAttributes").filter(|v| !v.is_null()),
        spec.get("nonResourceAttributes").filter(|v| !v.is_null()),
    );
    let mut causes = Vec::new();
    if resource.is_some() == non_resource.is_some() {
        causes.push((
            "spec".to_string(),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified"
                .to_string(),
            non_resource.cloned().unwrap_or(Value::Null),
        ));
    }
    let subject = match t.info.kind.as_str() {
        "SelfSubjectAccessReview" => t.user.clone(),
        _ => {
            let groups: Vec<String> = spec["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|g| g.as_str().map(str::to_string))
                .collect();
            if text(spec, "user").is_empty() && groups.is_empty() {
                causes.push((
                    "spec.user".into(),
                    "at least one of user or group must be specified".into(),
                    json!(""),
                ));
            }
            rbac::UserInfo {
                name: text(spec, "user"),
                groups,
            }
        }
    };
    if t.info.kind == "LocalSubjectAccessReview" {
        if resource.is_some_and(|r| text(r, "namespace") != t.ns) {
            causes.push((
                "spec.resourceAttributes.namespace".into(),
                "must match metadata.namespace".into(),
                json!(resource.map(|r| text(r, "namespace"))),
            ));
        }
        if non_resource.is_some() {
            causes.push((
                "spec.nonResourceAttributes".into(),
                "disallowed on this kind of request".into(),
                non_resource.cloned().unwrap_or(Value::Null),
            ));
        }
    }
    if !causes.is_empty() {
        // The real server shows a value as JSON: `null` for an absent one.
        let faults: Vec<(String, &str, String)> = causes
            .into_iter()
            .map(|(field, why, value)| {
                let detail = format!("Invalid value: {value}: {why}");
                (field, "FieldValueInvalid", detail)
            })
            .collect();
        // Named by the kind of the decoded review, which is empty on the real server.
        let unnamed = ResourceInfo {
            kind: String::new(),
            ..t.info.clone()
        };
        return Err(ApiError::invalid_fields(&unnamed, "", &faults));
    }
    let attrs = match (resource, non_resource) {
        (Some(r), _) => rbac::Attributes {
            verb: text(r, "verb"),
            resource: text(r, "resource"),
            group: text(r, "group"),
            subresource: text(r, "subresource"),
            namespace: text(r, "namespace"),
            name: text(r, "name"),
            path: String::new(),
        },
        (None, n) => rbac::Attributes {
            verb: n.map(|n| text(n, "verb")).unwrap_or_default(),
            path: n.map(|n| text(n, "path")).unwrap_or_default(),
            ..rbac::Attributes::default()
        },
    };
    let status = match rbac::authorize(&store, &subject, &attrs) {
        rbac::Decision::Allowed(reason) => json!({"allowed": true, "reason": reason}),
        rbac::Decision::Denied(reason) => json!({"allowed": false, "reason": reason}),
    };
    drop(store);
    t.write().track_update(None, &mut obj);
    obj["status"] = status;
    if obj["status"]["reason"] == "" {
        obj["status"].as_object_mut().map(|s| s.remove("reason"));
    }
    Ok(t.present(&obj))
}

async fn update(shared: &Arc<Shared>, t: &Target, obj: Value) -> Answer {
    check_kind(t, &obj)?;
    check_namespace(t, &obj)?;
    let obj = t.pruned(obj)?;
    let (created, updated) = admitted_write(shared, t, |s| {
        let old = match s.get(&t.info, &t.ns, name(t)) {
            Ok(old) => old,
            Err(e) if e.code == 404 && creates_on_update(t) => {
                t.check_rbac_write(shared, s, &obj, None)?;
                // Created whatever resourceVersion the update was made against.
                let mut object = obj.clone();
                if let Some(m) = object["metadata"].as_object_mut() {
                    m.remove("resourceVersion");
                }
                return Ok(Draft {
                    object,
                    old: None,
                    track: true,
                });
            }
            Err(e) => return Err(e),
        };
        check_uid_precondition(t, &obj, &old)?;
        t.check_rbac_write(shared, s, &obj, Some(&old))?;
        Ok(Draft {
            object: obj.clone(),
            old: Some(old),
            track: true,
        })
    })
    .await?;
    if created {
        return Ok((201, created_answer(t, &updated)));
    }
    Ok((200, unwritten(shared, t, t.present(&updated))))
}

/// Whether an update of a missing object of `t` creates it: the kinds whose strategy
/// allows it on the real server (RBAC's roles and bindings, Leases and LeaseCandidates,
/// LimitRanges, Events, Services, Endpoints, RuntimeClasses).
fn creates_on_update(t: &Target) -> bool {
    t.info.builtin
        && !t.status
        && !t.scale
        && matches!(
            (t.info.group.as_str(), t.info.plural.as_str()),
            ("rbac.authorization.k8s.io", _)
                | ("coordination.k8s.io", "leases" | "leasecandidates")
                | ("", "limitranges" | "events" | "services" | "endpoints")
                | ("events.k8s.io", "events")
                | ("node.k8s.io", "runtimeclasses")
        )
}

/// An update's `metadata.uid`, when set, is a precondition on the stored object's, as the
/// real server's storage checks it (its error names the object's etcd key).
fn check_uid_precondition(t: &Target, obj: &Value, old: &Value) -> ApiResult<()> {
    let uid = |o: &Value| {
        o.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (wanted, held) = (uid(obj), uid(old));
    if wanted.is_empty() || wanted == held {
        return Ok(());
    }
    let prefix = match t.info.builtin {
        true => t.info.plural.clone(),
        false => format!("{}/{}", t.info.group, t.info.plural),
    };
    let key = match t.ns.as_str() {
        "" => format!("/registry/{prefix}/{}", name(t)),
        ns => format!("/registry/{prefix}/{ns}/{}", name(t)),
    };
    let why = format!(
        "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {wanted}, UID in object meta: {held}"
    );
    Err(ApiError::conflict(&t.info, name(t), &why))
}

/// A patch of a request, parsed.
enum PatchBody {
    /// The operations, applied as the real server's library applies them (see
    /// `patch_ops`): an unknown `op` or a missing `path` fails when applied.
    Json(Vec<Value>),
    Merge(Value),
    Strategic(Value),
}

impl PatchBody {
    /// The patch of a request, checked as the real server checks it: a body that is not
    /// JSON is `invalid JSON patch`; a JSON patch must be a list of operations, a merge
    /// patch an object (else Go's decoding error); an operation the patch library does not
    /// know fails when applied.
    fn parse(t: &Target, content_type: &str, body: &[u8]) -> ApiResult<Self> {
        let strategic = content_type == "application/strategic-merge-patch+json";
        let known = matches!(
            content_type,
            "application/json-patch+json" | "application/merge-patch+json"
        );
        if !known && (!strategic || !t.info.builtin) {
            return Err(unsupported_patch(t, content_type));
        }
        let value: Value = serde_json::from_slice(body)
            .map_err(|_| ApiError::bad_request("invalid JSON patch"))?;
        let cannot = |found: &Value, into: &str| {
            let found = go_json_type(found);
            // A strategic merge patch's error comes without the handler's prefix.
            let prefix = if strategic {
                ""
            } else {
                "error decoding patch: "
            };
            ApiError::bad_request(format!(
                "{prefix}json: cannot unmarshal {found} into Go value of type {into}"
            ))
        };
        if content_type == "application/json-patch+json" {
            let ops = value
                .as_array()
                .ok_or_else(|| cannot(&value, "[]handlers.jsonPatchOp"))?;
            if let Some(op) = ops.iter().find(|op| !op.is_object() && !op.is_null()) {
                return Err(cannot(op, "handlers.jsonPatchOp"));
            }
            return Ok(Self::Json(ops.clone()));
        }
        if !value.is_object() {
            return Err(cannot(&value, "map[string]interface {}"));
        }
        Ok(if strategic {
            Self::Strategic(value)
        } else {
            Self::Merge(value)
        })
    }

    /// `obj` patched; strategic merge patches merge lists by the keys of `kind`.
    fn apply(&self, mut obj: Value, kind: &str) -> ApiResult<Value> {
        let failed = || {
            let mut e = ApiError::new(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
            );
            e.details = Some(json!({}));
            e
        };
        match self {
            Self::Json(ops) => {
                obj = crate::patch_ops::apply(obj, ops).map_err(|e| {
                    tracing::debug!("kubekit-fake: a JSON patch failed: {e}");
                    failed()
                })?;
            }
            Self::Merge(p) => json_patch::merge(&mut obj, p),
            Self::Strategic(p) => obj = smp::apply(obj, p.clone(), smp::Ty::of_kind(kind))?,
        }
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        Ok(obj)
    }
}

/// The most bytes of a field manager's name.
const MAX_FIELD_MANAGER_BYTES: usize = 128;

/// Refuses a write's options as the real server does: a `fieldManager` of more than 128
/// bytes; `force` on a patch that is not an apply.
fn check_write_options(t: &Target, options: &str, apply: bool) -> ApiResult<()> {
    let mut faults = Vec::new();
    if t.param("fieldManager")
        .is_some_and(|m| m.len() > MAX_FIELD_MANAGER_BYTES)
    {
        let detail = format!("Too long: may not be more than {MAX_FIELD_MANAGER_BYTES} bytes");
        faults.push(("fieldManager", "FieldValueTooLong", detail));
    }
    if options == "PatchOptions" && !apply && t.param("force").is_some() {
        let detail = "Forbidden: may not be specified for non-apply patch".to_string();
        faults.push(("force", "FieldValueForbidden", detail));
    }
    options_invalid(t, options, &faults)
}

async fn patch(shared: &Arc<Shared>, t: &Target, content_type: &str, body: &[u8]) -> Answer {
    check_write_options(t, "PatchOptions", content_type == APPLY_PATCH)?;
    if content_type == APPLY_PATCH {
        return apply(shared, t, body).await;
    }
    let patch = PatchBody::parse(t, content_type, body)?;
    let (_, patched) = admitted_write(shared, t, |s| {
        let stored = s.get(&t.info, &t.ns, name(t))?;
        let live = t.present(&stored);
        let obj = t.pruned(patch.apply(live.clone(), &t.info.kind)?)?;
        check_namespace(t, &obj)?;
        t.check_rbac_write(shared, s, &obj, Some(&live))?;
        Ok(Draft {
            object: obj,
            old: Some(stored),
            track: true,
        })
    })
    .await?;
    Ok((200, unwritten(shared, t, t.present(&patched))))
}

const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// Server-side apply of the body (YAML or JSON) with the request's `fieldManager` (and
/// `force`); creates the object when it does not exist (see `managed`).
async fn apply(shared: &Arc<Shared>, t: &Target, body: &[u8]) -> Answer {
    if t.param("fieldManager").is_none_or(str::is_empty) {
        let detail = "Required value: is required for apply patch";
        return Err(ApiError::invalid_options(
            "PatchOptions",
            "fieldManager",
            "FieldValueRequired",
            detail,
        ));
    }
    let config: Value = serde_yaml::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request(format!(
            "error decoding patch: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_json_type(&config)
        )));
    }
    // The configuration names its type, which must be the resource's.
    let text = |k: &str| config[k].as_str().unwrap_or_default();
    let (group, version) = match text("apiVersion").rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", text("apiVersion")),
    };
    if text("kind") != t.info.kind || text("apiVersion") != t.info.api_version(&t.version) {
        return Err(ApiError::bad_request(format!(
            "invalid object type: {group}/{version}, Kind={}",
            text("kind")
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    check_kind(t, &config)?;
    check_namespace(t, &config)?;
    match config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        Some(n) if n == name(t) => {}
        Some(n) => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({})",
                name(t)
            )));
        }
        None => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({} based on URL) was undeterminable: name must be provided",
                name(t)
            )));
        }
    }
    let force = t.param("force") == Some("true");
    let write = t.write();
    let (created, applied) = admitted_write(shared, t, |s| match s.get(&t.info, &t.ns, name(t)) {
        Ok(live) => {
            let merged = write.apply(Some(&t.present(&live)), &config, force)?;
            t.check_rbac_write(shared, s, &merged, Some(&live))?;
            Ok(Draft {
                object: merged,
                old: Some(live),
                track: false,
            })
        }
        Err(e) if t.status => Err(e),
        Err(_) => {
            // Creating needs `create` too, checked as the real server checks it.
            if shared.rbac {
                let create = rbac::Attributes {
                    verb: "create".into(),
                    ..t.asked.clone()
                };
                rbac::check(s, &t.user, &create)?;
            }
            let merged = write.apply(None, &config, force)?;
            t.check_rbac_write(shared, s, &merged, None)?;
            Ok(Draft {
                object: merged,
                old: None,
                track: false,
            })
        }
    })
    .await?;
    Ok(match created {
        true => (201, created_answer(t, &applied)),
        false => (200, unwritten(shared, t, t.present(&applied))),
    })
}

/// The real server's `422` for a `dryRun` other than `All` on a write, naming the write's
/// options (`CreateOptions`, ...).
fn unsupported_dry_run(t: &Target, verb: &str) -> Option<ApiError> {
    let value = t.param("dryRun").filter(|d| *d != "All")?;
    let options = match verb {
        "create" => "CreateOptions",
        "update" => "UpdateOptions",
        "patch" => "PatchOptions",
        "delete" | "deletecollection" => "DeleteOptions",
        _ => return None,
    };
    let detail = format!("Unsupported value: [{value:?}]: supported values: \"All\"");
    Some(ApiError::invalid_options(
        options,
        "dryRun",
        "FieldValueNotSupported",
        &detail,
    ))
}

/// The answer to a dry-run change of an existing object: its resourceVersion is the stored
/// one, as nothing was written. Other answers are left as they are.
fn unwritten(shared: &Shared, t: &Target, mut answer: Value) -> Value {
    if t.dry_run
        && let Ok(stored) = shared.store.lock().get(&t.info, &t.ns, name(t))
        && let Some(meta) = answer["metadata"].as_object_mut()
    {
        meta.insert(
            "resourceVersion".into(),
            stored["metadata"]["resourceVersion"].clone(),
        );
    }
    answer
}

/// A request to the `scale` subresource: get, update (a `Scale` body) or patch (of the
/// `Scale`); see `scale`.
async fn scale(
    shared: &Arc<Shared>,
    t: &Target,
    verb: &str,
    content_type: &str,
    body: &[u8],
) -> Answer {
    let paths = t.info.scale.as_ref().ok_or_else(ApiError::no_route)?;
    if verb == "get" {
        let obj = shared.store.lock().get(&t.info, &t.ns, name(t))?;
        return Ok((200, scale::of(paths, &obj)));
    }
    // The Scale sent (update), or the patch of the current one.
    let sent = match verb {
        "patch" => Err(PatchBody::parse(t, content_type, body)?),
        _ => Ok(object_body(t, content_type, body)?),
    };
    let (_, updated) = admitted_write(shared, t, |s| {
        let stored = s.get(&t.info, &t.ns, name(t))?;
        let wanted = match &sent {
            Ok(scale) => scale.clone(),
            Err(patch) => patch.apply(scale::of(paths, &stored), "Scale")?,
        };
        Ok(Draft {
            object: wanted,
            old: Some(stored),
            track: true,
        })
    })
    .await?;
    Ok((200, unwritten(shared, t, scale::of(paths, &updated))))
}

/// `PUT /api/v1/namespaces/<name>/finalize`, which kube-controller-manager's namespace
/// controller calls once it has emptied a namespace being deleted: the namespace's
/// `spec.finalizers` become the body's (the rest stays as stored; the body's
/// resourceVersion, if any, must be the stored one), and a namespace being deleted
/// without finalizers left is removed. Not admitted by webhooks or policies.
async fn finalize(shared: &Arc<Shared>, t: &Target, content_type: &str, body: &[u8]) -> Answer {
    let sent = object_body(t, content_type, body)?;
    let rv = sent["metadata"]["resourceVersion"]
        .as_str()
        .filter(|v| !v.is_empty());
    let finalizers = sent["spec"]["finalizers"].clone();
    let updated =
        shared
            .store
            .lock()
            .finalize_namespace(&t.info, name(t), finalizers, rv, t.dry_run)?;
    Ok((200, (*updated).clone()))
}

/// `415 UnsupportedMediaType` for a patch type the fake does not apply to `t`: strategic
/// merge patch of a custom resource (as on the real server), server-side apply of the
/// scale subresource (which the real server applies and the fake does not) or an unknown
/// type.
fn unsupported_patch(t: &Target, content_type: &str) -> ApiError {
    // A type that is no patch at all has no route (go-restful's answer).
    if !content_type.ends_with("patch+json") && content_type != APPLY_PATCH {
        let mut e = ApiError::new(415, "UnsupportedMediaType", "415: Unsupported Media Type");
        e.details = Some(json!({}));
        return e;
    }
    let mut accepted = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if t.info.builtin {
        accepted.push("application/strategic-merge-patch+json");
    }
    let mut e = ApiError::unsupported_media_type(&accepted);
    if content_type == APPLY_PATCH {
        e.message
            .push_str(" (kubekit-fake does not apply to the scale subresource)");
    } else if !t.info.builtin {
        // The real server's list for a custom resource names server-side apply too.
        e = ApiError::unsupported_media_type(&[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]);
    }
    e
}

/// DeleteOptions from the body and the query.
fn delete_request(t: &Target, body: &[u8]) -> ApiResult<DeleteRequest> {
    let opts = json_body(body)?;
    if let Some(kind) = opts["kind"]
        .as_str()
        .filter(|k| !k.is_empty() && *k != "DeleteOptions")
    {
        let version = opts["apiVersion"].as_str().unwrap_or_default();
        return Err(ApiError::bad_request(format!(
            "no kind \"{kind}\" is registered for version \"{version}\" in scheme \"pkg/runtime/scheme.go:111\""
        )));
    }
    check_delete_options(t, &opts)?;
    let dry_run = opts.get("dryRun").and_then(Value::as_array);
    let text = |v: &Value| v.as_str().map(str::to_string);
    let orphan = match (
        opts.get("orphanDependents").and_then(Value::as_bool),
        t.param("orphanDependents"),
    ) {
        (Some(true), _) | (None, Some("true")) => Some("Orphan".to_string()),
        _ => None,
    };
    let mut propagation = text(&opts["propagationPolicy"])
        .or_else(|| t.param("propagationPolicy").map(str::to_string))
        .or(orphan);
    // A batch/v1 Job orphans its Pods unless told otherwise, and says so.
    if propagation.is_none()
        && t.info.builtin
        && (t.info.group.as_str(), t.info.kind.as_str()) == ("batch", "Job")
    {
        propagation = Some("Orphan".into());
        t.warnings.lock().push(
            "child pods are preserved by default when jobs are deleted; set \
             propagationPolicy=Background to remove them or set propagationPolicy=Orphan to \
             suppress this warning"
                .into(),
        );
    }
    Ok(DeleteRequest {
        dry_run: t.dry_run || dry_run.is_some_and(|d| !d.is_empty()),
        uid: text(&opts["preconditions"]["uid"]),
        resource_version: text(&opts["preconditions"]["resourceVersion"]),
        propagation,
    })
}

/// Refuses DeleteOptions (the body's, else the query's) as apimachinery's
/// `ValidateDeleteOptions` does: `orphanDependents` with a `propagationPolicy`, a policy
/// that is not `Foreground`, `Background` or `Orphan`, a `dryRun` other than `All`.
fn check_delete_options(t: &Target, opts: &Value) -> ApiResult<()> {
    let given = |key: &str| match opts.get(key).filter(|v| !v.is_null()) {
        Some(v) => Some(v.clone()),
        None => t.param(key).map(|p| json!(p)),
    };
    let policy = given("propagationPolicy");
    let mut faults = Vec::new();
    if let Some(p) = &policy {
        if given("orphanDependents").is_some() {
            let why = "orphanDependents and deletionPropagation cannot be both set";
            let detail = format!("Invalid value: {}: {why}", shown(p));
            faults.push(("propagationPolicy", "FieldValueInvalid", detail));
        }
        if !["Foreground", "Background", "Orphan"].contains(&p.as_str().unwrap_or_default()) {
            let supported = "supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"";
            let detail = format!("Unsupported value: {}: {supported}", shown(p));
            faults.push(("propagationPolicy", "FieldValueNotSupported", detail));
        }
    }
    if let Some(dry_run) = opts.get("dryRun").and_then(Value::as_array)
        && dry_run.iter().any(|v| v != "All")
    {
        let detail = format!(
            "Unsupported value: {}: supported values: \"All\"",
            Value::Array(dry_run.clone())
        );
        faults.push(("dryRun", "FieldValueNotSupported", detail));
    }
    options_invalid(t, "DeleteOptions", &faults)
}

async fn delete(shared: &Arc<Shared>, t: &Target, body: &[u8]) -> Answer {
    let req = delete_request(t, body)?;
    admit_delete(shared, t, &req, (&t.ns, name(t)), body).await?;
    let deleted = shared.write_for(req.dry_run, |s| s.delete(&t.info, &t.ns, name(t), &req))?;
    Ok((200, deleted_response(t, &deleted)))
}

/// The admission of deleting `name` in `ns`: mutating webhooks with no object, validating
/// webhooks with the object as it is (`oldObject`), as kube-apiserver calls them. Nothing
/// when no webhook is configured or the object does not exist (the delete then says so).
async fn admit_delete(
    shared: &Arc<Shared>,
    t: &Target,
    req: &DeleteRequest,
    (ns, name): (&str, &str),
    body: &[u8],
) -> ApiResult<()> {
    let old = {
        let store = shared.store.lock();
        if !admission::configured(&store) {
            return Ok(());
        }
        match store.get(&t.info, ns, name) {
            Ok(old) => t.present(&old),
            Err(_) => return Ok(()),
        }
    };
    let mut options = json_body(body).unwrap_or_else(|_| json!({}));
    options["apiVersion"] = json!("meta.k8s.io/v1");
    options["kind"] = json!("DeleteOptions");
    if let Some(p) = &req.propagation {
        options["propagationPolicy"] = json!(p);
    }
    let attrs = admission::Attributes {
        namespace: ns.to_string(),
        name: name.to_string(),
        dry_run: req.dry_run,
        options,
        ..t.attributes_of(Operation::Delete)
    };
    admission::mutate(shared, &attrs, None, Some(&old)).await?;
    let warnings = admission::validate(shared, &attrs, None, Some(&old)).await?;
    t.warnings.lock().extend(warnings);
    Ok(())
}

fn deleted_response(t: &Target, deleted: &Deleted) -> Value {
    match deleted {
        Deleted::Gone(obj) if !t.info.returns_deleted_object => {
            let name = obj["metadata"]["name"].as_str().unwrap_or("");
            let mut d = details(&t.info, name);
            d["uid"] = obj["metadata"]["uid"].clone();
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": d})
        }
        Deleted::Gone(obj) | Deleted::Pending(obj) => t.present(obj),
    }
}

async fn delete_collection(shared: &Arc<Shared>, t: &Target, body: &[u8]) -> Answer {
    let req = delete_request(t, body)?;
    let filter = Filter::parse(&t.info, t.param("labelSelector"), t.param("fieldSelector"))?;
    let ns = (!t.ns.is_empty()).then_some(t.ns.as_str());
    let chosen: Vec<(String, String)> = {
        let store = shared.store.lock();
        let (_, objects) = store.snapshot(&t.info, ns, None)?;
        objects
            .iter()
            .filter(|o| filter.matches(o))
            .map(|o| store_key(o))
            .collect()
    };
    for (ns, name) in &chosen {
        admit_delete(shared, t, &req, (ns, name), body).await?;
    }
    let (rv, deleted) = shared.write_for(req.dry_run, |s| -> ApiResult<(u64, Vec<Value>)> {
        let (rv, objects) = s.snapshot(&t.info, ns, None)?;
        let mut deleted = Vec::new();
        for o in objects.iter().filter(|o| filter.matches(o)) {
            let (ns, name) = store_key(o);
            match s.delete(&t.info, &ns, &name, &req) {
                Ok(Deleted::Gone(obj) | Deleted::Pending(obj)) => deleted.push(item(t, &obj)),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok((rv, deleted))
    })?;
    Ok((200, list_object(t, list_metadata(t, rv), deleted)))
}

/// The namespace and name of a stored object.
fn store_key(obj: &Value) -> (String, String) {
    let text = |key: &str| {
        obj["metadata"][key]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    (text("namespace"), text("name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continue_token_round_trips_and_garbage_is_a_bad_request() {
        let token = encode_continue(42, "ns", "cm-1");
        assert_eq!(
            decode_continue(&token).unwrap(),
            (42, "ns".into(), "cm-1".into())
        );
        assert_eq!(decode_continue("%%%").unwrap_err().code, 400);
    }
}
