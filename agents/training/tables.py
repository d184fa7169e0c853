"""Tables: the settings of the games a run deals (``settings``, and more in config key ``tables``). One network can
learn several tables where they share the observation and action sizes (Ish's 2 to 20 players, Pis Yedili's 2 to
4): the learner's envs deal them in turn (:class:`~.view.learner_env.LearnerEnv`), and the bot file lists them, so
that it fits each (:func:`kahve.agents.policies.bot.fit`)."""

from __future__ import annotations

from kahve import envs

from .files import short

#: tables a run may mix (Ish has 19 sizes)
MAX_TABLES = 64


def table_settings(cfg: dict) -> dict | list[dict]:
    """The settings of the games a run deals: ``settings`` alone, or a list of the tables, ``settings``'s first, then
    each of ``tables`` over it (what :class:`~.view.learner_env.LearnerEnv` takes)."""
    if not cfg["tables"]:
        return cfg["settings"]
    return [cfg["settings"], *({**cfg["settings"], **table} for table in cfg["tables"])]


def resolved_tables(cfg: dict) -> list[dict]:
    """Every table of a run with all its settings (defaults filled in), ``settings``'s first: what a bot file lists
    and a distill stage's labelling jobs record."""
    game_cls = envs.game_class(cfg["game"])
    tables = table_settings(cfg)
    return [game_cls(**table).settings.as_dict() for table in (tables if isinstance(tables, list) else [tables])]


def check_tables(cfg: dict, game) -> None:
    """Every table a settings mapping of this game with the observation and action sizes of ``game`` (the table of
    ``settings``), none twice."""
    tables = cfg["tables"]
    if len(tables) > MAX_TABLES:
        raise ValueError(f"config key 'tables': {len(tables):,} tables; at most {MAX_TABLES}")
    if tables and cfg["backend"] != "sb3":
        raise ValueError("config key 'tables': mixes tables with backend sb3 only (RLlib's env runners deal one table)")
    seen = [game.settings]
    for k, table in enumerate(tables):
        where = f"tables[{k}]"
        if not isinstance(table, dict) or not all(isinstance(name, str) for name in table):
            raise ValueError(f"config key {where!r}: expected settings, e.g. {{players: 3}}, got {short(table)}")
        try:
            other = envs.game_class(cfg["game"])(**{**cfg["settings"], **table})
        except ValueError as err:
            raise ValueError(f"config key {where!r}: {err}") from None
        sizes = (other.observation_size, other.num_actions)
        if sizes != (game.observation_size, game.num_actions):
            raise ValueError(f"config key {where!r}: {short(table)} gives observations of {sizes[0]} and {sizes[1]} "
                             f"actions, settings {game.observation_size} and {game.num_actions}; one network plays "
                             "tables of one size only (train one bot per table)")
        if other.settings in seen:
            raise ValueError(f"config key {where!r}: {short(table)} is the table of settings or one listed before it")
        seen.append(other.settings)
