"""A certificate's subject as Java's `X500Principal.getName()` writes it (RFC 2253).

Kafka's default `ssl.principal.mapping.rules` (`DEFAULT`) makes the principal name exactly
this string, so it must match Java byte for byte: relative distinguished names in reverse
order of the certificate's encoding, joined by `,`; multi-valued ones joined by `+`; the
keywords RFC 2253 defines (CN, L, ST, O, OU, C, STREET, DC, UID) by name and every other
attribute as its dotted OID with the value as `#` + hex of its DER encoding; the special
characters `,+"\\<>;` escaped with a backslash, as are a leading `#` or space and a trailing
space.

Reads the DER certificate with a minimal TLV reader: only the path to the subject
(`Certificate.tbsCertificate.subject`) is walked. `ValueError` for anything malformed.
"""

from __future__ import annotations

KEYWORDS = {
    "2.5.4.3": "CN", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
    "2.5.4.6": "C", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
_SEQUENCE, _SET, _OID, _INTEGER, _VERSION = 0x30, 0x31, 0x06, 0x02, 0xA0
_STRING_CODECS = {
    0x0C: "utf-8",      # UTF8String
    0x13: "ascii",      # PrintableString
    0x16: "ascii",      # IA5String
    0x1A: "ascii",      # VisibleString
    0x14: "latin-1",    # T61String, as Java reads it
    0x1E: "utf-16-be",  # BMPString
    0x1C: "utf-32-be",  # UniversalString
}
_SPECIAL = ',+"\\<>;'


def _tlv(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """(tag, content start, content end) of the element at `pos`."""
    if pos + 2 > end:
        raise ValueError("truncated DER element")
    tag, first = data[pos], data[pos + 1]
    pos += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or pos + count > end:
            raise ValueError("bad DER length")
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    if pos + length > end:
        raise ValueError("DER element runs past its container")
    return tag, pos, pos + length


def _expect(data: bytes, pos: int, end: int, tag: int) -> tuple[int, int]:
    got, start, stop = _tlv(data, pos, end)
    if got != tag:
        raise ValueError(f"expected DER tag {tag:#x}, found {got:#x}")
    return start, stop


def _oid(raw: bytes) -> str:
    if not raw:
        raise ValueError("empty OID")
    parts = [min(raw[0] // 40, 2)]
    parts.append(raw[0] - 40 * parts[0])
    value = 0
    for byte in raw[1:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def _escape(value: str) -> str:
    out = "".join("\\" + ch if ch in _SPECIAL else ch for ch in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _attribute(data: bytes, start: int, end: int) -> str:
    oid_start, oid_end = _expect(data, start, end, _OID)
    oid = _oid(data[oid_start:oid_end])
    tag, value_start, value_end = _tlv(data, oid_end, end)
    keyword = KEYWORDS.get(oid)
    codec = _STRING_CODECS.get(tag)
    if keyword is not None and codec is not None:
        return f"{keyword}={_escape(data[value_start:value_end].decode(codec))}"
    return f"{keyword or oid}=#{data[oid_end:value_end].hex()}"


def name_to_rfc2253(data: bytes, start: int, end: int) -> str:
    """The DER `Name` (SEQUENCE OF RDN) at data[start:end], as RFC 2253 text."""
    rdns = []
    pos = start
    while pos < end:
        set_start, set_end = _expect(data, pos, end, _SET)
        avas = []
        inner = set_start
        while inner < set_end:
            seq_start, seq_end = _expect(data, inner, set_end, _SEQUENCE)
            avas.append(_attribute(data, seq_start, seq_end))
            inner = seq_end
        rdns.append("+".join(avas))
        pos = set_end
    return ",".join(reversed(rdns))


def subject_rfc2253(certificate_der: bytes) -> str:
    """The subject of a DER certificate, as `X500Principal.getName()`."""
    end = len(certificate_der)
    cert_start, cert_end = _expect(certificate_der, 0, end, _SEQUENCE)
    tbs_start, tbs_end = _expect(certificate_der, cert_start, cert_end, _SEQUENCE)
    pos = tbs_start
    tag, _, stop = _tlv(certificate_der, pos, tbs_end)
    if tag == _VERSION:
        pos = stop
    _, pos = _expect(certificate_der, pos, tbs_end, _INTEGER)  # serial number
    _, pos = _expect(certificate_der, pos, tbs_end, _SEQUENCE)  # signature algorithm
    _, pos = _expect(certificate_der, pos, tbs_end, _SEQUENCE)  # issuer
    _, pos = _expect(certificate_der, pos, tbs_end, _SEQUENCE)  # validity
    subject_start, subject_end = _expect(certificate_der, pos, tbs_end, _SEQUENCE)
    return name_to_rfc2253(certificate_der, subject_start, subject_end)
