"""The documentation site builds strictly: no broken link or anchor, no page left out of the nav,
and every public name of the documented modules has its generated API entry.

``mkdocs build --strict`` (the ``docs`` extra, which ``dev`` includes) runs into a temporary
folder; it is skipped only when mkdocs is not installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from ..conftest import ROOT

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None,
    reason="mkdocs / mkdocstrings not installed: pip install -e '.[docs]' (CI installs it with the dev extra)",
)

API_PAGES = {
    "maas_stream": "api/maas_stream",
    "maas_stream.io": "api/io",
    "maas_stream.bridge": "api/bridge",
    "maas_stream.testing": "api/testing",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    warnings = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert done.returncode == 0, "\n".join(warnings) or done.stderr
    assert warnings == []
    return out


def test_every_docs_page_is_built(site: Path) -> None:
    pages = sorted((ROOT / "docs").rglob("*.md"))
    assert pages
    for page in pages:
        rel = page.relative_to(ROOT / "docs").with_suffix("")
        built = site / ("index.html" if rel.name == "index" else rel / "index.html")
        assert built.is_file(), f"{page} was not built"


@pytest.mark.parametrize("module", list(API_PAGES))
def test_every_public_name_has_an_api_entry(site: Path, module: str) -> None:
    mod = importlib.import_module(module)
    html = (site / API_PAGES[module] / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="([A-Za-z0-9_.]+)"', html))
    names = list(getattr(mod, "__all__", ()))
    assert names, f"{module} has no __all__"
    missing = [name for name in names if f"{module}.{name}" not in anchors]
    assert missing == [], f"{module}: no API entry for {missing}"
