"""Generate groupcoord's wire codec and coordinator record classes from Kafka's JSON specs.

Usage: ``python tools/gen_messages.py [--check]`` from the repository root.

Inputs are the Kafka 4.4 specs in ``../shared/kafka-spec-4.4`` (``messages/``, ``records/``,
``share-records/``). Outputs:

- ``src/groupcoord/wire/generated/<api>.py``: one module per API (request + response),
  header and data spec, plus ``registry.py`` (api key -> request/response class);
- ``src/groupcoord/wire/api_key_numbers.py``: the api keys as plain ints and per-API
  version facts, and ``src/groupcoord/wire/api_keys.py``: the ``ApiKey`` enum over them;
- ``src/groupcoord/logformat/generated/<record>.py``: one module per coordinator record
  type (key + value), plus ``coordinator_records.py`` (record type -> classes).

Output is deterministic: the same specs always give byte-identical files. ``--check``
exits non-zero if any committed file differs from a fresh generation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gen_module import (
    HEADER,
    render_api_key_numbers,
    render_api_keys,
    render_module,
    render_records_index,
    render_registry,
)
from gen_spec import MessageSpec, parse_spec, snake

ROOT = Path(__file__).resolve().parent.parent
SPEC_DIR = ROOT.parent / "shared" / "kafka-spec-4.4"
WIRE_OUT = ROOT / "src" / "groupcoord" / "wire" / "generated"
RECORDS_OUT = ROOT / "src" / "groupcoord" / "logformat" / "generated"
API_KEYS_OUT = ROOT / "src" / "groupcoord" / "wire" / "api_keys.py"
API_KEY_NUMBERS_OUT = ROOT / "src" / "groupcoord" / "wire" / "api_key_numbers.py"


def module_name(spec: MessageSpec) -> str:
    name = spec.name
    if spec.kind in ("request", "response"):
        name = name.removesuffix("Request").removesuffix("Response")
    elif spec.kind in ("coordinator-key", "coordinator-value"):
        name = name.removesuffix("Key").removesuffix("Value")
    return snake(name)


def load_group(directory: Path) -> dict[str, list[MessageSpec]]:
    """Parse every spec in ``directory``, grouped by output module (sorted, deterministic)."""
    modules: dict[str, list[MessageSpec]] = {}
    for path in sorted(directory.glob("*.json")):
        spec = parse_spec(path)
        if spec is not None:
            modules.setdefault(module_name(spec), []).append(spec)
    order = {"request": 0, "response": 1, "coordinator-key": 0, "coordinator-value": 1}
    for specs in modules.values():
        specs.sort(key=lambda s: (order.get(s.kind, 2), s.name))
    return modules


def generate(spec_dir: Path = SPEC_DIR) -> dict[Path, str]:
    """Every generated file's path and text."""
    files: dict[Path, str] = {}
    wire = load_group(spec_dir / "messages")
    for name, specs in sorted(wire.items()):
        files[WIRE_OUT / f"{name}.py"] = render_module(specs)
    files[WIRE_OUT / "__init__.py"] = HEADER + '"""Generated Kafka message classes."""\n'
    files[WIRE_OUT / "registry.py"] = render_registry(wire)
    files[API_KEYS_OUT] = render_api_keys(wire)
    files[API_KEY_NUMBERS_OUT] = render_api_key_numbers(wire)
    records: dict[str, dict[str, list[MessageSpec]]] = {}
    for sub in ("records", "share-records"):
        group = load_group(spec_dir / sub)
        records[sub] = group
        for name, specs in sorted(group.items()):
            files[RECORDS_OUT / f"{name}.py"] = render_module(specs)
    files[RECORDS_OUT / "__init__.py"] = HEADER + '"""Generated coordinator record classes."""\n'
    files[RECORDS_OUT / "coordinator_records.py"] = render_records_index(records)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    parser.add_argument("--spec-dir", type=Path, default=SPEC_DIR)
    args = parser.parse_args(argv)
    files = generate(args.spec_dir)
    stale = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)}")
        return 1 if stale else 0
    for path in (WIRE_OUT, RECORDS_OUT):
        path.mkdir(parents=True, exist_ok=True)
        # Files of specs that no longer exist must not linger.
        for old in path.glob("*.py"):
            if old not in files:
                old.unlink()
    for path in stale:
        path.write_text(files[path])
    print(f"{len(files)} files, {len(stale)} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
