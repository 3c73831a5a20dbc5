"""Certificate subjects as Java's `X500Principal.getName()` (RFC 2253) and Kafka's
`SslPrincipalMapper` rules (the cases of Kafka's own `SslPrincipalMapperTest`)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from helpers.certs import TlsMaterial, make_tls_material

from groupcoord.security.ssl_principal import NoMatchingRule, SslPrincipalMapper
from groupcoord.security.x500 import subject_rfc2253


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return make_tls_material(tmp_path_factory.mktemp("x500"))


def subject_of(tls: TlsMaterial, name: str, subject: str) -> str:
    cert, _ = tls.client(name, subject)
    return subject_rfc2253(ssl.PEM_cert_to_DER_cert(Path(cert).read_text()))


@pytest.mark.parametrize("subject,expected", [
    ("/C=US/ST=CA/L=Palo Alto/O=Sun/OU=JavaSoft/CN=Duke",
     "CN=Duke,OU=JavaSoft,O=Sun,L=Palo Alto,ST=CA,C=US"),
    ("/DC=com/DC=example/UID=jsmith/CN=John Smith", "CN=John Smith,UID=jsmith,DC=example,DC=com"),
    ("/O=Acme, Inc./CN=a\\+b", "CN=a\\+b,O=Acme\\, Inc."),
    ("/CN=#hash", "CN=\\#hash"),
    ("/O=x/CN=alice/emailAddress=a@b.c",
     "1.2.840.113549.1.9.1=#16056140622e63,CN=alice,O=x"),
])
def test_subjects_render_as_java_does(tls: TlsMaterial, subject: str, expected: str) -> None:
    assert subject_of(tls, f"c{abs(hash(subject))}", subject) == expected


def test_multi_valued_rdn(tls: TlsMaterial) -> None:
    cert, _ = tls.client("multi", "/O=x/CN=alice+UID=a1")
    # openssl writes the multi-valued RDN as one SET; Java joins its values with '+'.
    name = subject_rfc2253(ssl.PEM_cert_to_DER_cert(Path(cert).read_text()))
    assert name.endswith(",O=x") and set(name[:-4].split("+")) == {"CN=alice", "UID=a1"}


@pytest.mark.parametrize("der", [b"", b"\x30", b"\x30\x84\xff\xff\xff\xff", b"\x31\x00",
                                 b"\x30\x03\x30\x01\x02"])
def test_malformed_der_is_a_value_error(der: bytes) -> None:
    with pytest.raises(ValueError):
        subject_rfc2253(der)


RULES = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
         "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
         "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,DEFAULT")


@pytest.mark.parametrize("name,expected", [
    ("CN=kafka1,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "kafka1"),
    ("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US", "duke@javasoft"),
    ("cn=duke,ou=JavaSoft,o=Sun", "DUKE"),
    ("OU=JavaSoft,O=Sun", "OU=JavaSoft,O=Sun"),
])
def test_kafka_mapping_examples(name: str, expected: str) -> None:
    assert SslPrincipalMapper(RULES).name(name) == expected


def test_default_is_the_whole_name_and_no_match_is_an_error() -> None:
    assert SslPrincipalMapper().name("CN=a,O=b") == "CN=a,O=b"
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/").name("O=b")
    assert SslPrincipalMapper("RULE:^CN=(.*),O=(.*)$/$2$3/").name("CN=a,O=b") == "b$3"


@pytest.mark.parametrize("rules", ["RULE:^CN=(.*)/$1", "RULE:(/x/", "bogus"])
def test_invalid_rules(rules: str) -> None:
    with pytest.raises(ValueError):
        SslPrincipalMapper(rules)
