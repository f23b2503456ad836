#!/usr/bin/env bash
# Installs the pinned Entra clients (tests/entra/requirements.txt) from PyPI into a virtual
# environment at .venv/entra-clients (gitignored), where tests/e2e/entra_clients.rs runs
# tests/entra/clients.py. A second run with the pinned versions present does nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.venv/entra-clients
wanted=$(grep -vE '^\s*(#|$)' tests/entra/requirements.txt | sed 's/\[[^]]*\]//' | tr 'A-Z' 'a-z' | sort)
if [ -x "$venv/bin/python" ]; then
    have=$("$venv/bin/pip" freeze --disable-pip-version-check 2>/dev/null | tr 'A-Z' 'a-z' | sort)
    if [ -z "$(comm -23 <(echo "$wanted") <(echo "$have"))" ]; then
        echo "entra clients already installed in $venv"
        exit 0
    fi
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --disable-pip-version-check --quiet -r tests/entra/requirements.txt
"$venv/bin/python" -c 'import msal, azure.identity, jwt, cryptography'
echo "installed the entra clients in $venv"
