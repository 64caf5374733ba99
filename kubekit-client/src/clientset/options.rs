//! Options of each verb, mirroring metav1's `ListOptions`, `GetOptions`, `CreateOptions`,
//! `UpdateOptions`, `PatchOptions` and `DeleteOptions`.
//!
//! # Contract
//!
//! - Every option left at its default is left out of the request, so the server applies its
//!   own default; an empty string counts as unset, as with Go's `omitempty`.
//! - The query parameters have exactly the names and values the API server parses
//!   (`labelSelector`, `continue`, `dryRun=All`, `fieldValidation=Strict`, …);
//!   [`ListOptions::list_params`] and friends show what will be sent.
//! - [`DeleteOptions`] travel in the request body as a `meta.k8s.io/v1` `DeleteOptions`
//!   object, as client-go sends them; they are never put in the query.
//!
//! ```
//! use kubekit::clientset::{ListOptions, ResourceVersionMatch};
//!
//! let opts = ListOptions::default().labels("app=web").limit(500);
//! assert_eq!(
//!     opts.list_params(),
//!     [("labelSelector", "app=web".to_string()), ("limit", "500".to_string())]
//! );
//!
//! // A consistent read from the watch cache: any version not older than "0".
//! let cached = ListOptions::default()
//!     .resource_version("0")
//!     .resource_version_match(ResourceVersionMatch::NotOlderThan);
//! assert_eq!(cached.list_params()[1], ("resourceVersionMatch", "NotOlderThan".to_string()));
//! ```

use serde::Serialize;

use crate::rest::Request;

/// Query parameters of a request, in the order they are sent.
pub type QueryParams = Vec<(&'static str, String)>;

/// Appends `params` to a request.
pub(crate) fn with_params(mut req: Request, params: &QueryParams) -> Request {
    for (key, value) in params {
        req = req.param(key, value);
    }
    req
}

fn push_str(params: &mut QueryParams, key: &'static str, value: Option<&str>) {
    if let Some(v) = value.filter(|v| !v.is_empty()) {
        params.push((key, v.to_string()));
    }
}

fn push_write_params(
    params: &mut QueryParams,
    dry_run: bool,
    field_manager: Option<&str>,
    field_validation: Option<FieldValidation>,
) {
    if dry_run {
        params.push(("dryRun", "All".into()));
    }
    push_str(params, "fieldManager", field_manager);
    if let Some(v) = field_validation {
        params.push(("fieldValidation", v.as_str().into()));
    }
}

/// How a list or watch treats its `resourceVersion` (metav1's `ResourceVersionMatch`).
///
/// Without a match, a list at `resourceVersion` `"0"` may be served from the watch cache
/// (any version), and at any other version means "not older than"; see the API
/// conventions on resource versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceVersionMatch {
    /// Data at least as new as the given resourceVersion.
    NotOlderThan,
    /// Data at exactly the given resourceVersion (fails with 410 Gone once compacted).
    Exact,
}

impl ResourceVersionMatch {
    /// The value of the `resourceVersionMatch` parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceVersionMatch::NotOlderThan => "NotOlderThan",
            ResourceVersionMatch::Exact => "Exact",
        }
    }
}

/// What the server does with unknown or duplicate fields in a create, update or patch
/// body (the `fieldValidation` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and say so in a `Warning` header (the server's default).
    Warn,
    /// Refuse the request (400 BadRequest).
    Strict,
}

impl FieldValidation {
    /// The value of the `fieldValidation` parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldValidation::Ignore => "Ignore",
            FieldValidation::Warn => "Warn",
            FieldValidation::Strict => "Strict",
        }
    }
}

/// Options of list and watch (metav1 `ListOptions`).
///
/// The watch-only fields (`allow_watch_bookmarks`, `send_initial_events`) are left out of
/// a list, and the paging fields (`limit`, `continue_token`) out of a watch, since the
/// server refuses or ignores them there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Only objects whose labels match, e.g. `app=web,tier!=db`.
    pub label_selector: Option<String>,
    /// Only objects whose fields match, e.g. `metadata.name=web` or `status.phase=Running`.
    pub field_selector: Option<String>,
    /// Only the objects of one shard (the `shardSelector` parameter, Kubernetes 1.36+ with
    /// the `ShardedListAndWatch` feature gate), e.g.
    /// `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`; a
    /// `kubekit::cache::ShardSelector` writes it. A server without the
    /// feature ignores it and sends every object: the list's
    /// [`shard_selector`](crate::rest::ObjectList::shard_selector) says whether it was
    /// applied. Text the server cannot parse is refused with a 500 `InternalError` (by
    /// kube-apiserver 1.37.2), which clients retry as a server fault: build it from a
    /// `ShardSelector`, which checks it first.
    pub shard_selector: Option<String>,
    /// At most this many objects per response; the list's `continue` token fetches the next
    /// page.
    pub limit: Option<u32>,
    /// The `continue` token of the previous page.
    pub continue_token: Option<String>,
    /// The resourceVersion to list at or watch from; see [`ResourceVersionMatch`].
    pub resource_version: Option<String>,
    /// How `resource_version` is matched.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// Server-side timeout of the list or watch, in seconds.
    pub timeout_seconds: Option<u32>,
    /// Watch only: ask for `BOOKMARK` events.
    pub allow_watch_bookmarks: bool,
    /// Watch only: start with the current objects as `ADDED` events, ended by a bookmark
    /// annotated `k8s.io/initial-events-end` (a streaming list).
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    /// Sets the label selector.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Sets the field selector.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Sets the shard selector, from its text or a
    /// `kubekit::cache::ShardSelector`.
    pub fn shard(mut self, selector: impl std::fmt::Display) -> Self {
        self.shard_selector = Some(selector.to_string());
        self
    }

    /// Sets the page size.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Sets the `continue` token of the page to fetch.
    pub fn continue_token(mut self, token: &str) -> Self {
        self.continue_token = Some(token.into());
        self
    }

    /// Sets the resourceVersion.
    pub fn resource_version(mut self, resource_version: &str) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// Sets how the resourceVersion is matched.
    pub fn resource_version_match(mut self, how: ResourceVersionMatch) -> Self {
        self.resource_version_match = Some(how);
        self
    }

    /// Sets the server-side timeout in seconds.
    pub fn timeout_seconds(mut self, seconds: u32) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Asks a watch for bookmarks.
    pub fn bookmarks(mut self) -> Self {
        self.allow_watch_bookmarks = true;
        self
    }

    /// Asks a watch to start with the current objects (a streaming list).
    pub fn send_initial_events(mut self, send: bool) -> Self {
        self.send_initial_events = Some(send);
        self
    }

    fn common(&self, params: &mut QueryParams) {
        push_str(params, "labelSelector", self.label_selector.as_deref());
        push_str(params, "fieldSelector", self.field_selector.as_deref());
        push_str(params, "shardSelector", self.shard_selector.as_deref());
        push_str(params, "resourceVersion", self.resource_version.as_deref());
        if let Some(m) = self.resource_version_match {
            params.push(("resourceVersionMatch", m.as_str().into()));
        }
        if let Some(t) = self.timeout_seconds {
            params.push(("timeoutSeconds", t.to_string()));
        }
    }

    /// The query parameters of a list (or delete_collection) with these options.
    pub fn list_params(&self) -> QueryParams {
        let mut params = QueryParams::new();
        self.common(&mut params);
        if let Some(limit) = self.limit.filter(|l| *l > 0) {
            params.push(("limit", limit.to_string()));
        }
        push_str(&mut params, "continue", self.continue_token.as_deref());
        params
    }

    /// The query parameters of a watch with these options (`watch=true` is added by the
    /// request itself).
    pub fn watch_params(&self) -> QueryParams {
        let mut params = QueryParams::new();
        self.common(&mut params);
        if self.allow_watch_bookmarks {
            params.push(("allowWatchBookmarks", "true".into()));
        }
        if let Some(send) = self.send_initial_events {
            params.push(("sendInitialEvents", send.to_string()));
        }
        params
    }
}

/// Options of get (metav1 `GetOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetOptions {
    /// `"0"` allows any cached version; unset reads the latest from storage.
    pub resource_version: Option<String>,
}

impl GetOptions {
    /// Sets the resourceVersion.
    pub fn resource_version(mut self, resource_version: &str) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// The query parameters of a get with these options.
    pub fn params(&self) -> QueryParams {
        let mut params = QueryParams::new();
        push_str(
            &mut params,
            "resourceVersion",
            self.resource_version.as_deref(),
        );
        params
    }
}

/// Options of the writes create, update and update_status: metav1's `CreateOptions` and
/// `UpdateOptions`, which have the same fields and render the same parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Validate and admit the request, but persist nothing (`dryRun=All`).
    pub dry_run: bool,
    /// The actor making the change, recorded in `managedFields`.
    pub field_manager: Option<String>,
    /// What the server does with unknown or duplicate fields.
    pub field_validation: Option<FieldValidation>,
}

/// Options of create (metav1 `CreateOptions`).
pub type CreateOptions = WriteOptions;

/// Options of update and update_status (metav1 `UpdateOptions`).
pub type UpdateOptions = WriteOptions;

impl WriteOptions {
    /// Sets dry run.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Sets the field manager.
    pub fn field_manager(mut self, manager: &str) -> Self {
        self.field_manager = Some(manager.into());
        self
    }

    /// Sets the field validation.
    pub fn field_validation(mut self, validation: FieldValidation) -> Self {
        self.field_validation = Some(validation);
        self
    }

    /// The query parameters of a create or update with these options.
    pub fn params(&self) -> QueryParams {
        let mut params = QueryParams::new();
        push_write_params(
            &mut params,
            self.dry_run,
            self.field_manager.as_deref(),
            self.field_validation,
        );
        params
    }
}

/// Options of patch (metav1 `PatchOptions`).
///
/// Server-side apply ([`Patch::Apply`](super::Patch::Apply)) requires a field manager;
/// `force` is allowed only with it, and takes over fields other managers own instead of
/// failing with a 409 Conflict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchOptions {
    /// Validate and admit the request, but persist nothing (`dryRun=All`).
    pub dry_run: bool,
    /// The actor making the change, recorded in `managedFields`; required for apply.
    pub field_manager: Option<String>,
    /// What the server does with unknown or duplicate fields.
    pub field_validation: Option<FieldValidation>,
    /// Apply only: take ownership of conflicting fields.
    pub force: bool,
}

impl PatchOptions {
    /// Options of a server-side apply by `manager`.
    pub fn apply(manager: &str) -> Self {
        Self::default().field_manager(manager)
    }

    /// Sets dry run.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Sets the field manager.
    pub fn field_manager(mut self, manager: &str) -> Self {
        self.field_manager = Some(manager.into());
        self
    }

    /// Sets the field validation.
    pub fn field_validation(mut self, validation: FieldValidation) -> Self {
        self.field_validation = Some(validation);
        self
    }

    /// Forces an apply through conflicts.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    /// The query parameters of a patch with these options.
    pub fn params(&self) -> QueryParams {
        let mut params = QueryParams::new();
        push_write_params(
            &mut params,
            self.dry_run,
            self.field_manager.as_deref(),
            self.field_validation,
        );
        if self.force {
            params.push(("force", "true".into()));
        }
        params
    }
}

/// What happens to the objects a deleted object owns (metav1 `DeletionPropagation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PropagationPolicy {
    /// Dependents are left in place, their owner reference removed.
    Orphan,
    /// The object goes at once; the garbage collector deletes dependents afterwards.
    Background,
    /// The object stays (with the `foregroundDeletion` finalizer) until every blocking
    /// dependent is gone.
    Foreground,
}

/// Conditions the object must meet for a delete to proceed; otherwise the server answers
/// 409 Conflict (metav1 `Preconditions`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The object's UID must be this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The object's resourceVersion must be this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// Options of delete and delete_collection (metav1 `DeleteOptions`), sent as the request
/// body.
///
/// ```
/// use kubekit::clientset::{DeleteOptions, PropagationPolicy};
///
/// let opts = DeleteOptions::default()
///     .propagation_policy(PropagationPolicy::Foreground)
///     .precondition_uid("6f1d…");
/// assert_eq!(
///     serde_json::to_value(&opts).unwrap(),
///     serde_json::json!({
///         "kind": "DeleteOptions",
///         "apiVersion": "v1",
///         "preconditions": {"uid": "6f1d…"},
///         "propagationPolicy": "Foreground",
///     })
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Seconds the object has to shut down; `0` deletes at once; unset uses the type's
    /// default (30 s for Pods).
    pub grace_period_seconds: Option<i64>,
    /// Conditions the object must meet.
    pub preconditions: Option<Preconditions>,
    /// What happens to dependents; unset uses the type's default (usually Background).
    pub propagation_policy: Option<PropagationPolicy>,
    /// Validate and admit the deletion, but delete nothing (`dryRun: ["All"]`).
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Sets the grace period.
    pub fn grace_period_seconds(mut self, seconds: i64) -> Self {
        self.grace_period_seconds = Some(seconds);
        self
    }

    /// Requires the object to have this UID.
    pub fn precondition_uid(mut self, uid: &str) -> Self {
        self.preconditions
            .get_or_insert_with(Preconditions::default)
            .uid = Some(uid.into());
        self
    }

    /// Requires the object to be at this resourceVersion.
    pub fn precondition_resource_version(mut self, resource_version: &str) -> Self {
        self.preconditions
            .get_or_insert_with(Preconditions::default)
            .resource_version = Some(resource_version.into());
        self
    }

    /// Sets the propagation policy.
    pub fn propagation_policy(mut self, policy: PropagationPolicy) -> Self {
        self.propagation_policy = Some(policy);
        self
    }

    /// Sets dry run.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }
}

impl Serialize for DeleteOptions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Body<'a> {
            kind: &'static str,
            api_version: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            grace_period_seconds: Option<i64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            preconditions: Option<&'a Preconditions>,
            #[serde(skip_serializing_if = "Option::is_none")]
            propagation_policy: Option<PropagationPolicy>,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            dry_run: &'static [&'static str],
        }
        Body {
            kind: "DeleteOptions",
            api_version: "v1",
            grace_period_seconds: self.grace_period_seconds,
            preconditions: self.preconditions.as_ref(),
            propagation_policy: self.propagation_policy,
            dry_run: if self.dry_run { &["All"] } else { &[] },
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs<'a>(params: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
        params.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }

    #[test]
    fn default_options_send_no_parameters() {
        assert!(ListOptions::default().list_params().is_empty());
        assert!(ListOptions::default().watch_params().is_empty());
        assert!(GetOptions::default().params().is_empty());
        assert!(CreateOptions::default().params().is_empty());
        assert!(UpdateOptions::default().params().is_empty());
        assert!(PatchOptions::default().params().is_empty());
        assert_eq!(
            serde_json::to_value(DeleteOptions::default()).unwrap(),
            json!({"kind": "DeleteOptions", "apiVersion": "v1"})
        );
    }

    #[test]
    fn empty_strings_count_as_unset_like_omitempty() {
        let opts = ListOptions {
            label_selector: Some(String::new()),
            continue_token: Some(String::new()),
            resource_version: Some(String::new()),
            limit: Some(0),
            ..Default::default()
        };
        assert!(opts.list_params().is_empty());
    }

    #[test]
    fn list_options_render_with_metav1_names_and_skip_watch_only_fields() {
        let opts = ListOptions::default()
            .labels("app=web,tier!=db")
            .fields("metadata.name=x")
            .limit(500)
            .continue_token("abc")
            .resource_version("42")
            .resource_version_match(ResourceVersionMatch::Exact)
            .timeout_seconds(30)
            .bookmarks()
            .send_initial_events(true);
        assert_eq!(
            pairs(&opts.list_params()),
            [
                ("labelSelector", "app=web,tier!=db"),
                ("fieldSelector", "metadata.name=x"),
                ("resourceVersion", "42"),
                ("resourceVersionMatch", "Exact"),
                ("timeoutSeconds", "30"),
                ("limit", "500"),
                ("continue", "abc"),
            ]
        );
        assert_eq!(
            pairs(&opts.watch_params()),
            [
                ("labelSelector", "app=web,tier!=db"),
                ("fieldSelector", "metadata.name=x"),
                ("resourceVersion", "42"),
                ("resourceVersionMatch", "Exact"),
                ("timeoutSeconds", "30"),
                ("allowWatchBookmarks", "true"),
                ("sendInitialEvents", "true"),
            ]
        );
    }

    #[test]
    fn write_options_render_dry_run_all_field_manager_and_validation() {
        let create = CreateOptions::default()
            .dry_run()
            .field_manager("me")
            .field_validation(FieldValidation::Strict);
        let expected = [
            ("dryRun", "All"),
            ("fieldManager", "me"),
            ("fieldValidation", "Strict"),
        ];
        assert_eq!(pairs(&create.params()), expected);
        let update = UpdateOptions::default()
            .dry_run()
            .field_manager("me")
            .field_validation(FieldValidation::Strict);
        assert_eq!(pairs(&update.params()), expected);
        let patch = PatchOptions::apply("me")
            .force()
            .field_validation(FieldValidation::Warn);
        assert_eq!(
            pairs(&patch.params()),
            [
                ("fieldManager", "me"),
                ("fieldValidation", "Warn"),
                ("force", "true")
            ]
        );
        assert_eq!(
            pairs(&GetOptions::default().resource_version("0").params()),
            [("resourceVersion", "0")]
        );
    }

    #[test]
    fn delete_options_render_as_a_metav1_body() {
        let opts = DeleteOptions::default()
            .grace_period_seconds(0)
            .precondition_uid("u-1")
            .precondition_resource_version("7")
            .propagation_policy(PropagationPolicy::Orphan)
            .dry_run();
        assert_eq!(
            serde_json::to_value(&opts).unwrap(),
            json!({
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": "u-1", "resourceVersion": "7"},
                "propagationPolicy": "Orphan",
                "dryRun": ["All"],
            })
        );
        for (policy, text) in [
            (PropagationPolicy::Orphan, "Orphan"),
            (PropagationPolicy::Background, "Background"),
            (PropagationPolicy::Foreground, "Foreground"),
        ] {
            assert_eq!(serde_json::to_value(policy).unwrap(), json!(text));
        }
    }
}
