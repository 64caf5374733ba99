//! Where the members of a ring keep their records: one `coordination.k8s.io/v1` Lease
//! per member ([`LeaseStore`]), or anything else behind [`MemberStore`] (the tests keep
//! them in memory).
//!
//! # Contract
//!
//! - [`list`](MemberStore::list) reads every member of the ring at once, as the server has
//!   them now (a quorum read: never a cache), each with the resourceVersion it was read at.
//! - [`write`](MemberStore::write) writes this member's own record, conditional on the
//!   resourceVersion given (a 409 Conflict writes nothing), or creates it when given none.
//! - A Lease of the ring is `spec.holderIdentity` (empty: released),
//!   `spec.leaseDurationSeconds`, `spec.renewTime` (informational: expiry is judged by the
//!   reader's clock), the label [`RING_LABEL`](super::RING_LABEL) and the annotation
//!   [`HELD_ANNOTATION`](super::HELD_ANNOTATION), the ranges the member holds.
//! - [`first_seen`](MemberStore::first_seen) may say when this member first saw another's
//!   record as it is now, by the local clock, earlier than a list read it: a [`LeaseStore`]
//!   watches the ring's Leases, so a peer's clock starts when its renewal reached the
//!   watch, not at the next round's read. That is never before the write it saw happened
//!   (a watch event follows the write), so judging expiry from it keeps the promises of
//!   [the module](super) and only takes a dead member's ranges sooner.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::task::AbortOnDropHandle;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;

use super::ranges::RangeSet;
use super::{HELD_ANNOTATION, RING_LABEL};
use kubekit_client::clientset::{
    CreateOptions, DeleteOptions, ListOptions, ResourceClient, UpdateOptions,
};
use kubekit_client::rest::{Result, WatchEvent};
use kubekit_runtime::leaderelection::{now_micros, strictly_after};

/// A member's record as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberRecord {
    /// The member's identity; empty once it released.
    pub(crate) holder: String,
    /// How long the others wait after they last saw the record change.
    pub(crate) lease_duration_seconds: i32,
    /// Changes with every renewal (informational otherwise).
    pub(crate) renew: String,
    /// The held ranges' text (see [`RangeSet::parse`]).
    pub(crate) held: String,
}

/// A record with the name of the object holding it and the resourceVersion read.
#[derive(Debug, Clone)]
pub(crate) struct StoredMember {
    pub(crate) name: String,
    pub(crate) record: MemberRecord,
    pub(crate) resource_version: String,
}

/// The members' records of one ring; see the [module docs](self).
pub(crate) trait MemberStore: Send + Sync + 'static {
    /// Every member record of the ring.
    fn list(&self) -> impl Future<Output = Result<Vec<StoredMember>>> + Send;

    /// Writes this member's record (holder, lease duration, held set; the renew time is
    /// the store's), conditional on `resource_version`, or creates it without one.
    /// Returns the new resourceVersion.
    fn write(
        &self,
        holder: &str,
        lease_duration_seconds: i32,
        held: &RangeSet,
        resource_version: Option<&str>,
    ) -> impl Future<Output = Result<String>> + Send;

    /// Deletes the record `name` if it is still at `resource_version`.
    fn delete(&self, name: &str, resource_version: &str)
    -> impl Future<Output = Result<()>> + Send;

    /// Ready when another member may have released its record since this was last
    /// awaited (a hint that makes the member run a round at once, so a released range is
    /// taken without waiting for the retry period; the rounds alone are correct without
    /// it). Several releases between two awaits wake it once.
    fn released(&self) -> impl Future<Output = ()> + Send + use<Self>;

    /// When this member first saw `name`'s record as `record`, if it saw it before a
    /// list read it (see the [module docs](self)); `None` when it cannot tell.
    fn first_seen(&self, name: &str, record: &MemberRecord) -> Option<Instant>;

    /// The name of this member's own record.
    fn own_name(&self) -> &str;

    /// A description for logs.
    fn describe(&self) -> String;
}

/// The members of a ring as Leases in one namespace.
pub(crate) struct LeaseStore {
    leases: ResourceClient<Lease>,
    ring: String,
    name: String,
    /// The last renew time written: the next is strictly later.
    last_renew: Mutex<Option<Timestamp>>,
    /// Notified by [`watch_ring`] when another member's Lease is released.
    released: Arc<Notify>,
    /// What that watch saw of the other members' records, and when.
    sightings: Arc<Sightings>,
    /// That watch, started with the first [`released`](MemberStore::released) and stopped
    /// with the store.
    watch: OnceLock<AbortOnDropHandle<()>>,
}

/// When each other member's record was first seen as it is now, by the local clock.
#[derive(Debug, Default)]
pub(crate) struct Sightings(Mutex<HashMap<String, (MemberRecord, Instant)>>);

impl Sightings {
    /// `name`'s record is `record` now: its clock starts now unless it was already so.
    pub(crate) fn saw(&self, name: &str, record: MemberRecord) {
        let now = Instant::now();
        let mut seen = self.0.lock();
        match seen.get_mut(name) {
            Some((known, _)) if *known == record => {}
            Some(entry) => *entry = (record, now),
            None => {
                seen.insert(name.to_string(), (record, now));
            }
        }
    }

    /// `name`'s record is gone.
    pub(crate) fn forget(&self, name: &str) {
        self.0.lock().remove(name);
    }

    /// When `name`'s record was first seen as `record`, if it was.
    pub(crate) fn first_seen(&self, name: &str, record: &MemberRecord) -> Option<Instant> {
        match self.0.lock().get(name) {
            Some((known, at)) if known == record => Some(*at),
            _ => None,
        }
    }
}

impl LeaseStore {
    /// The ring `ring`'s Leases reached through `leases`; this member's is `name`.
    pub(crate) fn new(leases: ResourceClient<Lease>, ring: &str, name: String) -> Self {
        Self {
            leases,
            ring: ring.to_string(),
            name,
            last_renew: Mutex::new(None),
            released: Arc::new(Notify::new()),
            sightings: Arc::default(),
            watch: OnceLock::new(),
        }
    }

    fn selector(&self) -> String {
        format!("{RING_LABEL}={}", self.ring)
    }

    /// Now, strictly after the last renew time written (microseconds, as a Lease keeps it).
    fn next_renew_time(&self) -> Timestamp {
        let mut last = self.last_renew.lock();
        let time = strictly_after(now_micros(), *last);
        *last = Some(time);
        time
    }
}

fn record_of(lease: &Lease) -> MemberRecord {
    let spec = lease.spec.as_ref();
    MemberRecord {
        holder: spec
            .and_then(|s| s.holder_identity.clone())
            .unwrap_or_default(),
        lease_duration_seconds: spec.and_then(|s| s.lease_duration_seconds).unwrap_or(0),
        renew: spec
            .and_then(|s| s.renew_time.as_ref())
            .map(|t| t.0.to_string())
            .unwrap_or_default(),
        held: lease
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(HELD_ANNOTATION).cloned())
            .unwrap_or_default(),
    }
}

impl MemberStore for LeaseStore {
    async fn list(&self) -> Result<Vec<StoredMember>> {
        let list = self
            .leases
            .list(&ListOptions::default().labels(&self.selector()))
            .await?;
        Ok(list
            .items
            .iter()
            .filter_map(|lease| {
                Some(StoredMember {
                    name: lease.metadata.name.clone()?,
                    record: record_of(lease),
                    resource_version: lease.metadata.resource_version.clone().unwrap_or_default(),
                })
            })
            .collect())
    }

    async fn write(
        &self,
        holder: &str,
        lease_duration_seconds: i32,
        held: &RangeSet,
        resource_version: Option<&str>,
    ) -> Result<String> {
        let mut lease = Lease::default();
        lease.metadata.name = Some(self.name.clone());
        lease.metadata.labels = Some([(RING_LABEL.to_string(), self.ring.clone())].into());
        lease.metadata.annotations = Some([(HELD_ANNOTATION.to_string(), held.to_string())].into());
        lease.metadata.resource_version = resource_version.map(str::to_string);
        let now = MicroTime(self.next_renew_time());
        lease.spec = Some(LeaseSpec {
            holder_identity: (!holder.is_empty()).then(|| holder.to_string()),
            lease_duration_seconds: Some(lease_duration_seconds),
            renew_time: Some(now.clone()),
            acquire_time: Some(now),
            ..LeaseSpec::default()
        });
        let written = match resource_version {
            // The precondition: the API server answers 409 Conflict if the Lease moved on.
            Some(_) => {
                self.leases
                    .update(&lease, &UpdateOptions::default())
                    .await?
            }
            None => {
                self.leases
                    .create(&lease, &CreateOptions::default())
                    .await?
            }
        };
        Ok(written.metadata.resource_version.unwrap_or_default())
    }

    async fn delete(&self, name: &str, resource_version: &str) -> Result<()> {
        let opts = DeleteOptions::default().precondition_resource_version(resource_version);
        self.leases.delete(name, &opts).await.map(|_| ())
    }

    fn released(&self) -> impl Future<Output = ()> + Send + use<> {
        self.watch.get_or_init(|| {
            let task = watch_ring(
                self.leases.clone(),
                self.selector(),
                self.name.clone(),
                Arc::clone(&self.released),
                Arc::clone(&self.sightings),
            );
            AbortOnDropHandle::new(tokio::spawn(task))
        });
        let released = Arc::clone(&self.released);
        async move { released.notified().await }
    }

    fn first_seen(&self, name: &str, record: &MemberRecord) -> Option<Instant> {
        self.sightings.first_seen(name, record)
    }

    fn own_name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> String {
        format!(
            "{}/{} (ring {})",
            self.leases.namespace().unwrap_or_default(),
            self.name,
            self.ring
        )
    }
}

/// Watches the ring's Leases (selected by `selector`) for as long as it runs: records in
/// `sightings` when each one but `own` changed, and notifies `released` whenever one is
/// written released (no holder). A watch that ends is started again a second later; one
/// that cannot start (no `watch` permission, say) is retried after 1 s, doubling to 60 s.
/// What it misses meanwhile the rounds see.
async fn watch_ring(
    leases: ResourceClient<Lease>,
    selector: String,
    own: String,
    released: Arc<Notify>,
    sightings: Arc<Sightings>,
) {
    let opts = ListOptions::default()
        .labels(&selector)
        .timeout_seconds(300);
    let mut backoff = Duration::from_secs(1);
    loop {
        match leases.watch(&opts).await {
            Ok(mut events) => {
                backoff = Duration::from_secs(1);
                while let Some(event) = events.next().await {
                    let (lease, deleted) = match event {
                        Ok(WatchEvent::Added(lease) | WatchEvent::Modified(lease)) => {
                            (lease, false)
                        }
                        Ok(WatchEvent::Deleted(lease)) => (lease, true),
                        Ok(_) => continue,
                        Err(e) => {
                            tracing::debug!(%selector, error = %e, "watching the shard ring's leases");
                            break;
                        }
                    };
                    let Some(name) = lease.metadata.name.as_deref().filter(|n| *n != own) else {
                        continue;
                    };
                    if deleted {
                        sightings.forget(name);
                        continue;
                    }
                    let record = record_of(&lease);
                    let release = record.holder.is_empty();
                    sightings.saw(name, record);
                    if release {
                        released.notify_one();
                    }
                }
            }
            Err(e) => {
                tracing::warn!(%selector, error = %e, retry_in = ?backoff,
                    "could not watch the shard ring's leases: released ranges are taken at the \
                     next retry period instead of at once, dead members' up to a retry period later");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(60));
                continue;
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
