//! `fake`: the time to start kubekit-fake and run the App controller's end-to-end scenario
//! against it, next to the same scenario on the real local control plane (etcd,
//! kube-apiserver, kube-controller-manager started by `testenv`), then each verb's
//! request latency on both ([`latencies`]).
//!
//! The scenario is one function, [`scenario`], run against both servers through a
//! `Clientset` built from a `rest::RestConfig`; only how the server is started differs.

use std::time::{Duration, Instant};

use app_controller::App;
use app_controller::controller::add_to;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::CustomResourceExt;
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, ListOptions, PatchBody, PatchOptions,
    ResourceClient,
};
use kubekit::manager::Manager;
use kubekit::rest::{RestClient, RestConfig};
use kubekit_fake::FakeApiServer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// How long any one wait of the scenario may take before the run fails.
const WAIT_LIMIT: Duration = Duration::from_secs(300);
/// How often the scenario polls the server while it waits (the same for both servers).
const POLL: Duration = Duration::from_millis(10);

/// Options of `kubekit-bench fake`.
pub struct Options {
    runs: usize,
}

impl Options {
    /// Parses `[--runs N]`.
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut runs = 3;
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--runs" => {
                    runs = args
                        .next()
                        .and_then(|v| v.parse().ok())
                        .filter(|n| *n > 0)
                        .ok_or("--runs needs a positive number")?;
                }
                other => return Err(format!("unknown option {other:?} for fake")),
            }
        }
        Ok(Self { runs })
    }
}

/// The phases of one run of the scenario, in order.
const PHASES: [&str; 6] = [
    "install App CRD (served)",
    "App -> owned Deployment+Service",
    "App status mirrors Deployment",
    "deleted Deployment made again",
    "App deleted -> children gone (GC)",
    "stop manager",
];

/// One run's phase durations, in the order of [`PHASES`].
type Phases = [Duration; PHASES.len()];

/// Polls `check` every [`POLL`] until it gives `Some`; fails after [`WAIT_LIMIT`].
async fn eventually<T, Fut>(what: &str, mut check: impl FnMut() -> Fut) -> Result<T, String>
where
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT_LIMIT;
    loop {
        if let Some(v) = check().await {
            return Ok(v);
        }
        if Instant::now() > deadline {
            return Err(format!("timed out after {WAIT_LIMIT:?} waiting for {what}"));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// App `web` in `ns`: Deployment `web-deploy` (2 nginx) and Service `web-svc`.
fn web(ns: &str) -> Result<App, String> {
    serde_json::from_value(json!({
        "apiVersion": "appcontroller.k8s.io/v1", "kind": "App",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"deploymentTemplate": {"name": "web-deploy", "image": "nginx", "replicas": 2},
                 "serviceTemplate": {"name": "web-svc"}},
    }))
    .map_err(|e| e.to_string())
}

/// The App controller's end-to-end scenario against the server `config` points at, in
/// namespace `ns` (created here); returns the time of each phase. The same code runs
/// against both servers.
///
/// Outside the timed phases it creates the namespace, and at the end removes the App CRD
/// and waits until it is gone, so that every run installs it afresh.
async fn scenario(config: RestConfig, ns: &str) -> Result<Phases, String> {
    let e = |what: &'static str| move |err: kubekit::rest::Error| format!("{what}: {err}");
    let cs = Clientset::new(&config).map_err(e("clientset"))?;
    let get = GetOptions::default();
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns}})).map_err(|e| e.to_string())?;
    cs.core_v1()
        .namespaces()
        .create(&namespace, &CreateOptions::default())
        .await
        .map_err(e("namespace"))?;
    let mut phases = Phases::default();
    let mut clock = Instant::now();
    let mut lap = |phase: usize| {
        phases[phase] = clock.elapsed();
        clock = Instant::now();
    };

    // 1. The App CRD, until Apps are served.
    let crds = cs.cluster_resource::<CustomResourceDefinition>();
    crds.create(&App::crd(), &CreateOptions::default())
        .await
        .map_err(e("App CRD"))?;
    let apps = cs.resource::<App>(ns);
    eventually("Apps to be served", || async {
        apps.list(&ListOptions::default()).await.ok()
    })
    .await?;
    lap(0);

    // 2. The manager with the App controller; an App; its owned children.
    let cancel = CancellationToken::new();
    let mut mgr = Manager::builder(config.clone())
        .namespace(ns)
        .build()
        .map_err(|e| format!("manager: {e}"))?;
    add_to(&mut mgr, 2, 10).map_err(|e| format!("App controller: {e}"))?;
    let manager = tokio::spawn(mgr.start(cancel.clone()));
    let app = apps
        .create(&web(ns)?, &CreateOptions::default())
        .await
        .map_err(e("App"))?;
    let app_uid = app.metadata.uid.clone().unwrap_or_default();
    let owned_by_app = |refs: &Option<Vec<_>>| {
        refs.as_ref().is_some_and(
            |refs: &Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>| {
                refs.iter()
                    .any(|r| r.uid == app_uid && r.controller == Some(true))
            },
        )
    };
    let deployments = cs.apps_v1().deployments(ns);
    let services = cs.core_v1().services(ns);
    let deployment = eventually("the owned Deployment", || async {
        deployments
            .get("web-deploy", &get)
            .await
            .ok()
            .filter(|d| owned_by_app(&d.metadata.owner_references))
    })
    .await?;
    eventually("the owned Service", || async {
        services
            .get("web-svc", &get)
            .await
            .ok()
            .filter(|s: &Service| owned_by_app(&s.metadata.owner_references))
    })
    .await?;
    lap(1);

    // 3. The Deployment's status, copied into the App's. A Deployment status is written
    // as a Deployment controller would (the fake runs none; on the real control plane
    // kube-controller-manager's may overwrite it); the App must then hold whatever status
    // its Deployment currently has.
    deployments
        .patch_status(
            "web-deploy",
            &PatchBody::Merge(json!({"status": {"observedGeneration": 1, "replicas": 2,
                "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}})),
            &PatchOptions::default(),
        )
        .await
        .map_err(e("Deployment status"))?;
    eventually("the App's status to mirror its Deployment's", || async {
        let d = deployments.get("web-deploy", &get).await.ok()?;
        let a = apps.get("web", &get).await.ok()?;
        let mirrored = d.status.is_some() && a.status?.deployment_status == d.status;
        mirrored.then_some(())
    })
    .await?;
    lap(2);

    // 4. A deleted Deployment is made again (a new uid).
    deployments
        .delete("web-deploy", &DeleteOptions::default())
        .await
        .map_err(e("delete Deployment"))?;
    eventually("the Deployment made again", || async {
        deployments
            .get("web-deploy", &get)
            .await
            .ok()
            .filter(|d: &Deployment| d.metadata.uid != deployment.metadata.uid)
    })
    .await?;
    lap(3);

    // 5. The App deleted; its children collected by the garbage collector.
    apps.delete("web", &DeleteOptions::default())
        .await
        .map_err(e("delete App"))?;
    eventually("the children collected", || async {
        let deployment = deployments.get("web-deploy", &get).await;
        let service = services.get("web-svc", &get).await;
        (deployment.is_err_and(|e| e.is_not_found()) && service.is_err_and(|e| e.is_not_found()))
            .then_some(())
    })
    .await?;
    lap(4);

    // 6. The manager stops.
    cancel.cancel();
    manager
        .await
        .map_err(|e| format!("manager task: {e}"))?
        .map_err(|e| format!("manager: {e}"))?;
    lap(5);

    // Not timed: the CRD goes, so that the next run installs it afresh; the namespace goes.
    let crd_name = App::crd().metadata.name.unwrap_or_default();
    crds.delete(&crd_name, &DeleteOptions::default())
        .await
        .map_err(e("delete App CRD"))?;
    eventually("the App CRD gone", || async {
        crds.get(&crd_name, &get)
            .await
            .is_err_and(|e| e.is_not_found())
            .then_some(())
    })
    .await?;
    cs.core_v1()
        .namespaces()
        .delete(ns, &DeleteOptions::default())
        .await
        .map_err(e("delete namespace"))?;
    Ok(phases)
}

/// One server's figures over the runs.
#[derive(Default)]
struct Figures {
    /// Server start per run (the real control plane: one start).
    start: Vec<Duration>,
    /// Each run's phases.
    runs: Vec<Phases>,
    /// Each verb's request latencies over every run.
    latencies: Latencies,
}

/// The requests timed one at a time in [`latencies`], in order.
const VERBS: [&str; 5] = ["create", "get", "patch (merge)", "list (of all)", "delete"];

/// How many requests of each verb [`latencies`] times.
const REQUESTS: usize = 100;

/// Each verb's latencies ([`VERBS`]), in order.
type Latencies = [Vec<Duration>; VERBS.len()];

/// Times [`REQUESTS`] of each of [`VERBS`] on ConfigMaps of namespace `ns` (created here,
/// untimed, and deleted after), one request at a time through one typed client, as a
/// controller's test sends them: creates of `lat-<i>`, gets and merge patches of each,
/// lists of the namespace's ConfigMaps (all of them, about [`REQUESTS`]), then deletes.
async fn latencies(config: &RestConfig, ns: &str) -> Result<Latencies, String> {
    let rest = RestClient::new(config).map_err(|e| e.to_string())?;
    let namespaces = ResourceClient::<Namespace>::cluster(rest.clone());
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns}})).map_err(|e| e.to_string())?;
    namespaces
        .create(&namespace, &CreateOptions::default())
        .await
        .map_err(|e| format!("namespace {ns}: {e}"))?;
    let cms = ResourceClient::<ConfigMap>::namespaced(rest, ns);
    let mut out: Latencies = Default::default();
    let name = |i: usize| format!("lat-{i}");
    let fail = |verb: &'static str| move |e: kubekit::rest::Error| format!("{verb}: {e}");
    for i in 0..REQUESTS {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name(i)},
            "data": {"k": "v"}}))
        .map_err(|e| e.to_string())?;
        let t = Instant::now();
        cms.create(&cm, &CreateOptions::default())
            .await
            .map_err(fail("create"))?;
        out[0].push(t.elapsed());
    }
    for i in 0..REQUESTS {
        let t = Instant::now();
        cms.get(&name(i), &GetOptions::default())
            .await
            .map_err(fail("get"))?;
        out[1].push(t.elapsed());
    }
    for i in 0..REQUESTS {
        let patch = PatchBody::Merge(json!({"data": {"k": i.to_string()}}));
        let t = Instant::now();
        cms.patch(&name(i), &patch, &PatchOptions::default())
            .await
            .map_err(fail("patch"))?;
        out[2].push(t.elapsed());
    }
    for _ in 0..REQUESTS {
        let t = Instant::now();
        cms.list(&ListOptions::default())
            .await
            .map_err(fail("list"))?;
        out[3].push(t.elapsed());
    }
    for i in 0..REQUESTS {
        let t = Instant::now();
        cms.delete(&name(i), &DeleteOptions::default())
            .await
            .map_err(fail("delete"))?;
        out[4].push(t.elapsed());
    }
    namespaces
        .delete(ns, &DeleteOptions::default())
        .await
        .map_err(|e| format!("namespace {ns}: {e}"))?;
    Ok(out)
}

/// The `q` quantile (0 to 1) of `values`, nearest rank.
fn quantile(mut values: Vec<f64>, q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n => values[((q * n as f64).ceil() as usize).clamp(1, n) - 1],
    }
}

/// Seconds, as a float.
fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn line(phases: &Phases) -> String {
    PHASES
        .iter()
        .zip(phases)
        .map(|(name, d)| format!("{name} {:.2} ms", secs(*d) * 1e3))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs the benchmark: `runs` fake servers (each started, used once, shut down), then the
/// real control plane started once and the scenario run `runs` times in fresh namespaces.
pub fn run(opts: Options) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut fake = Figures::default();
    for run in 1..=opts.runs {
        let (start, phases, timed) = rt.block_on(async {
            let started = Instant::now();
            let server = FakeApiServer::start()
                .await
                .map_err(|e| format!("fake: {e}"))?;
            let start = started.elapsed();
            let ns = format!("bench-fake-{run}");
            let phases = scenario(server.config(), &ns).await;
            let timed = match phases {
                Ok(_) => latencies(&server.config(), &format!("{ns}-latency"))
                    .await
                    .map(Some),
                Err(_) => Ok(None),
            };
            server.shutdown().await;
            let (phases, timed) = (phases?, timed?.unwrap_or_default());
            Ok::<_, String>((start, phases, timed))
        })?;
        for (all, one) in fake.latencies.iter_mut().zip(timed) {
            all.extend(one);
        }
        eprintln!(
            "fake run {run}: start {:.2} ms, {}",
            secs(start) * 1e3,
            line(&phases)
        );
        fake.start.push(start);
        fake.runs.push(phases);
    }

    // The real control plane: the Go build is cached (build-control-plane.sh only checks
    // its stamp); the start is certificates, etcd, kube-apiserver (until /readyz) and
    // kube-controller-manager, by scripts/local-cluster.sh through testenv.
    eprintln!("starting the local control plane (testenv)");
    let started = Instant::now();
    let cp = testenv::control_plane();
    let real_start = started.elapsed();
    eprintln!("local control plane up in {:.1} s", secs(real_start));
    let mut real = Figures {
        start: vec![real_start],
        ..Figures::default()
    };
    let config = rt
        .block_on(RestConfig::from_kubeconfig(cp.kubeconfig_path()))
        .map_err(|e| format!("kubeconfig: {e}"))?
        .with_rate_limit(1000.0, 2000);
    for run in 1..=opts.runs {
        let ns = format!("bench-real-{}-{run}", std::process::id());
        let phases = rt.block_on(scenario(config.clone(), &ns))?;
        eprintln!("real run {run}: {}", line(&phases));
        real.runs.push(phases);
        let timed = rt.block_on(latencies(&config, &format!("{ns}-latency")))?;
        for (all, one) in real.latencies.iter_mut().zip(timed) {
            all.extend(one);
        }
    }

    print_table(&opts, &fake, &real);
    Ok(())
}

fn print_table(opts: &Options, fake: &Figures, real: &Figures) {
    let runs = opts.runs;
    println!("bench/run.sh fake --runs {runs}");
    println!(
        "App controller e2e scenario; median of {runs} runs in milliseconds; fake: a fresh \
         server per run; real: the control plane started once (its start is that one start), \
         the scenario run {runs} times in fresh namespaces"
    );
    println!(
        "{:<36}{:>11}{:>11}{:>12}",
        "phase", "fake (ms)", "real (ms)", "real/fake"
    );
    let row = |name: &str, f: f64, r: f64| {
        println!(
            "{name:<36}{:>11.2}{:>11.1}{:>12.1}",
            f * 1e3,
            r * 1e3,
            r / f
        );
    };
    let start = |figures: &Figures| median(figures.start.iter().map(|d| secs(*d)).collect());
    row("server start", start(fake), start(real));
    let phase =
        |figures: &Figures, i: usize| median(figures.runs.iter().map(|p| secs(p[i])).collect());
    for (i, name) in PHASES.iter().enumerate() {
        row(name, phase(fake, i), phase(real, i));
    }
    let scenario_total = |figures: &Figures| {
        median(
            figures
                .runs
                .iter()
                .map(|p| p.iter().map(|d| secs(*d)).sum())
                .collect(),
        )
    };
    row("scenario total", scenario_total(fake), scenario_total(real));
    row(
        "start + scenario",
        start(fake) + scenario_total(fake),
        start(real) + scenario_total(real),
    );
    println!();
    println!(
        "request latency: {REQUESTS} ConfigMap requests of each verb per run, one at a time, \
         over all {runs} runs; milliseconds"
    );
    println!(
        "{:<16}{:>11}{:>11}{:>11}{:>11}{:>15}",
        "verb", "fake p50", "fake p99", "real p50", "real p99", "real/fake p50"
    );
    for (i, verb) in VERBS.iter().enumerate() {
        let ms = |figures: &Figures| -> Vec<f64> {
            figures.latencies[i]
                .iter()
                .map(|d| secs(*d) * 1e3)
                .collect()
        };
        let (f50, f99) = (quantile(ms(fake), 0.5), quantile(ms(fake), 0.99));
        let (r50, r99) = (quantile(ms(real), 0.5), quantile(ms(real), 0.99));
        println!(
            "{verb:<16}{f50:>11.3}{f99:>11.3}{r50:>11.3}{r99:>11.3}{:>15.1}",
            r50 / f50
        );
    }
}
