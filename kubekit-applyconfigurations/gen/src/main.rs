//! `cargo run -p kubekit-applyconfigurations-gen [-- --check]`: writes
//! `kubekit-applyconfigurations/src/generated.rs` and the features of its manifest from the
//! pinned OpenAPI documents (see the library's docs), or with `--check` exits 1 if either
//! is not what they give.

use std::path::Path;
use std::process::ExitCode;

use kubekit_applyconfigurations_gen as generator;

fn main() -> ExitCode {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let check = std::env::args().any(|a| a == "--check");
    match run(&repo, check) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("kubekit-applyconfigurations-gen: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Generates, and writes or checks; `false` when a check finds a stale file.
fn run(repo: &Path, check: bool) -> Result<bool, String> {
    let out = generator::render(&generator::Sources::read(repo)?)?;
    eprintln!(
        "kubekit-applyconfigurations-gen: {} types, {} of them kinds that can be applied",
        out.types, out.roots
    );
    let code_path = generator::output_path(repo);
    let mut files = vec![(code_path.clone(), None, out.code.clone())];
    for (path, features) in [
        (generator::manifest_path(repo), &out.features),
        (generator::facade_manifest_path(repo), &out.facade_features),
    ] {
        let manifest = read(&path)?;
        let now = generator::with_features(&manifest, features)?;
        files.push((path, Some(manifest), now));
    }
    if check {
        let mut fresh = true;
        for (path, current, wanted) in &files {
            let current = match current {
                Some(text) => text.clone(),
                None => read(path).unwrap_or_default(),
            };
            if &current != wanted {
                eprintln!(
                    "kubekit-applyconfigurations-gen: {} is stale; run `cargo run -p kubekit-applyconfigurations-gen`",
                    path.display()
                );
                fresh = false;
            }
        }
        return Ok(fresh);
    }
    for (path, _, wanted) in files {
        std::fs::write(&path, wanted).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(true)
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}
