//! The App controller under chaos: the real binary, as a least-privileged user on the real
//! control plane, SIGKILLed and restarted at 20 random points while 50 Apps are created,
//! changed (replicas, image, the names of their Deployment and Service) and deleted (in
//! the foreground or the background, some then created again under the same name). Two
//! more Apps name a Deployment and a Service that exist and that no App owns.
//!
//! After the last restart: every App converges to its latest spec, with exactly one
//! Deployment and one Service it controls and their status in its own; every child's
//! controlling App exists (kube-controller-manager's garbage collector removed the
//! children of deleted Apps); no App has two children of a kind, counted by controller and
//! by the selector label; no Deployment or Service ever changed controller while the test
//! watched (nothing was adopted), and the objects no App owns are as they were.
//!
//! The plan (kill points, operations, pauses) comes from a seeded RNG: the test prints the
//! seed, and `KUBEKIT_CHAOS_SEED=<seed>` replays the plan (the machine's timing still
//! varies). A failing run keeps the controller's log and prints its path. Its own test
//! binary, so that its control plane serves nothing else.

// Shared with the other test binaries, which use the helpers this one does not.
#[allow(dead_code)]
mod common;

use std::collections::{BTreeMap, HashMap};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use app_controller::controller::{APP_LABEL, ERR_RESOURCE_EXISTS};
use app_controller::{App, AppSpec, AppStatus, DeploymentTemplate, ServiceTemplate};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubekit::cache::ResourceEventHandlerFuncs;
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, ListOptions, PatchBody, PatchOptions,
    PropagationPolicy, ResourceClient,
};
use kubekit::informers::SharedInformerFactory;
use kubekit::manager::Object;
use kubekit::meta::controller_of;
use kubekit::rest::RestConfig;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use common::{Controller, events_for, install};

/// Apps the driver creates, changes and deletes.
const APPS: usize = 50;
/// Times the controller is SIGKILLed (and restarted).
const KILLS: usize = 20;
/// Bounds of the time between a (re)start of the controller and its SIGKILL.
const KILL_AFTER_MS: std::ops::RangeInclusive<u64> = 50..=2500;
/// How long the Apps have to converge after the last restart.
const CONVERGE_SECS: u64 = 120;
const IMAGES: [&str; 3] = ["nginx", "tomcat", "httpd"];
/// A Deployment and a Service no App owns, and the two Apps that name them.
const FOREIGN_DEPLOYMENT: &str = "foreign-deploy";
const FOREIGN_SERVICE: &str = "foreign-svc";
const SQUATTERS: [&str; 2] = ["squatter-deploy", "squatter-svc"];

/// What the driver does to one App.
#[derive(Debug)]
enum Op {
    /// Creates it (again, after a delete: retried until the deleted one is gone).
    Create(AppSpec),
    /// Replaces its spec (merge patch).
    Change(AppSpec),
    /// Deletes it, its children collected in the foreground or the background.
    Delete(PropagationPolicy),
}

/// One step of the driver: after `pause`, `op` on App `app`.
#[derive(Debug)]
struct Step {
    pause: Duration,
    app: String,
    op: Op,
}

/// The chaos plan: the time from each (re)start of the controller to its SIGKILL, and the
/// driver's steps, spread over about the same time.
struct Plan {
    kills: Vec<Duration>,
    steps: Vec<Step>,
}

fn spec(deployment: &str, image: &str, replicas: i32, service: &str) -> AppSpec {
    AppSpec {
        deployment_template: DeploymentTemplate {
            name: deployment.into(),
            image: image.into(),
            replicas,
        },
        service_template: ServiceTemplate {
            name: service.into(),
        },
    }
}

/// `spec` with one field changed: replicas, image, or the Deployment's or the Service's
/// name (the `n`th change of the App).
fn changed(rng: &mut fastrand::Rng, app: &str, spec: &AppSpec, n: usize) -> AppSpec {
    let mut next = spec.clone();
    let template = &mut next.deployment_template;
    match rng.u8(0..4) {
        0 => template.replicas = (template.replicas + 1) % 3,
        1 => {
            let i = IMAGES.iter().position(|i| *i == template.image);
            template.image = IMAGES[(i.unwrap_or(0) + 1) % IMAGES.len()].into();
        }
        2 => template.name = format!("{app}-deploy-{n}"),
        _ => next.service_template.name = format!("{app}-svc-{n}"),
    }
    next
}

impl Plan {
    /// Each App is created; changed 0 to 2 times; deleted one time in four (in the
    /// foreground or the background), and then created again one time in two, with the
    /// children's names it had first (while the old children may still exist).
    fn new(rng: &mut fastrand::Rng) -> Self {
        let kills: Vec<Duration> = (0..KILLS)
            .map(|_| Duration::from_millis(rng.u64(KILL_AFTER_MS)))
            .collect();
        let mut ops: Vec<(String, Vec<Op>)> = (0..APPS)
            .map(|i| {
                let app = format!("app-{i:02}");
                let image = IMAGES[rng.usize(..IMAGES.len())];
                let first = spec(
                    &format!("{app}-deploy"),
                    image,
                    rng.i32(0..=2),
                    &format!("{app}-svc"),
                );
                let mut ops = vec![Op::Create(first.clone())];
                let mut last = first.clone();
                for n in 0..rng.usize(0..=2) {
                    last = changed(rng, &app, &last, n);
                    ops.push(Op::Change(last.clone()));
                }
                if rng.u8(0..4) == 0 {
                    let policy = if rng.bool() {
                        PropagationPolicy::Foreground
                    } else {
                        PropagationPolicy::Background
                    };
                    ops.push(Op::Delete(policy));
                    if rng.bool() {
                        ops.push(Op::Create(first));
                    }
                }
                ops.reverse();
                (app, ops)
            })
            .collect();
        // The Apps' operations interleaved at random, each App's in order.
        let count: usize = ops.iter().map(|(_, o)| o.len()).sum();
        let window = kills.iter().sum::<Duration>().as_millis() as u64;
        let mean_pause = window * 9 / 10 / count as u64;
        let mut steps = Vec::with_capacity(count);
        while !ops.is_empty() {
            let i = rng.usize(..ops.len());
            let op = ops[i]
                .1
                .pop()
                .expect("Apps with no operation left are removed");
            steps.push(Step {
                pause: Duration::from_millis(rng.u64(0..=2 * mean_pause)),
                app: ops[i].0.clone(),
                op,
            });
            if ops[i].1.is_empty() {
                ops.swap_remove(i);
            }
        }
        Self { kills, steps }
    }

    /// The spec of each App that exists once every step is done.
    fn survivors(&self) -> BTreeMap<String, AppSpec> {
        let mut apps = BTreeMap::new();
        for step in &self.steps {
            match &step.op {
                Op::Create(spec) | Op::Change(spec) => apps.insert(step.app.clone(), spec.clone()),
                Op::Delete(_) => apps.remove(&step.app),
            };
        }
        apps
    }
}

/// Runs the driver's steps against `apps`.
async fn drive(apps: &ResourceClient<App>, steps: &[Step]) {
    for step in steps {
        tokio::time::sleep(step.pause).await;
        let name = step.app.as_str();
        match &step.op {
            Op::Create(spec) => {
                let app = App::new(name, spec.clone());
                let what = format!("App {name} created again once the deleted one is gone");
                testenv::eventually(60, &what, || async {
                    match apps.create(&app, &CreateOptions::default()).await {
                        Ok(_) => Some(()),
                        Err(e) if e.is_already_exists() => None,
                        Err(e) => panic!("create App {name}: {e}"),
                    }
                })
                .await;
            }
            Op::Change(spec) => {
                let patch = PatchBody::Merge(json!({ "spec": spec }));
                apps.patch(name, &patch, &PatchOptions::default())
                    .await
                    .unwrap_or_else(|e| panic!("change App {name}: {e}"));
            }
            Op::Delete(policy) => {
                let options = DeleteOptions::default().propagation_policy(*policy);
                apps.delete(name, &options)
                    .await
                    .unwrap_or_else(|e| panic!("delete App {name}: {e}"));
            }
        }
    }
}

/// The controller's log, every life of it appended: kept, and its path printed, when the
/// test fails; removed when it passes.
struct Log(PathBuf);

impl Log {
    /// The log opened for the controller's life number `life`.
    fn for_life(&self, life: usize) -> Stdio {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.0)
            .expect("open the controller's log");
        writeln!(file, "---- life {life}").expect("write the controller's log");
        file.into()
    }

    /// How many of the lives before `life` wrote a child (created, updated or deleted
    /// one) before they were killed.
    fn lives_that_wrote_before(&self, life: usize) -> usize {
        let log = std::fs::read_to_string(&self.0).expect("read the controller's log");
        let wrote = ["applying ", "deleting "];
        let lives = log.split("---- life ").skip(1).take(life);
        lives
            .filter(|l| wrote.iter().any(|w| l.contains(w)))
            .count()
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("the controller's log: {}", self.0.display());
        } else {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// The controller each Deployment and Service had when first seen (by uid), and every
/// change of it since: a controller changed is a child adopted.
#[derive(Default)]
struct Controllers {
    first: Mutex<HashMap<String, Option<String>>>,
    changes: Mutex<Vec<String>>,
}

impl Controllers {
    fn see(&self, kind: &str, meta: &ObjectMeta) {
        let uid = meta.uid.clone().unwrap_or_default();
        let now = controller_of(meta).map(|o| o.uid.clone());
        let mut first = self.first.lock().unwrap();
        let was = first.entry(uid).or_insert_with(|| now.clone());
        if *was != now {
            let name = meta.name.as_deref().unwrap_or_default();
            let change = format!("{kind} {name}: controller {was:?} became {now:?}");
            self.changes.lock().unwrap().push(change);
            *was = now;
        }
    }

    /// Records the controllers of every `K` `factory` watches.
    fn watch<K: Object>(self: &Arc<Self>, factory: &SharedInformerFactory) {
        let kind = K::kind(&()).into_owned();
        let (on_add, on_update) = (self.clone(), self.clone());
        let kind_too = kind.clone();
        factory.for_type::<K>().informer().add_event_handler(
            ResourceEventHandlerFuncs::new()
                .on_add(move |o: &Arc<K>, _| on_add.see(&kind, o.meta()))
                .on_update(move |_, o: &Arc<K>| on_update.see(&kind_too, o.meta())),
        );
    }
}

/// The selector label's value on `meta`.
fn app_label(meta: &ObjectMeta) -> Option<&str> {
    meta.labels.as_ref()?.get(APP_LABEL).map(String::as_str)
}

/// What is not yet as it should be in `ns`, one line each; empty once every App in
/// `expected` has converged and nothing else is left.
async fn disagreements(cs: &Clientset, ns: &str, expected: &BTreeMap<String, AppSpec>) -> String {
    let all = ListOptions::default();
    let (apps, deployments, services) = (
        cs.resource::<App>(ns),
        cs.apps_v1().deployments(ns),
        cs.core_v1().services(ns),
    );
    let (apps, deployments, services) =
        tokio::join!(apps.list(&all), deployments.list(&all), services.list(&all));
    let (apps, deployments, services) = match (apps, deployments, services) {
        (Ok(a), Ok(d), Ok(s)) => (a.items, d.items, s.items),
        (a, d, s) => return format!("list: {:?} {:?} {:?}", a.err(), d.err(), s.err()),
    };
    let mut wrong = Vec::new();
    let names: Vec<&str> = apps
        .iter()
        .filter_map(|a| a.metadata.name.as_deref())
        .filter(|n| !SQUATTERS.contains(n))
        .collect();
    if !names
        .iter()
        .copied()
        .eq(expected.keys().map(String::as_str))
    {
        wrong.push(format!("Apps {names:?}, expected {:?}", expected.keys()));
    }
    let uids: HashMap<&str, &App> = apps
        .iter()
        .filter_map(|a| Some((a.metadata.uid.as_deref()?, a)))
        .collect();
    // No orphan: the controller of every child is an App that exists.
    let children = deployments
        .iter()
        .map(|d| ("Deployment", &d.metadata))
        .chain(services.iter().map(|s| ("Service", &s.metadata)));
    for (kind, meta) in children {
        let name = meta.name.as_deref().unwrap_or_default();
        if [FOREIGN_DEPLOYMENT, FOREIGN_SERVICE, "kubernetes"].contains(&name) {
            continue;
        }
        let owner = controller_of(meta);
        if !owner.is_some_and(|o| o.kind == "App" && uids.contains_key(o.uid.as_str())) {
            wrong.push(format!(
                "{kind} {name}: its controller {owner:?} does not exist"
            ));
        }
    }
    for app in &apps {
        let (name, uid) = (app.metadata.name.as_deref(), app.metadata.uid.as_deref());
        let name = name.unwrap_or_default();
        let controlled = |m: &&ObjectMeta| controller_of(m).map(|o| o.uid.as_str()) == uid;
        let labelled = |m: &&ObjectMeta| app_label(m) == Some(name);
        let d_meta = || deployments.iter().map(|d| &d.metadata);
        let s_meta = || services.iter().map(|s| &s.metadata);
        // No App has two children of a kind, by controller or by label.
        for (kind, by_owner, by_label) in [
            (
                "Deployments",
                d_meta().filter(controlled).count(),
                d_meta().filter(labelled).count(),
            ),
            (
                "Services",
                s_meta().filter(controlled).count(),
                s_meta().filter(labelled).count(),
            ),
        ] {
            if by_owner > 1 || by_label > 1 {
                wrong.push(format!(
                    "App {name}: {by_owner} {kind} it controls, {by_label} with its label"
                ));
            }
        }
        let Some(want) = expected.get(name) else {
            continue;
        };
        if app.spec != *want {
            wrong.push(format!(
                "App {name}: spec {:?}, expected {want:?}",
                app.spec
            ));
            continue;
        }
        // Exactly its Deployment and Service, as its spec asks, their status in its own.
        let deployment = deployments.iter().find(|d| controlled(&&d.metadata));
        let service = services.iter().find(|s| controlled(&&s.metadata));
        let (Some(deployment), Some(service)) = (deployment, service) else {
            wrong.push(format!(
                "App {name}: Deployment {deployment:?}, Service {service:?}"
            ));
            continue;
        };
        let selector = BTreeMap::from([(APP_LABEL.to_string(), name.to_string())]);
        let d = &deployment.spec;
        let pods = d.template.spec.as_ref();
        let seen = (
            deployment.metadata.name.as_deref(),
            d.replicas,
            pods.and_then(|p| p.containers[0].image.as_deref()),
            d.selector.match_labels.as_ref(),
            service.metadata.name.as_deref(),
            service.spec.as_ref().and_then(|s| s.selector.as_ref()),
        );
        let t = &want.deployment_template;
        let asked = (
            Some(t.name.as_str()),
            Some(t.replicas),
            Some(t.image.as_str()),
            Some(&selector),
            Some(want.service_template.name.as_str()),
            Some(&selector),
        );
        if seen != asked {
            wrong.push(format!("App {name}: children {seen:?}, expected {asked:?}"));
        }
        let status = AppStatus {
            deployment_status: deployment.status.clone(),
            service_status: service.status.clone(),
        };
        if app.status.as_ref() != Some(&status) {
            wrong.push(format!(
                "App {name}: status {:?}, children's {status:?}",
                app.status
            ));
        }
    }
    wrong.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_converge_after_the_controller_is_killed_at_twenty_random_points() {
    let seed = std::env::var("KUBEKIT_CHAOS_SEED")
        .map(|s| s.parse().expect("KUBEKIT_CHAOS_SEED is a number"))
        .unwrap_or_else(|_| fastrand::u64(..));
    eprintln!("chaos seed {seed} (KUBEKIT_CHAOS_SEED={seed} replays this plan)");
    let plan = Plan::new(&mut fastrand::Rng::with_seed(seed));
    let expected = plan.survivors();

    let cp = testenv::control_plane();
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .unwrap();
    let admin = Clientset::new(&config.with_rate_limit(100.0, 200)).unwrap();
    let ns = cp.create_namespace(&cp.client().await, "app-chaos").await;
    let user = install(cp, &ns, "app-controller-chaos", &[]);
    let apps = admin.resource::<App>(&ns);

    // Watch every child's controller from the start.
    let controllers = Arc::new(Controllers::default());
    let factory = SharedInformerFactory::builder(admin.clone())
        .namespace(&ns)
        .build();
    controllers.watch::<Deployment>(&factory);
    controllers.watch::<Service>(&factory);
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert!(synced.values().all(|s| *s), "{synced:?}");

    // A Deployment and a Service no App owns, and two Apps that name them.
    let foreign_deployment: Deployment = serde_json::from_value(json!({
        "metadata": { "name": FOREIGN_DEPLOYMENT, "labels": { "owner": "nobody" } },
        "spec": { "replicas": 0, "selector": { "matchLabels": { "owner": "nobody" } },
            "template": { "metadata": { "labels": { "owner": "nobody" } },
                "spec": { "containers": [{ "name": "c", "image": "busybox" }] } } }
    }))
    .unwrap();
    let foreign_deployment = admin
        .apps_v1()
        .deployments(&ns)
        .create(&foreign_deployment, &CreateOptions::default())
        .await
        .unwrap();
    let foreign_service: Service = serde_json::from_value(json!({
        "metadata": { "name": FOREIGN_SERVICE, "labels": { "owner": "nobody" } },
        "spec": { "ports": [{ "port": 80 }] }
    }))
    .unwrap();
    let foreign_service = admin
        .core_v1()
        .services(&ns)
        .create(&foreign_service, &CreateOptions::default())
        .await
        .unwrap();
    for (squatter, deployment, service) in [
        (SQUATTERS[0], FOREIGN_DEPLOYMENT, "squatter-deploy-svc"),
        (SQUATTERS[1], "squatter-svc-deploy", FOREIGN_SERVICE),
    ] {
        let squatter = App::new(squatter, spec(deployment, "nginx", 1, service));
        apps.create(&squatter, &CreateOptions::default())
            .await
            .unwrap();
    }

    // The driver's steps while the controller is killed and restarted.
    let log =
        Log(std::env::temp_dir().join(format!("app-controller-chaos-{}.log", std::process::id())));
    let no_probes = ["--health-probe-bind-address", "0"];
    let start = |life| Controller::start_with(&user, &ns, &no_probes, log.for_life(life));
    let began = Instant::now();
    let chaos = async {
        let mut controller = start(0);
        for (life, after) in plan.kills.iter().enumerate() {
            tokio::time::sleep(*after).await;
            let exited = controller.0.try_wait().unwrap();
            assert!(exited.is_none(), "life {life} exited by itself: {exited:?}");
            controller.0.kill().expect("SIGKILL the controller");
            controller.0.wait().unwrap();
            controller = start(life + 1);
        }
        controller
    };
    let ((), mut controller) = tokio::join!(drive(&apps, &plan.steps), chaos);
    let chaos_took = began.elapsed();
    // The kills interrupted work. Lives killed before their caches synced write nothing
    // (about a third on two cores), hence the low bound.
    let wrote = log.lives_that_wrote_before(KILLS);
    assert!(
        wrote >= KILLS / 4,
        "only {wrote} of {KILLS} killed lives wrote"
    );

    // After the last restart, everything converges.
    let converging = Instant::now();
    testenv::eventually_ok(CONVERGE_SECS, "every App to converge", || async {
        match disagreements(&admin, &ns, &expected).await {
            wrong if wrong.is_empty() => Ok(()),
            wrong => Err(wrong),
        }
    })
    .await;
    let converged_in = converging.elapsed();

    // Nothing was adopted: no child ever changed controller, and the objects no App owns
    // are as they were, the Apps naming them warned about.
    assert_eq!(*controllers.changes.lock().unwrap(), Vec::<String>::new());
    let deployment = admin
        .apps_v1()
        .deployments(&ns)
        .get(FOREIGN_DEPLOYMENT, &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(deployment.metadata.owner_references, None);
    assert_eq!(
        deployment.metadata.labels,
        foreign_deployment.metadata.labels
    );
    assert_eq!(deployment.spec, foreign_deployment.spec);
    let service = admin
        .core_v1()
        .services(&ns)
        .get(FOREIGN_SERVICE, &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(service.metadata.owner_references, None);
    assert_eq!(service.metadata.labels, foreign_service.metadata.labels);
    assert_eq!(service.spec, foreign_service.spec);
    for squatter in SQUATTERS {
        let warnings = events_for(&admin, &ns, squatter, ERR_RESOURCE_EXISTS).await;
        assert!(
            warnings
                .iter()
                .any(|e| e.type_.as_deref() == Some("Warning")),
            "no ErrResourceExists warning about App {squatter}: {warnings:?}"
        );
    }

    let status = controller.terminate();
    assert!(
        status.success(),
        "the last life exited with {status} after SIGTERM"
    );
    factory.shutdown().await;
    let count = |f: fn(&Op) -> bool| plan.steps.iter().filter(|s| f(&s.op)).count();
    eprintln!(
        "{KILLS} kills ({wrote} after writing) over {chaos_took:.1?}, while {} creates, {} \
         changes, {} deletes; {} Apps converged {converged_in:.1?} after the last restart; \
         {} children watched",
        count(|o| matches!(o, Op::Create(_))),
        count(|o| matches!(o, Op::Change(_))),
        count(|o| matches!(o, Op::Delete(_))),
        expected.len(),
        controllers.first.lock().unwrap().len(),
    );
}
