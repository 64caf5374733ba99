//! Finding and reading the generator's inputs: the Go modules through `go mod download`,
//! k8s-openapi through `cargo metadata`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{gotypes, openapi, proto};

/// The Go modules whose protos the codec is generated from.
pub const MODULES: &[&str] = &[
    "k8s.io/apimachinery",
    "k8s.io/api",
    "k8s.io/apiextensions-apiserver",
    "k8s.io/kube-aggregator",
];

/// Everything the generator reads.
pub struct Sources {
    /// `k8s.io/api v0.37.2`, … in [`MODULES`]' order.
    pub modules: Vec<String>,
    /// The parsed protos.
    pub protos: Vec<proto::File>,
    /// The Go structs beside each proto, by proto package.
    pub go: BTreeMap<String, gotypes::Package>,
    /// k8s-openapi's crate version.
    pub openapi_version: String,
    /// k8s-openapi's types by Kubernetes version (`1.37`).
    pub openapi: BTreeMap<String, openapi::Types>,
}

impl Sources {
    /// Reads the inputs of the repository at `repo`.
    pub fn read(repo: &Path) -> Result<Self, String> {
        let pins = pinned_versions(&repo.join("testenv/go/go.mod"))?;
        let mut modules = Vec::new();
        let mut protos = Vec::new();
        let mut go = BTreeMap::new();
        for module in MODULES {
            let version = pins
                .get(*module)
                .ok_or_else(|| format!("testenv/go/go.mod pins no version of {module}"))?;
            modules.push(format!("{module} {version}"));
            let dir = go_module_dir(module, version)?;
            for proto_path in find(&dir, "generated.proto")? {
                let text = read(&proto_path)?;
                let rel = proto_path
                    .strip_prefix(&dir)
                    .unwrap_or(&proto_path)
                    .display()
                    .to_string();
                let file = proto::parse(&format!("{module}/{rel}"), &text)?;
                let mut package = gotypes::Package::default();
                let pkg_dir = proto_path.parent().expect("a file has a directory");
                for entry in
                    std::fs::read_dir(pkg_dir).map_err(|e| format!("{}: {e}", pkg_dir.display()))?
                {
                    let p = entry.map_err(|e| e.to_string())?.path();
                    let name = p.file_name().unwrap_or_default().to_string_lossy();
                    if name.ends_with(".go") && !name.ends_with("_test.go") {
                        gotypes::parse(&read(&p)?, &mut package);
                    }
                }
                go.insert(file.package.clone(), package);
                protos.push(file);
            }
        }
        let (openapi_version, openapi) = k8s_openapi_types(repo)?;
        protos.sort_by(|a, b| a.package.cmp(&b.package));
        Ok(Sources {
            modules,
            protos,
            go,
            openapi_version,
            openapi,
        })
    }

    /// The Go struct fields of the proto message `qualified` (`k8s.io.api.core.v1.Pod`),
    /// through a type defined as another package's struct.
    pub fn go_field_facts(&self, qualified: &str) -> Option<&BTreeMap<u32, gotypes::GoField>> {
        let (package, name) = qualified.rsplit_once('.')?;
        let package = self.go.get(package)?;
        match package.structs.get(name) {
            Some(fields) => Some(fields),
            None => self.go_field_facts(package.defined_as.get(name)?),
        }
    }
}

fn read(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// The version the control plane's go.mod (`testenv/go/go.mod` under `repo`) requires of
/// `module` (`k8s.io/kubernetes`), or the one its `replace` gives a staging module.
pub fn pinned_version(repo: &Path, module: &str) -> Result<String, String> {
    let go_mod = repo.join("testenv/go/go.mod");
    if let Some(v) = pinned_versions(&go_mod)?.remove(module) {
        return Ok(v);
    }
    read(&go_mod)?
        .lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next()? == module).then(|| words.next().map(str::to_string))?
        })
        .ok_or_else(|| format!("{} pins no version of {module}", go_mod.display()))
}

/// The versions `replace` gives the staging modules in the control plane's go.mod.
fn pinned_versions(go_mod: &Path) -> Result<BTreeMap<String, String>, String> {
    let text = read(go_mod)?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let (_, to) = l.split_once("=>")?;
            let mut words = to.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.to_string()))
        })
        .collect())
}

/// The directory of `module@version` in the Go module cache, downloaded if needed.
pub fn go_module_dir(module: &str, version: &str) -> Result<PathBuf, String> {
    let out = Command::new("go")
        .args(["mod", "download", "-json", &format!("{module}@{version}")])
        .env("GOFLAGS", "-mod=mod")
        .current_dir(std::env::temp_dir())
        .output()
        .map_err(|e| format!("running go (needed to fetch {module}@{version}): {e}"))?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "go mod download {module}@{version}: {e}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if let Some(err) = json.get("Error").and_then(|e| e.as_str()) {
        return Err(format!("go mod download {module}@{version}: {err}"));
    }
    json.get("Dir")
        .and_then(|d| d.as_str())
        .map(PathBuf::from)
        .ok_or_else(|| format!("go mod download {module}@{version} gave no directory"))
}

/// What `command` (`what`, for errors) prints on stdout, read as JSON; an error when it
/// cannot run, fails (with its stderr) or prints something else.
pub fn json_output(command: &mut Command, what: &str) -> Result<serde_json::Value, String> {
    let out = command
        .output()
        .map_err(|e| format!("running {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{what}: {e}"))
}

/// k8s-openapi's version, as the workspace's lock file resolves it, and its types by
/// Kubernetes version (`1.37`), read from its sources.
pub fn k8s_openapi_types(
    repo: &Path,
) -> Result<(String, BTreeMap<String, openapi::Types>), String> {
    let (openapi_version, src) = k8s_openapi_src(repo)?;
    let mut openapi = BTreeMap::new();
    for entry in std::fs::read_dir(&src).map_err(|e| format!("{}: {e}", src.display()))? {
        let p = entry.map_err(|e| e.to_string())?.path();
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if let Some(minor) = name.strip_prefix("v1_")
            && p.is_dir()
        {
            openapi.insert(format!("1.{minor}"), openapi::read_version(&p)?);
        }
    }
    if openapi.is_empty() {
        return Err(format!("no v1_* version directories in {}", src.display()));
    }
    Ok((openapi_version, openapi))
}

/// k8s-openapi's version and `src` directory, as the workspace's lock file resolves it.
fn k8s_openapi_src(repo: &Path) -> Result<(String, PathBuf), String> {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(repo);
    let json = json_output(&mut cargo, "cargo metadata")?;
    let packages = json["packages"]
        .as_array()
        .ok_or("cargo metadata: no packages")?;
    let pkg = packages
        .iter()
        .find(|p| p["name"] == "k8s-openapi")
        .ok_or("cargo metadata: the workspace does not depend on k8s-openapi")?;
    let manifest = PathBuf::from(
        pkg["manifest_path"]
            .as_str()
            .ok_or("cargo metadata: no manifest_path")?,
    );
    let version = pkg["version"].as_str().unwrap_or_default().to_string();
    Ok((
        version,
        manifest
            .parent()
            .expect("a manifest has a directory")
            .join("src"),
    ))
}

/// Every file named `name` below `dir`, sorted.
fn find(dir: &Path, name: &str) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let p = entry.map_err(|e| e.to_string())?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == name) {
                found.push(p);
            }
        }
    }
    found.sort();
    Ok(found)
}
