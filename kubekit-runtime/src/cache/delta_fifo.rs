//! [`DeltaFifo`]: the queue between a reflector and an informer's processing (client-go's
//! `DeltaFIFO`).
//!
//! # Contract
//!
//! - Each key is queued at most once; what happened to it since it was last popped is
//!   kept as a list of [`Delta`]s, oldest first, and [`pop`](DeltaFifo::pop) hands them
//!   all to the process function together. Keys are popped in the order they were first
//!   queued.
//! - Two consecutive `Deleted` deltas collapse into one, keeping the real object over a
//!   tombstone.
//! - [`replace`](DeltaFifo::replace) (a relist) queues `Replaced` for every listed object
//!   and `Deleted` with a [`DeletedFinalStateUnknown`] tombstone for every key the known
//!   objects (the informer's indexer) or the queue hold that the list does not. A relist
//!   that arrives in parts (pages, a streaming list's initial events) is queued part by
//!   part ([`replace_begin`](DeltaFifo::replace_begin), [`replace_part`](DeltaFifo::replace_part),
//!   [`replace_end`](DeltaFifo::replace_end)): the consumer gets each part at once, and
//!   the tombstones come at the end. Unlike client-go, which replaces at the end of the
//!   list, a relist is thus never held twice (the list, and the cache it replaces), and
//!   while it runs the consumer's cache holds some objects at the list's version and the
//!   others at the version they had, as during a burst of watch events.
//! - [`resync`](DeltaFifo::resync) queues `Sync` for every known object whose key is not
//!   already queued.
//! - [`delete`](DeltaFifo::delete) of an object neither known nor queued is dropped (it was
//!   already deleted by a relist).
//! - [`has_synced`](DeltaFifo::has_synced) becomes true once the first `replace` has
//!   ended (or any add/update/delete was made before it) and every item of that first
//!   population has been popped *and processed*; items popped before its end are part of
//!   the initial list too.
//! - After [`close`](DeltaFifo::close), `pop` keeps handing out what is queued and returns
//!   [`Closed`] once the queue is empty.
//! - Unlike client-go, `replace` also tombstones keys that are only queued (added since the
//!   last pop, never processed) and missing from the list, so an object created and deleted
//!   while the watch was down never lingers in the consumer's cache.
//! - All methods take `&self` and may be called from any task; locks are never held
//!   across `.await` nor while the process function runs.

use std::collections::VecDeque;
use std::marker::PhantomData;

use futures_util::future::BoxFuture;
use hashbrown::{HashMap, HashSet};
use std::sync::Arc;

use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use super::key::{DeletedFinalStateUnknown, KeyError, MaybeTombstone, key_of};
use super::object::{AnyObject, Object, erase_tombstone, typed, typed_tombstone};
use super::reflector::{ReflectorStore, WATCH_BACKLOG_LIMIT};
use super::store::Indexer;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// Created (or first seen by a watch).
    Added,
    /// Changed.
    Updated,
    /// Deleted; the object is its last state, or a tombstone.
    Deleted,
    /// Seen in a relist (the object may or may not have changed).
    Replaced,
    /// Periodic resync: the object did not change.
    Sync,
}

/// One change to one object.
#[derive(Debug, Clone)]
pub struct Delta<K: ?Sized> {
    /// What happened.
    pub kind: DeltaType,
    /// The object after it happened (for `Deleted`, its last state or a tombstone).
    pub object: MaybeTombstone<K>,
}

/// Everything that happened to one key since it was last popped.
#[derive(Debug, Clone)]
pub struct Deltas<K: ?Sized> {
    /// The key.
    pub key: String,
    /// The changes, oldest first; never empty.
    pub deltas: Vec<Delta<K>>,
    /// Whether this key was part of the first population (the initial list).
    pub is_in_initial_list: bool,
}

impl<K: ?Sized> Deltas<K> {
    /// The most recent change.
    pub fn newest(&self) -> &Delta<K> {
        self.deltas
            .last()
            .expect("a popped key always has at least one delta")
    }
}

/// `pop` on a closed, drained queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("DeltaFifo: the queue is closed")]
pub struct Closed;

struct State {
    items: HashMap<String, Vec<Delta<dyn AnyObject>>>,
    queue: VecDeque<String>,
    populated: bool,
    initial_population: usize,
    /// The keys listed so far by a replace in parts, until it ends.
    listing: Option<HashSet<String>>,
    /// Replaces ended so far.
    replaces: u64,
    /// Pops (processed) still needed before every key queued at the last replace's end
    /// has been processed.
    replace_pending: usize,
    closed: bool,
}

/// The reflector → informer queue; see the [module docs](self).
///
/// Whatever `K` is, the queue is one type-erased core compiled once; `K`'s objects are
/// taken and handed out as they are, in their `Arc`s.
pub struct DeltaFifo<K> {
    core: Arc<Core>,
    _type: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.core.fmt(f)
    }
}

/// The objects a queue's consumer holds (the informer's indexer), whatever their type.
trait Known: Send + Sync {
    fn get(&self, key: &str) -> Option<Object>;
    fn contains(&self, key: &str) -> bool;
    fn list_entries(&self) -> Vec<(String, Object)>;
}

impl<K: Resource + Send + Sync + 'static> Known for Indexer<K> {
    fn get(&self, key: &str) -> Option<Object> {
        Indexer::get(self, key).map(|obj| obj as Object)
    }
    fn contains(&self, key: &str) -> bool {
        Indexer::contains(self, key)
    }
    fn list_entries(&self) -> Vec<(String, Object)> {
        Indexer::list_entries(self)
            .into_iter()
            .map(|(key, obj)| (key, obj as Object))
            .collect()
    }
}

/// The deltas of a queue of `K`, as `K` (the queue holds nothing else).
fn typed_deltas<K: Send + Sync + 'static>(deltas: Deltas<dyn AnyObject>) -> Deltas<K> {
    Deltas {
        key: deltas.key,
        deltas: deltas
            .deltas
            .into_iter()
            .filter_map(|d| {
                Some(Delta {
                    kind: d.kind,
                    object: typed_tombstone(d.object)?,
                })
            })
            .collect(),
        is_in_initial_list: deltas.is_in_initial_list,
    }
}

impl<K: Resource + Send + Sync + 'static> DeltaFifo<K> {
    /// A queue whose `replace`, `resync` and `delete` consult `known` (the informer's
    /// indexer) for the objects the consumer already has.
    pub fn new(known: Option<Arc<Indexer<K>>>) -> Self {
        Self {
            core: Arc::new(Core::new(known.map(|k| k as Arc<dyn Known>))),
            _type: PhantomData,
        }
    }

    /// The object the consumer holds under `key` (from the known-objects indexer).
    pub fn known_object(&self, key: &str) -> Option<Arc<K>> {
        typed(self.core.known.as_ref()?.get(key)?)
    }

    /// Queues an `Added` delta.
    pub fn add(&self, obj: Arc<K>) -> Result<(), KeyError> {
        self.core.push(DeltaType::Added, obj)
    }

    /// Queues an `Updated` delta.
    pub fn update(&self, obj: Arc<K>) -> Result<(), KeyError> {
        self.core.push(DeltaType::Updated, obj)
    }

    /// Queues a `Deleted` delta, unless the object is neither known nor queued.
    pub fn delete(&self, obj: Arc<K>) -> Result<(), KeyError> {
        self.core.delete(obj)
    }

    /// A relist: `Replaced` for every object of `list`, and a tombstoned `Deleted` for every
    /// key known or queued that `list` lacks. Objects without a name are skipped and
    /// counted in the returned error list.
    pub fn replace(&self, list: Vec<Arc<K>>) -> Vec<KeyError> {
        self.replace_begin();
        let errors = self.replace_part(list);
        self.replace_end();
        errors
    }

    /// Starts a relist received in parts (the pages of a list, the initial events of a
    /// streaming list): [`replace_part`](Self::replace_part) for each part, then
    /// [`replace_end`](Self::replace_end). A replace begun earlier and never ended is
    /// abandoned: its parts stay queued, and what the new one does not list is deleted
    /// when it ends.
    pub fn replace_begin(&self) {
        self.core.replace_begin();
    }

    /// Queues `Replaced` for every object of one part of a relist: they reach the consumer
    /// at once, before the list is complete (during the first list they are popped as part
    /// of the initial list, and the queue is not synced before the end). Objects without
    /// a name are skipped and counted in the returned error list.
    pub fn replace_part(&self, part: Vec<Arc<K>>) -> Vec<KeyError> {
        self.core
            .replace_part(part.into_iter().map(|obj| obj as Object).collect())
    }

    /// A key an unfinished relist listed is gone again (a `DELETED` event among a streaming
    /// list's initial events): the end of the relist deletes it, as any key it lacks.
    pub fn replace_forget(&self, key: &str) {
        self.core.replace_forget(key);
    }

    /// Ends a relist received in parts: a tombstoned `Deleted` for every key known or
    /// queued that the list lacks; the first relist to end makes the queue populated.
    pub fn replace_end(&self) {
        self.core.replace_end();
    }

    /// Queues `Sync` for every known object whose key is not queued already.
    pub fn resync(&self) {
        self.core.resync();
    }

    /// Puts `deltas` back (for a retry after a failed process), unless the key has been
    /// queued again meanwhile.
    pub fn add_if_not_present(&self, deltas: Deltas<K>) {
        self.core.add_if_not_present(Deltas {
            key: deltas.key,
            deltas: deltas
                .deltas
                .into_iter()
                .map(|d| Delta {
                    kind: d.kind,
                    object: erase_tombstone(d.object),
                })
                .collect(),
            is_in_initial_list: deltas.is_in_initial_list,
        });
    }

    /// Waits for a queued key, removes it and runs `process` on its deltas (outside any
    /// lock). Returns `process`'s result, or [`Closed`] once the queue is closed and empty.
    pub async fn pop<R>(&self, process: impl FnOnce(Deltas<K>) -> R) -> Result<R, Closed> {
        let popped = self.core.pop().await?;
        let result = process(typed_deltas(popped.deltas));
        self.core.processed(popped.counted, popped.replaced);
        Ok(result)
    }

    /// Waits until every key queued by the replaces ended so far (the relists, and their
    /// deletions) has been popped and processed: the consumer's cache (the informer's
    /// indexer) then reflects the last relist.
    pub fn wait_replaces_processed(&self) -> impl Future<Output = ()> + Send + 'static {
        let target = self.core.state.lock().replaces;
        // The sender lives in `self`, so the channel cannot close while we wait.
        wait_at_least(self.core.drained.subscribe(), target)
    }

    /// Whether the first population has been popped and processed.
    pub fn has_synced(&self) -> bool {
        let s = self.core.state.lock();
        s.populated && s.initial_population == 0
    }

    /// Waits until [`has_synced`](Self::has_synced) is true.
    pub fn wait_synced(&self) -> impl Future<Output = ()> + Send + 'static {
        // The sender lives in `self`, so the channel cannot close while we wait.
        wait_true(self.core.synced.subscribe())
    }

    /// Closes the queue: `pop` returns [`Closed`] once it is empty.
    pub fn close(&self) {
        self.core.close();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.core.state.lock().closed
    }

    /// Waits until fewer than `n` keys are queued (or the queue is closed).
    pub fn wait_below(&self, n: usize) -> impl Future<Output = ()> + Send + '_ {
        self.core.wait_below(n)
    }

    /// Number of queued keys.
    pub fn len(&self) -> usize {
        self.core.state.lock().queue.len()
    }

    /// Whether no key is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queued keys, in pop order.
    pub fn list_keys(&self) -> Vec<String> {
        self.core.state.lock().queue.iter().cloned().collect()
    }

    /// The queue as its reflector fills it: objects go in as they come, without being
    /// turned into `K` and back.
    pub(crate) fn erased_store(&self) -> Arc<dyn ReflectorStore<dyn AnyObject>> {
        self.core.clone()
    }
}

/// A key's deltas taken off the queue, and what their processing ends.
struct Popped {
    deltas: Deltas<dyn AnyObject>,
    /// Whether they count in the initial population.
    counted: bool,
    /// Whether they were queued by the last replace, which waits for them.
    replaced: bool,
}

/// The queue of every type.
struct Core {
    state: Mutex<State>,
    ready: Notify,
    /// Woken by every pop and by `close`, for [`DeltaFifo::wait_below`].
    popped: Notify,
    synced: watch::Sender<bool>,
    /// The number of the last replace whose keys have all been popped and processed.
    drained: watch::Sender<u64>,
    known: Option<Arc<dyn Known>>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.lock();
        f.debug_struct("DeltaFifo")
            .field("queued", &s.queue.len())
            .field("populated", &s.populated)
            .field("initial_population", &s.initial_population)
            .field("closed", &s.closed)
            .finish()
    }
}

/// Collapses the last two deltas when both are deletions, keeping the more informative.
fn dedup_last(deltas: &mut Vec<Delta<dyn AnyObject>>) {
    let n = deltas.len();
    if n < 2 || deltas[n - 1].kind != DeltaType::Deleted || deltas[n - 2].kind != DeltaType::Deleted
    {
        return;
    }
    let last = deltas.pop().expect("n >= 2");
    if !matches!(last.object, MaybeTombstone::Tombstone(_)) {
        deltas[n - 2] = last;
    }
}

impl Core {
    fn new(known: Option<Arc<dyn Known>>) -> Self {
        Self {
            state: Mutex::new(State {
                items: HashMap::new(),
                queue: VecDeque::new(),
                populated: false,
                initial_population: 0,
                listing: None,
                replaces: 0,
                replace_pending: 0,
                closed: false,
            }),
            ready: Notify::new(),
            popped: Notify::new(),
            synced: watch::Sender::new(false),
            drained: watch::Sender::new(0),
            known,
        }
    }

    fn queue_action(
        &self,
        s: &mut State,
        key: String,
        kind: DeltaType,
        object: MaybeTombstone<dyn AnyObject>,
    ) {
        let deltas = s.items.entry(key.clone()).or_default();
        let was_queued = !deltas.is_empty();
        deltas.push(Delta { kind, object });
        dedup_last(deltas);
        if !was_queued {
            s.queue.push_back(key);
        }
    }

    fn push(&self, kind: DeltaType, obj: Object) -> Result<(), KeyError> {
        let key = key_of(obj.meta())?;
        let mut s = self.state.lock();
        s.populated = true;
        self.queue_action(&mut s, key, kind, MaybeTombstone::Object(obj));
        self.publish_synced(&s);
        drop(s);
        self.ready.notify_one();
        Ok(())
    }

    fn delete(&self, obj: Object) -> Result<(), KeyError> {
        let key = key_of(obj.meta())?;
        let mut s = self.state.lock();
        s.populated = true;
        let queued = s.items.contains_key(&key);
        let known = match &self.known {
            Some(k) => k.contains(&key),
            None => false,
        };
        if !queued && !known {
            return Ok(());
        }
        self.queue_action(&mut s, key, DeltaType::Deleted, MaybeTombstone::Object(obj));
        drop(s);
        self.ready.notify_one();
        Ok(())
    }

    fn replace_begin(&self) {
        self.state.lock().listing = Some(HashSet::new());
    }

    fn replace_part(&self, part: Vec<Object>) -> Vec<KeyError> {
        let mut errors = Vec::new();
        let mut s = self.state.lock();
        let mut listing = s.listing.take().unwrap_or_default();
        listing.reserve(part.len());
        for obj in part {
            match key_of(obj.meta()) {
                Ok(key) => {
                    listing.insert(key.clone());
                    self.queue_action(
                        &mut s,
                        key,
                        DeltaType::Replaced,
                        MaybeTombstone::Object(obj),
                    );
                }
                Err(e) => errors.push(e),
            }
        }
        s.listing = Some(listing);
        drop(s);
        self.ready.notify_one();
        errors
    }

    fn replace_forget(&self, key: &str) {
        if let Some(listing) = self.state.lock().listing.as_mut() {
            listing.remove(key);
        }
    }

    fn replace_end(&self) {
        let mut s = self.state.lock();
        let keys = s.listing.take().unwrap_or_default();
        // Keys queued but not listed, whose newest delta is not already a deletion.
        let queued_gone: Vec<(String, Object)> = s
            .items
            .iter()
            .filter(|(k, _)| !keys.contains(*k))
            .filter_map(|(k, d)| {
                let newest = d.last()?;
                (newest.kind != DeltaType::Deleted)
                    .then(|| (k.clone(), newest.object.object().clone()))
            })
            .collect();
        let mut tombstoned: HashSet<String> = HashSet::new();
        for (key, obj) in queued_gone {
            tombstoned.insert(key.clone());
            self.queue_tombstone(&mut s, key, obj);
        }
        if let Some(known) = &self.known {
            for (key, obj) in known.list_entries() {
                if keys.contains(&key) || tombstoned.contains(&key) {
                    continue;
                }
                self.queue_tombstone(&mut s, key, obj);
            }
        }
        if !s.populated {
            s.populated = true;
            // What the consumer has not popped yet of the first list.
            s.initial_population = s.queue.len();
        }
        // Keys are popped in queue order and a queued key never moves back: once this many
        // are processed, so is every key this replace queued.
        s.replaces += 1;
        s.replace_pending = s.queue.len();
        if s.replace_pending == 0 {
            self.drained.send_replace(s.replaces);
        }
        self.publish_synced(&s);
        drop(s);
        self.ready.notify_one();
    }

    fn queue_tombstone(&self, s: &mut State, key: String, obj: Object) {
        let tombstone = MaybeTombstone::Tombstone(DeletedFinalStateUnknown {
            key: key.clone(),
            obj,
        });
        self.queue_action(s, key, DeltaType::Deleted, tombstone);
    }

    fn resync(&self) {
        let Some(known) = &self.known else { return };
        let mut s = self.state.lock();
        let mut queued_any = false;
        for (key, obj) in known.list_entries() {
            if s.items.get(&key).is_some_and(|d| !d.is_empty()) {
                continue;
            }
            self.queue_action(&mut s, key, DeltaType::Sync, MaybeTombstone::Object(obj));
            queued_any = true;
        }
        drop(s);
        if queued_any {
            self.ready.notify_one();
        }
    }

    fn add_if_not_present(&self, deltas: Deltas<dyn AnyObject>) {
        let mut s = self.state.lock();
        if s.items.contains_key(&deltas.key) || deltas.deltas.is_empty() {
            return;
        }
        s.queue.push_back(deltas.key.clone());
        s.items.insert(deltas.key, deltas.deltas);
        drop(s);
        self.ready.notify_one();
    }

    /// Waits for a queued key and removes it.
    async fn pop(&self) -> Result<Popped, Closed> {
        loop {
            if let Some(popped) = self.try_pop()? {
                return Ok(popped);
            }
            let notified = self.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(popped) = self.try_pop()? {
                return Ok(popped);
            }
            notified.await;
        }
    }

    /// The first key's deltas, if any.
    fn try_pop(&self) -> Result<Option<Popped>, Closed> {
        let mut s = self.state.lock();
        let Some(key) = s.queue.pop_front() else {
            return if s.closed { Err(Closed) } else { Ok(None) };
        };
        let deltas = s.items.remove(&key).unwrap_or_default();
        // Counted by the end of the first relist (then still queued), or popped before
        // that end: either way part of the initial list.
        let counted = s.initial_population > 0;
        let is_in_initial_list = counted || (!s.populated && s.listing.is_some());
        let replaced = s.replace_pending > 0;
        if replaced {
            // Taken now, so a later replace's count starts after this key; published as
            // drained only once it is processed.
            s.replace_pending -= 1;
        }
        let more = !s.queue.is_empty();
        drop(s);
        self.popped.notify_waiters();
        if more {
            // Writers wake one popper per change; pass the wake-up on.
            self.ready.notify_one();
        }
        let deltas = Deltas {
            key,
            deltas,
            is_in_initial_list,
        };
        Ok(Some(Popped {
            deltas,
            counted,
            replaced,
        }))
    }

    /// Popped deltas were processed: counts them in the initial population and the last
    /// replace they belong to.
    fn processed(&self, counted: bool, replaced: bool) {
        if counted || replaced {
            let mut s = self.state.lock();
            if counted {
                s.initial_population = s.initial_population.saturating_sub(1);
                self.publish_synced(&s);
            }
            if replaced && s.replace_pending == 0 {
                self.drained.send_replace(s.replaces);
            }
        }
    }

    fn publish_synced(&self, s: &State) {
        if s.populated && s.initial_population == 0 && !*self.synced.borrow() {
            self.synced.send_replace(true);
        }
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.ready.notify_waiters();
        self.popped.notify_waiters();
    }

    async fn wait_below(&self, n: usize) {
        loop {
            let popped = self.popped.notified();
            tokio::pin!(popped);
            popped.as_mut().enable();
            {
                let s = self.state.lock();
                if s.queue.len() < n || s.closed {
                    return;
                }
            }
            popped.await;
        }
    }
}

// The queue as the store of a reflector of `K` built by hand; the controller's reflector
// fills the core directly (`DeltaFifo::erased_store`).
impl<K: Resource + Send + Sync + 'static> ReflectorStore<K> for DeltaFifo<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), KeyError> {
        DeltaFifo::add(self, obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), KeyError> {
        DeltaFifo::update(self, obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), KeyError> {
        DeltaFifo::delete(self, obj)
    }
    fn replace_begin(&self) {
        DeltaFifo::replace_begin(self)
    }
    fn replace_part(&self, part: Vec<Arc<K>>) -> Vec<KeyError> {
        DeltaFifo::replace_part(self, part)
    }
    fn replace_forget(&self, key: &str) {
        DeltaFifo::replace_forget(self, key)
    }
    fn replace_end(&self) {
        DeltaFifo::replace_end(self)
    }
    fn resync(&self) {
        DeltaFifo::resync(self)
    }
    fn known(&self, key: &str) -> Option<Arc<K>> {
        self.known_object(key)
    }
    fn is_full(&self) -> bool {
        ReflectorStore::is_full(&*self.core)
    }
    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        ReflectorStore::wait_for_room(&*self.core)
    }
}

/// The core as a reflector's store, for [`DeltaFifo::erased_store`].
impl ReflectorStore<dyn AnyObject> for Core {
    fn add(&self, obj: Object) -> Result<(), KeyError> {
        self.push(DeltaType::Added, obj)
    }
    fn update(&self, obj: Object) -> Result<(), KeyError> {
        self.push(DeltaType::Updated, obj)
    }
    fn delete(&self, obj: Object) -> Result<(), KeyError> {
        Core::delete(self, obj)
    }
    fn replace_begin(&self) {
        Core::replace_begin(self);
    }
    fn replace_part(&self, part: Vec<Object>) -> Vec<KeyError> {
        Core::replace_part(self, part)
    }
    fn replace_forget(&self, key: &str) {
        Core::replace_forget(self, key);
    }
    fn replace_end(&self) {
        Core::replace_end(self);
    }
    fn resync(&self) {
        Core::resync(self);
    }
    fn known(&self, key: &str) -> Option<Object> {
        self.known.as_ref()?.get(key)
    }
    fn is_full(&self) -> bool {
        self.state.lock().queue.len() >= WATCH_BACKLOG_LIMIT
    }
    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.wait_below(WATCH_BACKLOG_LIMIT / 2))
    }
}

/// Waits until `rx` holds at least `target` (or its sender is gone). Not generic, as the
/// `DeltaFifo<K>` methods that return it are: compiled once.
async fn wait_at_least(mut rx: tokio::sync::watch::Receiver<u64>, target: u64) {
    let _ = rx.wait_for(|value| *value >= target).await;
}

/// Waits until `rx` holds true (or its sender is gone). Not generic: compiled once.
async fn wait_true(mut rx: tokio::sync::watch::Receiver<bool>) {
    let _ = rx.wait_for(|value| *value).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::key::meta_namespace_key;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(name: &str, value: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(name.into()),
                ..Default::default()
            },
            data: Some([("v".to_string(), value.to_string())].into()),
            ..Default::default()
        })
    }

    fn value(o: &MaybeTombstone<ConfigMap>) -> String {
        o.object().data.as_ref().unwrap()["v"].clone()
    }

    /// Pops one key and summarises its deltas as (type, value, tombstone?).
    async fn pop_summary(f: &DeltaFifo<ConfigMap>) -> (String, Vec<(DeltaType, String, bool)>) {
        f.pop(|d| {
            let summary = d
                .deltas
                .iter()
                .map(|x| {
                    (
                        x.kind,
                        value(&x.object),
                        matches!(x.object, MaybeTombstone::Tombstone(_)),
                    )
                })
                .collect();
            (d.key, summary)
        })
        .await
        .unwrap()
    }

    /// Applies popped deltas to `store` the way an informer does.
    fn apply(store: &Indexer<ConfigMap>, d: Deltas<ConfigMap>) {
        for delta in d.deltas {
            match delta.kind {
                DeltaType::Deleted => {
                    store.delete(&d.key);
                }
                _ => {
                    store.add_with_key(d.key.clone(), delta.object.object().clone());
                }
            }
        }
    }

    #[tokio::test]
    async fn one_key_is_queued_once_and_its_deltas_pop_together_in_order() {
        let f = DeltaFifo::new(None);
        f.add(cm("a", "1")).unwrap();
        f.add(cm("b", "1")).unwrap();
        f.update(cm("a", "2")).unwrap();
        assert_eq!(f.list_keys(), ["ns/a", "ns/b"]);
        let (key, deltas) = pop_summary(&f).await;
        assert_eq!(key, "ns/a");
        assert_eq!(
            deltas,
            [
                (DeltaType::Added, "1".into(), false),
                (DeltaType::Updated, "2".into(), false)
            ]
        );
        assert_eq!(pop_summary(&f).await.0, "ns/b");
    }

    #[tokio::test]
    async fn consecutive_deletes_collapse_keeping_the_real_object() {
        let known = Arc::new(Indexer::new());
        known.add(cm("a", "old")).unwrap();
        let f = DeltaFifo::new(Some(known));
        f.replace(vec![]); // tombstone for a
        f.delete(cm("a", "final")).unwrap();
        let (_, deltas) = pop_summary(&f).await;
        assert_eq!(deltas, [(DeltaType::Deleted, "final".into(), false)]);
    }

    #[tokio::test]
    async fn replace_tombstones_known_keys_missing_from_the_list() {
        let known = Arc::new(Indexer::new());
        known.add(cm("gone", "last-seen")).unwrap();
        known.add(cm("kept", "1")).unwrap();
        let f = DeltaFifo::new(Some(known));
        f.replace(vec![cm("kept", "2")]);
        let mut popped = [pop_summary(&f).await, pop_summary(&f).await];
        popped.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            popped[0],
            (
                "ns/gone".into(),
                vec![(DeltaType::Deleted, "last-seen".into(), true)]
            )
        );
        assert_eq!(
            popped[1],
            (
                "ns/kept".into(),
                vec![(DeltaType::Replaced, "2".into(), false)]
            )
        );
    }

    #[tokio::test]
    async fn replace_tombstones_queued_keys_missing_from_the_list() {
        let f = DeltaFifo::new(Some(Arc::new(Indexer::new())));
        f.add(cm("brief", "1")).unwrap();
        f.replace(vec![]);
        let (_, deltas) = pop_summary(&f).await;
        assert_eq!(
            deltas,
            [
                (DeltaType::Added, "1".into(), false),
                (DeltaType::Deleted, "1".into(), true)
            ]
        );
    }

    #[tokio::test]
    async fn delete_of_an_unknown_unqueued_object_is_dropped() {
        let f = DeltaFifo::new(Some(Arc::new(Indexer::new())));
        f.delete(cm("never-seen", "1")).unwrap();
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn resync_queues_sync_only_for_known_keys_not_already_queued() {
        let known = Arc::new(Indexer::new());
        known.add(cm("a", "1")).unwrap();
        known.add(cm("b", "1")).unwrap();
        let f = DeltaFifo::new(Some(known));
        f.update(cm("a", "2")).unwrap();
        f.resync();
        let mut popped = [pop_summary(&f).await, pop_summary(&f).await];
        popped.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            popped[0].1,
            [(DeltaType::Updated, "2".into(), false)],
            "a was queued: no Sync"
        );
        assert_eq!(popped[1].1, [(DeltaType::Sync, "1".into(), false)]);
        assert!(f.is_empty());
    }

    async fn pop_initial(f: &DeltaFifo<ConfigMap>) -> (String, bool) {
        f.pop(|d| (d.key, d.is_in_initial_list)).await.unwrap()
    }

    #[tokio::test]
    async fn a_first_replace_in_parts_is_popped_as_the_initial_list_and_syncs_after_its_end() {
        let f = DeltaFifo::new(Some(Arc::new(Indexer::new())));
        f.replace_begin();
        f.replace_part(vec![cm("a", "1"), cm("b", "1")]);
        assert_eq!(
            pop_initial(&f).await,
            ("ns/a".into(), true),
            "popped before the end"
        );
        f.replace_part(vec![cm("c", "1")]);
        assert!(!f.has_synced(), "not synced before the end");
        f.replace_end();
        assert_eq!(pop_initial(&f).await, ("ns/b".into(), true));
        assert!(!f.has_synced(), "c is not popped yet");
        assert_eq!(pop_initial(&f).await, ("ns/c".into(), true));
        assert!(f.has_synced());
        f.replace_begin();
        f.replace_part(vec![cm("d", "1")]);
        assert_eq!(
            pop_initial(&f).await,
            ("ns/d".into(), false),
            "a relist is not initial"
        );
    }

    #[tokio::test]
    async fn has_synced_once_the_first_replace_is_popped_and_processed() {
        let f = DeltaFifo::new(Some(Arc::new(Indexer::new())));
        assert!(!f.has_synced(), "nothing populated yet");
        f.replace(vec![cm("a", "1"), cm("b", "1")]);
        f.add(cm("c", "1")).unwrap();
        assert!(!f.has_synced());
        let first = f
            .pop(|d| (d.is_in_initial_list, f.has_synced()))
            .await
            .unwrap();
        assert_eq!(
            first,
            (true, false),
            "not synced while the item is being processed"
        );
        assert!(!f.has_synced());
        assert!(f.pop(|d| d.is_in_initial_list).await.unwrap());
        assert!(f.has_synced());
        assert!(
            !f.pop(|d| d.is_in_initial_list).await.unwrap(),
            "c came after the initial list"
        );
    }

    #[tokio::test]
    async fn add_if_not_present_requeues_unless_the_key_came_back() {
        let f = DeltaFifo::new(None);
        f.add(cm("a", "1")).unwrap();
        let popped = f.pop(|d| d).await.unwrap();
        f.add_if_not_present(popped.clone());
        assert_eq!(
            pop_summary(&f).await.1,
            [(DeltaType::Added, "1".into(), false)]
        );
        f.update(cm("a", "2")).unwrap();
        f.add_if_not_present(popped);
        assert_eq!(
            pop_summary(&f).await.1,
            [(DeltaType::Updated, "2".into(), false)],
            "newer deltas win"
        );
    }

    #[tokio::test]
    async fn closed_queue_drains_then_reports_closed_and_wakes_waiters() {
        let f = Arc::new(DeltaFifo::new(None));
        let waiter = tokio::spawn({
            let f = f.clone();
            async move { f.pop(|d| d.key).await }
        });
        tokio::task::yield_now().await;
        f.close();
        assert_eq!(waiter.await.unwrap(), Err(Closed));
        f.add(cm("late", "1")).unwrap();
        assert_eq!(
            f.pop(|d| d.key).await,
            Ok("ns/late".to_string()),
            "queued items still pop"
        );
        assert_eq!(f.pop(|d| d.key).await, Err(Closed));
    }

    #[tokio::test]
    async fn waiting_pop_wakes_on_add() {
        let f = Arc::new(DeltaFifo::new(None));
        let waiter = tokio::spawn({
            let f = f.clone();
            async move { f.pop(|d| d.key).await }
        });
        tokio::task::yield_now().await;
        f.add(cm("a", "1")).unwrap();
        assert_eq!(waiter.await.unwrap(), Ok("ns/a".to_string()));
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        #[derive(Debug, Clone)]
        enum Op {
            Upsert(u8, u8),
            Delete(u8),
            Replace(Vec<(u8, u8)>),
            Resync,
            Pop,
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                4 => (0u8..8, any::<u8>()).prop_map(|(k, v)| Op::Upsert(k, v)),
                2 => (0u8..8).prop_map(Op::Delete),
                1 => proptest::collection::vec((0u8..8, any::<u8>()), 0..6).prop_map(Op::Replace),
                1 => Just(Op::Resync),
                3 => Just(Op::Pop),
            ]
        }

        proptest! {
            /// Whatever the interleaving of changes, relists, resyncs and pops, a consumer
            /// that applies every popped delta ends with exactly the last state of each key.
            #[test]
            fn store_after_popping_everything_equals_the_last_state(ops in proptest::collection::vec(op(), 1..60)) {
                let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                rt.block_on(async {
                    let store = Arc::new(Indexer::new());
                    let f = DeltaFifo::new(Some(store.clone()));
                    let mut truth: BTreeMap<String, String> = BTreeMap::new();
                    for op in ops {
                        match op {
                            Op::Upsert(k, v) => {
                                let name = format!("k{k}");
                                let key = format!("ns/{name}");
                                if truth.insert(key, v.to_string()).is_some() {
                                    f.update(cm(&name, &v.to_string())).unwrap();
                                } else {
                                    f.add(cm(&name, &v.to_string())).unwrap();
                                }
                            }
                            Op::Delete(k) => {
                                let key = format!("ns/k{k}");
                                if let Some(v) = truth.remove(&key) {
                                    f.delete(cm(&format!("k{k}"), &v)).unwrap();
                                }
                            }
                            Op::Replace(items) => {
                                truth.clear();
                                for (k, v) in &items {
                                    truth.insert(format!("ns/k{k}"), v.to_string());
                                }
                                let list = truth
                                    .iter()
                                    .map(|(k, v)| cm(k.trim_start_matches("ns/"), v))
                                    .collect();
                                f.replace(list);
                            }
                            Op::Resync => f.resync(),
                            Op::Pop => {
                                if !f.is_empty() {
                                    f.pop(|d| apply(&store, d)).await.unwrap();
                                }
                            }
                        }
                    }
                    while !f.is_empty() {
                        f.pop(|d| apply(&store, d)).await.unwrap();
                    }
                    let got: BTreeMap<String, String> = store
                        .list()
                        .iter()
                        .map(|o| (meta_namespace_key(o.as_ref()).unwrap(), o.data.as_ref().unwrap()["v"].clone()))
                        .collect();
                    prop_assert_eq!(got, truth);
                    Ok(())
                })?;
            }
        }
    }
}
