"""A server the harness started, measured again as an "existing endpoint" (GUIDE_ENDPOINT):
the same kind of row, engine settings refused, a missing and a wrong key named. One start."""
import pytest

from helpers import EngineConfig, Load, experiment
from helpers.engine import remote, shared
from helpers.engine.remote import EndpointError, RemoteSettingError

pytestmark = pytest.mark.engine

KEY = "guide-test-key"


def test_a_running_server_measured_as_an_endpoint(results_dir, monkeypatch):
    # vLLM's server reads VLLM_API_KEY and then wants it on /v1/… (the harness passes its
    # environment on); its benchmark client sends $OPENAI_API_KEY, which the local path needs here.
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setattr(remote, "_connected", {})
    cfg, load = EngineConfig(), Load(num_prompts=4, input_len=64, output_len=8, max_concurrency=2)
    server = experiment.engine_for(cfg, progress=False)
    local = experiment.measure(cfg, load, progress=False)
    assert local["engine_location"] == "local" and local["completed"] == 4

    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("GUIDE_ENDPOINT", server.base_url)
    with pytest.raises(EndpointError, match="wants an API key"):
        experiment.measure(cfg, load, progress=False)
    monkeypatch.setenv("GUIDE_ENDPOINT_KEY", "not-the-key")
    with pytest.raises(EndpointError, match=r"refused the key in \$GUIDE_ENDPOINT_KEY"):
        experiment.measure(cfg, load, progress=False)
    monkeypatch.setenv("GUIDE_ENDPOINT_KEY", KEY)
    with pytest.raises(RemoteSettingError, match=r"you asked for max_num_seqs=4; .* runs with max_num_seqs="):
        experiment.measure(cfg.replace(max_num_seqs=4), load, progress=False)

    row = experiment.measure(cfg, load, progress=False)
    assert shared.live_record()["server_pid"] == server.pid and server.running, "no engine was started or stopped"
    assert row["engine_location"] == "remote" and row["endpoint_url"] == server.base_url
    assert row["key"] != local["key"] and not row["reused"]
    assert row["completed"] == 4 and row["failed"] == 0 and row["output_throughput"] > 0
    assert row["server_version"] == local["env_vllm"] and row["server_info_enabled"]
    for fact in ("kv_cache_tokens", "engine_max_num_seqs", "engine_enable_prefix_caching", "block_size"):
        assert row[fact] == local[fact], fact
    # The same figure columns as a local row; only the endpoint's own columns are added.
    added = set(row) - set(local)
    assert set(local) <= set(row) and added == set(remote.Endpoint(server.base_url).record()) - {"engine_location"}
    assert row["timeseries"], "/metrics sampled through the endpoint, with the key"
    assert row["prefix_cache_reset"] is False and local["prefix_cache_reset"] is True, \
        "a shared server's cache is left alone"
    assert KEY not in (results_dir / f"{row['env_env_id']}.jsonl").read_text(), "the key is never stored"
