"""The model families of seq2bert; the registry that finds them is seq2bert/models/registry.py."""
