//! The trade of the compact cache (`kubekit-bench compact`): what a [`Compact<Pod>`] costs
//! and saves against a typed `Pod`, on the informer benchmark's realistic Pods.
//!
//! In one process, on one thread, over N pods replicated from the fixture: the time to
//! build each kind of object from its JSON (a typed Pod decoded by `serde_json::from_slice`,
//! a typed Pod decoded as kubekit's informers do (`kubekit::rest::decode`), the same passed
//! through `strip_managed_fields`, a `Compact<Pod>`) and the memory it then holds (resident
//! memory grown, per pod), the compressed size, then the price of typed access: `get` on an
//! object nobody holds (cold: decompress and decode), `get` on one that is held (warm:
//! the same `Arc`), and a lister's `list` of all N objects, without and with `get` on each.

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

/// Runs the benchmark and prints its table.
pub fn run(options: Options) -> Result<(), String> {
    let fixture = Fixture::load(&options.fixture)?;
    let n = options.objects;
    let replica = fixture.replicate(n, 0);
    let jsons: Vec<&[u8]> = (0..n).map(|i| replica.items.get(i)).collect();
    let json_bytes = replica.items.bytes().len();
    println!(
        "compact: {n} pods replicated from {} ({} bytes of JSON per pod), one thread",
        options.fixture.display(),
        json_bytes / n
    );

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
    let compressed: usize = compact.iter().map(|c| c.compressed_len()).sum();

    let started = Instant::now();
    for object in &compact {
        black_box(object.get().map_err(|e| e.to_string())?);
    }
    let cold = started.elapsed().as_secs_f64();
    let held: Vec<Arc<Pod>> = compact
        .iter()
        .map(|c| c.get().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    for object in &compact {
        black_box(object.get().map_err(|e| e.to_string())?);
    }
    let warm = started.elapsed().as_secs_f64();
    drop(held);

    let indexer = Arc::new(Indexer::<Compact<Pod>>::new());
    for object in &compact {
        indexer
            .add(object.clone())
            .map_err(|e| format!("indexing: {e}"))?;
    }
    let lister = Lister::new(indexer, GroupVersionResource::of::<Pod>());
    let everything = Selector::everything();
    let started = Instant::now();
    let listed = lister.list(&everything);
    let list = started.elapsed().as_secs_f64();
    let started = Instant::now();
    for object in &listed {
        black_box(object.get().map_err(|e| e.to_string())?);
    }
    let list_and_get = list + started.elapsed().as_secs_f64();
    if listed.len() != n || typed.len() != n {
        return Err(format!("listed {} of {n} pods", listed.len()));
    }
    let name_of_first = listed[0].meta().name.clone();
    black_box((name_of_first, &serde, &typed, &stripped));

    let kib = |bytes: u64| bytes as f64 / 1024.0 / n as f64;
    let row = |label: &str, serde: String, typed: String, stripped: String, compact: String| {
        println!("{label:<40}{serde:>18}{typed:>14}{stripped:>18}{compact:>12}");
    };
    let none = || "-".to_string();
    row(
        "",
        "Pod, serde_json".into(),
        "Pod, kubekit".into(),
        "typed, stripped".into(),
        "Compact".into(),
    );
    row(
        "build from JSON (µs per pod)",
        format!("{:.1}", micros(serde_seconds, n)),
        format!("{:.1}", micros(typed_seconds, n)),
        format!("{:.1}", micros(stripped_seconds, n)),
        format!("{:.1}", micros(compact_seconds, n)),
    );
    row(
        "resident memory grown (KiB per pod)",
        format!("{:.2}", kib(serde_rss)),
        format!("{:.2}", kib(typed_rss)),
        format!("{:.2}", kib(stripped_rss)),
        format!("{:.2}", kib(compact_rss)),
    );
    row(
        "compressed JSON (bytes per pod)",
        none(),
        none(),
        none(),
        (compressed / n).to_string(),
    );
    row(
        "get, nobody holds it (µs)",
        none(),
        none(),
        none(),
        format!("{:.1}", micros(cold, n)),
    );
    row(
        "get, held elsewhere (µs)",
        none(),
        none(),
        none(),
        format!("{:.3}", micros(warm, n)),
    );
    row(
        &format!("lister list of {n} (ms)"),
        none(),
        none(),
        none(),
        format!("{:.2}", list * 1e3),
    );
    row(
        &format!("lister list of {n} + get each (ms)"),
        none(),
        none(),
        none(),
        format!("{:.1}", list_and_get * 1e3),
    );
    Ok(())
}
