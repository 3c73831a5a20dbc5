"""Test certificates made at test time with the `openssl` command line: a CA, a server
certificate for localhost/127.0.0.1 signed by it, and client certificates with chosen
subjects (for client-certificate authentication). EC P-256 keys: quick to make, and every
client under test (OpenSSL, Python's ssl, Java) accepts them.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"
EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class TlsMaterial:
    directory: Path
    ca: Path
    server_cert: Path
    server_key: Path

    def client(self, name: str, subject: str) -> tuple[Path, Path]:
        """(certificate, key) of a client certificate with `subject` (`/C=US/.../CN=x`),
        signed by the CA."""
        key = self.directory / f"{name}.key"
        csr = self.directory / f"{name}.csr"
        cert = self.directory / f"{name}.pem"
        _openssl("req", "-new", *EC, "-keyout", str(key), "-out", str(csr), "-subj", subject,
                 cwd=self.directory)
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(self.ca), "-CAkey",
                 str(self.directory / "ca.key"), "-CAcreateserial", "-out", str(cert),
                 "-days", DAYS, cwd=self.directory)
        return cert, key

    def serve_args(self, client_auth: str = "none") -> list[str]:
        return ["--ssl-cert", str(self.server_cert), "--ssl-key", str(self.server_key),
                "--ssl-ca", str(self.ca), "--ssl-client-auth", client_auth]


def make_tls_material(directory: Path) -> TlsMaterial:
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", *EC, "-keyout", "ca.key", "-out", "ca.pem", "-days", DAYS,
             "-subj", "/CN=groupcoord test CA", cwd=directory)
    (directory / "server.ext").write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _openssl("req", "-new", *EC, "-keyout", "server.key", "-out", "server.csr", "-subj",
             "/CN=localhost", cwd=directory)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", DAYS, "-extfile", "server.ext",
             cwd=directory)
    return TlsMaterial(directory, directory / "ca.pem", directory / "server.pem",
                       directory / "server.key")
