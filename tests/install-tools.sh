#!/usr/bin/env bash
# Installs what the tests need beyond the Rust toolchain on a fresh Debian machine, each pinned
# and each a no-op when already present: Debian's chromium (the timeline page is rendered
# headless), Azurite from npm (package-lock.json) for the blob kind, and the pinned Azure CLI
# in .venv/azure-cli, the pinned Entra clients (MSAL, azure-identity, PyJWT) in
# .venv/entra-clients, Debian's PostgreSQL server (the tests start their own, on loopback in
# a temporary directory) and Debian's tinyproxy (a corporate proxy, also started by the tests).
# Tests that need one of these fail loudly when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  as_root=""
  [ "$(id -u)" -eq 0 ] || as_root="sudo"
  $as_root apt-get update
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y --no-install-recommends chromium
fi
if ! compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
  as_root=""
  [ "$(id -u)" -eq 0 ] || as_root="sudo"
  # Only the programs: no cluster of the package's own, and no server left running on 5432.
  $as_root mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" | $as_root tee /etc/postgresql-common/createcluster.d/runbook-tests.conf >/dev/null
  $as_root apt-get update
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y --no-install-recommends postgresql
fi
if ! command -v tinyproxy >/dev/null 2>&1 && [ ! -x /usr/bin/tinyproxy ]; then
  as_root=""
  [ "$(id -u)" -eq 0 ] || as_root="sudo"
  # The corporate-proxy tests start their own on loopback; the package's service is not used.
  $as_root apt-get update
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y --no-install-recommends tinyproxy
fi
npm ci --no-audit --no-fund
bash tests/az/install.sh
bash tests/entra/install.sh
