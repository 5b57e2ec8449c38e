"""Tests of the informer.testing API server.

A package, so that its conftest does not shadow tests/conftest.py as module ``conftest``.
"""
