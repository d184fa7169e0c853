"""tools/pasur_policy_step.py, the experiment behind docs/bot-log.md's "Where the search's points are in hands 1-5":
the labels value every legal move of the chosen hands only, the split-half estimate does not count the luckiest
move's luck as a gain, and the residual fit starts as the bot."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("pasur_policy_step", ROOT / "tools" / "pasur_policy_step.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


@pytest.fixture(scope="module")
def labels(tmp_path_factory):
    out = tmp_path_factory.mktemp("step") / "labels.npz"
    tool.label(rounds=4, seed=3, worlds=4, hands=[4, 5], out=str(out))
    return str(out)


def test_labels_value_every_legal_move_of_the_chosen_hands_only(labels):
    data = np.load(labels)
    q, mask = data["q"].astype(np.float32), data["mask"]
    assert len(q) > 0 and q.shape[2] == 4
    assert set(tool.hand_number(data["obs"]).tolist()) <= {4, 5}
    assert (mask.sum(1) > 1).all()                                       # only decisions with a choice
    assert (np.isfinite(q).all(2) == mask).all()                         # every world of every legal move, no other
    assert (np.abs(q[np.isfinite(q)]) <= 60).all() and (q[np.isfinite(q)] % 1 == 0).all()   # a round's points


def test_labelling_is_reproducible_from_its_seed(labels, tmp_path):
    again = tmp_path / "again.npz"
    tool.label(rounds=4, seed=3, worlds=4, hands=[4, 5], out=str(again))
    a, b = np.load(labels), np.load(again)
    assert np.array_equal(a["q"], b["q"], equal_nan=True) and np.array_equal(a["obs"], b["obs"])


def test_the_split_half_gain_values_a_choice_on_worlds_that_did_not_make_it():
    worlds = 8
    noise = np.random.default_rng(0).normal(size=worlds)
    q = np.full((2, 5, worlds), np.nan)
    # decision 0: move 1 is two points better than the bot's move 0 in every world, move 2 a point worse
    q[0, 0], q[0, 1], q[0, 2] = noise, noise + 2 + 0.1 * noise, noise - 1
    # decision 1: move 3 looks a point better on the first half of the worlds and is a point worse on the second
    q[1, 0] = noise
    q[1, 3] = noise + np.r_[np.ones(4), -np.ones(4)] + 0.01 * np.arange(worlds)
    bot = np.array([0, 0])
    gain, left = tool.split_half_gain(q, bot, z=1.0)
    assert gain[0] == pytest.approx(2 + 0.1 * noise.mean(), abs=0.2) and left[0] == 1.0
    # chosen on the first half, valued on the second: -1; on the second half it trails, so the bot's move: 0
    assert gain[1] == pytest.approx(-0.5, abs=0.05) and left[1] == 0.5
    # valued on the same worlds that chose it, the same move would have counted as a gain
    mean, _ = tool.advantages(q[:, :, :4], bot)
    assert mean[1, 3] > 0.9


@pytest.mark.parametrize("arch", ["mlp", "attention"])
def test_the_residual_fit_starts_as_the_bot_and_reports_every_epoch(labels, arch, capsys):
    tool.fit([labels], arch, width=16, depth=1, epochs=2, lr=1e-3, z=1.0, unseen=True, seed=0)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("start: held out, it changes 0.00% of the bot's moves")
    assert lines[1].endswith("gains +0.000 points a round")
    assert [line.split(":")[0] for line in lines[2:]] == ["epoch 1", "epoch 2"]


def test_label_refuses_the_last_hand_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        tool.main(["label", "--hands", "5,6", "--out", str(tmp_path / "x.npz")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "hands 1-5 only" in err[0]
    assert not (tmp_path / "x.npz").exists()
