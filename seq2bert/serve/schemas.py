"""The request bodies of the HTTP API: the Python pipelines' arguments, typed and bounded (wrong types and
out-of-range settings are answered 422 before any model runs). Unknown fields are refused, so a misspelt
setting is not silently ignored."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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


class Translate(Base):
    texts: list[str] = Field(min_length=1)
    num_beams: int = Field(1, ge=1, le=16, description="1: greedy; more: beam search")
    alignment: bool = Field(False, description="also each translation's attention over the source")


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


class Generate(Base):
    prompt: str
    max_new_tokens: int = Field(50, ge=1, le=1024)
    do_sample: bool = False
    temperature: float = Field(1.0, gt=0, le=100)
    top_k: int = Field(50, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    num_beams: int = Field(1, ge=1, le=16)
    repetition_penalty: float = Field(1.0, gt=0, le=100)
    seed: int | None = None


class Attention(Base):
    text: str
    pair: str | None = Field(None, description="a second segment (an encoder's sentence pair)")
