"""The broker's lazy handler table: `served.py` matches what the handler modules declare,
ApiVersions is answered from it without importing a handler, and a handler module is
imported on the first lookup of its api key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gen_served

from groupcoord.apis.api_spec import HandlerTable, version_range
from groupcoord.apis.registry import load_handlers
from groupcoord.apis.served import SERVED


def test_served_table_is_what_the_modules_declare() -> None:
    assert gen_served.render() == gen_served.OUT.read_text(), \
        "run python tools/gen_served.py"


def test_lazy_table_gives_the_eager_specs() -> None:
    eager = load_handlers()
    lazy = HandlerTable(SERVED)
    assert sorted(lazy) == sorted(eager) and len(lazy) == len(eager)
    for key, spec in eager.items():
        assert version_range(lazy, key) == version_range(eager, key) == \
            (spec.min_version, spec.max_version)
        assert lazy[key] == spec
    assert lazy.get(9999) is None and 9999 not in lazy


def test_api_versions_imports_no_other_handler() -> None:
    code = (
        "import sys\n"
        "from groupcoord.apis.registry import handlers\n"
        "from groupcoord.apis.api_versions import respond\n"
        "from groupcoord.wire.generated.api_versions import ApiVersionsRequest\n"
        "table = handlers()\n"
        "keys = [e.api_key for e in respond(table, ApiVersionsRequest(), 0).api_keys]\n"
        "assert len(keys) == len(table), keys\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('groupcoord.apis.')\n"
        "                and m.rsplit('.', 1)[1] in " + repr(sorted(SERVED)) + ")\n"
        "assert loaded == ['groupcoord.apis.api_versions'], loaded\n"
        "table[3]\n"
        "assert 'groupcoord.apis.metadata' in sys.modules\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src")}, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
