#!/usr/bin/env bash
# Make a virtual environment with pip at $1. If the interpreter's ensurepip fails inside `python3 -m venv`
# (seen once on CI, within a second; venv hides ensurepip's own message), say what the disk held, make the venv
# without pip, and put pip in: ensurepip again in the open (so its message shows), else the system's pip, else
# the system's pip without the machine's pip configuration.
set -euo pipefail
dir="$1"
if ! python3 -m venv "$dir"; then
    echo "make_venv: python3 -m venv $dir failed; free space here and in the temp folder:" >&2
    df -h . "${TMPDIR:-/tmp}" >&2 || true
    rm -rf "$dir"
    python3 -m venv --without-pip "$dir"
    "$dir/bin/python" -m ensurepip --upgrade --default-pip \
        || python3 -m pip --python "$dir/bin/python" install -q pip \
        || PIP_CONFIG_FILE=/dev/null python3 -m pip --python "$dir/bin/python" install -q pip
fi
