"""Modules the tests share (fixtures, data builders, browser support); tests/conftest.py puts tests/ on sys.path."""
