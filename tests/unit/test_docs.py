"""The docs stay true to the code: a short README that starts with the two commands, links that resolve,
and every setting the code reads documented in docs/operations.md (and only there in a settings table)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import AliasChoices
from pydantic_settings import BaseSettings

from deskpilot.config import (
    PROVIDERS,
    AgentSettings,
    DesktopSettings,
    MetricsSettings,
    SecuritySettings,
    TaskSettings,
    UISettings,
)

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
OPERATIONS = DOCS / "operations.md"
PAGES = ("desktop-api.md", "task-api.md", "mcp.md", "operations.md", "benchmarks.md", "design.md")
MARKDOWN = [README, *sorted(DOCS.glob("*.md"))]

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)


def prose(text: str) -> str:
    """Markdown without code blocks and inline code, where links are not links."""
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in _HEADING.findall(_FENCE.sub("", page.read_text()))}


def relative_links(page: Path) -> list[str]:
    return [t for t in _LINK.findall(prose(page.read_text())) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


# ------------------------------------------------------------------------------------------------ README


def test_readme_is_short() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_readme_opens_with_the_two_commands() -> None:
    text = README.read_text()
    first_block = _FENCE.search(text)
    assert first_block is not None, "README.md has no code block"
    assert text[: first_block.start()].count("\n") < 15, "the two commands must come first"
    commands = [line for line in first_block.group().splitlines()[1:-1] if line.strip()]
    assert [c.split("#")[0].strip() for c in commands] == ["make run", "make test"]
    assert all("installs what is missing" in c for c in commands)


def test_readme_links_every_docs_page() -> None:
    linked = {t.split("#")[0] for t in relative_links(README)}
    on_disk = {p.name for p in DOCS.glob("*.md")}
    assert set(PAGES) <= on_disk, f"missing pages: {set(PAGES) - on_disk}"
    missing = {f"docs/{p}" for p in on_disk} - linked
    assert not missing, f"README.md does not link {sorted(missing)}"


# ------------------------------------------------------------------------------------------------- links


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, f"{page.name}: {broken}"


# ---------------------------------------------------------------------------------------------- settings


def settings_variables(cls: type[BaseSettings]) -> set[str]:
    """The environment variables a settings class reads: its validation aliases, else prefix + field."""
    prefix = str(cls.model_config.get("env_prefix") or "")
    names: set[str] = set()
    for field, info in cls.model_fields.items():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            names.update(c for c in alias.choices if isinstance(c, str))
        elif isinstance(alias, str):
            names.add(alias)
        else:
            names.add(prefix + field)
    return {n.upper() for n in names}


def script_variables() -> set[str]:
    """What the launcher and the log configuration read from the environment besides the settings classes."""
    launcher = (ROOT / "scripts" / "appliance.sh").read_text()
    logs = (ROOT / "deskpilot" / "logs.py").read_text()
    return set(re.findall(r"export (\w+)=\$\{\1:-", launcher)) | set(
        re.findall(r"os\.environ\.get\(\"(\w+)\"", logs)
    )


SETTINGS_CLASSES = (
    DesktopSettings,
    TaskSettings,
    AgentSettings,
    UISettings,
    SecuritySettings,
    MetricsSettings,
)
ALL_VARIABLES = sorted(
    set().union(*(settings_variables(c) for c in SETTINGS_CLASSES))
    | {v for p in PROVIDERS for v in (p.key_var, p.model_var)}
    | script_variables()
)


def test_the_variables_are_found() -> None:
    expected = {"DESKTOP_DISPLAY", "DISPLAY", "DATABASE_URL", "AGENT_MAX_STEPS", "UI_PAGE_SIZE"}
    expected |= {"ANTHROPIC_MODEL", "DESKPILOT_STATE_DIR", "DESKPILOT_LOG_FORMAT", "DESKPILOT_TOKEN"}
    assert expected <= set(ALL_VARIABLES)


@pytest.mark.parametrize("variable", ALL_VARIABLES)
def test_every_setting_is_in_operations(variable: str) -> None:
    assert f"`{variable}`" in OPERATIONS.read_text(), f"{variable} is read by the code, not in operations.md"


@pytest.mark.parametrize("page", [p for p in MARKDOWN if p != OPERATIONS], ids=lambda p: p.name)
def test_settings_tables_live_only_in_operations(page: Path) -> None:
    """Other pages link to operations.md rather than keep a second table of defaults that could drift."""
    rows = [line for line in page.read_text().splitlines() if line.startswith("| `")]
    duplicated = [r for r in rows if r[3:].split("`")[0] in ALL_VARIABLES]
    assert not duplicated, f"{page.name} has settings rows; they belong in operations.md: {duplicated}"


def test_the_provider_table_is_the_one_in_config() -> None:
    rows = (DOCS / "task-api.md").read_text().splitlines()
    for p in PROVIDERS:
        row = next((r for r in rows if r.startswith("|") and f"`{p.key_var}`" in r), None)
        assert row is not None, f"task-api.md's provider table has no row for {p.key_var}"
        assert f"`{p.model_var}` (`{p.default_model}`)" in row
        assert f"`{p.name}/{p.default_model}`" in row


# ----------------------------------------------------------------------------------------------- sources


# Spelled in pieces, so that this file does not match itself.
CITED = (
    "../" + "shared",
    "DESIGN" + ".md",
    "DESIGN" + " §",
    "notes/" + "perf-limits",
    "notes/" + "packaging",
)
CITATION = re.compile("|".join(re.escape(c) for c in CITED))
SOURCES = ("deskpilot", "tests", "scripts", "bench", "helm", "docs")


def test_nothing_cites_files_outside_the_repository() -> None:
    """Comments and docs say the fact or point at docs/design.md; the notes they came from are not here."""
    files = [p for d in SOURCES for p in (ROOT / d).rglob("*") if p.is_file() and p.suffix != ".png"]
    files += [README, ROOT / "Makefile", ROOT / "Dockerfile", ROOT / "supervisord.conf"]
    found = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in files
        if not {"node_modules", "__pycache__"} & set(p.parts)
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if CITATION.search(line)
    ]
    assert not found, f"citations of files outside the repository: {found}"
