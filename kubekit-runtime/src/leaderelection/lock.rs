//! The resource lock under leader election: a [`LeaderElectionRecord`] stored in some API
//! object, read and written with optimistic concurrency (client-go's
//! `tools/leaderelection/resourcelock`).
//!
//! # Contract
//!
//! - [`Lock`] is three operations on one record: [`get`](Lock::get) (with the
//!   resourceVersion it was read at), [`create`](Lock::create) (fails if it exists) and
//!   [`update`](Lock::update), which **must** be conditional on the resourceVersion it is
//!   given: if the object changed since, the write fails with a 409 Conflict
//!   ([`Error::is_conflict`](kubekit_client::rest::Error::is_conflict)) and nothing is written.
//!   The elector relies on that precondition for every write; a lock without it is not a
//!   lock.
//! - [`LeaseLock`] is the lock every Kubernetes component uses: a
//!   `coordination.k8s.io/v1` `Lease`. Its update is a PUT carrying
//!   `metadata.resourceVersion`, so the API server enforces the precondition. Fields of the
//!   Lease that the record does not describe (labels, annotations, `preferredHolder`,
//!   `strategy`) are kept as last read.
//! - Times in the record are informational: the elector never compares them with its own
//!   clock (see the [module docs](super)).

use std::fmt;
use std::future::Future;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;

use kubekit_client::clientset::{
    Clientset, CreateOptions, GetOptions, ResourceClient, UpdateOptions,
};
use kubekit_client::rest::Result;

/// What a lock stores: who holds the lease and for how long (client-go's
/// `LeaderElectionRecord`, the spec of a `Lease`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// The holder's identity; empty when nobody holds the lease (e.g. after a release).
    pub holder_identity: String,
    /// How long, in seconds, the other candidates wait after they last saw the record
    /// change before they may take the lease.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lease (the holder's wall clock; informational).
    pub acquire_time: Option<Timestamp>,
    /// When the holder last renewed the lease (the holder's wall clock; informational, never
    /// used to judge expiry).
    pub renew_time: Option<Timestamp>,
    /// How many times the lease changed hands.
    pub leader_transitions: i32,
}

/// A [`LeaderElectionRecord`] with the resourceVersion of the object it was read from or
/// written to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionedRecord {
    /// The record.
    pub record: LeaderElectionRecord,
    /// The resourceVersion of the object holding it: the precondition of the next update.
    pub resource_version: String,
}

/// A resource lock: one [`LeaderElectionRecord`] with optimistic concurrency.
///
/// Implemented by [`LeaseLock`]; implement it yourself to keep the record elsewhere, or to
/// wrap a lock (to count its calls, say). Every method may be called from any task; none
/// is called concurrently with another by one elector.
///
/// # Example
///
/// An in-memory lock (for one process; it shows the contract, above all the
/// resourceVersion precondition of `update`), with an elector running on it:
///
/// ```
/// use std::sync::Mutex;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
/// use kubekit::leaderelection::{
///     LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, Lock,
///     RunOutcome, VersionedRecord,
/// };
/// use kubekit::rest::{Error, Result};
/// use tokio_util::sync::CancellationToken;
///
/// #[derive(Default)]
/// struct MemoryLock(Mutex<Option<VersionedRecord>>);
///
/// fn refuse(reason: &str, code: i32) -> Error {
///     let status = Status { code: Some(code), reason: Some(reason.into()), ..Status::default() };
///     Error::from_status("PUT", "memory", status)
/// }
///
/// impl Lock for MemoryLock {
///     async fn get(&self) -> Result<Option<VersionedRecord>> {
///         Ok(self.0.lock().unwrap().clone())
///     }
///     async fn create(&self, record: &LeaderElectionRecord) -> Result<VersionedRecord> {
///         let mut slot = self.0.lock().unwrap();
///         if slot.is_some() {
///             return Err(refuse("AlreadyExists", 409));
///         }
///         let stored = VersionedRecord { record: record.clone(), resource_version: "1".into() };
///         *slot = Some(stored.clone());
///         Ok(stored)
///     }
///     async fn update(&self, record: &LeaderElectionRecord, rv: &str) -> Result<VersionedRecord> {
///         let mut slot = self.0.lock().unwrap();
///         let current = slot.as_ref().ok_or_else(|| refuse("NotFound", 404))?;
///         if current.resource_version != rv {
///             return Err(refuse("Conflict", 409)); // someone else wrote: never overwrite
///         }
///         let next: u64 = rv.parse().unwrap();
///         let stored = VersionedRecord {
///             record: record.clone(),
///             resource_version: (next + 1).to_string(),
///         };
///         *slot = Some(stored.clone());
///         Ok(stored)
///     }
///     fn name(&self) -> &str {
///         "memory"
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let config = LeaderElectionConfig::new(MemoryLock::default())
///     .identity("replica-1")
///     .release_on_cancel(true);
/// let elector = LeaderElector::new(config).unwrap();
/// let outcome = elector
///     .run(
///         CancellationToken::new(),
///         LeaderCallbacks::new(|_leading: CancellationToken| async {
///             println!("leading: doing the work once");
///         }),
///     )
///     .await;
/// // The work returned, so the elector released the lease and returned.
/// assert_eq!(outcome, RunOutcome::WorkFinished);
/// assert!(!elector.is_leader());
/// # }
/// ```
pub trait Lock: Send + Sync + 'static {
    /// The record and the resourceVersion it was read at; `None` if the object does not
    /// exist.
    fn get(&self) -> impl Future<Output = Result<Option<VersionedRecord>>> + Send;

    /// Creates the object holding `record`; fails (409 `AlreadyExists`) if it exists.
    fn create(
        &self,
        record: &LeaderElectionRecord,
    ) -> impl Future<Output = Result<VersionedRecord>> + Send;

    /// Replaces the record, **only if** the object is still at `resource_version`;
    /// otherwise fails with 409 Conflict and writes nothing.
    fn update(
        &self,
        record: &LeaderElectionRecord,
        resource_version: &str,
    ) -> impl Future<Output = Result<VersionedRecord>> + Send;

    /// The lock object's name: the default `name` label of the elector's metric.
    fn name(&self) -> &str;

    /// A description for logs, e.g. `namespace/name`.
    fn describe(&self) -> String {
        self.name().to_owned()
    }
}

/// A [`Lock`] on a `coordination.k8s.io/v1` `Lease` (client-go's `LeaseLock`).
///
/// ```no_run
/// # async fn demo() -> kubekit::rest::Result<()> {
/// use kubekit::clientset::Clientset;
/// use kubekit::leaderelection::LeaseLock;
///
/// let clientset = Clientset::new(&kubekit::rest::RestConfig::infer().await?)?;
/// let lock = LeaseLock::new(clientset.coordination_v1().leases("kube-system"), "my-controller");
/// // or: LeaseLock::from_clientset(&clientset, "kube-system", "my-controller")
/// # let _ = lock;
/// # Ok(())
/// # }
/// ```
pub struct LeaseLock {
    leases: ResourceClient<Lease>,
    name: String,
    /// The Lease as last read or written: the base of the next update, so fields the
    /// record does not cover survive. Never held across an `.await`.
    last: Mutex<Option<Lease>>,
}

impl fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseLock")
            .field("namespace", &self.leases.namespace())
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl LeaseLock {
    /// A lock on the Lease `name` reached through `leases`, a client of Leases in one
    /// namespace (`clientset.coordination_v1().leases(ns)`).
    pub fn new(leases: ResourceClient<Lease>, name: impl Into<String>) -> Self {
        Self {
            leases,
            name: name.into(),
            last: Mutex::new(None),
        }
    }

    /// A lock on the Lease `namespace/name`.
    pub fn from_clientset(clientset: &Clientset, namespace: &str, name: impl Into<String>) -> Self {
        Self::new(clientset.coordination_v1().leases(namespace), name)
    }

    /// The Lease client underneath.
    pub fn leases(&self) -> &ResourceClient<Lease> {
        &self.leases
    }

    /// The Lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Remembers `lease` and returns its record.
    fn keep(&self, lease: Lease) -> VersionedRecord {
        let versioned = VersionedRecord {
            record: lease
                .spec
                .as_ref()
                .map(record_from_spec)
                .unwrap_or_default(),
            resource_version: lease.metadata.resource_version.clone().unwrap_or_default(),
        };
        *self.last.lock() = Some(lease);
        versioned
    }
}

impl Lock for LeaseLock {
    async fn get(&self) -> Result<Option<VersionedRecord>> {
        match self.leases.get(&self.name, &GetOptions::default()).await {
            Ok(lease) => Ok(Some(self.keep(lease))),
            Err(e) if e.is_not_found() => {
                *self.last.lock() = None;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<VersionedRecord> {
        let mut lease = Lease::default();
        lease.metadata.name = Some(self.name.clone());
        lease.spec = Some(spec_from_record(record, None));
        let created = self
            .leases
            .create(&lease, &CreateOptions::default())
            .await?;
        Ok(self.keep(created))
    }

    async fn update(
        &self,
        record: &LeaderElectionRecord,
        resource_version: &str,
    ) -> Result<VersionedRecord> {
        let base = self
            .last
            .lock()
            .clone()
            .filter(|l| l.metadata.resource_version.as_deref() == Some(resource_version));
        let mut lease = base.unwrap_or_default();
        lease.metadata.name = Some(self.name.clone());
        // The precondition: the API server answers 409 Conflict if the Lease moved on.
        lease.metadata.resource_version = Some(resource_version.to_owned());
        lease.spec = Some(spec_from_record(record, lease.spec.as_ref()));
        let updated = self
            .leases
            .update(&lease, &UpdateOptions::default())
            .await?;
        Ok(self.keep(updated))
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> String {
        match self.leases.namespace() {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The record a Lease's spec describes (client-go's `LeaseSpecToLeaderElectionRecord`).
pub(crate) fn record_from_spec(spec: &LeaseSpec) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: spec.holder_identity.clone().unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
        acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
        renew_time: spec.renew_time.as_ref().map(|t| t.0),
        leader_transitions: spec.lease_transitions.unwrap_or(0),
    }
}

/// The Lease spec for `record`, keeping `preferredHolder` and `strategy` from `base`
/// (client-go's `LeaderElectionRecordToLeaseSpec`). An empty holder is written as no
/// holder.
pub(crate) fn spec_from_record(
    record: &LeaderElectionRecord,
    base: Option<&LeaseSpec>,
) -> LeaseSpec {
    LeaseSpec {
        holder_identity: (!record.holder_identity.is_empty())
            .then(|| record.holder_identity.clone()),
        lease_duration_seconds: Some(record.lease_duration_seconds),
        acquire_time: record.acquire_time.map(MicroTime),
        renew_time: record.renew_time.map(MicroTime),
        lease_transitions: Some(record.leader_transitions),
        preferred_holder: base.and_then(|b| b.preferred_holder.clone()),
        strategy: base.and_then(|b| b.strategy.clone()),
    }
}
