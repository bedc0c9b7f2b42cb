"""A plugin module: importing it registers the tiny family (tests/models/tiny_family.py), the way a user's
own family joins seq2bert — `SEQ2BERT_PLUGINS=tests.models.tiny_plugin seq2bert pretrain … --set
model.model_type=tiny-shared` (seq2bert/cli.py)."""

from seq2bert.models import registry
from tests.models.tiny_family import TINY

registry.register(TINY)
