"""The `subject_cache` fixture is defined in tests/conftest.py (the conformance test needs it too)."""
