"""The published ELMo models in our layout: bilm-tf's options.json and HDF5 weights (the files AllenNLP
reads too), as a declarative map from their datasets to our parameters.

    options.json   {"char_cnn": {"embedding": {"dim"}, "filters", "n_highway", "activation",
                                 "max_characters_per_token", "n_characters"},
                    "lstm": {"dim" (C), "projection_dim" (P), "n_layers", "cell_clip", "proj_clip",
                             "use_skip_connections"}}
    weights.hdf5   char_embed                            (n_characters − 1, d): ids 0 … 260, no padding row
                   CNN/W_cnn_{i}, CNN/b_cnn_{i}           (1, w, d, n), (n,): TensorFlow's conv2d filters
                   CNN_high_{k}/W_carry, b_carry          (F, F), (F,): the gate g (it multiplies the transform)
                   CNN_high_{k}/W_transform, b_transform  (F, F), (F,)
                   CNN_proj/W_proj, b_proj                (F, P), (P,): absent when F = P
                   RNN_{d}/RNN/MultiRNNCell/Cell{j}/LSTMCell/W_0   (P_in + P, 4C): [x; r_{t−1}] ↦ gates
                   RNN_{d}/RNN/MultiRNNCell/Cell{j}/LSTMCell/B     (4C,)
                   RNN_{d}/RNN/MultiRNNCell/Cell{j}/LSTMCell/W_P_0 (C, P): the projection
                   (d = 0 the forward LM, 1 the backward; j the layer)

What changes on the way: TensorFlow multiplies x W where torch computes W x (every matrix is transposed);
its LSTM gates are stacked i, j, f, o (j the candidate, torch's g) where torch's are i, f, g, o; it adds a
forget bias of 1.0 at run time, which becomes part of our b_ih; its one bias is our b_ih (b_hh = 0); the
character ids it was fed were shifted by one (0 pads tokens), so its row r is our row r + 1 and our row 0 is
zero. Tests write a file in this layout with random arrays and check the character CNN and an LSTMP step
against a NumPy computation with TensorFlow's conventions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tokenizers
import torch

from seq2bert.data.special_tokens import SPECIAL_TOKENS, set_bert_template
from seq2bert.data.tokenization import Tokenizer
from seq2bert.data.vocab_training import new_pipeline
from seq2bert.errors import CheckpointError
from seq2bert.io import write_dir_atomically
from seq2bert.models.elmo.config import ELMoConfig
from seq2bert.models.elmo.model import FAMILY, ELMoModel
from seq2bert.models.pretrained import write_hf_files

TF_TO_TORCH_GATES = [0, 2, 1, 3]  # torch's i, f, g, o from TensorFlow's i, j, f, o
FORGET_BIAS = 1.0  # TensorFlow's LSTMCell adds it to the forget gate at run time


def config_from_options(options: dict, source: str) -> ELMoConfig:
    """Our config from bilm-tf's options.json (the softmax is not part of the published weights)."""
    try:
        cnn, lstm = options["char_cnn"], options["lstm"]
        return ELMoConfig(
            max_characters_per_token=int(cnn["max_characters_per_token"]),
            char_embedding_dim=int(cnn["embedding"]["dim"]),
            filters=[(int(w), int(n)) for w, n in cnn["filters"]],
            num_highway=int(cnn.get("n_highway") or 0),
            activation=cnn.get("activation", "relu"),
            projection_dim=int(lstm["projection_dim"]),
            cell_size=int(lstm["dim"]),
            num_layers=int(lstm["n_layers"]),
            cell_clip=lstm.get("cell_clip"),
            proj_clip=lstm.get("proj_clip"),
            residual=bool(lstm.get("use_skip_connections", False)),
            dropout=float(options.get("dropout", 0.0)),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{source}: not a bilm-tf options file ({type(e).__name__}: {e})") from None


def state_map(config: ELMoConfig, num_filters: int, has_projection: bool) -> dict[str, tuple[str, Callable]]:
    """Our parameter → (their dataset, how its array becomes ours)."""
    T = np.transpose
    out = {
        "token_encoder.embedding.weight": ("char_embed", lambda a: np.concatenate([np.zeros_like(a[:1]), a])),
    }
    for i, _ in enumerate(config.filters):  # (1, w, d, n) → (n, d, w)
        out[f"token_encoder.convolutions.{i}.weight"] = (f"CNN/W_cnn_{i}", lambda a: a[0].transpose(2, 1, 0))
        out[f"token_encoder.convolutions.{i}.bias"] = (f"CNN/b_cnn_{i}", np.asarray)
    for k in range(config.num_highway):
        for ours, theirs in (("gate", "carry"), ("transform", "transform")):
            out[f"token_encoder.highway.{ours}.{k}.weight"] = (f"CNN_high_{k}/W_{theirs}", T)
            out[f"token_encoder.highway.{ours}.{k}.bias"] = (f"CNN_high_{k}/b_{theirs}", np.asarray)
    if has_projection:
        out["token_encoder.projection.weight"] = ("CNN_proj/W_proj", T)
        out["token_encoder.projection.bias"] = ("CNN_proj/b_proj", np.asarray)
    C, P = config.cell_size, config.projection_dim

    def gates(a: np.ndarray) -> np.ndarray:  # (4C, …) blocks i, j, f, o → i, f, j, o
        return np.concatenate([a[g * C : (g + 1) * C] for g in TF_TO_TORCH_GATES])

    def bias(a: np.ndarray) -> np.ndarray:
        a = a.copy()
        a[2 * C : 3 * C] += FORGET_BIAS  # TensorFlow's f block
        return gates(a)

    for d, stack in enumerate(("forward_lstm", "backward_lstm")):
        for j in range(config.num_layers):
            cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{j}/LSTMCell"
            ours = f"{stack}.{j}.lstm"
            out[f"{ours}.weight_ih_l0"] = (f"{cell}/W_0", lambda a: gates(a.T)[:, : a.shape[0] - P])
            out[f"{ours}.weight_hh_l0"] = (f"{cell}/W_0", lambda a: gates(a.T)[:, a.shape[0] - P :])
            out[f"{ours}.bias_ih_l0"] = (f"{cell}/B", bias)
            out[f"{ours}.bias_hh_l0"] = (f"{cell}/B", np.zeros_like)
            out[f"{ours}.weight_hr_l0"] = (f"{cell}/W_P_0", T)
    return out


def load_bilm_tf(options_file: str | Path, weight_file: str | Path) -> ELMoModel:
    """The biLM (eval mode) of a published ELMo model: its options.json and weights.hdf5."""
    try:
        import h5py  # only this loader needs it
    except ImportError:
        raise CheckpointError(f"{weight_file}: reading HDF5 weights needs h5py (pip install h5py)") from None
    options_file, weight_file = Path(options_file), Path(weight_file)
    for path in (options_file, weight_file):
        if not path.is_file():
            raise CheckpointError(f"{path}: no such file")
    try:
        options = json.loads(options_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{options_file}: not JSON ({e})") from None
    config = config_from_options(options, str(options_file))
    try:
        weights = h5py.File(weight_file, "r")
    except OSError as e:
        raise CheckpointError(f"{weight_file}: not an HDF5 file ({e})") from None
    with weights:
        rows = weights["char_embed"].shape[0] + 1 if "char_embed" in weights else config.num_characters
        config.num_characters = rows  # their ids 0 … rows − 2, shifted by one; 0 pads
        model = ELMoModel(config)
        num_filters = sum(n for _, n in config.filters)
        has_projection = "CNN_proj" in weights
        if not has_projection and num_filters != config.projection_dim:
            raise CheckpointError(f"{weight_file}: no CNN_proj, and {num_filters} filters ≠ projection_dim")
        state = model.state_dict()
        for ours, (theirs, convert) in state_map(config, num_filters, has_projection).items():
            if theirs not in weights:
                raise CheckpointError(f"{weight_file}: no dataset {theirs} (the bilm-tf layout has it)")
            array = convert(np.asarray(weights[theirs][...], dtype=np.float32))
            if tuple(array.shape) != tuple(state[ours].shape):
                raise CheckpointError(
                    f"{weight_file}: {theirs} gives {ours} the shape {tuple(array.shape)}; "
                    f"{options_file.name} makes it {tuple(state[ours].shape)}"
                )
            state[ours] = torch.from_numpy(np.ascontiguousarray(array))
        if not has_projection:  # F = P: bilm-tf feeds the highway's output as it is
            state["token_encoder.projection.weight"] = torch.eye(num_filters)
            state["token_encoder.projection.bias"] = torch.zeros(num_filters)
    model.load_state_dict(state)
    return model.eval()


def word_vocabulary(words: list[str]) -> Tokenizer:
    """A word-level tokenizer of the special tokens, then ``words`` (none given: the special tokens alone)."""
    if words:
        return Tokenizer.train([" ".join(words)], kind="word", vocab_size=len(words) + 16, min_frequency=1)
    backend = new_pipeline("word", lowercase=False)
    backend.model = tokenizers.models.WordLevel(
        {t: i for i, t in enumerate(SPECIAL_TOKENS)}, unk_token="[UNK]"
    )
    backend.add_special_tokens(SPECIAL_TOKENS)
    set_bert_template(backend)
    return Tokenizer(backend)


def save_bilm_tf(
    options_file: str | Path, weight_file: str | Path, out: str | Path, vocab_file: str | Path | None = None
) -> ELMoModel:
    """Convert a published ELMo model into a checkpoint of ours at ``out`` (written atomically), which every
    command reads (`seq2bert embed`, fine-tuning features): config.json, model.safetensors and a word
    tokenizer — the words of bilm-tf's vocabulary file when given (one per line), else only the special
    tokens: the biLM itself reads every word by its characters, and the published softmax is not in the
    weights file. The tokenizer splits text on whitespace, as the text the published models were trained on
    (the 1B Word Benchmark, tokenised) was split: give it tokenised text."""
    model = load_bilm_tf(options_file, weight_file)
    words: list[str] = []
    if vocab_file is not None:
        try:
            lines = Path(vocab_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise CheckpointError(f"{vocab_file}: not a readable vocabulary file ({e})") from None
        words = [w.strip() for w in lines if w.strip() and w.strip() not in ("<S>", "</S>", "<UNK>")]
    tok = word_vocabulary(words)

    def write(directory: Path) -> None:
        write_hf_files(FAMILY, model, directory)
        tok.save(directory)

    write_dir_atomically(Path(out), write)
    return model
