"""The one plug-in registry (mimo_core/plugins.py): names, aliases, entry points of installed
distributions, and the errors of a lookup that fails (the known names; the install a missing module needs).

Entry points come from real distributions: a `*.dist-info` folder on sys.path is what pip leaves behind,
and importlib.metadata reads it like any installed package."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mimo_core import plugins
from mimo_core.config import read_config
from mimo_core.config_checks import load_config
from mimo_core.datasets.deepswe import DeepSWEDatasetType
from mimo_core.environments.local.environment import LocalEnvironment
from mimo_core.errors import ConfigError, DatasetError


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path where `_install` puts distributions; the registry reads them afresh."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    plugins.refresh()
    yield folder
    plugins.refresh()  # (monkeypatch takes the folder off sys.path after this)


def _install(site: Path, dist: str, entry_points: dict[str, dict[str, str]], modules: dict[str, str], meta: str = ""):
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n{meta}")
    (info / "entry_points.txt").write_text(
        "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in entry_points.items())
    )
    for name, text in modules.items():
        (site / f"{name}.py").write_text(text)
    plugins.refresh()


def _config(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_an_unknown_name_lists_the_known_ones_with_each_kinds_error_class() -> None:
    with pytest.raises(ValueError, match=r"unknown environment_class 'dokker'; known: \['local', 'docker', 'kub"):
        plugins.lookup("environments", "dokker")
    with pytest.raises(ConfigError, match=r"unknown agent type 'defualt'; known: \['default', 'oracle', 'claude-code'"):
        plugins.lookup("agents", "defualt")
    with pytest.raises(DatasetError, match=r"unknown dataset_type 'sweb'; known: arvo, deepswe, generic, opensource"):
        plugins.lookup("datasets", "sweb")
    with pytest.raises(ValueError, match=r"unknown protocol 'grpc'; known: \['chat', 'responses', 'anthropic'"):
        plugins.lookup("protocols", "grpc")
    with pytest.raises(ConfigError, match=r"unknown tool 'grep'; known tools: \['bash', 'read', 'write', 'edit'"):
        plugins.lookup("tools", "grep")


def test_built_ins_aliases_and_module_paths_resolve() -> None:
    assert plugins.lookup("environments", "local") is LocalEnvironment
    assert plugins.lookup("datasets", "harbor") is DeepSWEDatasetType
    assert plugins.canonical("datasets", "swe-bench") == "opensource-code"
    target = "mimo_core.environments.local.environment:LocalEnvironment"
    assert plugins.lookup("environments", target) is LocalEnvironment
    assert plugins.find("agents", "codex").speaks == "responses" and not plugins.find("agents", "judge").main
    with pytest.raises(ModuleNotFoundError) as missing:  # a wrong module path: no install to suggest
        plugins.lookup("environments", "no_such_pkg.mod:Cls")
    assert type(missing.value) is ModuleNotFoundError


def test_rows_name_no_code_and_configs_name_code_only_as_module_paths(tmp_path: Path) -> None:
    """A dataset row's type is a name, never a module to import; a config's `module:attr` is checked when
    the config loads, like any plug-in of that kind."""
    with pytest.raises(DatasetError, match="unknown dataset_type 'json:JSONDecoder'"):
        plugins.lookup("datasets", "json:JSONDecoder")
    with pytest.raises(ValueError, match="unknown environment_class 'os path:join'"):
        plugins.find("environments", "os path:join")
    with pytest.raises(ConfigError, match=r"cfg\.yaml: model\.protocol: cannot load 'no_such_module:make': No module"):
        load_config(_config(tmp_path, {"model": {"protocol": "no_such_module:make"}}))
    assert load_config(_config(tmp_path, {"model": {"protocol": "mimo_core.models.chat:make_chat_model"}}))


def test_a_built_in_whose_module_is_not_installed_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend's SDK (imported only when a sandbox starts) is checked at lookup: the requirement comes
    from mimoagent's own metadata; an optional extra is named as an extra."""
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # what an uninstalled package looks like to import
    with pytest.raises(plugins.MissingDependency) as e:
        plugins.lookup("environments", "kubernetes")
    assert str(e.value) == (
        "environment_class 'kubernetes' needs the module 'kubernetes', which is not installed: "
        "pip install 'kubernetes>=33'"
    )
    assert isinstance(e.value, ModuleNotFoundError) and e.value.name == "kubernetes"
    assert plugins.install_hint(plugins.find("environments", "local"), "ray") == "pip install 'mimoagent[ray]'"


def test_a_config_naming_a_backend_whose_module_is_missing_fails_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(ConfigError) as e:
        load_config(_config(tmp_path, {"environment": {"environment_class": "docker"}}))
    assert "cfg.yaml: environment.environment_class: cannot load 'docker'" in str(e.value)
    assert "pip install 'docker>=7.1'" in str(e.value)


def test_entry_points_add_plugins_that_configs_name(site: Path, tmp_path: Path) -> None:
    _install(
        site,
        "demo-plugins",
        {
            "mimoagent.environments": {"demo-env": "demo_env:DemoEnv", "local": "demo_env:DemoEnv"},
            "mimoagent.tools": {"demo-tool": "demo_env:DemoTool"},
        },
        {
            "demo_env": "from mimo_core.environments.local.environment import LocalEnvironment\n"
            "class DemoEnv(LocalEnvironment):\n    pass\nclass DemoTool:\n    pass\n"
        },
    )
    demo = plugins.find("environments", "demo-env")
    assert (demo.source, demo.dist, demo.target) == ("demo-plugins 1.0", "demo-plugins", "demo_env:DemoEnv")
    assert plugins.lookup("environments", "demo-env").__name__ == "DemoEnv"
    assert plugins.lookup("environments", "local") is LocalEnvironment  # a built-in's name stays the built-in
    assert plugins.names("environments") == [*plugins.BUILT_INS["environments"], "demo-env"]
    assert [p.source for p in plugins.installed("environments")][-2:] == ["demo-plugins 1.0", "demo-plugins 1.0"]
    named = read_config(_config(tmp_path, {"environment": {"environment_class": "demo-env"}}))
    assert named.config.environment.environment_class == "demo-env"
    with pytest.raises(ConfigError, match=r"cfg\.yaml: environment\.environment_class: .*'demo-envv'.*'demo-env'\]"):
        read_config(_config(tmp_path, {"environment": {"environment_class": "demo-envv"}}))
    with pytest.raises(ConfigError, match=r"known tools: \[.*'submit', 'demo-tool'\]"):
        plugins.lookup("tools", "demo-tol")


def test_a_name_two_distributions_provide_is_an_error_naming_both(site: Path) -> None:
    for dist in ("first-dist", "second-dist"):
        _install(site, dist, {"mimoagent.datasets": {"twin": "json:JSONDecoder"}}, {})
    with pytest.raises(
        DatasetError,
        match="dataset_type 'twin' is provided by several installed packages: "
        "first-dist 1.0, second-dist 1.0; uninstall all but one",
    ):
        plugins.lookup("datasets", "twin")


def test_a_plugin_whose_dependency_is_missing_names_its_distributions_extra(site: Path, tmp_path: Path) -> None:
    meta = 'Provides-Extra: gpu\nRequires-Dist: demo-absent-pkg>=2; extra == "gpu"\n'
    _install(
        site,
        "demo-gpu",
        {"mimoagent.tools": {"gpu-tool": "demo_gpu_tool:GpuTool"}},
        {"demo_gpu_tool": "import demo_absent_pkg\nclass GpuTool:\n    pass\n"},
        meta,
    )
    with pytest.raises(
        plugins.MissingDependency,
        match=r"tool 'gpu-tool' needs the module 'demo_absent_pkg', which "
        r"is not installed: pip install 'demo-gpu\[gpu\]'",
    ):
        plugins.lookup("tools", "gpu-tool")
    path = _config(tmp_path, {"agent": {"tools": [{"tool": "bash"}, {"tool": "gpu-tool"}]}})
    with pytest.raises(
        ConfigError, match=r"cfg\.yaml: agent\.tools\[1\]\.tool: cannot load 'gpu-tool': .*demo-gpu\[gpu"
    ):
        load_config(path)


def test_importing_and_validating_with_built_ins_reads_no_entry_point() -> None:
    """Start-up: `import mimo_core`, a config of built-ins validated, a row's type found: no entry point
    read (scanning every installed distribution costs tens of milliseconds)."""
    code = (
        "import mimo_core.config as c, mimo_core.plugins as p\n"
        "from mimo_core.datasets.registry import infer_type\n"
        "c.validate_config({'agent': {'type': 'claude-code'}, 'model': {'protocol': 'anthropic'},"
        " 'environment': {'environment_class': 'docker'}}, 'x')\n"
        "assert infer_type({'dataset_type': 'swe-bench'}) == 'opensource-code'\n"
        "print(p._installed)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "None"
