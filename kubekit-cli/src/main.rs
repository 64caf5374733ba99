//! `kubekit new`: a new operator project, ready to build and test.
//!
//! ```text
//! cargo run -p kubekit-cli -- new my-operator --group example.com --version v1 --kind Widget
//! ```
//!
//! writes `my-operator/`: a `Widget` custom resource (`example.com/v1`) whose controller,
//! on kubekit's manager, applies a ConfigMap holding the Widget's message (a typed apply
//! configuration), reports a `Ready` condition in its status and cleans up through a
//! finalizer; its flags (`--leader-elect`, metrics and health addresses, `--print-crd`,
//! `--print-rbac`); a test on kubekit-fake and one on kubekit's local control plane;
//! `deploy/` (Namespace, ServiceAccount, a Deployment with probes and the metrics port;
//! the CRD and the RBAC, derived from the code, written by its first `cargo test`); a
//! Dockerfile and a README. kubekit is a `path` dependency on this repository (or
//! `--kubekit-path`), or a `git` one with `--kubekit-git URL`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// kubekit's command line.
#[derive(Debug, Parser)]
#[command(name = "kubekit", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Writes a new operator project in the directory NAME.
    New(New),
}

/// What `kubekit new` is given.
#[derive(Debug, clap::Args)]
struct New {
    /// The project's name: its crate, binary and namespace prefix (a DNS label of at most
    /// 56 characters: lowercase letters, digits and `-`).
    name: String,
    /// The custom resource's API group (a DNS subdomain with a dot: `example.com`).
    #[arg(long)]
    group: String,
    /// Its version (`v1`, `v1alpha1`, `v2beta3`).
    #[arg(long)]
    version: String,
    /// Its kind (UpperCamelCase: `Widget`).
    #[arg(long)]
    kind: String,
    /// The directory the project's directory is made in.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// kubekit as a path dependency on this clone (default: the repository this program
    /// was built from).
    #[arg(long, conflicts_with = "kubekit_git")]
    kubekit_path: Option<PathBuf>,
    /// kubekit as a git dependency on this URL instead.
    #[arg(long)]
    kubekit_git: Option<String>,
}

/// The project's files: each path and its template.
const TEMPLATES: [(&str, &str); 12] = [
    ("Cargo.toml", include_str!("../template/Cargo.toml")),
    ("README.md", include_str!("../template/README.md")),
    ("Dockerfile", include_str!("../template/Dockerfile")),
    (".gitignore", include_str!("../template/.gitignore")),
    ("src/lib.rs", include_str!("../template/src/lib.rs")),
    (
        "src/controller.rs",
        include_str!("../template/src/controller.rs"),
    ),
    ("src/main.rs", include_str!("../template/src/main.rs")),
    (
        "tests/common/mod.rs",
        include_str!("../template/tests/common/mod.rs"),
    ),
    ("tests/fake.rs", include_str!("../template/tests/fake.rs")),
    ("tests/e2e.rs", include_str!("../template/tests/e2e.rs")),
    (
        "tests/manifests.rs",
        include_str!("../template/tests/manifests.rs"),
    ),
    (
        "deploy/deployment.yaml",
        include_str!("../template/deploy/deployment.yaml"),
    ),
];

/// `name` if it is a DNS label short enough for `<name>-system`.
fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 56
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    match valid {
        true => Ok(()),
        false => Err(format!(
            "the name {name:?} must be a DNS label of at most 56 characters (lowercase letters, \
             digits and '-', starting with a letter): it names the crate, the binary and the \
             namespace <name>-system"
        )),
    }
}

/// `group` if it is a DNS subdomain with a dot, as the API server requires of a CRD's.
fn check_group(group: &str) -> Result<(), String> {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    match group.contains('.') && group.len() <= 253 && group.split('.').all(label) {
        true => Ok(()),
        false => Err(format!(
            "the group {group:?} must be a lowercase DNS subdomain with at least one dot \
             (example.com)"
        )),
    }
}

/// `version` if it is a Kubernetes API version: `v<N>`, `v<N>alpha<M>` or `v<N>beta<M>`.
fn check_version(version: &str) -> Result<(), String> {
    let number =
        |s: &str| !s.is_empty() && !s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit());
    let valid = version.strip_prefix('v').is_some_and(|rest| {
        let major_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (major, stage) = rest.split_at(major_end);
        number(major)
            && (stage.is_empty()
                || ["alpha", "beta"]
                    .iter()
                    .any(|s| stage.strip_prefix(s).is_some_and(number)))
    });
    match valid {
        true => Ok(()),
        false => Err(format!(
            "the version {version:?} must be v<N>, v<N>alpha<M> or v<N>beta<M> (v1, v1alpha1)"
        )),
    }
}

/// `kind` if it is an UpperCamelCase identifier.
fn check_kind(kind: &str) -> Result<(), String> {
    let valid = kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric());
    match valid {
        true => Ok(()),
        false => Err(format!(
            "the kind {kind:?} must be UpperCamelCase letters and digits (Widget)"
        )),
    }
}

/// The resource's plural, as kubebuilder makes it: `widgets`, `classes`, `policies`.
fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    let consonant_y =
        lower.ends_with('y') && !lower[..lower.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &lower[..lower.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// Where the project takes kubekit from.
enum Source {
    /// A clone of kubekit, at this (canonical) path.
    Path(PathBuf),
    /// A git repository of kubekit.
    Git(String),
}

impl Source {
    /// The kubekit clone `path` (default: the repository this program was built from), or
    /// the repository `git`.
    fn new(path: Option<&Path>, git: Option<&str>) -> Result<Self, String> {
        if let Some(url) = git {
            return Ok(Self::Git(url.to_string()));
        }
        let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let root = path.unwrap_or(&built_from);
        let canonical = root
            .canonicalize()
            .map_err(|e| format!("--kubekit-path {}: {e}", root.display()))?;
        match canonical.join("kubekit/Cargo.toml").is_file() {
            true => Ok(Self::Path(canonical)),
            false => Err(format!(
                "--kubekit-path {}: not a clone of kubekit (no kubekit/Cargo.toml)",
                root.display()
            )),
        }
    }

    /// The dependency line of kubekit's crate `krate`.
    fn dependency(&self, krate: &str) -> String {
        match self {
            Self::Path(root) => format!("{krate} = {{ path = {:?} }}", root.join(krate)),
            Self::Git(url) => format!("{krate} = {{ git = {url:?} }}"),
        }
    }

    /// Where a reader finds kubekit.
    fn home(&self) -> String {
        match self {
            Self::Path(root) => root.display().to_string(),
            Self::Git(url) => url.clone(),
        }
    }
}

/// Writes the project `new` describes; returns its directory.
fn write(new: New) -> Result<PathBuf, String> {
    check_name(&new.name)?;
    check_group(&new.group)?;
    check_version(&new.version)?;
    check_kind(&new.kind)?;
    let source = Source::new(new.kubekit_path.as_deref(), new.kubekit_git.as_deref())?;
    let project = new.dir.join(&new.name);
    if project.exists() {
        return Err(format!("{} exists already", project.display()));
    }
    let dev = [
        source.dependency("kubekit-fake"),
        source.dependency("testenv"),
    ]
    .join("\n");
    let replacements = [
        ("__KUBEKIT_DEV__", dev),
        ("__KUBEKIT_HOME__", source.home()),
        ("__KUBEKIT__", source.dependency("kubekit")),
        ("__CRATE__", new.name.replace('-', "_")),
        ("__NAME__", new.name.clone()),
        ("__GROUP__", new.group.clone()),
        ("__VERSION__", new.version.clone()),
        ("__PLURAL__", plural(&new.kind)),
        ("__KIND__", new.kind.clone()),
    ];
    for (path, template) in TEMPLATES {
        let text = replacements
            .iter()
            .fold(template.to_string(), |text, (from, to)| {
                text.replace(from, to)
            });
        let path = project.join(path);
        let parent = path.parent().unwrap_or(&project);
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(project)
}

/// Formats the project's Rust files as `cargo fmt` would (the names put in change the
/// lines' widths); a missing `rustfmt` only leaves them as written.
fn format(project: &Path) {
    let files = TEMPLATES
        .iter()
        .filter(|(path, _)| path.ends_with(".rs"))
        .map(|(path, _)| project.join(path));
    let formatted = std::process::Command::new("rustfmt")
        .args(["--edition", "2024"])
        .args(files)
        .status();
    if !formatted.is_ok_and(|s| s.success()) {
        eprintln!("kubekit new: rustfmt did not run; `cargo fmt` in the project formats it");
    }
}

fn main() -> ExitCode {
    let Command::New(new) = Cli::parse().command;
    match write(new) {
        Ok(project) => {
            format(&project);
            println!("wrote {}: cd there and run `cargo test`", project.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kubekit new: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_kubebuilders_rules() {
        assert_eq!(plural("Widget"), "widgets");
        assert_eq!(plural("Class"), "classes");
        assert_eq!(plural("Box"), "boxes");
        assert_eq!(plural("Match"), "matches");
        assert_eq!(plural("Policy"), "policies");
        assert_eq!(plural("Gateway"), "gateways");
    }

    #[test]
    fn names_groups_versions_and_kinds_are_checked_with_what_they_must_be() {
        for good in ["my-operator", "op", "a1"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", "My-op", "1op", "op-", "op_x", &"x".repeat(57)] {
            assert!(check_name(bad).unwrap_err().contains("DNS label"), "{bad}");
        }
        assert_eq!(check_group("example.com"), Ok(()));
        for bad in ["example", "Example.com", "a..b", "-a.b", "a_b.c"] {
            assert!(check_group(bad).unwrap_err().contains("subdomain"), "{bad}");
        }
        for good in ["v1", "v12", "v1alpha1", "v2beta3"] {
            assert_eq!(check_version(good), Ok(()), "{good}");
        }
        for bad in ["1", "v0", "v", "v1alpha", "v1gamma1", "v01", "v1beta0"] {
            assert!(check_version(bad).unwrap_err().contains("v<N>"), "{bad}");
        }
        assert_eq!(check_kind("Widget"), Ok(()));
        for bad in ["widget", "Wid-get", "", "Wid get"] {
            assert!(
                check_kind(bad).unwrap_err().contains("UpperCamelCase"),
                "{bad}"
            );
        }
    }

    #[test]
    fn every_placeholder_of_every_template_is_replaced() {
        let dir = std::env::temp_dir().join(format!("kubekit-new-{}", std::process::id()));
        let new = New {
            name: "my-operator".into(),
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Policy".into(),
            dir: dir.clone(),
            kubekit_path: None,
            kubekit_git: Some("https://example.com/kubekit.git".into()),
        };
        let project = write(new).unwrap();
        for (path, _) in TEMPLATES {
            let text = std::fs::read_to_string(project.join(path)).unwrap();
            assert!(!text.contains("__"), "{path} keeps a placeholder:\n{text}");
        }
        let cargo = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
        assert!(cargo.contains(r#"kubekit = { git = "https://example.com/kubekit.git" }"#));
        let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
        assert!(lib.contains(r#"plural = "policies""#) && lib.contains("pub struct PolicySpec"));
        let again = New {
            name: "my-operator".into(),
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Policy".into(),
            dir: dir.clone(),
            kubekit_path: None,
            kubekit_git: None,
        };
        assert!(write(again).unwrap_err().contains("exists already"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
