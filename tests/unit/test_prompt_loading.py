"""agents.prompts.load_prompt: the one way agents read their prompt files."""
from __future__ import annotations

from importlib.resources import files

import pytest

from agents.prompts import load_prompt

PROMPT_NAMES = sorted(p.name[:-4] for p in files("agents.prompts").iterdir() if p.name.endswith(".txt"))


def test_every_agent_prompt_is_shipped():
    assert {"mee", "verify", "knl_system", "knl_user", "generate_system", "generate_user", "direct_system",
            "direct_user", "hyde_system", "hyde_user"} <= set(PROMPT_NAMES)


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_raw_text_is_returned_without_values(name):
    text = load_prompt(name)
    assert text.strip()
    assert text == files("agents.prompts").joinpath(f"{name}.txt").read_text(encoding="utf-8")


def test_placeholders_are_filled():
    text = load_prompt("hyde_user", presentation="a 9-year-old with wheeze")
    assert "a 9-year-old with wheeze" in text and "$presentation" not in text


def test_missing_value_names_the_placeholder():
    with pytest.raises(KeyError, match="presentation"):
        load_prompt("hyde_user", unrelated="x")


@pytest.mark.parametrize("bad", ["../secrets", "a/b", "", "verify.txt"])
def test_names_are_plain_words(bad):
    with pytest.raises(ValueError):
        load_prompt(bad)


def test_unknown_prompt():
    with pytest.raises(FileNotFoundError, match="no_such_prompt"):
        load_prompt("no_such_prompt")


def test_llm_package_re_exports_the_loader():
    from agents.llm import load_prompt as from_llm

    assert from_llm is load_prompt
