#!/usr/bin/env bash
# Make a virtual environment with pip at $1. If the interpreter's ensurepip fails (seen once on CI, within a
# second of starting), say what the disk held, make the venv without pip and let the system's pip install pip
# into it.
set -euo pipefail
dir="$1"
if ! python3 -m venv "$dir"; then
    echo "make_venv: python3 -m venv $dir failed; free space here and in the temp folder:" >&2
    df -h . "${TMPDIR:-/tmp}" >&2 || true
    rm -rf "$dir"
    python3 -m venv --without-pip "$dir"
    python3 -m pip --python "$dir/bin/python" install -q pip
fi
