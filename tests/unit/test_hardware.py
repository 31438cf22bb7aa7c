"""The CPU's instruction sets decide the guide's dtype and what it refuses before a start."""
import pytest

from helpers import hardware
from helpers.config import ConfigError, EngineConfig
from helpers.engine import preflight
from helpers.results import fingerprint


@pytest.fixture
def cpu(monkeypatch):
    """Pretend to be a CPU with the given /proc/cpuinfo flags."""
    def use(flags: str):
        monkeypatch.setenv("GUIDE_CPU_ISA", flags)
        hardware.cpu_isa.cache_clear()
        hardware.describe.cache_clear()
        fingerprint.cache_clear()
    yield use
    monkeypatch.delenv("GUIDE_CPU_ISA", raising=False)
    hardware.cpu_isa.cache_clear()
    hardware.describe.cache_clear()
    fingerprint.cache_clear()


def test_real_cpu_is_read():
    have = hardware.cpu_isa()
    assert have <= set(hardware.ISA_FLAGS)
    assert hardware.describe()["cpu_isa"] == hardware.isa_label()


@pytest.mark.parametrize("flags, label, dtype, fp8", [
    ("avx2", "AVX2", "float32", False),                                  # most laptops, the AVX2 EPYC
    ("avx2,avx512f", "AVX-512", "float32", True),                        # AVX-512 without bf16
    ("avx2,avx512f,avx512_bf16", "AVX-512, AVX512-BF16", "bfloat16", True),
    ("avx2,avx512f,avx512_bf16,amx_bf16", "AVX-512, AVX512-BF16, AMX", "bfloat16", True),  # Sapphire Rapids Xeon
    ("", "no AVX2", "float32", False),
])
def test_isa_decides_dtype_and_fp8(cpu, flags, label, dtype, fp8):
    cpu(flags)
    assert hardware.isa_label() == label
    assert hardware.cpu_dtype() == dtype
    assert EngineConfig().dtype == dtype
    assert (EngineConfig(kv_cache_dtype="fp8").cannot_run_here() is None) == fp8


def test_default_dtype_equals_it_spelled_out(cpu):
    cpu("avx2")
    assert EngineConfig() == EngineConfig(dtype="float32")
    assert EngineConfig().as_dict() == EngineConfig(dtype="float32").as_dict()
    assert EngineConfig().label() == "guide default"
    assert "--dtype float32" in " ".join(EngineConfig().server_args("/m", 1))
    assert EngineConfig(dtype="auto").dtype == "auto"  # a learner may still ask for vLLM's rule


def test_fp8_on_avx2_is_refused_before_any_process(cpu):
    cpu("avx2")
    with pytest.raises(ConfigError) as err:
        preflight.check(EngineConfig(kv_cache_dtype="fp8_e4m3"))
    e = err.value
    assert e.setting == "kv_cache_dtype"
    assert "AVX-512 or AMX" in e.problem and "AVX2" in e.problem  # the engine's reason, and this CPU
    assert 'kv_cache_dtype="auto"' in e.fix


def test_fingerprint_names_the_isa(cpu):
    cpu("avx2")
    avx2 = fingerprint()
    cpu("avx2,avx512f,amx_bf16")
    amx = fingerprint()
    assert avx2["cpu_isa"] == "AVX2" and "AMX" in amx["cpu_isa"]
    assert avx2["env_id"] != amx["env_id"], "results from the two kinds of CPU must not mix"


def test_doctor_reports_isa_dtype_and_fp8(cpu):
    from helpers import doctor
    cpu("avx2")
    found = {item: what for item, what, _ in doctor.checks()}
    assert found["CPU instruction sets"] == "AVX2"
    assert found["dtype the guide uses"].startswith("float32")
    assert "not on this CPU" in found["fp8 KV cache"]


def test_l3_is_summed_over_its_instances(tmp_path, monkeypatch):
    """An EPYC has one L3 per CCX: cpu0's alone would size the probe's arrays to fit the whole cache."""
    for cpu, ccx in ((0, 0), (1, 0), (2, 1), (3, 1)):
        index = tmp_path / f"cpu{cpu}" / "cache" / "index3"
        index.mkdir(parents=True)
        (index / "id").write_text(f"{ccx}\n")
        (index / "size").write_text("32768K\n")
    monkeypatch.setattr(hardware, "SYSFS_CPU", tmp_path)
    monkeypatch.setattr(hardware, "allowed_cpus", lambda: [0, 1, 2, 3])
    assert hardware.last_level_cache_mib() == 32.0 and hardware.total_l3_mib() == 64.0
    monkeypatch.setattr(hardware, "allowed_cpus", lambda: [2, 3])  # a process bound to one CCX
    assert hardware.total_l3_mib() == 32.0
