//! The pods the replay server serves: the fixture's templates (realistic Pods captured from
//! the real control plane by `bench/fixtures/capture.sh`), replicated to N pods, and the M
//! MODIFIED events that follow them, all serialised once at start-up.
//!
//! Pod `i` is template `i mod T` with name `<template name>-<i>`, namespace
//! `bench-<i mod 100>`, a UUID-formatted uid derived from `i` and resourceVersion `i + 1`;
//! everything else is the template's content (re-serialised by serde_json, whose maps sort
//! their keys as kubectl's output already does). Event `e` modifies pod `(e * 7919) mod N`:
//! resourceVersion `N + 1 + e` and annotation [`GENERATION_ANNOTATION`] set to `e`.
//!
//! Pods are kept as list items (no `kind`/`apiVersion`, as the API server writes the items
//! of a list); [`watch_event`] adds them in front of a watch event's object.

use std::ops::Range;
use std::path::Path;

use bytes::Bytes;
use serde_json::{Map, Value};

/// The annotation every pod carries and every MODIFIED event changes.
pub const GENERATION_ANNOTATION: &str = "bench.kubekit.dev/generation";
/// Its value in the initial pods.
const INITIAL_GENERATION: &str = "initial";
/// The stride between the pods of consecutive events (a prime, so the events spread over
/// every pod unless N is a multiple of it).
const EVENT_STRIDE: u64 = 7919;

/// The per-pod values spliced into a template.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Slot {
    Name,
    Namespace,
    Uid,
    ResourceVersion,
    Generation,
}

impl Slot {
    const ALL: [Slot; 5] = [
        Slot::Name,
        Slot::Namespace,
        Slot::Uid,
        Slot::ResourceVersion,
        Slot::Generation,
    ];

    /// The string the template holds in the slot's place until it is cut into pieces.
    fn placeholder(self) -> String {
        format!("\u{1}kubekit-bench:{self:?}\u{1}")
    }
}

/// One pod of the fixture, serialised with placeholders and cut around them.
#[derive(Debug)]
struct Template {
    /// The captured pod's name.
    name: String,
    /// JSON text between the slots: `literals[k]`, then `slots[k]`, ..., then the last one.
    literals: Vec<Vec<u8>>,
    slots: Vec<Slot>,
    /// Size of the template as served with its own values.
    bytes: usize,
}

/// The values of one pod.
struct PodValues<'a> {
    name: &'a str,
    namespace: &'a str,
    uid: &'a str,
    resource_version: &'a str,
    generation: &'a str,
}

impl Template {
    /// Prepares `pod` (an item of the fixture's PodList).
    fn new(index: usize, mut pod: Value) -> Result<Self, String> {
        let object = pod
            .as_object_mut()
            .ok_or(format!("item {index} is not a JSON object"))?;
        match object.get("kind") {
            None => {}
            Some(Value::String(kind)) if kind == "Pod" => {}
            Some(other) => return Err(format!("item {index} has kind {other}, not Pod")),
        }
        object.remove("kind");
        object.remove("apiVersion");
        let metadata = object
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or(format!("item {index} has no metadata object"))?;
        let name = metadata
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or(format!("item {index} has no metadata.name"))?
            .to_string();
        let own = PodValues {
            name: &name,
            namespace: &string_field(metadata, "namespace"),
            uid: &string_field(metadata, "uid"),
            resource_version: &string_field(metadata, "resourceVersion"),
            generation: INITIAL_GENERATION,
        };
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or(format!(
                "item {index} ({name}): metadata.annotations is not an object"
            ))?;
        annotations.insert(
            GENERATION_ANNOTATION.into(),
            Slot::Generation.placeholder().into(),
        );
        for (slot, field) in [
            (Slot::Name, "name"),
            (Slot::Namespace, "namespace"),
            (Slot::Uid, "uid"),
            (Slot::ResourceVersion, "resourceVersion"),
        ] {
            metadata.insert(field.into(), slot.placeholder().into());
        }
        let text = serde_json::to_string(&pod).map_err(|e| format!("item {index}: {e}"))?;
        let mut template = Self::cut(&text).map_err(|e| format!("item {index} ({name}): {e}"))?;
        let mut own_bytes = Vec::new();
        template.render(&mut own_bytes, &own);
        template.bytes = own_bytes.len();
        template.name = name;
        Ok(template)
    }

    /// Cuts the serialised template around its placeholders (each present exactly once).
    fn cut(text: &str) -> Result<Self, String> {
        let mut found = Vec::new();
        for slot in Slot::ALL {
            let quoted = serde_json::to_string(&slot.placeholder()).map_err(|e| e.to_string())?;
            let mut positions = text.match_indices(&quoted).map(|(at, _)| at);
            let at = positions
                .next()
                .ok_or(format!("placeholder of {slot:?} missing"))?;
            if positions.next().is_some() {
                return Err(format!("placeholder of {slot:?} appears twice"));
            }
            found.push((at, at + quoted.len(), slot));
        }
        found.sort();
        let mut literals = Vec::new();
        let mut slots = Vec::new();
        let mut from = 0;
        for (start, end, slot) in found {
            literals.push(text.as_bytes()[from..start].to_vec());
            slots.push(slot);
            from = end;
        }
        literals.push(text.as_bytes()[from..].to_vec());
        Ok(Self {
            name: String::new(),
            literals,
            slots,
            bytes: 0,
        })
    }

    /// Appends the pod with `values` to `out`.
    fn render(&self, out: &mut Vec<u8>, values: &PodValues<'_>) {
        for (literal, slot) in self.literals.iter().zip(&self.slots) {
            out.extend_from_slice(literal);
            let value = match slot {
                Slot::Name => values.name,
                Slot::Namespace => values.namespace,
                Slot::Uid => values.uid,
                Slot::ResourceVersion => values.resource_version,
                Slot::Generation => values.generation,
            };
            // Writing a &str into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, value);
        }
        if let Some(last) = self.literals.last() {
            out.extend_from_slice(last);
        }
    }
}

fn string_field(metadata: &Map<String, Value>, field: &str) -> String {
    metadata
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The fixture: the pod templates of a PodList file.
#[derive(Debug)]
pub struct Fixture {
    templates: Vec<Template>,
    /// The fixture's items as parsed, for the confirmation mode's creates.
    items: Vec<Value>,
}

impl Fixture {
    /// Reads a PodList (as `kubectl get pods -o json` prints it) from `path`.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("fixture {}: {e}", path.display()))
    }

    /// Parses a PodList.
    pub fn parse(text: &[u8]) -> Result<Self, String> {
        let list: Value = serde_json::from_slice(text).map_err(|e| format!("not JSON: {e}"))?;
        let items = list
            .get("items")
            .and_then(Value::as_array)
            .filter(|items| !items.is_empty())
            .ok_or("no items: expected a non-empty PodList")?
            .clone();
        let templates = items
            .iter()
            .enumerate()
            .map(|(index, item)| Template::new(index, item.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { templates, items })
    }

    /// Templates in the fixture.
    pub fn len(&self) -> usize {
        self.templates.len()
    }

    /// Average size of a template as served, in bytes.
    pub fn average_bytes(&self) -> usize {
        self.templates.iter().map(|t| t.bytes).sum::<usize>() / self.templates.len()
    }

    /// The fixture's items, as parsed.
    pub fn items(&self) -> &[Value] {
        &self.items
    }

    /// The name of pod `i` of a replica: `<template name>-<i>`.
    pub fn pod_name(&self, i: usize) -> String {
        format!("{}-{i}", self.templates[i % self.templates.len()].name)
    }

    /// Appends pod `i` to `out`, with `resource_version` and `generation`.
    fn render(&self, out: &mut Vec<u8>, i: usize, resource_version: u64, generation: &str) {
        let name = self.pod_name(i);
        let namespace = replay_namespace(i);
        let uid = uid(i as u64);
        let resource_version = resource_version.to_string();
        self.templates[i % self.templates.len()].render(
            out,
            &PodValues {
                name: &name,
                namespace: &namespace,
                uid: &uid,
                resource_version: &resource_version,
                generation,
            },
        );
    }

    /// Replicates the fixture to `pods` pods and serialises `updates` MODIFIED events.
    pub fn replicate(&self, pods: usize, updates: usize) -> Replica {
        let items = Packed::build(pods, |i, out| {
            self.render(out, i, i as u64 + 1, INITIAL_GENERATION);
        });
        let mut pod = Vec::new();
        let events = Packed::build(if pods == 0 { 0 } else { updates }, |e, out| {
            pod.clear();
            let target = (e as u64 * EVENT_STRIDE % pods as u64) as usize;
            self.render(&mut pod, target, (pods + 1 + e) as u64, &e.to_string());
            watch_event(out, "MODIFIED", &pod);
        });
        Replica {
            items,
            events,
            resource_version: pods as u64,
        }
    }
}

/// The namespace of pod `i` served by the replay server.
fn replay_namespace(i: usize) -> String {
    format!("bench-{}", i % 100)
}

/// A UUID-formatted uid, unique per `i` (its last group is `i`; the others are a hash).
fn uid(i: u64) -> String {
    // splitmix64's finaliser: deterministic bits that look random.
    let mut h = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    format!(
        "{:08x}-{:04x}-4{:03x}-{:x}{:03x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        (h >> 4) & 0xfff,
        8 | (h & 0x3),
        (h >> 40) & 0xfff,
        i & 0xffff_ffff_ffff
    )
}

/// Appends the watch event line `{"type":<kind>,"object":<pod>}\n` to `out`, with "type"
/// first and the object's `kind`/`apiVersion` first, as the API server writes them.
/// `pod` is a pod as a list item (a JSON object without `kind`/`apiVersion`).
pub fn watch_event(out: &mut Vec<u8>, kind: &str, pod: &[u8]) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\"");
    let fields = pod.strip_prefix(b"{").unwrap_or(pod);
    if !fields.starts_with(b"}") {
        out.push(b',');
    }
    out.extend_from_slice(fields);
    out.extend_from_slice(b"}\n");
}

/// Byte strings packed into one buffer.
#[derive(Debug)]
pub struct Packed {
    bytes: Bytes,
    /// Where each string ends.
    ends: Vec<usize>,
}

impl Packed {
    /// Packs `count` strings, string `k` being what `write(k, buffer)` appends.
    fn build(count: usize, mut write: impl FnMut(usize, &mut Vec<u8>)) -> Self {
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(count);
        for k in 0..count {
            write(k, &mut bytes);
            ends.push(bytes.len());
        }
        Self {
            bytes: Bytes::from(bytes),
            ends,
        }
    }

    /// Strings held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The byte range of strings `range` (clamped to those held).
    pub fn span(&self, range: Range<usize>) -> Range<usize> {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        let at = |k: usize| if k == 0 { 0 } else { self.ends[k - 1] };
        at(start)..at(end)
    }

    /// String `k`.
    pub fn get(&self, k: usize) -> &[u8] {
        &self.bytes[self.span(k..k + 1)]
    }

    /// Every string, back to back.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}

/// N replicated pods and M events, serialised.
#[derive(Debug)]
pub struct Replica {
    /// Pod `i` as a list item.
    pub items: Packed,
    /// Event `e` as a complete watch line.
    pub events: Packed,
    /// The resourceVersion of a list: N.
    pub resource_version: u64,
}

impl Replica {
    /// The first event a watch from `resource_version` receives (events after it have a
    /// greater resourceVersion).
    pub fn first_event_after(&self, resource_version: u64) -> usize {
        (resource_version.saturating_sub(self.resource_version) as usize).min(self.events.len())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashSet;

    use super::*;

    /// A small fixture of two templates (one of them without annotations).
    pub(crate) fn fixture() -> Fixture {
        let list = serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "web-abc", "namespace": "fx", "uid": "u-1",
                                 "resourceVersion": "17",
                                 "annotations": {"prometheus.io/scrape": "true"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                    "status": {"phase": "Running"}
                },
                {
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "cache-0", "namespace": "fx"},
                    "spec": {"containers": [{"name": "redis", "image": "redis"}]}
                }
            ]
        });
        Fixture::parse(list.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn replicated_pods_are_unique() {
        let fixture = fixture();
        let replica = fixture.replicate(250, 0);
        assert_eq!(replica.items.len(), 250);
        let mut names = HashSet::new();
        let mut uids = HashSet::new();
        for i in 0..250 {
            let pod: Value = serde_json::from_slice(replica.items.get(i)).unwrap();
            let meta = &pod["metadata"];
            let template = if i % 2 == 0 { "web-abc" } else { "cache-0" };
            assert_eq!(meta["name"], format!("{template}-{i}"));
            assert_eq!(meta["namespace"], format!("bench-{}", i % 100));
            assert_eq!(meta["resourceVersion"], (i + 1).to_string());
            assert_eq!(
                meta["annotations"][GENERATION_ANNOTATION],
                INITIAL_GENERATION
            );
            assert!(pod.get("kind").is_none() && pod.get("apiVersion").is_none());
            let uid = meta["uid"].as_str().unwrap().to_string();
            assert_eq!(uid.len(), 36);
            assert_eq!(uid.matches('-').count(), 4);
            assert!(names.insert(meta["name"].as_str().unwrap().to_string()));
            assert!(uids.insert(uid));
        }
        // Everything else is the template's.
        let first: Value = serde_json::from_slice(replica.items.get(0)).unwrap();
        assert_eq!(first["spec"]["containers"][0]["image"], "nginx");
        assert_eq!(
            first["metadata"]["annotations"]["prometheus.io/scrape"],
            "true"
        );
        assert_eq!(first["status"]["phase"], "Running");
        assert_eq!(replica.resource_version, 250);
    }

    #[test]
    fn events_in_order_with_type_first() {
        let fixture = fixture();
        let replica = fixture.replicate(10, 25);
        assert_eq!(replica.events.len(), 25);
        for e in 0..25 {
            let line = replica.events.get(e);
            assert!(line.starts_with(
                b"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
            ));
            assert!(line.ends_with(b"}\n"));
            assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
            let event: Value = serde_json::from_slice(line).unwrap();
            let meta = &event["object"]["metadata"];
            let target = e * 7919 % 10;
            assert_eq!(meta["uid"], uid(target as u64));
            assert_eq!(meta["resourceVersion"], (10 + 1 + e).to_string());
            assert_eq!(meta["annotations"][GENERATION_ANNOTATION], e.to_string());
        }
        // The events back to back are the stream a watch from the list's version gets.
        assert_eq!(replica.events.span(0..25), 0..replica.events.bytes().len());
        assert_eq!(replica.first_event_after(10), 0);
        assert_eq!(replica.first_event_after(0), 0);
        assert_eq!(replica.first_event_after(13), 3);
        assert_eq!(replica.first_event_after(1000), 25);
    }

    #[test]
    fn watch_event_of_an_empty_object() {
        let mut out = Vec::new();
        watch_event(&mut out, "ADDED", b"{}");
        assert_eq!(
            out,
            b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}}\n"
        );
    }

    #[test]
    fn malformed_fixtures() {
        for (text, wanted) in [
            ("not json", "not JSON"),
            ("{}", "no items"),
            (r#"{"items":[]}"#, "no items"),
            (r#"{"items":[1]}"#, "not a JSON object"),
            (
                r#"{"items":[{"kind":"Node","metadata":{"name":"n"}}]}"#,
                "not Pod",
            ),
            (r#"{"items":[{"metadata":{}}]}"#, "no metadata.name"),
            (
                r#"{"items":[{"metadata":{"name":"a","annotations":[]}}]}"#,
                "not an object",
            ),
        ] {
            let err = Fixture::parse(text.as_bytes()).unwrap_err();
            assert!(err.contains(wanted), "{text}: {err}");
        }
    }

    #[test]
    fn uids_are_uuids() {
        for i in [0, 1, 2, u64::from(u32::MAX) + 7] {
            let uid = uid(i);
            let groups: Vec<usize> = uid.split('-').map(str::len).collect();
            assert_eq!(groups, [8, 4, 4, 4, 12], "{uid}");
            assert!(uid.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        }
        assert_ne!(uid(1), uid(2));
    }
}
