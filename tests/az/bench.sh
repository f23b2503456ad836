#!/usr/bin/env bash
# Side by side: the procedure's Phase 1 bash with the Azure CLI (tests/az/phase1.sh) and
# `runbook run phase1-workload-identity`, each on a fresh `runbook sandbox up` with the same
# latency model, one after the other. Prints the wall time of each, their ratio, and the
# number of Azure requests each made (from the sandbox's request log, GET /.sandbox/requests).
#
#   bash tests/az/bench.sh [LATENCY_SCALE]        (default 0.5)
#
# Needs the pinned Azure CLI (bash tests/az/install.sh), jq and curl, and builds runbook
# (release) unless RUNBOOK is set to a binary.
set -euo pipefail
scale="${1:-0.5}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
az_bin="$repo/.venv/azure-cli/bin"
[ -x "$az_bin/az" ] || { echo "the Azure CLI is not installed: bash tests/az/install.sh" >&2; exit 1; }
if [ -z "${RUNBOOK:-}" ]; then
    cargo build --release -q -p runbook --manifest-path "$repo/Cargo.toml"
    RUNBOOK="$repo/target/release/runbook"
fi
# Absolute: the stand-in ccoctl below is a symlink to it, read from another directory. A relative
# RUNBOOK (as in `RUNBOOK=target/release/runbook`) made a dangling link, and the bash then ran
# whatever other ccoctl was on PATH, a real one included, which would call Azure's public hosts.
RUNBOOK="$(realpath "$RUNBOOK")"
[ -x "$RUNBOOK" ] || { echo "RUNBOOK=$RUNBOOK is not an executable" >&2; exit 1; }
work="$(mktemp -d)"
sandbox_pid=""
stop_sandbox() {
    if [ -n "$sandbox_pid" ]; then kill "$sandbox_pid" 2>/dev/null || true; wait "$sandbox_pid" 2>/dev/null || true; fi
    sandbox_pid=""
}
trap 'stop_sandbox; rm -rf "$work"' EXIT

# Starts a fresh sandbox in $1 and loads its settings into this shell.
start_sandbox() {
    "$RUNBOOK" sandbox up --latency-scale "$scale" --dir "$1" >/dev/null 2>&1 &
    sandbox_pid=$!
    for _ in $(seq 1 600); do [ -s "$1/sandbox.env" ] && break; sleep 0.1; done
    # shellcheck disable=SC1091
    source "$1/sandbox.env"
}

# Azure requests answered so far (the sandbox's own /.sandbox/* paths excluded).
azure_requests() {
    curl -sf -H "x-runbook-sandbox-secret: ${AZURE_CLIENT_SECRET}" "${RUNBOOK_ARM_ENDPOINT}.sandbox/requests" | jq '[.requests[] | select(.path | startswith("/.sandbox") | not)] | length'
}

now() { date +%s.%N; }

# 1. The procedure's bash with az.
start_sandbox "$work/bash-sandbox"
mkdir -p "$work/bash/bin"
ln -s "$RUNBOOK" "$work/bash/bin/ccoctl"
export PATH="$work/bash/bin:$az_bin:$PATH"
az login --service-principal -u "$AZURE_CLIENT_ID" -p "$AZURE_CLIENT_SECRET" --tenant "$AZURE_TENANT_ID" -o none
before=$(azure_requests)
start=$(now)
(cd "$work/bash" && PREFIX=bench EXTRN_DNS_PARENT_RG=dns-parent bash "$repo/tests/az/phase1.sh" >"$work/bash.log" 2>&1) \
    || { tail -20 "$work/bash.log" >&2; exit 1; }
bash_seconds=$(echo "$(now) - $start" | bc)
bash_requests=$(( $(azure_requests) - before ))
stop_sandbox

# 2. The runbook, same Phase 1 (External DNS on; the cluster-operations principal, which the
#    procedure's Phase 1 does not create, off).
start_sandbox "$work/runbook-sandbox"
cat >"$work/phase1.vars.toml" <<VARS
prefix = "bench"
oidc_storage_account = "benchoidc"
dns_parent_zone = "example.com"
dns_parent_rg = "dns-parent"
external_dns = true
cluster_ops_sp = false
ca_file = "$RUNBOOK_CA_FILE"
VARS
# Phase 1 writes the signing private key and azure_mgmt.json (a client secret): in a directory
# of the benchmark's own, never wherever the script was started (it runs there, and its
# --workdir names it, so nothing lands in the caller's directory either way).
mkdir -p "$work/runbook"
before=$(azure_requests)
start=$(now)
(cd "$work/runbook" && "$RUNBOOK" --journal "$work/journal.db" run phase1-workload-identity \
    --vars "$work/phase1.vars.toml" --no-progress --workdir "$work/runbook" >"$work/runbook.log" 2>&1) \
    || { tail -20 "$work/runbook.log" >&2; exit 1; }
runbook_seconds=$(echo "$(now) - $start" | bc)
runbook_requests=$(( $(azure_requests) - before ))
stop_sandbox

printf 'latency scale %s\n' "$scale"
printf '%-28s %8.1f s  %4d Azure requests\n' "procedure bash with az" "$bash_seconds" "$bash_requests"
printf '%-28s %8.1f s  %4d Azure requests\n' "runbook run phase1" "$runbook_seconds" "$runbook_requests"
printf 'ratio runbook/bash: %.2f\n' "$(echo "$runbook_seconds / $bash_seconds" | bc -l)"
