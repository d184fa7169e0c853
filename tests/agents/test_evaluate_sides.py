"""Evaluation at tables of more than two sides: a shared win is split evenly among its sides, and the report reads
A's win share against the fair share 1/sides (two-side reports keep their wording)."""

from __future__ import annotations

import pytest

from kahve import envs
from kahve.agents.evaluation.evaluate import _score, evaluate, format_report
from kahve.agents.evaluation.report import _strength

FOUR_ALONE = {"players": 4, "partnerships": False, "episode": "deal"}


def test_a_win_shared_by_three_sides_gives_each_a_third():
    game = envs.game_class("pishti")(players=4, partnerships=False)       # four sides, one seat each
    result = {"winners": [0, 1, 3], "deal_points": [[5, 5, 0, 5]]}
    for side in (0, 1, 3):
        score, label, _ = _score(result, game, side)
        assert score == pytest.approx(1 / 3) and label == "draw"
    assert _score(result, game, 2)[:2] == (0.0, "loss")
    # the scores of one match add up to one win, whoever shares it
    assert sum(_score(result, game, side)[0] for side in range(4)) == pytest.approx(1.0)
    assert _score({"winners": [2], "deal_points": [[0, 0, 9, 0]]}, game, 2)[:2] == (1.0, "win")


def test_a_win_shared_by_two_sides_still_counts_half():
    game = envs.game_class("pishti")(players=2)
    assert _score({"winners": [0, 1], "deal_points": [[4, 4]]}, game, 1)[:2] == (0.5, "draw")


def test_a_four_sided_evaluation_reports_its_sides_and_the_fair_share():
    r = evaluate("pishti", "heuristic", "random", games=8, settings=FOUR_ALONE, seed=3)
    assert r["sides"] == 4 and r["fair_share"] == 0.25 and r["games"] == 8
    lo, hi = r["win_rate_ci95"]
    text = format_report(r)
    assert (f"  A's win share {r['win_rate']:.3f}  (95% CI {lo:.3f} .. {hi:.3f}; fair share 0.25 at 4 sides; "
            "a win shared by k sides counts 1/k)") in text.splitlines()
    assert "a draw counts 1/2" not in text and "own side minus the others' mean" in text
    # the bot report's table cell says the same
    assert f"{r['win_rate']:.3f} ({lo:.3f}–{hi:.3f}; fair share 0.25) |" in _strength(r)


def test_a_two_sided_evaluation_keeps_its_wording():
    r = evaluate("pishti", "heuristic", "random", games=4, settings={"players": 2, "episode": "deal"}, seed=3)
    assert r["sides"] == 2 and r["fair_share"] == 0.5
    lo, hi = r["win_rate_ci95"]
    text = format_report(r)
    assert f"  A's win rate {r['win_rate']:.3f}  (95% CI {lo:.3f} .. {hi:.3f}; a draw counts 1/2)" in text.splitlines()
    assert "fair share" not in text and "fair share" not in _strength(r)
    plo, phi = r["points_per_deal_ci95"]
    assert _strength(r) == (f"{r['win_rate']:.3f} ({lo:.3f}–{hi:.3f}) | {r['points_per_deal']:+.2f} "
                            f"({plo:+.2f}…{phi:+.2f})")


def test_partnerships_are_two_sides():
    r = evaluate("pishti", "heuristic", "random", games=4, settings={"players": 4, "partnerships": True,
                                                                        "episode": "deal"}, seed=3)
    assert r["sides"] == 2 and "a draw counts 1/2" in format_report(r)


@pytest.mark.parametrize("bot,fair", [("ish/dqn_4p", "; fair share 0.25)"), ("pishti/ppo_2p", ")")])
def test_a_bot_report_reads_the_win_rate_against_the_fair_share_at_more_than_two_sides(bot, fair, tmp_path):
    import json
    import shutil

    from kahve import checkpoints
    from kahve.agents.evaluation.report import write_report
    path = tmp_path / "bot.onnx"
    shutil.copy(checkpoints.find(bot), path)
    page = write_report(path, ["random"], games=4, workers=1).read_text()
    r = json.loads(path.with_suffix(".eval.json").read_text())["results"]["random"]
    lo, hi = r["win_rate_ci95"]
    assert f"| {r['win_rate']:.3f} ({lo:.3f}–{hi:.3f}{fair} |" in page
    if r["sides"] > 2:
        assert "every deal is played once with the bot on each side in turn (up to 4 sides)" in page
        assert "the fair share of a win is 1/sides." in page
    else:
        assert "every deal is played with the seats swapped (mirrored)." in page and "fair share" not in page
