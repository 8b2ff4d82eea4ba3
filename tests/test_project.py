"""The project's promises about setup: conda and pip name the same packages, CI pins them, the README leads right."""

import re
import tomllib

from packaging.requirements import Requirement

from tools.course import ROOT, Course, Env, lesson_files, settings

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CONDA_TO_PIP = {"pytorch": "torch"}


def pip_requirements() -> dict[str, str]:
    """Package name -> version specifier, from pyproject.toml's dependencies and every extra."""
    project = PYPROJECT["project"]
    names = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    reqs = [Requirement(r) for r in names]
    return {r.name: str(r.specifier) for r in reqs if r.marker is None or r.marker.evaluate()}


def conda_requirements() -> dict[str, str]:
    """Package name (pip's spelling) -> version specifier, from environment.yml's conda dependencies."""
    found = {}
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    for line in text.split("\ndependencies:\n", 1)[1].splitlines():
        match = re.fullmatch(r"  - ([A-Za-z0-9_.-]+)(\S*)", line)
        if match and match.group(1) not in {"python", "pip"}:
            name, spec = match.groups()
            found[CONDA_TO_PIP.get(name, name)] = str(Requirement(f"x{spec}").specifier)
    return found


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    assert conda_requirements() == pip_requirements()


def test_environment_yml_uses_conda_forge_only_and_installs_the_package():
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    channels = re.search(r"channels:\n((?:  - .*\n)+)", text).group(1)
    assert channels.split() == ["-", "conda-forge"]
    assert "      - -e ." in text
    assert re.search(r"^  - python>=3\.11$", text, re.M) and PYPROJECT["project"]["requires-python"] == ">=3.11"


def test_constraints_pin_every_dependency_within_its_range():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    for name, spec in pip_requirements().items():
        assert name in pins, f"constraints.txt does not pin {name}"
        assert Requirement(f"{name}{spec}").specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {spec}"
    assert pins["torch"] == "2.13.0", "pin the release, not the +cpu build, so the pin holds on every platform"


def test_the_cpu_build_of_torch_on_linux_alone_without_its_dependencies():
    course = Course(settings([], {}, "Linux"), windows=False)
    steps = course.install(course.env, course.s["TORCH_SPEC"])
    torch_step = next(step for step in steps if "torch==2.13.0+cpu" in step.argv)
    assert torch_step.argv[-4:] == [
        "--no-deps",
        "--extra-index-url",
        "https://download.pytorch.org/whl/cpu",
        "torch==2.13.0+cpu",
    ]
    assert settings([], {}, "Darwin")["TORCH_SPEC"] == "torch==2.13.0"
    assert settings([], {}, "Windows")["TORCH_INDEX"] == ""


def test_readme_opens_with_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^make \w+", readme, re.M)
    assert commands[:2] == ["make lab", "make test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_lists_every_lesson():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in lesson_files():
        assert f"notebooks/{path.name}" in readme, f"README does not list {path.name}"


def test_the_torch_asked_for_stays_installed(tmp_path):
    """constraints.txt pins torch 2.13.0; installing the rest against it would silently replace a TORCH_SPEC."""
    course = Course(settings([], {}, "Linux"), root=ROOT, windows=False)
    course.env = Env(tmp_path, windows=False)
    steps = course.install(course.env, "torch==2.14.1")
    next(step for step in steps if step.action is not None and "constraints" in step.describe).action()
    text = (tmp_path / "constraints-without-torch.txt").read_text(encoding="utf-8")
    assert "torch==" not in text and "numpy==" in text
    rest = next(step for step in steps if "-e" in step.argv)
    assert rest.argv[rest.argv.index("-c") + 1] == str(tmp_path / "constraints-without-torch.txt")


def test_the_kubernetes_values_keep_the_one_server_settings():
    """class/kubernetes/ is not run here (no Kubernetes), so at least its settings must match the tested hub's."""
    import yaml

    values = yaml.safe_load((ROOT / "class/kubernetes/values.yaml").read_text(encoding="utf-8"))
    config = (ROOT / "class/jupyterhub_config.py").read_text(encoding="utf-8")
    student = values["singleuser"]
    for name, value in student["extraEnv"].items():
        assert f'"{name}": "{value}"' in config, name
    assert f'"COURSE_IDLE_SECONDS", "{values["cull"]["timeout"]}"' in config
    hook = " ".join(student["lifecycleHooks"]["postStart"]["exec"]["command"])
    assert "class/hub.py sync-workspace --lang" in hook
    languages = {p["kubespawner_override"]["environment"]["COURSE_LANG"] for p in student["profileList"]}
    assert languages == {"en", "zh", "both"}
    dockerfile = (ROOT / "class/kubernetes/Dockerfile").read_text(encoding="utf-8")
    assert "rm -rf notebooks companion/checks/answers" in dockerfile  # no reference answer in the students' image
    assert "class/hub.py stage" in dockerfile and student["image"]["name"].endswith("tensor-by-tensor")
