"""Which bf16 rounding flips SmolLM2's answer? Transformers with vLLM's CPU pieces swapped in.

Runs the embedded SmolLM2 in transformers (no vLLM engine) on the chat-templated question
"What is the capital of France?", greedy, full recompute each step, and swaps in, one at a
time, the pieces vLLM's eager CPU path uses instead of plain PyTorch:
  linear  vLLM's CPU GEMM dispatch (sgl-kernel AMX / oneDNN) on merged qkv / gate_up weights
  silu    torch.ops._C.silu_and_mul (the kernel behind SiluAndMul.forward_cpu)
  rope    torch.ops._C.rotary_embedding with vLLM's bf16 cos/sin cache (forward_cpu)
  norm    vLLM's fused add + RMSNorm (residual added in fp32, normalised before rounding)
Each variant prints the first tokens and the top-3 first-token logprobs.

Usage:  .venv/bin/python benchmarks/bf16_hf_probe.py
It holds the guide's engine lock while it runs (GUIDE_LOCK_WAIT, default 3600 s), so it does
not steal the 2 cores from someone's engine measurement.
"""
from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from transformers.models.llama import modeling_llama as ml  # noqa: E402

from helpers import models  # noqa: E402
from helpers.engine import EngineLock  # noqa: E402

QUESTION = "What is the capital of France?"
MODE = {"linear": False, "silu": False, "rope": False, "norm": False}
STEPS = 8


# -- vLLM pieces -------------------------------------------------------------------------------
def vllm_linear_for(weight: torch.Tensor):
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

    holder = torch.nn.Module()
    holder.weight = torch.nn.Parameter(weight.detach().clone(), requires_grad=False)
    holder.bias = None
    dispatch_cpu_unquantized_gemm(holder, remove_weight=False)

    def fn(x):
        y = holder.cpu_linear(x.reshape(-1, x.shape[-1]).contiguous(), holder.weight, None)
        return y.reshape(*x.shape[:-1], y.shape[-1])
    return fn


def attach_vllm_linears(model):
    for layer in model.model.layers:
        a, m = layer.self_attn, layer.mlp
        a._qkv = vllm_linear_for(torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]))
        a._o = vllm_linear_for(a.o_proj.weight)
        m._gate_up = vllm_linear_for(torch.cat([m.gate_proj.weight, m.up_proj.weight]))
        m._down = vllm_linear_for(m.down_proj.weight)
    model._lm_head = vllm_linear_for(model.lm_head.weight)


_COS_SIN = {}


def vllm_cos_sin_cache(head_dim: int, base: float, dtype) -> torch.Tensor:
    key = (head_dim, base, dtype)
    if key not in _COS_SIN:  # as RotaryEmbeddingBase._compute_cos_sin_cache, then .to(dtype)
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim))
        t = torch.arange(8192, dtype=torch.float)
        freqs = torch.einsum("i,j -> ij", t, inv_freq)
        _COS_SIN[key] = torch.cat((freqs.cos(), freqs.sin()), dim=-1).to(dtype)
    return _COS_SIN[key]


# -- patched transformers forwards -------------------------------------------------------------
def mlp_forward(self, x):
    if not (MODE["linear"] or MODE["silu"]):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
    gate_up = self._gate_up(x) if MODE["linear"] else torch.cat([self.gate_proj(x), self.up_proj(x)], -1)
    if MODE["silu"]:
        d = gate_up.shape[-1] // 2
        h = torch.empty(*gate_up.shape[:-1], d, dtype=gate_up.dtype)
        torch.ops._C.silu_and_mul(h, gate_up.contiguous())
    else:
        d = gate_up.shape[-1] // 2
        h = F.silu(gate_up[..., :d]) * gate_up[..., d:]
    return self._down(h) if MODE["linear"] else self.down_proj(h)


def attn_forward(self, hidden_states, position_embeddings=None, attention_mask=None, past_key_values=None, **kw):
    b, s, _ = hidden_states.shape
    hd, nq, nkv = self.head_dim, self.config.num_attention_heads, self.config.num_key_value_heads
    if MODE["linear"]:
        q, k, v = self._qkv(hidden_states).split([nq * hd, nkv * hd, nkv * hd], dim=-1)
    else:
        q, k, v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
    if MODE["rope"]:
        q, k = q.reshape(s, nq * hd).contiguous(), k.reshape(s, nkv * hd).contiguous()
        cache = vllm_cos_sin_cache(hd, self.config.rope_parameters["rope_theta"], q.dtype)
        torch.ops._C.rotary_embedding(torch.arange(s), q, k, hd, cache, True)
        q = q.view(b, s, nq, hd).transpose(1, 2)
        k = k.view(b, s, nkv, hd).transpose(1, 2)
    else:
        q = q.view(b, s, nq, hd).transpose(1, 2)
        k = k.view(b, s, nkv, hd).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = ml.apply_rotary_pos_emb(q, k, cos, sin)
    v = v.view(b, s, nkv, hd).transpose(1, 2)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scaling, enable_gqa=True)
    out = out.transpose(1, 2).reshape(b, s, nq * hd)
    return (self._o(out) if MODE["linear"] else self.o_proj(out)), None


def model_forward(model, ids):
    """The decoder stack, with either HF's or vLLM's residual / norm handling."""
    inner = model.model
    h = inner.embed_tokens(ids)
    pos = torch.arange(ids.shape[1])[None]
    pe = inner.rotary_emb(h, pos)
    if not MODE["norm"]:
        for layer in inner.layers:
            h = layer(h, position_embeddings=pe, position_ids=pos)
        h = inner.norm(h)
    else:  # vLLM: fused_add_rms_norm native = add in fp32, keep bf16 residual, normalise fp32 sum
        def fused(x, res, w, eps):
            s32 = x.float() + res.float()
            var = s32.pow(2).mean(-1, keepdim=True)
            y = (s32 * torch.rsqrt(var + eps)).to(w.dtype) * w
            return y.to(x.dtype), s32.to(x.dtype)

        def plain(x, w, eps):
            x32 = x.float()
            y = (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(w.dtype) * w
            return y.to(x.dtype)

        residual = None
        for layer in inner.layers:
            ln1, ln2 = layer.input_layernorm, layer.post_attention_layernorm
            if residual is None:
                residual, x = h, plain(h, ln1.weight, ln1.variance_epsilon)
            else:
                x, residual = fused(h, residual, ln1.weight, ln1.variance_epsilon)
            x, _ = layer.self_attn(x, position_embeddings=pe)
            x, residual = fused(x, residual, ln2.weight, ln2.variance_epsilon)
            h = layer.mlp(x)
        h, _ = fused(h, residual, inner.norm.weight, inner.norm.variance_epsilon)
    last = h[:, -1:]
    logits = model._lm_head(last) if MODE["linear"] else model.lm_head(last)
    return logits[0, -1].float()


def greedy(model, tok, ids):
    out, first = [], None
    with torch.inference_mode():
        for _ in range(STEPS):
            logits = model_forward(model, ids)
            lp = torch.log_softmax(logits, -1)
            if first is None:
                top = torch.topk(lp, 3)
                first = [(tok.decode([int(i)]), round(float(v), 3)) for v, i in zip(top.values, top.indices)]
            nxt = int(torch.argmax(logits))
            out.append(nxt)
            ids = torch.cat([ids, torch.tensor([[nxt]])], 1)
    return tok.decode(out), first


def main():
    torch.manual_seed(0)
    path = str(models.resolve("embedded"))
    tok = AutoTokenizer.from_pretrained(path)
    ids = tok.apply_chat_template([{"role": "user", "content": QUESTION}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)["input_ids"]
    ml.LlamaMLP.forward = mlp_forward
    ml.LlamaAttention.forward = attn_forward
    lock = EngineLock().acquire("bf16_hf_probe (transformers, no engine)",
                                wait_s=float(os.environ.get("GUIDE_LOCK_WAIT", 3600)))
    try:
        for dtype in (torch.float32, torch.bfloat16):
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
            if dtype == torch.float32:
                for k in MODE:
                    MODE[k] = False
                text, first = greedy(model, tok, ids)
                print(f"{'fp32 reference':32s} {text!r:45s} {first}", flush=True)
                continue
            attach_vllm_linears(model)
            names = list(MODE)
            for combo in itertools.product([False, True], repeat=len(names)):
                MODE.update(zip(names, combo))
                label = "bf16 " + ("+".join(n for n, on in MODE.items() if on) or "plain")
                text, first = greedy(model, tok, ids)
                print(f"{label:32s} {text!r:45s} {first}", flush=True)
    finally:
        lock.release()


if __name__ == "__main__":
    main()
