"""ELMo: the bidirectional language model of Peters et al. (2018), "Deep contextualized word representations",
whose layers are a word's representations in context.

Token encoder (Sect. 3.4; Jozefowicz et al. 2016): x_k = CharCNN(characters of t_k) ∈ R^P — character
embeddings, filters of several widths max-pooled over positions, highway layers, a projection
(nn/char_cnn.py); no word embedding table, so any word has a vector.

Two language models over the same tokens t_1 … t_N (Sect. 3.1), L layers of LSTMP each (nn/lstmp.py)::

    h→_{k,1} = LSTM→_1(x_k, h→_{k−1,1})                      forward: reads t_1 … t_k
    h→_{k,j} = LSTM→_j(h→_{k,j−1}, h→_{k−1,j}) + h→_{k,j−1}   j ≥ 2, a residual connection (Sect. 3.4)
    h←_{k,j}  likewise from t_N down to t_k                  backward: its own LSTMs, the same x_k

    p(t_{k+1} | t_1 … t_k) = softmax(W_s h→_{k,L} + b_s)      one softmax Θs for both directions
    p(t_{k−1} | t_k … t_N) = softmax(W_s h←_{k,L} + b_s)

and the biLM maximises the log likelihood of both directions, Eq. 1 of Sect. 3.1:

    Σ_k [ log p(t_k | t_1 … t_{k−1}; Θx, Θ→LSTM, Θs) + log p(t_k | t_{k+1} … t_N; Θx, Θ←LSTM, Θs) ]

(``ELMoForPreTraining``'s loss is its negative over the tokens predicted, halved: the mean of the two
directions' mean cross-entropies, as bilm-tf trains; in training, over a sampled softmax of
``softmax_samples`` words, objectives/sampled_softmax.py, as bilm-tf does; evaluation uses all V). The representations of token k (Sect. 3.2):

    h_{k,0} = [x_k; x_k]                     the token layer, doubled to the 2P of the others (as bilm-tf)
    h_{k,j} = [h→_{k,j}; h←_{k,j}],  j = 1 … L

``ELMoModel`` reads sentences of words: it adds <S> and </S> around each (data/characters.py), runs both
directions over the real tokens only (the backward one from each row's last word) and returns the L + 1
layers at the words, zeros at padding. A task mixes them with nn/scalar_mix.py (Eq. 1 of Sect. 3.2).
``ELMoForPreTraining`` reads two token streams in segments with the states carried between them (truncated
back-propagation through time, recipes/lm.py): the text for the forward LM and the text reversed for the
backward LM, so both read in their own direction and carry their state forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seq2bert.data.characters import BOS_CHAR, EOS_CHAR, PAD_CHAR, batch_char_ids, boundary_char_ids, words_of
from seq2bert.models.elmo.config import ELMoConfig
from seq2bert.models.family import Family
from seq2bert.models.outputs import LayersOutput
from seq2bert.models.pretrained import SavePretrained
from seq2bert.nn.char_cnn import CharacterCNN
from seq2bert.nn.lstmp import ProjectedLSTM
from seq2bert.nn.rnn import reverse_padded
from seq2bert.objectives.cross_entropy import sequence_cross_entropy
from seq2bert.objectives.sampled_softmax import sampled_softmax_loss

LayerStates = list[tuple[torch.Tensor, torch.Tensor]]  # one LM's (r (B, P), c (B, C)) per layer
# both LMs' states as one pair, torch's layout: h (2L, B, P) and c (2L, B, C), layer j's forward LM at 2j,
# its backward LM at 2j + 1 (what train-lm carries across segments and saves with its checkpoints)
State = tuple[torch.Tensor, torch.Tensor]


# the L + 1 layers of the words (B, T, 2P): [x; x], then [h→_j; h←_j]; zeros at padding
ELMoOutput = LayersOutput


@dataclass
class BiLMOutput:
    """``loss`` = (forward_loss + backward_loss) / 2, each a mean cross-entropy; logits (B, T, V); ``state``
    after the segment."""

    loss: torch.Tensor | None
    forward_loss: torch.Tensor | None
    backward_loss: torch.Tensor | None
    forward_logits: torch.Tensor | None  # None in training with a sampled softmax
    backward_logits: torch.Tensor | None
    state: State


def join_states(forward: LayerStates, backward: LayerStates) -> State:
    pairs = [
        s for f, b in zip(forward, backward, strict=True) for s in (f, b)
    ]  # 2j: forward, 2j + 1: backward
    return torch.stack([r for r, _ in pairs]), torch.stack([c for _, c in pairs])


def split_states(state: State | None) -> tuple[LayerStates | None, LayerStates | None]:
    if state is None:
        return None, None
    h, c = state
    return [(h[k], c[k]) for k in range(0, len(h), 2)], [(h[k], c[k]) for k in range(1, len(h), 2)]


class ELMoModel(SavePretrained, nn.Module):
    """The biLM: the character CNN and the two LSTMP stacks; ``forward`` gives the layers of sentences."""

    def __init__(self, config: ELMoConfig):
        super().__init__()
        config.validate()
        self.config = c = config
        self.token_encoder = CharacterCNN(
            c.num_characters,
            c.char_embedding_dim,
            c.filters,
            c.num_highway,
            c.projection_dim,
            activation=c.activation,
            padding_character=PAD_CHAR,
        )

        def stack() -> nn.ModuleList:
            return nn.ModuleList(
                ProjectedLSTM(
                    c.projection_dim,
                    c.cell_size,
                    c.projection_dim,
                    cell_clip=c.cell_clip,
                    proj_clip=c.proj_clip,
                )
                for _ in range(c.num_layers)
            )

        self.forward_lstm, self.backward_lstm = stack(), stack()  # Θ→LSTM, Θ←LSTM
        self.dropout = nn.Dropout(c.dropout)
        W = c.max_characters_per_token
        for name, char in (("sentence_start", BOS_CHAR), ("sentence_end", EOS_CHAR)):
            self.register_buffer(name, torch.from_numpy(boundary_char_ids(char, W)), persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """bilm-tf's initialisation where it is known: character embeddings U(−1, 1), filters U(±0.05) (Kim
        et al. 2016, for ReLU), the highway and projection matrices N(0, 1/F); the LSTMs torch's
        U(±1/√C) with the forget-gate bias at 1 (TensorFlow adds 1 at run time)."""
        enc = self.token_encoder
        nn.init.uniform_(enc.embedding.weight, -1.0, 1.0)
        with torch.no_grad():
            enc.embedding.weight[0].zero_()
        for conv in enc.convolutions:
            nn.init.uniform_(conv.weight, -0.05, 0.05)
            nn.init.zeros_(conv.bias)
        num_filters = enc.projection.in_features
        for linear in [*enc.highway.transform, *enc.highway.gate, enc.projection]:
            nn.init.normal_(linear.weight, 0.0, (1.0 / num_filters) ** 0.5)
        for transform in enc.highway.transform:
            nn.init.zeros_(transform.bias)
        nn.init.zeros_(enc.projection.bias)
        C = self.config.cell_size
        for layer in [*self.forward_lstm, *self.backward_lstm]:
            layer.lstm.reset_parameters()
            with torch.no_grad():
                layer.lstm.bias_ih_l0.zero_()
                layer.lstm.bias_hh_l0.zero_()
                layer.lstm.bias_ih_l0[C : 2 * C] = 1.0  # torch's gate order i, f, g, o

    def run(self, lstms: nn.ModuleList, x: torch.Tensor, states: LayerStates | None = None):
        """One direction's stack over x (B, T, P), read left to right: every layer's outputs (B, T, P) and
        its final (r, c)."""
        layers, finals = [], []
        h = x
        for j, lstm in enumerate(lstms):
            inputs = self.dropout(h)
            out, final = lstm(inputs, None if states is None else states[j])
            h = out + inputs if self.config.residual and j > 0 else out  # the residual connection
            layers.append(h)
            finals.append(final)
        return layers, finals

    def forward(
        self, char_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **unused
    ) -> ELMoOutput:
        """char_ids (B, T, W) of words, right-padded with padding tokens (all ids 0); attention_mask (B, T)
        (default: the real tokens). The sentences are read as <S> w_1 … w_n </S>; returned at the words."""
        B, T, W = char_ids.shape
        mask = char_ids.ne(0).any(-1) if attention_mask is None else attention_mask.bool()
        lengths = mask.sum(1)  # (B,)
        rows = torch.arange(B, device=char_ids.device)
        ids = char_ids.new_zeros(B, T + 2, W)
        ids[:, 1 : T + 1] = char_ids * mask[..., None]
        ids[:, 0] = self.sentence_start
        ids[rows, lengths + 1] = self.sentence_end  # (B, T + 2, W): <S> words </S> padding
        n = lengths + 2
        x = self.token_encoder(ids)  # (B, T + 2, P)
        forward, _ = self.run(self.forward_lstm, x)
        backward, _ = self.run(self.backward_lstm, reverse_padded(x, n))  # from each row's </S> back
        backward = [reverse_padded(h, n) for h in backward]
        layers = [torch.cat([x, x], -1)] + [
            torch.cat(pair, -1) for pair in zip(forward, backward, strict=True)
        ]
        keep = mask[..., None].to(x.dtype)  # (B, T, 1)
        return ELMoOutput(tuple(h[:, 1 : T + 1] * keep for h in layers), mask.long())


class ELMoForPreTraining(SavePretrained, nn.Module):
    """The biLM and its softmax, trained on Eq. 1: ``forward`` reads a segment of each stream."""

    def __init__(self, config: ELMoConfig):
        super().__init__()
        if config.vocab_size < 1:
            raise ValueError("ELMoForPreTraining needs a vocabulary: config.vocab_size")
        self.config = config
        self.elmo = ELMoModel(config)
        self.softmax = nn.Linear(config.projection_dim, config.vocab_size)  # Θs = (W_s, b_s), shared
        nn.init.normal_(self.softmax.weight, 0.0, config.projection_dim**-0.5)
        nn.init.zeros_(self.softmax.bias)

    def forward(
        self,
        char_ids: torch.Tensor,
        backward_char_ids: torch.Tensor,
        labels: torch.Tensor | None = None,
        backward_labels: torch.Tensor | None = None,
        *,
        state: State | None = None,
    ) -> BiLMOutput:
        """char_ids (B, T, W): a segment of the text, read left to right by the forward LM; backward_char_ids
        (B, T, W): a segment of the reversed text for the backward LM; labels (B, T): the token after each
        position in its own stream; ``state`` the two LMs' state before the segment (None: zeros)."""
        elmo = self.elmo
        x = elmo.token_encoder(torch.cat([char_ids, backward_char_ids]))  # Θx once for both: (2B, T, P)
        x_forward, x_backward = x.chunk(2)
        forward_states, backward_states = split_states(state)
        forward, forward_states = elmo.run(elmo.forward_lstm, x_forward, forward_states)
        backward, backward_states = elmo.run(elmo.backward_lstm, x_backward, backward_states)
        state = join_states(forward_states, backward_states)
        top = elmo.dropout(forward[-1]), elmo.dropout(backward[-1])  # (B, T, P) each
        S = self.config.softmax_samples
        if self.training and 0 < S < self.config.vocab_size and labels is not None:
            # training: the sampled softmax (objectives/sampled_softmax.py), no full logits
            W, b = self.softmax.weight, self.softmax.bias
            f, bw = (
                sampled_softmax_loss(h, W, b, y, S)
                for h, y in zip(top, (labels, backward_labels), strict=True)
            )
            return BiLMOutput((f + bw) / 2, f, bw, None, None, state)
        forward_logits, backward_logits = self.softmax(top[0]), self.softmax(top[1])  # (B, T, V)
        losses = (None, None, None)
        if labels is not None and backward_labels is not None:
            f = sequence_cross_entropy(forward_logits, labels)
            bw = sequence_cross_entropy(backward_logits, backward_labels)
            losses = ((f + bw) / 2, f, bw)
        return BiLMOutput(*losses, forward_logits, backward_logits, state)


def text_inputs(model: ELMoModel, tokenizer, texts: list[str]) -> tuple[dict, list[list[str]]]:
    """How the pipelines give texts to ``ELMoModel``: each text's words as the tokenizer splits them (in
    the vocabulary or not: a word is read by its characters), spelled; and the words."""
    words = [words_of(tokenizer, text) for text in texts]
    char_ids, mask = batch_char_ids(words, model.config.max_characters_per_token)
    return {"char_ids": char_ids, "attention_mask": mask}, words


# its checkpoints: config.json (this config and ``architectures``), model.safetensors of the state dict as is,
# tokenizer.json (the word vocabulary of the softmax); `load_bilm_tf` (convert.py) reads the published ones
FAMILY = Family(
    model_type="elmo",
    config_class=ELMoConfig,
    architectures={"ELMoModel": ELMoModel, "ELMoForPreTraining": ELMoForPreTraining},
    heads={"base": "ELMoModel", "pretraining": "ELMoForPreTraining"},
    kind="encoder",
    base_model_prefix="elmo",
    tokenizer="word",
    head_modules=("softmax",),
    text_inputs=text_inputs,
    default_layer="mean",
    stream_lm=True,  # its biLM is trained by `seq2bert train-lm` (recipes/lm.py)
)
