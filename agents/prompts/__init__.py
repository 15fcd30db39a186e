"""Prompt texts of the agents, one ``<name>.txt`` file each in this folder, and :func:`load_prompt`."""
from __future__ import annotations

import re
import string
from importlib.resources import files
from typing import Any

_NAME = re.compile(r"[A-Za-z0-9_-]+")


def _read(name: str) -> str:
    res = files(__name__).joinpath(f"{name}.txt")
    if not res.is_file():
        raise FileNotFoundError(f"prompt not found: agents/prompts/{name}.txt")
    return res.read_text(encoding="utf-8")


def load_prompt(name: str, /, **values: Any) -> str:
    """The text of ``agents/prompts/<name>.txt``, placeholders filled from ``values``.

    Substitution uses ``string.Template`` (``$name`` / ``${name}``), so braces in prompts (JSON examples) need
    no escaping; ``$$`` is a literal ``$``. Without ``values`` the raw text is returned; with ``values``, a
    placeholder left without a value raises ``KeyError`` naming it.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"invalid prompt name: {name!r}")
    text = _read(name)
    if not values:
        return text
    try:
        return string.Template(text).substitute({k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise KeyError(f"prompt {name!r} needs a value for ${exc.args[0]}") from None
    except ValueError as exc:  # a stray "$" in the prompt file
        raise ValueError(f"prompt {name!r}: {exc}") from None


__all__ = ["load_prompt"]
