"""Kafka's `SslPrincipalMapper`: `ssl.principal.mapping.rules` applied to a certificate's
distinguished name.

Rules are a comma-separated list of `DEFAULT` (the name unchanged) and
`RULE:pattern/replacement/[L|U]`; the first rule whose pattern matches the whole name gives
the principal name (replacement with `$n` group references, then lower- or upper-cased).
No rule matching is an error: the connection is refused, as Kafka refuses it. Patterns are
Java regular expressions; the common subset is the same in Python's `re`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RULE_PATTERN = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE_PATTERN)


class NoMatchingRule(ValueError):
    """No mapping rule applies to the distinguished name."""


def _python_replacement(java: str, groups: int) -> str:
    """A Java `Matcher.replaceAll` replacement as a Python `re.sub` template: `$n` takes
    the longest group number that exists (Java's rule); `\\x` is a literal x; a reference
    to a missing group stays literal (Kafka's `escapeLiteralBackReferences`)."""
    out: list[str] = []
    i = 0
    while i < len(java):
        ch = java[i]
        if ch == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        if ch == "$" and i + 1 < len(java) and java[i + 1].isdigit():
            j = i + 2
            number = int(java[i + 1])
            while j < len(java) and java[j].isdigit() and int(java[i + 1:j + 1]) <= groups:
                number = int(java[i + 1:j + 1])
                j += 1
            if number <= groups:
                out.append(f"\\g<{number}>")
                i = j
                continue
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None = DEFAULT
    replacement: str = ""
    lower: bool = False
    upper: bool = False

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(_python_replacement(self.replacement, self.pattern.groups),
                                  name)
        if self.lower:
            return result.lower()
        return result.upper() if self.upper else result


class SslPrincipalMapper:
    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules_text = rules
        self._rules = [rule for text in self._split(rules) if (rule := self._parse(text))]

    @staticmethod
    def _split(rules: str) -> list[str]:
        return [m.group(1) for m in _RULE_SPLITTER.finditer(rules.strip())]

    @staticmethod
    def _parse(text: str) -> _Rule | None:
        match = _RULE_PARSER.match(text)
        if match is None or match.end() != len(text):
            raise ValueError(f"Invalid rule: {text}")
        if match.group(1) is not None:
            return _Rule(None)
        if match.group(2) is not None:
            try:
                pattern = re.compile(match.group(2))
            except re.error as exc:
                raise ValueError(f"Invalid rule: {text}: {exc}") from exc
            return _Rule(pattern, match.group(4), match.group(6) == "L", match.group(6) == "U")
        return None  # empty rules are ignored

    def name(self, distinguished_name: str) -> str:
        for rule in self._rules:
            mapped = rule.apply(distinguished_name)
            if mapped is not None:
                return mapped
        raise NoMatchingRule(f"No rules apply to {distinguished_name}, rules {self.rules_text}")
