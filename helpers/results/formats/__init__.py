"""Other tools' result files, one module per tool family: `vllm` (vllm bench serve, its
--append-result files, vllm bench sweep folders, and the way back), `guidellm`, `aiperf`; `common`
holds what they share. `helpers.results.other_tools` is the one entry point that picks among them.
A new format is a new module here."""
