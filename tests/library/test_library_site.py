"""The library's static site in a real headless browser: the table sorts, every link resolves.

Needs Chromium from the system's packages (Debian: `apt-get install -y chromium`) and the
Playwright driver (`pip install -e '.[test]'`); without a browser the test is skipped
with that message (the only skip of the suite)."""
from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from memplace.bench.library.site import write_site
from memplace.instances.library import read_library

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("no Chromium: install the system's package (Debian: apt-get install -y "
                    "chromium) to run the site's browser test")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[test]' "
                                   "installs Playwright, the browser test's driver")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


def _links(page) -> list[str]:
    return page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")


def _column(page, index: int) -> list[str]:
    return page.eval_on_selector_all(
        "#entries tbody tr", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-value') "
        f"|| r.cells[{index}].textContent)")


def test_site_table_sorts_and_every_link_resolves(small_library, tmp_path, browser):
    index = write_site(read_library(small_library), tmp_path / "site")
    page = browser.new_page()
    page.goto(index.as_uri())
    heads = page.eval_on_selector_all("#entries thead th", "hs => hs.map(h => h.textContent)")
    ops = heads.index("ops")
    page.click(f"#entries thead th:nth-child({ops + 1})")
    up = [float(v) for v in _column(page, ops)]
    assert up == sorted(up) and len(up) == 3
    page.click(f"#entries thead th:nth-child({ops + 1})")
    assert [float(v) for v in _column(page, ops)] == sorted(up, reverse=True)
    entry_col = heads.index("entry")
    page.click(f"#entries thead th:nth-child({entry_col + 1})")
    names = _column(page, entry_col)
    assert names == sorted(names)
    pages, seen = [index.as_uri()], set()
    while pages:
        url = pages.pop()
        if url in seen:
            continue
        seen.add(url)
        response = page.goto(url)
        assert response is None or response.ok, url
        for link in _links(page):
            target = Path(unquote(urlparse(link).path))
            assert target.is_file(), f"{url} links to {link}, which does not exist"
            if target.suffix == ".html":
                pages.append(target.as_uri())
    assert len(seen) == 4  # the index and one page per entry
    page.goto(next(u for u in seen if "static-" in u))
    assert page.locator("svg polyline").count() >= 2  # a line per level
