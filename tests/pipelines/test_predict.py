"""Batch prediction over files (pipelines/predict.py): every shape's outputs equal the single-text pipeline's
on the same texts, in the input's order with the input's columns; every output format reads back; a file is
read, predicted and written a chunk at a time; a multi-label model gives the labels over config.json's
threshold; the multiple-choice pipeline scores each choice as the model does alone."""

import json

import pytest
import torch

from seq2bert.data import tables
from seq2bert.models import registry
from seq2bert.pipelines import answer, choose, classify, embed, generate, tag, translate
from seq2bert.pipelines import predict as P
from tests.pipelines.conftest import MULTI_LABEL_THRESHOLD, WORDS

FP32 = P.Settings(batch_size=3, bf16=False, max_new_tokens=3)


def sentence(i: int) -> str:
    """Texts of many lengths (1 to 11 words), so that sorted batches reorder them."""
    return " ".join(WORDS[(5 * i) % len(WORDS) :] + WORDS)[: 1 + 7 * ((i * 3) % 11)].strip() or "film"


def rows(n: int = 11) -> list[dict]:
    return [
        {"id": i, "text": sentence(i), "pair": sentence(i + 4), "question": "who lives in paris ?",
         "context": f"{sentence(i)} john lives in paris .", "a": sentence(i + 1), "b": "awful story",
         "c": sentence(i + 7), "src": " ".join(f"s{(i + k) % 8}" for k in range(2 + i % 4))}
        for i in range(n)
    ]  # fmt: skip


def write_jsonl(path, items) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in items))


def predicted(
    shape_dir, tmp_path, items, *, columns=None, name="out.jsonl", settings=FP32, **kw
) -> list[dict]:
    source = tmp_path / "in.jsonl"
    write_jsonl(source, items)
    out = tmp_path / name
    done = P.predict_file(
        str(shape_dir), source, out, columns=columns, settings=settings, chunk_size=4, progress=False, **kw
    )
    assert done["rows"] == len(items)
    return [row for _, row in tables.rows(out)]


def single(shape: str, model: str, row: dict):
    """What the single-text pipeline gives the row alone, as predict's columns."""
    if shape == "classify":
        r = classify(row["text"], model, bf16=False)
        return {"label": r["label"], "score": r["score"]}
    if shape == "pairs":
        r = classify((row["text"], row["pair"]), model, bf16=False)
        return {"label": r["label"], "score": r["score"]}
    if shape == "regression":
        return {"score": classify(row["text"], model, bf16=False)["score"]}
    if shape == "tag":
        return {"entities": tag(row["text"], model)}
    if shape == "tag words":
        return {"words": tag(row["text"], model, aggregate=False)}
    if shape == "qa":
        return answer(row["question"], row["context"], model)
    if shape == "choice":
        return choose((row["text"], [row["a"], row["b"], row["c"]]), model)
    if shape == "embed":
        return {"embedding": embed([row["text"]], model, bf16=False)[0].tolist()}
    if shape == "translate":
        return {"translation": translate(model, row["src"], bf16=False)}
    if shape == "generate":
        return {"generation": generate(row["text"], model, max_new_tokens=3, bf16=False)}
    raise AssertionError(shape)


CASES = {  # shape → (its checkpoint, the columns given)
    "classify": ("classify", None),
    "pairs": ("classify", {"pair": "pair"}),
    "regression": ("regression", None),
    "tag": ("tag", None),
    "tag words": ("tag", None),
    "qa": ("qa", None),
    "choice": ("choice", {"choices": ("a", "b", "c")}),
    "embed": ("embed", None),
    "translate": ("translate", {"text": "src"}),
    "generate": ("generate", None),
}


def close(a, b) -> bool:
    """Equal, floats within 1e-5 (a text in a padded batch against the text alone)."""
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, abs=1e-5)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("case", list(CASES))
def test_each_shape_equals_its_single_text_pipeline_in_the_input_order(case, shapes, tmp_path):
    checkpoint, columns = CASES[case]
    items = rows()
    settings = P.Settings(**{**vars(FP32), "words": case == "tag words"})
    out = predicted(shapes[checkpoint], tmp_path, items, columns=columns, settings=settings)
    assert [r["id"] for r in out] == list(range(len(items)))  # the input's order
    for row, got in zip(items, out, strict=True):
        assert {k: got[k] for k in row} == row  # the input's columns, as they were
        want = single(case, str(shapes[checkpoint]), row)
        assert close({k: got[k] for k in want}, want), (case, row["id"])
        assert set(got) == set(row) | set(want)


def test_multi_label_gives_the_labels_over_the_threshold_of_config_json(shapes, tmp_path):
    """A hand-made multi-label classifier (problem_type multi_label_classification, threshold 0.45 in its
    config.json): each row's labels are those whose σ(logit) computed by the model alone reaches 0.45."""
    directory = shapes["multi-label"]
    model, tok = registry.load(directory)
    items = rows()
    out = predicted(directory, tmp_path, items)
    names = model.config.id2label
    some = False
    for row, got in zip(items, out, strict=True):
        enc = tok.encode_batch([row["text"]], return_tensors="pt")
        with torch.no_grad():
            probs = model(**dict(enc)).logits[0].sigmoid()
        over = sorted(
            (k for k in range(len(names)) if probs[k] >= MULTI_LABEL_THRESHOLD), key=lambda k: -probs[k]
        )
        assert got["labels"] == [names[k] for k in over]
        assert got["scores"] == pytest.approx([float(probs[k]) for k in over], abs=1e-5)
        some |= 0 < len(over) < len(names)
    assert some  # the threshold kept some labels and dropped others


def test_choose_scores_each_choice_as_the_model_does_alone(shapes):
    """The softmax over the choices of the model's scores of [CLS] context [SEP] choice [SEP], each item read
    alone; items in a batch give the same."""
    directory = shapes["choice"]
    model, tok = registry.load(directory)
    items = [(r["text"], [r["a"], r["b"], r["c"]]) for r in rows(5)]
    together = choose(items, str(directory), batch_size=2)
    for (context, choices), got in zip(items, together, strict=True):
        enc = tok.encode_batch([(context, c) for c in choices], padding="longest", return_tensors="pt")
        with torch.no_grad():
            scores = model(**{k: v.unsqueeze(0) for k, v in dict(enc).items()}).logits[0].softmax(-1)
        assert got["scores"] == pytest.approx(scores.tolist(), abs=1e-5)
        assert got["choice"] == int(scores.argmax())


@pytest.mark.parametrize("ext", ["jsonl", "csv", "tsv", "parquet"])
@pytest.mark.parametrize("column", ["entities", "words"])
def test_every_output_format_reads_back(ext, column, shapes, tmp_path, monkeypatch):
    """The rows and their predictions read back from each format: a CSV's list cells as JSON, Parquet's
    lists typed even when the first batch written holds only empty ones (a tagger's rows without
    entities, or without tagged words)."""
    monkeypatch.setattr(tables, "PARQUET_BATCH", 4)  # the first Parquet batch: 4 rows without entities
    items = rows()
    quiet = [w for w in WORDS if not tag(w, str(shapes["tag"]))]  # words the tiny tagger tags O
    for r in items[:6]:  # the first rows tag nothing: their entities are empty lists
        r["text"] = quiet[0]
    settings = P.Settings(**{**vars(FP32), "words": column == "words"})
    want = predicted(shapes["tag"], tmp_path, items, name="want.jsonl", settings=settings)
    got = predicted(shapes["tag"], tmp_path, items, name=f"out.{ext}", settings=settings)
    for w, g in zip(want, got, strict=True):
        found = g[column] if ext in ("jsonl", "parquet") else json.loads(g[column])
        assert close(found, w[column])
        assert str(g["id"]) == str(w["id"]) and g["text"] == w["text"]
    assert any(w[column] for w in want) and not want[0][column]


def test_a_file_is_read_predicted_and_written_a_chunk_at_a_time(shapes, tmp_path, monkeypatch):
    """300 rows in chunks of 32: at no time are more than 32 rows read and not yet written (the one row read
    first to learn the file's columns aside)."""
    source = tmp_path / "many.csv"
    source.write_text("text\n" + "".join(f"{sentence(i)}\n" for i in range(300)))
    held = {"read": 0, "written": 0, "most": 0}
    reading = tables.rows

    def counted(*args, **kw):
        read = 0
        for item in reading(*args, **kw):
            read += 1
            held["read"] = read
            held["most"] = max(held["most"], read - held["written"])
            yield item

    writing = tables.TableWriter.write

    def written(self, row):
        held["written"] += 1
        writing(self, row)

    monkeypatch.setattr(P.tables, "rows", counted)
    monkeypatch.setattr(P.tables.TableWriter, "write", written)
    out = tmp_path / "many.jsonl"
    done = P.predict_file(str(shapes["classify"]), source, out, settings=FP32, chunk_size=32, progress=False)
    assert done["rows"] == held["written"] == held["read"] == 300
    assert held["most"] == 32
    texts = [row["text"] for _, row in tables.rows(out)]
    assert texts == [sentence(i) for i in range(300)]


def test_a_prediction_column_the_input_has_is_written_beside_it(shapes, tmp_path):
    """A labelled file keeps its gold label; the prediction is predicted_label."""
    items = [{"text": sentence(i), "label": "gold"} for i in range(4)]
    out = predicted(shapes["classify"], tmp_path, items)
    assert [r["label"] for r in out] == ["gold"] * 4
    assert [r["predicted_label"] for r in out] == [
        classify(r["text"], str(shapes["classify"]), bf16=False)["label"] for r in items
    ]


def test_embed_reads_any_encoder_when_asked(shapes, tmp_path):
    """--task embed on a classifier: its encoder's pooled vectors, as embed gives them."""
    items = rows(4)
    out = predicted(shapes["classify"], tmp_path, items, task="embed")
    want = embed([r["text"] for r in items], str(shapes["classify"]), bf16=False)
    assert close([r["embedding"] for r in out], want.tolist())


def test_the_progress_bar_counts_rows_against_the_file_s_estimate(shapes, tmp_path, monkeypatch):
    """The bar's total is the file's rows (a CSV's lines less its header; a Parquet file's count), in rows,
    updated a chunk at a time to the rows predicted."""
    bars = []

    class Bar:
        def __init__(self, **kw):
            self.kw, self.n = kw, 0
            bars.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def update(self, n):
            self.n += n

    monkeypatch.setattr(P, "tqdm", Bar)
    source = tmp_path / "in.csv"
    source.write_text("text\n" + "".join(f"{sentence(i)}\n" for i in range(10)))
    P.predict_file(str(shapes["classify"]), source, tmp_path / "out.parquet", settings=FP32, chunk_size=4)
    P.predict_file(str(shapes["classify"]), tmp_path / "out.parquet", tmp_path / "again.csv", settings=FP32)
    assert [(b.kw["total"], b.kw["unit"], b.n, b.kw["disable"]) for b in bars] == [(10, "rows", 10, None)] * 2


def test_answers_read_every_window_in_batches_as_answer_reads_each_alone(shapes):
    """Contexts of several windows (24 tokens, stride 8): the batched answers equal answer's, one question
    at a time."""
    from seq2bert.pipelines import answers

    model = str(shapes["qa"])
    items = [(f"who lives in {w} ?", f"{sentence(i)} john lives in paris . {sentence(i + 3)} {sentence(i + 5)}")
             for i, w in enumerate(WORDS[:7])]  # fmt: skip
    got = answers(items, model, batch_size=4, max_seq_length=24, doc_stride=8)
    want = [answer(q, c, model, max_seq_length=24, doc_stride=8) for q, c in items]
    assert close(got, want)


@pytest.mark.data
def test_sst2_dev_sentences_embedded_by_minilm_equal_embed(shared_data, minilm_dir, tmp_path):
    """The first 100 rows of the real SST-2 dev TSV (its columns: sentence, label) through all-MiniLM-L6-v2:
    each row's vector is seq2bert.embed's of its sentence, in the file's order, labels kept."""
    lines = (shared_data / "sst2" / "dev.tsv").read_text(encoding="utf-8").splitlines()[:101]
    source = tmp_path / "dev.tsv"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "vectors.parquet"
    settings = P.Settings(batch_size=32, bf16=False)
    done = P.predict_file(str(minilm_dir), source, out, columns={"text": "sentence"}, settings=settings,
                          chunk_size=32, progress=False)  # fmt: skip
    assert done == {"rows": 100, "shape": "embed", "out": str(out)}
    got = [row for _, row in tables.rows(out)]
    sentences = [line.split("\t")[0] for line in lines[1:]]
    assert [r["sentence"] for r in got] == sentences
    assert [r["label"] for r in got] == [line.split("\t")[1] for line in lines[1:]]
    want = embed(sentences, str(minilm_dir), bf16=False)
    assert torch.allclose(torch.tensor([r["embedding"] for r in got]), want, atol=1e-5)


def test_a_choice_s_start_is_read_before_each_choice(shapes, tmp_path):
    """--pair-column with a multiple-choice model (SWAG's layout, as fine-tuning reads it): each choice is
    "start choice"."""
    items = rows(5)
    for r in items:
        r["start"] = "john lives in"
    out = predicted(shapes["choice"], tmp_path, items, columns={"choices": ("a", "b", "c"), "pair": "start"})
    for row, got in zip(items, out, strict=True):
        want = choose((row["text"], [f"john lives in {row[k]}" for k in "abc"]), str(shapes["choice"]))
        assert close({k: got[k] for k in want}, want)


def test_the_multi_label_threshold_is_config_json_s_else_one_half(shapes, tmp_path):
    """multi_label_threshold (fine-tuning's key) or threshold in config.json; 0.5 without; a value that is not
    a probability is a one-line CheckpointError."""
    from seq2bert.errors import CheckpointError
    from seq2bert.pipelines.tasks import label_threshold

    config = json.loads((shapes["multi-label"] / "config.json").read_text())
    assert label_threshold(None, shapes["multi-label"]) == MULTI_LABEL_THRESHOLD
    for key, value, expected in (("threshold", 0.3, 0.3), ("other", 0.3, 0.5), ("threshold", 2, None)):
        folder = tmp_path / f"{key}-{value}"
        folder.mkdir()
        without = {k: v for k, v in config.items() if k != "multi_label_threshold"}
        (folder / "config.json").write_text(json.dumps({**without, key: value}))
        if expected is None:
            with pytest.raises(CheckpointError, match="threshold: expected a probability in"):
                label_threshold(None, folder)
        else:
            assert label_threshold(None, folder) == expected
