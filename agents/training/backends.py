"""``train(cfg)``: a training run on the backend its config names (``backend: sb3`` or ``rllib``), and the model
of a run's checkpoint for export. The only place that knows which backends there are."""

from __future__ import annotations


def train(cfg: dict, resume_dir: str | None = None, progress: bool = True, log=print) -> dict:
    """Run (or resume) a training run; returns the summary. The run folder is locked while it runs."""
    if cfg.get("backend", "sb3") == "rllib":          # Ray RLlib (the rllib extra), same run folder
        from .rllib.session import train as train_rllib
        return train_rllib(cfg, resume_dir, progress=progress, log=log)
    from .sb3.session import train as train_sb3
    return train_sb3(cfg, resume_dir, progress=progress, log=log)


def model_from_checkpoint(cfg: dict, run, ck):
    """The model of a run's checkpoint, rebuilt from its config (for ``kahve export``): an SB3 model, or for
    rllib a stand-in with its policy."""
    if cfg.get("backend", "sb3") == "rllib":
        from .rllib.session import model_from_checkpoint as rllib_model
        return rllib_model(cfg, run, ck)
    from .sb3.model import model_from_checkpoint as sb3_model
    return sb3_model(cfg, run, ck)
