//! `kubekit new` end to end: a new project (`my-operator`, a `Widget` of `example.com/v1`)
//! is written, `kubekit api` adds a `Gadget` of `example.com/v1alpha1`, and the project is
//! built and its own tests run (`cargo test` in it: on kubekit-fake, on the
//! local control plane, and its manifests written); then it is deployed to the local
//! control plane as a user would deploy it (its CRD, Namespace and ServiceAccount, and the
//! RBAC it prints for its Deployment's args, bound to a user it then runs as) and
//! reconciles a sample of each kind.
//!
//! The project builds in a target directory of its own (`target/scaffold`: the running
//! `cargo test` holds the workspace's), from the workspace's `Cargo.lock`, so its
//! dependencies are the versions kubekit is tested with; a cold run builds them once.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository")
}

/// A free loopback address.
fn free_address() -> String {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .to_string()
}

/// `command`'s stdout, which must succeed.
fn run(command: &mut Command) -> String {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `kubectl apply -f -` of `yaml` through `kubectl`, which must succeed.
fn apply(mut kubectl: Command, yaml: &str) {
    let mut child = kubectl
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("kubectl apply");
    let mut stdin = child.stdin.take().expect("stdin");
    std::io::Write::write_all(&mut stdin, yaml.as_bytes()).expect("kubectl's stdin");
    drop(stdin);
    assert!(
        child.wait().expect("kubectl").success(),
        "kubectl apply of:\n{yaml}"
    );
}

#[test]
fn a_new_project_builds_passes_its_tests_and_reconciles_a_sample_when_deployed() {
    let repo = repo();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("new-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    run(Command::new(env!("CARGO_BIN_EXE_kubekit"))
        .args(["new", "my-operator", "--group", "example.com"])
        .args(["--version", "v1", "--kind", "Widget", "--dir"])
        .arg(&dir));
    let project = dir.join("my-operator");
    // A second kind, in another version.
    run(Command::new(env!("CARGO_BIN_EXE_kubekit"))
        .args([
            "api",
            "--group",
            "example.com",
            "--version",
            "v1alpha1",
            "--kind",
            "Gadget",
        ])
        .arg("--dir")
        .arg(&project));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    run(Command::new(&cargo)
        .args(["fmt", "--check"])
        .current_dir(&project));
    std::fs::copy(repo.join("Cargo.lock"), project.join("Cargo.lock")).expect("the lock");

    // Its own tests, with the same control plane binaries (testenv builds them once).
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| repo.join("target"), PathBuf::from)
        .join("scaffold");
    let started = Instant::now();
    let status = Command::new(&cargo)
        .arg("test")
        .current_dir(&project)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("cargo test runs");
    assert!(status.success(), "the new project's cargo test failed");
    eprintln!(
        "the new project built and passed its tests in {:?}",
        started.elapsed()
    );
    for file in ["deploy/crd.yaml", "deploy/rbac.yaml"] {
        assert!(project.join(file).is_file(), "its tests wrote {file}");
    }

    // Deployed: the manifests, the RBAC its Deployment's args need (bound to a user), and
    // the binary run as that user with those args (and free ports).
    let cp = testenv::control_plane();
    let kubectl = || {
        let mut command = Command::new(cp.kubectl_path());
        command.arg("--kubeconfig").arg(cp.kubeconfig_path());
        command
    };
    let binary = target.join("debug/my-operator");
    let (metrics, health) = (free_address(), free_address());
    let args = [
        "--leader-elect",
        "--leader-elect-namespace",
        "my-operator-system",
        "--metrics-bind-address",
        &metrics,
        "--health-probe-bind-address",
        &health,
    ];
    let deployment = std::fs::read_to_string(project.join("deploy/deployment.yaml")).unwrap();
    assert!(
        deployment.contains(
            r#"args: ["--leader-elect", "--leader-elect-namespace", "my-operator-system""#
        ),
        "the Deployment's args are those run here"
    );
    let user = "my-operator-deployed";
    let rbac = run(Command::new(&binary)
        .arg("--print-rbac")
        .args(args)
        .args(["--rbac-subject", &format!("user:{user}")]));
    run(kubectl()
        .args(["apply", "-f"])
        .arg(project.join("deploy/crd.yaml"))
        .arg("-f")
        .arg(project.join("deploy/deployment.yaml")));
    apply(kubectl(), &rbac);
    run(kubectl()
        .args(["wait", "--for=condition=Established", "--timeout=60s"])
        .args(["crd/widgets.example.com", "crd/gadgets.example.com"]));
    let ns = format!("widgets-{}", std::process::id());
    run(kubectl().args(["create", "namespace", &ns]));

    let log = dir.join("my-operator.log");
    let mut operator = Command::new(&binary)
        .arg("--kubeconfig")
        .arg(cp.user_kubeconfig(user, &[]))
        .args(args)
        .stdout(std::fs::File::create(&log).expect("a log"))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the operator starts");
    // A sample of each kind: its ConfigMap `<kind>-sample` and its Ready condition.
    let samples = [("v1", "Widget", "widget"), ("v1alpha1", "Gadget", "gadget")];
    for (version, kind, _) in samples {
        let sample = format!(
            "apiVersion: example.com/{version}\nkind: {kind}\n\
             metadata: {{name: sample, namespace: {ns}}}\nspec: {{message: hello}}\n"
        );
        apply(kubectl(), &sample);
    }
    let get = |what: &[&str], jsonpath: &str| {
        kubectl()
            .arg("get")
            .args(what)
            .args(["-n", &ns, "-o"])
            .arg(format!("jsonpath={jsonpath}"))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    let ready = loop {
        let done = samples.iter().all(|(_, _, lower)| {
            let config_map = format!("{lower}-sample");
            let message = get(&["configmap", &config_map], "{.data.message}");
            let ready = r#"{.status.conditions[?(@.type=="Ready")].status}"#;
            message == "hello" && get(&[lower, "sample"], ready) == "True"
        });
        if done || Instant::now() > deadline {
            break done;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    run(Command::new("kill").args(["-TERM", &operator.id().to_string()]));
    let status = operator.wait().expect("the operator exits");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        ready,
        "the samples' ConfigMaps and Ready conditions:\n{text}"
    );
    assert!(
        status.success(),
        "the operator exited with {status}:\n{text}"
    );
    assert!(
        !text.to_lowercase().contains("forbidden"),
        "a refusal in the log:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
