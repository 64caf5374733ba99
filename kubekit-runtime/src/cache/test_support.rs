//! Test support for code built on the cache (the `test-util` feature): a scripted
//! lister-watcher of ConfigMaps, builders of the objects and errors it answers with, and
//! checks of metrics.

use std::collections::VecDeque;
use std::sync::Arc;

use futures_util::stream;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, Status};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::listwatch::ListerWatcher;
use kubekit_client::clientset::{ListOptions, WatchStream};
use kubekit_client::rest::{Bookmark, Error, ObjectList, WatchEvent};

/// The sending end of a scripted watch: each event sent is the watch's next.
pub type Events = mpsc::UnboundedSender<Result<WatchEvent<ConfigMap>, Error>>;

/// Lists and watches answered from a script; every call is recorded.
#[derive(Default)]
pub struct Script {
    lists: Mutex<VecDeque<Result<ObjectList<ConfigMap>, Error>>>,
    watches: Mutex<VecDeque<Result<WatchStream<ConfigMap>, Error>>>,
    calls: Mutex<Vec<(&'static str, ListOptions)>>,
}

impl Script {
    /// Scripts a list at resourceVersion `rv`, continued by `cont`, of the ConfigMaps
    /// `(name, resourceVersion)`.
    pub fn list(&self, rv: &str, cont: Option<&str>, names: &[(&str, &str)]) {
        self.lists.lock().push_back(Ok(ObjectList {
            metadata: ListMeta {
                resource_version: Some(rv.into()),
                continue_: cont.map(Into::into),
                ..Default::default()
            },
            items: names.iter().map(|(n, v)| cm(n, v)).collect(),
            ..ObjectList::default()
        }));
    }

    /// A whole list at `rv` of `items`, echoing `shard_selector` as the server's
    /// `metadata.shardInfo.selector`.
    pub fn list_sharded(&self, rv: &str, shard_selector: Option<&str>, items: Vec<ConfigMap>) {
        self.lists.lock().push_back(Ok(ObjectList {
            metadata: ListMeta {
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            shard_selector: shard_selector.map(Into::into),
            items,
            ..ObjectList::default()
        }));
    }

    /// Scripts a list that fails with `e`.
    pub fn list_error(&self, e: Error) {
        self.lists.lock().push_back(Err(e));
    }

    /// A watch whose events the test sends.
    pub fn watch(&self) -> Events {
        let (tx, rx) = mpsc::unbounded_channel();
        let s = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
        self.watches.lock().push_back(Ok(Box::pin(s)));
        tx
    }

    /// Scripts a watch that fails with `e` when opened.
    pub fn watch_error(&self, e: Error) {
        self.watches.lock().push_back(Err(e));
    }

    /// The calls made so far, `"list"` or `"watch"`, with their options.
    pub fn calls(&self) -> Vec<(&'static str, ListOptions)> {
        self.calls.lock().clone()
    }

    /// The calls made so far, `"list"` or `"watch"`.
    pub fn kinds(&self) -> Vec<&'static str> {
        self.calls.lock().iter().map(|(k, _)| *k).collect()
    }
}

/// The scripted answer, or (the script ran out) one that never comes.
fn scripted<'a, T: Send + 'a>(next: Option<T>) -> futures_util::future::BoxFuture<'a, T> {
    Box::pin(async move {
        match next {
            Some(r) => r,
            None => std::future::pending().await,
        }
    })
}

/// A scripted lister-watcher: when the script runs out, calls wait forever.
pub struct Fake(pub Arc<Script>);

impl ListerWatcher<ConfigMap> for Fake {
    fn list(
        &self,
        opts: ListOptions,
    ) -> futures_util::future::BoxFuture<'_, kubekit_client::rest::Result<ObjectList<ConfigMap>>>
    {
        self.0.calls.lock().push(("list", opts));
        scripted(self.0.lists.lock().pop_front())
    }

    fn watch(
        &self,
        opts: ListOptions,
    ) -> futures_util::future::BoxFuture<'_, kubekit_client::rest::Result<WatchStream<ConfigMap>>>
    {
        self.0.calls.lock().push(("watch", opts));
        scripted(self.0.watches.lock().pop_front())
    }

    fn describe(&self) -> String {
        "configmaps.v1 (scripted)".into()
    }
}

/// A ConfigMap `ns/name` at resourceVersion `rv`.
pub fn cm(name: &str, rv: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.namespace = Some("ns".into());
    c.metadata.name = Some(name.into());
    c.metadata.resource_version = Some(rv.into());
    c
}

fn status_object(code: u16, reason: &str) -> Status {
    Status {
        code: Some(code.into()),
        reason: Some(reason.into()),
        message: Some(format!("scripted {reason}")),
        ..Default::default()
    }
}

/// An API error with a `Status` of `code` and `reason`.
pub fn status(code: u16, reason: &str) -> Error {
    Error::from_status("GET", "/api/v1/configmaps", status_object(code, reason))
}

/// An `ERROR` watch event carrying a `Status` of `code` and `reason`.
pub fn error_event(code: u16, reason: &str) -> WatchEvent<ConfigMap> {
    WatchEvent::Error(Box::new(status_object(code, reason)))
}

/// The bookmark that ends a streaming list's initial events, at `rv`.
pub fn initial_events_end(rv: &str) -> WatchEvent<ConfigMap> {
    let mut end = Bookmark {
        resource_version: rv.into(),
        ..Default::default()
    };
    end.annotations.insert(
        kubekit_client::rest::INITIAL_EVENTS_END_ANNOTATION.into(),
        "true".into(),
    );
    WatchEvent::Bookmark(end)
}

/// A transport error (the connection failed).
pub fn transport() -> Error {
    Error::Transport {
        verb: "GET".into(),
        url: "/api/v1/configmaps".into(),
        source: "connection refused".into(),
    }
}

/// Waits (real time, at most 10 s) until `cond` holds; panics otherwise.
pub async fn eventually(cond: impl Fn() -> bool) {
    for _ in 0..1000 {
        if cond() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("condition not reached within 10 s");
}

/// Asserts that `registry`'s metrics, in the text format, hold every line of `lines`;
/// returns that text for further checks.
#[track_caller]
pub fn assert_metric_lines(
    registry: &prometheus_client::registry::Registry,
    lines: &[&str],
) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    for line in lines {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
    text
}
