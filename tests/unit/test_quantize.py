import torch

from helpers import quantize


def test_int8_rows_round_trip_within_half_a_step():
    torch.manual_seed(0)
    w = torch.randn(64, 128)
    q, scale = quantize.quantize_int8(w)
    assert q.dtype == torch.int8 and scale.shape == (64, 1)
    assert (quantize.dequantize(q, scale) - w).abs().le(scale / 2 + 1e-6).all()


def test_int4_groups_stay_in_range_and_round_trip():
    torch.manual_seed(0)
    w = torch.randn(32, 256)
    q, scale = quantize.quantize_int4(w, group=64)
    assert q.min() >= -8 and q.max() <= 7 and scale.shape == (32, 4)
    err = (quantize.dequantize(q, scale, 64) - w).abs().reshape(32, 4, 64)
    assert err.le(scale.unsqueeze(2) / 2 + 1e-6).all()


def test_configs_name_the_compressed_tensors_formats():
    assert quantize.scheme_config("int8")["format"] == "int-quantized"
    four = quantize.scheme_config("int4")
    assert four["format"] == "pack-quantized" and four["config_groups"]["group_0"]["weights"]["group_size"] == 64
    assert four["ignore"] == ["lm_head"]


def test_four_bit_weights_are_refused_in_float32_before_a_start(tmp_path):
    from helpers.config import EngineConfig
    four, eight = quantize.scheme_config("int4"), quantize.scheme_config("int8")
    assert "cpu_gemm_wna16" in quantize.float32_problem(four)
    assert quantize.float32_problem(eight) is None and quantize.float32_problem(None) is None
    why = EngineConfig(device="cpu", model="embedded-int4", dtype="float32").cannot_run_here()
    assert why.setting == "dtype" and "bfloat16" in why.fix
    assert EngineConfig(device="cpu", model="embedded-int4", dtype="bfloat16").cannot_run_here() is None
    assert EngineConfig(device="cpu", model="embedded-int8", dtype="float32").cannot_run_here() is None


def test_preflight_reads_a_folders_quantization_config(tmp_path):
    import json

    import pytest

    from helpers.config import ConfigError, EngineConfig
    from helpers.engine import preflight
    (tmp_path / "config.json").write_text(json.dumps({
        "num_attention_heads": 8, "num_hidden_layers": 2, "quantization_config": quantize.scheme_config("int4")}))
    with pytest.raises(ConfigError) as err:
        preflight._check_model(EngineConfig(device="cpu", model=str(tmp_path), dtype="float32"))
    assert err.value.setting == "dtype"
    preflight._check_model(EngineConfig(device="cpu", model=str(tmp_path), dtype="bfloat16"))
