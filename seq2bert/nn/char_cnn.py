"""A token encoder that reads characters: the character CNN of Kim, Jernite, Sontag & Rush (2016), as the
big language models of Jozefowicz et al. (2016) and ELMo (Peters et al. 2018) read their input words.

For a token of W character ids c_1 … c_W (its spelling, padded to a fixed W)::

    e_i = E c_i ∈ R^d                                   character embeddings, E[0] = 0 (padding)
    y^k = act(max_i (w^k ∗ e)_i + b^k)                  filter k of width w_k: a convolution over the
                                                        positions, max-pooled over them (one number;
                                                        max then act = act then max: act is monotone)
    y = [y^1; …; y^K] ∈ R^F                              F = the number of filters of all widths
    y ← g ∘ relu(W_H y + b_H) + (1 − g) ∘ y,            highway layers (Srivastava et al. 2015),
        g = σ(W_T y + b_T)                              gate bias starting at −2 (mostly carried at first)
    x = W_P y + b_P ∈ R^D                                linear projection to the model's width

A token is computed alone — the same characters give the same vector in any batch, next to any padding —
and a padding token (every id 0) gives the zero vector. The max over positions makes W a fixed length
(ELMo's 50): shorter spellings are padded with a padding *character*, which has an embedding of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh}


class Highway(nn.Module):
    """y ← g ∘ relu(W_H y + b_H) + (1 − g) ∘ y, g = σ(W_T y + b_T), ``num_layers`` times: (…, F) → (…, F)."""

    def __init__(self, size: int, num_layers: int, *, gate_bias: float = -2.0):
        super().__init__()
        self.transform = nn.ModuleList(nn.Linear(size, size) for _ in range(num_layers))  # W_H, b_H
        self.gate = nn.ModuleList(nn.Linear(size, size) for _ in range(num_layers))  # W_T, b_T
        self.gate_bias = gate_bias
        for gate in self.gate:
            nn.init.constant_(gate.bias, gate_bias)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        for transform, gate in zip(self.transform, self.gate, strict=True):
            g = torch.sigmoid(gate(y))
            y = g * torch.relu(transform(y)) + (1 - g) * y
        return y


class CharacterCNN(nn.Module):
    """Character ids (B, T, W) → token vectors (B, T, D); zeros where a token is padding (all ids 0).

    ``filters``: (width, number) pairs; ``num_characters`` rows of character embeddings (id 0: padding);
    ``padding_character``: the id that fills a spelling up to W (a character with an embedding of its own),
    if there is one — windows of nothing else are computed once (see ``encode``)."""

    def __init__(
        self,
        num_characters: int,
        embedding_dim: int,
        filters: Sequence[tuple[int, int]],
        num_highway: int,
        output_dim: int,
        *,
        activation: str = "relu",
        padding_character: int | None = None,
    ):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
        self.embedding = nn.Embedding(num_characters, embedding_dim, padding_idx=0)  # E
        self.convolutions = nn.ModuleList(nn.Conv1d(embedding_dim, n, w) for w, n in filters)
        num_filters = sum(n for _, n in filters)  # F
        self.highway = Highway(num_filters, num_highway)
        self.projection = nn.Linear(num_filters, output_dim)  # W_P, b_P
        self.activation, self.padding_character = activation, padding_character
        self.max_width = max(w for w, _ in filters)
        self.register_buffer(
            "widths", torch.tensor([w for w, n in filters for _ in range(n)]), persistent=False
        )

    def filter_matrix(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every filter as one matrix over windows of the widest width K: (K·d, F), tap-major (a narrower
        filter's missing taps are zeros), and the biases (F,)."""
        K = self.max_width
        weights = [
            F.pad(conv.weight, (0, K - conv.kernel_size[0]))  # (n, d, w) → (n, d, K)
            .permute(2, 1, 0)  # (K, d, n)
            .reshape(-1, conv.out_channels)  # (K·d, n)
            for conv in self.convolutions
        ]
        return torch.cat(weights, dim=1), torch.cat([conv.bias for conv in self.convolutions])

    def encode(self, chars: torch.Tensor) -> torch.Tensor:
        """The vectors of N real tokens: chars (N, W) → (N, D).

        The convolutions of all widths are one matrix product over windows of the widest width K — the
        same sums as the filters' own convolutions (tests hold them to F.conv1d), at matrix-product speed;
        a filter's max leaves out the starts where it would run past the W characters. Windows made only
        of the padding character all have the same value c_f: it is computed once, and the product runs
        only over the starts t < L where some token has other characters (L: the longest spelling)."""
        N, W = chars.shape
        K = self.max_width
        weight, bias = self.filter_matrix()  # (K·d, F), (F,)
        L = W
        if self.padding_character is not None:
            position = torch.arange(1, W + 1, device=chars.device)
            L = max(int((chars.ne(self.padding_character) * position).amax()), 1)  # after the last real one
        seq = chars[:, : min(W, L + K - 1)]  # what the windows starting at t < L read
        e = F.pad(self.embedding(seq), (0, 0, 0, L + K - 1 - seq.size(1)))  # (N, L + K − 1, d): 0 past W
        windows = e.unfold(1, K, 1).transpose(2, 3).reshape(N, L, -1)  # (N, L, K·d): e_t … e_{t+K−1}
        z = windows @ weight + bias  # (N, L, F): every filter at every start t < L
        starts = torch.arange(L, device=chars.device)[:, None]  # (L, 1)
        z = z.masked_fill(starts > W - self.widths[None, :], float("-inf"))  # runs past the W characters
        y = z.max(dim=1).values  # (N, F)
        if L < W:  # the starts L … W − w read the padding character only
            pad = self.embedding.weight[self.padding_character].repeat(K)  # (K·d,)
            c = (pad @ weight + bias).masked_fill(L > W - self.widths, float("-inf"))  # c_f: (F,)
            y = torch.maximum(y, c)
        y = ACTIVATIONS[self.activation](y)  # act after the max (it is monotone): (N, F)
        return self.projection(self.highway(y))  # (N, D)

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        B, T, W = char_ids.shape
        if W < self.max_width:
            raise ValueError(
                f"tokens of {W} characters are narrower than the widest filter ({self.max_width})"
            )
        real = char_ids.ne(0).any(dim=-1)  # (B, T): not a padding token
        chars = char_ids[real]  # (N, W), the real tokens only
        # each distinct spelling once (a batch of text repeats its words): same vectors, less work
        distinct, index = torch.unique(chars, dim=0, return_inverse=True)  # (U, W), (N,)
        vectors = self.encode(distinct)[index]  # (N, D)
        out = vectors.new_zeros(B, T, vectors.size(-1))
        out[real] = vectors
        return out  # (B, T, D)
