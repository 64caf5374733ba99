//! The trade of the compact cache (`kubekit-bench compact`): what a [`Compact<Pod>`] costs
//! and saves against a typed `Pod`, on the informer benchmark's realistic Pods.
//!
//! In one process, on one thread, over N pods replicated from the fixture: the time to
//! build each kind of object from its JSON (a typed Pod decoded by `serde_json::from_slice`,
//! a typed Pod decoded as kubekit's informers do (`kubekit::rest::decode`), the same passed
//! through `strip_managed_fields`, a `Compact<Pod>`) or from its protobuf message (a typed
//! Pod decoded without managedFields, as the informer factory's default does against a
//! real server, and a `Compact<Pod>` keeping the message without them) and the memory it
//! then holds (resident memory grown, per pod), the compressed size, then the price of
//! access: a lister's `get` by name, `get` on a compact object nobody holds (cold:
//! decompress and decode), `get` on one that is held (warm: the same `Arc`), and a
//! lister's `list` of all N objects, without and with `get` on each.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use informer_protocol::Usage;
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kubekit::cache::{Compact, Indexer, strip_managed_fields};
use kubekit::labels::Selector;
use kubekit::listers::Lister;
use kubekit::meta::GroupVersionResource;

use crate::informer::Fixture;

/// Command-line options of `kubekit-bench compact`.
pub struct Options {
    objects: usize,
    fixture: std::path::PathBuf,
}

impl Options {
    /// Parses `[--objects N] [--fixture PATH]`.
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Self {
            objects: 10_000,
            fixture: crate::informer::default_fixture(),
        };
        while let Some(arg) = args.next() {
            let value = args.next().ok_or(format!("{arg} needs a value"))?;
            match arg.as_str() {
                "--objects" => {
                    options.objects = value
                        .parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or("--objects: a positive number")?;
                }
                "--fixture" => options.fixture = value.into(),
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        Ok(options)
    }
}

fn rss() -> Result<u64, String> {
    Usage::now()
        .map(|u| u.rss_bytes)
        .map_err(|e| format!("reading /proc/self: {e}"))
}

/// Microseconds per item of `seconds` over `n` items.
fn micros(seconds: f64, n: usize) -> f64 {
    seconds * 1e6 / n as f64
}

/// Objects built, with the seconds and the resident bytes their building took.
type Built<T> = (Vec<Arc<T>>, f64, u64);

/// Builds every object from its JSON.
fn build<T>(
    jsons: &[&[u8]],
    parse: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<Built<T>, String> {
    let before = rss()?;
    let started = Instant::now();
    let objects = jsons
        .iter()
        .map(|json| parse(json).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()?;
    let seconds = started.elapsed().as_secs_f64();
    Ok((objects, seconds, rss()?.saturating_sub(before)))
}

/// The price of typed access to compact objects.
struct Access {
    /// Seconds to `get` every object nobody holds (decompress and decode).
    cold: f64,
    /// Seconds to `get` every object while each is held.
    warm: f64,
    /// Seconds of a lister's `list` of all of them.
    list: f64,
    /// The same, then `get` on each.
    list_and_get: f64,
    /// Objects measured.
    objects: usize,
}

impl Access {
    /// Microseconds per object of `seconds`.
    fn micros(&self, seconds: f64) -> f64 {
        micros(seconds, self.objects)
    }
}

/// Measures [`Access`] over `compact`.
fn access(compact: &[Arc<Compact<Pod>>]) -> Result<Access, String> {
    let get = |object: &Compact<Pod>| object.get().map_err(|e| e.to_string());
    let started = Instant::now();
    for object in compact {
        black_box(get(object)?);
    }
    let cold = started.elapsed().as_secs_f64();
    let held: Vec<Arc<Pod>> = compact.iter().map(|c| get(c)).collect::<Result<_, _>>()?;
    let started = Instant::now();
    for object in compact {
        black_box(get(object)?);
    }
    let warm = started.elapsed().as_secs_f64();
    drop(held);

    let lister = lister_of(compact)?;
    let started = Instant::now();
    let listed = lister.list(&Selector::everything());
    let list = started.elapsed().as_secs_f64();
    let started = Instant::now();
    for object in &listed {
        black_box(get(object)?);
    }
    if listed.len() != compact.len() {
        return Err(format!("listed {} of {} pods", listed.len(), compact.len()));
    }
    Ok(Access {
        cold,
        warm,
        list,
        list_and_get: list + started.elapsed().as_secs_f64(),
        objects: compact.len(),
    })
}

/// A lister of `objects`, as an informer's.
fn lister_of<K>(objects: &[Arc<K>]) -> Result<Lister<K>, String>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let indexer = Arc::new(Indexer::<K>::new());
    for object in objects {
        indexer
            .add(Arc::clone(object))
            .map_err(|e| format!("indexing: {e}"))?;
    }
    Ok(Lister::new(indexer, GroupVersionResource::of::<Pod>()))
}

/// Seconds per lister `get` by namespace and name, over every object of `objects`.
fn lister_get<K>(objects: &[Arc<K>]) -> Result<f64, String>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let lister = lister_of(objects)?;
    let keys: Vec<(String, String)> = objects
        .iter()
        .map(|o| {
            let meta = o.meta();
            (
                meta.namespace.clone().unwrap_or_default(),
                meta.name.clone().unwrap_or_default(),
            )
        })
        .collect();
    let started = Instant::now();
    for (namespace, name) in &keys {
        let object = lister.namespaced(namespace).get(name);
        black_box(object.map_err(|e| e.to_string())?);
    }
    Ok(started.elapsed().as_secs_f64() / keys.len() as f64)
}

/// A Pod's protobuf message (no envelope), as kube-apiserver sends it.
fn protobuf_message(pod: &Pod) -> Result<Vec<u8>, String> {
    let bytes = kubekit_protobuf::encode(pod);
    let unknown = kubekit_protobuf::Unknown::read(&bytes).map_err(|e| e.to_string())?;
    Ok(unknown.raw.to_vec())
}

/// Runs the benchmark and prints its table.
pub fn run(options: Options) -> Result<(), String> {
    let fixture = Fixture::load(&options.fixture)?;
    let n = options.objects;
    let replica = fixture.replicate(n, 0);
    let jsons: Vec<&[u8]> = (0..n).map(|i| replica.items.get(i)).collect();
    let json_bytes = replica.items.bytes().len();
    let messages = jsons
        .iter()
        .map(|json| {
            let pod: Pod = serde_json::from_slice(json).map_err(|e| e.to_string())?;
            protobuf_message(&pod)
        })
        .collect::<Result<Vec<_>, String>>()?;
    let message_bytes: usize = messages.iter().map(Vec::len).sum();
    println!(
        "compact: {n} pods replicated from {} ({} bytes of JSON, {} of protobuf per pod), one thread",
        options.fixture.display(),
        json_bytes / n,
        message_bytes / n
    );
    let messages: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    let skip = kubekit_protobuf::DecodeOptions {
        skip_managed_fields: true,
    };

    let parse_compact = |json: &[u8]| {
        Compact::<Pod>::from_json(json).map_err(|e| format!("a fixture pod as Compact: {e}"))
    };
    let (compact, compact_seconds, compact_rss) = build(&jsons, parse_compact)?;
    let parse_serde = |json: &[u8]| {
        serde_json::from_slice::<Pod>(json).map_err(|e| format!("a fixture pod as Pod: {e}"))
    };
    let (serde, serde_seconds, serde_rss) = build(&jsons, parse_serde)?;
    let parse_typed = |json: &[u8]| {
        kubekit::rest::decode::<Pod>(json, "a fixture pod").map_err(|e| e.to_string())
    };
    let (typed, typed_seconds, typed_rss) = build(&jsons, parse_typed)?;
    let parse_stripped = |json: &[u8]| parse_typed(json).map(strip_managed_fields);
    let (stripped, stripped_seconds, stripped_rss) = build(&jsons, parse_stripped)?;
    let parse_proto = |raw: &[u8]| {
        kubekit_protobuf::decode_message_with::<Pod>(raw, skip).map_err(|e| e.to_string())
    };
    let (proto, proto_seconds, proto_rss) = build(&messages, parse_proto)?;
    let parse_compact_proto = |raw: &[u8]| {
        Compact::<Pod>::from_protobuf(raw, skip).map_err(|e| format!("a pod as Compact: {e}"))
    };
    let (compact_proto, compact_proto_seconds, compact_proto_rss) =
        build(&messages, parse_compact_proto)?;
    let compressed = |c: &[Arc<Compact<Pod>>]| -> usize {
        c.iter().map(|c| c.compressed_len()).sum::<usize>() / n
    };

    let json_access = access(&compact)?;
    let proto_access = access(&compact_proto)?;
    let typed_get = lister_get(&proto)?;
    let typed_lister = lister_of(&proto)?;
    let started = Instant::now();
    black_box(typed_lister.list(&Selector::everything()));
    let typed_list = started.elapsed().as_secs_f64();
    let compact_get = lister_get(&compact_proto)?;
    black_box((&serde, &typed, &stripped));

    let kib = |bytes: u64| bytes as f64 / 1024.0 / n as f64;
    let columns = [
        "Pod, serde_json",
        "Pod, kubekit",
        "typed, stripped",
        "Pod, protobuf",
        "Compact, JSON",
        "Compact, protobuf",
    ];
    let row = |label: &str, cells: [String; 6]| {
        let mut line = format!("{label:<40}");
        for (cell, column) in cells.iter().zip(columns) {
            line += &format!("{cell:>w$}", w = column.len().max(12) + 2);
        }
        println!("{line}");
    };
    let none = || "-".to_string();
    row("", columns.map(str::to_string));
    let per_pod = |seconds: f64| format!("{:.1}", micros(seconds, n));
    row(
        "build (µs per pod)",
        [
            per_pod(serde_seconds),
            per_pod(typed_seconds),
            per_pod(stripped_seconds),
            per_pod(proto_seconds),
            per_pod(compact_seconds),
            per_pod(compact_proto_seconds),
        ],
    );
    row(
        "resident memory grown (KiB per pod)",
        [
            serde_rss,
            typed_rss,
            stripped_rss,
            proto_rss,
            compact_rss,
            compact_proto_rss,
        ]
        .map(|bytes| format!("{:.2}", kib(bytes))),
    );
    row(
        "compressed (bytes per pod)",
        [
            none(),
            none(),
            none(),
            none(),
            compressed(&compact).to_string(),
            compressed(&compact_proto).to_string(),
        ],
    );
    let compact_row = |label: &str, figure: fn(&Access) -> String| {
        row(
            label,
            [
                none(),
                none(),
                none(),
                none(),
                figure(&json_access),
                figure(&proto_access),
            ],
        );
    };
    row(
        "lister get by name (µs)",
        [
            none(),
            none(),
            none(),
            format!("{:.3}", typed_get * 1e6),
            none(),
            format!("{:.3}", compact_get * 1e6),
        ],
    );
    compact_row("get, nobody holds it (µs)", |a| {
        format!("{:.1}", a.micros(a.cold))
    });
    compact_row("get, held elsewhere (µs)", |a| {
        format!("{:.3}", a.micros(a.warm))
    });
    row(
        &format!("lister list of {n} (ms)"),
        [
            none(),
            none(),
            none(),
            format!("{:.2}", typed_list * 1e3),
            format!("{:.2}", json_access.list * 1e3),
            format!("{:.2}", proto_access.list * 1e3),
        ],
    );
    compact_row(&format!("lister list of {n} + get each (ms)"), |a| {
        format!("{:.1}", a.list_and_get * 1e3)
    });
    Ok(())
}
