"""Policy spec strings: the one way policies are named everywhere (CLI, configs, bot levels, the web table).

===============================  ==========================================================================
spec                             policy
===============================  ==========================================================================
``random``                       uniform over the legal actions
``heuristic``                    the game's rule-based player (:mod:`.heuristics`)
``greedy``                       Pişti's plain greedy player, a yardstick (capture whenever possible, a pişti
                                 first; else trail the most-seen rank)
``BOT``                          an exported bot file: its path, or a shipped bot's name (``pishti/ppo_2p``),
                                 greedy
``rollout[:K[,z=Z][,drop=D][:SPEC]]`` flat Monte-Carlo (:mod:`.rollout`): K worlds per move (default 16), each
                                 finished by SPEC (default ``heuristic``) in every seat; ``z=Z``: keep SPEC's
                                 own move unless the best one beats it by Z standard errors; ``drop=D`` (with
                                 ``z``): worlds in batches of 8, an action that trails the kept move by D
                                 standard errors plays no more of them
``ismcts[:N[,OPT...][:SPEC]]``   information-set MCTS (:mod:`.ismcts`), N iterations per move (default 200),
                                 rollouts by SPEC (default: random moves); options ``prior`` (SPEC also biases
                                 the tree), ``bias=B`` (its weight, default 1), ``c=C`` (UCB exploration, 0.7)
``endgame[:K]:SPEC``             SPEC, but the rest of a deal is solved exactly once it is small (the last
                                 hand of Pişti with 2 players, and of Pâsur): K worlds (default 32) from
                                 ``determinize``, each solved with both sides playing perfectly, the best
                                 mean value played (in Pâsur, of equal ones the move worth most against a
                                 random opponent; :mod:`.endgame`)
``BOT:LEVEL``                    a difficulty level of a bot (:mod:`.levels`): ``easy`` (sampled with a
                                 temperature), ``medium`` (greedy), ``hard`` (the bot inside a search)
``LEVEL``                        the level of the game's shipped bot that fits the settings (``hard``)
===============================  ==========================================================================

SPEC after ``rollout:K:``, ``ismcts:N:`` or ``endgame[:K]:`` is any spec, a bot path or a level included: only the
first two colons split, so ``rollout:32:checkpoints/pasur/ppo.onnx`` and ``rollout:8:pishti/ppo_2p:easy`` mean what
they say.
``rollout``, ``rollout:K``, ``ismcts`` and ``ismcts:N`` behave exactly as they always did (same seed, same moves),
and ``rollout:K:heuristic`` is ``rollout:K``. A bad spec is one ``ValueError`` naming the accepted forms
(:data:`POLICY_SPECS`); a bot path that does not exist is a ``FileNotFoundError``.

A spec is also something people hand each other (a config, a web table's opponent), so what it can make kahve do
is bounded, each bound a one-line ``ValueError`` that names it: at most :data:`MAX_BUDGET` iterations or worlds
per search (``ismcts:100000``, ``rollout:4096``, ``endgame:1024``; the shipped levels use up to 64), and at most
:data:`MAX_SEARCH_NESTING` searches one inside another, a level's own search included (``endgame:rollout:32:BOT``,
Pâsur's hard level, is two; ``rollout:8:pasur/ppo:hard`` would be three).
"""

from __future__ import annotations

import os
import threading

from kahve.envs.core.settings import short

from .base import RandomPolicy

POLICY_SPECS = ("random", "heuristic", "ismcts[:N[,prior][,bias=B][,c=C][:SPEC]]",
                "rollout[:K[,z=Z][,drop=D][:SPEC]]", "endgame[:K]:SPEC",
                "PATH to an exported bot file or a shipped bot's NAME (pishti/ppo_2p)", "BOT:easy|medium|hard",
                "easy|medium|hard (the game's shipped bot)", "greedy (Pişti)")

#: the largest count of each search: ISMCTS iterations, rollout worlds, endgame worlds per move
MAX_BUDGET = {"ismcts": 100_000, "rollout": 4_096, "endgame": 1_024}
#: the most searches a policy may nest, one inside another (each multiplies the work of the one around it)
MAX_SEARCH_NESTING = 2

#: options of the count field, per search: name -> whether it takes a value
_OPTIONS = {"rollout": {"z": True, "drop": True}, "ismcts": {"prior": False, "bias": True, "c": True}}


def _shown(spec: str) -> str:
    """A spec as an error quotes it: whole up to 300 characters (a bot's path), in part beyond."""
    return short(spec, 300)


def accepted_specs() -> str:
    return "accepted: " + ", ".join(POLICY_SPECS)


def make_policy(spec: str, game, seed: int | None = None):
    """Build the policy named by ``spec`` for ``game`` (a :class:`kahve.envs.core.Game`)."""
    return _make(spec, game, seed, ())


def _make(spec: str, game, seed, outer: tuple):
    """:func:`make_policy` inside the searches ``outer`` (their specs, outermost first)."""
    from .levels import LEVELS
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a policy spec must be a non-empty string; {accepted_specs()}")
    spec = spec.strip()
    name, _, rest = spec.partition(":")
    if name == "random" and not rest:
        return RandomPolicy(seed)
    if name == "heuristic" and not rest:
        from .heuristics import heuristic_for
        return heuristic_for(game, seed)
    if name == "greedy" and not rest:
        from .heuristics import greedy_for
        return greedy_for(game, seed)
    if name in ("ismcts", "rollout"):
        count, _, inner = rest.partition(":")            # the first two colons split; SPEC keeps the rest
        if rest and not inner and rest.endswith(":"):
            raise ValueError(f"bad policy spec {_shown(spec)}: nothing after the last colon; {accepted_specs()}")
        return _search(spec, name, count, inner, game, seed, _nest(spec, outer))
    if name == "endgame":
        return _endgame(spec, rest, game, seed, _nest(spec, outer))
    if spec in LEVELS:
        return _level(spec, None, game, seed, outer)
    head, _, tail = spec.rpartition(":")
    if head and tail in LEVELS:
        return _level(tail, head, game, seed, outer)
    if looks_like_bot(spec):
        return load_bot(bot_path(spec), game=game, seed=seed)
    raise ValueError(f"unknown policy spec {_shown(spec)}; {accepted_specs()}")


def _nest(spec: str, outer: tuple) -> tuple:
    """The searches around a search's inner policy: ``outer`` and ``spec``, refused past :data:`MAX_SEARCH_NESTING`
    (before the inner spec is read, so a spec nested a thousand times costs nothing)."""
    nested = (*outer, spec)
    if len(nested) > MAX_SEARCH_NESTING:
        raise ValueError(f"bad policy spec {_shown(nested[0])}: at most {MAX_SEARCH_NESTING} searches may nest, one "
                         f"inside another (a level's own search counts), e.g. endgame:rollout:32:heuristic; "
                         f"{accepted_specs()}")
    return nested


def _level(level: str, bot: str | None, game, seed: int | None = None, outer: tuple = ()):
    """The policy of difficulty ``level`` (:mod:`.levels`) for the bot spec ``bot`` (a path or a shipped bot's
    name; None: the game's shipped bot that fits)."""
    from .levels import EASY_TEMPERATURE, hard_spec, shipped_bot
    if bot is None:
        bot = shipped_bot(game)
    elif not looks_like_bot(bot):
        raise ValueError(f"bad policy spec {_shown(bot + ':' + level)}: a level takes a bot file or a shipped bot's "
                         f"name (e.g. pishti/ppo_2p:{level}), not {_shown(bot)}; {accepted_specs()}")
    path = bot_path(bot)
    if level == "easy":
        policy = load_bot(path, game=game, temperature=EASY_TEMPERATURE, seed=seed)   # sessions shared
    elif level == "medium":
        policy = load_bot(path, game=game, seed=seed)
    else:
        policy = _make(hard_spec(game, path), game, seed, outer)
    policy.name = f"{bot}:{level}"
    return policy


#: bot files loaded in this process: (pid, path, mtime, size) -> (session, metadata, expert parts)
_LOADED: dict = {}
_LOADING = threading.Lock()


def load_bot(path, game=None, temperature: float = 0.0, seed: int | None = None):
    """``Bot.load``, but every ``Bot`` of one file in this process shares its onnxruntime sessions (read-only, and
    safe to run from several threads); each keeps its own temperature and generator. Loading builds up to three
    sessions (about 14 MB and 160 ms for Pâsur's), so a web server with a table per person, or a search that
    makes a policy per seat, would otherwise hold one set per table (issue 58). A file changed on disk is read
    again; a forked process loads its own."""
    from .bot import Bot, _split_sessions, check_fits
    path = str(path)
    st = os.stat(path) if os.path.isfile(path) else None
    if st is None:
        return Bot.load(path, game=game, temperature=temperature, seed=seed)   # its own error for a missing file
    key = (os.getpid(), os.path.realpath(path), st.st_mtime_ns, st.st_size)
    with _LOADING:
        if key not in _LOADED:
            session, meta = Bot.read_metadata(path)
            _LOADED[key] = (session, meta, _split_sessions(session, meta, path))
    session, meta, parts = _LOADED[key]
    if game is not None:
        check_fits(meta, game, path)
    return Bot(session, meta, path, temperature, seed, parts=parts)


def looks_like_bot(spec: str) -> bool:
    return "/" in spec or os.path.sep in spec or spec.endswith(".onnx") or os.path.exists(spec)


def bot_path(spec: str) -> str:
    """The file of a bot spec: an existing path, or a shipped bot's name (``pishti/ppo_2p``)."""
    if os.path.exists(spec):
        return spec
    from kahve import checkpoints
    shipped = checkpoints.find(spec)
    if shipped is not None:
        return str(shipped)
    raise FileNotFoundError(f"policy spec {_shown(spec)} looks like a bot file, but there is no such file")


def _search(spec: str, name: str, count: str, inner: str, game, seed, outer: tuple):
    head, *opts = count.split(",") if count else [""]
    usage = ("ismcts takes a positive iteration count, e.g. ismcts:200" if name == "ismcts"
             else "rollout takes a positive number of worlds, e.g. rollout:16")
    options = {}
    for opt in opts:
        key, eq, value = opt.partition("=")
        key = key.strip()
        known = _OPTIONS[name]
        if key not in known or known[key] != bool(eq):
            forms = ", ".join(k + ("=VALUE" if v else "") for k, v in known.items())
            what = (f"option {key} takes a value ({key}=VALUE)" if key in known and known[key] else
                    f"option {key} takes no value" if key in known else f"unknown option {short(opt)}")
            raise ValueError(f"bad policy spec {_shown(spec)}: {what} for {name} (options: {forms}); "
                             f"{accepted_specs()}")
        if eq:
            try:
                options[key] = float(value)
            except ValueError:
                raise ValueError(f"bad policy spec {_shown(spec)}: option {key} takes a number, not {short(value)}; "
                                 f"{accepted_specs()}") from None
            if options[key] < 0 or options[key] != options[key]:
                raise ValueError(f"bad policy spec {_shown(spec)}: option {key} takes a number of at least 0; "
                                 f"{accepted_specs()}")
        else:
            options[key] = True
    base = _make(inner, game, seed, outer) if inner else None
    label = None if base is None and not opts else spec
    if name == "ismcts":
        from .ismcts import ISMCTS
        n = _positive(spec, head, ISMCTS.DEFAULT_ITERATIONS, usage, MAX_BUDGET["ismcts"], "iterations")
        if options.get("prior") and base is None:
            raise ValueError(f"bad policy spec {_shown(spec)}: the prior option needs a policy, e.g. "
                             f"ismcts:{n},prior:heuristic; {accepted_specs()}")
        return ISMCTS(game, iterations=n, seed=seed, exploration=options.get("c", 0.7), policy=base,
                      prior=bool(options.get("prior")), bias=options.get("bias", ISMCTS.DEFAULT_BIAS), name=label)
    from .rollout import RolloutPolicy
    n = _positive(spec, head, RolloutPolicy.DEFAULT_ROLLOUTS, usage, MAX_BUDGET["rollout"], "worlds")
    if "drop" in options and not options.get("z"):
        raise ValueError(f"bad policy spec {_shown(spec)}: drop=D drops the actions that trail the kept move, so it "
                         f"needs a margin, e.g. rollout:{n},z=1,drop={options['drop']:g}; {accepted_specs()}")
    return RolloutPolicy(game, rollouts=n, seed=seed, policy=base, margin=options.get("z", 0.0), name=label,
                         drop=options.get("drop"))


def _endgame(spec: str, rest: str, game, seed, outer: tuple):
    from .endgame import TABLES, EndgamePolicy, solves_table
    count, _, inner = rest.partition(":")
    if not count.strip().isdigit():                  # endgame:SPEC, the default number of worlds
        count, inner = "", rest
    if not inner.strip():
        raise ValueError(f"bad policy spec {_shown(spec)}: endgame plays a policy until the end can be solved; name "
                         f"it, e.g. endgame:pishti/ppo_2p; {accepted_specs()}")
    if not solves_table(game):
        raise ValueError(f"bad policy spec {_shown(spec)}: endgame has no solver for this table; it solves {TABLES}; "
                         f"{accepted_specs()}")
    n = _positive(spec, count, EndgamePolicy.DEFAULT_WORLDS, "endgame takes a positive number of worlds, "
                  "e.g. endgame:32:pishti/ppo_2p", MAX_BUDGET["endgame"], "worlds")
    return EndgamePolicy(game, _make(inner, game, seed, outer), worlds=n, seed=seed, name=spec)


def _positive(spec: str, arg: str, default: int, usage: str, most: int, what: str) -> int:
    """The count after the colon of a spec (``ismcts:200``), or the default when there is none; at most ``most``."""
    try:
        n = int(arg) if arg else default
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"bad policy spec {_shown(spec)}: {usage}; {accepted_specs()}")
    if n > most:
        raise ValueError(f"bad policy spec {_shown(spec)}: at most {most:,} {what} per move, not {n:,}; "
                         f"{accepted_specs()}")
    return n
