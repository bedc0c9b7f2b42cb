"""The request bodies of the HTTP API: the Python pipelines' arguments, typed and bounded (wrong types and
out-of-range settings are answered 422 before any model runs). Unknown fields are refused, so a misspelt
setting is not silently ignored.

The decoding settings of /v1/translate and /v1/generate are not written here: ``decoding_fields`` builds
them from GenerationConfig (seq2bert/decoding/config.py — type, bounds, description), with the server's own
caps on what costs time (``CAPS``), so a setting added there is served too."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from seq2bert.decoding.config import TEXT_DEFAULTS, options

# what one request may ask for at most: the server's limits on work, beside GenerationConfig's bounds
CAPS = {"num_beams": 16, "max_new_tokens": 1024, "temperature": 100, "repetition_penalty": 100}
TRANSLATE_SETTINGS_EXCLUDED = ("max_new_tokens", "num_return_sequences")  # the translation commands' too
GENERATE_SETTINGS_EXCLUDED = ("max_len_a", "max_len_b", "num_return_sequences")


def decoding_fields(defaults: dict[str, Any], exclude: tuple[str, ...]) -> dict[str, Any]:
    """pydantic field definitions (type, Field) for the settings of GenerationConfig but ``exclude``, with
    the pipeline's ``defaults``, GenerationConfig's bounds and ``CAPS``."""
    out = {}
    for s in options():
        if s.name in exclude:
            continue
        o = s.option
        le = min((b for b in (o.le, CAPS.get(s.name)) if b is not None), default=None)
        default = defaults.get(s.name, s.default)
        out[s.name] = (s.annotation, Field(default, ge=o.ge, gt=o.gt, le=le, description=o.help))
    return out


class Base(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    model: str | None = Field(
        None, description="a loaded model's name (GET /v1/models); optional when one serves"
    )


class Classify(Base):
    texts: list[str | tuple[str, str]] = Field(
        min_length=1, description="texts, or [text, pair] sentence pairs"
    )
    top_k: int | None = Field(1, ge=1, description="the most probable labels per text (null: all of them)")


class Embed(Base):
    texts: list[str] = Field(min_length=1)
    normalize: bool | None = Field(
        None, description="L2-normalise (null: as the directory's modules.json says)"
    )


Translate = create_model(
    "Translate",
    __base__=Base,
    texts=(list[str], Field(min_length=1)),
    alignment=(bool, Field(False, description="also each translation's attention over the source")),
    **decoding_fields({"max_len_a": 1.5, "max_len_b": 10}, TRANSLATE_SETTINGS_EXCLUDED),
)


class Tag(Base):
    text: str
    aggregate: bool = Field(True, description="consecutive words of one entity grouped")


class FillMask(Base):
    text: str = Field(description="a text with the tokenizer's mask token ([MASK], RoBERTa's <mask>)")
    top_k: int = Field(5, ge=1, le=100)


class QA(Base):
    question: str
    context: str
    max_answer_length: int = Field(30, ge=1, le=512, description="the longest answer, in tokens")


Generate = create_model(
    "Generate",
    __base__=Base,
    prompt=(str, ...),
    **decoding_fields(TEXT_DEFAULTS, GENERATE_SETTINGS_EXCLUDED),
)


class Attention(Base):
    text: str
    pair: str | None = Field(None, description="a second segment (an encoder's sentence pair)")
    max_tokens: int = Field(
        128, ge=1, le=512, description="the first tokens shown (the answer grows with their square)"
    )
    layer: int | None = Field(
        None, ge=-64, le=63, description="one layer (from 0; -1 the last) instead of every layer"
    )
