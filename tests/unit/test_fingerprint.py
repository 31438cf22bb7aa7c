"""The environment fingerprint that keys and pools results."""
from helpers.results import fingerprint
from helpers.results.fingerprint import env_id


def test_fingerprint_fields():
    fp = fingerprint()
    for key in ("vllm", "torch", "cpu_model", "cpu_cores", "env_id", "python", "machine_id"):
        assert key in fp, key
    assert fp["vllm"]  # vLLM is installed in the guide's venv
    assert fp["torch"]
    assert isinstance(fp["cpu_cores"], int) and fp["cpu_cores"] >= 1
    assert isinstance(fp["env_id"], str) and len(fp["env_id"]) == 12


def test_env_id_stable():
    first = fingerprint()["env_id"]
    fingerprint.cache_clear()
    assert fingerprint()["env_id"] == first
    assert env_id(fingerprint()) == first


def test_env_id_tracks_software_and_machine():
    fp = fingerprint()
    assert env_id({**fp, "vllm": "0.0.0"}) != fp["env_id"]
    assert env_id({**fp, "cpu_cores": fp["cpu_cores"] + 1}) != fp["env_id"]
    assert env_id({**fp, "python": "2.7"}) == fp["env_id"]  # not part of the id
