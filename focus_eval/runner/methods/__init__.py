"""Scoring methods: ``linear_probe`` and ``zero_shot`` over cached embeddings, ``prompt`` for MLLMs."""
