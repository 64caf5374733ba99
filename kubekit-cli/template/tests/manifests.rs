//! `deploy/crd.yaml` and `deploy/rbac.yaml` are what the program prints (`--print-crd`,
//! and `--print-rbac` with deploy/deployment.yaml's args): written by this test when
//! missing or with `UPDATE_MANIFESTS=1`, and required equal otherwise.

use std::path::Path;
use std::process::Command;

/// The program's output with `args`.
fn printed(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE___NAME__"))
        .args(args)
        .output()
        .expect("the program runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Writes `deploy/<file>` when missing or asked to, else requires it to be `printed`.
fn kept_equal(file: &str, printed: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(file);
    if !path.exists() || std::env::var_os("UPDATE_MANIFESTS").is_some() {
        std::fs::write(&path, printed).expect("deploy/ is writable");
        return;
    }
    let shipped = std::fs::read_to_string(&path).expect("readable");
    assert_eq!(
        shipped, printed,
        "deploy/{file} is out of date: `UPDATE_MANIFESTS=1 cargo test` rewrites it"
    );
}

#[test]
fn deploy_crd_yaml_is_the_printed_crd() {
    kept_equal("crd.yaml", &printed(&["--print-crd"]));
}

#[test]
fn deploy_rbac_yaml_is_the_printed_rbac_of_the_deployments_args() {
    let deployment = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/deployment.yaml"),
    )
    .expect("deploy/deployment.yaml");
    let args: Vec<String> = deployment
        .split("\n---\n")
        .filter_map(|doc| serde_yaml::from_str::<serde_json::Value>(doc).ok())
        .find(|doc| doc["kind"] == "Deployment")
        .and_then(|d| {
            let args = d["spec"]["template"]["spec"]["containers"][0]["args"].clone();
            serde_json::from_value(args).ok()
        })
        .expect("the Deployment's args");
    let mut flags = vec!["--print-rbac"];
    flags.extend(args.iter().map(String::as_str));
    kept_equal("rbac.yaml", &printed(&flags));
}
