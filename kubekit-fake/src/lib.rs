//! kubekit-fake: a small Kubernetes API server, in process, speaking the real HTTP API on
//! a loopback port — for controller tests that run in milliseconds, in plain `cargo test`,
//! with any client (kubekit's clients and informers, kube-rs, kubectl).
//!
//! It is a dev-dependency: nothing in `kubekit` itself depends on it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use kubekit::clientset::Clientset;
//! use kubekit_fake::FakeApiServer;
//!
//! let server = FakeApiServer::start().await?;
//! let clientset = Clientset::new(&server.config())?;
//! // ... run the controller against `clientset`, assert on what it wrote ...
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! # What it serves
//!
//! - Resources: namespaces, configmaps, secrets, pods, services, events (core and
//!   `events.k8s.io`, one store seen through both APIs), serviceaccounts, deployments,
//!   replicasets, statefulsets, daemonsets, controllerrevisions, jobs, cronjobs, leases,
//!   selfsubjectaccessreviews and selfsubjectrulesreviews (create only, nothing stored;
//!   everything is allowed),
//!   customresourcedefinitions, and the resources of every CRD created through it (served
//!   at once: the CRD is created `NamesAccepted` and `Established`, as the real server
//!   reports a moment later; `kubectl wait --for=condition=Established` returns).
//!   Objects are schema-less JSON, no conversion between versions. What is defaulted and
//!   checked, each compared with the real server in the differential suite: names (a
//!   DNS-1123 subdomain; a label for Namespaces and Services; `<plural>.<group>` for
//!   CRDs), a body's `apiVersion` and `kind` against the URL, the maps of strings of a
//!   built-in body (labels, annotations, a ConfigMap's data), a Namespace's name label,
//!   finalizer and phase, a Secret's `stringData` and default `type`, a Service's
//!   defaults and allocated cluster IP and node ports, immutable
//!   ConfigMaps and Secrets, a Secret's type, a Pod's containers (some, named apart, each
//!   with an image), a Deployment's, ReplicaSet's, StatefulSet's or DaemonSet's selector
//!   (present, not empty, matching its template's labels, immutable; a StatefulSet's
//!   service name and pod management policy immutable too),
//!   the defaults of StatefulSets, DaemonSets, Jobs and CronJobs (see `workloads`), a
//!   Job's generated selector and labels, its restart policy and its immutable selector, a
//!   CronJob's schedule (present, of valid cron syntax, no time zone) and its Jobs'
//!   restart policy, a DaemonSet's template
//!   generation, a ControllerRevision's data and revision.
//! - Verbs: create (`generateName`, `uid`, `creationTimestamp`, `generation`), get, list
//!   (label selectors; field selectors on the fields the real server selects on: the
//!   metadata, a Pod's `spec.nodeName`, `status.phase`, ..., an Event's `involvedObject.*`,
//!   a Secret's `type`, a Service's `spec.type`, with its errors for the others; `limit` and
//!   `continue` over one consistent snapshot, `resourceVersion` and
//!   `resourceVersionMatch`), watch (see below), update (409 on a stale
//!   resourceVersion), the status subresource, the scale subresource (`autoscaling/v1`
//!   `Scale` of Deployments, ReplicaSets, StatefulSets and CRDs that declare one: get,
//!   update, patch;
//!   `kubectl scale`), JSON patch and JSON merge patch, delete
//!   (preconditions, finalizers, garbage collection through ownerReferences: background,
//!   foreground, orphan; a Job without a policy orphans, with the real server's warning),
//!   deletecollection (not of namespaces: `405`, as on the real server).
//! - Strategic merge patch of the built-in types: list fields merge by the merge keys of
//!   the Kubernetes API types (containers, init and ephemeral containers, volumes,
//!   imagePullSecrets by `name`; container ports by `containerPort`, Service ports by
//!   `port`; env by `name`; volumeMounts by `mountPath`; ownerReferences by `uid`;
//!   conditions by `type`; finalizers as a set; ...), other lists (tolerations, args, ...)
//!   are replaced; the directives `$patch: replace|delete` (maps and list items),
//!   `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` and `$retainKeys`, with
//!   the real server's order of merged lists and its errors for malformed patches. A
//!   strategic merge patch of a custom resource is `415`, as on the real server.
//! - Server-side apply (`application/apply-patch+yaml`, YAML or JSON, `fieldManager`
//!   required, `force`; `kubectl apply --server-side`) and `metadata.managedFields` on
//!   every write: lists and maps merge as the pinned release's OpenAPI declares them
//!   (generated into `apply_schema.json` by `kubekit-fake-gen`; for custom resources, the
//!   CRD's schema), a manager's fields it no longer applies are removed, a value another
//!   manager owns is a `409 Conflict` with the real server's message unless forced, and
//!   creates, updates and patches own what they add or change (the manager is
//!   `fieldManager`, else the user agent up to its first `/`); beyond ten `Update`
//!   managers the oldest merge into `ancient-changes`. Not done: apply to the scale
//!   subresource.
//! - Watch from a resourceVersion with selectors, `sendInitialEvents` streaming lists (a
//!   list that asks for `sendInitialEvents` is `422`, as on the real server), and
//!   `410 Expired` beyond the last [`HISTORY_LIMIT`] changes of a resource (or after
//!   [`FakeApiServer::compact`]).
//! - `dryRun=All` on every write (also `dryRun: [All]` in DeleteOptions): the answer is
//!   as if written (a created object has no resourceVersion, a changed one keeps its
//!   stored one), nothing is stored or watched; `kubectl diff` works.
//! - Errors are `metav1.Status` objects with the real server's codes, reasons and messages.
//! - Discovery, legacy and aggregated (`apidiscovery.k8s.io/v2` for `/api` and `/apis`),
//!   with verbs, scope, short names, categories and the `scale` and `status` subresources
//!   as the real
//!   server gives them, CRDs included.
//! - A minimal OpenAPI v3 (`/openapi/v3`: each resource's `patch` operation, the real
//!   server's schemas of the built-in kinds, and the schemas of custom resources as the
//!   real server publishes their CRDs'): enough for `kubectl get/apply/label/delete` with
//!   its default validation, which it then leaves to the server (`fieldValidation`
//!   applies to unknown fields, see below), and for `kubectl explain`. `/openapi/v2` is
//!   `404`.
//! - Unknown fields of a create, update or patch (fields the pinned release's types, or a
//!   CRD's schema, do not declare) are dropped with a `Warning: unknown field "spec.x"`
//!   each (`fieldValidation=Warn`, the default), refused with the real server's `400`
//!   (`Strict`), or dropped silently (`Ignore`).
//! - Custom resources are checked against their CRD's structural schema: unknown fields
//!   pruned (as above); defaults filled; types
//!   (`x-kubernetes-int-or-string`, `nullable`), `required`, `enum`, bounds, lengths,
//!   `pattern`, item and property counts, string `format`s (see `formats`) validated
//!   with the real server's `422`s. Not checked: some formats (`uri`, `email`,
//!   `duration`, ...), `multipleOf`, `uniqueItems`, `allOf`/`anyOf`/`oneOf`/`not`, CEL
//!   rules.
//! - Protobuf: a create or update of a built-in kind may send protobuf, and a client that
//!   asks for protobuf first (as kubekit's typed clients and client-go do) gets objects,
//!   lists, errors and watch events of built-in kinds in protobuf, through
//!   `kubekit_protobuf`'s JSON codecs; custom resources and tables are JSON.
//! - Server-side tables (what `kubectl get` prints) for every served kind, custom
//!   resources by their printer columns (see `tables`).
//! - `/version`, `/healthz`, `/livez`, `/readyz`.
//!
//! The differential suite in `kubekit-fake/tests/differential.rs` runs the same scenarios
//! against this server and the real kube-apiserver and requires the same answers.
//!
//! # What it does not do
//!
//! No authentication or authorization (every request is allowed: a
//! `SelfSubjectAccessReview` answers `allowed`, `kubectl auth can-i` says yes, a
//! `SelfSubjectRulesReview` allows every verb on everything), no admission, no
//! other defaulting or validation (empty lists and maps are kept where the real server's
//! encoding leaves them out), no OpenAPI v2, no
//! YAML bodies other than apply configurations, no tables in watches (`kubectl get -w` prints names
//! and ages), no periodic watch
//! bookmarks, no controllers (a Deployment, StatefulSet, DaemonSet or Job makes no Pods, a
//! Job gets no status) other than garbage collection
//! and namespace deletion, which happen at once.

mod crd_schema;
mod cron;
mod defaults;
mod discovery;
mod events;
mod faults;
mod fieldset;
mod formats;
mod managed;
mod openapi;
mod resources;
mod scale;
mod selectors;
mod server;
mod smp;
mod status;
mod store;
mod tables;
mod watch;
mod workloads;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch as notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use faults::RequestMatch;
pub use resources::ResourceInfo;
pub use status::ApiError;
pub use store::HISTORY_LIMIT;

use server::Shared;
use store::Store;

/// The namespaces every cluster starts with.
const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// A running fake API server. Dropping it stops it (and every task it started);
/// [`shutdown`](Self::shutdown) also waits until they have ended.
#[derive(Debug)]
pub struct FakeApiServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl FakeApiServer {
    /// Starts a server on a free port of 127.0.0.1 (plain HTTP), with the namespaces
    /// `default`, `kube-system`, `kube-public` and `kube-node-lease`, and writes a
    /// kubeconfig for it into a directory of its own under the system's temporary
    /// directory (removed when the server is dropped).
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let mut store = Store::new();
        let namespaces = store
            .lookup("", "v1", "namespaces")
            .ok_or_else(|| std::io::Error::other("namespaces are not built in"))?;
        for ns in INITIAL_NAMESPACES {
            store
                .create(&namespaces, "", json!({"metadata": {"name": ns}}), None)
                .map_err(|e| std::io::Error::other(e.message))?;
        }
        let shared = Arc::new(Shared {
            changed: notify::Sender::new(store.resource_version()),
            store: Mutex::new(store),
            faults: faults::Faults::new(),
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
            address: address.to_string(),
        });
        let dir = std::env::temp_dir().join(format!(
            "kubekit-fake-{}-{}",
            std::process::id(),
            address.port()
        ));
        std::fs::create_dir_all(&dir)?;
        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_yaml(address))?;
        shared.tasks.spawn(accept(listener, shared.clone()));
        Ok(Self {
            address,
            shared,
            dir,
            kubeconfig,
        })
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Its URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// A kubekit configuration for it, with client-side rate limiting off (the server is
    /// in process; set it back with `with_rate_limit` to test throttling).
    pub fn config(&self) -> kubekit::rest::RestConfig {
        kubekit::rest::RestConfig::from_url(&self.url())
            .expect("a loopback http URL is a valid server URL")
            .with_rate_limit(-1.0, 0)
    }

    /// The path of a kubeconfig for it (context `kubekit-fake`, namespace `default`, no
    /// credentials), for kubectl or any other client.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// Drops the change history of every resource, as etcd's compaction does: watches and
    /// exact lists from a resourceVersion older than now get `410 Expired`.
    pub fn compact(&self) {
        self.shared.store.lock().compact();
    }

    /// The current resourceVersion (of the last write to any resource).
    pub fn resource_version(&self) -> u64 {
        self.shared.store.lock().resource_version()
    }

    /// Answers the next `times` requests matching `on` with `error` instead of serving
    /// them.
    pub fn fail_next(&self, times: usize, on: RequestMatch, error: ApiError) {
        self.shared.faults.fail(on, times, error);
    }

    /// Holds every request matching `on` for `by` before serving it, until
    /// [`clear_faults`](Self::clear_faults).
    pub fn delay(&self, on: RequestMatch, by: Duration) {
        self.shared.faults.delay(on, by);
    }

    /// Ends every open watch (the client sees its stream end, as when a connection drops).
    pub fn cut_watches(&self) {
        self.shared.faults.cut_watches();
    }

    /// Answers the next `times` watches with `410 Expired` (an `ERROR` event), whatever
    /// resourceVersion they ask for — as when a client has fallen too far behind.
    pub fn expire_next_watches(&self, times: usize) {
        self.shared.faults.expire_watches(times);
    }

    /// Removes every failure and delay rule and pending watch expiry.
    pub fn clear_faults(&self) {
        self.shared.faults.clear();
    }

    /// Stops serving and waits until every connection, watch and task has ended.
    pub async fn shutdown(self) {
        self.shared.cancel.cancel();
        self.shared.tasks.close();
        self.shared.tasks.wait().await;
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
        self.shared.tasks.close();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn kubeconfig_yaml(address: SocketAddr) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kubekit-fake\n  cluster:\n    server: http://{address}\n\
         contexts:\n- name: kubekit-fake\n  context:\n    cluster: kubekit-fake\n    user: kubekit-fake\n    namespace: default\n\
         current-context: kubekit-fake\nusers:\n- name: kubekit-fake\n  user: {{}}\n"
    )
}

/// Accepts connections until the server is cancelled; each is served on a task of the
/// server's tracker, closed gracefully on cancellation.
async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let accepted = tokio::select! {
            () = shared.cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, say: wait a moment rather than spin.
                tracing::warn!("kubekit-fake: accepting a connection: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let conn_shared = shared.clone();
        shared.tasks.spawn(async move {
            let service_shared = conn_shared.clone();
            let service = service_fn(move |req| {
                let shared = service_shared.clone();
                async move { Ok::<_, Infallible>(server::handle(shared, req).await) }
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                () = conn_shared.cancel.cancelled() => connection.as_mut().graceful_shutdown(),
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!("kubekit-fake: a connection failed: {e}");
                    }
                    return;
                }
            }
            let _ = connection.await;
        });
    }
}
