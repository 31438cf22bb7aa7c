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
    assert quantize._quant_config("int8")["format"] == "int-quantized"
    four = quantize._quant_config("int4")
    assert four["format"] == "pack-quantized" and four["config_groups"]["group_0"]["weights"]["group_size"] == 64
    assert four["ignore"] == ["lm_head"]
