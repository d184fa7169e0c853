#!/usr/bin/env bash
# A plain (non-editable) install, as a user gets it: build the wheel, install it into a fresh venv outside
# the checkout, and from there train a tiny config, evaluate, load a shipped bot and play it.
# Usage: tools/wheel_smoke.sh [WORK_DIR]   (CI runs it; it takes a couple of minutes, mostly pip)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
python3 -m pip wheel -q --no-deps -w "$work/dist" "$repo"
python3 -m venv "$work/venv"
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
kahve train pishti/ppo --no-progress --override total_timesteps=256 n_envs=2 ppo.n_steps=64 ppo.batch_size=64 \
    pretrain.steps=200 pretrain.epochs=1 evaluation.every=0 evaluation.games=2 evaluation.workers=1 \
    opponents.self_play.every=0 checkpoint_every=128 output=runs/smoke
kahve export runs/smoke -o smoke.onnx
kahve evaluate pishti heuristic random --settings players=2 --games 20 --workers 1
python -c "import kahve.checkpoints; from kahve.agents import Bot; b = Bot.load(kahve.checkpoints.find('pishti/ppo_2p')); print('loaded', b.metadata['game'])"
python -c "from kahve.agents import Bot; b = Bot.load('smoke.onnx'); print('loaded', b.metadata['game'])"
python -c "print('\\n'.join(['0'] * 3000))" | kahve play pishti --settings players=2 --bot pishti/ppo_2p --seed 1 > play.log
echo "wheel smoke: ok"
