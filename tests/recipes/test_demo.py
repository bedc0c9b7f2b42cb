import pytest

from seq2bert.errors import UserError
from seq2bert.recipes.demo import demo_config, format_demo, run_demo


def test_demo_config_is_the_default_seq2seq_on_the_lang_task():
    cfg = demo_config()
    assert cfg.data.task == "lang" and cfg.model.num_layers == 4 and cfg.model.reverse_source
    assert demo_config(budget=0.5).train.max_minutes == pytest.approx(cfg.train.max_minutes / 2)


@pytest.mark.slow
def test_demo_prints_examples_and_a_results_table(tmp_path):
    result = run_demo(tmp_path / "demo", budget=0.03, examples=3)
    row = result.row
    out = format_demo(result)
    assert out.count("    ref: ") == 3 and out.count("    out: ") == 3
    table = [line for line in out.splitlines() if line.startswith("| seq2seq")]
    assert len(table) == 1
    assert f"{row['test_exact_match']:.2f}" in table[0] and f"{row['test_bleu']:.2f}" in table[0]
    assert (tmp_path / "demo" / "best" / "model.safetensors").is_file()
    run_demo(tmp_path / "demo", budget=0.01, examples=1)  # a second demo replaces the first
    (tmp_path / "demo" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not a demo run"):
        run_demo(tmp_path / "demo", budget=0.01)
