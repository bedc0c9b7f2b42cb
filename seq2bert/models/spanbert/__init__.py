"""SpanBERT (Joshi et al. 2019): BERT's encoder and MLM head with the span-boundary objective
(objectives/span_boundary.py) during pretraining; model.py composes them, pretrained.py is the registry
record."""
