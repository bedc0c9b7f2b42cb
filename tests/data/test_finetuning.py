"""Fine-tuning features: the first sub-token of each word carries its tag, dynamic padding, and the batch
shapes and label types of every task shape."""

import pytest
import torch

from seq2bert.data.conll import TaggedSentence
from seq2bert.data.finetuning import collate, encode_choices, encode_sequences, encode_tagged
from seq2bert.data.glue import TextExample
from seq2bert.data.swag import ChoiceExample
from seq2bert.data.tokenization import Tokenizer
from seq2bert.objectives.cross_entropy import IGNORE_INDEX

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "black", "##burn", "rovers", "won", "in", "a", "##b", "##c",
         "good", "film", "he", "she", "ran", "sat", "."]  # fmt: skip


@pytest.fixture(scope="module")
def tok(tmp_path_factory) -> Tokenizer:
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return Tokenizer.from_file(path)


def test_the_first_sub_token_of_each_word_carries_its_tag_and_the_rest_are_ignored(tok):
    sentence = TaggedSentence("s", ["Blackburn", "Rovers", "won", "abc"], ["B-ORG", "I-ORG", "O", "B-MISC"])
    label2id = {"O": 0, "B-ORG": 1, "I-ORG": 2, "B-MISC": 3}
    (f,) = encode_tagged([sentence], tok, label2id, max_length=32)
    assert [tok.id_to_token(i) for i in f["input_ids"]] == [
        "[CLS]", "black", "##burn", "rovers", "won", "a", "##b", "##c", "[SEP]"]  # fmt: skip
    ignore = IGNORE_INDEX
    assert f["labels"] == [ignore, 1, ignore, 2, 0, 3, ignore, ignore, ignore]
    assert f["word_ids"] == [-1, 0, -1, 1, 2, 3, -1, -1, -1]
    assert f["num_words"] == 4


def test_tagged_words_cut_by_max_length_are_not_labelled(tok):
    sentence = TaggedSentence("s", ["won", "won", "Blackburn", "won"], ["O", "O", "B-ORG", "O"])
    (f,) = encode_tagged([sentence], tok, {"O": 0, "B-ORG": 1}, max_length=5)
    assert len(f["input_ids"]) == 5 and f["labels"] == [IGNORE_INDEX, 0, 0, 1, IGNORE_INDEX]
    assert f["num_words"] == 4  # the predictions of the cut word default to "O" when scored


def test_sentence_pairs_and_single_sentences_pad_to_the_longest_of_the_batch(tok):
    examples = [TextExample("a", "he ran", "she sat .", 1), TextExample("b", "good film", None, 0)]
    features = encode_sequences(examples, tok, max_length=16)
    assert features[0]["token_type_ids"] == [0, 0, 0, 0, 1, 1, 1, 1]
    batch = collate(features, pad_token_id=0)
    assert batch["input_ids"].shape == (2, 8) and batch["labels"].dtype == torch.long
    assert batch["attention_mask"].tolist()[1] == [1, 1, 1, 1, 0, 0, 0, 0]
    assert batch["input_ids"][1, 4:].tolist() == [0, 0, 0, 0]


def test_regression_labels_are_floats(tok):
    features = encode_sequences([TextExample("a", "he ran", "she ran", 3.8)], tok, max_length=16)
    batch = collate(features, pad_token_id=0)
    assert batch["labels"].dtype == torch.float and batch["labels"].tolist() == pytest.approx([3.8])


def test_multiple_choice_batches_are_examples_by_choices_by_tokens(tok):
    examples = [
        ChoiceExample("0", "he ran", "she", ["sat", "ran .", "won", "sat in a film"], 3),
        ChoiceExample("1", "good film", "", ["won", "sat", "ran", "."], 0),
    ]
    features = encode_choices(examples, tok, max_length=16)
    batch = collate(features, pad_token_id=0)
    assert batch["input_ids"].shape == (2, 4, 10)  # [CLS] he ran [SEP] she sat in a film [SEP]
    assert batch["labels"].tolist() == [3, 0]
    first = [tok.id_to_token(i) for i in batch["input_ids"][0, 1].tolist() if i]
    assert first == ["[CLS]", "he", "ran", "[SEP]", "she", "ran", ".", "[SEP]"]
    assert batch["attention_mask"][1].sum(-1).tolist() == [6, 6, 6, 6]
