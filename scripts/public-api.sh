#!/usr/bin/env bash
# The public API of each published crate, checked against the one recorded in api/.
#
#   scripts/public-api.sh check    (what CI runs) fails when a crate's API changed in a way
#                                  its version does not allow: a breaking change (an item,
#                                  signature or implementation removed or changed, a variant
#                                  added to an exhaustive enum, ...) needs the next major
#                                  version (0.x: the next minor), a compatible one (items
#                                  added) the next minor (0.x: patch); each change is listed
#                                  as one or the other
#   scripts/public-api.sh update   records each crate's API, at its version, in api/
#
# The API is rustdoc's JSON output (RUSTC_BOOTSTRAP lets stable rustdoc write it) of the
# crate built with the features docs.rs documents, listed by scripts/public_api.py. The
# listing in api/ is the API of the version it names: a crate's last release, or, before a
# first release, the API that release will have, kept in step with `update`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-}
[[ $mode == check || $mode == update ]] || { sed -n '2,16p' "$0" >&2; exit 2; }

python3 scripts/public_api.py selftest
# Each published crate (`publish` not false), its version and the features docs.rs uses
# (k8s-openapi's version comes from the environment, as everywhere in the workspace).
crates=$(python3 scripts/public_api.py crates)

mkdir -p api
failed=()
while read -r crate version features; do
  args=(-p "$crate" --lib --locked)
  [[ $features == - ]] || args+=(--features "$features")
  RUSTC_BOOTSTRAP=1 K8S_OPENAPI_ENABLED_VERSION=1.37 cargo rustdoc "${args[@]}" -q \
    -- -Z unstable-options --output-format json 2>/dev/null ||
    { echo "$crate: rustdoc failed; run: cargo rustdoc ${args[*]}" >&2; exit 1; }
  json=target/doc/${crate//-/_}.json
  if [[ $mode == update ]]; then
    {
      echo "# The public API of $crate (features: ${features/-/default}), by scripts/public-api.sh."
      echo "# version $version"
      python3 scripts/public_api.py list "$json"
    } >"api/$crate.txt"
    echo "$crate $version: $(grep -vc '^#' "api/$crate.txt") items recorded in api/$crate.txt"
  else
    [[ -f api/$crate.txt ]] || { echo "$crate: no api/$crate.txt; run scripts/public-api.sh update" >&2; exit 1; }
    echo "$crate $version:"
    python3 scripts/public_api.py check "api/$crate.txt" "$json" "$version" || failed+=("$crate")
  fi
done <<<"$crates"
if ((${#failed[@]})); then
  echo "FAIL: the public API of ${failed[*]} changed beyond what the version allows" >&2
  exit 1
fi
