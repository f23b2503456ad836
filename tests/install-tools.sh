#!/usr/bin/env bash
# Installs what the tests need beyond the Rust toolchain on a fresh Debian machine, each pinned
# and each a no-op when already present: Debian's chromium (the timeline page is rendered
# headless), Azurite from npm (package-lock.json) for the blob kind, and the pinned Azure CLI
# in .venv/azure-cli, and the pinned Entra clients (MSAL, azure-identity, PyJWT) in
# .venv/entra-clients. Tests that need one of these fail loudly when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  as_root=""
  [ "$(id -u)" -eq 0 ] || as_root="sudo"
  $as_root apt-get update
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y --no-install-recommends chromium
fi
npm ci --no-audit --no-fund
bash tests/az/install.sh
bash tests/entra/install.sh
