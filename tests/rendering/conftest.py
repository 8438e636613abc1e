import pytest

from tests.rendering.subject_cache import session_cache


@pytest.fixture(scope="session")
def subject_cache(tmp_path_factory):
    return session_cache(tmp_path_factory)
