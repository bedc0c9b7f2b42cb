"""The model families of seq2bert; the registry that finds them is seq2bert/models/registry.py.

Importing any model module imports the registry first (below), so that the built-in families are in the
table of models/family.py whenever a model exists: ``BertModel(config).save_pretrained(path)`` finds its
family by the config's model_type without the model's module importing the registry (which imports it)."""

from seq2bert.models import registry  # noqa: F401
