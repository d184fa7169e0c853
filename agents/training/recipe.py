"""Recipes: one config file that makes a bot, stage by stage (``kahve train RECIPE.yaml``).

A config with ``stages:`` is a recipe. Its top-level keys are those of a training config and hold for every
stage; each stage names itself and changes what it needs (its budget, opponents, learning rate, behaviour
cloning...). Every stage after the first starts from the network the stage before it ended with (``init_from``
the previous stage's run folder), so a recipe reads like the history of a bot: imitate the heuristic, learn with
PPO, fine-tune against another pool, and so on. When the last stage is done, the recipe writes the bot file, its
report and its difficulty levels (the ``bot`` section)::

    game: pishti
    settings: {players: 2, episode: deal, reward: points}
    network: {hidden: [256, 256], activation: tanh}
    stages:
      - name: imitate_then_learn
        total_timesteps: 3000000
        pretrain: {teacher: heuristic, steps: 150000}
      - name: against_greedy
        total_timesteps: 2000000
        opponents: {pool: [{policy: greedy, weight: 3}, {policy: heuristic, weight: 1}]}
    bot: {report: [random, heuristic, greedy], games: 1000, levels: 200}

A stage may start from a shipped training config (``from: pishti/dqn``): that file's keys, then the recipe's top
level, then the stage's own keys. So the recipe of a bot that one config makes is a few lines::

    stages:
      - {name: dqn, from: pishti/dqn}
    bot: {report: [random, heuristic, greedy], games: 2000}

The recipe's run folder holds one ordinary run folder per stage, and the recipe's own files::

    recipe.yaml            the recipe as run: the file's tree with every override applied, and where it came from
    recipe.json            the stages finished (steps, wall time) and whether the bot and its report are written
    train.lock             held while ``kahve train`` works in the folder
    stages/01_NAME/ ...    each stage's run folder (config.yaml, checkpoints/, tb/, policy.npz, summary.json)
    NAME.onnx, NAME.md     the bot (named after the recipe file) and its report, NAME.eval.json the numbers

``kahve train --resume RUN`` goes on where the recipe stopped: a finished stage is never run again, the stage
that was interrupted resumes from its last checkpoint, and the bot and report are written if they are not yet.
``--override stages.NAME.KEY=VALUE`` changes one stage; ``--override KEY=VALUE`` the top level (every stage that
does not set KEY itself).
"""

from __future__ import annotations

import copy
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import config as config_mod
from .files import read_json, read_text_limited, short, write_text_atomic
from .run_dir import RunDir

#: the recipe's own keys: everything else at the top level is a training config key every stage inherits
STAGES, BOT = "stages", "bot"
#: a stage's key naming the shipped training config it starts from (``from: pishti/dqn``): the recipe of a bot made
#: by one config and an export is two lines
FROM = "from"

#: the ``bot`` section: what the recipe writes once its last stage is done
BOT_SCHEMA = {
    "name": config_mod.Field(str, "", doc="the bot file's name, without .onnx (default: the recipe's, e.g. ppo_2p for "
                                          "ppo_2p.yaml); letters, digits and _"),
    "report": config_mod.Field(list, ["random", "heuristic"],
                               doc="opponents of the bot's report (full matches, mirrored deals); []: no report"),
    "games": config_mod.Field(int, 200, 2, 10**6, doc="matches against each report opponent"),
    "levels": config_mod.Field(int, 0, 0, 10**6, doc="mirrored pairs of single deals for each difficulty level "
                                                     "(easy, medium, hard) against the heuristic; 0: none"),
    "workers": config_mod.Field(int, 2, 1, 256, doc="processes that play the report's games"),
    "seed": config_mod.Field(int, 12345, 0, 2**31 - 1, doc="the report's deal seeds (apart from training's)"),
}

#: a stage's name: it names the stage's folder and its overrides (stages.NAME.KEY=VALUE)
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_")
#: the longest stage name (it names the stage's folder, stages/NN_NAME, and a file name has at most 255 bytes)
NAME_MAX = 100


def is_recipe(raw) -> bool:
    return isinstance(raw, dict) and STAGES in raw


#: what a stage can be, and the module that runs it: ``train`` (the default) is a training run of its config
#: (cloning, DAgger, expert iteration, PPO or DQN: :mod:`.backends`); ``distill`` fits the network to a teacher's
#: labels, a search only where the game can afford one (:mod:`.distill`); ``expert`` adds a second network for the
#: positions an exact solver can value, the deal's last hand (:mod:`.expert`). A kind's module has a section of
#: the stage named like the kind, ``check(section, cfg, first)``, ``run(cfg, section, run, progress, log)`` and
#: ``BOT_FILE``, the bot it writes in its folder; adding a kind is adding such a module and a line here.
KINDS = {"train": None, "distill": "distill", "expert": "expert"}


def kind_module(kind: str):
    import importlib
    return importlib.import_module(f"{__package__}.{KINDS[kind]}")


@dataclass
class Stage:
    index: int            # 1, 2, ...
    name: str
    cfg: dict             # the stage's resolved training config (init_from filled in when it starts)
    own_init: bool        # the stage names its own init_from (else: the previous stage's folder)
    kind: str = "train"
    section: dict | None = None     # a distill stage's ``distill`` section, resolved

    @property
    def label(self) -> str:
        return f"{self.index:02d}_{self.name}"


@dataclass
class Recipe:
    source: str           # the config file as the user named it (the command in the bot's report)
    raw: dict             # the file's tree, overrides applied (recipe.yaml)
    overrides: list       # every override given so far, first run and resumes
    root: Path            # the recipe's run folder
    stages: list
    bot: dict             # the resolved bot section

    @property
    def name(self) -> str:
        return Path(self.source).stem

    @property
    def bot_file(self) -> Path:
        return self.root / f"{self.bot['name'] or self.name}.onnx"

    def folder(self, stage: Stage) -> RunDir:
        return RunDir(self.root / "stages" / stage.label)

    @property
    def command(self) -> str:
        return f"kahve train {self.source}"


# ----- reading a recipe -------------------------------------------------------------------------------------
def split_overrides(overrides: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """``stages.NAME.KEY=V`` overrides by stage name, and the others (the top level)."""
    top, by_stage = [], {}
    for item in overrides:
        key = item.split("=", 1)[0].strip()
        if key == STAGES or key.startswith(STAGES + "."):
            parts = key.split(".", 2)
            if len(parts) < 3 or "=" not in item:
                raise ValueError(f"override {item!r}: a stage's key is written stages.NAME.KEY=VALUE")
            by_stage.setdefault(parts[1], []).append(f"{parts[2]}={item.split('=', 1)[1]}")
        else:
            top.append(item)
    return top, by_stage


def apply_recipe_overrides(raw: dict, overrides: list[str]) -> dict:
    top, by_stage = split_overrides(overrides)
    stages = raw.get(STAGES)
    out = config_mod.apply_overrides({k: v for k, v in raw.items() if k != STAGES}, top)
    names = [s.get("name") for s in stages] if isinstance(stages, list) and all(isinstance(s, dict) for s in stages) \
        else []
    for name in by_stage:
        if name not in names:
            raise ValueError(f"override stages.{name}...: the recipe has no stage {name!r}; its stages: "
                             + (", ".join(map(str, names)) or "none"))
    if isinstance(stages, list):       # (anything else is refused by resolve_recipe, as it is)
        out[STAGES] = [config_mod.apply_overrides(s, by_stage.get(s["name"], []))
                       if isinstance(s, dict) and isinstance(s.get("name"), str) else s for s in stages]
    elif stages is not None:
        out[STAGES] = stages
    return out


def _stage_base(name, where: str) -> dict:
    """The training config a stage starts from (its ``from``: a shipped config's name, e.g. ``pishti/dqn``), less
    its ``output``: the recipe's top level and the stage's own keys go over it."""
    from kahve import configs
    path = configs.find(name) if isinstance(name, str) else None
    if path is None:
        raise ValueError(f"config key {where!r}: {short(name)} is not a shipped config; "
                         + configs.did_you_mean(str(name)))
    raw = config_mod.read_file(path)[1]
    if is_recipe(raw):
        raise ValueError(f"config key {where!r}: {name} is a recipe; a stage starts from a training config")
    return {k: v for k, v in raw.items() if k != "output"}


def _deep_merge(base: dict, more: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _bot_section(raw) -> dict:
    if raw is None:
        raw = {}
    bot = config_mod._merge(BOT_SCHEMA, config_mod.defaults(BOT_SCHEMA), raw, BOT)
    for k, spec in enumerate(bot["report"]):
        if not isinstance(spec, str):
            raise ValueError(f"config key 'bot.report[{k}]': expected a policy spec, got {short(spec)}")
    name = bot["name"]
    if name and (set(name) - NAME_CHARS or len(name) > NAME_MAX):
        raise ValueError(f"config key 'bot.name': {short(name)} is not a bot name (lowercase letters, digits and _, "
                         f"at most {NAME_MAX} characters)")
    if bot["levels"] and not bot["report"]:
        raise ValueError("config key 'bot.levels': the levels are a section of the report; give bot.report too")
    return bot


def _output(raw: dict, source: str) -> str:
    """The recipe's run folder: ``output`` (with {game}, {seed}, {algorithm}), else runs/GAME_RECIPENAME."""
    template = raw.get("output", f"runs/{{game}}_{Path(source).stem}")
    if not isinstance(template, str):
        raise ValueError(f"config key 'output': expected str, got {short(template)}")
    fields = {"game": raw.get("game"), "algorithm": raw.get("algorithm", "ppo"), "seed": raw.get("seed", 0)}
    try:
        out = template.format(**fields)
    except (KeyError, IndexError, ValueError, AttributeError) as err:
        raise ValueError(f"config key 'output': {template!r} cannot be expanded ({type(err).__name__}: {err}); "
                         "the placeholders are {game}, {algorithm} and {seed}") from None
    if not out.strip():
        raise ValueError("config key 'output': empty; give the recipe's run folder")
    return out


def resolve_recipe(raw: dict, source: str, overrides: list[str]) -> Recipe:
    """Every stage's config resolved and checked before any work starts: each is the top level with the stage's
    keys over it; a stage after the first starts from the one before, so it clones nothing and shares its
    network's shape."""
    stages_raw = raw.get(STAGES)
    if not isinstance(stages_raw, list) or not stages_raw:
        raise ValueError("config key 'stages': expected a list of stages, each a mapping with a name "
                         "(e.g. [{name: learn, total_timesteps: 1000000}])")
    top = {k: v for k, v in raw.items() if k not in (STAGES, BOT, "output")}
    first = stages_raw[0] if isinstance(stages_raw[0], dict) else {}
    # the run folder's {game} and {algorithm}: the recipe's, or those of the config its first stage starts from
    root = Path(_output({**(_stage_base(first[FROM], f"stages[0].{FROM}") if FROM in first else {}), **raw}, source))
    recipe = Recipe(source, raw, list(overrides), root, [], _bot_section(raw.get(BOT)))
    seen = set()
    for index, item in enumerate(stages_raw, 1):
        where = f"stages[{index - 1}]"
        if not isinstance(item, dict):
            raise ValueError(f"config key {where!r}: expected a mapping with a name, got {short(item)}")
        name = item.get("name")
        if not isinstance(name, str) or not name or set(name) - NAME_CHARS or len(name) > NAME_MAX:
            raise ValueError(f"config key {where + '.name'!r}: expected a name of lowercase letters, digits and _, "
                             f"at most {NAME_MAX} of them, got {short(name)}")
        if name in seen:
            raise ValueError(f"config key {where + '.name'!r}: two stages are named {name!r}")
        seen.add(name)
        for key in (STAGES, BOT, "output"):
            if key in item:
                raise ValueError(f"config key {where + '.' + key!r}: belongs at the recipe's top level")
        kind = item.get("kind", "train")
        if not isinstance(kind, str) or kind not in KINDS:
            raise ValueError(f"config key {where + '.kind'!r}: {short(kind)} is not a stage kind; kinds: "
                             + ", ".join(KINDS))
        for other in KINDS:
            if other != kind and other in item:
                raise ValueError(f"config key {where + '.' + other!r}: belongs to a stage of kind {other}")
        section = item.get(kind)
        base = _stage_base(item[FROM], f"{where}.{FROM}") if FROM in item else {}
        merged = _deep_merge(_deep_merge(base, top),
                             {k: v for k, v in item.items() if k not in ("name", "kind", FROM, *KINDS)})
        own_init = bool(merged.get("init_from"))
        stage = Stage(index, name, {}, own_init, kind)
        merged["output"] = str(recipe.folder(stage).root)
        later = index > 1 and not own_init
        if later and (merged.get("pretrain") or {}).get("steps"):
            raise ValueError(f"stage {name!r}: starts from the previous stage's network, so it clones no teacher "
                             "(pretrain.steps must be 0; behaviour cloning belongs in the first stage)")
        try:
            stage.cfg = config_mod.resolve(merged, init_later=later)
            if KINDS[kind]:
                if stage.cfg["tables"] and kind == "expert":     # its trees are dealt at the settings' table
                    raise ValueError(f"config key 'tables': a stage of kind {kind} plays one table (settings)")
                stage.section = kind_module(kind).check(section, stage.cfg, first=index == 1 and not own_init)
        except ValueError as err:
            raise ValueError(f"stage {name!r}: {err}") from None
        if later:
            before = recipe.stages[-1].cfg
            for key in config_mod.INIT_SHARED:
                if config_mod._get(before, key) != config_mod._get(stage.cfg, key):
                    raise ValueError(f"stage {name!r}: starts from stage {recipe.stages[-1].name!r}'s network, so "
                                     f"{key} must be the same ({config_mod._get(before, key)!r}, here "
                                     f"{config_mod._get(stage.cfg, key)!r})")
        recipe.stages.append(stage)
    return recipe


def source_name(path: Path) -> str:
    """How a report names the recipe file: ``configs/GAME/NAME.yaml`` for a shipped one, else the path given."""
    from kahve import configs
    try:
        return "configs/" + Path(path).resolve().relative_to(configs.ROOT.resolve()).as_posix()
    except ValueError:
        return str(path)


def load_recipe(path, overrides: list[str] | None = None, raw: dict | None = None) -> Recipe:
    """A recipe file read (``raw``: its tree, if already read), overridden and resolved."""
    overrides = list(overrides or [])
    if raw is None:
        path, raw = config_mod.read_file(path)
    return resolve_recipe(apply_recipe_overrides(raw, overrides), source_name(path), overrides)


def read_saved(root) -> Recipe:
    """The recipe of a run folder (recipe.yaml), as it was last run."""
    path = Path(root) / "recipe.yaml"
    saved = config_mod.read_yaml(read_text_limited(path), str(path))
    if not (isinstance(saved, dict) and isinstance(saved.get("recipe"), dict) and isinstance(saved.get("source"), str)
            and isinstance(saved.get("overrides", []), list)):
        raise ValueError(f"{path}: not a recipe as kahve writes it (source, overrides, recipe)")
    raw = saved["recipe"]
    recipe = resolve_recipe(raw, saved["source"], saved.get("overrides", []))
    if recipe.root.resolve() != Path(root).resolve():       # the folder was moved or copied: it lives here now
        recipe = resolve_recipe({**raw, "output": str(root)}, saved["source"], saved.get("overrides", []))
    return recipe


def for_resume(root, overrides: list[str]) -> Recipe:
    """The recipe of run folder ``root`` with more overrides (a budget raised, a stage's learning rate...)."""
    before = read_saved(root)
    if not overrides:
        return before
    raw = apply_recipe_overrides(before.raw, overrides)
    recipe = resolve_recipe({**raw, "output": str(root)}, before.source, before.overrides + list(overrides))
    if [s.name for s in recipe.stages] != [s.name for s in before.stages]:
        raise ValueError("the stages of a recipe cannot change when resuming")
    return recipe


def is_recipe_run(root) -> bool:
    return (Path(root) / "recipe.yaml").is_file()


# ----- running a recipe -------------------------------------------------------------------------------------
def _finished(run: RunDir, stage: Stage) -> dict | None:
    """A stage's summary if it is done: its network written (a training run: trained to its budget and
    evaluated)."""
    summary = run.read_summary() if run.root.is_dir() else None
    if summary and not summary.get("interrupted") and run.policy.is_file() \
            and (stage.kind != "train" or summary.get("steps", -1) >= stage.cfg["total_timesteps"]):
        return summary
    return None


def network_source(recipe: Recipe, stage: Stage) -> str:
    """What the stage after ``stage`` starts from: a training run's folder (its network and critic), or the bot
    file a distill stage writes (its network; a PPO stage after it starts a fresh critic)."""
    folder = recipe.folder(stage).root
    return str(folder / kind_module(stage.kind).BOT_FILE) if KINDS[stage.kind] else str(folder)


def _stage_config(recipe: Recipe, stage: Stage) -> dict:
    """The stage's config as it starts: its init_from filled in (the previous stage's run folder), checked now
    that that folder exists."""
    cfg = dict(stage.cfg)
    if stage.index > 1 and not stage.own_init:
        cfg["init_from"] = network_source(recipe, recipe.stages[stage.index - 2])
        if stage.kind == "train":
            try:
                config_mod.check_init_from(cfg)
            except ValueError as err:
                raise ValueError(f"stage {stage.name!r}: {err}") from None
    return cfg


def _resumed_config(run: RunDir, cfg: dict) -> dict:
    """A started stage's config on resume: the recipe's, where it does not change what the stage's checkpoint
    depends on."""
    saved = config_mod.for_resume(run.read_config(), [], source=str(run.config))
    fixed = config_mod.FIXED_ON_RESUME + (config_mod.FIXED_ON_RESUME_DQN if saved["algorithm"] == "dqn" else ())
    for key in fixed:
        if config_mod._get(saved, key) != config_mod._get(cfg, key):
            raise ValueError(f"{run}: config key {key!r} cannot change when resuming (the stage has "
                             f"{config_mod._get(saved, key)!r}, the recipe now {config_mod._get(cfg, key)!r})")
    return {**cfg, "init_from": saved["init_from"]}


def machine() -> str:
    """This machine in a few words, for the report's wall times."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), {platform.system()}"


class RecipeRun:
    """One session of a recipe: its stages in order from where the run stands, then the bot and its report."""

    def __init__(self, recipe: Recipe, log=print):
        self.recipe, self.log = recipe, log
        self.run = RunDir(recipe.root)
        self.state_file = recipe.root / "recipe.json"

    def read_state(self) -> dict:
        if not self.state_file.is_file():
            return {"stages": {}, "bot": None, "report": None}
        state = read_json(self.state_file)
        if not (isinstance(state, dict) and isinstance(state.get("stages"), dict)):
            raise ValueError(f"{self.state_file}: not a recipe's progress (stages, bot, report)")
        return state

    def write_state(self, state: dict) -> None:
        import json
        write_text_atomic(self.state_file, json.dumps(state, indent=1))

    def write_recipe(self) -> None:
        saved = {"source": self.recipe.source, "overrides": self.recipe.overrides, "recipe": self.recipe.raw}
        write_text_atomic(self.recipe.root / "recipe.yaml", yaml.safe_dump(saved, sort_keys=False))

    def start(self, resume: bool) -> None:
        if resume:
            if not self.run.root.is_dir():
                raise FileNotFoundError(f"no run folder at {self.run}")
            return
        if (self.run.root / "recipe.yaml").exists():
            raise ValueError(f"{self.run} already holds a recipe run; resume it with --resume {self.run}, or choose "
                             "another output folder (--override output=...)")
        if self.run.root.is_dir() and any(self.run.root.iterdir()):
            raise ValueError(f"{self.run} is not empty; choose another output folder (--override output=...)")
        self.run.create()

    def execute(self, resume: bool = False, progress: bool = True) -> dict:
        """Run what is left; returns the recipe's progress (``interrupted`` set if a stage was stopped). With
        ``progress``, one view of the whole recipe (:func:`..progress.run_progress`): the stage under way (k of N,
        its name), its phase, and the recipe's ETA."""
        from ..progress import finish, run_progress, set_stage
        from .backends import train
        from .plan import recipe_phases
        self.start(resume)
        recipe, n = self.recipe, len(self.recipe.stages)
        with self.run.lock(), run_progress(recipe_phases(recipe), progress, "the recipe",
                                           [s.name for s in recipe.stages]):
            self.write_recipe()
            state = self.read_state()
            started = time.perf_counter()
            for stage in recipe.stages:
                set_stage(stage.index)
                run = recipe.folder(stage)
                done = _finished(run, stage)
                if done is not None:
                    finish()                      # (the progress view: nothing is left of the stage)
                    state["stages"][stage.label] = self._stage_record(stage, done)
                    self.write_state(state)
                    self.log(f"stage {stage.index}/{n} {stage.name}: done ({done['steps']:,} steps, "
                             f"{done['wall_seconds_total']:.0f} s)")
                    continue
                spent = sum(s["wall_seconds"] for s in state["stages"].values())
                if KINDS[stage.kind]:
                    self.log(f"stage {stage.index}/{n} {stage.name}: {stage.kind}; the recipe so far {spent:.0f} s")
                    summary = kind_module(stage.kind).run(_stage_config(recipe, stage), stage.section, run,
                                                          progress=progress, log=self.log)
                else:
                    going_on = run.root.is_dir() and run.find_checkpoint() is not None
                    cfg = _resumed_config(run, stage.cfg) if going_on else _stage_config(recipe, stage)
                    self.log(f"stage {stage.index}/{n} {stage.name}: {cfg['algorithm']}, "
                             f"{cfg['total_timesteps']:,} steps" + (" (resumed)" if going_on else "")
                             + f"; the recipe so far {spent:.0f} s")
                    summary = train(cfg, resume_dir=str(run.root) if going_on else None, progress=progress,
                                    log=self.log)
                if summary.get("interrupted"):
                    self.log(f"the recipe stopped in stage {stage.name}; continue it with "
                             f"`kahve train --resume {self.run}`")
                    return {**state, "interrupted": True}
                state["stages"][stage.label] = self._stage_record(stage, summary)
                self.write_state(state)
                finish()
            set_stage(None)
            self.write_bot(state, progress)
            finish(everything=True)
            self.log(f"done: {recipe.bot_file} in {time.perf_counter() - started:.0f} s this session; "
                     f"{sum(s['wall_seconds'] for s in state['stages'].values()):.0f} s of training in all")
        return state

    @staticmethod
    def _stage_record(stage: Stage, summary: dict) -> dict:
        return {"name": stage.name, "algorithm": stage.kind if KINDS[stage.kind] else stage.cfg["algorithm"],
                "steps": summary["steps"],
                "pretrain_seconds": summary.get("pretrain_seconds", 0.0),
                "wall_seconds": float(summary["wall_seconds_total"])}

    def write_bot(self, state: dict, progress: bool = True) -> None:
        """The last stage's network as the bot file, then its report and levels (each once); ``progress``: their
        games count into the recipe's progress view."""
        from ..policies.bot import export_onnx
        from ..policies.network import MLP
        from .files import load_npz
        recipe = self.recipe
        last = recipe.stages[-1]
        run = recipe.folder(last)
        records = [state["stages"][s.label] for s in recipe.stages]
        steps = sum(r["steps"] for r in records)
        written = state.get("bot") or {}
        # not written yet, or a stage has trained on since, or the bot was renamed (bot.name)
        if written.get("steps") != steps or written.get("file") != recipe.bot_file.name or not recipe.bot_file.exists():
            recipe_meta = {"command": recipe.command, "stages": records, "machine": machine()}
            # the steps of learning (a distill or expert stage counts labels, another unit: the record keeps them)
            learned = sum(r["steps"] for s, r in zip(recipe.stages, records) if not KINDS[s.kind]) or steps
            wall = sum(r["wall_seconds"] for r in records)
            if KINDS[last.kind]:       # the stage wrote its bot (an expert network beside the main one, say)
                from ..policies.bot import Bot, rewrite_metadata
                source = run.root / kind_module(last.kind).BOT_FILE
                meta = {**Bot.read_metadata(source)[1], "training_steps": learned, "wall_seconds": wall,
                        "recipe": recipe_meta}
                rewrite_metadata(source, recipe.bot_file, meta)
            else:
                summary = run.read_summary()
                meta = RunDir.bot_metadata(last.cfg, learned, summary.get("evaluation", {}), wall_seconds=wall,
                                           recipe=recipe_meta)
                export_onnx(MLP.from_arrays(load_npz(run.policy)), recipe.bot_file, meta)
            state["bot"], state["report"] = {"file": recipe.bot_file.name, "steps": steps}, None
            self.write_state(state)
            self.log(f"wrote the bot {recipe.bot_file}")
        bot = recipe.bot
        if bot["report"] and state.get("report") != steps:
            from ..evaluation.report import write_report
            from ..progress import phase
            # (the levels' games count into their own phase: its bars say "levels: ...", plan.bot_phases)
            with phase("report", "the bot's report", progress, own_bar=False):
                report = write_report(recipe.bot_file, bot["report"], games=bot["games"], workers=bot["workers"],
                                      seed=bot["seed"], show_progress=progress, levels=bot["levels"])
            state["report"] = steps
            self.write_state(state)
            self.log(f"wrote its report {report}")


def train_recipe(recipe: Recipe, resume: bool = False, progress: bool = True, log=print) -> dict:
    """Run (or resume) a recipe; returns its progress."""
    log(f"recipe {recipe.source}: {len(recipe.stages)} stages ("
        + ", ".join(s.name for s in recipe.stages) + f"), then the bot {recipe.bot_file}")
    return RecipeRun(recipe, log).execute(resume, progress)
