//! Core Events (`v1`) and `events.k8s.io/v1` Events are one store, as on the real server:
//! objects are kept in the core form and shown in the form of the API they are asked
//! through; writes through `events.k8s.io` are kept in the core form.
//!
//! The fields map one to one: `regarding` ↔ `involvedObject`, `note` ↔ `message`,
//! `reportingController` ↔ `reportingComponent`, `deprecatedSource` ↔ `source`,
//! `deprecatedFirstTimestamp` ↔ `firstTimestamp`, `deprecatedLastTimestamp` ↔
//! `lastTimestamp`, `deprecatedCount` ↔ `count`; the others (`action`, `reason`, `type`,
//! `eventTime`, `series`, `related`, `reportingInstance`) keep their names. As the real
//! server shows them, the times a form has are `null` when unset and a source `{}`; a core
//! Event's reporting component and instance are empty strings when unset.

use serde_json::{Map, Value};

use crate::resources::ResourceInfo;

/// (core name, `events.k8s.io` name) of the fields that are renamed.
const RENAMED: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// Whether `info` is `events.k8s.io` Events, kept as core Events.
pub(crate) fn is_events_v1(info: &ResourceInfo) -> bool {
    info.group == "events.k8s.io" && info.plural == "events"
}

/// Whether `info` is Events, through either API.
pub(crate) fn is_event(info: &ResourceInfo) -> bool {
    info.plural == "events" && (info.group.is_empty() || info.group == "events.k8s.io")
}

/// The table objects of `info` live in: core Events for `events.k8s.io` Events.
pub(crate) fn storage(info: &ResourceInfo) -> (String, String) {
    if is_events_v1(info) {
        (String::new(), "events".into())
    } else {
        (info.group.clone(), info.plural.clone())
    }
}

fn rename(obj: &Value, from_core: bool) -> Value {
    let Some(m) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        let renamed = RENAMED.iter().find_map(|(core, v1)| match from_core {
            true => (k == core).then_some(*v1),
            false => (k == v1).then_some(*core),
        });
        out.insert(renamed.unwrap_or(k).to_string(), v.clone());
    }
    Value::Object(out)
}

/// A stored (core) Event as `info`'s API shows it.
pub(crate) fn shown(info: &ResourceInfo, stored: &Value) -> Value {
    let (mut obj, times, source) = if is_events_v1(info) {
        let obj = rename(stored, true);
        (
            obj,
            &[
                "eventTime",
                "deprecatedFirstTimestamp",
                "deprecatedLastTimestamp",
            ][..],
            "deprecatedSource",
        )
    } else if is_event(info) {
        (
            stored.clone(),
            &["eventTime", "firstTimestamp", "lastTimestamp"][..],
            "source",
        )
    } else {
        return stored.clone();
    };
    if let Some(m) = obj.as_object_mut() {
        for t in times {
            m.entry(*t).or_insert(Value::Null);
        }
        m.entry(source).or_insert_with(|| Value::Object(Map::new()));
        if !is_events_v1(info) {
            m.entry("involvedObject")
                .or_insert_with(|| Value::Object(Map::new()));
            for reporter in ["reportingComponent", "reportingInstance"] {
                m.entry(reporter).or_insert_with(|| Value::from(""));
            }
        }
    }
    obj
}

/// An Event written through `info`'s API, in the stored (core) form, without the nulls,
/// empty source and empty reporting fields the API shows.
pub(crate) fn stored(info: &ResourceInfo, written: Value) -> Value {
    if !is_event(info) {
        return written;
    }
    let mut obj = if is_events_v1(info) {
        rename(&written, false)
    } else {
        written
    };
    if let Some(m) = obj.as_object_mut() {
        m.retain(|k, v| {
            !(v.is_null()
                || (k == "source" && v.as_object().is_some_and(Map::is_empty))
                || (k == "count" && v.as_i64() == Some(0))
                || (matches!(k.as_str(), "reportingComponent" | "reportingInstance") && v == ""))
        });
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(group: &str) -> ResourceInfo {
        crate::resources::builtin_of(group, "Event")
    }

    #[test]
    fn an_event_reads_alike_through_both_apis_and_is_stored_once() {
        let core = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod"},
            "message": "m", "source": {"component": "kubelet"}, "count": 3, "reason": "R"});
        let v1 = shown(&info("events.k8s.io"), &core);
        assert_eq!(v1["regarding"], json!({"kind": "Pod"}));
        assert_eq!(v1["note"], "m");
        assert_eq!(v1["deprecatedCount"], 3);
        assert_eq!(v1["eventTime"], Value::Null);
        assert_eq!(stored(&info("events.k8s.io"), v1), core);
        let shown_core = shown(&info(""), &core);
        assert_eq!(shown_core["firstTimestamp"], Value::Null);
        assert_eq!(stored(&info(""), shown_core), core);
        assert_eq!(shown(&info("events.k8s.io"), &json!("odd")), json!("odd"));
    }
}
