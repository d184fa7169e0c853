#!/usr/bin/env bash
# A prepared GPU check for issue 19, for a session that has a CUDA machine (none had one when this was written:
# its figures are not in docs/benchmarks.md yet). From the repository root, with kahve installed in the active
# Python environment (a CUDA build of torch):
#
#   bash tools/gpu_bench.sh [OUT_DIR]          # never run yet (each step has a timeout); OUT_DIR: $OUT, else gpu_bench_out/
#
# 1. the device: nvidia-smi, torch's CUDA build, what `device: cuda` resolves to;
# 2. MaskablePPO steps/s and env share on CPU and CUDA for Pişti and Pâsur (shipped config with and without
#    async_rollouts; 256 games; shared memory workers on every core, inside the collector), as
#    `kahve bench --ppo` measures them (agents/evaluation/bench.py ppo_measure);
# 3. end to end on CUDA: a short Pişti PPO run with behaviour cloning, a short masked-DQN run, each exported and
#    evaluated; the run folders' summaries are kept.
# Everything it prints is also in OUT_DIR/gpu_bench.log; the measurements are in OUT_DIR/gpu_bench.json.
set -euo pipefail
out="${1:-${OUT:-gpu_bench_out}}"
mkdir -p "$out"
exec > >(tee "$out/gpu_bench.log") 2>&1

echo "== device"
nvidia-smi || echo "nvidia-smi: not available"
python - <<'EOF'
import torch
print("torch", torch.__version__, "built with CUDA", torch.version.cuda, "available:", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device 0:", torch.cuda.get_device_name(0))
from kahve.agents.training import config
cfg = config.resolve({"game": "pishti", "device": "cuda"})     # a clear error here if CUDA is missing
print("device: cuda resolves:", cfg["device"])
EOF

echo "== MaskablePPO steps/s, CPU vs CUDA (median of 3 cycles of one rollout and one update)"
OUT_DIR="$out" timeout 1800 python - <<'EOF'
import json, os
from kahve.agents.evaluation.bench import ppo_measure
runs = {
    "shipped": [],                                   # async_rollouts: a collector process steps the games
    "shipped_sync": ["async_rollouts=false"],
    "batched_256": ["n_envs=256", "ppo.n_steps=16"],
    "shared_256": ["vec_env=shared", "n_envs=256", "ppo.n_steps=16"],
    "shared_1024_big_batch": ["vec_env=shared", "n_envs=1024", "ppo.n_steps=8", "ppo.batch_size=8192"],
}
results = {}
for game in ("pishti", "pasur"):
    for name, overrides in runs.items():
        for device in ("cpu", "cuda"):
            r = ppo_measure(game, 3, overrides, device=device)
            results[f"{game}/{name}/{device}"] = r
            c = r["config"]
            print(f"{game:<7} {name:<22} {device:<5} {r['per_s']:>9,.0f} steps/s ({r['min']:,.0f}..{r['max']:,.0f}), "
                  f"env share {r['env_share']:.0%} [{c['vec_env']}, {c['n_envs']} envs, workers {c['env_workers']}, "
                  f"n_steps {c['n_steps']}, batch {c['batch_size']}, {c['n_epochs']} epochs]", flush=True)
with open(os.path.join(os.environ["OUT_DIR"], "gpu_bench.json"), "w") as f:
    json.dump(results, f, indent=1)
EOF

echo "== end to end on CUDA: PPO with behaviour cloning, then masked DQN"
runs="$out/runs"
rm -rf "$runs"
timeout 900 kahve train configs/pishti/ppo.yaml --no-progress --override device=cuda total_timesteps=200000 \
    pretrain.steps=20000 pretrain.epochs=2 evaluation.every=0 evaluation.games=200 output="$runs/pishti_ppo_cuda"
timeout 900 kahve train configs/pishti/dqn.yaml --no-progress --override device=cuda total_timesteps=30000 \
    evaluation.every=0 evaluation.games=200 output="$runs/pishti_dqn_cuda"
for run in pishti_ppo_cuda pishti_dqn_cuda; do
    kahve export "$runs/$run" -o "$runs/$run.onnx"
    kahve evaluate pishti "$runs/$run.onnx" heuristic --settings players=2 --games 200
    python -c "import json,sys; s=json.load(open(sys.argv[1])); print(sys.argv[1], {k: s[k] for k in ('steps', 'wall_seconds', 'pretrain_seconds', 'steps_per_second')})" "$runs/$run/summary.json"
done
echo "== done: $out/gpu_bench.log, $out/gpu_bench.json"
