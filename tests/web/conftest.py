"""The web API tests' client: the app without the hub, exceptions answered as the server would.
FastAPI is imported when a test asks for the client; the test modules skip without it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    testclient = pytest.importorskip("fastapi.testclient")
    from suanli.web.app import create_app

    with testclient.TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as c:
        yield c
