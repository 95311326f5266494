"""docs/deploy/ stays true: the systemd unit's and the manifests' command lines parse with
specmon's own parser, the YAML parses, Prometheus's config passes `promtool check config`
where promtool is installed, and the ports and paths are the exporter's own."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from specmon.cli import parse_args
from specmon.cli.exporter import DEFAULT_LISTEN, listen_address
from specmon.cli.monitor import config_from_args
from specmon.exporter.server import Exporter
from specmon.session.fleet import Fleet

DEPLOY = Path(__file__).parents[2] / "docs" / "deploy"
PORT = listen_address(DEFAULT_LISTEN)[1]
CONFIG = "/etc/specmon/exporter.toml"
UNITS = ("specmon-exporter.service", "specmon-exporter-probe.conf")
MANIFESTS = ("kubernetes-sidecar.yaml", "kubernetes-daemonset.yaml")
PROMETHEUS = ("prometheus.yml", "prometheus-kubernetes.yml")


def _unit(name: str) -> dict[str, list[str]]:
    """A unit file's `Key=value` lines, every value of each key in order."""
    keys: dict[str, list[str]] = {}
    for line in (DEPLOY / name).read_text().splitlines():
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            keys.setdefault(key, []).append(value)
    return keys


def _exec_start(name: str) -> list[str]:
    """The specmon arguments of a unit's (last, non-empty) ExecStart, the config file swapped for
    the example one."""
    command = shlex.split(_unit(name)["ExecStart"][-1])
    assert Path(command[0]).name == "specmon", command
    return [str(DEPLOY / "exporter.toml") if a == CONFIG else a for a in command[1:]]


def _parse(argv: list[str]) -> Any:
    """Parse as `specmon` does, and check what `specmon exporter` checks before it starts."""
    args = parse_args(argv)
    assert args.command == "exporter", argv
    config = config_from_args(args)  # raises on a bad combination
    if args.any_target or args.allow_target:
        assert args.multi_target, argv
    return args, config


@pytest.mark.parametrize("name", UNITS)
def test_the_units_command_parses(name: str) -> None:
    args, config = _parse(_exec_start(name))
    assert args.listen == ("0.0.0.0", PORT)
    state = _unit("specmon-exporter.service")["StateDirectory"][0]
    assert Path(args.db).parent == Path("/var/lib") / state  # the one writable directory
    assert [t.url for t in config.targets] == ["http://127.0.0.1:8000", "http://127.0.0.1:8002"]


def test_the_unit_is_hardened() -> None:
    unit = _unit("specmon-exporter.service")
    for key, value in {
        "DynamicUser": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "NoNewPrivileges": "yes",
        "Restart": "on-failure",
        "CapabilityBoundingSet": "",
    }.items():
        assert unit[key] == [value], key
    # The drop-in clears ExecStart before giving its own (systemd adds to a list otherwise).
    assert _unit("specmon-exporter-probe.conf")["ExecStart"][0] == ""


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    specmon = shutil.which("specmon")
    if specmon is None:
        pytest.skip("no specmon on PATH")
    text = (DEPLOY / "specmon-exporter.service").read_text()
    unit = tmp_path / "specmon-exporter.service"
    unit.write_text(text.replace("/opt/specmon/bin/specmon", specmon))
    done = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    mine = [line for line in done.stderr.splitlines() if unit.name in line]
    assert done.returncode == 0 and not mine, done.stderr


def _config_maps(name: str) -> dict[str, str]:
    """The files of a manifest's ConfigMaps, by name."""
    documents = yaml.safe_load_all((DEPLOY / name).read_text())
    return {f: text for d in documents if d["kind"] == "ConfigMap" for f, text in d["data"].items()}


def _containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for name in MANIFESTS:
        for document in yaml.safe_load_all((DEPLOY / name).read_text()):
            spec = document.get("spec", {}).get("template", {}).get("spec", {})
            for container in spec.get("containers", []):
                if container["name"] == "specmon":
                    yield name, container


def _expand(arg: str, env: list[dict[str, Any]]) -> str:
    """Kubernetes's $(VAR) in args, each variable given a plausible value."""
    for var in env:
        arg = arg.replace(f"$({var['name']})", "10.0.0.7")
    assert "$(" not in arg, arg
    return arg


def test_every_manifest_has_an_exporter() -> None:
    assert sorted({name for name, _ in _containers()}) == sorted(MANIFESTS)


@pytest.mark.parametrize(("name", "container"), list(_containers()), ids=MANIFESTS)
def test_the_manifests_args_parse_and_match_the_exporter(
    name: str, container: dict[str, Any], tmp_path: Path
) -> None:
    argv = [_expand(a, container.get("env", [])) for a in container["args"]]
    if f"--config={CONFIG}" in argv:  # the ConfigMap's file, mounted there
        config_file = tmp_path / "exporter.toml"
        config_file.write_text(_config_maps(name)[Path(CONFIG).name])
        argv[argv.index(f"--config={CONFIG}")] = f"--config={config_file}"
    args, config = _parse(argv)
    assert args.listen == ("0.0.0.0", PORT)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"specmon": PORT}
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert str(Path(args.db).parent) in mounts  # the store on a volume, the root read-only
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert config.targets and config.gpu_metrics == "http://10.0.0.7:9400/metrics"


@pytest.mark.parametrize("name", MANIFESTS)
def test_the_pods_annotations_name_the_exporters_port(name: str) -> None:
    for document in yaml.safe_load_all((DEPLOY / name).read_text()):
        if document["kind"] in ("Deployment", "DaemonSet"):
            annotations = document["spec"]["template"]["metadata"]["annotations"]
            assert annotations["prometheus.io/port"] == str(PORT)
            assert annotations["prometheus.io/path"] == "/metrics"


async def test_the_probes_paths_are_served() -> None:
    paths = {
        probe["httpGet"]["path"]
        for _, container in _containers()
        for probe in (container["readinessProbe"], container["livenessProbe"])
    }
    for _, container in _containers():
        for probe in (container["readinessProbe"], container["livenessProbe"]):
            assert probe["httpGet"]["port"] == "specmon"
    exporter = Exporter(Fleet([]), "127.0.0.1", 0)
    await exporter.start()
    try:
        async with httpx.AsyncClient(base_url=exporter.url) as client:
            for path in paths:
                assert (await client.get(path)).status_code == 200, path
    finally:
        await exporter.stop()


def _jobs(name: str) -> dict[str, dict[str, Any]]:
    config = yaml.safe_load((DEPLOY / name).read_text())
    assert [(DEPLOY / f).resolve() for f in config["rule_files"]] == [
        (DEPLOY.parent / "prometheus" / "alerts.yml").resolve()
    ]
    return {job["job_name"]: job for job in config["scrape_configs"]}


def test_the_scrape_configs_use_the_exporters_port_and_paths() -> None:
    jobs = _jobs("prometheus.yml")
    static = jobs["specmon"]
    assert static["metrics_path"] == "/metrics"
    for group in static["static_configs"]:
        assert all(t.endswith(f":{PORT}") for t in group["targets"])
    probe = jobs["specmon-probe"]
    assert probe["metrics_path"] == "/probe"
    assert probe["relabel_configs"][-1]["replacement"].endswith(f":{PORT}")
    assert probe["relabel_configs"][0]["target_label"] == "__param_target"
    pods = _jobs("prometheus-kubernetes.yml")["specmon-pods"]
    kept = [r for r in pods["relabel_configs"] if r.get("action") == "keep"]
    assert any(r["regex"] == str(PORT) for r in kept)


@pytest.mark.parametrize("name", PROMETHEUS)
def test_promtool_accepts_the_config(name: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        reason = "no promtool: apt-get install prometheus"
        if os.environ.get("SPECMON_PROMETHEUS_REQUIRED") == "1":  # CI
            pytest.fail(reason)
        pytest.skip(reason)
    done = subprocess.run(
        [promtool, "check", "config", name],
        cwd=DEPLOY,
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = done.stdout + done.stderr
    if "field kubernetes_sd_configs not found" in output:
        pytest.skip("this promtool is built without Kubernetes discovery (Debian's)")
    assert done.returncode == 0, output
