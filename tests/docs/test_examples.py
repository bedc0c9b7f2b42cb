"""Reading the examples out of the docs (tests/docs/examples.py), and the tables of the README-example test
kept true to the docs: fast, in the default run, so a stale row fails before the long run."""

from tests.docs.examples import assigned, read_examples, without_comment
from tests.docs.test_readme_examples import CLAIMS, EDITS, EXAMPLES, PREAMBLES, SKIP

DOC = """# A doc

```bash
seq2bert train --task copy --out runs/copy     # a comment
seq2bert train --data ../shared/data/multi30k \\
               --out runs/m30k   # continued
curl -s localhost:8000/v1/classify -d '{"texts": ["a # not a comment"]}'
# {"model":"sst2","results":[]}
# a comment line, not an output
X=$(python -c "import os; print(os.getcwd() + '/model')")
for cell in gru lstm; do
  echo $cell
done
```

```
seq2bert not a bash block
```

   ```python
   import seq2bert

   # a comment
   print(seq2bert.translate(["s01"], model="runs/reverse"))  # shown
   ```
"""


def test_commands_are_read_as_a_reader_copies_them(tmp_path):
    (tmp_path / "doc.md").write_text(DOC)
    examples = read_examples(tmp_path / "doc.md", "doc.md")
    assert [(e.line, e.kind) for e in examples] == [(4, "bash"), (5, "bash"), (7, "bash"), (10, "bash"),
                                                    (11, "bash"), (21, "python")]  # fmt: skip
    copy, m30k, curl, x, loop, python = examples
    assert copy.key == "seq2bert train --task copy --out runs/copy" and copy.shows == ""
    assert m30k.key == "seq2bert train --data ../shared/data/multi30k --out runs/m30k"
    assert m30k.text.endswith("--out runs/m30k   # continued")
    assert curl.key == """curl -s localhost:8000/v1/classify -d '{"texts": ["a # not a comment"]}'"""
    assert curl.shows == '{"model":"sst2","results":[]}'
    assert assigned(x.key) == "X" and loop.text.count("\n") == 2
    assert python.key == 'doc.md: print(seq2bert.translate(["s01"], model="runs/reverse"))'
    assert python.text.startswith("import seq2bert\n")


def test_comments_and_assignments():
    assert without_comment("a 'b # c' \"d # e\" f#g # h") == "a 'b # c' \"d # e\" f#g"
    assert assigned('VALID="$G/a.txt $G/b.txt"') == "VALID"
    assert assigned("TRAIN=$(ls a b | grep -v -e c)") == "TRAIN"
    assert assigned("OMP_NUM_THREADS=1 seq2bert train-lm books/") is None
    assert assigned("seq2bert train --set a=b") is None


def test_every_row_of_the_tables_names_an_example_of_the_docs():
    """A row whose example changed is stale (the example is then run as written): it fails here."""
    keys = {e.key for e in EXAMPLES}
    for table in (SKIP, EDITS, PREAMBLES, CLAIMS):
        assert not set(table) - keys, set(table) - keys
    assert not set(SKIP) & set(EDITS)
    assert any(e.doc == "README.md" for e in EXAMPLES) and any(e.doc == "docs/results.md" for e in EXAMPLES)
