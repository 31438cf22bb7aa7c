"""A simulated vLLM server on a simulated CUDA GPU, for the GPU dry run (tests/gpu_dry/).

Started by path, with the arguments the guide would give vLLM's API server. It prints a start-up
log in vLLM 0.32's CUDA wording (the lines `startup_log.parse_startup` reads: gpu_worker.py's
"Available KV cache memory", kv_cache_utils.py's "GPU KV cache size", gpu_model_runner.py's "Model
loading took"), refuses what vLLM on one GPU refuses (a world size above the GPU count, a KV cache
too small for one request), and then serves the endpoints the guide calls: /health, /version,
/v1/models, /metrics, /server_info, /reset_prefix_cache, /v1/completions (streamed or not) and
/v1/chat/completions. A small scheduler thread batches the requests (max_num_seqs, the token
budget, KV blocks, prefix-cache hits by block hash) so the gauges move like an engine's.

Every figure it produces is made up: the dry run checks that each notebook's GPU path runs, never
what it measures. Standard library only (plus `tokenizers` where the model folder has one).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import queue
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GPU_GIB = float(os.environ.get("GUIDE_SIM_GPU_GIB", 140.0))  # an H200 reports about 140 GiB
GPU_COUNT = int(os.environ.get("GUIDE_SIM_GPU_COUNT", 1))
VERSION = "0.32.0"
GIB = 2**30


def log(proc: str, text: str, level: str = "INFO") -> None:
    stamp = time.strftime("%m-%d %H:%M:%S")
    print(f"({proc} pid={os.getpid()}) {level} {stamp} [simulated.py:1] {text}", flush=True)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--max-model-len", type=int, default=2048)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--max-num-seqs", type=int, default=None)  # unset: 1024 on an H100/H200, lowered to the budget
    p.add_argument("--max-num-batched-tokens", type=int, default=8192)
    p.add_argument("--enable-chunked-prefill", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--long-prefill-token-threshold", type=int, default=0)
    p.add_argument("--max-num-queued-reqs", type=int, default=None)
    p.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--num-gpu-blocks-override", type=int, default=None)
    p.add_argument("--enforce-eager", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--compilation-config", default=None)
    p.add_argument("--kv-cache-memory-bytes", type=int, default=None)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--quantization", default=None)
    p.add_argument("--tensor-parallel-size", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", type=int, default=1)
    p.add_argument("--data-parallel-size", type=int, default=1)
    p.add_argument("--distributed-executor-backend", default=None)
    p.add_argument("--cpu-offload-gb", type=float, default=0.0)
    p.add_argument("--enable-log-requests", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    args, unknown = p.parse_known_args(argv)
    if unknown:
        fail(f"ValueError: unrecognized arguments: {' '.join(unknown)}")
    return args


def fail(line: str) -> None:
    print('Traceback (most recent call last):\n  File "simulated.py", line 1, in <module>', flush=True)
    print(line, flush=True)
    sys.exit(1)


class Model:
    """What the engine would read from the model folder: KV bytes per token and the checkpoint's size."""

    def __init__(self, folder: str, args: argparse.Namespace):
        path = Path(folder)
        cfg = json.loads((path / "config.json").read_text()) if (path / "config.json").exists() else {}
        self.layers = int(cfg.get("num_hidden_layers", 30))
        heads = int(cfg.get("num_attention_heads", 9))
        self.kv_heads = int(cfg.get("num_key_value_heads", heads))
        self.head_dim = int(cfg.get("head_dim") or int(cfg.get("hidden_size", 576)) // heads)
        self.architecture = (cfg.get("architectures") or ["LlamaForCausalLM"])[0]
        files = list(path.glob("*.safetensors"))
        self.checkpoint_gib = sum(f.stat().st_size for f in files) / GIB if files else 0.25
        dtype = args.dtype if args.dtype != "auto" else "bfloat16"
        self.kv_bytes = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}.get(
            args.kv_cache_dtype, 4 if dtype == "float32" else 2
        )
        self.tokenizer = None
        if (path / "tokenizer.json").exists():
            try:
                from tokenizers import Tokenizer

                self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            except Exception:  # noqa: BLE001 - a rough count does as well here
                self.tokenizer = None

    def bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * self.kv_bytes

    def encode(self, prompt) -> list[int]:
        if isinstance(prompt, list):
            return [int(t) for t in prompt]
        if self.tokenizer is not None:
            return self.tokenizer.encode(prompt, add_special_tokens=False).ids
        return [hash(w) % 49152 for w in str(prompt).split()]

    def decode(self, ids: list[int]) -> str:
        if self.tokenizer is not None:
            return self.tokenizer.decode(ids)
        return " ".join(f"t{i}" for i in ids)


class Request:
    def __init__(self, ids: list[int], max_tokens: int, seqs: int):
        self.ids, self.max_tokens, self.seqs = ids, max_tokens, seqs
        self.computed = 0  # prompt tokens computed (or found cached)
        self.generated = 0
        self.blocks = 0
        self.out: queue.Queue = queue.Queue()
        self.admitted = False


class Engine:
    """vLLM's V1 scheduler in miniature: a token budget per step, decodes first, then new requests
    while seats and KV blocks last, preemption (recompute) when a decode finds no free block."""

    def __init__(self, args, model: Model, num_blocks: int):
        self.args, self.model, self.num_blocks = args, model, num_blocks
        self.waiting: collections.deque[Request] = collections.deque()
        self.running: list[Request] = []
        self.lock = threading.Condition()
        self.cached: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.counters = collections.Counter()
        self.used = 0  # KV blocks held by the running requests
        self.graphs = not args.enforce_eager
        threading.Thread(target=self.loop, daemon=True).start()

    def used_blocks(self) -> int:
        return self.used

    def submit(self, r: Request) -> None:
        with self.lock:
            self.waiting.append(r)
            self.lock.notify()

    def _hashes(self, ids: list[int]) -> list[str]:
        size, out, h = self.args.block_size, [], ""
        for i in range(0, len(ids) - 1 - (len(ids) - 1) % size, size):  # full blocks, never the last token
            h = hashlib.sha1((h + ",".join(map(str, ids[i:i + size]))).encode()).hexdigest()
            out.append(h)
        return out

    def reset_cache(self) -> None:
        with self.lock:
            self.cached.clear()

    def _step(self) -> tuple[int, list[Request]]:
        """One step, linear in the running requests (thousands run at once on a GPU's default seats)."""
        a, budget, tokens, done = self.args, self.args.max_num_batched_tokens, 0, []
        size = a.block_size
        keep: list[Request] = []
        queue = collections.deque(self.running)
        while queue:
            r = queue.popleft()
            if r.computed < len(r.ids):
                chunk = min(len(r.ids) - r.computed, budget)
                if a.enable_chunked_prefill or chunk == len(r.ids) - r.computed:
                    r.computed += chunk
                    budget -= chunk
                    tokens += chunk
                keep.append(r)
                continue
            need = -(-(len(r.ids) + r.generated + 1) // size) * r.seqs
            while need > r.blocks and self.used + (need - r.blocks) > self.num_blocks and (queue or keep):
                victim = queue.pop() if queue else keep.pop()  # preempt the newest (recompute)
                self.used -= victim.blocks
                victim.blocks, victim.computed, victim.admitted = 0, 0, False
                self.waiting.appendleft(victim)
                self.counters["preemptions"] += 1
            if need > r.blocks and self.used + (need - r.blocks) > self.num_blocks:
                self.used -= r.blocks  # nothing left to preempt but itself
                r.blocks, r.computed, r.admitted = 0, 0, False
                self.waiting.appendleft(r)
                self.counters["preemptions"] += 1
                continue
            self.used += max(need - r.blocks, 0)
            r.blocks = max(r.blocks, need)
            r.generated += 1
            if r.generated == 1:
                self.counters["first_tokens"] += 1
            budget -= r.seqs
            tokens += r.seqs
            self.counters["generation_tokens"] += r.seqs
            r.out.put(r.generated)
            if r.generated >= r.max_tokens:
                self.used -= r.blocks
                done.append(r)
            else:
                keep.append(r)
        self.running = keep
        while self.waiting and len(self.running) < a.max_num_seqs and budget > 0:
            r = self.waiting[0]
            blocks = -(-len(r.ids) // size) * r.seqs
            if self.used + blocks > self.num_blocks:
                break
            self.waiting.popleft()
            hashes = self._hashes(r.ids)
            hits = 0
            if a.enable_prefix_caching:
                for h in hashes:
                    if h not in self.cached:
                        break
                    hits += 1
                for h in hashes:
                    self.cached[h] = None
                    self.cached.move_to_end(h)
                while len(self.cached) > self.num_blocks:
                    self.cached.popitem(last=False)
            self.counters["prefix_cache_queries"] += len(r.ids)
            self.counters["prefix_cache_hits"] += hits * size
            self.counters["prompt_tokens"] += len(r.ids)
            r.computed, r.blocks, r.admitted = hits * size, blocks, True
            self.used += blocks
            chunk = min(len(r.ids) - r.computed, budget)
            if not a.enable_chunked_prefill and chunk < len(r.ids) - r.computed:
                chunk = 0
            r.computed += chunk
            budget -= chunk
            tokens += chunk
            self.running.append(r)
        return tokens, done

    def loop(self) -> None:
        while True:
            with self.lock:
                while not self.waiting and not self.running:
                    self.lock.wait()
                tokens, done = self._step()
            base = 0.0006 if self.graphs else 0.0015
            time.sleep(base + 0.000004 * tokens)
            for r in done:
                r.out.put(None)

    def metrics(self) -> str:
        with self.lock:
            running, waiting, used = len(self.running), len(self.waiting), self.used_blocks()
        labels = {
            "block_size": self.args.block_size,
            "num_gpu_blocks": self.num_blocks,
            "cache_dtype": self.args.kv_cache_dtype,
            "enable_prefix_caching": self.args.enable_prefix_caching,
            "gpu_memory_utilization": self.args.gpu_memory_utilization,
            "kv_cache_size_tokens": self.num_blocks * self.args.block_size,
            "kv_cache_max_concurrency": round(self.concurrency(), 2),
        }
        label_text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        name = f'model_name="{self.args.model}",engine="0"'
        lines = [
            "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
            "# TYPE vllm:cache_config_info gauge",
            f"vllm:cache_config_info{{{label_text}}} 1.0",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{name}}} {running}",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{name}}} {waiting}",
            "# TYPE vllm:kv_cache_usage_perc gauge",
            f"vllm:kv_cache_usage_perc{{{name}}} {used / max(self.num_blocks, 1)}",
        ]
        for counter in (
            "prefix_cache_queries",
            "prefix_cache_hits",
            "num_preemptions",
            "prompt_tokens",
            "generation_tokens",
        ):
            value = self.counters["preemptions" if counter == "num_preemptions" else counter]
            # the TYPE line names the sample with its _total, as vLLM writes it (tests/data/metrics_idle.txt):
            # without it Prometheus's parser puts the sample in a family of its own and the guide reads 0
            lines += [f"# TYPE vllm:{counter}_total counter", f"vllm:{counter}_total{{{name}}} {float(value)}"]
        lines += ["# TYPE vllm:time_to_first_token_seconds histogram",
                  f'vllm:time_to_first_token_seconds_bucket{{{name},le="+Inf"}} {float(self.counters["first_tokens"])}',
                  f"vllm:time_to_first_token_seconds_count{{{name}}} {float(self.counters['first_tokens'])}",
                  f"vllm:time_to_first_token_seconds_sum{{{name}}} 0.0"]
        return "\n".join(lines) + "\n"

    def concurrency(self) -> float:
        per = -(-self.args.max_model_len // self.args.block_size)
        return self.num_blocks / per


def start(args) -> Engine:
    """The start-up log, in the order vLLM prints it; exits like vLLM where it would refuse."""
    log("APIServer", f"vLLM API server version {VERSION} (simulated CUDA GPU: the guide's GPU dry run)")
    model = Model(args.model, args)
    log("APIServer", f"Resolved architecture: {model.architecture}")
    if args.max_num_seqs is None:  # EngineArgs._set_default_max_num_seqs_and_batched_tokens_args
        args.max_num_seqs = min(1024, args.max_num_batched_tokens)
    if args.max_num_batched_tokens < args.max_num_seqs:  # SchedulerConfig.verify_max_model_len
        fail(f"ValueError: max_num_batched_tokens ({args.max_num_batched_tokens}) must be greater than or equal to "
             f"max_num_seqs ({args.max_num_seqs}).")
    world = args.tensor_parallel_size * args.pipeline_parallel_size
    if world * args.data_parallel_size > GPU_COUNT:
        fail(
            f"ValueError: World size ({world * args.data_parallel_size}) is larger than the number of available "
            f"GPUs ({GPU_COUNT}) in this node. If this is intentional and you are using:"
        )
    log(
        "EngineCore",
        f"Initializing a V1 LLM engine (v{VERSION}) with config: model='{args.model}', "
        f"max_seq_len={args.max_model_len}, device_config=cuda, kv_cache_dtype={args.kv_cache_dtype}, "
        f"enforce_eager={args.enforce_eager}, enable_prefix_caching={args.enable_prefix_caching}",
    )
    time.sleep(0.2)
    log("EngineCore", f"Starting to load model {args.model}...")
    log(
        "EngineCore",
        f"Filesystem type for checkpoints: EXT4. Checkpoint size: {model.checkpoint_gib:.2f} GiB. "
        "Available RAM: 100.00 GiB.",
    )
    weights = max(model.checkpoint_gib / world - args.cpu_offload_gb, 0.0)
    log("EngineCore", "Loading weights took 0.11 seconds")
    log("EngineCore", f"Model loading took {weights:.2f} GiB memory and 0.512345 seconds")
    graphs = 0.0 if args.enforce_eager else 0.25
    requested = args.gpu_memory_utilization * GPU_GIB
    available = args.kv_cache_memory_bytes / GIB if args.kv_cache_memory_bytes else requested - weights - 0.6 - graphs
    if args.kv_cache_memory_bytes and args.num_gpu_blocks_override is None:  # Worker.determine_available_memory
        log(
            "EngineCore",
            f"Initial free memory {GPU_GIB - 0.5:.2f} GiB, reserved {available:.2f} GiB memory for KV "
            "Cache as specified by kv_cache_memory_bytes config and skipped memory profiling.",
        )
        num_blocks = int(available * GIB // (model.bytes_per_token() * args.block_size))
    elif args.num_gpu_blocks_override is None:
        log("EngineCore", f"Available KV cache memory: {available:.2f} GiB")
        if available <= 0:
            fail(
                "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                "when initializing the engine."
            )
        num_blocks = int(available * GIB // (model.bytes_per_token() * args.block_size))
    else:
        num_blocks = args.num_gpu_blocks_override
        log("EngineCore", f"Overriding num_gpu_blocks={num_blocks} with num_gpu_blocks_override={num_blocks}")
    need = -(-args.max_model_len // args.block_size)
    if num_blocks < need:
        needed = need * args.block_size * model.bytes_per_token() / GIB
        fail(
            f"ValueError: To serve at least one request with the model's max seq len ({args.max_model_len}), "
            f"({needed:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
            f"({num_blocks * args.block_size * model.bytes_per_token() / GIB:.2f} GiB). Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
        )
    engine = Engine(args, model, num_blocks)
    tokens = int(engine.concurrency() * args.max_model_len)
    log(
        "EngineCore",
        f"GPU KV cache size: {tokens:,} tokens, Maximum concurrency for {args.max_model_len:,} "
        f"tokens per request: {engine.concurrency():.2f}x",
    )
    log("EngineCore", "init engine (profile, create kv cache, warmup model) took 1.23 s")
    return engine


def server_info(args, engine: Engine) -> dict:
    mode = 0 if args.enforce_eager else 3
    if args.compilation_config:
        try:
            mode = json.loads(args.compilation_config).get("mode", mode)
        except ValueError:
            pass
    return {
        "vllm_config": {
            "model_config": {
                "max_model_len": args.max_model_len,
                "enforce_eager": args.enforce_eager,
                "dtype": "torch.bfloat16" if args.dtype == "auto" else f"torch.{args.dtype}",
                "quantization": args.quantization,
                "seed": args.seed,
            },
            "cache_config": {
                "gpu_memory_utilization": args.gpu_memory_utilization,
                "block_size": args.block_size,
                "enable_prefix_caching": args.enable_prefix_caching,
                "num_gpu_blocks_override": args.num_gpu_blocks_override,
                "kv_cache_memory_bytes": args.kv_cache_memory_bytes,
                "cache_dtype": args.kv_cache_dtype,
                "num_gpu_blocks": engine.num_blocks,
                "kv_cache_size_tokens": int(engine.concurrency() * args.max_model_len),
                "kv_cache_max_concurrency": engine.concurrency(),
            },
            "scheduler_config": {
                "max_num_seqs": args.max_num_seqs,
                "max_num_batched_tokens": args.max_num_batched_tokens,
                "enable_chunked_prefill": args.enable_chunked_prefill,
                "long_prefill_token_threshold": args.long_prefill_token_threshold,
                "max_num_queued_reqs": args.max_num_queued_reqs,
            },
            "parallel_config": {
                "tensor_parallel_size": args.tensor_parallel_size,
                "pipeline_parallel_size": args.pipeline_parallel_size,
                "data_parallel_size": args.data_parallel_size,
                "distributed_executor_backend": args.distributed_executor_backend or "uni",
            },
            "offload_config": {"uva": {"cpu_offload_gb": args.cpu_offload_gb}},
            "compilation_config": {"mode": mode},
        }
    }


def make_handler(args, engine: Engine):
    model = engine.model
    rng_seed = args.model  # a quantized copy (another folder) answers a little differently

    def answer_ids(prompt_ids: list[int], count: int) -> list[int]:
        rng = random.Random(hashlib.sha1((rng_seed + str(prompt_ids[-8:])).encode()).hexdigest())
        return [rng.randrange(100, 20000) for _ in range(count)]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *a):  # quiet: the log is the engine's
            pass

        def _json(self, obj, status=200):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/health":
                return self._json({})
            if path == "/version":
                return self._json({"version": VERSION})
            if path == "/v1/models":
                return self._json(
                    {
                        "object": "list",
                        "data": [{"id": args.model, "object": "model", "max_model_len": args.max_model_len}],
                    }
                )
            if path == "/server_info":
                return self._json(server_info(args, engine))
            if path == "/metrics":
                body = engine.metrics().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                return self.wfile.write(body)
            self._json({"error": "not found"}, 404)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            path = self.path.split("?")[0]
            if path == "/reset_prefix_cache":
                engine.reset_cache()
                return self._json({})
            if path not in ("/v1/completions", "/v1/chat/completions"):
                return self._json({"error": "not found"}, 404)
            chat = path.endswith("chat/completions")
            prompt = " ".join(m.get("content", "") for m in body.get("messages", [])) if chat else body.get("prompt")
            ids = model.encode(prompt) or [1]
            max_tokens = int(body.get("max_tokens") or 16)
            if len(ids) + max_tokens > args.max_model_len:
                return self._json(
                    {
                        "object": "error",
                        "type": "BadRequestError",
                        "code": 400,
                        "message": f"This model's maximum context length is {args.max_model_len} tokens. "
                        f"However, you requested {len(ids) + max_tokens} tokens.",
                    },
                    400,
                )
            seqs = int(body.get("n") or 1)
            r = Request(ids, max_tokens, seqs)
            engine.submit(r)
            out = answer_ids(ids, max_tokens)
            if body.get("stream"):
                return self._stream(r, out, body)
            while r.out.get() is not None:
                pass
            text = model.decode(out)
            usage = {
                "prompt_tokens": len(ids),
                "completion_tokens": max_tokens * seqs,
                "total_tokens": len(ids) + max_tokens * seqs,
            }
            if chat:
                logprobs = None
                if body.get("logprobs"):
                    logprobs = {"content": [{"token": model.decode([t]), "logprob": -0.5 - (t % 7) / 10} for t in out]}
                choices = [
                    {
                        "index": i,
                        "message": {"role": "assistant", "content": text},
                        "logprobs": logprobs,
                        "finish_reason": "length",
                    }
                    for i in range(seqs)
                ]
            else:
                choices = [{"index": i, "text": text, "finish_reason": "length"} for i in range(seqs)]
                if body.get("prompt_logprobs") is not None:
                    choices[0]["prompt_logprobs"] = [None] + [
                        {str(t): {"logprob": -1.0 - (t % 13) / 10, "rank": 1, "decoded_token": model.decode([t])}}
                        for t in ids[1:]
                    ]
            self._json(
                {
                    "id": "cmpl-sim",
                    "object": "chat.completion" if chat else "text_completion",
                    "model": args.model,
                    "choices": choices,
                    "usage": usage,
                }
            )

        def _stream(self, r: Request, out: list[int], body: dict):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            while (n := r.out.get()) is not None:
                chunk = {
                    "id": "cmpl-sim",
                    "object": "text_completion",
                    "model": args.model,
                    "choices": [{"index": 0, "text": model.decode([out[n - 1]]), "finish_reason": None}],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            usage = {
                "prompt_tokens": len(r.ids),
                "completion_tokens": r.max_tokens,
                "total_tokens": len(r.ids) + r.max_tokens,
            }
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()

    return Handler


def main(argv: list[str]) -> None:
    args = parse(argv)
    engine = start(args)
    ThreadingHTTPServer.request_queue_size = 4096  # a GPU's load sends a thousand requests at once (default: 5)
    httpd = ThreadingHTTPServer((args.host, args.port), make_handler(args, engine))
    httpd.daemon_threads = True
    log("APIServer", f"Starting vLLM API server 0 on http://{args.host}:{args.port}")
    log("APIServer", "Application startup complete.")
    httpd.serve_forever()


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)
    guard = Path(__file__).resolve().parents[2] / "helpers" / "engine" / "_launch.py"
    namespace: dict = {"__name__": "guide_launch"}
    exec(compile(guard.read_text(), str(guard), "exec"), namespace)  # its guard: gone when its users are
    threading.Thread(
        target=namespace["_guard"],
        daemon=True,
        args=(
            int(os.environ.get("GUIDE_PARENT_PID", os.getppid())),
            os.environ.get("GUIDE_ENGINE_RECORD", "/nonexistent"),
            os.environ.get("GUIDE_ENGINE_TURN", "/tmp/vllm-guide-engine.turn"),
            float(os.environ.get("GUIDE_ENGINE_GRACE", 60)),
        ),
    ).start()
    main(sys.argv[1:])
