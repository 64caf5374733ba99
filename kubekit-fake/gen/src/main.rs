//! `cargo run -p kubekit-fake-gen`: writes `kubekit-fake/src/apply_schema.json`,
//! `kubekit-fake/src/openapi_schemas.json` and `kubekit-fake/src/discovery.json` from the
//! pinned release and its control plane (see the library's docs).

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let write = |out: std::path::PathBuf, text: String| {
        std::fs::write(&out, text).map_err(|e| format!("writing {}: {e}", out.display()))
    };
    // Discovery first: the other two cover the kinds it lists.
    let written = kubekit_fake_gen::generate_discovery(&repo)
        .and_then(|text| write(kubekit_fake_gen::discovery_output_path(&repo), text))
        .and_then(|()| kubekit_fake_gen::generate(&repo))
        .and_then(|text| write(kubekit_fake_gen::output_path(&repo), text))
        .and_then(|()| kubekit_fake_gen::generate_openapi(&repo))
        .and_then(|text| write(kubekit_fake_gen::openapi_output_path(&repo), text));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubekit-fake-gen: {e}");
            ExitCode::FAILURE
        }
    }
}
