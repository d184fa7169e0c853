"""The cases of the bad-input corpus, kind by kind (:func:`all_cases`). Generating them does no work: each case is a
function of the workspace, run by :mod:`.runner`. The files a case damages are made from real ones: copies of
shipped bots, records of random games, a tiny training run."""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import yaml

from .runner import ACCEPT, ERROR, ROOT, Case, Workspace

#: the table of each game the cases play at (one a shipped bot of the game fits)
TABLES = {"pasur": {}, "pishti": {"players": 2}, "pis_yedili": {"players": 2}, "pishe_pasha": {},
          "ish": {"players": 3}}
#: the shipped bots whose copies are damaged, and the table each plays at
BOTS = {"pishti/ppo_2p": "pishti", "pasur/ppo": "pasur", "ish/ppo_every_table": "ish",
        "pishe_pasha/dqn": "pishe_pasha", "pis_yedili/distilled_2p": "pis_yedili"}
#: a tiny run (kahve train configs/pishti/ppo.yaml with these overrides): seconds to train, a small network
TINY_RUN = ["total_timesteps=256", "n_envs=2", "vec_env=dummy", "ppo.n_steps=64", "ppo.batch_size=64",
            "evaluation.games=2", "evaluation.every=0", "evaluation.workers=1", "checkpoint_every=128",
            "opponents.self_play.every=128", "pretrain.steps=0", "network.hidden=[16]", "async_rollouts=false"]


def _game(name: str, **more):
    from kahve import envs
    return envs.game_class(name)(**{**TABLES[name], **more})


def _set(tree: dict, path: str, value) -> dict:
    node = tree
    parts = path.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return tree


def _typo(name: str, taken) -> str:
    for cand in (name + name[-1], name[:-1], name.replace("_", "-"), name.upper(), name + "_x"):
        if cand and cand not in taken:
            return cand
    return name + "_unknown"


def _text(value) -> str:
    """A value as ``--override`` and ``--settings`` take it (YAML flow style)."""
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...").strip()


# ===== shared files ==============================================================================================
def shipped_bot(ws: Workspace, name: str) -> Path:
    def make():
        from kahve import checkpoints
        target = ws.shared(f"bots/{name.replace('/', '_')}.onnx")
        shutil.copyfile(checkpoints.find(name), target)
        return target
    return ws.once(("bot", name), make)


def bot_meta(ws: Workspace, name: str) -> dict:
    def make():
        import onnx
        model = onnx.load(str(shipped_bot(ws, name)))
        return json.loads(next(p.value for p in model.metadata_props if p.key == "kahve"))
    return copy.deepcopy(ws.once(("meta", name), make))


def edited_bot(ws: Workspace, name: str, meta=None, raw_meta: str | None = None, graph=None, drop_meta=False,
               stamp=True) -> Path:
    """A copy of shipped bot ``name`` with ``meta(metadata)`` as its metadata (or the text ``raw_meta``) and/or
    ``graph(model)`` applied to its ONNX model. ``stamp``: its checksum computed anew (where its metadata is a JSON
    mapping), as if kahve had written the edited file, so the case reaches the check behind the checksum; without,
    the shipped bot's checksum stays: a file changed after kahve wrote it."""
    import onnx
    from kahve.agents.policies.bot import stamp_checksum
    model = onnx.load(str(shipped_bot(ws, name)))
    props = {p.key: p.value for p in model.metadata_props}
    if meta is not None:
        props["kahve"] = json.dumps(meta(json.loads(props["kahve"])))
    if raw_meta is not None:
        props["kahve"] = raw_meta
    if drop_meta:
        props.pop("kahve")
    del model.metadata_props[:]
    for k, v in props.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v
    if graph is not None:
        graph(model)
    if stamp:
        stamp_checksum(model)
    out = ws.path("edited.onnx")
    onnx.save(model, str(out))
    return out


def record_of(ws: Workspace, game: str, deck: bool = False) -> dict:
    """A record of a random game of ``game`` at its table (``deck``: dealt from a preset deck)."""
    def make():
        from kahve.agents.evaluation.records import make_record
        g = _game(game)
        rng = random.Random(61)
        cards = None
        if deck:
            ids = g.full_deck()
            rng.shuffle(ids)
            cards = [g.state_class.card_str(c) for c in ids]
        state = g.new_state(61, cards)
        actions = []
        while state.current_player is not None:
            a = rng.choice(state.legal_actions())
            state.apply(a)
            actions.append(a)
        return make_record(g, 61, actions, state, deck=cards, players=[f"p{k}" for k in range(g.num_players)])
    return copy.deepcopy(ws.once(("record", game, deck), make))


def write_records(ws: Workspace, records, name: str = "games.jsonl") -> Path:
    from kahve.agents.evaluation.records import dumps
    return ws.write(name, "".join(dumps(r) + "\n" for r in records))


def run_folder(ws: Workspace) -> Path:
    """A finished tiny training run (made once), copied into the case's folder."""
    def make():
        from kahve.agents.training import config as config_mod
        from kahve.agents.training.backends import train
        out = ws.shared("run")
        cfg = config_mod.load(ROOT / "configs" / "pishti" / "ppo.yaml", [*TINY_RUN, f"output={out}"])
        train(cfg, progress=False, log=lambda *a: None)
        return out
    source = ws.once("run", make)
    target = ws.path("run")
    shutil.copytree(source, target)
    return target


# ===== configs ===================================================================================================
BASE_CONFIG = {"game": "pishti", "settings": {"players": 2}}

#: wrong-type values by the type a key takes
WRONG_TYPES = {int: ["12", 1.5, True, None, [1], {"a": 1}], float: ["abc", True, None, [0.1], {"a": 1}],
               str: [5, True, None, ["x"], {"a": 1}], bool: ["yes", 1, None, [True], {"a": 1}],
               list: ["x", 5, {"a": 1}, None, True], dict: ["x", 5, [1], None, True]}


def _leaves(schema: dict, prefix: str = ""):
    for key, spec in schema.items():
        if isinstance(spec, dict):
            yield from _leaves(spec, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", spec


def _sections(schema: dict, prefix: str = ""):
    for key, spec in schema.items():
        if isinstance(spec, dict):
            yield f"{prefix}{key}", spec
            yield from _sections(spec, f"{prefix}{key}.")


def _out_of_range(field) -> list:
    values = []
    if field.choices is not None:
        values += ["bogus", ""]
        values += [c.upper() for c in field.choices if isinstance(c, str) and c.upper() != c][:1]
    if field.lo is not None:
        if field.type is int:
            values += [int(field.lo) - 1, int(field.hi) + 1, 10**30, -10**30]
        else:
            values += [field.lo - 1 if field.lo >= 0 else field.lo * 10, field.hi * 10 + 1, float("nan"),
                       float("inf"), float("-inf")]
    return values


#: values of keys that a type and range cannot judge, each refused by its own check
SPECIAL_VALUES = {
    "output": ["", "   ", "runs/{gamez}", "runs/{0}", "runs/{game", "/dev/null/run", "/dev/null"],
    "init_from": ["no/such/run", "no_such_bot.onnx", "/dev/null", "pasur/ppo", "pishti/dqn_2p"],
    "pretrain.teacher": ["bogus", "ismcts:0", "rollout:99999", "", "no/such/bot.onnx", "pasur/ppo"],
    "network.hidden": [[], [0], [-1], [1.5], ["a"], [65537], [256] * 17, [True], [None], [[256]]],
    "evaluation.opponents": [[1], ["bogus"], ["ismcts:1000000"], [None], [["random"]], ["pasur/ppo"]],
    "opponents.pool": [[], [1], ["random"], [{"policy": "bogus"}], [{"policy": "random", "weight": 0}],
                       [{"policy": "random", "weight": "x"}], [{"policy": "random", "extra": 1}], [{"weight": 1}],
                       [{"policy": ["random"]}], [{"policy": "random", "weight": float("nan")}],
                       [{"policy": "random", "weight": -1}], [{"policy": "pis_yedili/distilled_2p"}]],
    "settings": [{"bogus": 1}, {1: 2}, {"players": 3}, {"players": "two"}, {"target_score": 10**9},
                 {"players": [2]}, {None: 1}],
    "evaluation.settings": [{"players": 4}, {"bogus": 1}, {"target_score": -1}, {"observation": "plain"}],
    "tables": [[1], ["x"], [{"bogus": 1}], [{"players": 4}], [[{"players": 2}]], [{"players": 3}], [None],
               [{"players": 2}] * 5000],
    "game": ["Pishti", "", "nogame"],
}


def config_cases() -> list:
    from kahve.agents.training import config as config_mod
    cases = []

    def add(name, raw, expect=ERROR):
        cases.append(Case("config", name, expect, call=lambda ws, raw=raw: config_mod.resolve(copy.deepcopy(raw))))

    leaves = dict(_leaves(config_mod.SCHEMA))
    for path, field in leaves.items():
        section = path.rsplit(".", 1)[0] if "." in path else ""
        siblings = {k.rsplit(".", 1)[-1] for k in leaves if (k.rsplit(".", 1)[0] if "." in k else "") == section}
        siblings |= {s.rsplit(".", 1)[-1] for s, _ in _sections(config_mod.SCHEMA)}
        last = path.rsplit(".", 1)[-1]
        default = "pishti" if path == "game" else field.default
        add(f"{path}: its default {default!r}", _set(copy.deepcopy(BASE_CONFIG), path, copy.deepcopy(default)), ACCEPT)
        typo = _typo(last, siblings | set(config_mod.RETIRED))
        add(f"{path}: misspelt {typo!r}", _set(copy.deepcopy(BASE_CONFIG), path.rsplit(".", 1)[0] + "." + typo
                                               if section else typo, copy.deepcopy(default)))
        for value in WRONG_TYPES[field.type]:
            if path == "game" and value is None:
                continue                                  # (game: null is "game is required", below)
            add(f"{path}: wrong type {value!r}", _set(copy.deepcopy(BASE_CONFIG), path, value))
        for value in _out_of_range(field):
            add(f"{path}: out of range {value!r}", _set(copy.deepcopy(BASE_CONFIG), path, value))
        for value in SPECIAL_VALUES.get(path, []):
            shown = repr(value) if len(repr(value)) < 60 else repr(value)[:57] + "..."
            add(f"{path}: {shown}", _set(copy.deepcopy(BASE_CONFIG), path, copy.deepcopy(value)))
    for path, _ in _sections(config_mod.SCHEMA):
        for value in ("x", 5, [1], None):
            add(f"section {path} is {value!r}", _set(copy.deepcopy(BASE_CONFIG), path, value))
        add(f"section {path}: an unknown key", _set(copy.deepcopy(BASE_CONFIG), f"{path}.bogus_key", 1))
    add("no game", {"settings": {"players": 2}})
    add("game: null", {"game": None})
    add("an unknown top-level key", {**BASE_CONFIG, "bogus": 1})
    add("a key that is a number", {**BASE_CONFIG, 5: 1})
    add("a key that is null", {**BASE_CONFIG, None: 1})
    add("a retired key at another value", {**BASE_CONFIG, "network": {"critic": "state"}})
    add("a retired key at its old default", {**BASE_CONFIG, "network": {"move_layer": 0}}, ACCEPT)
    add("async_rollouts with dqn", {**BASE_CONFIG, "algorithm": "dqn", "async_rollouts": True})
    add("ppo.batch_size above the rollout", {**BASE_CONFIG, "n_envs": 1, "ppo": {"n_steps": 8, "batch_size": 64}})
    add("generations without cloning", {**BASE_CONFIG, "pretrain": {"generations": 2}})
    add("generations with a bad search", {**BASE_CONFIG, "pretrain": {"steps": 100, "generations": 1,
                                                                      "search": "rollout:16:{studnet}"}})
    add("init_from with cloning", {**BASE_CONFIG, "init_from": "pishti/ppo_2p", "pretrain": {"steps": 100}})
    add("init_from a bot of another network", {**BASE_CONFIG, "init_from": "pishti/ppo_2p",
                                               "network": {"hidden": [8]}})
    add("init_from a dqn bot", {**BASE_CONFIG, "init_from": "pishti/dqn_2p"})
    add("init_from the shipped ppo bot", {**BASE_CONFIG, "init_from": "pishti/ppo_2p",
                                          "network": {"hidden": [256, 256]}}, ACCEPT)
    add("rllib with league weights", {**BASE_CONFIG, "backend": "rllib",
                                      "opponents": {"league": {"weighting": "pfsp"}}})
    add("rllib with dqn", {**BASE_CONFIG, "backend": "rllib", "algorithm": "dqn"})
    add("a network too large for memory", {**BASE_CONFIG, "network": {"hidden": [65536] * 16}})
    add("a replay buffer too large for memory", {**BASE_CONFIG, "algorithm": "dqn", "dqn": {"buffer_size": 10**8},
                                                 "network": {"hidden": [65536, 65536]}})
    add("pis_yedili at every table", {"game": "pis_yedili", "settings": {"players": 2},
                                      "tables": [{"players": 3}, {"players": 4}]}, ACCEPT)
    add("ish at tables of other observation sizes", {"game": "ish", "settings": {"players": 2},
                                                     "tables": [{"players": 20}]}, ACCEPT)
    add("a table of another game's setting", {"game": "ish", "tables": [{"partnerships": True}]})
    return cases


def _yaml_case(name: str, text, expect=ERROR, load=None) -> Case:
    """A config file with ``text`` (str or bytes), read by ``load(path)`` (config.load by default)."""
    def call(ws):
        from kahve.agents.training import config as config_mod
        path = ws.write("config.yaml", text)
        return (load or config_mod.load)(path)
    return Case("config file", name, expect, call=call)


def config_file_cases() -> list:
    from kahve.agents.training import config as config_mod
    good = (ROOT / "configs" / "pishti" / "ppo.yaml").read_text(encoding="utf-8")
    base = "game: pishti\nsettings: {players: 2}\n"
    cases = [
        _yaml_case("the shipped pishti/ppo.yaml", good, ACCEPT),
        _yaml_case("with a byte-order mark", "\ufeff" + good, ACCEPT),
        _yaml_case("with CRLF line ends", good.replace("\n", "\r\n"), ACCEPT),
        _yaml_case("an anchor and its alias", base + "network: {hidden: &h [64, 64]}\n"
                   "evaluation: {opponents: [random], settings: {players: 2}}\nopponents: {pool: [{policy: random}]}\n",
                   ACCEPT),
        _yaml_case("an alias used", base + "x: &s {players: 2}\n", ERROR),
        _yaml_case("an alias used in a known key", "game: pishti\nsettings: &s {players: 2}\n"
                   "evaluation: {settings: *s}\n", ACCEPT),
        _yaml_case("a merge key", "defaults: &d {players: 2}\n" + "game: pishti\nsettings: {<<: *d}\n"),
        _yaml_case("a merge key inside a known section", base + "ppo: {<<: {n_steps: 64}, batch_size: 64}\n", ACCEPT),
        _yaml_case("hex and octal integers (YAML 1.1)", base + "seed: 0x10\nn_envs: 04\n", ACCEPT),
        _yaml_case("a YAML 1.2 octal integer (a string in YAML 1.1)", base + "n_envs: 0o4\n"),
        _yaml_case("an empty file", ""),
        _yaml_case("only a comment", "# nothing\n"),
        _yaml_case("a list", "- game\n- pishti\n"),
        _yaml_case("a scalar", "pishti\n"),
        _yaml_case("null", "~\n"),
        _yaml_case("a duplicate key", base + "seed: 1\nseed: 2\n"),
        _yaml_case("a duplicate key in a section", base + "ppo: {n_steps: 64, n_steps: 128}\n"),
        _yaml_case("a tab for indentation", "game: pishti\nppo:\n\tn_steps: 64\n"),
        _yaml_case("an unclosed bracket", base + "network: {hidden: [64, 64}\n"),
        _yaml_case("an unclosed quote", base + "output: 'runs/x\n"),
        _yaml_case("two documents", base + "---\ngame: pasur\n"),
        _yaml_case("a python object tag", base + "seed: !!python/object/apply:os.system ['touch pwned']\n"),
        _yaml_case("a python name tag", base + "seed: !!python/name:os.system\n"),
        _yaml_case("an unknown tag", base + "seed: !custom 5\n"),
        _yaml_case("a binary tag", base + "output: !!binary aGVsbG8=\n"),
        _yaml_case("a set", base + "network: {hidden: !!set {64: null}}\n"),
        _yaml_case("a timestamp for the seed", base + "seed: 2024-01-01\n"),
        _yaml_case("a complex key", base + "? [a, b]\n: 1\n"),
        _yaml_case("a mapping as a key", base + "{a: 1}: 2\n"),
        _yaml_case("a null key", base + "~: 1\n"),
        _yaml_case("a number key", base + "5: 1\n"),
        _yaml_case("a boolean key", base + "yes: 1\n"),
        _yaml_case("a recursive alias", base + "network: &n {hidden: *n}\n"),
        _yaml_case("an alias to nothing", base + "seed: *nothing\n"),
        _yaml_case("a billion laughs", "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                   + "".join(f"{chr(98 + k)}: &{chr(98 + k)} [" + ", ".join([f"*{chr(97 + k)}"] * 10) + "]\n"
                             for k in range(8)) + base),
        _yaml_case("a billion laughs in a known key", base + "a: &a [random, random, random, random, random]\n"
                   "evaluation: {opponents: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}\n"
                   "x: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" "y: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"),
        _yaml_case("lists nested 60 deep", base + "network: {hidden: " + "[" * 60 + "1" + "]" * 60 + "}\n"),
        _yaml_case("lists nested 100,000 deep", base + "x: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        _yaml_case("mappings nested 100,000 deep", base + "x: " + "{a: " * 100_000 + "1" + "}" * 100_000 + "\n"),
        _yaml_case("block mappings nested 200 deep", base + "".join("  " * k + f"k{k}:\n" for k in range(200))
                   + "  " * 200 + "v\n"),
        _yaml_case("100,000 hidden layers", base + "network: {hidden: [" + ", ".join(["8"] * 99_000) + "]}\n"),
        # long lists of valid entries are valid: the file's bounds (1 MB, 100,000 values) bound the work
        _yaml_case("99,000 evaluation opponents", base + "evaluation: {opponents: ["
                   + ", ".join(["random"] * 99_000) + "]}\n", ACCEPT),
        _yaml_case("20,000 pool opponents", base + "opponents: {pool: ["
                   + ", ".join(["{policy: heuristic}"] * 20_000) + "]}\n", ACCEPT),
        _yaml_case("20,000 pool opponents, the last a bad spec", base + "opponents: {pool: ["
                   + ", ".join(["{policy: heuristic}"] * 20_000) + ", {policy: bogus}]}\n"),
        _yaml_case("200,000 values", base + "x: [" + ", ".join(["1"] * 200_000) + "]\n"),
        _yaml_case("a key of 500,000 characters", base + "k" * 500_000 + ": 1\n"),
        _yaml_case("a value of 500,000 characters", base + "output: " + "o" * 500_000 + "\n"),
        _yaml_case("a file of 2 MB", base + "# " + "x" * 2_000_000 + "\n"),
        _yaml_case("random bytes", random.Random(1).randbytes(4000)),
        _yaml_case("latin-1 text", base.encode() + "output: café\n".encode("latin-1")),
        _yaml_case("UTF-16 text", base.encode("utf-16")),
        _yaml_case("a NUL byte", base.encode() + b"seed: 1\x00\n"),
        _yaml_case("a control character", base + "output: \x07bell\n"),
        _yaml_case("a recipe with no stages", base + "stages: []\n"),
        _yaml_case("nan for a learning rate", base + "ppo: {learning_rate: .nan}\n"),
        _yaml_case("infinity for a learning rate", base + "ppo: {learning_rate: .inf}\n"),
        _yaml_case("1e-4 without a dot (YAML 1.1 reads a string)", base + "ppo: {learning_rate: 1e-4}\n", ACCEPT),
        _yaml_case("a huge integer", base + "seed: " + "9" * 5000 + "\n"),
        _yaml_case("an emoji key", base + "🂡: 1\n"),
        _yaml_case("a stage list in a plain config", base + "stages: [{name: a}]\n"),
    ]

    def special(name, make_path, expect=ERROR):
        def call(ws):
            return config_mod.load(make_path(ws))
        cases.append(Case("config file", name, expect, call=call))

    special("a folder", lambda ws: ws.path("."))
    special("/dev/zero", lambda ws: "/dev/zero")
    special("/dev/null", lambda ws: "/dev/null")
    special("a missing file", lambda ws: ws.path("missing.yaml"))
    special("a missing shipped name", lambda ws: "pishti/nonexistent")

    def fifo(ws):
        p = ws.path("fifo.yaml")
        os.mkfifo(p)
        return p
    special("a named pipe", fifo)

    def link_zero(ws):
        p = ws.path("zero.yaml")
        os.symlink("/dev/zero", p)
        return p
    special("a link to /dev/zero", link_zero)

    def link_loop(ws):
        p = ws.path("loop.yaml")
        os.symlink(p, p)
        return p
    special("a link to itself", link_loop)

    def unreadable(ws):
        p = ws.write("secret.yaml", "game: pishti\n")
        p.chmod(0)
        return p
    if os.geteuid() != 0:                            # root reads anything
        special("a file without read permission", unreadable)
    special("a shipped name", lambda ws: "pishti/ppo", ACCEPT)
    return cases


# ===== recipes ===================================================================================================
RECIPE = {"game": "pishti", "settings": {"players": 2, "episode": "deal"}, "network": {"hidden": [32]},
          "stages": [{"name": "learn", "total_timesteps": 1000}, {"name": "more", "total_timesteps": 2000}],
          "bot": {"report": ["random"], "games": 10}}


def _recipe_case(name: str, raw, expect=ERROR, overrides=(), text: str | None = None) -> Case:
    def call(ws):
        from kahve.agents.training import recipe as recipe_mod
        path = ws.write("recipe.yaml", text if text is not None else yaml.safe_dump(raw))
        return recipe_mod.load_recipe(path, list(overrides))
    return Case("recipe", name, expect, call=call)


def recipe_cases() -> list:
    def edit(**changes):
        raw = copy.deepcopy(RECIPE)
        raw.update(changes)
        return raw

    def stage(k, **changes):
        raw = copy.deepcopy(RECIPE)
        raw["stages"][k].update(changes)
        return raw

    cases = [_recipe_case("the recipe", RECIPE, ACCEPT)]
    for value in ({"a": 1}, "x", 5, [], None, [[1]], ["s"], [None]):
        cases.append(_recipe_case(f"stages: {value!r}", edit(stages=value)))
    for value in ([1], {"a": 1}, 5, "", "Bad Name", "a b", "../up", "x" * 1000, None, True, "é"):
        cases.append(_recipe_case(f"a stage named {value!r}"[:80], stage(0, name=value)))
    cases.append(_recipe_case("a stage without a name", {**RECIPE, "stages": [{"total_timesteps": 5}]}))
    cases.append(_recipe_case("two stages of one name", stage(1, name="learn")))
    for key, value in (("bot", {}), ("output", "x"), ("stages", [])):
        cases.append(_recipe_case(f"a stage with {key}", stage(0, **{key: value})))
    for value in ("bogus", [1], {"a": 1}, None, 5):
        cases.append(_recipe_case(f"a stage of kind {value!r}", stage(0, kind=value)))
    cases.append(_recipe_case("a train stage with a distill section", stage(0, distill={})))
    for value in ("no/such", "pishti/ppo_2p", [1], 5, None, "pishti/nonexistent"):
        cases.append(_recipe_case(f"a stage from {value!r}", stage(0, **{"from": value})))
    cases.append(_recipe_case("a stage from a shipped config", {"stages": [{"name": "a", "from": "pishti/dqn"}]},
                              ACCEPT))
    cases.append(_recipe_case("a later stage that clones", stage(1, pretrain={"steps": 100})))
    cases.append(_recipe_case("a later stage of another network", stage(1, network={"hidden": [64]})))
    cases.append(_recipe_case("a later stage of another algorithm", stage(1, algorithm="dqn")))
    cases.append(_recipe_case("a stage with an unknown key", stage(0, bogus=1)))
    cases.append(_recipe_case("a stage with a bad value", stage(1, total_timesteps=-5)))
    cases.append(_recipe_case("a stage with a bad setting", stage(1, settings={"players": 3})))
    cases.append(_recipe_case("a stage that is a string", {**RECIPE, "stages": ["learn"]}))
    for value in ("x", 5, [1], {"report": "random"}, {"report": [1]}, {"report": [None]}, {"games": 0},
                  {"games": "ten"}, {"levels": 5, "report": []}, {"bogus": 1}, {"workers": 0}, {"seed": -1}):
        cases.append(_recipe_case(f"bot: {value!r}", edit(bot=value)))
    cases.append(_recipe_case("bot: null", edit(bot=None), ACCEPT))
    for value in ("", "   ", "runs/{gamez}", 5, [1], "runs/{0}"):
        cases.append(_recipe_case(f"output: {value!r}", edit(output=value)))
    for override in ("stages.learn", "stages.learn=5", "stages.nope.total_timesteps=5", "stages..x=1", "stages.=1",
                     "stages.learn.bogus=1", "stages.learn.total_timesteps=abc", "stages=[]",
                     "stages.learn.total_timesteps=[", "bogus=1", "stages.more.network.hidden=[8]",
                     "stages.more.algorithm=dqn", "stages.learn.kind=distill", "stages.learn.name=Bad"):
        cases.append(_recipe_case(f"--override {override}", RECIPE, overrides=[override]))
    for override in ("stages.learn.total_timesteps=500", "seed=3", "stages.more.ppo.learning_rate=1e-4",
                     "network.hidden=[8]", "stages.learn.name=first"):
        cases.append(_recipe_case(f"--override {override}", RECIPE, ACCEPT, overrides=[override]))
    for name in ("pishti/ppo_2p", "pis_yedili/distilled_2p"):
        path = ROOT / "configs" / f"{name}.yaml"
        if path.is_file():
            cases.append(_recipe_case(f"the shipped {name}", None, ACCEPT, text=path.read_text(encoding="utf-8")))
    return cases


# ===== --override ================================================================================================
def override_cases() -> list:
    from kahve.agents.training import config as config_mod
    shipped = ROOT / "configs" / "pishti" / "ppo.yaml"
    cases = []

    def add(item, expect=ERROR):
        shown = item if len(item) < 70 else item[:60] + f"... ({len(item):,} characters)"
        cases.append(Case("override", shown, expect,
                          call=lambda ws, item=item: config_mod.load(shipped, [item])))

    for item in ("noequals", "=5", "", " = ", ".=1", "a..b=1", "ppo..n_steps=64", "ppo.=1", "ppo=5", "ppo=[1]",
                 "game.x=1", "seed.x=1", "settings.players=[2]", "settings.players=two", "settings.bogus=1",
                 "settings=5", "ppo.n_steps=[", "ppo.n_steps={", "ppo.n_steps=]", "ppo.n_steps=!!python/object/apply"
                 ":os.system ['touch pwned']", "ppo.n_steps=!!python/name:os.system", "ppo.n_steps=*alias",
                 "ppo.n_steps=&a [*a]", "x=" + "[" * 10_000, "x=" + "[" * 1000 + "]" * 1000, "seed=" + "9" * 5000,
                 "seed=0x", "n_envs=1e3", "output={game}/{oops}", "output=", "ppo.learning_rate=nan",
                 "ppo.learning_rate=.nan", "ppo.learning_rate=.inf", "ppo.learning_rate=-.inf", "unknown=1",
                 "opponents.pool=[{policy: nonsense}]", "opponents.pool=[]", "opponents.pool=[{policy: random, "
                 "weight: -1}]", "opponents.pool=[{policy: 'ismcts:1000000'}]", "evaluation.opponents=[1]",
                 "evaluation.opponents=['rollout:5000']", "pretrain.teacher=endgame:nothing", "game=pasur,",
                 "game=[pishti]", "seed={a: 1, a: 2}", "seed=1\n2", "k" * 100_000 + "=1", "seed=" + "1" * 100_000,
                 # (a command line's one argument has at most 128 kB on Linux)
                 "network.hidden=[" + ",".join(["8"] * 60_000) + "]", "settings.players=\x00",
                 "ppo.n_steps=64\x00", "🂡=1", "ppo.n_steps: 64", "ppo.n_steps==64", "device=cuda" if not _cuda()
                 else "device=tpu"):
        add(item)
    own = yaml.safe_load(shipped.read_text(encoding="utf-8"))
    for path, field in _leaves(config_mod.SCHEMA):
        add(f"{path}={_text(WRONG_TYPES[field.type][0])}")
        for value in _out_of_range(field)[:2]:
            add(f"{path}={_text(value)}")
        value = config_mod._get(own, path)                   # the shipped config's own value, else the default
        add(f"{path}={_text(field.default if value is None else value)}", ACCEPT)
        add(f"{_typo(path, ())}=1")
    for item in ("seed=7", "ppo.learning_rate=1e-4", "settings.players=2", "settings.target_score=101",
                 "network.hidden=[64, 64]", "evaluation.opponents=[random, heuristic, 'ismcts:10']",
                 "opponents.pool=[{policy: random}]", "output=elsewhere/{game}_{seed}", " seed = 3 ", "seed=3  # a comment"):
        add(item, ACCEPT)
    return cases


def _cuda() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:        # torch missing or broken: no CUDA either way
        return False


# ===== settings ==================================================================================================
def settings_cases() -> list:
    from kahve import envs
    from kahve.envs.core import settings as settings_mod
    from kahve.scripts.common import parse_settings
    cases = []
    for game in envs.GAMES:
        spec = envs.game_class(game).settings_spec

        # a bad value at the table of the game's cases; a setting at its default at the game's default table (a
        # default may not fit another table: partnerships, on by default, need Pişti's 4 players)
        def api(name, kwargs, expect=ERROR, game=game):
            table = TABLES[game] if expect == ERROR else {}
            cases.append(Case("settings", f"{game}: {name}", expect,
                              call=lambda ws: envs.make(game, **{**table, **kwargs}).reset(seed=1)))

        def text(name, items, expect=ERROR, game=game):
            table = TABLES[game] if expect == ERROR else {}
            cases.append(Case("settings", f"{game} --settings {name}", expect,
                              call=lambda ws: envs.game_class(game)(**{**table, **parse_settings(game, items)})))

        for s in spec.settings:
            default = s.default
            api(f"{s.name}={default!r} (its default)", {s.name: default}, ACCEPT)
            text(f"{s.name}={_text(default)}", [f"{s.name}={_text(default)}"], ACCEPT)
            bad = [None, "x", [1], {"a": 1}, float("nan"), float("inf"), -10**30]
            bad += [10**30] if s.name != "reflex" else []           # (a reaction time may be as slow as it likes)
            if isinstance(s, settings_mod.Int):
                bad += [s.lo - 1, s.hi + 1, 1.5, True] + ([s.lo + 1] if s.step > 1 else [])
            elif isinstance(s, settings_mod.Float):
                bad += [s.lo - 1, s.hi * 10 + 1, True, "1.0"]
            elif isinstance(s, settings_mod.Flag):
                bad += ["True", 1, 0, "yes"]
            elif isinstance(s, settings_mod.Choice):
                bad += ["bogus", True] + [o.upper() for o in s.options if isinstance(o, str)][:1]
            elif s.name == "reflex":
                bad += [-1, 0, "Random", True, [[1, 2], [1, 2]], [1, 2, 3, 4], [1, -1, 1], list(range(1, 30))]
            else:
                bad += [-1, 20, 1.5, "Random", 3 if TABLES[game].get("players", 4) <= 3 else 5]
            for value in bad:
                api(f"{s.name}={value!r}"[:90], {s.name: value})
            for t in ("abc", "", "1e999", "nan", "-1", "[1, 2]", "{a: 1}", "10" * 200, "\x00"):
                text(f"{s.name}={t!r}"[:90], [f"{s.name}={t}"])
            typo = _typo(s.name, spec.by_name)
            api(f"misspelt {typo!r}", {typo: default})
            text(f"misspelt {typo}", [f"{typo}={_text(default)}"])
        api("a setting name of 100,000 characters", {"k" * 100_000: 1})
        text("without =", ["players"])
        text("=5", ["=5"])
        text("an empty item", [""])
        text("two of one name, the last valid", [f"{spec.settings[0].name}=bogus",
                                                  f"{spec.settings[0].name}={_text(spec.settings[0].default)}"], ACCEPT)
        cases.append(Case("settings", f"{game}: render_mode='human'", ERROR,
                          call=lambda ws, game=game: envs.make(game, render_mode="human")))
        cases.append(Case("settings", f"{game}: render_mode=['ansi']", ERROR,
                          call=lambda ws, game=game: envs.make(game, render_mode=["ansi"])))
    for name in ("nogame", "", None, 5, ["pishti"], "kahve/pishti-v99", "x" * 100_000):
        shown = repr(name) if len(repr(name)) < 40 else f"a name of {len(name):,} characters"
        cases.append(Case("settings", f"make({shown})", ERROR, call=lambda ws, name=name: envs.make(name)))
    for name in ("Pishti", "pishti ", "pis-yedili", "Pişti", *envs.ENV_IDS):        # names the registry also takes
        cases.append(Case("settings", f"make({name!r})", ACCEPT, call=lambda ws, name=name: envs.make(name)))
    return cases


# ===== policy specs ==============================================================================================
BAD_SPECS = ["", " ", "randomm", "Random", "random:1", "heuristic:5", "ismcts:0", "ismcts:-5", "ismcts:abc",
             "ismcts:1e3", "ismcts:100001", "ismcts:99999999999999999999999", "ismcts:10,foo", "ismcts:10,c",
             "ismcts:10,c=abc", "ismcts:10,c=-1", "ismcts:10,c=nan", "ismcts:10,prior", "ismcts:10:",
             "ismcts:10:nonsense", "ismcts:10,bias=", "ismcts:,", "rollout:0", "rollout:4097", "rollout:8,drop=1",
             "rollout:8,z", "rollout:8,z=-1", "rollout:8:rollout:8:rollout:8:heuristic", "rollout:2:" * 1000 +
             "heuristic", "endgame:" * 1000 + "heuristic", "endgame:", "endgame:5", "endgame:0:heuristic",
             "endgame:2000:heuristic", "nonexistent.onnx", "no/such/bot", "pishti/ppo_9p", "pishti/ppo_2p:impossible",
             "random:easy", "heuristic:hard", "easy:easy", "x" * 1_000_000, "\x00", "ismcts:10\nrandom",
             "/dev/zero", "/dev/null", "/", ".", "..", "rollout:8:endgame:rollout:8:heuristic", "~", "ismcts:10:" * 3,
             None, 5, ["random"], {"policy": "random"}, b"random"]
GOOD_SPECS = ["random", "heuristic", " random ", "random\n", "ismcts:5", "ismcts:5,c=1.5", "rollout:2", "rollout:4,z=1,drop=2",
              "ismcts:5,prior:heuristic", "rollout:2:random", "easy", "medium", "hard"]


def spec_cases() -> list:
    from kahve.agents.policies.specs import make_policy
    cases = []
    for game in TABLES:
        def add(spec, expect, game=game):
            shown = repr(spec) if len(repr(spec)) < 70 else repr(spec)[:60] + f"... ({len(spec):,} characters)"
            cases.append(Case("policy spec", f"{game}: {shown}", expect,
                              call=lambda ws: make_policy(spec, _game(game), 0)))
        for spec in BAD_SPECS:
            add(spec, ERROR)
        for spec in GOOD_SPECS:
            add(spec, ACCEPT)
        solvable = game == "pasur" or game == "pishti"
        add("endgame:heuristic", ACCEPT if solvable else ERROR)
        add("endgame:8:random", ACCEPT if solvable else ERROR)
        add("greedy", ACCEPT if game == "pishti" else ERROR)
        for bot, owner in BOTS.items():
            add(bot, ACCEPT if owner == game else ERROR)
            add(f"{bot}:easy", ACCEPT if owner == game else ERROR)
        add("checkpoints/pishti/ppo_2p.onnx", ACCEPT if game == "pishti" else ERROR)
        add("pishti/ppo_2p.onnx", ACCEPT if game == "pishti" else ERROR)

    def bot_spec(name, make, expect=ERROR):
        cases.append(Case("policy spec", name, expect,
                          call=lambda ws: make_policy(str(make(ws)), _game("pishti"), 0)))
    bot_spec("a folder", lambda ws: ws.path("."))
    bot_spec("a folder named .onnx", lambda ws: (ws.path("x.onnx").mkdir(), ws.path("x.onnx"))[1])
    bot_spec("an empty file", lambda ws: ws.write("empty.onnx", b""))
    bot_spec("a text file named like a bot", lambda ws: ws.write("bot.onnx", "not a bot"))
    bot_spec("a copy of the shipped bot", lambda ws: shipped_bot(ws, "pishti/ppo_2p"), ACCEPT)
    bot_spec("a shipped bot inside a search", lambda ws: f"rollout:2:{shipped_bot(ws, 'pishti/ppo_2p')}", ACCEPT)
    bot_spec("a shipped bot at a level", lambda ws: f"{shipped_bot(ws, 'pishti/ppo_2p')}:hard", ACCEPT)
    bot_spec("a damaged bot inside a search", lambda ws: "rollout:2:" + str(ws.write("bad.onnx", b"\x08\x01junk")))

    def fifo(ws):
        p = ws.path("pipe.onnx")
        os.mkfifo(p)
        return p
    bot_spec("a named pipe", fifo)
    return cases


# ===== bot files =================================================================================================
def _poison(model, value, which: int = 0):
    """Set one weight of the ``which``-th float initializer to ``value``."""
    from onnx import numpy_helper
    inits = [i for i in model.graph.initializer if i.data_type == 1 and len(i.dims) >= 1]
    init = inits[which % len(inits)]
    a = numpy_helper.to_array(init).copy()
    a.flat[0] = value
    init.CopyFrom(numpy_helper.from_array(a, init.name))


def _nudge(model, which: int = 0):
    """Move the first value of the ``which``-th float initializer by one step of float32 (it stays finite)."""
    from onnx import numpy_helper
    inits = [i for i in model.graph.initializer if i.data_type == 1 and len(i.dims) >= 1]
    init = inits[which % len(inits)]
    a = numpy_helper.to_array(init).copy()
    a.flat[0] = np.nextafter(a.flat[0], np.float32(np.inf))
    init.CopyFrom(numpy_helper.from_array(a, init.name))


def _rename(model, io: str, new: str):
    old = (model.graph.input if io == "input" else model.graph.output)[0].name
    (model.graph.input if io == "input" else model.graph.output)[0].name = new
    for node in model.graph.node:
        for k, name in enumerate(node.input):
            if name == old:
                node.input[k] = new
        for k, name in enumerate(node.output):
            if name == old:
                node.output[k] = new


def _drop_node(model, op: str):
    for k, node in enumerate(model.graph.node):
        if node.op_type == op:
            del model.graph.node[k]
            return


def _transpose_first(model):
    from onnx import numpy_helper
    init = next(i for i in model.graph.initializer if len(i.dims) == 2)
    a = numpy_helper.to_array(init)
    init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(a[:-1]), init.name))


def bot_cases() -> list:
    from kahve.agents.policies.bot import Bot
    from kahve.agents.policies.specs import make_policy
    from kahve import envs
    cases = []
    others = {g: [o for o in envs.GAMES if o != g] for g in envs.GAMES}
    for name, game in BOTS.items():
        def add(label, make, expect=ERROR, game=game, via_spec=False):
            def call(ws):
                path = make(ws)
                g = _game(game)
                if via_spec:
                    return make_policy(str(path), g, 0)
                bot = Bot.load(path, game=g)
                state = g.new_state(1)
                bot.act(state.observation(state.current_player), state.legal_mask())
            cases.append(Case("bot file", f"{name}: {label}", expect, call=call))

        def meta(label, change, expect=ERROR, name=name, **kw):
            add(label, lambda ws: edited_bot(ws, name, meta=change), expect, **kw)

        add("the copy", lambda ws, name=name: shipped_bot(ws, name), ACCEPT)
        add("the copy, as a policy spec", lambda ws, name=name: shipped_bot(ws, name), ACCEPT, via_spec=True)
        for frac in (0.0, 0.0005, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999):
            def cut(ws, frac=frac, name=name):
                data = shipped_bot(ws, name).read_bytes()
                return ws.write("cut.onnx", data[:int(len(data) * frac)])
            add(f"cut at {frac:.2%}", cut)
            add(f"cut at {frac:.2%}, as a policy spec", cut, via_spec=True)
        add("the last byte cut", lambda ws, name=name: ws.write("cut.onnx", shipped_bot(ws, name).read_bytes()[:-1]))
        for size in (1, 100, 100_000):
            add(f"{size:,} random bytes", lambda ws, size=size: ws.write("rand.onnx", random.Random(size).randbytes(size)))
        add("zeros", lambda ws: ws.write("zeros.onnx", bytes(10_000)))
        add("a JSON file", lambda ws, name=name: ws.write("bot.onnx", json.dumps(bot_meta(ws, name))))
        add("gzip-compressed", lambda ws, name=name: ws.write("bot.onnx", __import__("gzip").compress(
            shipped_bot(ws, name).read_bytes())))
        add("random bytes after the file", lambda ws, name=name: ws.write("bot.onnx", shipped_bot(ws, name).read_bytes()
                                                                         + random.Random(2).randbytes(64)))
        add("bytes 100-200 zeroed", lambda ws, name=name: ws.write(
            "bot.onnx", (lambda d: d[:100] + bytes(100) + d[200:])(shipped_bot(ws, name).read_bytes())))
        # metadata
        for other in others[game]:
            meta(f"game edited to {other}", lambda m, other=other: {**m, "game": other})
        meta("env_version + 1", lambda m: {**m, "env_version": m["env_version"] + 1})
        meta("env_version as text", lambda m: {**m, "env_version": str(m["env_version"]) + "x"})
        meta("observation_size + 1", lambda m: {**m, "observation_size": m["observation_size"] + 1})
        meta("num_actions + 1", lambda m: {**m, "num_actions": m["num_actions"] + 1})
        meta("num_actions 0", lambda m: {**m, "num_actions": 0})
        meta("observation_size -1", lambda m: {**m, "observation_size": -1})
        meta("observation_size 10**12", lambda m: {**m, "observation_size": 10**12})
        meta("observation_size as text", lambda m: {**m, "observation_size": str(m["observation_size"])})
        meta("observation_size true", lambda m: {**m, "observation_size": True})
        meta("observation_size 1.5", lambda m: {**m, "observation_size": 1.5})
        meta("settings a list", lambda m: {**m, "settings": [1]})
        meta("format removed", lambda m: {k: v for k, v in m.items() if k != "format"})
        meta("format another", lambda m: {**m, "format": "other-bot"})
        meta("format_version 2", lambda m: {**m, "format_version": 2})
        meta("format_version '1'", lambda m: {**m, "format_version": "1"})
        for key in ("game", "env_version", "settings", "observation_size", "num_actions", "algorithm"):
            meta(f"{key} removed", lambda m, key=key: {k: v for k, v in m.items() if k != key})
            meta(f"{key} null", lambda m, key=key: {**m, key: None})
        meta("game 5", lambda m: {**m, "game": 5})
        meta("game a text of 1,000,000 characters", lambda m: {**m, "game": "g" * 1_000_000})
        # (a bot of several tables is held to its tables, and its settings are only the first one's defaults)
        meta("a setting's value of 1,000,000 characters", lambda m: {**m, "settings": {
            **m["settings"], "observation": "o" * 1_000_000}}, ACCEPT if name == "ish/ppo_every_table" else ERROR)
        meta("algorithm 3", lambda m: {**m, "algorithm": 3})
        meta("tables a string", lambda m: {**m, "tables": "x"})
        meta("tables [1]", lambda m: {**m, "tables": [1]})
        meta("expert_input -1", lambda m: {**m, "expert_input": -1})
        meta("expert_input past the observation", lambda m: {**m, "expert_input": 10**9})
        meta("expert_input '3'", lambda m: {**m, "expert_input": "3"})
        meta("expert_input true", lambda m: {**m, "expert_input": True})
        meta("an unknown key", lambda m: {**m, "note": "hello"}, ACCEPT)
        meta("evaluation summary edited", lambda m: {**m, "evaluation": {"win_rate": 1.0}}, ACCEPT)
        meta("training_steps edited", lambda m: {**m, "training_steps": 1}, ACCEPT)
        add("metadata not JSON", lambda ws, name=name: edited_bot(ws, name, raw_meta="{not json"))
        add("metadata a list", lambda ws, name=name: edited_bot(ws, name, raw_meta="[1, 2]"))
        add("metadata a string", lambda ws, name=name: edited_bot(ws, name, raw_meta='"kahve"'))
        add("metadata null", lambda ws, name=name: edited_bot(ws, name, raw_meta="null"))
        add("metadata empty", lambda ws, name=name: edited_bot(ws, name, raw_meta=""))
        add("metadata nested 100,000 deep", lambda ws, name=name: edited_bot(ws, name, raw_meta="[" * 100_000
                                                                             + "]" * 100_000))
        add("metadata of 5 MB", lambda ws, name=name: edited_bot(
            ws, name, meta=lambda m: {**m, "note": "x" * 5_000_000}), ACCEPT)
        add("no kahve metadata", lambda ws, name=name: edited_bot(ws, name, drop_meta=True))
        # the graph
        add("input renamed", lambda ws, name=name: edited_bot(ws, name, graph=lambda m: _rename(m, "input", "obs")))
        add("output renamed", lambda ws, name=name: edited_bot(ws, name, graph=lambda m: _rename(m, "output", "q")))
        for value, label in ((float("nan"), "NaN"), (float("inf"), "infinite")):
            for which in (0, 1, -1):
                add(f"a {label} weight (initializer {which})", lambda ws, name=name, value=value, which=which:
                    edited_bot(ws, name, graph=lambda m: _poison(m, value, which)))
        add("a node removed", lambda ws, name=name: edited_bot(ws, name, graph=lambda m: _drop_node(
            m, m.graph.node[0].op_type)))
        add("a weight of the wrong shape", lambda ws, name=name: edited_bot(ws, name, graph=_transpose_first))
        add("the opset edited to 1", lambda ws, name=name: edited_bot(
            ws, name, graph=lambda m: m.opset_import[0].__setattr__("version", 1)))
        add("ir_version 99", lambda ws, name=name: edited_bot(ws, name, graph=lambda m: setattr(m, "ir_version", 99)))
        # changed after kahve wrote it: its checksum (issue 61) no longer that of its weights and metadata
        for which in (0, -1):
            add(f"a changed finite weight (initializer {which})", lambda ws, name=name, which=which: edited_bot(
                ws, name, graph=lambda m: _nudge(m, which), stamp=False))
            add(f"a changed finite weight (initializer {which}), as a policy spec", lambda ws, name=name, which=which:
                edited_bot(ws, name, graph=lambda m: _nudge(m, which), stamp=False), via_spec=True)
        add("a changed finite weight, its checksum computed anew (another bot)", lambda ws, name=name: edited_bot(
            ws, name, graph=_nudge), ACCEPT)
        add("training_steps edited, the checksum not", lambda ws, name=name: edited_bot(
            ws, name, meta=lambda m: {**m, "training_steps": 1}, stamp=False))
        add("a setting edited, the checksum not", lambda ws, name=name: edited_bot(
            ws, name, meta=lambda m: {**m, "settings": {**m["settings"], "target_score": 7}}, stamp=False))
        add("checksum null", lambda ws, name=name: edited_bot(ws, name, meta=lambda m: {**m, "checksum": None},
                                                              stamp=False))
        add("checksum of another bot", lambda ws, name=name: edited_bot(
            ws, name, meta=lambda m: {**m, "checksum": bot_meta(ws, "pasur/dqn")["checksum"]}, stamp=False))
        add("checksum removed (a bot file of a kahve before checksums)", lambda ws, name=name: edited_bot(
            ws, name, meta=lambda m: {k: v for k, v in m.items() if k != "checksum"}, stamp=False), ACCEPT)
        add("two kahve metadata entries", lambda ws, name=name: edited_bot(
            ws, name, graph=lambda m: m.metadata_props.add().CopyFrom(m.metadata_props[0]), stamp=False))
        # another table
        for other in others[game][:2]:
            def call(ws, name=name, other=other):
                return Bot.load(shipped_bot(ws, name), game=_game(other))
            cases.append(Case("bot file", f"{name}: loaded for {other}", ERROR, call=call))
    # a bot at a table whose spaces differ (Pişti: 4 players)
    cases.append(Case("bot file", "pishti/ppo_2p: at a 4-player table", ERROR,
                      call=lambda ws: Bot.load(shipped_bot(ws, "pishti/ppo_2p"),
                                               game=envs.game_class("pishti")(players=4))))
    cases.append(Case("bot file", "pishti/ppo_2p: plain observation", ERROR,
                      call=lambda ws: Bot.load(shipped_bot(ws, "pishti/ppo_2p"), game=_game("pishti",
                                                                                            observation="plain"))))
    cases.append(Case("bot file", "pishti/ppo_2p: another target score (a warning)", ACCEPT,
                      call=lambda ws: Bot.load(shipped_bot(ws, "pishti/ppo_2p"), game=_game("pishti",
                                                                                            target_score=101))))
    cases.append(Case("bot file", "pishti/ppo_2p: the metadata's players edited to 4", ERROR,
                      call=lambda ws: Bot.load(edited_bot(ws, "pishti/ppo_2p", meta=lambda m: {
                          **m, "settings": {**m["settings"], "players": 4}}), game=_game("pishti"))))
    cases.append(Case("bot file", "ish/ppo_every_table: its tables edited to pishti settings", ERROR,
                      call=lambda ws: Bot.load(edited_bot(ws, "ish/ppo_every_table", meta=lambda m: {
                          **m, "tables": [{"players": 2, "observation": "appraised"}]}), game=_game("ish"))))
    cases.append(Case("bot file", "pasur/ppo: without its expert_input (the whole graph runs)", ACCEPT,
                      call=lambda ws: Bot.load(edited_bot(ws, "pasur/ppo", meta=lambda m: {
                          k: v for k, v in m.items() if k != "expert_input"}), game=_game("pasur"))))
    cases.append(Case("bot file", "pishti/ppo_2p: an expert_input it has no expert for", ERROR,
                      call=lambda ws: Bot.load(edited_bot(ws, "pishti/ppo_2p", meta=lambda m: {
                          **m, "expert_input": 0}), game=_game("pishti"))))
    # init_from a damaged bot
    for label, make in (("cut in half", lambda ws: ws.write("half.onnx", shipped_bot(ws, "pishti/ppo_2p")
                                                            .read_bytes()[:500_000])),
                        ("a NaN weight", lambda ws: edited_bot(ws, "pishti/ppo_2p",
                                                               graph=lambda m: _poison(m, float("nan")))),
                        ("with a changed finite weight", lambda ws: edited_bot(ws, "pishti/ppo_2p", graph=_nudge,
                                                                               stamp=False)),
                        ("of pasur", lambda ws: shipped_bot(ws, "pasur/ppo"))):
        def call(ws, make=make):
            from kahve.agents.training import config as config_mod
            return config_mod.resolve({**BASE_CONFIG, "init_from": str(make(ws)),
                                       "network": {"hidden": [256, 256]}})
        cases.append(Case("bot file", f"init_from a bot {label}", ERROR, call=call))
    return cases


# ===== records ===================================================================================================
def _set_action(k_frac, value):
    def edit(r):
        r["actions"][min(len(r["actions"]) - 1, int(len(r["actions"]) * k_frac))] = value
        return r
    return edit


def _change(path, value):
    def edit(r):
        node = r
        parts = path.split(".")
        for p in parts[:-1]:
            node = node[p]
        if value is _DELETE:
            del node[parts[-1]]
        else:
            node[parts[-1]] = value(node[parts[-1]]) if callable(value) else value
        return r
    return edit


_DELETE = object()


def record_cases() -> list:
    from kahve import envs
    from kahve.agents.evaluation.records import checksum, load_records
    cases = []

    def add(game, label, make_file, expect=ERROR, problems=False, cli=False):
        def call(ws):
            path = make_file(ws)
            if problems:
                found = []
                load_records(str(path), problems=found)
                if not found:
                    raise AssertionError("the damaged line was not reported")
                return
            return load_records(str(path))
        cases.append(Case("record", f"{game}: {label}", expect, call=call))
        if cli:
            cases.append(Case("record", f"{game}: kahve replay, {label}", expect,
                              argv=lambda ws: ["replay", make_file(ws)]))

    for game in TABLES:
        others = [o for o in envs.GAMES if o != game]

        def edited(label, edit, expect=ERROR, crafted=False, no_checksum=False, deck=False, cli=False, game=game):
            def make(ws):
                r = edit(record_of(ws, game, deck))
                if no_checksum:
                    r.pop("checksum", None)
                elif crafted:
                    r["checksum"] = checksum(r)
                return write_records(ws, [r])
            add(game, label + (" (checksum made anew)" if crafted else " (no checksum)" if no_checksum else ""),
                make, expect, cli=cli)

        edited("the record", lambda r: r, ACCEPT, cli=True)
        edited("dealt from a preset deck", lambda r: r, ACCEPT, deck=True)
        edited("its checksum removed", lambda r: r, ACCEPT, no_checksum=True)
        for crafted in (False, True):
            for frac in (0.0, 0.5, 1.0):
                edited(f"move at {frac:.0%} changed to an illegal one", _illegal_edit(game, frac), crafted=crafted)
            for value in (-1, 10**20, 1.5, "3", None, True, [1]):
                edited(f"a move edited to {value!r}", _set_action(0.5, value), crafted=crafted)
            edited("the last move dropped", lambda r: {**r, "actions": r["actions"][:-1]}, crafted=crafted)
            edited("a move added after the end", lambda r: {**r, "actions": r["actions"] + [0]}, crafted=crafted)
            edited("no moves", lambda r: {**r, "actions": []}, crafted=crafted)
            edited("actions a string", lambda r: {**r, "actions": "0,1,2"}, crafted=crafted)
            edited("actions a mapping", lambda r: {**r, "actions": {"0": 1}}, crafted=crafted)
            for value in (lambda s: s + 1, "x", 1.5, None, True, 10**100, [1]):
                shown = "seed + 1" if callable(value) else f"seed {value!r}"[:40]
                edited(shown, _change("seed", value), crafted=crafted)
            edited("the winners changed", _change("result.winners", lambda w: [s for s in range(3) if s not in w][:1]),
                   crafted=crafted)
            edited("no winners", _change("result.winners", []), crafted=crafted)
            edited("a score + 1", _change("result.scores", lambda s: [s[0] + 1, *s[1:]]), crafted=crafted)
            edited("a return + 0.5", _change("result.returns", lambda s: [s[0] + 0.5, *s[1:]]), crafted=crafted)
            edited("a return NaN", _change("result.returns", lambda s: [float("nan"), *s[1:]]), crafted=crafted)
            edited("a return infinite", _change("result.returns", lambda s: [float("inf"), *s[1:]]), crafted=crafted)
            edited("a return as text", _change("result.returns", lambda s: ["1", *s[1:]]), crafted=crafted)
            edited("result a list", _change("result", []), crafted=crafted)
            edited("result without scores", _change("result.scores", _DELETE), crafted=crafted)
            edited("settings a list", _change("settings", []), crafted=crafted)
            edited("an unknown setting", _change("settings", lambda s: {**s, "bogus": 1}), crafted=crafted)
            first = envs.game_class(game).settings_spec.settings[0].name
            edited(f"setting {first} out of range", _change(f"settings.{first}", 10**9), crafted=crafted)
            # (made anew, a record without a setting at its default is the same game)
            edited(f"setting {first} removed", _change(f"settings.{first}", _DELETE),
                   ACCEPT if crafted and first not in TABLES[game] else ERROR, crafted=crafted)
            edited("env_version + 1", _change("env_version", lambda v: v + 1), crafted=crafted)
            edited("env_version as text", _change("env_version", lambda v: str(v)), crafted=crafted)
            for other in others[:2]:
                edited(f"game edited to {other}", _change("game", other), crafted=crafted)
            edited("game 5", _change("game", 5), crafted=crafted)
            edited("format edited", _change("format", "kahve-recordx"), crafted=crafted)
            edited("version 2", _change("version", 2), crafted=crafted)
            for key in ("format", "version", "game", "env_version", "settings", "seed", "actions", "result"):
                edited(f"{key} removed", _change(key, _DELETE), crafted=crafted)
            edited("an unknown key", _change("note", "hello"), crafted=crafted)
            edited("players one too many", _change("players", lambda p: p + ["extra"]), crafted=crafted)
            edited("players a string", _change("players", "you"), crafted=crafted)
            edited("players of numbers", _change("players", lambda p: list(range(len(p)))), crafted=crafted)
            edited("a deck card swapped for a duplicate", _deck_duplicate, crafted=crafted, deck=True)
            edited("the deck cut by one card", lambda r: {**r, "deck": r["deck"][:-1]}, crafted=crafted, deck=True)
            edited("the deck a string", lambda r: {**r, "deck": " ".join(r["deck"])}, crafted=crafted, deck=True)
            edited("the deck of numbers past the deck", lambda r: {**r, "deck": list(range(60, 60 + len(r["deck"])))},
                   crafted=crafted, deck=True)
        edited("the deck of card ids", lambda r: {**r, "deck": list(range(len(r["deck"])))}, deck=True)
        for frac in (0.0, 0.5, 1.0):
            edited(f"the move at {frac:.0%} changed to another legal one", _other_legal_edit(game, frac))
        edited("the players renamed", _change("players", lambda p: ["x"] * len(p)))
        edited("the checksum of another record", lambda r: {**r, "checksum": "sha256:" + "0" * 64})
        for value in ("sha256:xyz", "", 5, None, "md5:" + "0" * 32, "sha256:" + "A" * 64, ["sha256:"]):
            edited(f"checksum {value!r}", _change("checksum", value))
        edited("two deck cards swapped", _deck_swap, no_checksum=True, deck=True)
        edited("two deck cards swapped", _deck_swap, deck=True)
        edited("the result changed", _change("result.scores", lambda s: [s[0] + 1, *s[1:]]), no_checksum=True)
        edited("an illegal move", _illegal_edit(game, 0.5), no_checksum=True)
        edited("checksum null and two deck cards swapped", lambda r: {**_deck_swap(r), "checksum": None}, deck=True)

        # the file
        def line_file(transform, game=game, name="games.jsonl"):
            def make(ws):
                from kahve.agents.evaluation.records import dumps
                return ws.write(name, transform(dumps(record_of(ws, game))))
            return make
        for frac in (0.1, 0.5, 0.9, 0.999):
            add(game, f"the line cut at {frac:.1%}", line_file(lambda t, frac=frac: t[:int(len(t) * frac)] + "\n"),
                cli=frac == 0.5)
        add(game, "a byte-order mark", line_file(lambda t: "\ufeff" + t + "\n"), ACCEPT, cli=True)
        add(game, "CRLF line ends", line_file(lambda t: t + "\r\n"), ACCEPT)
        add(game, "blank lines around", line_file(lambda t: "\n\n  \n" + t + "\n\n"), ACCEPT)
        add(game, "the record twice", line_file(lambda t: t + "\n" + t + "\n"), ACCEPT)
        add(game, "no newline at the end", line_file(lambda t: t), ACCEPT)
        add(game, "indented JSON (several lines)", line_file(lambda t: json.dumps(json.loads(t), indent=1)))
        add(game, "a JSON array of the record", line_file(lambda t: "[" + t + "]\n"))
        add(game, "garbage before the record", line_file(lambda t: "xx" + t + "\n"))
        add(game, "a NUL byte inside", line_file(lambda t: t[:20] + "\x00" + t[20:] + "\n"))
        add(game, "a good line and a cut one", line_file(lambda t: t + "\n" + t[:50] + "\n"))
        add(game, "a good line and a cut one, the damaged line reported", line_file(lambda t: t + "\n" + t[:50] + "\n"),
            ACCEPT, problems=True)
        add(game, "a good line and one of another version, reported", line_file(
            lambda t: t + "\n" + t.replace('"version":1', '"version":2') + "\n"), ACCEPT, problems=True)
        add(game, "UTF-16", lambda ws, game=game: ws.write("games.jsonl", __import__(
            "kahve.agents.evaluation.records", fromlist=["dumps"]).dumps(record_of(ws, game)).encode("utf-16")))
        add(game, "a byte that is not UTF-8", lambda ws, game=game: ws.write("games.jsonl", __import__(
            "kahve.agents.evaluation.records", fromlist=["dumps"]).dumps(record_of(ws, game)).encode()[:40] + b"\xff"
            + b"\n"))
    for label, make in (
            ("an empty file", lambda ws: ws.write("g.jsonl", "")),
            ("blank lines only", lambda ws: ws.write("g.jsonl", "\n \n\t\n")),
            ("random bytes", lambda ws: ws.write("g.jsonl", random.Random(3).randbytes(5000))),
            ("null", lambda ws: ws.write("g.jsonl", "null\n")),
            ("a number", lambda ws: ws.write("g.jsonl", "5\n")),
            ("a string", lambda ws: ws.write("g.jsonl", '"kahve-record"\n')),
            ("an empty object", lambda ws: ws.write("g.jsonl", "{}\n")),
            ("lists nested 100,000 deep", lambda ws: ws.write("g.jsonl", "[" * 100_000 + "]" * 100_000 + "\n")),
            ("objects nested 100,000 deep", lambda ws: ws.write("g.jsonl", '{"a":' * 100_000 + "1"
                                                                + "}" * 100_000 + "\n")),
            ("a line of 10 MB", lambda ws: ws.write("g.jsonl", '{"format": "' + "x" * 10_000_001 + '"}\n')),
            ("a number of 100,000 digits", lambda ws: ws.write("g.jsonl", '{"seed": ' + "9" * 100_000 + "}\n")),
            ("a file past 100 MB (sparse)", lambda ws: _sparse(ws.path("big.jsonl"), 100_000_001)),
            ("a folder", lambda ws: ws.path(".")),
            ("a folder of records", lambda ws: (ws.write("d/a.jsonl", "{}\n"), ws.path("d"))[1]),
            ("/dev/zero", lambda ws: "/dev/zero"),
            ("/dev/null", lambda ws: "/dev/null"),
            ("a missing file", lambda ws: ws.path("missing.jsonl")),
            ("a named pipe", lambda ws: (os.mkfifo(ws.path("p.jsonl")), ws.path("p.jsonl"))[1]),
            ("a link to /dev/zero", lambda ws: (os.symlink("/dev/zero", ws.path("z.jsonl")), ws.path("z.jsonl"))[1]),
            ("a link to itself", lambda ws: (os.symlink(ws.path("l.jsonl"), ws.path("l.jsonl")), ws.path("l.jsonl"))[1]),
            ("a bot file", lambda ws: shipped_bot(ws, "pishti/ppo_2p")),
            ("a config file", lambda ws: ROOT / "configs" / "pishti" / "ppo.yaml")):
        add("file", label, make, cli=label in ("an empty file", "a folder", "/dev/zero", "a named pipe"))
    for index in ("1", "-1", "abc", "99999999999999999999"):
        cases.append(Case("record", f"kahve replay --game-index {index}", ERROR,
                          argv=lambda ws, index=index: ["replay", write_records(ws, [record_of(ws, "pishti")]),
                                                        "--game-index", index]))
    for seat in ("2", "-1", "x"):
        cases.append(Case("record", f"kahve replay --seat {seat}", ERROR,
                          argv=lambda ws, seat=seat: ["replay", write_records(ws, [record_of(ws, "pishti")]),
                                                      "--seat", seat]))
    cases.append(Case("record", "kahve replay --seat 1", ACCEPT,
                      argv=lambda ws: ["replay", write_records(ws, [record_of(ws, "pishti")]), "--seat", "1"]))
    return cases


def _illegal_edit(game, frac):
    def edit(r, game=game):
        from kahve.agents.evaluation.records import replay_states
        plain = {k: v for k, v in r.items() if k != "checksum"}
        states = replay_states(plain, check_result=False)
        k = min(len(states) - 2, int((len(states) - 1) * frac))
        legal = set(states[k].legal_actions())
        r["actions"][k] = next(a for a in range(states[k].game.num_actions) if a not in legal)
        return r
    return edit


def _other_legal_edit(game, frac):
    def edit(r):
        from kahve.agents.evaluation.records import replay_states
        states = replay_states({k: v for k, v in r.items() if k != "checksum"}, check_result=False)
        choices = [k for k, s in enumerate(states[:-1]) if len(s.legal_actions()) > 1]
        k = choices[min(len(choices) - 1, int(len(choices) * frac))]
        r["actions"][k] = next(a for a in states[k].legal_actions() if a != r["actions"][k])
        return r
    return edit


def _deck_swap(r):
    deck = list(r["deck"])
    deck[-1], deck[-2] = deck[-2], deck[-1]
    if deck == r["deck"]:               # (two copies of one card: swap another pair)
        deck[0], deck[-1] = deck[-1], deck[0]
    return {**r, "deck": deck}


def _deck_duplicate(r):
    deck = list(r["deck"])
    deck[1] = deck[0]
    return {**r, "deck": deck}


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


# ===== run folders ===============================================================================================
def _edit_yaml(change):
    def edit(run: Path):
        cfg = yaml.safe_load((run / "config.yaml").read_text())
        (run / "config.yaml").write_text(yaml.safe_dump(change(cfg), sort_keys=False))
    return edit


def _edit_state(change):
    def edit(run: Path):
        path = run / "checkpoints" / "latest" / "state.json"
        path.write_text(json.dumps(change(json.loads(path.read_text()))))
    return edit


def _write(rel: str, data):
    def edit(run: Path):
        p = run / rel
        if isinstance(data, str):
            p.write_text(data)
        else:
            p.write_bytes(data)
    return edit


def _remove(rel: str):
    def edit(run: Path):
        p = run / rel
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return edit


def _cut(rel: str, frac: float):
    def edit(run: Path):
        p = run / rel
        data = p.read_bytes()
        p.write_bytes(data[:int(len(data) * frac)])
    return edit


def _npz(change):
    def edit(run: Path):
        with np.load(run / "policy.npz", allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
        arrays = change(arrays)
        with open(run / "policy.npz", "wb") as f:
            np.savez(f, **arrays)
    return edit


def _nan_first(arrays):
    k = next(k for k, a in arrays.items() if a.dtype.kind == "f" and a.size)
    a = arrays[k].copy()
    a.flat[0] = np.nan
    return {**arrays, k: a}


def _unfinished(run: Path):
    """The run as if stopped before its end: no final network, no summary (export reads the checkpoint)."""
    (run / "policy.npz").unlink()
    (run / "summary.json").unlink()


def run_folder_cases() -> list:
    cases = []

    def add(label, edits, expect=ERROR, command="both", overrides=(), unfinished=False):
        def prepared(ws):
            run = run_folder(ws)
            if unfinished:
                _unfinished(run)
            for edit in edits:
                edit(run)
            return run
        if command in ("both", "export"):
            cases.append(Case("run folder", f"kahve export, {label}" + (" (unfinished run)" if unfinished else ""),
                              expect, argv=lambda ws: ["export", prepared(ws), "-o", ws.path("bot.onnx")]))
        if command in ("both", "resume"):
            more = ["--override", *overrides] if overrides else []
            cases.append(Case("run folder", f"kahve train --resume, {label}", expect,
                              argv=lambda ws: ["train", "--resume", prepared(ws), "--no-progress", *more]))

    add("the run", [], ACCEPT, command="export")
    add("the run", [], ACCEPT, command="export", unfinished=True)
    add("the run, its budget raised", [], ACCEPT, command="resume", overrides=["total_timesteps=320"])
    add("the run, finished", [], command="resume")
    for frac in (0.0, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 0.995):
        add(f"config.yaml cut at {frac:.1%}", [_cut("config.yaml", frac)])
    add("config.yaml: network.hidden edited", [_edit_yaml(lambda c: {**c, "network": {**c["network"],
                                                                                        "hidden": [32]}})])
    add("config.yaml: network.hidden edited", [_edit_yaml(lambda c: {**c, "network": {**c["network"], "hidden": [32]}})],
        unfinished=True, command="export")
    add("config.yaml: activation edited", [_edit_yaml(lambda c: {**c, "network": {**c["network"],
                                                                                   "activation": "relu"}})])
    add("config.yaml: game edited", [_edit_yaml(lambda c: {**c, "game": "pasur", "settings": {}})])
    add("config.yaml: players edited", [_edit_yaml(lambda c: {**c, "settings": {**c["settings"], "players": 4}})])
    add("config.yaml: observation edited", [_edit_yaml(lambda c: {**c, "settings": {**c["settings"],
                                                                                     "observation": "plain"}})])
    add("config.yaml: algorithm edited", [_edit_yaml(lambda c: {**c, "algorithm": "dqn"})])
    add("config.yaml: total_timesteps below the steps done", [_edit_yaml(lambda c: {**c, "total_timesteps": 10})],
        command="resume")
    add("config.yaml: a key removed", [_edit_yaml(lambda c: {k: v for k, v in c.items() if k != "seed"})])
    add("config.yaml: a section removed", [_edit_yaml(lambda c: {k: v for k, v in c.items() if k != "ppo"})])
    add("config.yaml: an unknown key", [_edit_yaml(lambda c: {**c, "bogus": 1})])
    add("config.yaml: a wrong type", [_edit_yaml(lambda c: {**c, "n_envs": "two"})])
    add("config.yaml: a setting out of range", [_edit_yaml(lambda c: {**c, "settings": {**c["settings"],
                                                                                         "target_score": 1}})])
    add("config.yaml: a duplicate key", [lambda run: (run / "config.yaml").write_text(
        (run / "config.yaml").read_text() + "seed: 5\n")])
    add("config.yaml: a list", [_write("config.yaml", "- 1\n- 2\n")])
    add("config.yaml: empty", [_write("config.yaml", "")])
    add("config.yaml: random bytes", [_write("config.yaml", random.Random(4).randbytes(3000))])
    add("config.yaml: a python tag", [lambda run: (run / "config.yaml").write_text(
        (run / "config.yaml").read_text().replace("seed: 0", "seed: !!python/object/apply:os.getpid []"))])
    add("config.yaml: a folder", [_remove("config.yaml"), lambda run: (run / "config.yaml").mkdir()])
    add("config.yaml: missing", [_remove("config.yaml")])
    add("config.yaml: evaluation.games edited (a consistent change)", [_edit_yaml(
        lambda c: {**c, "evaluation": {**c["evaluation"], "games": 4}})], ACCEPT, command="export")
    for label, change in (("steps -1", lambda s: {**s, "steps": -1}),
                          ("steps 10**12", lambda s: {**s, "steps": 10**12, "model": {**s["model"],
                                                                                     "num_timesteps": 10**12}}),
                          ("steps as text", lambda s: {**s, "steps": "256"}),
                          ("steps 1.5", lambda s: {**s, "steps": 1.5}),
                          ("steps null", lambda s: {**s, "steps": None}),
                          ("steps true", lambda s: {**s, "steps": True}),
                          ("steps removed", lambda s: {k: v for k, v in s.items() if k != "steps"}),
                          ("steps not the model's", lambda s: {**s, "steps": 128}),
                          ("the network edited", lambda s: {**s, "network": {**s["network"], "hidden": [64]}}),
                          ("a list", lambda s: [s]),
                          ("a number", lambda s: 5)):
        add(f"state.json: {label}", [_edit_state(change)])
        add(f"state.json: {label}", [_edit_state(change)], command="export", unfinished=True)
    for label, change in (("the random state garbage", lambda s: {**s, "rng": [3, "garbage"]}),
                          ("the numpy random state garbage", lambda s: {**s, "np_rng": ["MT19937", [1, 2]]}),
                          ("an env's random state garbage", lambda s: {**s, "env_states": [{"rng": 5}] * 2}),
                          ("an env's random state of another generator", lambda s: {
                              **s, "env_states": [{"episodes": 0, "rng": [3, [1, 2, 3], None]}] * 2}),
                          ("the env states a string", lambda s: {**s, "env_states": "x"}),
                          ("the snapshot count -1", lambda s: {**s, "snapshots": -1}),
                          ("the next snapshot a string", lambda s: {**s, "next_snapshot": "x"}),
                          ("the model's state a list", lambda s: {**s, "model": [1]})):
        add(f"state.json: {label}", [_edit_state(change)], command="resume", overrides=["total_timesteps=320"])
    add("state.json: the env states null (not saved: new streams)", [_edit_state(lambda s: {**s, "env_states": None})],
        ACCEPT, command="resume", overrides=["total_timesteps=320"])
    for frac in (0.0, 0.5, 0.99):
        add(f"state.json cut at {frac:.0%}", [_cut("checkpoints/latest/state.json", frac)])
    add("state.json: random bytes", [_write("checkpoints/latest/state.json", random.Random(5).randbytes(500))])
    add("state.json: a folder", [_remove("checkpoints/latest/state.json"),
                                 lambda run: (run / "checkpoints/latest/state.json").mkdir()], command="resume",
        overrides=["total_timesteps=320"])
    # (a checkpoint without its state.json is one a crash left partial: a finished run exports its final network)
    add("state.json: a folder (the final network is there)", [_remove("checkpoints/latest/state.json"),
                                                              lambda run: (run / "checkpoints/latest/state.json")
                                                              .mkdir()], ACCEPT, command="export")
    add("state.json: a folder", [_remove("checkpoints/latest/state.json"),
                                 lambda run: (run / "checkpoints/latest/state.json").mkdir()], command="export",
        unfinished=True)
    add("model.pt: random bytes", [_write("checkpoints/latest/model.pt", random.Random(6).randbytes(5000))],
        command="resume", overrides=["total_timesteps=320"])
    add("model.pt: random bytes", [_write("checkpoints/latest/model.pt", random.Random(6).randbytes(5000))],
        command="export", unfinished=True)
    add("model.pt: cut in half", [_cut("checkpoints/latest/model.pt", 0.5)], command="resume",
        overrides=["total_timesteps=320"])
    add("model.pt: cut in half", [_cut("checkpoints/latest/model.pt", 0.5)], command="export", unfinished=True)
    add("model.pt: missing", [_remove("checkpoints/latest/model.pt")], command="resume",
        overrides=["total_timesteps=320"])
    add("model.pt: missing", [_remove("checkpoints/latest/model.pt")], command="export", unfinished=True)
    add("model.pt: missing (the final network is there)", [_remove("checkpoints/latest/model.pt")], ACCEPT,
        command="export")
    add("policy.npz: random bytes", [_write("policy.npz", random.Random(7).randbytes(5000))], command="export")
    add("policy.npz: cut in half", [_cut("policy.npz", 0.5)], command="export")
    add("policy.npz: a NaN weight", [_npz(_nan_first)], command="export")
    add("policy.npz: a layer dropped", [_npz(lambda a: {k: v for k, v in a.items() if not k.endswith("0")})],
        command="export")
    add("policy.npz: empty", [_npz(lambda a: {})], command="export")
    add("policy.npz: a folder (the checkpoint is there)", [_remove("policy.npz"), lambda run: (run / "policy.npz")
                                                           .mkdir()], ACCEPT, command="export")
    add("policy.npz: missing (the checkpoint is there)", [_remove("policy.npz")], ACCEPT, command="export")
    add("summary.json: random bytes", [_write("summary.json", random.Random(8).randbytes(300))], command="export")
    add("summary.json: a list", [_write("summary.json", "[1]")], command="export")
    add("summary.json: steps not the checkpoint's (the checkpoint is read)",
        [lambda run: (run / "summary.json").write_text(json.dumps({**json.loads((run / "summary.json").read_text()),
                                                                   "steps": 128}))], ACCEPT, command="export")
    add("pool.json: random bytes", [_write("checkpoints/latest/opponents/pool.json", "{[")], command="resume",
        overrides=["total_timesteps=320"])
    add("pool.json: a snapshot outside the folder", [lambda run: (run / "checkpoints/latest/opponents/pool.json")
                                                     .write_text(json.dumps([{"snapshot": "../../../../etc/passwd",
                                                                              "weight": 1, "id": "x"}]))],
        command="resume", overrides=["total_timesteps=320"])
    add("a snapshot: random bytes", [_write("checkpoints/latest/opponents/snapshot_0.npz", b"PK\x03\x04junk")],
        command="resume", overrides=["total_timesteps=320"])
    add("the checkpoint folder missing", [_remove("checkpoints")], command="resume",
        overrides=["total_timesteps=320"])
    add("the checkpoint folder missing", [_remove("checkpoints")], command="export", unfinished=True)
    for override in ("network.hidden=[8]", "game=pasur", "settings.players=4", "bogus=1", "total_timesteps=100",
                     "algorithm=dqn", "opponents.pool=[{policy: random}]", "output=elsewhere", "seed"):
        add(f"--override {override}", [], command="resume", overrides=[override])
    for label, argv in (("a missing folder", lambda ws: ["export", ws.path("none"), "-o", ws.path("b.onnx")]),
                        ("a file", lambda ws: ["export", ws.write("f", "x"), "-o", ws.path("b.onnx")]),
                        ("an empty folder", lambda ws: ["export", ws.path("."), "-o", ws.path("b.onnx")]),
                        ("/dev/null", lambda ws: ["export", "/dev/null", "-o", ws.path("b.onnx")]),
                        ("resume: a missing folder", lambda ws: ["train", "--resume", ws.path("none")]),
                        ("resume: a file", lambda ws: ["train", "--resume", ws.write("f", "x")]),
                        ("resume: an empty folder", lambda ws: ["train", "--resume", ws.path(".")]),
                        ("resume: a folder with a recipe.yaml of garbage",
                         lambda ws: ["train", "--resume", ws.write("r/recipe.yaml", "[").parent]),
                        ("resume: a folder with a recipe.yaml of a list",
                         lambda ws: ["train", "--resume", ws.write("r/recipe.yaml", "- 1\n").parent])):
        cases.append(Case("run folder", label, ERROR, argv=argv))
    return cases


# ===== the env API ===============================================================================================
def env_cases() -> list:
    from kahve import envs
    cases = []
    for game in TABLES:
        def env(game=game):
            e = envs.make(game, **TABLES[game])
            e.reset(seed=1)
            return e

        def add(label, fn, expect=ERROR, game=game):
            cases.append(Case("env", f"{game}: {label}", expect, call=lambda ws: fn(env(game))))

        g = _game(game)
        deck = [g.state_class.card_str(c) for c in g.full_deck()]
        for label, options in (("1", 1), ("a string", "deck"), ("a list", []), ("a tuple", ()), ("dek", {"dek": []}),
                               ("deck a string", {"deck": " ".join(deck)}), ("deck 5", {"deck": 5}),
                               ("deck empty", {"deck": []}), ("deck one short", {"deck": deck[:-1]}),
                               ("deck one too many", {"deck": deck + deck[:1]}),
                               ("deck with a duplicate", {"deck": deck[:1] + deck[:-1]}),
                               ("deck with a bad card", {"deck": ["ZZ"] + deck[1:]}),
                               ("deck of None", {"deck": [None] * len(deck)}),
                               ("deck of lists", {"deck": [[c] for c in deck]}),
                               ("deck of 100,000 cards", {"deck": deck * (100_000 // len(deck))}),
                               ("deck of 1,000,000 unknown cards", {"deck": list(range(100, 1_000_100))}),
                               ("deck a mapping", {"deck": {"a": 1}}),
                               ("deck of another game", {"deck": ["0R", "1R"] * (len(deck) // 2) if game != "ish"
                                                         else ["AC"] * len(deck)}),
                               ("deck and another key", {"deck": deck, "seed": 3}),
                               ("a key that is a number", {1: 2})):
            add(f"reset(options={label})", lambda e, options=options: e.reset(seed=1, options=options))
        for label, options in (("None", None), ("{}", {}), ("the api_test probe", {"options": 1}),
                               ("a whole deck", {"deck": deck}), ("deck None", {"deck": None}),
                               ("a deck of numbers", {"deck": g.full_deck()})):
            add(f"reset(options={label})", lambda e, options=options: e.reset(seed=1, options=options), ACCEPT)
        for seed in ("7", 7.5, float("nan"), [1], True, b"7", {"seed": 1}, np.float64(3), 1j):
            add(f"reset(seed={seed!r})", lambda e, seed=seed: e.reset(seed=seed))
        for seed in (None, 10**100, -5, np.int64(3), np.uint8(3), 0):
            add(f"reset(seed={seed!r})", lambda e, seed=seed: e.reset(seed=seed), ACCEPT)

        def legal(e):
            return int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0])

        def illegal(e):
            mask = e.observe(e.agent_selection)["action_mask"]
            free = np.flatnonzero(mask == 0)
            return int(free[0]) if len(free) else -1
        for label, action in (("'3'", lambda e: "3"), ("3.0", lambda e: 3.0), ("True", lambda e: True),
                              ("None", lambda e: None), ("-1", lambda e: -1),
                              ("num_actions", lambda e: e.action_space(e.agent_selection).n), ("10**20", lambda e: 10**20),
                              ("an array", lambda e: np.array([legal(e)])), ("an illegal id", illegal),
                              ("a legal id as a float", lambda e: float(legal(e))), ("a list", lambda e: [legal(e)]),
                              ("nan", lambda e: float("nan")), ("a numpy bool", lambda e: np.bool_(True))):
            add(f"step({label})", lambda e, action=action: e.step(action(e)))
        add("step(a legal id)", lambda e: e.step(legal(e)), ACCEPT)
        add("step(a legal numpy int32)", lambda e: e.step(np.int32(legal(e))), ACCEPT)
        add("step(a legal 0-d array)", lambda e: e.step(np.array(legal(e))), ERROR)
        for label, agent in (("'player_99'", "player_99"), ("None", None), ("0", 0), ("'PLAYER_0'", "PLAYER_0"),
                             ("['player_0']", ["player_0"]), ("'player_-1'", "player_-1"), ("''", ""),
                             ("a name of 100,000 characters", "p" * 100_000)):
            add(f"observe({label})", lambda e, agent=agent: e.observe(agent))
            add(f"action_space({label})", lambda e, agent=agent: e.action_space(agent))
            add(f"observation_space({label})", lambda e, agent=agent: e.observation_space(agent))
        add("observe('player_0')", lambda e: e.observe("player_0"), ACCEPT)
        for label, action in (("'3'", "3"), ("3.5", 3.5), ("-1", -1), ("10**30", 10**30), ("None", None),
                              ("True", True), ("an array", np.array([1, 2]))):
            add(f"describe_action({label})", lambda e, action=action: e.unwrapped.describe_action(action))
        add("describe_action(a legal id)", lambda e: e.unwrapped.describe_action(legal(e)), ACCEPT)
        add("parse_action(an illegal id)", lambda e: e.unwrapped.parse_action(illegal(e)))
        add("parse_action(a legal id)", lambda e: e.unwrapped.parse_action(legal(e)), ACCEPT)
        for label, text in (("''", ""), ("'zz'", "zz"), ("None", None), ("a text of 1,000,000 characters",
                                                                                    "x" * 1_000_000),
                            ("'🂡'", "🂡"), ("'\\x00'", "\x00"), ("'7H takes everything'", "7H takes everything")):
            add(f"parse_action({label})", lambda e, text=text: e.unwrapped.parse_action(text))
        add("parse_action(its own description)", lambda e: e.unwrapped.parse_action(
            e.unwrapped.describe_action(legal(e))), ACCEPT)
    return cases


# ===== the command line ==========================================================================================
def _cli(label, argv, expect=ERROR, subprocess=False, stdin="q\n", accept_rc=(0,)) -> Case:
    make = argv if callable(argv) else (lambda ws, argv=argv: list(argv))
    return Case("command line", label + (" (own process)" if subprocess else ""), expect, argv=make,
                subprocess=subprocess, stdin=stdin, accept_rc=accept_rc)


def cli_cases() -> list:
    ev = ["evaluate", "pishti", "random", "heuristic", "--settings", "players=2", "--workers", "1"]
    cases = []
    for value in ("0", "-1", "abc", "1e3", "", "1.5", "99999999999999999999999999"):
        if value != "99999999999999999999999999":
            cases.append(_cli(f"evaluate --games {value!r}", [*ev, "--games", value]))
    for value in ("0", "-1", "abc", ""):
        cases.append(_cli(f"evaluate --workers {value!r}", [*ev[:-2], "--games", "2", "--workers", value]))
    for value in ("abc", "1.5", ""):
        cases.append(_cli(f"evaluate --seed {value!r}", [*ev, "--games", "2", "--seed", value]))
    cases.append(_cli("evaluate: an unknown game", ["evaluate", "pishtii", "random", "heuristic"]))
    cases.append(_cli("evaluate: a bad policy A", [*ev[:2], "ismcts:0", "heuristic", *ev[4:]]))
    cases.append(_cli("evaluate: a bot of another game", [*ev[:2], "pasur/ppo", "heuristic", *ev[4:]]))
    cases.append(_cli("evaluate: a misspelt setting", ["evaluate", "pishti", "random", "heuristic", "--settings",
                                                        "player=2"]))
    cases.append(_cli("evaluate: a setting without =", ["evaluate", "pishti", "random", "heuristic", "--settings",
                                                         "players"]))
    cases.append(_cli("evaluate: --others at 2 sides", [*ev, "--others", "random"]))
    cases.append(_cli("evaluate: --others too few", ["evaluate", "pishti", "random", "heuristic", "--settings",
                                                      "players=4", "partnerships=false", "--others", "random"]))
    for label, path in (("a folder", lambda ws: ws.path(".")), ("under a file", lambda ws: ws.write("f", "x") / "r.json"),
                        ("in /proc", lambda ws: "/proc/kahve/r.json"), ("/dev/null", lambda ws: "/dev/null"),
                        ("a folder that is a file", lambda ws: ws.write("f", "x"))):
        option = "--record" if label == "a folder that is a file" else "--json"
        cases.append(_cli(f"evaluate {option} onto {label}",
                          lambda ws, path=path, option=option: [*ev, "--games", "2", option, path(ws)]))
    cases.append(_cli("evaluate --record under a file", lambda ws: [*ev, "--games", "2", "--record",
                                                                      ws.write("f", "x") / "d"]))
    cases.append(_cli("evaluate of two games", [*ev, "--games", "2"], ACCEPT))
    cases.append(_cli("evaluate of two games with --json and --record",
                      lambda ws: [*ev, "--games", "2", "--json", ws.path("out/r.json"), "--record", ws.path("recs")],
                      ACCEPT))
    lg = ["league", "pishti", "random", "heuristic", "--settings", "players=2", "--workers", "1", "--games", "2"]
    for label, path in (("a folder", lambda ws: ws.path(".")), ("under a file", lambda ws: ws.write("f", "x") / "r.json"),
                        ("in /proc", lambda ws: "/proc/kahve/r.json")):
        for option in ("--json", "--markdown"):
            cases.append(_cli(f"league {option} onto {label}", lambda ws, path=path, option=option:
                              [*lg, option, path(ws)]))
    for value in ("0", "-3"):
        cases.append(_cli(f"league --games {value}", [*lg[:-2], "--games", value]))
        cases.append(_cli(f"league --workers {value}", [*lg[:-4], "--games", "2", "--workers", value]))
    cases.append(_cli("league of one policy", ["league", "pishti", "random", "--settings", "players=2"]))
    cases.append(_cli("league of a policy twice", ["league", "pishti", "random", "random", "--settings", "players=2"]))
    cases.append(_cli("league with a bad policy", [*lg[:3], "bogus", *lg[4:]]))
    cases.append(_cli("league of two games a pair", lg, ACCEPT))
    pl = ["play", "pishti", "--settings", "players=2", "--bot", "random", "--seed", "1"]
    for value in ("2", "-1", "abc", "99999999999999999999"):
        cases.append(_cli(f"play --seat {value}", [*pl, "--seat", value]))
    cases.append(_cli("play --seed abc", [*pl[:-2], "--seed", "abc"]))
    cases.append(_cli("play --bot nonsense", [*pl[:4], "--bot", "nonsense"]))
    cases.append(_cli("play --bot of another game", [*pl[:4], "--bot", "pasur/ppo"]))
    cases.append(_cli("play --bot a missing file", [*pl[:4], "--bot", "missing.onnx"]))
    cases.append(_cli("play --bot at a table it does not fit", ["play", "pishti", "--bot", "pishti/ppo_2p",
                                                                 "--settings", "players=4"]))
    cases.append(_cli("play --bot a damaged bot file", lambda ws: [*pl[:4], "--bot", ws.write("b.onnx", b"\x08junk")]))
    cases.append(_cli("play --bot whose settings hold a value of 1,000,000 characters", lambda ws: [
        "play", "pishti", "--bot", edited_bot(ws, "pishti/ppo_2p", meta=lambda m: {
            **m, "settings": {**m["settings"], "observation": "o" * 1_000_000}})]))
    cases.append(_cli("play --bot of several tables whose settings hold a bad value", lambda ws: [
        "play", "ish", "--bot", edited_bot(ws, "ish/ppo_every_table", meta=lambda m: {
            **m, "settings": {**m["settings"], "players": 99}})]))
    cases.append(_cli("play --record under a file", lambda ws: [*pl, "--record", ws.write("f", "x") / "r.jsonl"]))
    cases.append(_cli("play --record in /proc", [*pl, "--record", "/proc/kahve/r.jsonl"]))
    cases.append(_cli("play: an unknown game", ["play", "pishty"]))
    cases.append(_cli("play, leaving at once", pl, ACCEPT, accept_rc=(0, 1)))
    cases.append(_cli("play, input ending", pl, ACCEPT, stdin="", accept_rc=(0, 1)))
    cases.append(_cli("play, nonsense typed then leaving", pl, ACCEPT, stdin="zz\n99\n\n?\nq\n", accept_rc=(0, 1)))
    ex = ["export", "run", "-o"]
    cases.append(_cli("export -o onto a folder", lambda ws: ["export", run_folder(ws), "-o", ws.path(".")]))
    cases.append(_cli("export -o under a file", lambda ws: ["export", run_folder(ws), "-o",
                                                             ws.write("f", "x") / "b.onnx"]))
    cases.append(_cli("export -o in /proc", lambda ws: ["export", run_folder(ws), "-o", "/proc/kahve/b.onnx"]))
    cases.append(_cli("export --sb3 onto a folder", lambda ws: ["export", run_folder(ws), "-o", ws.path("b.onnx"),
                                                                 "--sb3", ws.path(".")]))
    cases.append(_cli("export --levels -1", lambda ws: ["export", run_folder(ws), "-o", ws.path("b.onnx"),
                                                         "--levels", "-1"]))
    cases.append(_cli("export --levels without --report", lambda ws: ["export", run_folder(ws), "-o",
                                                                       ws.path("b.onnx"), "--levels", "2"]))
    cases.append(_cli("export --games abc", [*ex, "b.onnx", "--games", "abc"]))
    cases.append(_cli("export without -o", ["export", "run"]))
    cases.append(_cli("export --report with --games 0", lambda ws: ["export", run_folder(ws), "-o", ws.path("b.onnx"),
                                                                     "--report", "random", "--games", "0"]))
    cases.append(_cli("export --report with a bad opponent", lambda ws: ["export", run_folder(ws), "-o",
                                                                          ws.path("b.onnx"), "--report", "bogus"]))
    cases.append(_cli("export --workers 0 with --report", lambda ws: ["export", run_folder(ws), "-o",
                                                                       ws.path("b.onnx"), "--report", "random",
                                                                       "--games", "2", "--workers", "0"]))
    tr = ["train"]
    cases.append(_cli("train without a config", tr))
    cases.append(_cli("train a config and --resume", ["train", "pishti/ppo", "--resume", "runs/x"]))
    cases.append(_cli("train a missing config", ["train", "missing.yaml"]))
    cases.append(_cli("train a folder", lambda ws: ["train", ws.path(".")]))
    cases.append(_cli("train /dev/zero", ["train", "/dev/zero"]))
    cases.append(_cli("train --override without =", ["train", "pishti/ppo", "--override", "seed"]))
    cases.append(_cli("train --override of an unknown key", ["train", "pishti/ppo", "--override", "bogus=1"]))
    cases.append(_cli("train a recipe with an unhashable stage name", lambda ws: [
        "train", ws.write("r.yaml", "game: pishti\nstages:\n  - name: [1]\n")]))
    cases.append(_cli("train into an output that is a file", lambda ws: [
        "train", "pishti/ppo", "--override", f"output={ws.write('f', 'x')}"]))
    cases.append(_cli("configs: an unknown name", ["configs", "pishti/nope"]))
    cases.append(_cli("configs -o without a name", ["configs", "-o", "x.yaml"]))
    cases.append(_cli("configs -o onto an existing file", lambda ws: ["configs", "pishti/ppo", "-o",
                                                                       ws.write("x.yaml", "mine")]))
    cases.append(_cli("configs -o under a file", lambda ws: ["configs", "pishti/ppo", "-o",
                                                              ws.write("f", "x") / "x.yaml"]))
    cases.append(_cli("configs -o in /proc", ["configs", "pishti/ppo", "-o", "/proc/kahve/x.yaml"]))
    cases.append(_cli("configs -o into /dev/null", ["configs", "pishti/ppo", "-o", "/dev/null", "--force"]))
    cases.append(_cli("configs: the list", ["configs"], ACCEPT))
    cases.append(_cli("configs: one printed", ["configs", "pishti/ppo"], ACCEPT))
    cases.append(_cli("configs: one copied", ["configs", "pishti/ppo", "-o", "mine/x.yaml"], ACCEPT))
    cases.append(_cli("configs: one copied into a folder", lambda ws: ["configs", "pishti/ppo", "-o", ws.path(".")],
                      ACCEPT))
    bench = ["bench", "pishti", "--no-peers", "--settings", "players=2"]
    for value in ("-1", "0", "nan", "inf", "abc"):
        cases.append(_cli(f"bench --seconds {value}", [*bench, "--seconds", value, "--repeats", "1"]))
    for value in ("0", "-1"):
        cases.append(_cli(f"bench --repeats {value}", [*bench, "--seconds", "0.05", "--repeats", value]))
    cases.append(_cli("bench: an unknown game", ["bench", "chess", "--no-peers"]))
    cases.append(_cli("bench --json onto a folder", lambda ws: [*bench, "--seconds", "0.05", "--repeats", "1",
                                                                 "--json", ws.path(".")]))
    cases.append(_cli("bench --json under a file", lambda ws: [*bench, "--seconds", "0.05", "--repeats", "1",
                                                                "--json", ws.write("f", "x") / "b.json"]))
    for label, args in (("--port 0", ["--port", "0"]), ("--port 70000", ["--port", "70000"]),
                        ("--port -1", ["--port", "-1"]), ("--port abc", ["--port", "abc"]),
                        ("--idle-minutes 0", ["--idle-minutes", "0"]), ("--idle-minutes -5", ["--idle-minutes", "-5"]),
                        ("--idle-minutes nan", ["--idle-minutes", "nan"]),
                        ("--max-tables 0", ["--max-tables", "0"]), ("--max-tables abc", ["--max-tables", "abc"])):
        cases.append(Case("command line", f"serve {label}", ERROR, call=_serve(args)))
    cases.append(Case("command line", "serve on a port", ACCEPT, call=_serve(["--port", "8123"])))
    cases.append(Case("command line", "serve with tables that never expire", ACCEPT,
                      call=_serve(["--idle-minutes", "inf"])))
    dm = ["demo", "pishti"]
    cases.append(_cli("demo --seed abc", [*dm, "--seed", "abc"]))
    cases.append(_cli("demo: an unknown game", ["demo", "chess"]))
    cases.append(_cli("demo: a bad setting", [*dm, "--settings", "players=3"]))
    cases.append(_cli("demo", [*dm, "--seed", "1"], ACCEPT))
    cases.append(_cli("an unknown command", ["bogus"]))
    cases.append(_cli("an unknown option", ["evaluate", "--bogus"]))
    # a sample of the above in a process of its own (what a user's shell sees)
    own = [("evaluate --games 0", [*ev, "--games", "0"]), ("evaluate: a bot of another game",
                                                             [*ev[:2], "pasur/ppo", "heuristic", *ev[4:]]),
           ("replay: a missing file", ["replay", "missing.jsonl"]), ("train /dev/zero", ["train", "/dev/zero"]),
           ("train --override of an unknown key", ["train", "pishti/ppo", "--override", "bogus=1"]),
           ("play --seat 2", [*pl, "--seat", "2"]), ("configs: an unknown name", ["configs", "pishti/nope"]),
           ("export: a missing run", ["export", "missing_run", "-o", "b.onnx"]),
           ("league of one policy", ["league", "pishti", "random"]), ("demo: a bad setting", [*dm, "--settings",
                                                                                             "players=3"]),
           ("an unknown command", ["bogus"]), ("bench --seconds -1", [*bench, "--seconds", "-1"])]
    for label, argv in own:
        cases.append(_cli(label, argv, subprocess=True))
    cases.append(_cli("replay of a damaged record", lambda ws: ["replay", ws.write("g.jsonl", '{"format": "kahve-record"')],
                      subprocess=True))
    cases.append(_cli("evaluate of two games", [*ev, "--games", "2"], ACCEPT, subprocess=True))
    cases.append(_cli("export of a run", lambda ws: ["export", run_folder(ws), "-o", "b.onnx"], ACCEPT,
                      subprocess=True))
    cases.append(_cli("export of a run with a damaged config.yaml", lambda ws: [
        "export", (lambda run: (_cut("config.yaml", 0.5)(run), run)[1])(run_folder(ws)), "-o", "b.onnx"],
        subprocess=True))
    cases.append(_cli("resume of a run with a damaged state.json", lambda ws: [
        "train", "--resume", (lambda run: (_cut("checkpoints/latest/state.json", 0.5)(run), run)[1])(run_folder(ws))],
        subprocess=True))
    return cases


def _serve(args):
    """``kahve serve ARGS`` in this process, with the server's ``run`` replaced by a stand-in: a bad option must be
    refused before the server would start, and a good one reaches it."""
    def call(ws):
        from unittest import mock
        from kahve.scripts.cli import main
        import contextlib
        import io
        with mock.patch("uvicorn.run") as started, contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                rc = main(["serve", *args])
            except SystemExit as exit_:
                rc = exit_.code
        if rc == 2:
            line = err.getvalue().strip().splitlines()[-1]
            raise ValueError(line)
        if rc != 0 or not started.called:
            raise RuntimeError(f"exit {rc}, the server started: {started.called}")
    return call


# ===== all =======================================================================================================
def all_cases() -> list:
    """Every case, in a fixed order."""
    cases = [*config_cases(), *config_file_cases(), *recipe_cases(), *override_cases(), *settings_cases(),
             *spec_cases(), *bot_cases(), *record_cases(), *run_folder_cases(), *env_cases(), *cli_cases()]
    names = [c.id for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, f"cases of one name: {sorted(dupes)[:5]}"
    return cases
