//! A watch that survives its connection (client-go's `tools/watch`): [`RetryWatcher`],
//! and [`RetryWatcher::until`] to wait for a change.
//!
//! A plain watch ends when the server closes it (its timeout, a restart, a dropped
//! connection). A [`RetryWatcher`] starts it again from the resourceVersion of the last
//! event or bookmark it saw, so no change is lost and none is repeated, without listing
//! anything again. It ends only when it cannot go on without skipping changes:
//!
//! - the server answers 410 Gone (the resourceVersion is older than what it keeps): the
//!   `ERROR` event comes out, then the end. Client-go retries a watch *refused at its start*
//!   with 410 forever; it can never succeed, so here that refusal comes out as an `Err`
//!   item, then the end;
//! - the watch is refused for lack of rights (401, 403): an `Err` item, then the end;
//! - an event has no resourceVersion, so the watch could not be resumed after it: an
//!   `ERROR` event (500, `InternalError`), then the end;
//! - an event is longer than the watch's limit
//!   ([`MAX_WATCH_EVENT_BYTES`](kubekit_client::rest::MAX_WATCH_EVENT_BYTES) unless set otherwise):
//!   the [`Error::TooLarge`] comes out, then the end. Every restart would meet the same
//!   event again.
//!
//! Everything else (a closed or dropped connection, a timeout, any other `ERROR` event)
//! restarts the watch: at once after a watch that ran for a while, at most once per
//! [`RetryWatcher::min_restart_delay`] (1 s by default) when it keeps failing, after the
//! `retryAfterSeconds` an `ERROR` event asks for. An object that does not decode is an
//! `Err` item and the watch goes on, as in every kubekit watch: that change is reported,
//! not passed on. Bookmarks are asked for and move the resourceVersion on, but are not
//! passed on.
//!
//! The first resourceVersion must be a real one (from a list or an object): `""` and
//! `"0"` would start from an arbitrary point, as client-go refuses them too.
//!
//! ```no_run
//! # async fn demo(clientset: kubekit::clientset::Clientset) -> Result<(), Box<dyn std::error::Error>> {
//! use futures_util::StreamExt;
//! use kubekit::cache::ListWatch;
//! use kubekit::clientset::ListOptions;
//! use kubekit::watch::RetryWatcher;
//!
//! let pods = clientset.core_v1().pods("demo");
//! let list = pods.list(&ListOptions::default()).await?;
//! let from = list.metadata.resource_version.unwrap_or_default();
//! let mut events = RetryWatcher::new(ListWatch::new(pods), &from)?.stream();
//! while let Some(event) = events.next().await {
//!     println!("{}", event?.type_name());
//! }
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::Resource;
use tokio::time::Instant;

use crate::cache::ListerWatcher;
use kubekit_client::clientset::{ListOptions, WatchStream};
use kubekit_client::rest::{Error, Result, WatchEvent};

/// A watch restarted from where it stopped; see the [module docs](self).
pub struct RetryWatcher<K, W> {
    client: W,
    resource_version: String,
    min_restart_delay: Duration,
    events: Option<WatchStream<K>>,
    last_start: Option<Instant>,
    done: bool,
}

impl<K, W> std::fmt::Debug for RetryWatcher<K, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryWatcher")
            .field("resource_version", &self.resource_version)
            .field("min_restart_delay", &self.min_restart_delay)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<K, W> RetryWatcher<K, W>
where
    K: Resource + Send + 'static,
    W: ListerWatcher<K>,
{
    /// A watch of what `client` watches, from `resource_version` (not `""` or `"0"`).
    pub fn new(client: W, resource_version: &str) -> Result<Self> {
        if matches!(resource_version, "" | "0") {
            return Err(Error::Request(format!(
                "a RetryWatcher cannot start from resourceVersion {resource_version:?}: \
                 the server would start from an arbitrary point; list first and watch from \
                 the list's resourceVersion"
            )));
        }
        Ok(Self {
            client,
            resource_version: resource_version.to_string(),
            min_restart_delay: Duration::from_secs(1),
            events: None,
            last_start: None,
            done: false,
        })
    }

    /// The shortest time between two starts of the watch (default 1 s), so that a server
    /// that keeps refusing or closing it is not asked in a loop.
    pub fn min_restart_delay(mut self, delay: Duration) -> Self {
        self.min_restart_delay = delay;
        self
    }

    /// The resourceVersion the watch would start again from: that of the last event or
    /// bookmark received.
    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }

    /// The next event; `None` once the watch has ended (see the [module docs](self)).
    pub async fn next(&mut self) -> Option<Result<WatchEvent<K>>> {
        while !self.done {
            let Some(events) = self.events.as_mut() else {
                if let Some(refusal) = self.start().await {
                    self.done = true;
                    return Some(Err(refusal));
                }
                continue;
            };
            match events.next().await {
                None => self.events = None,
                Some(Err(e @ Error::Decode { .. })) => return Some(Err(e)),
                Some(Err(e @ Error::TooLarge { .. })) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, resource_version = %self.resource_version, "watch broke; starting it again");
                    self.events = None;
                }
                Some(Ok(WatchEvent::Error(status))) => {
                    self.events = None;
                    if status.code == Some(410) {
                        self.done = true;
                        return Some(Ok(WatchEvent::Error(status)));
                    }
                    let details = status.details.as_ref();
                    let retry_after = details.and_then(|d| d.retry_after_seconds).unwrap_or(0);
                    tracing::debug!(?status, "watch ended by an ERROR event; starting it again");
                    let retry_after = u64::try_from(retry_after).unwrap_or(0);
                    tokio::time::sleep(Duration::from_secs(retry_after)).await;
                }
                Some(Ok(event)) => {
                    let resource_version = match &event {
                        WatchEvent::Bookmark(b) => Some(b.resource_version.as_str()),
                        event => event
                            .object()
                            .and_then(|o| crate::cache::meta_ref(o).resource_version()),
                    };
                    match resource_version {
                        Some(rv) if !rv.is_empty() => self.resource_version = rv.to_string(),
                        _ => return Some(Ok(self.cannot_resume_after(event.type_name()))),
                    }
                    if !matches!(event, WatchEvent::Bookmark(_)) {
                        return Some(Ok(event));
                    }
                }
            }
        }
        None
    }

    /// Watches until `condition` holds for a change and returns that change (client-go's
    /// `watchtools.Until`; call it again for the next condition, and bound the wait with
    /// `tokio::time::timeout`). Objects that do not decode are logged and skipped. If the
    /// watcher ends first, the error says why: the server's refusal, or the status of
    /// the `ERROR` event that ended it.
    pub async fn until(
        &mut self,
        mut condition: impl FnMut(&WatchEvent<K>) -> bool,
    ) -> Result<WatchEvent<K>> {
        let mut ended_by = None;
        while let Some(item) = self.next().await {
            match item {
                Ok(WatchEvent::Error(status)) => ended_by = Some(status),
                Ok(event) if condition(&event) => return Ok(event),
                Ok(_) => {}
                Err(e @ Error::Decode { .. }) => {
                    tracing::warn!(error = %e, "skipping an event that does not decode");
                }
                Err(refusal) => return Err(refusal),
            }
        }
        let status = ended_by.map_or_else(|| self.ended_status("the watch ended"), |s| *s);
        Err(Error::from_status("WATCH", self.client.describe(), status))
    }

    /// The events as a stream, of the type a plain watch has (see [`next`](Self::next)).
    pub fn stream(self) -> WatchStream<K> {
        let events = futures_util::stream::unfold(self, |mut watcher| async move {
            let event = watcher.next().await?;
            Some((event, watcher))
        });
        events.boxed()
    }

    /// Starts the watch, no sooner than `min_restart_delay` after the last start: the
    /// refusal that ends the watcher, if the server gave one.
    async fn start(&mut self) -> Option<Error> {
        if let Some(last) = self.last_start {
            tokio::time::sleep_until(last + self.min_restart_delay).await;
        }
        self.last_start = Some(Instant::now());
        let opts = ListOptions {
            resource_version: Some(self.resource_version.clone()),
            allow_watch_bookmarks: true,
            ..ListOptions::default()
        };
        match self.client.watch(opts).await {
            Ok(events) => self.events = Some(events),
            Err(e) if e.code() == Some(410) || e.is_forbidden() || e.is_unauthorized() => {
                return Some(e);
            }
            Err(e) => {
                let what = self.client.describe();
                tracing::warn!(error = %e, %what, "watch failed; starting it again");
            }
        }
        None
    }

    /// Ends the watcher: after an event without a resourceVersion it could not resume
    /// without skipping or repeating changes.
    fn cannot_resume_after(&mut self, type_name: &str) -> WatchEvent<K> {
        self.done = true;
        let message = format!(
            "a {type_name} event without a resourceVersion; the watch cannot be resumed after it"
        );
        WatchEvent::Error(Box::new(self.ended_status(&message)))
    }

    /// The status (500 `InternalError`) of the watcher's own end: `message`.
    fn ended_status(&self, message: &str) -> Status {
        Status {
            code: Some(500),
            reason: Some("InternalError".into()),
            status: Some("Failure".into()),
            message: Some(format!("RetryWatcher: {message}")),
            ..Status::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusDetails;

    use super::*;
    use crate::cache::test_support::{Fake, Script, cm, error_event, status, transport};
    use kubekit_client::rest::Bookmark;

    fn watcher(script: &Arc<Script>) -> RetryWatcher<ConfigMap, Fake> {
        RetryWatcher::new(Fake(script.clone()), "3").unwrap()
    }

    /// The error of an object that does not decode.
    fn undecodable() -> Error {
        let source = serde_json::from_str::<u8>("x").unwrap_err();
        Error::decode("ConfigMap", source, b"x")
    }

    /// `(type, name, resourceVersion)` of an event, or the code of an `ERROR` event.
    fn describe(event: &WatchEvent<ConfigMap>) -> (&'static str, String) {
        let what = match event {
            WatchEvent::Error(status) => format!("{:?}", status.code),
            event => {
                let meta = &event.object().unwrap().metadata;
                let name = meta.name.as_deref().unwrap_or_default();
                format!(
                    "{name}@{}",
                    meta.resource_version.as_deref().unwrap_or_default()
                )
            }
        };
        (event.type_name(), what)
    }

    fn watched_from(script: &Script) -> Vec<String> {
        let calls = script.calls();
        assert!(
            calls
                .iter()
                .all(|(kind, o)| *kind == "watch" && o.allow_watch_bookmarks)
        );
        (calls.into_iter())
            .map(|(_, o)| o.resource_version.unwrap_or_default())
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_watch_restarts_from_the_last_event_or_bookmark_and_bookmarks_are_not_passed_on()
     {
        let script = Arc::new(Script::default());
        let first = script.watch();
        first.send(Ok(WatchEvent::Added(cm("a", "5")))).unwrap();
        let bookmark = Bookmark {
            resource_version: "7".into(),
            ..Default::default()
        };
        first.send(Ok(WatchEvent::Bookmark(bookmark))).unwrap();
        drop(first);
        let second = script.watch();
        second.send(Ok(WatchEvent::Modified(cm("a", "9")))).unwrap();
        second.send(Err(transport())).unwrap();
        script
            .watch()
            .send(Ok(WatchEvent::Deleted(cm("a", "11"))))
            .unwrap();

        let mut w = watcher(&script);
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(describe(&w.next().await.unwrap().unwrap()));
        }
        assert_eq!(
            seen,
            [
                ("ADDED", "a@5".to_string()),
                ("MODIFIED", "a@9".to_string()),
                ("DELETED", "a@11".to_string())
            ]
        );
        assert_eq!(watched_from(&script), ["3", "7", "9"]);
        assert_eq!(w.resource_version(), "11");
    }

    #[tokio::test(start_paused = true)]
    async fn a_410_error_event_is_passed_on_and_ends_the_watch_and_its_stream() {
        let script = Arc::new(Script::default());
        script
            .watch()
            .send(Ok(error_event(410, "Expired")))
            .unwrap();
        let mut events = watcher(&script).stream();
        let event = events.next().await.unwrap().unwrap();
        assert_eq!(describe(&event), ("ERROR", "Some(410)".into()));
        assert!(events.next().await.is_none());
        assert_eq!(watched_from(&script), ["3"]);
    }

    /// After what `script` holds, a watch with `ADDED a@5`: the time (tokio's clock) a
    /// watcher takes to give it.
    async fn time_to_a_change(script: &Arc<Script>) -> Duration {
        let added = WatchEvent::Added(cm("a", "5"));
        script.watch().send(Ok(added)).unwrap();
        let start = Instant::now();
        let event = watcher(script).next().await.unwrap().unwrap();
        assert_eq!(describe(&event), ("ADDED", "a@5".into()));
        start.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_that_ran_longer_than_the_restart_delay_restarts_at_once() {
        let script = Arc::new(Script::default());
        let first = script.watch();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(first);
        });
        assert_eq!(time_to_a_change(&script).await, Duration::from_secs(5));
        assert_eq!(watched_from(&script), ["3", "3"]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_over_the_size_limit_is_reported_and_ends_the_watch() {
        let script = Arc::new(Script::default());
        let too_large = Error::TooLarge {
            what: "watch event".into(),
            limit: 16,
        };
        script.watch().send(Err(too_large)).unwrap();
        let mut w = watcher(&script);
        assert!(matches!(w.next().await, Some(Err(Error::TooLarge { .. }))));
        assert!(w.next().await.is_none());
        assert_eq!(watched_from(&script), ["3"]);
    }

    #[tokio::test(start_paused = true)]
    async fn failed_starts_are_retried_at_most_once_per_min_restart_delay() {
        let script = Arc::new(Script::default());
        script.watch_error(transport());
        script.watch_error(status(500, "InternalError"));
        assert_eq!(time_to_a_change(&script).await, Duration::from_secs(2));
        assert_eq!(watched_from(&script), ["3", "3", "3"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_start_refused_as_gone_forbidden_or_unauthorized_ends_the_watch_with_the_refusal() {
        for (code, reason) in [(410, "Expired"), (403, "Forbidden"), (401, "Unauthorized")] {
            let script = Arc::new(Script::default());
            script.watch_error(status(code, reason));
            let mut w = watcher(&script);
            let refusal = w.next().await.unwrap().unwrap_err();
            assert_eq!(refusal.code(), Some(code));
            assert!(w.next().await.is_none(), "{reason}: ended");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn another_error_event_restarts_the_watch_after_its_retry_after_seconds() {
        let script = Arc::new(Script::default());
        let WatchEvent::Error(mut status) = error_event(429, "TooManyRequests") else {
            unreachable!()
        };
        status.details = Some(StatusDetails {
            retry_after_seconds: Some(3),
            ..Default::default()
        });
        script.watch().send(Ok(WatchEvent::Error(status))).unwrap();
        assert_eq!(time_to_a_change(&script).await, Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn an_object_that_does_not_decode_is_reported_and_the_watch_goes_on() {
        let script = Arc::new(Script::default());
        let events = script.watch();
        events.send(Err(undecodable())).unwrap();
        events.send(Ok(WatchEvent::Added(cm("a", "5")))).unwrap();
        let mut w = watcher(&script);
        assert!(matches!(w.next().await, Some(Err(Error::Decode { .. }))));
        let event = w.next().await.unwrap().unwrap();
        assert_eq!(describe(&event), ("ADDED", "a@5".into()));
        assert_eq!(watched_from(&script), ["3"]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_without_a_resource_version_ends_the_watch_with_an_internal_error() {
        let script = Arc::new(Script::default());
        script
            .watch()
            .send(Ok(WatchEvent::Added(cm("a", ""))))
            .unwrap();
        let mut w = watcher(&script);
        let event = w.next().await.unwrap().unwrap();
        assert_eq!(describe(&event), ("ERROR", "Some(500)".into()));
        assert!(w.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn until_returns_the_first_change_the_condition_accepts_and_can_be_called_again() {
        let script = Arc::new(Script::default());
        let events = script.watch();
        for (name, rv) in [("a", "4"), ("b", "5"), ("c", "6")] {
            events.send(Ok(WatchEvent::Added(cm(name, rv)))).unwrap();
        }
        events.send(Err(undecodable())).unwrap();
        events.send(Ok(WatchEvent::Modified(cm("a", "7")))).unwrap();
        events.send(Ok(error_event(410, "Expired"))).unwrap();

        let mut w = watcher(&script);
        let named = |name: &'static str| {
            move |e: &WatchEvent<ConfigMap>| {
                e.object().unwrap().metadata.name.as_deref() == Some(name)
            }
        };
        let b = w.until(named("b")).await.unwrap();
        assert_eq!(describe(&b), ("ADDED", "b@5".into()));
        let a = w.until(named("a")).await.unwrap();
        assert_eq!(
            describe(&a),
            ("MODIFIED", "a@7".into()),
            "past c and the bad object"
        );
        let gone = w.until(named("nobody")).await.unwrap_err();
        assert_eq!(gone.code(), Some(410), "{gone}");
        let ended = w.until(named("nobody")).await.unwrap_err();
        assert!(ended.to_string().contains("the watch ended"), "{ended}");
    }

    #[test]
    fn an_empty_or_zero_resource_version_is_refused() {
        for rv in ["", "0"] {
            let err = RetryWatcher::<ConfigMap, _>::new(Fake(Arc::default()), rv).unwrap_err();
            assert!(err.to_string().contains("list first"), "{err}");
        }
    }
}
