//! `cargo run -p kubekit-fake-gen`: writes `kubekit-fake/src/apply_schema.json` from the
//! pinned OpenAPI documents (see the library's docs).

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = kubekit_fake_gen::output_path(&repo);
    match kubekit_fake_gen::generate(&repo).and_then(|text| {
        std::fs::write(&out, text).map_err(|e| format!("writing {}: {e}", out.display()))
    }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubekit-fake-gen: {e}");
            ExitCode::FAILURE
        }
    }
}
