"""BiLSTM baselines: a bidirectional LSTM sentence classifier and tagger on random word embeddings."""
