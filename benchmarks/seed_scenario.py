"""The seed's situation, reproduced on a real vLLM venv, then audited and planned as a user would.

    python benchmarks/seed_scenario.py /tmp/bench/realenv /tmp/bench/seed

Copies the venv (pip: torch 2.13 CPU, transformers, vllm 0.33 --no-deps) to WORK/venv, then:
plants the debug blocks (per-forward counter, one-shot class flags, shape-conditional torch.save
to /tmp) into vLLM's deepseek_v2.py, the GGUF loader patches into weight_utils.py and
transformers_utils/config.py, adds a module, builds a
``hf download --local-dir`` model directory whose config.json / hf_quant_config.json get the
SM120 edit (and a hub cache WORK/hf-hub holding the original blobs, as an earlier download
leaves), and leaves 35 dump files in WORK/dumps. Prints `driftscan audit` and
`driftscan plan --reinstall vllm --expect ...` output.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures.modeldirs import build_cache_repo, build_local_dir, seed_files, sm120_edit  # noqa: E402


def planting():
    spec = importlib.util.spec_from_file_location("planting", ROOT / "tests" / "test_inspect_planted.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GGUF_WEIGHT_UTILS = '''
_GGUF_RENAMES = {"token_embd": "embed_tokens", "output_norm": "norm", "output": "lm_head"}


def _gguf_tensor_rename(name: str) -> str:
    """GLM-5 GGUF exports name a few tensors the llama.cpp way; map them to vLLM's names."""
    head, _, rest = name.partition(".")
    head = _GGUF_RENAMES.get(head, head)
    return f"{head}.{rest}" if rest else head

'''
GGUF_CONFIG = '''
# GLM-5 GGUF: the architecture string llama.cpp writes, mapped to the HF config class vLLM expects.
_GGUF_ARCH_ALIASES = {"glm5": "glm4_moe", "deepseek2": "deepseek_v3"}


def _gguf_model_type(arch: str) -> str:
    return _GGUF_ARCH_ALIASES.get(arch, arch)

'''


def plant_gguf_patches(site: Path) -> list[Path]:
    """The GLM-5 phase's loader patches: a tensor-rename helper in weight_utils.py and an
    architecture alias in transformers_utils/config.py (both after ``logger = ``)."""
    patched = []
    for rel, patch in (("vllm/model_executor/model_loader/weight_utils.py", GGUF_WEIGHT_UTILS),
                       ("vllm/transformers_utils/config.py", GGUF_CONFIG)):
        path = site / rel
        source = path.read_text()
        anchor = source.index("\nlogger = ")
        path.write_text(source[:anchor] + "\n" + patch + source[anchor:])
        patched.append(path)
    return patched


def main(source_venv: str, work: str) -> None:
    work_dir = Path(work)
    venv = work_dir / "venv"
    if not venv.exists():
        work_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", source_venv, str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    dumps = work_dir / "dumps"
    plant = planting()
    model_file = site / "vllm/model_executor/models/deepseek_v2.py"
    pristine = model_file.read_text()
    if "_nomla_debug" not in pristine:
        model_file.write_text(plant.plant_debug_blocks(pristine).replace('"/tmp/', f'"{dumps}/'))
        plant_gguf_patches(site)
        (site / "vllm/_sm120_overrides.py").write_text("KV_CACHE_DTYPE = 'auto'\n")
    dumps.mkdir(exist_ok=True)
    for i in range(1, 13):
        (dumps / f"nomla_hidden_{i}_7.pt").write_bytes(b"\0" * 4096 * i)
        (dumps / f"nomla_positions_{i}.pt").write_bytes(b"\0" * 512)
    for i in range(1, 12):
        (dumps / f"nomla_out_{i}.pt").write_bytes(b"\0" * 8192)
    model = work_dir / "kimi-k2.5-nvfp4"
    hub = work_dir / "hf-hub"  # the user's hub cache holds the original blobs (an earlier `hf download`)
    if not model.exists():
        build_local_dir(model, seed_files())
        build_cache_repo(hub, seed_files())
        sm120_edit(model)
    expect = work_dir / "expect.toml"
    expect.write_text(f'''[[expect]]
name = "SM120: no kv_cache_scheme in config.json"
file = "{model}/config.json"
json_lacks = "quantization_config.kv_cache_scheme"

[[expect]]
name = "SM120: no kv_cache_quant_algo in hf_quant_config.json"
file = "{model}/hf_quant_config.json"
json_lacks = "/quantization/kv_cache_quant_algo"

[[expect]]
name = "deepseek_v2.py has no torch.save"
file = "{{site_packages}}/vllm/model_executor/models/deepseek_v2.py"
lacks = "torch\\\\.save"
''')
    cli = [sys.executable, "-m", "driftscan"]
    for args in (["audit", "--venv", str(venv), "--model-dir", str(model)],
                 ["plan", "--reinstall", "vllm", "--venv", str(venv), "--model-dir", str(model),
                  "--expect", str(expect)]):
        print("$ driftscan " + " ".join(args), flush=True)
        proc = subprocess.run(cli + args, text=True, capture_output=True, env={**os.environ, "HF_HUB_CACHE": str(hub)})
        print(proc.stdout + proc.stderr + f"[exit status {proc.returncode}]\n", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
