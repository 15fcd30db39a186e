"""The LLM provider registry (agents/llm/providers), the local provider's settings, and the CLI flags that name a
provider (``--llm local``). Nothing here starts a model server: the errors are raised before one would start."""
from __future__ import annotations

import argparse
import importlib
import re
import tomllib
from pathlib import Path

import pytest

from agents.llm import LLMConfig, load_llm_config
from agents.llm import providers
from agents.llm.providers import PROVIDERS, Provided, ProviderError, ProviderOptions, local
from agents.llm.server import LLAMA_CPP_REQUIREMENT, LocalServerError, check_installed, missing_modules
from clinicalrag.cli import main
from clinicalrag.llm_options import provider_args

PROJECT = Path(__file__).resolve().parents[2]


def test_every_registered_provider_is_one_module_with_provide():
    assert "local" in providers.names()
    for name, target in PROVIDERS.items():
        mod = importlib.import_module(target)
        assert callable(mod.provide), name


def test_an_unknown_provider_names_the_known_ones():
    with pytest.raises(ProviderError, match=r"unknown LLM provider 'nope': choose from .*local"):
        providers.provide("nope")


def test_the_provider_sets_the_endpoint_and_fills_only_unset_settings():
    user = load_llm_config({"max_tokens": 64}, environ={
        "CLINICALRAG_LLM_BASE_URL": "https://api.example.org/v1", "CLINICALRAG_LLM_MODEL": "big-model",
        "CLINICALRAG_LLM_API_KEY": "sk-secret", "CLINICALRAG_LLM_TIMEOUT": "30", "CLINICALRAG_LLM_CACHE_PATH": "c.db"})
    got = Provided(base_url="http://127.0.0.1:1234/v1", model="tiny", defaults={"timeout": 600.0, "max_retries": 0}
                   ).apply(user)
    assert (got.base_url, got.model, got.api_key) == ("http://127.0.0.1:1234/v1", "tiny", "not-needed")
    assert got.timeout == 30.0                        # the user's setting wins over the provider's default
    assert got.max_retries == 0                       # unset by the user: the provider's default
    assert got.max_tokens == 64 and got.cache_path == "c.db"
    assert Provided(base_url="http://x/v1", model="m").apply(LLMConfig()).timeout == LLMConfig().timeout


def test_local_settings_flags_beat_environment_beat_defaults(tmp_path):
    env = {local.ENV_GGUF: str(tmp_path / "env.gguf"), local.ENV_THREADS: "3", local.ENV_CTX: "4096"}
    s = local.LocalSettings.resolve(ProviderOptions(), environ=env)
    assert (s.model_path, s.threads, s.n_ctx) == (tmp_path / "env.gguf", 3, 4096)
    s = local.LocalSettings.resolve(ProviderOptions(model_path=tmp_path / "flag.gguf", threads=1, n_ctx=2048),
                                    environ=env)
    assert (s.model_path, s.threads, s.n_ctx) == (tmp_path / "flag.gguf", 1, 2048)
    s = local.LocalSettings.resolve(ProviderOptions(), environ={})
    assert s.model_path is None and s.threads >= 1 and s.n_ctx == 8192 and s.ready_timeout == 180
    with pytest.raises(ProviderError, match="CLINICALRAG_LOCAL_THREADS must be a whole number"):
        local.LocalSettings.resolve(ProviderOptions(), environ={local.ENV_THREADS: "many"})
    with pytest.raises(ProviderError, match="at least 1"):
        local.LocalSettings.resolve(ProviderOptions(threads=0), environ={})


def test_local_model_file_checks(tmp_path):
    def settings(path):
        return local.LocalSettings.resolve(ProviderOptions(model_path=path), environ={})

    with pytest.raises(ProviderError, match="model file not found"):
        local.model_file(settings(tmp_path / "missing.gguf"))
    (tmp_path / "notes.gguf").write_text("not a model")
    with pytest.raises(ProviderError, match="is not a GGUF model file"):
        local.model_file(settings(tmp_path / "notes.gguf"))
    (tmp_path / "My-Model.Q4.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    assert local.model_file(settings(tmp_path / "My-Model.Q4.gguf")) == (tmp_path / "My-Model.Q4.gguf", "My-Model.Q4")
    qwen = tmp_path / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"   # the default model, wherever it is, keeps its name
    qwen.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert local.model_file(settings(qwen)) == (qwen, "qwen2.5-coder-1.5b-instruct")


def test_missing_llama_cpp_says_how_to_install_it():
    with pytest.raises(LocalServerError) as err:
        check_installed(("json", "clinicalrag_no_such_module_xyz"))
    msg = str(err.value)
    assert "missing: clinicalrag_no_such_module_xyz" in msg and "make install-llm" in msg
    assert f"pip install '{LLAMA_CPP_REQUIREMENT}'" in msg
    assert missing_modules(("json",)) == []


def test_the_install_command_matches_the_makefile_and_pyproject():
    extra = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["llm-server"]
    assert LLAMA_CPP_REQUIREMENT in extra
    assert f"'{LLAMA_CPP_REQUIREMENT}'" in (PROJECT / "Makefile").read_text()


@pytest.mark.parametrize("argv, message", [
    (["ask", "--llm", "nope", "fever"], "unknown LLM provider 'nope' for --llm: choose from local"),
    (["ask", "--llm", "local", "--no-llm", "fever"], "--no-llm contradicts --llm local"),
    (["ask", "--llm-threads", "2", "fever"], "--llm-threads apply to --llm local"),
    (["ask", "--llm", "local", "--llm-base-url", "http://127.0.0.1:9/v1", "fever"], "leave out --llm-base-url"),
    (["ask", "--llm-local-gguf", "/nonexistent/model.gguf", "fever"], None),
    (["bench", "run", "--dataset", "cases", "--llm", "local", "--no-llm"], "--no-llm contradicts --llm local"),
    (["demo", "--llm", "nope"], "unknown LLM provider 'nope'"),
])
def test_contradictory_llm_flags_are_user_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    if message is None:   # a missing model file (or, without llama.cpp installed, how to install it)
        message = "model file not found: /nonexistent/model.gguf" if not missing_modules() else "make install-llm"
    assert message in err, err


def test_provider_flags_are_passed_on_to_a_child_command():
    ns = argparse.Namespace(llm=None, llm_local_gguf="/m/x.gguf", llm_threads=2, llm_ctx=None, no_llm=False)
    assert provider_args(ns) == ["--llm", "local", "--llm-local-gguf", "/m/x.gguf", "--llm-threads", "2"]
    assert provider_args(argparse.Namespace(llm=None)) == []


def test_the_runner_error_names_the_flag_that_exists():
    src = (PROJECT / "clinicalrag" / "bench" / "runner.py").read_text()
    assert re.search(r"--llm local", src)
    from clinicalrag.cli import build_parser

    args = build_parser().parse_args(["bench", "run", "--dataset", "cases", "--llm", "local"])
    assert args.llm == "local"


def test_prepare_checks_the_install_and_the_model_without_starting_anything(tmp_path):
    """What `clinicalrag demo --llm local` does before its answer stage."""
    model = tmp_path / "My-Model.Q4.gguf"
    model.write_bytes(b"GGUF" + b"\x00" * 2000)
    if missing_modules():
        with pytest.raises(ProviderError, match="make install-llm"):
            providers.prepare("local", ProviderOptions(model_path=model))
        return
    from agents.llm import server

    shared, running = dict(server._SHARED), set(server._RUNNING)   # other tests' servers may be up already
    assert providers.prepare("local", ProviderOptions(model_path=model)) == f"My-Model.Q4: {model} (0.00 GB)"
    assert dict(server._SHARED) == shared and set(server._RUNNING) == running   # nothing new started
    with pytest.raises(ProviderError, match="model file not found"):
        providers.prepare("local", ProviderOptions(model_path=tmp_path / "nothing.gguf"))
