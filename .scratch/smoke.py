import torch
from seq2bert.data.tokenization import Tokenizer
from seq2bert.models.elmo.config import ELMoConfig
from seq2bert.models.elmo.model import ELMoModel
from seq2bert.models.bert.config import BertConfig
from seq2bert.models.bert.model import BertModel
from seq2bert.recipes.scratch import new_model, VocabConfig
from seq2bert.models.bilstm.config import FeaturesConfig
from seq2bert.data.glue import TextExample
import seq2bert, tempfile, pathlib
d = pathlib.Path(tempfile.mkdtemp())
torch.manual_seed(0)
elmo = ELMoModel(ELMoConfig(char_embedding_dim=4, filters=[(1, 4), (2, 4), (3, 8)], projection_dim=6, cell_size=10))
tok = Tokenizer.train(["the river bank"], kind="word", vocab_size=12, min_frequency=1)
elmo.save_pretrained(d / "elmo", tokenizer=tok)
wp = Tokenizer.train(["the river bank is wet", "a good film"]*5, kind="wordpiece", vocab_size=60, min_frequency=1, lowercase=True)
bert = BertModel(BertConfig(vocab_size=wp.vocab_size, hidden_size=8, num_hidden_layers=4, num_attention_heads=2, intermediate_size=16))
bert.save_pretrained(d / "bert", tokenizer=wp)
ex = [TextExample(id="0", text_a="the river bank is wet", text_b=None, label=1), TextExample(id="1", text_a="a good film", text_b=None, label=0)]
for path, layers in ((d/"elmo","mix"), (d/"bert","sum_last_four"), (d/"bert", "last")):
    m, t = new_model("bilstm", {"embedding_dim": 4, "hidden_size": 5}, VocabConfig(min_frequency=1), "sequence", ex, "BiLSTMForSequenceClassification", id2label={0:"0",1:"1"}, problem_type=None, features=FeaturesConfig(path=str(path), layers=layers))
    print(type(m).__name__, sum(p.numel() for p in m.parameters() if p.requires_grad))
    m.eval()
    print(seq2bert.classify(["the river zzz is wet", "a film"], model=(m, t)))
    m.save_pretrained(d / "out", tokenizer=t)
    print(sorted(p.name for p in (d/"out").iterdir()))
    print(seq2bert.classify(["the river zzz is wet", "a film"], model=str(d/"out")))
    import shutil; shutil.rmtree(d/"out")
