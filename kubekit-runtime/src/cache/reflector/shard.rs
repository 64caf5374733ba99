//! The reflector's shard filtering: whether an object belongs to its shard, the selector
//! its lists and watches carry, what the server does with it, and the target of a shard
//! control. See the module docs of the reflector (**Shard**).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Core, ReflectorOptions};
use crate::cache::key::{KeyError, key_of};
use crate::cache::object::Object;
use crate::cache::shard::{ShardControl, ShardFilter, ShardSelector, ShardTarget, ShardWarnings};
use kubekit_client::clientset::ListOptions;

impl Core {
    /// The `shardSelector` of every list and watch.
    pub(super) fn shard_selector(&self) -> Option<String> {
        self.shard()
            .and_then(|shard| shard.param().map(str::to_string))
    }

    /// The current shard filter, if any.
    pub(super) fn shard(&self) -> Option<Arc<ShardFilter>> {
        self.shard.lock().clone()
    }

    /// Adopts the shard control's current target: its generation, and whether it is
    /// [`ShardTarget::Nothing`]. A new selector's filter starts not knowing what the server
    /// does with it.
    pub(super) fn adopt_target(&self, control: &ShardControl) -> (u64, bool) {
        let (generation, target) = control.target();
        let current = self.shard();
        let filter = match &target {
            ShardTarget::Everything | ShardTarget::Nothing => None,
            ShardTarget::Shard(selector) => match current {
                Some(f) if f.selector() == selector => Some(f),
                _ => Some(shard_filter(
                    &self.opts,
                    selector.clone(),
                    &self.shard_warnings,
                )),
            },
        };
        *self.shard.lock() = filter;
        (generation, target == ShardTarget::Nothing)
    }

    /// Learns, by listing one object, whether the server applies the shard selector
    /// (a watch does not say); false when `cancel` fired meanwhile. A failure is only
    /// logged: the stream that follows meets the same server and reports it.
    pub(super) async fn probe_shard(&self, cancel: &CancellationToken) -> bool {
        let Some(shard) = self.shard() else {
            return true;
        };
        if shard.param().is_none() {
            // Never sent: nothing to learn from the server.
            shard.listed(&self.opts.name, None);
            return true;
        }
        let opts = ListOptions {
            limit: Some(1),
            shard_selector: self.shard_selector(),
            ..Default::default()
        };
        let listed = tokio::select! {
            _ = cancel.cancelled() => return false,
            listed = self.lw.list_page(opts) => listed,
        };
        match listed {
            Ok(page) => shard.listed(&self.opts.name, page.shard_selector.as_deref()),
            Err(e) => tracing::debug!(
                reflector = %self.opts.name,
                "could not learn whether the server applies the shard selector: {e}"
            ),
        }
        true
    }

    /// Whether `obj` is in the reflector's shard (always, without one); one that is not
    /// is counted as dropped.
    pub(super) fn in_shard(&self, obj: &Object) -> bool {
        self.shard
            .lock()
            .as_ref()
            .is_none_or(|shard| shard.keeps(obj.meta()))
    }

    /// A watched object outside the shard: dropped, or deleted from the store if the store
    /// holds it (it moved out of the shard).
    pub(super) fn outside_shard(&self, obj: Object) -> Result<(), KeyError> {
        let key = key_of(obj.meta())?;
        if self.store.known(&key).is_none() {
            return Ok(());
        }
        self.store.delete(obj)
    }
}

/// A filter of `selector` for the reflector of `opts`, bound to its shard metrics and
/// giving each warning once with its other filters (`warnings`).
pub(super) fn shard_filter<K>(
    opts: &ReflectorOptions<K>,
    selector: ShardSelector,
    warnings: &Arc<ShardWarnings>,
) -> Arc<ShardFilter> {
    let metrics = opts.metrics.as_ref().map(|m| m.bind_shard(&opts.name));
    Arc::new(ShardFilter::new(selector, metrics).warning_once_with(warnings))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use crate::cache::reflector::tests::{harness, metered_harness};
    use crate::cache::test_support::{assert_metric_lines, cm, initial_events_end};
    use crate::cache::{DeltaType, ShardControl, ShardSelector, ShardTarget};
    use kubekit_client::rest::WatchEvent;

    /// A ConfigMap `name` at `rv` with `uid`.
    fn cm_uid(name: &str, rv: &str, uid: &str) -> ConfigMap {
        let mut c = cm(name, rv);
        c.metadata.uid = Some(uid.into());
        c
    }

    /// The lower half of the hash space by uid, and uids in it and out of it.
    fn lower_half() -> (ShardSelector, Vec<String>, Vec<String>) {
        let shard = ShardSelector::uid(crate::cache::ShardRange::new(0, 1 << 63).unwrap());
        // Leading digits: FNV-1a barely carries a string's last bytes into its top bits.
        let (inside, outside) = (0..40)
            .map(|i| format!("{i}-uid"))
            .partition(|uid| shard.contains(crate::cache::shard_hash(uid)));
        (shard, inside, outside)
    }

    /// One object of each half at resourceVersion 5: `in0` inside the shard, `out0` outside.
    fn one_of_each(inside: &[String], outside: &[String]) -> Vec<ConfigMap> {
        vec![
            cm_uid("in0", "5", &inside[0]),
            cm_uid("out0", "5", &outside[0]),
        ]
    }

    #[tokio::test(start_paused = true)]
    async fn a_sharded_reflector_filters_itself_when_the_server_ignores_its_selector() {
        let (shard, inside, outside) = lower_half();
        let (h, registry) = metered_harness(|o| {
            o.shard = Some(shard.clone());
        });
        // The server sends every object and no shardInfo.
        h.script
            .list_sharded("10", None, one_of_each(&inside, &outside));
        let events = h.script.watch();
        let task = h.start();
        h.settle().await;
        events
            .send(Ok(WatchEvent::Added(cm_uid("in1", "11", &inside[1]))))
            .unwrap();
        events
            .send(Ok(WatchEvent::Added(cm_uid("out1", "12", &outside[1]))))
            .unwrap();
        events
            .send(Ok(WatchEvent::Deleted(cm_uid("out0", "13", &outside[0]))))
            .unwrap();
        h.settle().await;
        h.drain().await;

        let mut cached = h.indexer.list_keys();
        cached.sort();
        assert_eq!(cached, ["ns/in0", "ns/in1"]);
        assert_eq!(
            h.reflector.last_sync_resource_version(),
            "13",
            "a dropped event still advances the version"
        );
        let calls = h.script.calls();
        for (kind, opts) in &calls {
            assert_eq!(
                opts.shard_selector.as_deref(),
                Some(shard.to_string().as_str()),
                "{kind} carries the selector"
            );
        }
        assert_metric_lines(
            &registry,
            &[
                r#"reflector_shard_server_filtered{name="cms"} 0"#,
                r#"reflector_shard_dropped_objects_total{name="cms"} 3"#,
            ],
        );
        h.cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_sharded_reflector_reports_server_filtering_when_the_list_echoes_its_selector() {
        let (shard, inside, _) = lower_half();
        let (h, registry) = metered_harness(|o| {
            o.shard = Some(shard.clone());
        });
        h.script.list_sharded(
            "10",
            Some(&shard.to_string()),
            vec![cm_uid("in0", "5", &inside[0])],
        );
        let _events = h.script.watch();
        let task = h.start();
        h.settle().await;
        h.drain().await;
        assert_eq!(h.indexer.list_keys(), ["ns/in0"]);
        assert_metric_lines(
            &registry,
            &[
                r#"reflector_shard_server_filtered{name="cms"} 1"#,
                r#"reflector_shard_dropped_objects_total{name="cms"} 0"#,
            ],
        );
        h.cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_event_moving_a_cached_object_out_of_the_shard_deletes_it() {
        let (shard, inside, outside) = lower_half();
        let h = harness(|o| o.shard = Some(shard));
        h.script
            .list_sharded("10", None, vec![cm_uid("a", "5", &inside[0])]);
        let events = h.script.watch();
        let task = h.start();
        h.settle().await;
        h.drain().await;
        assert_eq!(h.indexer.list_keys(), ["ns/a"]);
        events
            .send(Ok(WatchEvent::Modified(cm_uid("a", "11", &outside[0]))))
            .unwrap();
        h.settle().await;
        assert_eq!(h.drain().await, [("ns/a".to_string(), DeltaType::Deleted)]);
        assert!(h.indexer.list_keys().is_empty());
        h.cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_sharded_streaming_list_lists_one_object_to_learn_what_the_server_does() {
        let (shard, inside, outside) = lower_half();
        let h = harness(|o| {
            o.use_streaming_list = true;
            o.shard = Some(shard.clone());
        });
        h.script.list_sharded("10", None, vec![]);
        let events = h.script.watch();
        let task = h.start();
        h.settle().await;
        events
            .send(Ok(WatchEvent::Added(cm_uid("in0", "5", &inside[0]))))
            .unwrap();
        events
            .send(Ok(WatchEvent::Added(cm_uid("out0", "5", &outside[0]))))
            .unwrap();
        events.send(Ok(initial_events_end("8"))).unwrap();
        h.settle().await;
        h.drain().await;
        assert!(h.fifo.has_synced());
        assert_eq!(h.indexer.list_keys(), ["ns/in0"]);
        let calls = h.script.calls();
        assert_eq!(h.script.kinds(), ["list", "watch"]);
        let (probe, stream) = (&calls[0].1, &calls[1].1);
        assert_eq!(probe.limit, Some(1));
        assert_eq!(probe.resource_version, None, "the latest state");
        assert_eq!(probe.shard_selector, Some(shard.to_string()));
        assert_eq!(stream.send_initial_events, Some(true));
        assert_eq!(stream.shard_selector, Some(shard.to_string()));
        h.cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_shard_control_makes_a_running_reflector_relist_keeping_what_stays_in_its_shard() {
        let (shard, inside, outside) = lower_half();
        let control = ShardControl::new(ShardTarget::Shard(shard.clone()));
        let h = harness(|o| o.shard_control = Some(control.clone()));
        h.script
            .list_sharded("10", None, one_of_each(&inside, &outside));
        let _first = h.script.watch();
        let task = h.start();
        control.listed(0).await;
        h.drain().await;
        assert_eq!(h.indexer.list_keys(), ["ns/in0"]);

        // Widened to everything while watching: the watch is dropped and the relist (at the
        // last version, without a selector) adds what is now in, keeping what stayed.
        h.script
            .list_sharded("20", None, one_of_each(&inside, &outside));
        let _second = h.script.watch();
        let generation = control.set(ShardTarget::Everything);
        control.listed(generation).await;
        let deltas = h.drain().await;
        assert!(
            !deltas.contains(&("ns/in0".into(), DeltaType::Deleted)),
            "an object still in the shard is never deleted: {deltas:?}"
        );
        let mut cached = h.indexer.list_keys();
        cached.sort();
        assert_eq!(cached, ["ns/in0", "ns/out0"]);
        let lists: Vec<_> = h
            .script
            .calls()
            .into_iter()
            .filter(|(kind, _)| *kind == "list")
            .collect();
        assert_eq!(lists.len(), 2, "{lists:?}");
        assert_eq!(lists[1].1.shard_selector, None);
        assert_eq!(lists[1].1.resource_version.as_deref(), Some("10"));

        // Nothing: the store lets go of everything without asking the server.
        let generation = control.set(ShardTarget::Nothing);
        control.listed(generation).await;
        h.drain().await;
        assert!(h.indexer.list_keys().is_empty());
        h.cancel.cancel();
        task.await.unwrap();
    }

    /// A ConfigMap `name` at `rv` controlled by the owner of uid `controller` (none: `None`).
    fn child(name: &str, rv: &str, controller: Option<&str>) -> ConfigMap {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let mut c = cm(name, rv);
        c.metadata.owner_references = controller.map(|uid| {
            vec![OwnerReference {
                uid: uid.into(),
                controller: Some(true),
                ..OwnerReference::default()
            }]
        });
        c
    }

    #[tokio::test(start_paused = true)]
    async fn a_reflector_sharded_by_controller_uid_never_sends_the_selector_and_filters_alone() {
        let (by_uid, inside, outside) = lower_half();
        let key = crate::cache::ShardKey::ControllerUid;
        let shard = ShardSelector::new(key, by_uid.ranges().to_vec()).unwrap();
        let (h, registry) = metered_harness(|o| {
            o.use_streaming_list = true;
            o.shard = Some(shard);
        });
        let events = h.script.watch();
        let task = h.start();
        h.settle().await;
        for obj in [
            child("mine", "5", Some(&inside[0])),
            child("theirs", "6", Some(&outside[0])),
            child("nobodys", "7", None),
        ] {
            events.send(Ok(WatchEvent::Added(obj))).unwrap();
        }
        events.send(Ok(initial_events_end("8"))).unwrap();
        h.settle().await;
        h.drain().await;
        let mut cached = h.indexer.list_keys();
        cached.sort();
        assert_eq!(cached, ["ns/mine", "ns/nobodys"]);
        assert_eq!(h.script.kinds(), ["watch"], "no probe: nothing to learn");
        assert_eq!(h.script.calls()[0].1.shard_selector, None, "never sent");
        assert_metric_lines(
            &registry,
            &[
                r#"reflector_shard_server_filtered{name="cms"} 0"#,
                r#"reflector_shard_dropped_objects_total{name="cms"} 1"#,
            ],
        );

        // Its controller changed to one of another shard: it leaves this one's cache.
        events
            .send(Ok(WatchEvent::Modified(child(
                "mine",
                "9",
                Some(&outside[1]),
            ))))
            .unwrap();
        h.settle().await;
        assert_eq!(
            h.drain().await,
            [("ns/mine".to_string(), DeltaType::Deleted)]
        );
        h.cancel.cancel();
        task.await.unwrap();
    }
}
