#!/usr/bin/env bash
# A plain (non-editable) install, as a user gets it: build the wheel, install it into a fresh venv outside
# the checkout, and from there train a tiny config, evaluate, load a shipped bot and play it.
# Usage: tools/wheel_smoke.sh [WORK_DIR]   (CI runs it; it takes a couple of minutes, mostly pip)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
python3 -m pip wheel -q --no-deps -w "$work/dist" "$repo"
"$repo/tools/make_venv.sh" "$work/venv"
. "$work/venv/bin/activate"
python -m pip install -q --upgrade pip
python -m pip install -q torch==2.13.0        # the CPU wheel on the machine; any other version downloads gigabytes
python -m pip install -q "$work"/dist/kahve-*.whl
cd "$work"                                    # nothing of the checkout on sys.path from here on
python - <<'PY'
import kahve.envs, kahve.agents
assert "/site-packages/" in kahve.envs.__file__, kahve.envs.__file__
print("kahve from", kahve.envs.__file__)
PY
kahve --version
kahve configs | grep -q "pishti/ppo "                       # the shipped configs, listed from the package
kahve configs pishti/ppo -o mine.yaml && grep -q "^game: pishti" mine.yaml
# a small run (measured: 9.5 s on 2 nearly idle cores, 19 s at load 4.5): a little cloning and one small DAgger
# round, not the config's 300,000 cloned decisions; its first line names the shipped config file it read
kahve train pishti/ppo --no-progress --override total_timesteps=256 n_envs=2 ppo.n_steps=64 ppo.batch_size=64 \
    pretrain.steps=200 pretrain.epochs=1 pretrain.dagger_rounds=1 pretrain.dagger_steps=200 pretrain.dagger_epochs=1 \
    evaluation.every=0 evaluation.games=2 evaluation.workers=1 \
    opponents.self_play.every=0 checkpoint_every=128 output=runs/smoke | tee train.log
grep -q "^config .*/site-packages/kahve/configs/pishti/ppo.yaml (shipped with kahve" train.log
kahve export runs/smoke -o smoke.onnx
kahve evaluate pishti heuristic random --settings players=2 --games 20 --workers 1
# shipped bots by the names the commands take, with numpy and onnxruntime only (the onnx package blocked)
python - <<'PY'
import sys
sys.modules["onnx"] = None
from kahve.agents import Bot
for name in ("pishti/ppo_2p", "checkpoints/pishti/ppo_2p.onnx", "pasur/ppo"):
    b = Bot.load(name)
    assert "/site-packages/kahve/checkpoints/" in b.path, b.path
    print("loaded", name, b.metadata["game"])
PY
python -c "from kahve.agents import Bot; b = Bot.load('smoke.onnx'); print('loaded', b.metadata['game'])"
python -c "print('\\n'.join(['0'] * 3000))" | kahve play pishti --settings players=2 --bot pishti/ppo_2p --seed 1 > play.log
# the web table: a clear error without the web extra, then served from the installed package with it
if kahve serve --port 8765 2> serve.err; then echo "kahve serve ran without the web extra" >&2; exit 1; fi
grep -q "pip install 'kahve\[web\]'" serve.err
python -m pip install -q "$(ls "$work"/dist/kahve-*.whl)[web]"
kahve serve --port 8765 > serve.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
SERVER_PID=$server python - <<'PY'
import json, os, time, urllib.request
# until the server answers or dies; a busy machine only makes it slower (the deadline is a hang guard)
deadline = time.monotonic() + 1800
while True:
    try:
        page = urllib.request.urlopen("http://127.0.0.1:8765/", timeout=2).read().decode()   # asked again
        break
    except OSError:
        try:
            os.kill(int(os.environ["SERVER_PID"]), 0)
        except OSError:
            raise SystemExit("kahve serve exited: see serve.log")
        if time.monotonic() > deadline:
            raise SystemExit("kahve serve did not answer")
        time.sleep(0.2)
assert "<html" in page.lower()
games = json.load(urllib.request.urlopen("http://127.0.0.1:8765/api/games", timeout=1800))   # a hang guard only
print("kahve serve answers:", len(games.get("games", games)), "games")
PY
echo "wheel smoke: ok"
