//! The basic work queue: a FIFO of items with de-duplication and per-item exclusion.
//!
//! # Contract
//!
//! A [`Queue`] keeps two sets, as client-go's queue does:
//!
//! - the **dirty** set: items that need processing. An item is queued at most once: adding
//!   an item that is already dirty does nothing.
//! - the **processing** set: items handed out by [`get`](Queue::get) and not yet marked
//!   [`done`](Queue::done). An item being processed is never handed to a second worker.
//!   Adding it again marks it dirty without queueing it; `done` then puts it at the back
//!   of the queue.
//!
//! Ready items are handed out in the order they entered the queue (FIFO), items added
//! with [`add_low_priority`](Queue::add_low_priority) after every other ready item
//! (controller-runtime's priority queue: a controller's initial list and resyncs wait
//! behind live changes). Adding with normal priority an item that waits at low priority
//! moves it to the back of the normal queue; adding at low priority an item that waits at
//! normal priority changes nothing.
//!
//! After [`shut_down`](Queue::shut_down), `add` is ignored, but `get` keeps handing out the
//! items still queued (including the ones re-queued by `done`) and returns `None` only once
//! the queue is empty. [`shut_down_with_drain`](Queue::shut_down_with_drain) does the same
//! and also waits until no item is being processed.
//!
//! # Concurrency
//!
//! `Queue` is a cheap handle around an `Arc`: clone it into as many tasks as you like. All
//! methods may be called concurrently from any task or thread. The state sits behind one
//! short lock that is never held across an `.await`: a test-and-set lock whose release is
//! a plain store, and whose waiters spin, yield, then sleep in 50 µs steps, so that
//! workers meeting on it from several cores take turns in bursts rather than moving the
//! queue's state between caches on every call (see `workqueue/lock.rs`). A `get` on an
//! empty queue sleeps on a [`tokio::sync::Notify`] until an item arrives or the queue
//! shuts down. `get` is cancel-safe: dropping its future loses no item. `get` also takes
//! part in tokio's cooperative scheduling (one budget unit per 16 calls), so a worker that
//! always finds work still yields to the other tasks of its thread now and then.
//!
//! A named queue with metrics (see [`QueueConfig`]) starts one background task that
//! updates the unfinished-work gauges every 500 ms; it ends when the queue shuts down or
//! is dropped. Creating such a queue needs a tokio runtime; an unnamed one does not.
//!
//! The caller must call `done` exactly once for every item `get` returned; `done` for an
//! item that is not being processed does nothing.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::pin::pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::lock::StateLock;
use hashbrown::{DefaultHashBuilder, HashTable, hash_table};
use tokio::sync::Notify;
use tokio::time::{Instant, MissedTickBehavior};

use super::metrics::{QueueMetrics, WorkqueueMetrics};

/// How often a named queue refreshes its unfinished-work gauges (client-go's period).
const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// Marks an entry that holds no processing start time.
const NO_SLOT: u32 = u32::MAX;

/// Options for building a queue: its name and where its metrics go.
///
/// A queue reports metrics only when it has both a name and a [`WorkqueueMetrics`]; the
/// name becomes the value of the metrics' `name` label.
///
/// ```
/// use kubekit::workqueue::{DelayingQueue, QueueConfig, WorkqueueMetrics};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let metrics = WorkqueueMetrics::new();
/// let queue: DelayingQueue<String> =
///     DelayingQueue::with_config(QueueConfig::new().name("services").metrics(&metrics));
/// assert_eq!(queue.len(), 0);
/// # queue.shut_down();
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct QueueConfig {
    pub(crate) name: Option<String>,
    pub(crate) metrics: Option<WorkqueueMetrics>,
}

impl QueueConfig {
    /// An unnamed configuration: no metrics.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the queue. The name labels its metrics.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sends the queue's metrics to `metrics` (which you register into your registry).
    pub fn metrics(mut self, metrics: &WorkqueueMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// The metric handles for this configuration, if it asks for metrics.
    fn queue_metrics(&self) -> Option<QueueMetrics> {
        match (&self.name, &self.metrics) {
            (Some(name), Some(metrics)) => Some(metrics.for_queue(name)),
            _ => None,
        }
    }
}

/// A work queue: dirty and processing sets in front of a FIFO, shared by many workers.
///
/// See the [module docs](self) for the guarantees. In short: `add` an item as often as you
/// like, it is queued once; `get` hands it to one worker at a time; `done` releases it, and
/// re-queues it if it was added again meanwhile.
///
/// ```
/// use kubekit::workqueue::Queue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = Queue::new();
/// queue.add("default/a".to_string());
/// queue.add("default/b".to_string());
/// queue.add("default/a".to_string()); // already queued: ignored
/// assert_eq!(queue.len(), 2);
///
/// let item = queue.get().await.unwrap();
/// assert_eq!(item, "default/a");
/// queue.add(item.clone()); // added while processing: comes back at `done`
/// queue.done(&item);
///
/// queue.shut_down();
/// assert_eq!(queue.get().await.as_deref(), Some("default/b"));
/// # queue.done(&"default/b".to_string());
/// assert_eq!(queue.get().await.as_deref(), Some("default/a"));
/// # queue.done(&"default/a".to_string());
/// assert_eq!(queue.get().await, None); // shut down and empty
/// # }
/// ```
pub struct Queue<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("Queue")
            .field("len", &state.len())
            .field("processing", &state.processing)
            .field("shutting_down", &state.shutting_down)
            .finish_non_exhaustive()
    }
}

/// What the queue knows about one dirty or processing item.
struct Slot<T> {
    item: T,
    /// `item`'s hash, kept so that the table never hashes an item again.
    hash: u64,
    /// In the dirty set: needs processing (queued, or waiting for `done`).
    dirty: bool,
    /// In the processing set: handed out and not yet done.
    processing: bool,
    /// Needs processing at low priority: waits in `State::low` (or goes there at `done`).
    low: bool,
    /// The ticket of its entry in `State::low`: an entry with another ticket is stale.
    ticket: u64,
    /// When the item became dirty (named queues only).
    added: Option<Instant>,
    /// Index of its processing start time in `State::started` (named queues only).
    started: u32,
}

/// Everything behind the queue's lock.
struct State<T> {
    /// Dirty and processing items; an item in neither set has no slot.
    slots: HashTable<Slot<T>>,
    /// Items that are dirty and not processing at normal priority, in hand-out order, with
    /// their hashes.
    fifo: VecDeque<(u64, T)>,
    /// The same at low priority, handed out when `fifo` is empty, each with its ticket. An
    /// entry whose slot has since been promoted to `fifo`, handed out or queued again
    /// (under a new ticket) is stale: skipped, and dropped when stale entries outnumber
    /// the others.
    low: VecDeque<(u64, T, u64)>,
    /// Entries of `low` that are not stale.
    low_len: usize,
    /// The ticket the next entry of `low` gets.
    tickets: u64,
    /// Number of items in the processing set.
    processing: usize,
    /// Number of `get` calls asleep on `Inner::getters`: a new item wakes one only when
    /// some sleep, so a queue whose workers are all busy pays nothing for wake-ups.
    waiting: usize,
    shutting_down: bool,
    /// A `shut_down_with_drain` is waiting for the processing set to empty.
    drain: bool,
    /// Processing start times of named queues, indexed by `Slot::started`.
    started: Vec<Option<Instant>>,
    /// Free indices of `started`.
    free_started: Vec<u32>,
}

impl<T> State<T> {
    /// Items waiting to be handed out.
    fn len(&self) -> usize {
        self.fifo.len() + self.low_len
    }

    /// Whether an item just queued should wake a sleeping `get`.
    fn wake_for_new_item(&self) -> bool {
        self.waiting > 0
    }
}

impl<T: Eq> State<T> {
    /// Queues `item` at its priority; a low-priority entry gets the ticket `tickets` had
    /// (which the caller gave its slot).
    fn push(&mut self, hash: u64, item: T, low: bool) {
        if !low {
            self.fifo.push_back((hash, item));
            return;
        }
        self.low.push_back((hash, item, self.tickets));
        self.tickets += 1;
        self.low_len += 1;
        if self.low.len() > 2 * self.low_len + 64 {
            let slots = &self.slots;
            self.low.retain(|entry| waits_low(slots, entry));
        }
    }

    /// The next item to hand out: the normal queue's first, else the first entry of the
    /// low queue that is not stale.
    fn next_ready(&mut self) -> Option<(u64, T)> {
        if let Some(next) = self.fifo.pop_front() {
            return Some(next);
        }
        while let Some(entry) = self.low.pop_front() {
            if waits_low(&self.slots, &entry) {
                self.low_len -= 1;
                let (hash, item, _) = entry;
                return Some((hash, item));
            }
        }
        None
    }
}

/// Whether `entry` of `State::low` is not stale: its slot still waits there, under the
/// entry's ticket.
fn waits_low<T: Eq>(slots: &HashTable<Slot<T>>, (hash, item, ticket): &(u64, T, u64)) -> bool {
    slots
        .find(*hash, |slot| slot.item == *item)
        .is_some_and(|slot| slot.dirty && slot.low && !slot.processing && slot.ticket == *ticket)
}

/// The outcome of trying to take an item without waiting.
enum Take<T> {
    Item(T),
    ShutDown,
    Empty,
}

pub(crate) struct Inner<T> {
    state: StateLock<State<T>>,
    hasher: DefaultHashBuilder,
    /// Wakes `get` calls waiting for an item (one per item) or for shutdown (all).
    getters: Notify,
    /// Wakes `shut_down_with_drain` when the processing set empties.
    drained: Notify,
    metrics: Option<QueueMetrics>,
    /// Stops the unfinished-work task of a named queue.
    stop_ticker: Option<Arc<Notify>>,
}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        if let Some(stop) = &self.stop_ticker {
            stop.notify_one();
        }
    }
}

impl<T> Default for Queue<T>
where
    T: Hash + Eq + Clone + Send + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Queue<T>
where
    T: Hash + Eq + Clone + Send + 'static,
{
    /// Creates an unnamed queue (no metrics). Needs no runtime.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::new())
    }

    /// Creates a queue from `config`.
    ///
    /// # Panics
    ///
    /// A named queue with metrics starts a background task, so it must be created inside a
    /// tokio runtime; outside one this panics.
    pub fn with_config(config: QueueConfig) -> Self {
        let metrics = config.queue_metrics();
        let stop_ticker = metrics.as_ref().map(|_| Arc::new(Notify::new()));
        let inner = Arc::new(Inner {
            state: StateLock::new(State {
                slots: HashTable::new(),
                fifo: VecDeque::new(),
                low: VecDeque::new(),
                low_len: 0,
                tickets: 0,
                processing: 0,
                waiting: 0,
                shutting_down: false,
                drain: false,
                started: Vec::new(),
                free_started: Vec::new(),
            }),
            hasher: DefaultHashBuilder::default(),
            getters: Notify::new(),
            drained: Notify::new(),
            metrics,
            stop_ticker: stop_ticker.clone(),
        });
        if let Some(stop) = stop_ticker {
            spawn_unfinished_work_loop(Arc::downgrade(&inner), stop);
        }
        Self { inner }
    }

    /// Marks `item` as needing processing.
    ///
    /// Queues it unless it is already dirty; if it is being processed, it is only marked
    /// dirty and goes to the back of the queue when its worker calls [`done`](Self::done).
    /// Ignored once the queue is shutting down.
    pub fn add(&self, item: T) {
        self.inner.add(item, false);
    }

    /// Like [`add`](Self::add), at low priority: the item is handed out after every item
    /// added with normal priority (see the [module docs](self)).
    pub fn add_low_priority(&self, item: T) {
        self.inner.add(item, true);
    }

    /// Waits for the next item and hands it out, or returns `None` once the queue is shut
    /// down and empty.
    ///
    /// The item moves to the processing set: no other `get` returns it until you call
    /// [`done`](Self::done) with it, which you must do exactly once. Cancel-safe.
    pub async fn get(&self) -> Option<T> {
        cooperate().await;
        let inner = &*self.inner;
        let taken = {
            let mut state = inner.state.lock();
            inner.take(&mut state)
        };
        match taken {
            Take::Item(item) => Some(item),
            Take::ShutDown => None,
            Take::Empty => inner.get_slow().await,
        }
    }

    /// Marks `item` as done processing. If it was added again meanwhile, it goes to the
    /// back of the queue (even after shutdown). Does nothing for an item that is not being
    /// processed.
    pub fn done(&self, item: &T) {
        self.inner.done(item);
    }

    /// The number of items waiting to be handed out (not counting the ones being
    /// processed). For information only: it may change as soon as it is read.
    pub fn len(&self) -> usize {
        self.inner.state.lock().len()
    }

    /// Whether no item is waiting to be handed out. For information only.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting items and wakes every waiting `get`.
    ///
    /// Items already queued are still handed out; `get` returns `None` once none is left.
    /// Ends a pending [`shut_down_with_drain`](Self::shut_down_with_drain) without waiting
    /// further. Calling it again does nothing more.
    pub fn shut_down(&self) {
        self.inner.shut_down(false);
    }

    /// Like [`shut_down`](Self::shut_down), then waits until no item is being processed
    /// (every item handed out has been marked done).
    ///
    /// Items still queued are not waited for: the workers that keep calling `get` receive
    /// them. A worker that never calls `done` makes this wait forever, unless `shut_down`
    /// is called meanwhile.
    pub async fn shut_down_with_drain(&self) {
        self.inner.shut_down(true);
        self.inner.wait_drained().await;
    }

    /// Whether `shut_down` or `shut_down_with_drain` has been called.
    pub fn shutting_down(&self) -> bool {
        self.inner.state.lock().shutting_down
    }
}

impl<T> Inner<T>
where
    T: Hash + Eq + Clone,
{
    fn add(&self, item: T, low: bool) {
        // Hashing happens before the lock is taken; dropping a duplicate after it is
        // released.
        let hash = self.hasher.hash_one(&item);
        let wake = {
            let mut guard = self.state.lock();
            let state = &mut *guard;
            if state.shutting_down {
                return;
            }
            let entry = state
                .slots
                .entry(hash, |slot| slot.item == item, |slot| slot.hash);
            match entry {
                hash_table::Entry::Occupied(mut occupied) => {
                    let slot = occupied.get_mut();
                    if slot.dirty {
                        if slot.low && !low {
                            slot.low = false;
                            if !slot.processing {
                                // Promoted: its entry in `low` is now stale.
                                state.low_len -= 1;
                                state.fifo.push_back((hash, item));
                            }
                        }
                    } else {
                        // Being processed: `done` will queue it (and ticket it).
                        slot.dirty = true;
                        slot.low = low;
                        if let Some(metrics) = &self.metrics {
                            metrics.added();
                            slot.added = Some(Instant::now());
                        }
                    }
                    false
                }
                hash_table::Entry::Vacant(vacant) => {
                    let added = self.metrics.as_ref().map(|metrics| {
                        metrics.added();
                        Instant::now()
                    });
                    vacant.insert(Slot {
                        item: item.clone(),
                        hash,
                        dirty: true,
                        processing: false,
                        low,
                        ticket: state.tickets,
                        added,
                        started: NO_SLOT,
                    });
                    state.push(hash, item, low);
                    state.wake_for_new_item()
                }
            }
        };
        if wake {
            self.getters.notify_one();
        }
    }

    /// Takes the next item, if any, moving it to the processing set.
    fn take(&self, state: &mut State<T>) -> Take<T> {
        let Some((hash, item)) = state.next_ready() else {
            return if state.shutting_down {
                Take::ShutDown
            } else {
                Take::Empty
            };
        };
        let Some(slot) = state.slots.find_mut(hash, |slot| slot.item == item) else {
            unreachable!("next_ready only gives items with a slot");
        };
        slot.dirty = false;
        slot.processing = true;
        state.processing += 1;
        if let Some(metrics) = &self.metrics {
            let now = Instant::now();
            metrics.got(slot.added.take().map(|added| now - added));
            slot.started = match state.free_started.pop() {
                Some(index) => {
                    state.started[index as usize] = Some(now);
                    index
                }
                None => {
                    state.started.push(Some(now));
                    u32::try_from(state.started.len() - 1).unwrap_or(NO_SLOT)
                }
            };
        }
        Take::Item(item)
    }

    /// The waiting part of `get`: sleeps until an item or shutdown arrives.
    async fn get_slow(&self) -> Option<T> {
        loop {
            // Register interest before looking, so that an `add` between the look and the
            // sleep is not missed.
            let mut notified = pin!(self.getters.notified());
            notified.as_mut().enable();
            {
                let mut state = self.state.lock();
                match self.take(&mut state) {
                    Take::Item(item) => return Some(item),
                    Take::ShutDown => return None,
                    Take::Empty => state.waiting += 1,
                }
            }
            let waiting = WaitingGuard { inner: self };
            notified.await;
            std::mem::forget(waiting);
            let taken = {
                let mut state = self.state.lock();
                state.waiting -= 1;
                self.take(&mut state)
            };
            match taken {
                Take::Item(item) => return Some(item),
                Take::ShutDown => return None,
                Take::Empty => {}
            }
        }
    }

    fn done(&self, item: &T) {
        let hash = self.hasher.hash_one(item);
        let (finished, wake_getter, wake_drain) = {
            let mut guard = self.state.lock();
            let state = &mut *guard;
            let Ok(mut occupied) = state.slots.find_entry(hash, |slot| slot.item == *item) else {
                return;
            };
            let slot = occupied.get_mut();
            if !slot.processing {
                return;
            }
            slot.processing = false;
            state.processing -= 1;
            if let Some(metrics) = &self.metrics
                && slot.started != NO_SLOT
            {
                let index = slot.started as usize;
                if let Some(started) = state.started[index].take() {
                    metrics.done(started.elapsed());
                }
                state.free_started.push(slot.started);
                slot.started = NO_SLOT;
            }
            let (finished, wake_getter) = if slot.dirty {
                let (item, low) = (slot.item.clone(), slot.low);
                slot.ticket = state.tickets;
                state.push(hash, item, low);
                (None, state.wake_for_new_item())
            } else {
                (Some(occupied.remove().0), false)
            };
            (finished, wake_getter, state.drain && state.processing == 0)
        };
        // The finished item's copy is freed here, outside the lock.
        drop(finished);
        if wake_getter {
            self.getters.notify_one();
        }
        if wake_drain {
            self.drained.notify_waiters();
        }
    }

    fn shut_down(&self, drain: bool) {
        {
            let mut state = self.state.lock();
            state.shutting_down = true;
            state.drain = drain;
        }
        self.getters.notify_waiters();
        if !drain {
            self.drained.notify_waiters();
        }
        if let Some(stop) = &self.stop_ticker {
            stop.notify_one();
        }
    }

    async fn wait_drained(&self) {
        loop {
            let mut notified = pin!(self.drained.notified());
            notified.as_mut().enable();
            {
                let state = self.state.lock();
                if state.processing == 0 || !state.drain {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Refreshes the unfinished-work gauges; returns `false` once the queue shuts down.
    fn update_unfinished_work(&self) -> bool {
        let state = self.state.lock();
        if state.shutting_down {
            return false;
        }
        if let Some(metrics) = &self.metrics {
            metrics.update_unfinished(Instant::now(), state.started.iter().flatten().copied());
        }
        true
    }
}

/// Takes part in tokio's cooperative scheduling, once every [`COOP_EVERY`] calls on a
/// thread: a `get` costs far less than the I/O operations tokio's budget is sized for, and
/// yielding on every 128th `get` would cost more than the queue itself. A worker that
/// always finds work still yields to its thread's other tasks every 128 × `COOP_EVERY`
/// calls.
async fn cooperate() {
    let due = CALLS.with(|calls| {
        let n = calls.get().wrapping_add(1);
        calls.set(n);
        n % COOP_EVERY == 0
    });
    if due {
        tokio::task::coop::consume_budget().await;
    }
}

/// See [`cooperate`].
const COOP_EVERY: u32 = 16;

thread_local! {
    /// `get` calls made on this thread, for [`cooperate`].
    static CALLS: Cell<u32> = const { Cell::new(0) };
}

/// Un-counts a sleeping `get` whose future is dropped before it wakes.
struct WaitingGuard<'a, T> {
    inner: &'a Inner<T>,
}

impl<T> Drop for WaitingGuard<'_, T> {
    fn drop(&mut self) {
        self.inner.state.lock().waiting -= 1;
    }
}

/// Starts the task that refreshes a named queue's unfinished-work gauges.
fn spawn_unfinished_work_loop<T>(inner: Weak<Inner<T>>, stop: Arc<Notify>)
where
    T: Hash + Eq + Clone + Send + 'static,
{
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval_at(
            Instant::now() + UNFINISHED_WORK_UPDATE_PERIOD,
            UNFINISHED_WORK_UPDATE_PERIOD,
        );
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = stop.notified() => return,
            }
            let Some(inner) = inner.upgrade() else {
                return;
            };
            if !inner.update_unfinished_work() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    use super::*;

    /// Polls `future` once without a runtime waker.
    fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    fn q() -> Queue<&'static str> {
        Queue::new()
    }

    #[tokio::test]
    async fn items_are_handed_out_in_fifo_order() {
        let queue = q();
        for item in ["a", "b", "c"] {
            queue.add(item);
        }
        for expected in ["a", "b", "c"] {
            let item = queue.get().await.unwrap();
            assert_eq!(item, expected);
            queue.done(&item);
        }
    }

    /// Takes every ready item (marking each done), then checks the queue is empty.
    async fn drain(queue: &Queue<&'static str>) -> Vec<&'static str> {
        let mut got = Vec::new();
        while !queue.is_empty() {
            let item = queue.get().await.unwrap();
            queue.done(&item);
            got.push(item);
        }
        queue.shut_down();
        assert_eq!(queue.get().await, None, "nothing is handed out twice");
        got
    }

    #[tokio::test]
    async fn low_priority_items_are_handed_out_after_every_normal_one() {
        let queue = q();
        queue.add_low_priority("a");
        queue.add_low_priority("b");
        queue.add("c");
        queue.add("d");
        assert_eq!(queue.len(), 4);
        assert_eq!(drain(&queue).await, ["c", "d", "a", "b"]);
    }

    #[tokio::test]
    async fn a_normal_add_promotes_a_waiting_low_item_and_a_low_add_never_demotes() {
        let queue = q();
        queue.add_low_priority("a");
        queue.add_low_priority("b");
        queue.add("c");
        queue.add("b"); // promoted behind c
        queue.add_low_priority("c"); // stays normal
        assert_eq!(queue.len(), 3);
        assert_eq!(drain(&queue).await, ["c", "b", "a"]);
    }

    #[tokio::test]
    async fn an_item_added_while_processing_returns_at_the_priority_of_its_adds() {
        let queue = q();
        queue.add("a");
        queue.add("b");
        let a = queue.get().await.unwrap();
        let b = queue.get().await.unwrap();
        queue.add_low_priority(a);
        queue.add_low_priority(b);
        queue.add(b); // one normal add makes it normal
        queue.add("c");
        queue.done(&a);
        queue.done(&b);
        assert_eq!(drain(&queue).await, ["c", "b", "a"]);
    }

    #[tokio::test]
    async fn a_promoted_item_added_again_at_low_priority_is_handed_out_once() {
        let queue = q();
        queue.add_low_priority("a");
        queue.add("a"); // its low entry is now stale
        assert_eq!(queue.len(), 1);
        let a = queue.get().await.unwrap();
        queue.done(&a);
        queue.add_low_priority("a");
        assert_eq!(queue.len(), 1);
        assert_eq!(drain(&queue).await, ["a"]);
    }

    #[tokio::test]
    async fn a_stale_low_entry_never_puts_an_item_ahead_of_earlier_low_items() {
        let queue = q();
        queue.add_low_priority("a");
        queue.add("a"); // its low entry is now stale
        let a = queue.get().await.unwrap();
        queue.done(&a);
        queue.add_low_priority("x");
        queue.add_low_priority("a"); // queued behind x, whatever its stale entry says
        assert_eq!(drain(&queue).await, ["x", "a"]);
    }

    #[tokio::test]
    async fn stale_low_entries_are_dropped_while_normal_items_keep_the_queue_busy() {
        let queue = Queue::new();
        for round in 0..1_000 {
            let item = format!("item-{round}");
            queue.add_low_priority(item.clone());
            queue.add(item); // promoted: its low entry is stale
            let got = queue.get().await.unwrap();
            queue.done(&got);
        }
        let state = queue.inner.state.lock();
        assert!(
            state.low.len() < 100,
            "{} stale entries kept",
            state.low.len()
        );
        assert_eq!(state.low_len, 0);
    }

    #[tokio::test]
    async fn item_added_twice_before_get_is_queued_once() {
        let queue = q();
        queue.add("a");
        queue.add("b");
        queue.add("a");
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn item_being_processed_is_not_handed_to_a_second_worker() {
        let queue = q();
        queue.add("a");
        assert_eq!(queue.get().await, Some("a"));
        queue.add("a");
        assert_eq!(queue.len(), 0, "dirty but processing: not queued");
        let mut second = pin!(queue.get());
        assert!(poll_once(second.as_mut()).is_pending());
        queue.done(&"a");
        assert_eq!(second.await, Some("a"));
    }

    #[tokio::test]
    async fn item_added_while_processing_is_requeued_at_done() {
        let queue = q();
        queue.add("a");
        queue.add("b");
        let a = queue.get().await.unwrap();
        queue.add("a");
        queue.add("a");
        queue.done(&a);
        // `a` goes behind `b`, once.
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.get().await, Some("b"));
        assert_eq!(queue.get().await, Some("a"));
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn done_without_readd_forgets_the_item() {
        let queue = q();
        queue.add("a");
        let a = queue.get().await.unwrap();
        queue.done(&a);
        assert!(queue.is_empty());
        queue.add("a");
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test]
    async fn done_for_an_item_not_processing_is_ignored() {
        let queue = q();
        queue.done(&"x");
        queue.add("a");
        queue.done(&"a"); // queued, not processing: must not duplicate it
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn get_waits_for_an_add() {
        let queue = q();
        let mut get = pin!(queue.get());
        assert!(poll_once(get.as_mut()).is_pending());
        queue.add("a");
        assert_eq!(get.await, Some("a"));
    }

    #[tokio::test]
    async fn each_add_wakes_one_waiting_worker() {
        let queue = q();
        let mut first = pin!(queue.get());
        let mut second = pin!(queue.get());
        assert!(poll_once(first.as_mut()).is_pending());
        assert!(poll_once(second.as_mut()).is_pending());
        queue.add("a");
        queue.add("b");
        let (a, b) = tokio::join!(first, second);
        let mut got = [a.unwrap(), b.unwrap()];
        got.sort_unstable();
        assert_eq!(got, ["a", "b"]);
    }

    #[tokio::test]
    async fn items_added_at_once_reach_every_sleeping_worker() {
        let queue = q();
        let mut gets: Vec<_> = (0..3).map(|_| Box::pin(queue.get())).collect();
        for get in &mut gets {
            assert!(poll_once(get.as_mut()).is_pending());
        }
        queue.add("a");
        queue.add("b");
        queue.add("c");
        let mut got: Vec<_> = futures_join_all(gets).await;
        got.sort_unstable();
        assert_eq!(got, [Some("a"), Some("b"), Some("c")]);
    }

    #[tokio::test]
    async fn cancelled_woken_get_passes_its_wake_on() {
        let queue = q();
        let mut first = Box::pin(queue.get());
        let mut second = pin!(queue.get());
        assert!(poll_once(first.as_mut()).is_pending());
        assert!(poll_once(second.as_mut()).is_pending());
        queue.add("a"); // wakes `first`
        drop(first); // its wake goes to `second`
        assert_eq!(second.as_mut().await, Some("a"));
    }

    /// Awaits every future, in order.
    async fn futures_join_all<F: Future>(futures: Vec<std::pin::Pin<Box<F>>>) -> Vec<F::Output> {
        let mut out = Vec::new();
        for future in futures {
            out.push(future.await);
        }
        out
    }

    #[tokio::test]
    async fn cancelled_get_loses_nothing() {
        let queue = q();
        {
            let mut get = pin!(queue.get());
            assert!(poll_once(get.as_mut()).is_pending());
            queue.add("a");
            // Dropped after being woken but before taking the item.
        }
        assert_eq!(queue.state_waiting(), 0);
        assert_eq!(queue.get().await, Some("a"));
    }

    #[tokio::test]
    async fn get_after_shut_down_hands_out_queued_items_then_reports_shutdown() {
        let queue = q();
        queue.add("a");
        queue.add("b");
        queue.shut_down();
        assert!(queue.shutting_down());
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        assert_eq!(queue.get().await, None);
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test]
    async fn add_after_shut_down_is_ignored() {
        let queue = q();
        queue.shut_down();
        queue.add("a");
        assert!(queue.is_empty());
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test]
    async fn shut_down_wakes_every_waiting_get() {
        let queue = q();
        let mut first = pin!(queue.get());
        let mut second = pin!(queue.get());
        assert!(poll_once(first.as_mut()).is_pending());
        assert!(poll_once(second.as_mut()).is_pending());
        queue.shut_down();
        assert_eq!(first.await, None);
        assert_eq!(second.await, None);
    }

    #[tokio::test]
    async fn dirty_item_is_requeued_at_done_after_shut_down() {
        let queue = q();
        queue.add("a");
        let a = queue.get().await.unwrap();
        queue.add("a");
        queue.shut_down();
        let mut get = pin!(queue.get());
        assert!(
            poll_once(get.as_mut()).is_ready(),
            "nothing queued: reports shutdown although `a` is still processing"
        );
        queue.done(&a);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test]
    async fn shut_down_with_drain_waits_for_items_being_processed() {
        let queue = q();
        queue.add("a");
        queue.add("b");
        let a = queue.get().await.unwrap();
        let b = queue.get().await.unwrap();
        let mut drain = pin!(queue.shut_down_with_drain());
        assert!(poll_once(drain.as_mut()).is_pending());
        assert!(queue.shutting_down());
        queue.done(&a);
        assert!(poll_once(drain.as_mut()).is_pending());
        queue.done(&b);
        assert!(poll_once(drain.as_mut()).is_ready());
    }

    #[tokio::test]
    async fn shut_down_with_drain_returns_at_once_when_nothing_is_processing() {
        let queue = q();
        queue.add("a");
        queue.shut_down_with_drain().await;
        assert_eq!(queue.get().await, Some("a"));
    }

    #[tokio::test]
    async fn shut_down_ends_a_pending_drain() {
        let queue = q();
        queue.add("a");
        let _a = queue.get().await.unwrap();
        let mut drain = pin!(queue.shut_down_with_drain());
        assert!(poll_once(drain.as_mut()).is_pending());
        queue.shut_down();
        assert!(poll_once(drain.as_mut()).is_ready());
    }

    #[test]
    fn unnamed_queue_needs_no_runtime() {
        let queue = Queue::new();
        queue.add(1_u32);
        assert_eq!(queue.len(), 1);
        let mut get = pin!(queue.get());
        assert_eq!(poll_once(get.as_mut()), Poll::Ready(Some(1)));
    }

    #[test]
    fn get_future_is_send() {
        fn assert_send<F: Send>(_: &F) {}
        let queue: Queue<String> = Queue::new();
        assert_send(&queue.get());
        assert_send(&queue.shut_down_with_drain());
    }

    impl<T> Queue<T> {
        fn state_waiting(&self) -> usize {
            self.inner.state.lock().waiting
        }
    }
}
