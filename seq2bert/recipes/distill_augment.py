"""Where TinyBERT's augmentation (data/augment.py) finds the words that may replace a word: a masked LM's
K most probable words at its position, or its K nearest words in a model's input embedding space.

TinyBERT asks BERT's masked LM for a word of a single WordPiece and GloVe for a word of several. GloVe is
not shipped here: a word of several pieces — and, without a masked LM (all-MiniLM-L6-v2 has none), every
word — gets the nearest whole words to the mean of its pieces' input embeddings, by cosine (a marked
departure). Candidates are whole words of the vocabulary (letters only, not a continuation piece), never
the word itself; each is computed once and kept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from seq2bert.data.word_pieces import continuation_ids
from seq2bert.errors import ConfigError
from seq2bert.models import registry


def whole_words(tok) -> list[int]:
    """The ids of the vocabulary's whole words: letters only, not a continuation piece, not a special."""
    continuation = set(continuation_ids(tok.backend))
    out = []
    for i in range(tok.vocab_size):
        t = tok.id_to_token(i) or ""
        if i not in continuation and t.lstrip("▁Ġ").isalpha():
            out.append(i)
    return out


def word_text(tok, i: int) -> str:
    return (tok.id_to_token(i) or "").lstrip("▁Ġ")


class Neighbours:
    """The k whole words nearest to a word's (mean) input embedding, by cosine."""

    def __init__(self, embeddings: torch.Tensor, tok, k: int):
        self.tok, self.k = tok, k
        self.ids = torch.tensor(whole_words(tok))
        self.E = F.normalize(embeddings.detach().float(), dim=-1)  # (V, E)
        self.cache: dict[str, list[str]] = {}

    def __call__(self, words: list[str], i: int) -> list[str]:
        word = words[i]
        if word not in self.cache:
            pieces = self.tok.encode(word, add_special_tokens=False).ids
            if not pieces:
                return []
            query = F.normalize(self.E[pieces].mean(0), dim=-1)
            sims = self.E[self.ids] @ query  # (n,)
            top = self.ids[sims.topk(min(self.k + len(pieces), len(self.ids))).indices].tolist()
            self.cache[word] = [word_text(self.tok, j) for j in top if j not in pieces][: self.k]
        return self.cache[word]


class MaskedLMCandidates:
    """The k most probable whole words a masked LM predicts at a single-piece word's position (masked); other
    words from ``fallback``."""

    def __init__(self, model: nn.Module, tok, k: int, fallback: Neighbours, device):
        self.model, self.tok, self.k, self.fallback, self.device = model.eval(), tok, k, fallback, device
        self.allowed = torch.zeros(tok.vocab_size, dtype=torch.bool)
        self.allowed[whole_words(tok)] = True
        self.cache: dict[tuple[tuple[str, ...], int], list[str]] = {}

    @torch.no_grad()
    def __call__(self, words: list[str], i: int) -> list[str]:
        if len(self.tok.encode(words[i], add_special_tokens=False).ids) != 1:
            return self.fallback(words, i)
        key = (tuple(words), i)
        if key not in self.cache:
            mask = self.tok.id_to_token(self.tok.mask_token_id)
            ids = self.tok.encode(" ".join([*words[:i], mask, *words[i + 1 :]])).ids
            at = ids.index(self.tok.mask_token_id)
            out = self.model(input_ids=torch.tensor([ids], device=self.device))
            logits = (
                out.prediction_logits if getattr(out, "prediction_logits", None) is not None else out.logits
            )
            logits = logits[0, at].float().cpu()  # (V,)
            logits = logits.masked_fill(~self.allowed, float("-inf"))
            original = self.tok.encode(words[i], add_special_tokens=False).ids[0]
            logits[original] = float("-inf")
            self.cache[key] = [word_text(self.tok, j) for j in logits.topk(self.k).indices.tolist()]
        return self.cache[key]


def candidates_for(cfg, teacher: nn.Module, tok, base_model, device):
    """The candidate function of ``cfg`` (AugmentConfig): a masked LM's (cfg.mlm, loaded with the registry)
    or the teacher's embeddings' neighbours."""
    neighbours = Neighbours(base_model(teacher).embeddings.word_embeddings.weight, tok, cfg.k)
    if not cfg.mlm:
        return neighbours
    model, mlm_tok = registry.load(cfg.mlm, head="masked_lm", device=device)
    if mlm_tok is None or mlm_tok.backend.get_vocab() != tok.backend.get_vocab():
        raise ConfigError(f"augment.mlm: {cfg.mlm} has another vocabulary than the teacher's")
    return MaskedLMCandidates(model, tok, cfg.k, neighbours, device)
