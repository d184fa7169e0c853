"""Bot reports (kahve export --report): the Ish policy check that a report cites, the time per move, the levels."""

from __future__ import annotations

from kahve import envs
from kahve.agents import make_policy
from kahve.agents.evaluation.report import ish_policy_check


def test_ish_policy_check_tells_the_optimum_from_random_play():
    settings = {"players": 4, "false_call_fine": 1}
    game = envs.game_class("ish")(**settings)
    best = ish_policy_check(make_policy("heuristic", game, 0), settings, rounds=30)
    assert best["bets"] > 0 and best["call_decisions"] > 0
    assert best["min_stake_rate"] == 1.0 and best["correct_call_rate"] == 1.0
    rand = ish_policy_check(make_policy("random", game, 0), settings, rounds=30)
    assert rand["min_stake_rate"] < 0.5 and rand["correct_call_rate"] < 0.9


def test_a_report_gives_the_bots_time_per_move(tmp_path):
    import json
    import shutil

    from kahve import checkpoints
    from kahve.agents.evaluation.report import write_report
    bot = tmp_path / "bot.onnx"
    shutil.copy(checkpoints.find("pishti/ppo_2p"), bot)
    page = write_report(bot, ["random"], games=4, workers=1).read_text()
    timing = json.loads(bot.with_suffix(".eval.json").read_text())["results"]["time_per_move"]
    assert timing["moves"] == 400 and 0 < timing["median_ms"] <= timing["p90_ms"] < 1000
    assert f"Time per move: median {timing['median_ms']:.3f} ms" in page


def test_the_levels_section_measures_each_level_and_replaces_itself(tmp_path):
    import json
    import shutil

    import pytest

    from kahve import checkpoints
    from kahve.agents.evaluation.report import LEVELS_HEADING, write_levels, write_report
    bot = tmp_path / "bot.onnx"
    shutil.copy(checkpoints.find("pishti/ppo_2p"), bot)
    with pytest.raises(FileNotFoundError, match="no report"):
        write_levels(bot, 2, workers=1)
    write_report(bot, ["random"], games=4, workers=1, levels=2)
    write_levels(bot, 3, workers=1)                  # again, with more pairs: the section is replaced, not added
    page = bot.with_suffix(".md").read_text()
    assert page.count(LEVELS_HEADING) == 1 and "| random | full matches |" in page
    levels = json.loads(bot.with_suffix(".eval.json").read_text())["levels"]
    assert list(levels) == ["easy", "medium", "hard"]
    for level, m in levels.items():
        assert m["result"]["games"] == 6 and m["result"]["b"] == "heuristic"
        assert m["time_per_move"]["moves"] > 0
        assert f"| `{level}` | {m['plays']} | 3 | {m['result']['win_rate']:.3f}" in page
    assert "endgame:64:bot.onnx" in levels["hard"]["plays"]


def test_a_report_plays_full_matches_even_where_the_run_evaluated_single_deals(tmp_path):
    import json

    from kahve import checkpoints
    from kahve.agents.evaluation.report import write_report
    from tests.helpers import meta_of, rewrite
    shipped = checkpoints.find("pishti/ppo_2p")
    meta = meta_of(shipped)
    meta["config"]["evaluation"]["settings"] = {"episode": "deal", "reward": "points"}   # as a fine-tune's config
    bot = rewrite(shipped, tmp_path / "bot.onnx", metadata=meta)
    page = write_report(bot, ["random"], games=4, workers=1).read_text()
    result = json.loads(bot.with_suffix(".eval.json").read_text())["results"]["random"]
    assert result["settings"]["episode"] == "match" and "| random | full matches | 4 |" in page
    assert result["deals"] > result["games"]         # whole matches: several deals each
