#!/usr/bin/env bash
# Installs the pinned Azure CLI (tests/az/requirements.txt) from PyPI into a virtual
# environment at .venv/azure-cli (gitignored), where tests/e2e/az_cli.rs looks for `az`.
# Measured on a 2-core machine: about 4 minutes and 730 MB; a second run with the pinned
# version present does nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.venv/azure-cli
pinned=$(grep -E '^azure-cli==' tests/az/requirements.txt)
if [ -x "$venv/bin/az" ] && "$venv/bin/pip" freeze --disable-pip-version-check 2>/dev/null | grep -qxF "$pinned"; then
    echo "$pinned already installed in $venv"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --disable-pip-version-check --quiet -r tests/az/requirements.txt
"$venv/bin/az" version --output json >/dev/null
echo "installed $pinned in $venv"
