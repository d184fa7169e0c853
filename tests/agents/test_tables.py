"""One network for several tables (config key ``tables``): the learner's envs deal each table in turn, the config
refuses tables of other sizes, and the bot file fits exactly the tables it learned."""

from __future__ import annotations

import json
import warnings

import pytest

from kahve import envs
from kahve.agents.policies.bot import Bot, BotFileError, check_fits, fit
from kahve.agents.training import config as config_mod
from kahve.agents.training.tables import table_settings
from kahve.agents.training.view.learner_env import LearnerEnv
from kahve.agents.training.view.opponents import OpponentPool

ISH = {"episode": "deal", "false_call_fine": 1}


def test_the_learner_plays_every_side_of_every_table_in_turn():
    tables = [{**ISH, "players": 2}, {**ISH, "players": 3}]
    env = LearnerEnv("ish", tables, OpponentPool([("heuristic", 1.0)]), seed=5)   # as table_settings gives them
    seen = []
    for _ in range(12):
        env.reset()
        seen.append((env.game.num_players, env.learner_side, env.state.num_players))
        assert env.observation_space.shape == (env.game.observation_size,)
    # episode e: table e mod 2, the side turning once per round of tables
    assert [s[:2] for s in seen] == [(2, 0), (3, 0), (2, 1), (3, 1), (2, 0), (3, 2),
                                     (2, 1), (3, 0), (2, 0), (3, 1), (2, 1), (3, 2)]
    assert all(players == dealt for players, _, dealt in seen)


def test_a_single_table_deals_as_before():
    one = LearnerEnv("pishti", {"players": 2, "episode": "deal"}, OpponentPool([("random", 1.0)]), seed=3)
    listed = LearnerEnv("pishti", [{"players": 2, "episode": "deal"}], OpponentPool([("random", 1.0)]), seed=3)
    for _ in range(4):
        a, b = one.reset()[0], listed.reset()[0]
        assert (a == b).all() and one.learner_side == listed.learner_side


def test_the_teacher_labels_every_table_with_a_policy_of_its_own_game():
    from kahve.agents.training.pretrain import collect_demonstrations
    from kahve.envs.ish.rules import OBS_ROUND
    tables = [{**ISH, "players": 2}, {**ISH, "players": 5}]
    data = collect_demonstrations("ish", tables, OpponentPool([("random", 1.0)]), "heuristic", 60, 0.99, seed=1)
    players_in = set((data["obs"][:, OBS_ROUND + 1] * 20).round().astype(int))
    assert players_in == {2, 5}
    assert (data["actions"][data["obs"][:, 0] == 1] == 0).all()     # BET: the heuristic stakes the minimum


def _cfg(**over) -> dict:
    raw = {"game": "ish", "settings": {**ISH, "players": 4}, "algorithm": "dqn", "n_envs": 4,
           "tables": [{"players": 2}, {"players": 3}], **over}
    return config_mod.resolve(raw)


def test_table_settings_put_each_table_over_the_settings():
    assert table_settings(_cfg()) == [{**ISH, "players": 4}, {**ISH, "players": 2}, {**ISH, "players": 3}]
    assert table_settings(_cfg(tables=[])) == {**ISH, "players": 4}


@pytest.mark.parametrize("raw, match", [
    ({"game": "pishti", "settings": {"players": 2}, "tables": [{"players": 4}]},
     r"tables\[0\].*647.*643.*one bot per table"),
    ({"game": "ish", "tables": [{"players": 2}, {"players": 2}]}, r"tables\[1\].*listed before"),
    ({"game": "ish", "settings": {"players": 3}, "tables": [{"players": 3}]}, r"tables\[0\].*table of settings"),
    ({"game": "ish", "tables": [{"players": 21}]}, r"tables\[0\].*players"),
    ({"game": "ish", "tables": ["players=3"]}, r"tables\[0\].*expected settings"),
    ({"game": "ish", "tables": [{"players": n} for n in range(2, 21)] * 4}, r"at most 64"),
])
def test_bad_tables_are_one_line_errors(raw, match):
    with pytest.raises(ValueError, match=match) as err:
        config_mod.resolve(raw)
    assert "\n" not in str(err.value)


def test_a_bot_of_several_tables_fits_each_of_them_and_no_other(tmp_path):
    from kahve.agents.training.backends import train
    cfg = _cfg(total_timesteps=300, seed=2, output=str(tmp_path / "run"), network={"hidden": [16]},
               dqn={"learning_starts": 50, "buffer_size": 1000},
               evaluation={"every": 0, "games": 2, "opponents": ["random"], "workers": 1})
    from kahve.agents.training.run_dir import RunDir
    train(cfg, progress=False, log=lambda *a: None)
    bot_path = RunDir(tmp_path / "run").eval_bot            # the bot of the run's final evaluation
    assert [t["players"] for t in Bot.read_metadata(bot_path)[1]["tables"]] == [4, 2, 3]
    for players in (2, 3, 4):
        game = envs.game_class("ish")(**ISH, players=players)
        with warnings.catch_warnings():
            warnings.simplefilter("error")               # the table's own settings: not even a warning
            bot = Bot.load(bot_path, game=game)
        assert bot.act(game.new_state(1).observation(0), game.new_state(1).legal_mask()) in range(game.num_actions)
    with pytest.raises(BotFileError, match=r"trained at the tables players=4; players=2; players=3.*players=5"):
        Bot.load(bot_path, game=envs.game_class("ish")(**ISH, players=5))

    # its report and its levels: a row for each table, each table's own deals and policy check
    from kahve.agents.evaluation.report import write_report
    page = write_report(bot_path, ["random"], games=6, workers=1, levels=1).read_text()
    results = json.loads(bot_path.with_suffix(".eval.json").read_text())
    tables = {"players=4", "players=2", "players=3"}
    assert set(results["results"]) - {"time_per_move"} == set(results["levels"]) == tables
    for players in (4, 2, 3):
        r = results["results"][f"players={players}"]
        assert r["random"]["sides"] == players and r["random"]["settings"]["players"] == players
        assert f"| players={players} | random | full matches | {r['random']['games']} |" in page
        assert f"- players={players}: Policy check over 400 rounds" in page
        assert f"| players={players} | `hard` |" in page
    assert "- trained at the tables players=4; players=2; players=3, with settings" in page
    seeds = {results["results"][t]["random"]["seed"] for t in results["results"] if t != "time_per_move"}
    assert len(seeds) == 3                                   # no two tables deal the same decks


def test_fit_holds_a_table_against_the_bot_table_of_its_shape():
    meta = {"game": "pis_yedili", "env_version": envs.game_class("pis_yedili")().version,
            "settings": {"players": 3, "episode": "deal"}, "observation_size": 1319, "num_actions": 71,
            "tables": [envs.game_class("pis_yedili")(players=n, episode="deal").settings.as_dict() for n in (3, 4)]}
    four = envs.game_class("pis_yedili")(players=4, episode="deal")
    assert fit(meta, four).ok and not fit(meta, four).other
    assert "players=3; players=4" in fit(meta, envs.game_class("pis_yedili")(players=2)).reason
    with pytest.warns(UserWarning, match="game_end_penalty"):
        check_fits(meta, envs.game_class("pis_yedili")(players=3, episode="deal", game_end_penalty=51))
