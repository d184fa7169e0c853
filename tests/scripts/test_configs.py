"""The shipped configs from the installed package (issue 60): ``kahve configs`` lists, prints and copies them,
``kahve train`` names the file it read, an unknown name is a one-line did-you-mean; ``kahve --version``."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest
import yaml

import kahve.agents
from kahve import configs
from kahve.scripts.cli import main
from tests.helpers import HANG_S


def test_kahve_configs_lists_every_shipped_config_with_what_it_trains(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["configs"]) == 0
    out = capsys.readouterr().out
    assert str(configs.ROOT) in out.splitlines()[0]
    listed = [line.split()[0] for line in out.splitlines()[1:] if line.startswith("  ")]
    assert listed == configs.names() and {"pishti/ppo", "pasur/dqn", "ish/ppo"} <= set(listed)
    assert len(listed) == len(list(configs.ROOT.glob("*/*.yaml")))
    assert "  pishti/ppo" in out and "Pişti, 2 players: masked PPO against a weighted pool of baselines" in out


def test_kahve_configs_prints_and_copies_one_and_never_overwrites_unasked(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shipped = (configs.ROOT / "pishti" / "ppo.yaml").read_text(encoding="utf-8")
    assert main(["configs", "pishti/ppo"]) == 0
    assert capsys.readouterr().out == shipped
    assert main(["configs", "configs/pishti/ppo.yaml", "-o", "my.yaml"]) == 0        # the path form too
    assert (tmp_path / "my.yaml").read_text(encoding="utf-8") == shipped
    assert "kahve train my.yaml" in capsys.readouterr().out
    (tmp_path / "my.yaml").write_text("game: pishti  # edited\n")
    assert main(["configs", "pishti/ppo", "-o", "my.yaml"]) == 2
    assert "my.yaml exists; choose another file or add --force" in capsys.readouterr().err
    assert (tmp_path / "my.yaml").read_text() == "game: pishti  # edited\n"
    assert main(["configs", "pishti/ppo", "-o", "my.yaml", "--force"]) == 0
    assert (tmp_path / "my.yaml").read_text(encoding="utf-8") == shipped
    (tmp_path / "mine").mkdir()
    assert main(["configs", "pasur/dqn", "-o", "mine"]) == 0                         # into a folder: its own name
    assert yaml.safe_load((tmp_path / "mine" / "dqn.yaml").read_text(encoding="utf-8"))["game"] == "pasur"


@pytest.mark.parametrize("args,match", [
    (["configs", "pishti/pp"], "no shipped config 'pishti/pp'; did you mean pishti/ppo"),
    (["configs", "pasur/ddqn.yaml"], "did you mean pasur/dqn"),
    (["configs", "nothing/like/it"], "shipped configs: ish/dqn, "),
    (["configs", "-o", "x.yaml"], "name the config to copy"),
    (["train", "pishti/pp"], "no config file 'pishti/pp' here and no shipped config of that name; did you mean "
                             "pishti/ppo"),
])
def test_an_unknown_config_is_one_line_with_the_closest_names(args, match, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1, err
    assert not (tmp_path / "x.yaml").exists()


def test_kahve_train_names_the_config_file_it_read(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = ["--override", "total_timesteps=0"]        # stops at validation, after the header
    assert main(["train", "pishti/ppo", *bad]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"config {configs.ROOT / 'pishti' / 'ppo.yaml'} (shipped with kahve; to edit a copy: "
                          f"kahve configs pishti/ppo -o my.yaml)")
    # a file of that path in the working directory is the one read, as always
    (tmp_path / "configs" / "pishti").mkdir(parents=True)
    (tmp_path / "configs" / "pishti" / "ppo.yaml").write_text((configs.ROOT / "pishti" / "ppo.yaml").read_text())
    assert main(["train", "configs/pishti/ppo.yaml", *bad]) == 2
    assert capsys.readouterr().out.splitlines()[0] == "config configs/pishti/ppo.yaml"


def test_version_from_the_command_and_the_package():
    r = subprocess.run([sys.executable, "-m", "kahve.scripts.cli", "--version"], capture_output=True, text=True,
                       timeout=HANG_S)
    assert r.returncode == 0 and r.stdout == f"kahve {version('kahve')}\n"
    assert kahve.agents.__version__ == version("kahve") and version("kahve")[0].isdigit()
