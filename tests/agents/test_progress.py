"""The one progress view of a training run or a recipe (agents/progress.py, agents/training/plan.py): every phase
planned up front in its own units, an ETA from the start that follows the measured costs and ends at 0, and a
recipe's stages counted. The logic is tested, not the terminal's rendering; time is a fake clock, never the wall."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import pytest
import yaml

from kahve.agents import progress
from kahve.agents.progress import Phase, RunProgress
from kahve.agents.training import config as config_mod
from kahve.agents.training import recipe as recipe_mod
from kahve.agents.training.plan import move_cost, training_phases
from tests.agents.test_recipes import TINY

ROOT = Path(__file__).resolve().parents[2]

#: behaviour cloning, two DAgger rounds, then PPO with a periodic evaluation every 2,048 steps
CLONING_DAGGER_PPO = {
    "game": "pishti", "settings": {"players": 2, "episode": "deal", "reward": "points"},
    "total_timesteps": 4096, "n_envs": 2, "vec_env": "dummy", "ppo": {"n_steps": 64, "batch_size": 64},
    "pretrain": {"teacher": "heuristic", "steps": 1000, "epochs": 2, "batch_size": 512, "dagger_rounds": 2,
                 "dagger_steps": 500, "dagger_epochs": 1},
    "evaluation": {"every": 2048, "games": 10, "opponents": ["random", "heuristic"], "workers": 1},
    "output": "unused"}


class Clock:
    """A fake clock: the tests move it by hand."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_plan_of_cloning_dagger_and_ppo_lists_every_phase_in_order_with_its_units():
    phases = training_phases(config_mod.resolve(CLONING_DAGGER_PPO))
    assert [(p.key, p.units) for p in phases] == [
        ("clone.collect", "decisions"), ("clone.fit", "batches"),
        ("dagger1.collect", "decisions"), ("dagger1.fit", "batches"),
        ("dagger2.collect", "decisions"), ("dagger2.fit", "batches"),
        ("learn", "steps"), ("eval", "games")]
    counts = {p.key: p.count for p in phases}
    # fits: minibatches of 512 over the data so far, times the epochs (1,000 decisions, then 500 more per round)
    assert counts["clone.collect"] == 1000 and counts["dagger1.collect"] == counts["dagger2.collect"] == 500
    assert (counts["clone.fit"], counts["dagger1.fit"], counts["dagger2.fit"]) == (2 * 2, 3, 4)
    # evaluations at 2,048 and 4,096 steps and the final one, 10 games against each of two opponents
    assert counts["learn"] == 4096 and counts["eval"] == 3 * 10 * 2
    assert all(p.prior > 0 and math.isfinite(p.prior) and p.done == 0 for p in phases)
    # the collections share one measured cost (the same teacher), and the fits another
    assert len({p.rate for p in phases if p.units == "decisions"}) == 1
    assert len({p.rate for p in phases if p.units == "batches"}) == 1


def test_a_resumed_run_plans_what_it_has_done_as_done():
    cfg = config_mod.resolve(CLONING_DAGGER_PPO)
    # a checkpoint after the first DAgger collection: cloning's fit done, the round's fit not yet
    mid = {p.key: p for p in training_phases(cfg, {"collected": 2, "fits": 1, "seconds": 1.0, "stats": {},
                                                   "rounds": [], "generations": []})}
    assert [k for k, p in mid.items() if p.done == p.count] == ["clone.collect", "clone.fit", "dagger1.collect"]
    # cloning done, 3,000 steps learned, the next evaluation due at 4,096: it and the final one are left
    late = {p.key: p for p in training_phases(cfg, True, steps=3000, next_eval=4096)}
    assert all(late[k].done == late[k].count for k in late if k not in ("learn", "eval"))
    assert (late["learn"].done, late["learn"].count) == (3000, 4096)
    assert late["eval"].count == 2 * 10 * 2 and late["eval"].done == 0


def test_search_teachers_cost_more_than_plain_ones_in_the_plan():
    assert move_cost("rollout:64,z=1:{student}") > move_cost("rollout:16") > move_cost("heuristic") > 0
    assert move_cost("ismcts:400") > move_cost("ismcts:100") > move_cost("random")
    cfg = config_mod.resolve({**CLONING_DAGGER_PPO, "pretrain": {**CLONING_DAGGER_PPO["pretrain"],
                                                                 "generations": 2, "generation_steps": 300}})
    phases = {p.key: p for p in training_phases(cfg)}
    assert [k for k in phases if k.startswith("gen")] == ["gen1.label", "gen1.fit", "gen2.label", "gen2.fit"]
    assert phases["gen1.label"].prior > 10 * phases["clone.collect"].prior
    assert phases["gen2.fit"].count == 1 * 2 and phases["gen1.label"].rate != phases["clone.collect"].rate


def _simulate(view: RunProgress, clock: Clock, true_cost: dict, step: dict, seen: list) -> None:
    """Do every phase of ``view`` in order, each unit costing ``true_cost[key]`` seconds; ``seen`` gets (key, ETA,
    the true seconds left) after every update."""
    left = sum(p.count * true_cost[p.key] for p in view.phases)
    for p in list(view.phases):
        with view.phase(p.key) as update:
            for done in range(0, int(p.count) + 1, step[p.key]):
                if done:
                    clock.now += step[p.key] * true_cost[p.key]
                    left -= step[p.key] * true_cost[p.key]
                update(done, p.count)
                seen.append((p.key, view.eta(), left))


def _three_phases() -> list[Phase]:
    return [Phase("collect", "collecting", "decisions", 1000, 0.01, "collect"),
            Phase("fit", "fitting", "batches", 100, 0.1, "fit"),
            Phase("learn", "learning", "steps", 10_000, 0.002, "learn")]


def test_the_eta_is_finite_and_positive_from_the_start_and_0_at_the_end():
    clock = Clock()
    view = RunProgress(_three_phases(), clock=clock)
    assert view.eta() == pytest.approx(10 + 10 + 20)                   # before any work: the priors
    assert "rough guess" in view.eta_text() and view.fraction() == 0
    seen = []
    _simulate(view, clock, {"collect": 0.03, "fit": 0.3, "learn": 0.006}, {"collect": 50, "fit": 5, "learn": 500},
              seen)
    assert all(math.isfinite(eta) and eta > 0 for _, eta, left in seen if left > 0)
    assert seen[-1][2] == pytest.approx(0) and view.eta() == 0 and view.eta_text() == "done"
    assert view.fraction() == 1


def test_the_eta_follows_the_measured_costs():
    # the machine runs everything 3x slower than the priors say
    clock = Clock()
    view = RunProgress(_three_phases(), clock=clock)
    seen = []
    _simulate(view, clock, {"collect": 0.03, "fit": 0.3, "learn": 0.006}, {"collect": 50, "fit": 5, "learn": 500},
              seen)

    def error(eta, left):
        return abs(eta - left) / left
    start = error(*seen[0][1:])
    # learning has not been measured when it starts: its prior is scaled by how slow the first phases ran
    first_of_learning = next(s for s in seen if s[0] == "learn")
    assert start > 0.5 and error(*first_of_learning[1:]) < 0.25
    halfway = [s for s in seen if s[0] == "learn"][len([s for s in seen if s[0] == "learn"]) // 2]
    assert error(*halfway[1:]) < 0.1
    assert view.settled() and "rough guess" not in view.eta_text()
    assert view.rate(view.find("learn")) == pytest.approx(0.006, rel=0.1)


def test_a_start_up_counts_to_its_phase_not_to_the_machines_speed():
    # worker processes take 20 s to start, then the 1,000 decisions cost what the prior says
    clock = Clock()
    view = RunProgress(_three_phases(), clock=clock)
    with view.phase("collect") as update:
        update(0, 1000)
        clock.now += 20
        update(0, 1000)
        for done in range(100, 1001, 100):
            clock.now += 100 * 0.01
            update(done, 1000)
    assert view.speed() == pytest.approx(1.0)
    assert view.rate(view.find("learn")) == pytest.approx(0.002)             # its prior, unscaled
    assert view.spent["collect"] == pytest.approx(30)                         # the phase's own cost has it all
    assert view.rate(view.find("collect")) > 2 * 0.01


def test_progress_bars_inside_the_view_count_into_their_phase():
    clock = Clock()
    view = RunProgress([Phase("learn", "learning (ppo)", "steps", 100, 0.01, "learn"),
                        Phase("report", "the bot's report", "games", 8, 0.1, "report", match="report:"),
                        Phase("levels", "the levels", "deals", 6, 1.0, "levels", match="levels:")], clock=clock)
    progress._ACTIVE = view                  # as run_progress sets it (without a terminal to show it on)
    try:
        with progress.phase("learn", "learning", True) as update:
            for steps in (10, 60, 100):
                clock.now += 1
                update(steps)
        assert view.find("learn").done == 100 and view.spent["learn"] == pytest.approx(3)
        with progress.phase("report", "report", True, own_bar=False):
            for opponent in ("random", "heuristic"):             # a bar per opponent, one after the other
                with progress.progress_bar(f"report: bot.onnx vs {opponent}") as update:
                    for done in (2, 4):
                        clock.now += 0.5
                        update(done, 4)
                        assert view.line() == f"report: bot.onnx vs {opponent}: {done}/4"
            assert view.find("report").done == 8
            with progress.progress_bar("levels: bot.onnx:hard vs heuristic") as update:   # its own phase
                for done in (3, 6):
                    clock.now += 2
                    update(done, 6)
        assert view.find("levels").done == 6 and view.spent["levels"] == pytest.approx(4)
        assert view.spent["report"] == pytest.approx(2)           # the levels' seconds are not the report's
        with progress.progress_bar("something unplanned") as update:      # a bar of no phase: its line only
            update(1, 2)
            assert view.line() == "something unplanned: 1/2"
        assert view.eta() == 0
    finally:
        progress._ACTIVE = None


def test_the_view_is_kept_off_the_terminal_where_there_is_none_and_off_entirely_without_progress(monkeypatch):
    monkeypatch.setattr(progress, "_shown", lambda view: pytest.fail("shown without a terminal"))
    monkeypatch.setattr(progress, "_terminal", lambda: False)
    with progress.run_progress(_three_phases(), enabled=True) as view:
        assert progress._ACTIVE is view
        with progress.phase("fit", "fitting", True) as update:
            update(40)
        assert view.find("fit").done == 100                        # (a normal exit: the phase is done)
    assert progress._ACTIVE is None
    with progress.run_progress(_three_phases(), enabled=False) as view:       # --no-progress
        assert progress._ACTIVE is None
        with progress.phase("fit", "fitting", False) as update:
            update(40)
        assert view.find("fit").done == 0


class Recording(RunProgress):
    """A view that notes the phases opened, and the ETA, stage and line after every update."""

    def __post_init__(self):
        super().__post_init__()
        self.opened, self.updates = [], []
        Recording.made.append(self)

    @contextlib.contextmanager
    def phase(self, key, complete=True):
        self.opened.append((self.stage, key))
        with super().phase(key, complete) as update:
            yield update

    @contextlib.contextmanager
    def _bar(self, p, description):
        with super()._bar(p, description) as update:
            def recorded(done, total=None):
                update(done, total)
                self.updates.append((self.stage, p.key if p else None, self.eta(), self.line()))
            yield recorded


@pytest.fixture
def recording(monkeypatch):
    Recording.made = []
    monkeypatch.setattr(progress, "RunProgress", Recording)
    monkeypatch.setattr(progress, "_terminal", lambda: False)
    return Recording.made


def test_a_tiny_run_counts_every_phase_into_one_view_and_ends_at_eta_0(tmp_path, recording):
    from kahve.agents.training.backends import train
    cfg = config_mod.resolve({**CLONING_DAGGER_PPO, "total_timesteps": 512, "output": str(tmp_path / "run"),
                              "pretrain": {**CLONING_DAGGER_PPO["pretrain"], "steps": 300, "dagger_rounds": 1,
                                           "dagger_steps": 200},
                              "evaluation": {**CLONING_DAGGER_PPO["evaluation"], "every": 256, "games": 2},
                              "checkpoint_every": 256, "opponents": {"pool": [{"policy": "random"}]}})
    summary = train(cfg, progress=True, log=lambda line: None)
    assert not summary["interrupted"]
    [view] = recording
    assert [key for _, key in view.opened] == ["clone.collect", "clone.fit", "dagger1.collect", "dagger1.fit",
                                               "learn", "eval", "eval", "eval"]      # at 256, 512, and the final
    first = view.updates[0]
    assert first[1] == "clone.collect" and math.isfinite(first[2]) and first[2] > 0
    assert {key for _, key, _, _ in view.updates} >= {"clone.collect", "clone.fit", "dagger1.collect", "learn",
                                                      "eval"}
    assert any(line.startswith("learning (ppo): ") and line.endswith("/512 steps") for *_, line in view.updates)
    assert all(p.done >= p.count for p in view.phases) and view.eta() == 0


#: test_recipes' two tiny stages, the second against random too, and the bot's levels
TINY_RECIPE = {**TINY, "stages": [TINY["stages"][0], {"name": "more", "total_timesteps": 256}],
               "bot": {**TINY["bot"], "levels": 2}}


def _recipe(tmp_path, **bot) -> recipe_mod.Recipe:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**TINY_RECIPE, "bot": {**TINY_RECIPE["bot"], **bot}}, sort_keys=False))
    return recipe_mod.load_recipe(path, [f"output={tmp_path / 'run'}"])


def test_the_plan_of_a_recipe_counts_its_stages_then_the_bot(tmp_path):
    from kahve.agents.training.plan import recipe_phases
    recipe = _recipe(tmp_path)
    phases = recipe_phases(recipe)
    assert [(p.stage, p.key) for p in phases] == [
        (1, "clone.collect"), (1, "clone.fit"), (1, "learn"), (1, "eval"), (2, "learn"), (2, "eval"),
        (None, "report"), (None, "levels")]
    assert [p.count for p in phases if p.stage is None] == [4, 3 * 2 * 2]
    view = RunProgress(phases, stages=[s.name for s in recipe.stages], clock=Clock())
    view.set_stage(2)
    with view.phase("learn") as update:
        update(128)
        assert view.line() == "stage 2/2 more · learning (ppo): 128/256 steps"
    assert view.find("learn", stage=1).done == 0             # the first stage's learning is another phase


def test_a_recipe_shows_its_stage_and_one_eta_to_its_end(tmp_path, recording):
    lines = []
    # (no levels: the hard level's search takes minutes; test_progress_bars_inside_the_view_count_into_their_phase
    # routes their bars)
    done = recipe_mod.train_recipe(_recipe(tmp_path, levels=0), progress=True, log=lines.append)
    assert not done.get("interrupted")
    [view] = recording                                  # the stages' runs count into the recipe's view
    assert view.stages == ["clone", "more"]
    stages = [stage for stage, *_ in view.updates]
    assert [s for k, s in enumerate(stages) if k == 0 or stages[k - 1] != s] == [1, 2, None]
    assert any(line.startswith("stage 1/2 clone · behaviour cloning") for *_, line in view.updates)
    assert any(line.startswith("stage 2/2 more · learning (ppo)") for *_, line in view.updates)
    assert any(line.startswith("the bot · report: tiny.onnx vs random") for *_, line in view.updates)
    etas = [eta for *_, eta, _ in view.updates]
    assert all(math.isfinite(e) for e in etas) and etas[0] > 0 and view.eta() == 0
    assert all(p.done >= p.count for p in view.phases)
